import json
import math

import pytest
from paths import SHARED_PTB as SHARED

from aiayn.evaluate import evalb as evalb_cli
from aiayn.evaluate.evalb import Totals, format_report, format_row, metrics, read_lines
from aiayn.evaluate.evalb_params import EvalbConfig, c_atoi, default_param_file, read_params
from aiayn.evaluate.evalb_score import Row, evaluate_lines, modify_label
from aiayn.parsing.clean import clean_tree
from aiayn.parsing.treebank import read_mrg_file

EDGE = SHARED / "evalb_edge"
SAMPLE = SHARED / "wsj_sample"


def collins() -> EvalbConfig:
    return read_params(default_param_file())


def run_cli(capfd, *argv) -> tuple[int, str, str]:
    code = evalb_cli.main([str(a) for a in argv])
    out, err = capfd.readouterr()
    return code, out, err


@pytest.mark.parametrize("param", ["shared", "packaged"])
def test_reproduces_real_evalb_on_edge_cases(capfd, param):
    if not (EDGE / "expected_evalb_output.txt").exists():
        pytest.skip(f"{EDGE} is absent (shared evaluation data)")
    args = ["-p", SHARED / "COLLINS.prm"] if param == "shared" else []
    code, out, err = run_cli(capfd, *args, EDGE / "edge.gold.txt", EDGE / "edge.test.txt")
    expected_out, expected_err = (EDGE / "expected_evalb_output.txt").read_text().split("--- stderr ---\n")
    assert code == 0
    assert out.splitlines() == expected_out.splitlines()  # per-sentence rows, totals and both blocks
    assert out == expected_out
    assert err == expected_err


def test_packaged_param_file_equals_the_standard_settings():
    params = collins()
    assert (params.debug, params.max_error, params.cutoff_len, params.labeled) == (0, 10, 40, 1)
    assert params.delete_labels == ["TOP", "-NONE-", ",", ":", "``", "''", "."]
    assert params.delete_labels_for_length == ["-NONE-"]
    assert params.eq_labels == [("ADVP", "PRT")] and params.eq_words == [] and params.messages == []
    if (SHARED / "COLLINS.prm").exists():
        assert read_params(SHARED / "COLLINS.prm") == params


def test_param_file_quirks(tmp_path):
    path = tmp_path / "x.prm"
    path.write_text(
        "# comment\nLABELED 0   \nMAX_ERROR 3x\nCUTOFF_LEN\nEQ_LABEL A\nEQ_WORD colour color\n"
        "DELETE_LABEL A B\nFOO 1\nab\n"
    )
    params = read_params(path)
    assert params.labeled == 0 and params.max_error == 3 and params.cutoff_len == 0
    assert params.delete_labels == ["A B"] and params.eq_words == [("colour", "color")]
    assert params.messages == [
        "Empty value in parameter file (4)",
        "EQ_LABEL requires two values",
        "Unknown keyword (FOO 1) in parameter file",
    ]
    assert [c_atoi(s) for s in ["12", " -4z", "z", ""]] == [12, -4, 0, 0]


def test_modify_label_cuts_like_evalb():
    assert [modify_label(x) for x in ["NP-SBJ=2", "NP=1", "-NONE-", "PRP$", ""]] == ["NP", "NP", "", "PRP$", ""]


def lines(*trees: str) -> list[str]:
    return [t + "\n" for t in trees]


def test_multiset_matching_and_crossing():
    gold = lines("(TOP (X (X (A a) (B b))))")
    one = evaluate_lines(gold, lines("(TOP (X (A a) (B b)))"), collins()).rows[0]
    assert (one.match, one.gold, one.test, one.crossing) == (1, 2, 1, 0)
    two = evaluate_lines(gold, gold, collins()).rows[0]
    assert (two.match, two.gold, two.test) == (2, 2, 2)
    three = evaluate_lines(
        lines("(TOP (X (X (A a) (B b)) (C c)))"), lines("(TOP (X (A a) (Y (B b) (C c))))"), collins()
    ).rows[0]
    assert (three.match, three.gold, three.test, three.crossing) == (1, 2, 2, 1)


def test_unlabeled_and_word_equivalence():
    params = collins()
    params.labeled, params.eq_words = 0, [("colour", "color")]
    row = evaluate_lines(
        lines("(TOP (S (NP (N colour)) (VP (V x))))"), lines("(TOP (S (VP (N color)) (NP (V x))))"), params
    ).rows[0]
    assert (row.status, row.match, row.gold, row.correct_tags) == (0, 3, 3, 2)


def test_max_error_stops_after_the_twelfth_error():
    gold = lines(*["(TOP (S (A a) (B b)))"] * 14)
    outcome = evaluate_lines(gold, lines(*["(TOP (S (A a)))"] * 14), collins())
    assert outcome.stopped and len(outcome.rows) == 11 and len(outcome.messages) == 12
    assert outcome.messages[-1] == "12 : Length unmatch (2|1)"


def test_line_count_mismatch(capfd, tmp_path):
    (tmp_path / "g").write_text("(TOP (S (A a)))\n(TOP (S (A a)))\n")
    (tmp_path / "t").write_text("(TOP (S (A a)))\n")
    code, out, err = run_cli(capfd, tmp_path / "g", tmp_path / "t")
    assert code == 0 and err == "2 : Number of lines unmatch (too many lines in gold file)\n"
    assert "Number of sentence        =      1\n" in out
    code, out, err = run_cli(capfd, tmp_path / "t", tmp_path / "g")
    assert err == "2 : Number of lines unmatch (too many lines in test file)\n"


def test_all_skipped_gives_nan_like_evalb_and_zero_in_json(capfd, tmp_path):
    (tmp_path / "g").write_text("(TOP (S (A a)))\n")
    (tmp_path / "t").write_text("\n")
    code, out, err = run_cli(capfd, tmp_path / "g", tmp_path / "t", "--json-out", tmp_path / "m.json")
    assert "Bracketing FMeasure       =   -nan\n" in out and "Number of Skip  sentence  =      1\n" in out
    assert "\n  Sent." not in out and "============\n      0     0     0.00\n" in out
    data = json.loads((tmp_path / "m.json").read_text())
    assert data == {
        "f1": 0.0,
        "recall": 0.0,
        "precision": 0.0,
        "complete_match": 0.0,
        "sentences": 1,
        "error_sentences": 0,
        "skip_sentences": 1,
        "f1_len40": 0.0,
    }


def test_row_format():
    row = Row(line=7, length=35, status=0, match=27, gold=27, test=28, crossing=0, words=32, correct_tags=32)
    assert format_row(row) == "   7   35    0  100.00  96.43    27     27   28      0     32    32   100.00\n"
    assert math.isnan(Totals().f1)


@pytest.mark.slow
def test_gold_against_gold_is_100_on_the_sample(tmp_path):
    if not SAMPLE.exists():
        pytest.skip(f"{SAMPLE} is absent (NLTK treebank sample)")
    trees = [clean_tree(t) for path in sorted(SAMPLE.glob("wsj_*.mrg")) for t, _ in read_mrg_file(path)]
    gold = tmp_path / "gold"
    gold.write_text("".join(f"{t}\n" for t in trees))
    outcome = evaluate_lines(read_lines(gold), read_lines(gold), collins())
    report = format_report(outcome, collins())
    result = metrics(outcome, collins())
    assert result["sentences"] == 3914 and result["error_sentences"] == 0 and result["skip_sentences"] == 0
    assert result["f1"] == result["f1_len40"] == result["complete_match"] == 100.0
    assert "Number of sentence        =   3629\n" in report  # len<=40 as EVALB counts (PROVENANCE.md)


def test_debug_dump(capfd, tmp_path):
    (tmp_path / "g").write_text("(TOP (S (NP (DT A) (NN dog)) (. .)))\n")
    (tmp_path / "t").write_text("(TOP (S (DT A) (VB dog) (. .)))\n")
    code, out, _ = run_cli(capfd, "-d", tmp_path / "g", tmp_path / "t")
    assert code == 0
    assert out.splitlines()[3:13] == [
        "   1    3    0   50.00 100.00     1      2    1      0      2     1    50.00",
        "-<1>---(wn1=  2, bn1=  3)-           -<2>---(wn2=  2, bn2=  2)-",
        "  0 : 1 : DT      A                       0 : 1 : DT      A               ",
        "  1 : 0 : NN      dog                     1 : 0 : VB      dog             ",
        "",
        "  0 : 5 :   0    2  TOP           0 : 5 :   0    2  TOP   ",
        "  1 : 1 :   0    2  S             1 : 1 :   0    2  S     ",
        "  2 : 0 :   0    2  NP          ",
        "",
        "========",
    ]


def test_malformed_lines_fail_as_evalb_fails():
    gold = lines("(TOP (S (A a)))")
    stray = evaluate_lines(gold, lines("(TOP (S (A a b)))"), collins())
    assert stray.stopped and stray.rows == []
    assert stray.messages == ["1 : More than two elements in a bracket"] + ["1 : Reading sentence"] * 11
    one_extra = evaluate_lines(gold, lines("(TOP (S (A a))))"), collins())
    assert one_extra.messages == ["1 : Bracketing is unbalanced (too many open bracket)"]
    assert (one_extra.rows[0].status, one_extra.rows[0].match, one_extra.rows[0].gold) == (1, 1, 1)
    two_extra = evaluate_lines(gold, lines("(TOP (S (A a)))))"), collins())
    assert two_extra.messages == [
        "1 : Bracketing unbalance (too many close bracket)",
        "1 : Bracketing is unbalanced (too many open bracket)",
    ]


def test_unreadable_inputs_are_reported_like_evalb(capfd, tmp_path):
    (tmp_path / "g").write_text("(TOP (S (A a)))\n")
    code, out, err = run_cli(capfd, tmp_path / "g", tmp_path / "missing")
    assert code == 1 and out == "" and err.startswith(f"Can't open test file ({tmp_path / 'missing'})")
    (tmp_path / "d.prm").write_text("DEBUG 2\n")
    code, out, err = run_cli(capfd, "-p", tmp_path / "d.prm", tmp_path / "g", tmp_path / "g")
    assert code == 1 and "DEBUG 2: only EVALB's DEBUG 0 and 1 are reproduced" in err


def test_quote_label_puts_a_deleted_quote_back():
    """``(POS ')`` against ``('' ')``: without QUOTE_LABEL a length error, with it a tagging error only."""
    gold = lines("(TOP (S (NP (NP (NNS teachers) (POS ')) (NN union)) (VP (VBD won))))")
    test = lines("(TOP (S (NP (NP (NNS teachers) ('' ')) (NN union)) (VP (VBD won))))")
    params = EvalbConfig(delete_labels=["TOP", "''"])
    assert evaluate_lines(gold, test, params).messages == ["1 : Length unmatch (4|3)"]
    params.quote_labels = ["''", "POS"]
    for a, b in ((gold, test), (test, gold)):
        outcome = evaluate_lines(a, b, params)
        row = outcome.rows[0]
        assert outcome.messages == [] and (row.length, row.status, row.match, row.gold, row.test) == (4, 0, 4, 4, 4)
        assert (row.words, row.correct_tags) == (4, 3)
