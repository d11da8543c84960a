"""The captions of workflow/report/ render in a real ``snakemake --report`` (a toy workflow shaped like ours)."""

import json
import subprocess
import sys

import pytest
from report_fixtures import ROOT

CAPTIONS = ROOT / "workflow" / "report"

TOY = f'''
configfile: "config.yaml"
report: "{CAPTIONS}/workflow.rst"
R = config["results_dir"]
TABLES = ["table2", "table3", "table4"]

rule all:
    input: expand(R + "/tables/{{t}}.md", t=TABLES), R + "/plots", expand(R + "/attention/figure{{n}}.png", n=[3, 4, 5])

rule tables:
    output:
        [report(f"{{R}}/tables/{{t}}.md", caption=f"{CAPTIONS}/{{t}}.rst", category="Tables") for t in TABLES],
    shell: "for f in {{output}}; do echo '| a |' > $f; done"

rule plots:
    output:
        report(directory(R + "/plots"), patterns=["{{name}}.png"], caption="{CAPTIONS}/plots.rst",
               category="Plots", labels={{"figure": "{{name}}"}}),
    shell: "mkdir -p {{output}} && printf '\\x89PNG\\r\\n\\x1a\\n' > {{output}}/curves_en-de_base.png"

rule attention_figures:
    output:
        [report(f"{{R}}/attention/figure{{n}}.png", caption=f"{CAPTIONS}/figure{{n}}.rst", category="Figures",
                labels={{"figure": f"Figure {{n}}"}}) for n in (3, 4, 5)],
    shell: "for f in {{output}}; do printf '\\x89PNG\\r\\n\\x1a\\n' > $f; done"
'''
FIGURES = {
    "task": "en-de",
    "experiment": "base",
    "figure3": {"sentence": "The child will say that it slept.", "word": "say"},
    "figure4": {"sentence": "A girl can find the red shirt.", "word": "find"},
    "figure5": {"sentence": "A girl can find the blue shirt."},
}


@pytest.mark.parametrize(
    "caption", ["workflow", "table2", "table3", "table4", "plots", "figure3", "figure4", "figure5"]
)
def test_caption_files_exist_and_are_plain_rst(caption):
    text = (CAPTIONS / f"{caption}.rst").read_text(encoding="utf-8")
    assert text.strip() and "\t" not in text


@pytest.mark.slow
def test_snakemake_report_renders_the_captions(tmp_path):
    (tmp_path / "Snakefile").write_text(TOY, encoding="utf-8")
    (tmp_path / "config.yaml").write_text(json.dumps({"results_dir": "res", "figures": FIGURES}), encoding="utf-8")
    snakemake = [sys.executable, "-m", "snakemake", "--cores", "1", "--quiet"]
    run = subprocess.run(snakemake, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    report = subprocess.run(
        [*snakemake, "--report", "report.html"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert report.returncode == 0, report.stderr
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    for phrase in (
        "Table 2 of the paper",
        "Table 3 of the paper",
        "Table 4 of the paper",
        "Figures of the run, one per file",
        '(results in <tt class=\\"docutils literal\\">res</tt>)',
        "Figure 3 of the paper, from our model",
        "The child will say that it slept.",
        "A girl can find the red shirt.",
        "A girl can find the blue shirt.",
        "Figure 5 of the paper",
    ):
        assert phrase in html, phrase
