import json
import math

import pytest
import torch
import torch.nn.functional as F
from train_helpers import SETTINGS, VOCAB, make_task

from aiayn.data.shards import ShardedCorpus
from aiayn.evaluate.perplexity import main, perplexity_report
from aiayn.model import Transformer
from aiayn.options import ModelConfig
from aiayn.runtime.checkpoint import Checkpoint, load_checkpoint, save_checkpoint


@pytest.fixture()
def checkpoint(tmp_path):
    torch.manual_seed(0)
    cfg = ModelConfig.from_dict(SETTINGS["model"])
    model = Transformer(cfg, VOCAB)
    path = tmp_path / "c.pt"
    save_checkpoint(
        path,
        Checkpoint(
            model=model.state_dict(),
            settings=SETTINGS,
            step=0,
            vocab={"size": VOCAB, "pad_id": 0, "unk_id": 1, "bos_id": 2, "eos_id": 3},
        ),
    )
    return path, model.eval()


def test_perplexity_matches_sentence_by_sentence_cross_entropy(tmp_path, checkpoint):
    path, model = checkpoint
    data = make_task(tmp_path / "toy", n_train=1, n_dev=11)
    dev = ShardedCorpus(data / "dev")
    nll, tokens = 0.0, 0
    with torch.no_grad():
        for i in range(len(dev)):
            src, tgt = dev.pair(i)
            src = torch.tensor([[*src, 3]])
            tgt_in, tgt_out = torch.tensor([[2, *tgt]]), torch.tensor([*tgt, 3])
            nll += F.cross_entropy(model(src, tgt_in)[0], tgt_out, reduction="sum").item()
            tokens += len(tgt_out)
    out = tmp_path / "dev.ppl.json"
    # a small batch budget puts the sentences into several padded batches
    assert (
        main(["--checkpoint", str(path), "--data", str(data / "dev"), "--output", str(out), "--tokens-per-batch", "24"])
        == 0
    )
    report = json.loads(out.read_text())
    assert report["sentences"] == 11 and report["tokens"] == tokens == int(dev.tgt_lengths.sum()) + 11
    assert report["nll_per_token"] == pytest.approx(nll / tokens, rel=1e-5)
    assert report["ppl"] == pytest.approx(math.exp(nll / tokens), rel=1e-5)
    assert report["precision"] == "fp32"  # train.precision auto, on a CPU


def test_perplexity_follows_the_runs_precision(tmp_path, checkpoint):
    """A run trained in bf16 is scored in bf16 (as Table 3's perplexity on a GPU), fp32 in fp32."""
    path, model = checkpoint
    data = make_task(tmp_path / "toy", n_train=1, n_dev=11)
    state = load_checkpoint(path)
    reports = {}
    for precision in ("fp32", "bf16"):
        state.settings = {**SETTINGS, "train": {**SETTINGS["train"], "precision": precision}}
        save_checkpoint(tmp_path / f"{precision}.pt", state)
        out = tmp_path / f"{precision}.json"
        assert (
            main(["--checkpoint", str(tmp_path / f"{precision}.pt"), "--data", str(data / "dev"), "--output", str(out)])
            == 0
        )
        reports[precision] = json.loads(out.read_text())
    assert [reports[p]["precision"] for p in ("fp32", "bf16")] == ["fp32", "bf16"]
    assert reports["bf16"]["ppl"] != reports["fp32"]["ppl"]
    assert reports["bf16"]["ppl"] == pytest.approx(reports["fp32"]["ppl"], rel=0.05)


def test_perplexity_follows_the_runs_cpu_matmul(tmp_path, checkpoint, monkeypatch):
    """A CPU scores through oneDNN where the run trained (and validated) through it."""
    from aiayn.evaluate import perplexity
    from aiayn.model.functional import onednn_available

    path, _ = checkpoint
    data = make_task(tmp_path / "toy", n_train=1, n_dev=5)
    seen, real = [], perplexity.corpus_nll
    monkeypatch.setattr(perplexity, "corpus_nll", lambda model, *a: seen.append(model.onednn) or real(model, *a))
    state = load_checkpoint(path)
    for matmul in ("onednn", "mkl"):
        state.settings = {**SETTINGS, "train": {**SETTINGS["train"], "cpu_matmul": matmul}}
        save_checkpoint(tmp_path / f"{matmul}.pt", state)
        assert (
            main(
                [
                    "--checkpoint",
                    str(tmp_path / f"{matmul}.pt"),
                    "--data",
                    str(data / "dev"),
                    "--output",
                    str(tmp_path / f"{matmul}.json"),
                ]
            )
            == 0
        )
    assert seen == [onednn_available(), False]


def test_report_golden_and_empty_split():
    assert perplexity_report({"nll": 2 * math.log(4), "tokens": 2, "sentences": 1}) == {
        "ppl": pytest.approx(4.0),
        "nll_per_token": pytest.approx(math.log(4)),
        "tokens": 2,
        "sentences": 1,
    }
    with pytest.raises(ValueError, match="no target tokens"):
        perplexity_report({"nll": 0.0, "tokens": 0, "sentences": 0})


def test_vocabulary_mismatch_is_an_error(tmp_path, checkpoint):
    path, _ = checkpoint
    from aiayn.data.shards import ShardWriter

    with ShardWriter(tmp_path / "dev", vocab_size=VOCAB + 1) as writer:
        writer.add([5], [6])
    with pytest.raises(ValueError, match="vocabulary of 41 ids"):
        main(["--checkpoint", str(path), "--data", str(tmp_path / "dev"), "--output", str(tmp_path / "o.json")])
