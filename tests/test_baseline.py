from aiayn.evaluate.evalb import metrics, read_lines
from aiayn.evaluate.evalb_params import default_param_file, read_params
from aiayn.evaluate.evalb_score import evaluate_lines
from aiayn.parsing import baseline
from aiayn.parsing.trees import parse_tree


def test_flat_tree_golden():
    gold = parse_tree("(TOP (S (NP (DT The) (NN dog)) (VP (VBZ barks)) (. .)))")
    assert str(baseline.flat_tree(gold)) == "(TOP (S (DT The) (NN dog) (VBZ barks) (. .)))"


def test_cli_and_its_f1(tmp_path, capfd):
    gold = tmp_path / "gold"
    gold.write_text("(TOP (S (NP (DT The) (NN dog)) (VP (VBZ barks)) (. .)))\n(TOP (NP (NN Hello) (. !)))\n")
    assert baseline.main(["--gold", str(gold), "--output", str(tmp_path / "flat")]) == 0
    assert (tmp_path / "flat").read_text() == (
        "(TOP (S (DT The) (NN dog) (VBZ barks) (. .)))\n(TOP (S (NN Hello) (. !)))\n"
    )
    outcome = evaluate_lines(read_lines(gold), read_lines(tmp_path / "flat"), read_params(default_param_file()))
    result = metrics(outcome, read_params(default_param_file()))
    # gold: S, NP, VP and NP; flat: S and S; only the first S matches
    assert (result["recall"], result["precision"]) == (25.0, 50.0)
    assert abs(result["f1"] - 100 / 3) < 1e-9
    (tmp_path / "bad").write_text("(TOP (S (NN a))\n")
    assert baseline.main(["--gold", str(tmp_path / "bad"), "--output", str(tmp_path / "x")]) == 1
    assert f"{tmp_path / 'bad'}:1: tree starting here is not closed" in capfd.readouterr().err
