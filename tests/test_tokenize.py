import pytest

from aiayn.data import detokenize, tokenize
from aiayn.data.lines import DataError
from aiayn.data.tokenize import MosesPipeline
from aiayn.options.data import SIDES, normalizes

# (language, text, with every step on (fairseq's recipe but for its escaping), with the defaults:
# wmt16_en_de.sh's steps (no -a, no normalization, no non-printing removal) without escaping)
GOLDEN = [
    (
        "en",
        "It's a well-known fact: “quotes” cost $1,000.50 (e.g. U.S.)\u200b!",
        'It \'s a well @-@ known fact : " quotes " cost $ 1,000.50 ( e.g. U.S. ) !',
        "It 's a well-known fact : “ quotes ” cost $ 1,000.50 ( e.g. U.S. ) \u200b !",
    ),
    (
        "de",
        "Das ist „schön“ – z.B. 3,5 Mio. Euro für die Baden-Württemberg-Bahn.",
        'Das ist " schön " - z.B. 3,5 Mio. Euro für die Baden @-@ Württemberg @-@ Bahn .',
        "Das ist „ schön “ – z.B. 3,5 Mio. Euro für die Baden-Württemberg-Bahn .",
    ),
    (
        "fr",
        "L'homme a dit : « Bonjour ! » C'est-à-dire 20 % de plus\u00a0?",
        "L' homme a dit : \" Bonjour ! \" C' est @-@ à @-@ dire 20 % de plus ?",
        "L' homme a dit : « Bonjour ! » C' est-à-dire 20 % de plus ?",
    ),
]
EVERY_STEP = {
    "normalize_punctuation": True,
    "remove_non_printing": True,
    "aggressive_dash_splits": True,
    "escape": False,
}


@pytest.mark.parametrize("lang,text,every_step,defaults", GOLDEN)
def test_golden_lines(lang, text, every_step, defaults):
    assert MosesPipeline(lang, **EVERY_STEP).line(text) == every_step
    assert MosesPipeline(lang).line(text) == defaults


def test_flags_change_output():
    assert MosesPipeline("en", aggressive_dash_splits=False).line("well-known") == "well-known"
    assert MosesPipeline("en", escape=True).line("a & b's <c>") == "a &amp; b &apos;s &lt; c &gt;"
    assert MosesPipeline("en", normalize_punctuation=False).line("“a”") == "“ a ”"
    assert MosesPipeline("en", remove_non_printing=False).line("a\u200bb") == "a \u200b b"
    assert MosesPipeline("en", remove_non_printing=True).line("a\u200bb") == "a b"


def test_unknown_language_is_refused():
    with pytest.raises(DataError, match="'xx' is not supported"):
        MosesPipeline("xx")


def _write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def test_threads_give_identical_output_and_keep_empty_lines(tmp_path):
    lines = [text for _, text, _, _ in GOLDEN] * 7 + [""] + [f"Line {i}, number-{i}." for i in range(50)]
    _write(tmp_path / "in.en", lines)
    (tmp_path / "tokenize.json").write_text('{"chunk_lines": 4, "escape": false, "aggressive_dash_splits": true}')
    for threads in (1, 2):
        assert (
            tokenize.main(
                [
                    "--lang",
                    "en",
                    "--input",
                    str(tmp_path / "in.en"),
                    "--output",
                    str(tmp_path / f"out{threads}"),
                    "--threads",
                    str(threads),
                    "--settings",
                    str(tmp_path / "tokenize.json"),
                ]
            )
            == 0
        )
    one = (tmp_path / "out1").read_text(encoding="utf-8")
    assert one == (tmp_path / "out2").read_text(encoding="utf-8")
    out = one.split("\n")
    assert len(out) == len(lines) + 1 and out[21] == "" and out[22] == "Line 0 , number @-@ 0 ."


def test_invalid_utf8_names_file_and_line(tmp_path):
    bad = tmp_path / "bad.en"
    bad.write_bytes(b"good\nalso good\nbad \xff byte\n")
    with pytest.raises(DataError, match=r"bad\.en: line 3: .*invalid UTF-8"):
        tokenize.main(["--lang", "en", "--input", str(bad), "--output", str(tmp_path / "out")])
    assert not (tmp_path / "out").exists()


def test_enormous_line_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setattr("aiayn.data.lines.MAX_LINE_CHARS", 10)
    big = tmp_path / "big.en"
    _write(big, ["short", "x" * 11])
    with pytest.raises(DataError, match=r"big\.en: line 2: 11 characters"):
        tokenize.main(["--lang", "en", "--input", str(big), "--output", str(tmp_path / "out")])


@pytest.mark.parametrize("lang,text,_,__", GOLDEN)
def test_detokenize_undoes_tokenize(lang, text, _, __, tmp_path):
    tokens = MosesPipeline(lang, normalize_punctuation=False).line(text.replace("\u200b", ""))
    _write(tmp_path / "tok", [tokens, ""])
    assert detokenize.main(["--lang", lang, "--input", str(tmp_path / "tok"), "--output", str(tmp_path / "txt")]) == 0
    detok = (tmp_path / "txt").read_text(encoding="utf-8").split("\n")
    assert detok[1:] == ["", ""]
    assert detok[0].replace(" ", "") == text.replace("\u200b", "").replace("\u00a0", "").replace(" ", "")
    assert "@-@" not in detok[0]


def test_normalizes_per_side():
    per_side = {"source": True, "target": False}
    assert [normalizes(per_side, side) for side in SIDES] == [True, False]
    assert [normalizes(False, side) for side in SIDES] == [False, False]
    with pytest.raises(ValueError, match="normalize_punctuation must be"):
        normalizes({"source": True}, "target")
    with pytest.raises(ValueError, match="side must be one of"):
        normalizes(True, "tgt")


def _config_settings(tmp_path, overlay=None):
    """config.yaml's settings files (tokenize per task and language, clean), written under tmp_path."""
    import json

    from report_fixtures import ROOT

    from aiayn import config as aiayn_config
    from aiayn import runs as aiayn_runs

    paper = aiayn_config.load(ROOT / "config.yaml")
    files = aiayn_runs.settings_files(aiayn_runs.deep_merge(paper, overlay or {}))
    paths = {}
    for name in ("en-de/tokenize.en.json", "en-de/tokenize.de.json", "clean.json"):
        paths[name] = tmp_path / name.replace("/", ".")
        paths[name].write_text(json.dumps(files[f"{paper['data_dir']}/settings/{name}"]), encoding="utf-8")
    return paths


def _newstest(tmp_path, lines=1000):
    from test_bleu import NEWSTEST_DE

    from aiayn.data.lines import read_lines

    if not NEWSTEST_DE.exists():
        pytest.skip(f"shared WMT data not found at {NEWSTEST_DE}")
    texts = {lang: read_lines(str(NEWSTEST_DE.with_suffix(f".{lang}")))[:lines] for lang in ("en", "de")}
    for lang, text in texts.items():
        _write(tmp_path / f"raw.{lang}", text)
    return texts


def _run_stages(tmp_path, paths):
    """tokenize (both sides), clean, detokenize (German) through the CLIs and their settings files."""
    from aiayn.data import clean

    for lang in ("en", "de"):
        assert (
            tokenize.main(
                [
                    "--lang",
                    lang,
                    "--input",
                    str(tmp_path / f"raw.{lang}"),
                    "--output",
                    str(tmp_path / f"tok.{lang}"),
                    "--settings",
                    str(paths[f"en-de/tokenize.{lang}.json"]),
                ]
            )
            == 0
        )
    assert (
        clean.main(
            [
                "--src-lang",
                "en",
                "--tgt-lang",
                "de",
                "--corpora",
                str(tmp_path / "tok"),
                "--out-prefix",
                str(tmp_path / "clean"),
                "--stats",
                str(tmp_path / "stats.json"),
                "--settings",
                str(paths["clean.json"]),
            ]
        )
        == 0
    )
    assert (
        detokenize.main(
            [
                "--lang",
                "de",
                "--input",
                str(tmp_path / "tok.de"),
                "--output",
                str(tmp_path / "back.de"),
                "--settings",
                str(paths["en-de/tokenize.de.json"]),
            ]
        )
        == 0
    )
    import json

    return json.loads((tmp_path / "stats.json").read_text(encoding="utf-8"))


def test_the_papers_preparation_round_trips_newstest2014(tmp_path):
    """config.yaml's defaults on 1000 real newstest2014 pairs: hyphens stay in words, the reference's
    „ “ are kept (975 lines come back identical, sacreBLEU 99.79); with the paper's escaping
    (``escape: true``) the tokens hold entities and the detokenizer gives the very same text back.
    Cleaning 1-80 tokens with ratio 9 keeps 999 pairs, fairseq's 250 tokens with ratio 1.5 keeps 926."""
    import sacrebleu

    texts = _newstest(tmp_path)
    stats = _run_stages(tmp_path, _config_settings(tmp_path))
    tokens = (tmp_path / "tok.de").read_text(encoding="utf-8")
    assert "&quot;" not in tokens and "@-@" not in tokens and "-" in tokens
    back = (tmp_path / "back.de").read_text(encoding="utf-8").splitlines()
    assert sum(line.count("„") + line.count("“") for line in back) == 158
    assert sum(a == b for a, b in zip(back, texts["de"])) == 975
    assert sacrebleu.corpus_bleu(back, [texts["de"]]).score == pytest.approx(99.79, abs=0.01)
    assert (stats["total"]["kept"], stats["total"]["too_long"]) == (999, 1)
    escaped = _run_stages(
        tmp_path,
        _config_settings(
            tmp_path, {"data": {"tokenize": {"escape": True}, "clean": {"max_len": 250, "max_ratio": 1.5}}}
        ),
    )
    tokens = (tmp_path / "tok.de").read_text(encoding="utf-8")
    assert tokens.count("&quot;") == 251 and tokens.count("&apos;") == 9
    assert (tmp_path / "back.de").read_text(encoding="utf-8").splitlines() == back
    assert (escaped["total"]["kept"], escaped["total"]["ratio"]) == (926, 74)


def test_source_only_normalization_keeps_the_target_quotes(tmp_path):
    """{source: true, target: false}: the English side is normalized, the German keeps „ “."""
    texts = _newstest(tmp_path)
    paths = _config_settings(
        tmp_path, {"data": {"tokenize": {"normalize_punctuation": {"source": True, "target": False}}}}
    )
    _run_stages(tmp_path, paths)
    back = (tmp_path / "back.de").read_text(encoding="utf-8")
    quotes = sum(line.count("„") for line in texts["de"])
    assert quotes > 0 and back.count("„") == quotes
    tokens_en = (tmp_path / "tok.en").read_text(encoding="utf-8").splitlines()
    assert tokens_en == MosesPipeline("en", normalize_punctuation=True)(texts["en"])
    assert tokens_en != MosesPipeline("en")(texts["en"])


@pytest.mark.parametrize(
    "escape, expected", [(True, 'Er sagt: "a & b" [c]'), (False, "Er sagt: &quot; a &amp; b &quot; &#91; c &#93;")]
)
def test_detokenize_unescapes_when_its_settings_escape(tmp_path, escape, expected):
    """The detokenizer reads the language's data.tokenize: entities are the tokenizer's only when it escaped."""
    import json

    _write(tmp_path / "tok", ["Er sagt : &quot; a &amp; b &quot; &#91; c &#93;"])
    (tmp_path / "tokenize.json").write_text(json.dumps({"escape": escape}), encoding="utf-8")
    assert (
        detokenize.main(
            [
                "--lang",
                "de",
                "--input",
                str(tmp_path / "tok"),
                "--output",
                str(tmp_path / "txt"),
                "--settings",
                str(tmp_path / "tokenize.json"),
            ]
        )
        == 0
    )
    assert (tmp_path / "txt").read_text(encoding="utf-8") == expected + "\n"


def test_the_log_ends_with_what_the_command_and_its_workers_used(tmp_path):
    """The ``resources:`` line (aiayn.io.log_resources) counts the worker processes too, once they ended."""
    import re
    import subprocess
    import sys

    text = tmp_path / "in.en"
    text.write_text("It's a well-known fact, isn't it?\n" * 4000, encoding="utf-8")
    log = tmp_path / "tok.log"
    command = ["--lang", "en", "--input", str(text), "--output", str(tmp_path / "out"), "--threads", "2"]
    subprocess.run([sys.executable, "-m", "aiayn.data.tokenize", *command, "--log", str(log)], check=True)
    found = re.search(
        r"resources: CPU ([\d.]+) s \(workers ([\d.]+) s\); peak RSS (\d+) MiB \(the largest worker (\d+)",
        log.read_text(),
    )
    assert found, log.read_text()
    total, workers, own, worker = map(float, found.groups())
    assert 0 < workers < total and own > 0 and worker > 0
