"""Every file of a run and of the results directory, named here and nowhere else.

A run directory ``R/<task>/<run>`` (``<run>``: an experiment, one of its extra seeds, or ``baseline``)::

    train/                         the training's --out-dir (TrainPaths)
      checkpoints/ckpt_<step:08d>.pt   summary.json   checkpoint_last.pt   log.csv   compile-cache/
    avg.pt                         the average of the last checkpoints (paper section 6.1)
    inference.json                 what aiayn-translate/aiayn-parse --run read beyond the run directory
    settings/<stage>.json          train, average, decode
    <split>-<ckpt>.hyp.tok         beam output (<ckpt>: avg or last), .hyp.txt detokenized, .trees repaired
    <split>-<kind>.bleu.json       scores (<kind>: avg, last, or a baseline's copy / flat),
                                   .evalb.txt, .evalb.json; dev-last.ppl.json the dev perplexity
    logs/<name>.log

and beside the runs ``R/config.json``, ``R/settings/<stage>.json`` (bleu, perplexity, attention),
``R/tables/<table>.<ext>``, ``R/plots/``, ``R/attention/`` and ``R/logs/``.

Paths are strings joined with ``/``, exactly as given: the workflow builds its rules' patterns by
passing wildcards (``ResultPaths(R).run("{task}", "{exp}").hyp_tok("{split}", "{ckpt}")``), so that a pattern
and the file a stage or the report asks for are one and the same name. Standard library only: every
layer may import it (tests/test_layering.py), and tests/test_paths.py fails when a name defined here
is spelled as a literal anywhere else in src/ or workflow/.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

BASELINE = "baseline"  # the run directory of a task's baselines (copy the source; flat trees)
AVERAGED, LAST = "avg", "last"  # the checkpoints a run decodes with (``<ckpt>``)
CHECKPOINT_RE = re.compile(r"^ckpt_(\d{8})\.pt$")
STALE_CHECKPOINTS = ".ckpt_*.tmp"  # what a killed save leaves in checkpoints/ (aiayn.io.atomic_path)


def _join(*parts: str) -> str:
    return "/".join(str(part) for part in parts)


@dataclass(frozen=True)
class TrainPaths:
    """A training's output directory (``python -m aiayn.train --out-dir``)."""

    dir: str

    @property
    def checkpoints(self) -> str:
        return _join(self.dir, "checkpoints")

    def checkpoint(self, step: int) -> str:
        """The step-numbered checkpoint that :data:`CHECKPOINT_RE` reads back."""
        return _join(self.checkpoints, f"ckpt_{step:08d}.pt")

    @property
    def last(self) -> str:
        return _join(self.dir, "checkpoint_last.pt")

    @property
    def summary(self) -> str:
        """Written last: the run is complete when it exists."""
        return _join(self.dir, "summary.json")

    @property
    def log_csv(self) -> str:
        return _join(self.dir, "log.csv")

    @property
    def compile_cache(self) -> str:
        """torch.compile's graphs and kernels, kept for a resumed run."""
        return _join(self.dir, "compile-cache")


@dataclass(frozen=True)
class RunPaths:
    """The files of one run directory, ``<results_dir>/<task>/<run>`` (:meth:`ResultPaths.run`)."""

    dir: str

    @property
    def train(self) -> TrainPaths:
        return TrainPaths(_join(self.dir, "train"))

    @property
    def averaged(self) -> str:
        return _join(self.dir, "avg.pt")

    def checkpoint(self, ckpt: str) -> str:
        """The checkpoint a decode reads: ``avg`` (:attr:`averaged`) or ``last`` (the training's last)."""
        return self.averaged if ckpt == AVERAGED else self.train.last if ckpt == LAST else _unknown(ckpt)

    @property
    def inference(self) -> str:
        return _join(self.dir, "inference.json")

    def settings(self, stage: str) -> str:
        """A run's settings file: ``train``, ``average`` or ``decode``."""
        return _join(self.dir, "settings", f"{stage}.json")

    def log(self, step: str, split: str | None = None, kind: str | None = None) -> str:
        """The log of one step of the run (``train``), or of a step on one split and checkpoint or
        kind (``translate``, ``dev``, ``avg``)."""
        return _join(self.dir, "logs", f"{step}.log" if split is None else f"{split}-{kind}.{step}.log")

    def hyp_tok(self, split: str, ckpt: str) -> str:
        return _join(self.dir, f"{split}-{ckpt}.hyp.tok")

    def hyp_txt(self, split: str, ckpt: str) -> str:
        return _join(self.dir, f"{split}-{ckpt}.hyp.txt")

    def trees(self, split: str, kind: str) -> str:
        return _join(self.dir, f"{split}-{kind}.trees")

    def bleu(self, split: str, kind: str) -> str:
        return _join(self.dir, f"{split}-{kind}.bleu.json")

    def evalb_txt(self, split: str, kind: str) -> str:
        return _join(self.dir, f"{split}-{kind}.evalb.txt")

    def evalb(self, split: str, kind: str) -> str:
        return _join(self.dir, f"{split}-{kind}.evalb.json")

    def score(self, translation: bool, split: str, kind: str) -> str:
        """BLEU of a translation, EVALB of a parse."""
        return self.bleu(split, kind) if translation else self.evalb(split, kind)

    @property
    def dev_ppl(self) -> str:
        """Dev perplexity of the last checkpoint."""
        return _join(self.dir, "dev-last.ppl.json")


@dataclass(frozen=True)
class ResultPaths:
    """The files of the results directory beside its runs."""

    dir: str

    def run(self, task: str, run: str) -> RunPaths:
        return RunPaths(_join(self.dir, task, run))

    @property
    def config(self) -> str:
        """The whole config the results came from, for the report."""
        return _join(self.dir, "config.json")

    def settings(self, stage: str) -> str:
        """A settings file of a stage that no one run owns: ``bleu``, ``perplexity``, ``attention``."""
        return _join(self.dir, "settings", f"{stage}.json")

    def table(self, name: str, ext: str) -> str:
        return _join(self.dir, "tables", f"{name}.{ext}")

    @property
    def plots(self) -> str:
        return _join(self.dir, "plots")

    @property
    def attention(self) -> str:
        return _join(self.dir, "attention")

    def figure(self, number: int) -> str:
        return _join(self.attention, f"figure{number}.png")

    @property
    def figures_summary(self) -> str:
        return _join(self.attention, FIGURES_SUMMARY)

    def log(self, name: str) -> str:
        return _join(self.dir, "logs", f"{name}.log")


FIGURES_SUMMARY = "figures.json"  # in the attention figures' --out-dir: what they were drawn from


def _unknown(ckpt: str) -> str:
    raise ValueError(f"checkpoint must be {AVERAGED!r} or {LAST!r}, got {ckpt!r}")
