import json
import math

import pytest
import sacrebleu
from paths import SHARED_WMT

from aiayn.data.lines import read_lines
from aiayn.evaluate import bleu

NEWSTEST_DE = SHARED_WMT / "plain" / "newstest2014-full.en-de.de"


def toks(line):
    return line.split()


@pytest.mark.parametrize(
    "line, expected",
    [
        ("well-known", "well ##AT##-##AT## known"),
        ("a-b-c", "a ##AT##-##AT## b-c"),  # Perl: no overlapping second match
        ("a-b-c-d", "a ##AT##-##AT## b-c ##AT##-##AT## d"),
        ("a--b", "a ##AT##-##AT## -b"),
        ("x-y z-w", "x ##AT##-##AT## y z ##AT##-##AT## w"),
        ("Öko-Strom", "Öko ##AT##-##AT## Strom"),
        ("a\u00a0-b", "a\u00a0 ##AT##-##AT## b"),  # Perl's \s is ASCII only: NBSP is \S
        ("-a a- a - b", "-a a- a - b"),
        ("", ""),
    ],
)
def test_split_compounds_golden(line, expected):
    assert bleu.split_compounds(line) == expected


def test_straighten_quotes_golden():
    lines, changed = bleu.straighten_quotes(["„Ja“, sagte er: ”gut” «très»", '‚einzeln‘ O’Neil ›a‹ "b"'])
    assert lines == ['"Ja", sagte er: "gut" "très"', '‚einzeln‘ O’Neil ›a‹ "b"']
    assert changed == 6  # single quotes and ASCII quotes stay


def test_paper_method_scores_a_straightened_copy_100_and_sacrebleu_does_not():
    ref = [
        "„Wir kommen morgen wieder“, sagte die Sprecherin am Freitag.",
        "Das Museum „Haus der Geschichte“ öffnet am Montag um neun Uhr.",
    ]
    hyp, _ = bleu.straighten_quotes(ref)
    result = bleu.score(hyp, ref, "de")
    assert result["paper_bleu"] == pytest.approx(100.0)
    assert result["sacrebleu"] < 90.0
    assert result["quotes_straightened"] == {"hypothesis": 0, "reference": 4}
    assert "hypothesis and reference" in result["paper_bleu_method"]
    # The paper straightened the reference only: a hypothesis keeping „ “ then loses those tokens.
    assert bleu.score(ref, ref, "de", "reference")["paper_bleu"] < 90.0
    assert bleu.score(ref, ref, "de", "both")["paper_bleu"] == pytest.approx(100.0)
    assert bleu.score(hyp, ref, "de", "none")["paper_bleu"] < 90.0
    with pytest.raises(ValueError, match="straighten must be one of"):
        bleu.score(hyp, ref, "de", "hypothesis")


def test_paper_tokenize_escapes_and_keeps_hyphens_for_splitting():
    [tokens] = bleu.paper_tokenize(['Die "Ost-West" Verbindung & mehr.'], "de")
    assert tokens == ["Die", "&quot;", "Ost", "##AT##-##AT##", "West", "&quot;", "Verbindung", "&amp;", "mehr", "."]


def test_multi_bleu_single_sentence_by_hand():
    # p1 = 5/6 (the clipped to 1), p2 = 3/5, p3 = 2/4, p4 = 1/3, BP = 1
    result = bleu.multi_bleu([toks("the cat sat on the mat")], [toks("the cat sat on a mat")])
    assert result.precisions == pytest.approx((5 / 6, 3 / 5, 2 / 4, 1 / 3))
    assert result.brevity_penalty == 1.0
    assert result.bleu == pytest.approx(100 * (5 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** 0.25)
    assert result.bleu == pytest.approx(53.7284965, abs=1e-6)


def test_multi_bleu_is_corpus_level_with_brevity_penalty():
    hyps = [toks("the cat sat on the mat"), toks("the cat sat on the")]
    refs = [toks("the cat sat on a mat"), toks("the cat sat on the mat")]
    result = bleu.multi_bleu(hyps, refs)
    precisions = (10 / 11, 7 / 9, 5 / 7, 3 / 5)
    assert result.precisions == pytest.approx(precisions)
    assert (result.hyp_len, result.ref_len) == (11, 12)
    expected = 100 * math.exp(1 - 12 / 11) * math.prod(precisions) ** 0.25
    assert result.bleu == pytest.approx(expected)


def test_multi_bleu_no_smoothing_and_case_sensitive():
    assert bleu.multi_bleu([toks("a b c")], [toks("a b c")]).bleu == 0.0  # no 4-grams at all
    assert bleu.multi_bleu([toks("The cat sat on")], [toks("the cat sat on")]).bleu == 0.0
    assert bleu.multi_bleu([[]], [toks("a b c d")]).bleu == 0.0
    assert bleu.multi_bleu([toks("a b c d")], [toks("a b c d")]).bleu == pytest.approx(100.0)


def test_cli_writes_json_and_refuses_line_mismatch(tmp_path, capsys):
    hyp, ref, out = tmp_path / "hyp.txt", tmp_path / "ref.txt", tmp_path / "out" / "s.bleu.json"
    hyp.write_text("the cat sat on the mat\nthe cat sat on the\n", encoding="utf-8")
    ref.write_text("the cat sat on a mat\nthe cat sat on the mat\n", encoding="utf-8")
    assert bleu.main(["--hyp", str(hyp), "--ref", str(ref), "--lang", "en", "--output", str(out)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(out.read_text(encoding="utf-8"))
    assert printed["lines"] == 2 and printed["hyp"] == str(hyp) and printed["ref"] == str(ref)
    assert (printed["sys_len"], printed["ref_len_13a"], printed["ref_len_paper"]) == (11, 12, 12)
    assert printed["paper_bleu"] == pytest.approx(
        100 * math.exp(1 - 12 / 11) * (10 / 11 * 7 / 9 * 5 / 7 * 3 / 5) ** 0.25
    )
    assert "tok:13a" in printed["sacrebleu_signature"]
    assert printed["paper_bleu_method"] == bleu.paper_method("both")
    assert "get_ende_bleu.sh" in printed["paper_bleu_method"]
    assert printed["quotes_straightened"] == {"hypothesis": 0, "reference": 0}
    ref.write_text("one line\n", encoding="utf-8")
    with pytest.raises(SystemExit, match=r"hyp\.txt has 2 lines.*ref\.txt has 1"):
        bleu.main(["--hyp", str(hyp), "--ref", str(ref), "--lang", "en"])


def test_cli_names_an_empty_or_undecodable_file_and_its_line(tmp_path):
    hyp, ref = tmp_path / "hyp.txt", tmp_path / "ref.txt"
    hyp.write_text("", encoding="utf-8")
    ref.write_text("", encoding="utf-8")
    with pytest.raises(SystemExit, match=r"hyp\.txt and .*ref\.txt are empty: no line to score"):
        bleu.main(["--hyp", str(hyp), "--ref", str(ref), "--lang", "en"])
    hyp.write_bytes(b"the cat\ncaf\xe9\n")
    ref.write_text("the cat\ncafe\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"hyp\.txt: line 2: invalid continuation byte at byte 3: invalid UTF-8"):
        bleu.main(["--hyp", str(hyp), "--ref", str(ref), "--lang", "en"])


# reference: 2 of 15 tokens („ “ against &quot;) miss, and every n-gram holding one
@pytest.mark.parametrize(
    "mode, expected",
    [("both", 100.0), ("none", 100.0), ("reference", 100 * (13 / 15 * 11 / 14 * 9 / 13 * 7 / 12) ** 0.25)],
)
def test_settings_file_chooses_the_quote_handling(tmp_path, capsys, mode, expected):
    """``bleu.straighten_quotes`` from the settings file: straightening the reference alone charges a
    hypothesis that keeps the reference's „ “; ``--straighten-quotes`` overrides the file."""
    text = "„Wir kommen morgen wieder“, sagte die Sprecherin am Freitag in Berlin.\n"
    hyp, ref, settings = tmp_path / "hyp.txt", tmp_path / "ref.txt", tmp_path / "bleu.json"
    hyp.write_text(text, encoding="utf-8")
    ref.write_text(text, encoding="utf-8")
    settings.write_text(json.dumps({"straighten_quotes": mode}), encoding="utf-8")
    assert bleu.main(["--hyp", str(hyp), "--ref", str(ref), "--lang", "de", "--settings", str(settings)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["paper_bleu_method"] == bleu.paper_method(mode)
    assert printed["paper_bleu"] == pytest.approx(expected)
    assert printed["quotes_straightened"]["reference"] == (0 if mode == "none" else 2)
    assert (
        bleu.main(
            [
                "--hyp",
                str(hyp),
                "--ref",
                str(ref),
                "--lang",
                "de",
                "--settings",
                str(settings),
                "--straighten-quotes",
                "both",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["paper_bleu"] == pytest.approx(100.0)


def test_bad_quote_setting_names_the_file_and_key(tmp_path):
    settings = tmp_path / "bleu.json"
    settings.write_text('{"straighten_quotes": "hyp"}', encoding="utf-8")
    with pytest.raises(
        ValueError,
        match=r"bleu\.json: bleu\.straighten_quotes: .hyp. is not one of "
        r"both, reference, none",
    ):
        bleu.main(["--hyp", str(settings), "--ref", str(settings), "--lang", "de", "--settings", str(settings)])


def test_newstest2014_reference_lengths():
    if not NEWSTEST_DE.exists():
        pytest.skip(f"shared WMT data not found at {NEWSTEST_DE}")
    lines = read_lines(str(NEWSTEST_DE))
    assert len(lines) == 3003
    result = bleu.score(lines, lines, "de")
    assert result["ref_len_13a"] == 62688
    assert result["ref_len_paper"] == 64496
    assert sum(len(bleu.perl_split(t)) for t in bleu.moses_tokenize(lines, "de")) == 63078
    assert result["sacrebleu"] == pytest.approx(100.0)
    assert result["paper_bleu"] == pytest.approx(100.0)


@pytest.mark.slow  # the whole newstest2014 tokenized five times: 7 s
def test_newstest2014_reference_with_straightened_quotes():
    """The paper's tweaked reference: 659 „ “ become ", one token for one, so the lengths stay."""
    if not NEWSTEST_DE.exists():
        pytest.skip(f"shared WMT data not found at {NEWSTEST_DE}")
    lines = read_lines(str(NEWSTEST_DE))
    tweaked, changed = bleu.straighten_quotes(lines)
    assert changed == 659
    tokens = bleu.paper_tokenize(tweaked, "de")
    assert sum(map(len, tokens)) == 64496
    assert sum(len(bleu.perl_split(t)) for t in bleu.moses_tokenize(tweaked, "de")) == 63078
    assert sum(toks.count("&quot;") for toks in tokens) == 1151
    result = bleu.score(tweaked, lines, "de")
    assert result["paper_bleu"] == pytest.approx(100.0)
    assert result["sacrebleu"] == pytest.approx(96.954, abs=1e-3)
    assert result["quotes_straightened"] == {"hypothesis": 0, "reference": 659}
    assert bleu.score(tweaked, lines, "de", "none")["paper_bleu"] == pytest.approx(97.786, abs=1e-3)
    # The paper's procedure charges the raw reference as a hypothesis for its own „ “ (bleu.py's figure).
    assert bleu.score(lines, lines, "de", "reference")["paper_bleu"] == pytest.approx(97.786, abs=1e-3)


def test_multi_bleu_agrees_with_sacrebleu_without_tokenization_or_smoothing():
    if not NEWSTEST_DE.exists():
        pytest.skip(f"shared WMT data not found at {NEWSTEST_DE}")
    refs = bleu.paper_tokenize(read_lines(str(NEWSTEST_DE))[:500], "de")
    hyps = [[t for i, t in enumerate(ref) if i % 5 != 2] for ref in refs]  # a damaged copy
    ours = bleu.multi_bleu(hyps, refs)
    theirs = sacrebleu.corpus_bleu(
        [" ".join(h) for h in hyps], [[" ".join(r) for r in refs]], tokenize="none", smooth_method="none", force=True
    )
    assert 30 < ours.bleu < 90
    assert ours.bleu == pytest.approx(theirs.score, abs=1e-9)
    assert (ours.hyp_len, ours.ref_len) == (theirs.sys_len, theirs.ref_len)


def test_multi_bleu_splits_on_ascii_spaces_only_where_sacrebleu_splits_on_all():
    """Why multi_bleu is not sacreBLEU: Perl's split leaves a no-break space inside its token."""
    hyp, ref = "a b\u00a0c d", "a b c d"
    assert bleu.perl_split(hyp) == ["a", "b\u00a0c", "d"]
    assert bleu.multi_bleu([bleu.perl_split(hyp)], [bleu.perl_split(ref)]).bleu == 0.0  # no 4-gram matches
    theirs = sacrebleu.corpus_bleu([hyp], [[ref]], tokenize="none", smooth_method="none", force=True)
    assert theirs.score == pytest.approx(100.0) and theirs.sys_len == 4
