"""The deviation list (docs/deviations.md) and the "Deviation from paper:" marks in src/ and config.yaml agree one
to one: every entry names the one file holding its mark, and every mark has its entry."""

import re
from collections import Counter

from paths import ROOT

from aiayn import config as aiayn_config

MARK = "Deviation from paper"
DEVIATIONS = ROOT / "docs" / "deviations.md"


def marks() -> Counter:
    """How many marked lines each file under src/ (Python, YAML) and config.yaml holds."""
    files = [
        ROOT / "config.yaml",
        *sorted((ROOT / "src" / "aiayn").rglob("*.py")),
        *sorted((ROOT / "src" / "aiayn").rglob("*.yaml")),
    ]
    return Counter(
        str(path.relative_to(ROOT))
        for path in files
        for line in path.read_text(encoding="utf-8").splitlines()
        if MARK in line
    )


def deviation_entries() -> dict[str, list[str]]:
    """``{entry name: [the backticked items of its parenthesis]}`` of docs/deviations.md's deviation list."""
    text = DEVIATIONS.read_text(encoding="utf-8")
    section = text.split("## Deviations from the paper", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    entries = re.findall(r"^- \*\*(?P<name>[^*]+)\*\* \((?P<refs>[^)]*)\)", section, flags=re.M)
    return {name: re.findall(r"`([^`]+)`", refs) for name, refs in entries}


def test_every_entry_names_its_marked_file_and_every_mark_has_an_entry():
    entries = deviation_entries()
    assert len(entries) >= 11
    named = Counter(refs[-1] for refs in entries.values())
    assert all((ROOT / path).is_file() for path in named), named
    assert named == marks()


def test_every_key_an_entry_names_is_in_the_config():
    config = aiayn_config.load(ROOT / "config.yaml")  # with the definitions' defaults
    for name, refs in deviation_entries().items():
        for key in [r for r in refs[:-1] if "/" not in r and " " not in r]:
            node = config if key.split(".")[0] in config else config["defaults"]
            for part in key.split("."):
                assert isinstance(node, dict) and part in node, (name, key)
                node = node[part]


def code_differences() -> dict[str, tuple[str, list[str]]]:
    """``{entry name: (its text, [its backticked items])}`` of docs/deviations.md's "Where the paper's code did
    otherwise"."""
    text = DEVIATIONS.read_text(encoding="utf-8")
    section = text.split("## Where the paper's code did otherwise", 1)[1].split("\n\n", 2)[1]
    entries = re.split(r"^- ", section, flags=re.M)[1:]
    return {
        re.match(r"\*\*([^*]+)\*\*", e).group(1): (e, re.findall(r"`([^`]+)`", e.split(")", 1)[0])) for e in entries
    }


def test_every_difference_from_the_papers_code_names_its_file_and_a_commit():
    """Each entry names the file that holds it (last item of its parenthesis), and cites a tensorflow/
    tensor2tensor commit, itself or in that file; a key it names is in the config."""
    config = aiayn_config.load(ROOT / "config.yaml")
    entries = code_differences()
    assert len(entries) >= 7
    commit = re.compile(r"\b[0-9a-f]{8,40}\b")
    for name, (text, refs) in entries.items():
        path = ROOT / refs[-1]
        assert path.is_file(), (name, refs)
        assert commit.search(text) or commit.search(path.read_text(encoding="utf-8")), name
        for key in refs[:-1]:
            node = config if key.split(".")[0] in config else config["defaults"]
            for part in key.split("."):
                assert isinstance(node, dict) and part in node, (name, key)
                node = node[part]


def test_the_lists_name_what_the_papers_code_did_otherwise_and_no_false_difference():
    """The differences fidelity audits found unlisted are listed (batching, attention biases, the decode
    length limit, the parser's embeddings and depth; big EN-FR's preset, big's buckets, where Adam's
    epsilon sits, the padding row); LazyAdam, which ran as plain Adam on dense
    gradients, is not a difference anywhere."""
    names = set(code_differences())
    assert {
        "Batch budget",
        "Attention projection biases",
        "Decoding length limit",
        "Parser embeddings",
        "Parser depth",
        "Big EN-FR's feed-forward and embeddings",
        "Big's length buckets",
        "Where Adam's epsilon sits",
        "The embedding's padding row",
    } <= names, names
    text = DEVIATIONS.read_text(encoding="utf-8")
    assert "lazyadam" not in text.lower()
    assert not any("lazy" in name.lower() for name in names | set(deviation_entries()))
