"""Training hyperparameters: the keys of ``config.yaml`` ``defaults.train`` (paper section 5)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from aiayn.options.core import Section, option
from aiayn.options.decode import cpu_matmul_option, precision_option
from aiayn.options.model import ModelConfig

# What null means for train.tokens_per_pass and train.batch_shapes where it depends on the device
CPU_TOKENS_PER_PASS = 12500
GPU_BATCH_SHAPES = 64


@dataclass(frozen=True)
class TrainConfig(Section):
    """Defaults are the paper's base setting (sections 5.1 to 5.4).

    Token budgets count padded tokens of each side separately, eos and bos included
    (:mod:`aiayn.runtime.batches`): a batch of n pairs holds n * max(source length + 1) source tokens
    and n * max(target length + 1) target tokens, and both stay within the budget. The paper's
    "approximately 25000 source tokens and 25000 target tokens" per batch (section 5.1) is
    ``tokens_per_step: 25000``.

    ``resumable`` keys may change between a run and its resumption (:mod:`aiayn.train.resume`):
    extending training, how often it logs, evaluates and saves, how it is compiled, and where it runs.
    The number of ranks (gpus, cpu_ranks, nodes) keeps the tokens per step
    (:func:`aiayn.runtime.batches.plan_step`) but changes
    the batch order from the current epoch on and the dropout masks (``Trainer.resume`` says how);
    threads at most the order of a CPU's float sums.
    """

    SECTION = "train"

    train_steps: int = option(
        100000, help="optimizer steps (base: 100,000; big: 300,000)", source="paper 5.2", minimum=1, resumable=True
    )
    label_smoothing: float = option(
        0.1, help="epsilon_ls of label smoothing", source="paper 5.4", minimum=0.0, exclusive_maximum=1.0
    )
    tokens_per_step: int = option(
        25000,
        help="padded source tokens, and as many target tokens, per optimizer step, all GPUs and passes together",
        source="paper 5.1",
        minimum=1,
        renamed_from="max_tokens",
    )
    tokens_per_pass: int | None = option(
        None,
        help="padded tokens per side of one forward pass on one device "
        "(accumulation makes up the step; also the dev evaluation's batch; null: "
        f"on a GPU as many as its memory holds, one pass a step where it fits "
        f"(aiayn.train.memory); {CPU_TOKENS_PER_PASS:,} on a CPU)",
        minimum=1,
        renamed_from="max_tokens_per_batch",
        resumable=True,
        absent_means=CPU_TOKENS_PER_PASS,
    )
    batch_shapes: int | None = option(
        None,
        help="training batches are padded to at most this many shapes "
        "(rows, source length, target length), chosen for the corpus "
        "(aiayn.runtime.shapes; 0: each batch as long as its longest pair; null: "
        f"{GPU_BATCH_SHAPES} on a GPU, 0 on a CPU)",
        minimum=0,
        resumable=True,
        absent_means=0,
    )
    max_length: int = option(
        256,
        help="training pairs with a side longer than this many subwords, eos or bos "
        "included, are not trained on and counted in the log (0: none dropped)",
        source="tensor2tensor transformer_base max_length = 256, dropped in training "
        "(utils/data_reader.py, utils/trainer_utils.py at 3d9c62f2)",
        minimum=0,
        absent_means=0,
    )
    adam_betas: tuple[float, float] = option(
        (0.9, 0.98), help="Adam's beta_1, beta_2", source="paper 5.3", minimum=0.0, exclusive_maximum=1.0
    )
    adam_eps: float = option(1e-9, help="Adam's epsilon", source="paper 5.3", exclusive_minimum=0.0)
    warmup_steps: int = option(4000, help="steps of linear learning-rate warmup", source="paper 5.3", minimum=1)
    lr_scale: float = option(
        1.0,
        help="factor on the paper's learning rate d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5)",
        source="paper 5.3 (equation 3)",
        exclusive_minimum=0.0,
    )
    clip_norm: float = option(0.0, help="gradient norm clipping (0: none, as the paper)", minimum=0.0)
    weight_decay: float = option(0.0, help="Adam's L2 weight decay (0: none, as the paper)", minimum=0.0)
    # NumPy seeds the batch order and takes no negative seed ("All integer values must be non-negative",
    # numpy/numpy numpy/random/bit_generator.pyx at v2.5.2, 48fecee5); below 2**32, train.step's seed of a
    # step and rank stays inside the 64 bits torch.manual_seed takes
    seed: int = option(
        1,
        help="seed of initialization, dropout and batch order; extra seeds add 1, 2, ...",
        minimum=0,
        maximum=2**32 - 1,
    )
    precision: str = precision_option("arithmetic of training: auto, fp32 or bf16 (fp16 would need loss scaling)")
    compile: bool | None = option(
        None,
        help="torch.compile the model and its loss as one step (null: on a GPU, not on a CPU)",
        resumable=True,
        absent_means=False,
    )
    compile_mode: str = option(
        "default",
        help="torch.compile's mode: default, reduce-overhead (CUDA graphs, one "
        "per batch shape) or max-autotune-no-cudagraphs",
        resumable=True,
        choices=("default", "reduce-overhead", "max-autotune-no-cudagraphs"),
    )
    # mkl: faster than onednn end to end on the last CPU measured, slower per product on an earlier one
    # (docs/studies/cpu-training.md, "CPU training against fairseq-train again")
    cpu_matmul: str = cpu_matmul_option("float32 CPU products of training: mkl (torch's default) or onednn", "mkl")
    gpus: int = option(1, help="GPUs per training job (torchrun/DDP for more; 0: the CPU)", minimum=0, resumable=True)
    cpu_ranks: int = option(1, help="gloo ranks on the CPU (needs gpus: 0)", minimum=1, resumable=True)
    nodes: int = option(1, help="machines of one training (torchrun)", minimum=1, resumable=True)
    rendezvous: str = option("", help="HOST:PORT of a multi-node torchrun (empty: this machine)", resumable=True)
    checkpoint_minutes: float = option(
        10,
        help="minutes between checkpoints (0: none by time)",
        source='paper 6.1 ("written at 10-minute intervals")',
        minimum=0.0,
        resumable=True,
    )
    checkpoint_steps: int = option(
        1400,
        help="steps between the spaced checkpoints averaging reads (0: spaced by checkpoint_minutes alone)",
        source="paper 6.1: 100,000 steps at 10-minute intervals",
        minimum=0,
        resumable=True,
    )
    keep_checkpoints: int = option(20, help="checkpoints kept on disk", minimum=1, resumable=True)
    log_every_steps: int = option(100, help="steps between training-log lines", minimum=1, resumable=True)
    dev_every_steps: int = option(
        1000, help="steps between dev perplexities (0: at the end only)", minimum=0, resumable=True
    )
    nan_policy: str = option("skip", help="a step with a non-finite loss: skip it or stop", choices=("skip", "stop"))
    threads: int | None = option(
        None,
        help="CPU threads of a training job, shared by its ranks (null: torch's default; --threads overrides)",
        minimum=1,
        resumable=True,
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.gpus and self.cpu_ranks != 1:
            raise ValueError(
                f"train.cpu_ranks={self.cpu_ranks} needs train.gpus: 0 (with GPUs there is one "
                f"rank per GPU), got train.gpus={self.gpus}"
            )
        host, _, port = self.rendezvous.rpartition(":")
        if self.rendezvous and not (host and port.isdigit()):
            raise ValueError(f"train.rendezvous must be HOST:PORT (or empty), got {self.rendezvous!r}")

    def length_limit(self, position_limit: int | None) -> int | None:
        """The longest side (with eos or bos) a training pair may have: ``max_length`` and the model's
        ``position_limit`` (:attr:`ModelConfig.position_limit`), the smaller of those that are set."""
        limits = [limit for limit in (self.max_length, position_limit) if limit]
        return min(limits) if limits else None

    @property
    def local_ranks(self) -> int:
        """Data-parallel ranks on one machine: one per GPU, or ``cpu_ranks`` gloo ranks on the CPU."""
        return self.gpus if self.gpus else self.cpu_ranks

    def batch_shapes_on(self, device_type: str) -> int:
        """``batch_shapes`` on a device of ``device_type`` (``cuda``, ``cpu``), null resolved."""
        if self.batch_shapes is not None:
            return self.batch_shapes
        return GPU_BATCH_SHAPES if device_type == "cuda" else 0

    def compile_on(self, device_type: str) -> bool:
        """``compile`` on a device of ``device_type``, null resolved (on a GPU, not on a CPU)."""
        return device_type == "cuda" if self.compile is None else self.compile


@dataclass(frozen=True)
class RunConfig:
    """A training run's settings file (``R/<task>/<run>/settings/train.json``: ``model``, ``train``,
    ``experiment``, ``task``), built once per training process and handed down; ``values`` is the
    file's content as checkpoints record it."""

    model: ModelConfig
    train: TrainConfig
    values: Mapping[str, Any]

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> "RunConfig":
        """Build both sections; a missing section, unknown key or bad value raises ValueError naming it."""
        for section in ("model", "train"):
            if not isinstance(values, Mapping) or not isinstance(values.get(section), Mapping):
                raise ValueError(f"lacks the {section!r} section")
        return cls(ModelConfig.from_dict(values["model"]), TrainConfig.from_dict(values["train"]), dict(values))
