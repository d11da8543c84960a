import pytest

from aiayn.data import detokenize, tokenize
from aiayn.data.lines import DataError
from aiayn.data.tokenize import MosesPipeline

GOLDEN = [
    ("en", "It's a well-known fact: “quotes” cost $1,000.50 (e.g. U.S.)\u200b!",
     "It 's a well @-@ known fact : \" quotes \" cost $ 1,000.50 ( e.g. U.S. ) !"),
    ("de", "Das ist „schön“ – z.B. 3,5 Mio. Euro für die Baden-Württemberg-Bahn.",
     "Das ist \" schön \" - z.B. 3,5 Mio. Euro für die Baden @-@ Württemberg @-@ Bahn ."),
    ("fr", "L'homme a dit : « Bonjour ! » C'est-à-dire 20 % de plus\u00a0?",
     "L' homme a dit : \" Bonjour ! \" C' est @-@ à @-@ dire 20 % de plus ?"),
]


@pytest.mark.parametrize("lang,text,expected", GOLDEN)
def test_golden_lines(lang, text, expected):
    assert MosesPipeline(lang).line(text) == expected


def test_flags_change_output():
    assert MosesPipeline("en", aggressive_dash_splits=False).line("well-known") == "well-known"
    assert MosesPipeline("en", escape=True).line("a & b's <c>") == "a &amp; b &apos;s &lt; c &gt;"
    assert MosesPipeline("en", normalize_punctuation=False).line("“a”") == "“ a ”"
    assert MosesPipeline("en", remove_non_printing=False).line("a\u200bb") == "a \u200b b"
    assert MosesPipeline("en").line("a\u200bb") == "a b"


def test_unknown_language_is_refused():
    with pytest.raises(DataError, match="'xx' is not supported"):
        MosesPipeline("xx")


def _write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def test_threads_give_identical_output_and_keep_empty_lines(tmp_path):
    lines = [text for _, text, _ in GOLDEN] * 7 + [""] + [f"Line {i}, number-{i}." for i in range(50)]
    _write(tmp_path / "in.en", lines)
    (tmp_path / "tokenize.json").write_text('{"chunk_lines": 4, "escape": false}')
    for threads in (1, 2):
        assert tokenize.main(["--lang", "en", "--input", str(tmp_path / "in.en"), "--output",
                              str(tmp_path / f"out{threads}"), "--threads", str(threads),
                              "--settings", str(tmp_path / "tokenize.json")]) == 0
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


@pytest.mark.parametrize("lang,text,_", GOLDEN)
def test_detokenize_undoes_tokenize(lang, text, _, tmp_path):
    tokens = MosesPipeline(lang, normalize_punctuation=False).line(text.replace("\u200b", ""))
    _write(tmp_path / "tok", [tokens, ""])
    assert detokenize.main(["--lang", lang, "--input", str(tmp_path / "tok"), "--output", str(tmp_path / "txt")]) == 0
    detok = (tmp_path / "txt").read_text(encoding="utf-8").split("\n")
    assert detok[1:] == ["", ""]
    assert detok[0].replace(" ", "") == text.replace("\u200b", "").replace("\u00a0", "").replace(" ", "")
    assert "@-@" not in detok[0]


def test_normalizes_per_side():
    per_side = {"source": True, "target": False}
    assert [tokenize.normalizes(per_side, side) for side in tokenize.SIDES] == [True, False]
    assert [tokenize.normalizes(False, side) for side in tokenize.SIDES] == [False, False]
    with pytest.raises(DataError, match="normalize_punctuation must be"):
        tokenize.normalizes({"source": True}, "target")
    with pytest.raises(ValueError, match="side must be one of"):
        tokenize.normalizes(True, "tgt")


def test_the_configs_target_side_keeps_the_newstest2014_quotes():
    """With config.yaml's setting a target round trip keeps „ “, a source is normalized (real data)."""
    import yaml

    from aiayn.evaluate.bleu import read_lines
    from report_fixtures import ROOT
    from test_bleu import NEWSTEST_DE

    if not NEWSTEST_DE.exists():
        pytest.skip(f"shared WMT data not found at {NEWSTEST_DE}")
    config = yaml.safe_load((ROOT / "config.yaml").read_text(encoding="utf-8"))
    setting = config["data"]["tokenize"]["normalize_punctuation"]
    lines = read_lines(str(NEWSTEST_DE))[:1000]
    quotes = sum(line.count("„") + line.count("“") for line in lines)
    target = detokenize.MosesDetok("de")(MosesPipeline("de", tokenize.normalizes(setting, "target"))(lines))
    assert quotes == 158 and sum(line.count("„") + line.count("“") for line in target) == quotes
    source = MosesPipeline("de", tokenize.normalizes(setting, "source"))(lines)
    assert sum(line.count("„") + line.count("“") for line in source) == 0
