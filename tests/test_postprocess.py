from pathlib import Path

from aiayn.evaluate import evalb as evalb_cli
from aiayn.parsing import postprocess

GOLD = [
    "(TOP (S (NP (DT The) (NN dog)) (VP (VBZ barks)) (. .)))",
    "(TOP (S (NP (PRP It)) (VP (VBD rained) (ADVP (RB again))) (. .)))",
    "(TOP (NP (NN Hello) (. !)))",
]
WORDS = ["The dog barks .", "It rained again .", "Hello !"]


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def run(tmp_path: Path, hyps: list[str], gold: list[str] = GOLD, words: list[str] = WORDS) -> int:
    return postprocess.main(
        [
            "--hyp",
            str(write(tmp_path / "hyp", hyps)),
            "--words",
            str(write(tmp_path / "w", words)),
            "--gold",
            str(write(tmp_path / "gold", gold)),
            "--output",
            str(tmp_path / "out"),
        ]
    )


def test_repairs_and_puts_gold_tags_back(tmp_path, capfd):
    hyps = [
        "(S (NP XX XX )NP (VP XX )VP XX )S",  # valid
        "(S (NP XX )NP (VP XX (ADVP XX XX )ADVP",  # S and VP left open
        "",
    ]  # nothing decoded
    assert run(tmp_path, hyps) == 0
    assert (tmp_path / "out").read_text().splitlines() == [
        GOLD[0],
        "(TOP (S (NP (PRP It)) (VP (VBD rained) (ADVP (RB again) (. .)))))",
        "(TOP (NN Hello) (. !))",
    ]
    assert "3 sentences, 2 needed a repair; repairs by kind: empty_output 1, unclosed 2" in capfd.readouterr().err


def test_output_scores_with_evalb_without_errors(tmp_path, capfd):
    assert run(tmp_path, ["(S (NP XX XX )NP (VP XX )VP XX )S", "(S XX XX XX XX )S", ")NP"]) == 0
    capfd.readouterr()
    assert evalb_cli.main([str(tmp_path / "gold"), str(tmp_path / "out")]) == 0
    out, err = capfd.readouterr()
    assert err == "" and "Number of Error sentence  =      0\n" in out
    # 8 gold brackets; sentence 2 matches only S, sentence 3 is flat: 4 matched of 8
    assert "Bracketing Recall         =  50.00\n" in out and "Bracketing Precision      = 100.00\n" in out


def test_mismatched_inputs_are_errors_naming_files(tmp_path, capfd):
    assert run(tmp_path, ["(S XX )S"]) == 1
    assert "line counts differ" in capfd.readouterr().err
    assert run(tmp_path, ["", "", ""], words=["The cat barks .", *WORDS[1:]]) == 1
    assert f"{tmp_path / 'gold'}:1: gold tree's words differ from {tmp_path / 'w'}:1" in capfd.readouterr().err
    assert not (tmp_path / "out").exists()
