"""Test and dev BLEU of a learning-parity run (``learning_parity.py --corpus``): ours and fairseq-train's.

Both sides decode the same pieces (``bpe/{dev,test}.en``), average their last ``AVERAGED`` checkpoints
(saved every ``CHECKPOINT_STEPS`` steps, fewer in a short run: ``learning_parity.spaced``), search
with beam 4 and a length penalty of 0.6, at most |x| + 50 tokens, and are scored by sacreBLEU on
Moses-detokenized output against the raw reference (``raw/{dev,test}.de``), with the empty outputs
counted:

- ours through the workflow's own commands (``aiayn.decode.average``, ``aiayn.decode.translate``,
  ``aiayn.data.detokenize``), once with ``decode.min_length`` 0 (tensor2tensor's search: an empty output
  may win) and once with 1;
- fairseq's checkpoints averaged as fairseq's ``scripts/average_checkpoints.py`` (v0.12.2) does (the parameters'
  mean) and searched by ``fairseq-generate`` (its own length penalty, log P / |Y|^0.6, and its
  default ``--min-len 1``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import sacrebleu

from aiayn.data.lines import read_lines

AVERAGED = 5
CHECKPOINT_STEPS = 100
SPLITS = ("dev", "test")
MIN_LENGTHS = (0, 1)


def _run(command: list[str], log: Path, env: dict | None = None) -> None:
    with open(log, "a", encoding="utf-8") as handle:
        done = subprocess.run(command, stdout=handle, stderr=subprocess.STDOUT, env=env, check=False)
    if done.returncode:
        raise RuntimeError(f"{' '.join(command[:4])} ... failed ({done.returncode}): see {log}")


def score(hypotheses: list[str], reference: Path) -> dict:
    """sacreBLEU against ``reference`` and how many outputs are empty."""
    refs = read_lines(str(reference))
    bleu = sacrebleu.corpus_bleu(hypotheses, [refs])
    return {"bleu": round(bleu.score, 2), "bp": round(bleu.bp, 3), "empty": sum(1 for h in hypotheses if not h.strip())}


def ours(work: Path, train_dir: Path, threads: int) -> dict:
    """``{split: {min_length: score}}`` of our run in ``train_dir`` (:func:`score`)."""
    out, log = train_dir.parent, train_dir.parent / "decode.log"
    avg = out / "avg.pt"
    if not avg.exists():
        (out / "average.json").write_text(json.dumps({"last": AVERAGED}), encoding="utf-8")
        _run(
            [
                sys.executable,
                "-m",
                "aiayn.decode.average",
                "--train-dir",
                str(train_dir),
                "--settings",
                str(out / "average.json"),
                "--output",
                str(avg),
            ],
            log,
        )
    results: dict = {}
    for split in SPLITS:
        for min_length in MIN_LENGTHS:
            stem = out / f"{split}.min{min_length}"
            (out / f"decode.min{min_length}.json").write_text(json.dumps({"min_length": min_length}), encoding="utf-8")
            if not Path(f"{stem}.txt").exists():
                _run(
                    [
                        sys.executable,
                        "-m",
                        "aiayn.decode.translate",
                        "--checkpoint",
                        str(avg),
                        "--spm",
                        str(work / "bpe" / "spm.model"),
                        "--input",
                        str(work / "bpe" / f"{split}.en"),
                        "--output",
                        f"{stem}.tok",
                        "--settings",
                        str(out / f"decode.min{min_length}.json"),
                        "--threads",
                        str(threads),
                        "--device",
                        "cpu",
                    ],
                    log,
                )
                _run(
                    [
                        sys.executable,
                        "-m",
                        "aiayn.data.detokenize",
                        "--lang",
                        "de",
                        "--input",
                        f"{stem}.tok",
                        "--output",
                        f"{stem}.txt",
                    ],
                    log,
                )
            results.setdefault(split, {})[str(min_length)] = score(
                read_lines(f"{stem}.txt"), work / "raw" / f"{split}.de"
            )
    return results


AVERAGE_FAIRSEQ = """
import sys, torch
paths, out = sys.argv[1:-1], sys.argv[-1]
states = [torch.load(p, map_location="cpu", weights_only=False) for p in paths]
mean = {k: sum(s["model"][k].double() for s in states) / len(states) for k in states[-1]["model"]}
states[-1]["model"] = {k: v.to(states[-1]["model"][k].dtype) for k, v in mean.items()}
torch.save(states[-1], out)
"""


def fairseq(python: str, work: Path, save_dir: Path, data: Path, threads: int) -> dict:
    """``{split: {"1": score}}`` of a fairseq-train run whose checkpoints are in ``save_dir``."""
    env = {
        **os.environ,
        "OMP_NUM_THREADS": str(threads),
        "MKL_NUM_THREADS": str(threads),
        "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1",
    }
    log, avg = save_dir / "decode.log", save_dir / "averaged.pt"
    if not avg.exists():
        found = sorted(save_dir.glob("checkpoint_*_*.pt"), key=lambda p: int(p.stem.split("_")[-1]))[-AVERAGED:]
        if not found:
            raise FileNotFoundError(f"{save_dir}: no checkpoint_<epoch>_<update>.pt to average")
        _run([python, "-c", AVERAGE_FAIRSEQ, *map(str, found), str(avg)], log, env)
    results: dict = {}
    for split, subset in (("dev", "valid"), ("test", "test")):
        stem = save_dir / f"{split}.min1"
        if not Path(f"{stem}.txt").exists():
            generated = save_dir / f"{split}.generate"
            with open(generated, "w", encoding="utf-8") as handle:
                done = subprocess.run(
                    [
                        python,
                        "-m",
                        "fairseq_cli.generate",
                        str(data),
                        "--path",
                        str(avg),
                        "--gen-subset",
                        subset,
                        "--beam",
                        "4",
                        "--lenpen",
                        "0.6",
                        "--max-len-a",
                        "1",
                        "--max-len-b",
                        "50",
                        "--batch-size",
                        "64",
                        "--required-batch-size-multiple",
                        "1",
                        "--post-process",
                        "sentencepiece",
                        "--cpu",
                    ],
                    stdout=handle,
                    stderr=subprocess.DEVNULL,
                    env=env,
                    check=False,
                )
            if done.returncode:
                raise RuntimeError(f"fairseq-generate failed ({done.returncode}): {generated}")
            hyps: dict[int, str] = {}
            for line in read_lines(str(generated)):
                if line.startswith("H-"):
                    head, _, text = line.partition("\t")[2].partition("\t")
                    hyps[int(line.split("\t")[0][2:])] = text
            Path(f"{stem}.tok").write_text("".join(hyps[i] + "\n" for i in range(len(hyps))), encoding="utf-8")
            _run(
                [
                    sys.executable,
                    "-m",
                    "aiayn.data.detokenize",
                    "--lang",
                    "de",
                    "--input",
                    f"{stem}.tok",
                    "--output",
                    f"{stem}.txt",
                ],
                log,
            )
        results[split] = {"1": score(read_lines(f"{stem}.txt"), work / "raw" / f"{split}.de")}
    return results
