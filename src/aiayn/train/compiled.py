"""The compiled training step (``train.compile``): one graph for every batch shape, and the proof of it.

``torch.compile(dynamic=True)`` traces a batch's sizes as symbols, so one graph serves every shape of
the ladder (:mod:`aiayn.runtime.shapes`), with two exceptions that each made a second graph:

- duck sizing: sizes equal in the first batch (S == T, say) get one symbol, and the first batch where
  they differ fails the guard that they are equal and compiles again (``use_duck_shape``, torch
  2.13 ``torch/fx/experimental/_config.py``, read when a ``ShapeEnv`` is made); here it is off
  while the step is called, so every size has a symbol of its own;
- a Python bool that takes both values (``src_padded``): the compiled ways do not read it
  (:mod:`aiayn.train.forward`).

A compiled frame that reaches Dynamo's recompile limit (``recompile_limit``, 8 in torch 2.13
``torch/_dynamo/config.py``, counted per code object over every ``TrainingLoss`` of a process, of
whatever model) runs eagerly from then on, with one log line. The step is called with
``fail_on_recompile_limit_hit`` on, so that this raises instead: an eager run of the compiled way
would build full (N, V) float32 temporaries in its loss and be slower than the eager way, and no
figure would show why. Reaching the limit is a bug (:func:`graph_report` says how many graphs
there are); a process that trains several models in turn calls ``torch._dynamo.reset()`` between them.
"""

from __future__ import annotations

import contextlib

import torch
from torch import nn

CUDA_GRAPHS_MODE = "reduce-overhead"


@contextlib.contextmanager
def one_graph_settings():
    """Dynamo's settings while the compiled step runs: no duck sizing, and an error, not an eager
    fallback, at the recompile limit (the module docstring)."""
    import torch._dynamo.config as dynamo
    import torch.fx.experimental._config as fx

    with contextlib.ExitStack() as stack:
        stack.enter_context(fx.patch(use_duck_shape=False))
        if hasattr(dynamo, "fail_on_recompile_limit_hit"):
            stack.enter_context(dynamo.patch(fail_on_recompile_limit_hit=True))
        yield


class CompiledStep:
    """``torch.compile(module, dynamic=True, mode=mode)`` called under :func:`one_graph_settings`;
    under CUDA graphs (``mode`` reduce-overhead) each call starts a new step of the graphs' memory
    (``torch.compiler.cudagraph_mark_step_begin``): nothing a call returned is read after the next."""

    def __init__(self, module: nn.Module, mode: str = "default"):
        self._orig_mod, self.mode = module, mode
        self.compiled = torch.compile(module, dynamic=True, mode=mode)

    def __call__(self, *args):
        if self.mode == CUDA_GRAPHS_MODE:
            torch.compiler.cudagraph_mark_step_begin()
        with one_graph_settings():
            return self.compiled(*args)

    def __getattr__(self, name: str):  # the module's own attributes (``way``, ``no_sync`` of DDP)
        return getattr(self._orig_mod, name)


def graph_counters() -> dict:
    """Dynamo's and inductor's counts so far in this process: graphs compiled (``unique_graphs``),
    graph breaks, CUDA graphs skipped (``cudagraph_skips``) and the seconds spent compiling."""
    from torch._dynamo.utils import compilation_time_metrics, counters

    return {
        "graphs": int(counters["stats"]["unique_graphs"]),
        "graph_breaks": int(sum(counters["graph_break"].values())),
        "cudagraph_skips": int(counters["inductor"]["cudagraph_skips"]),
        "compile_seconds": float(sum(sum(v) for k, v in compilation_time_metrics.items() if "compile_inner" in k)),
    }


def cache_entries(module: nn.Module) -> int | None:
    """Compiled variants Dynamo holds for ``type(module).forward`` in this process, of every instance:
    what its recompile limit counts (each model's first graph and every recompile add one); None where
    this torch cannot say."""
    try:
        from torch._dynamo.eval_frame import _debug_get_cache_entry_list

        return len(_debug_get_cache_entry_list(type(module).forward.__code__))
    except (ImportError, AttributeError, TypeError, RuntimeError):
        return None


def cuda_graphs_recorded(device: torch.device) -> int | None:
    """CUDA graphs the compiled steps recorded on ``device`` so far (the nodes of inductor's cudagraph
    trees); None where they cannot be counted (a CPU; a torch whose trees are laid out otherwise)."""
    if device.type != "cuda":
        return None
    try:
        from torch._inductor.cudagraph_trees import get_container

        manager = get_container(device.index or 0).tree_manager
        if manager is None:
            return 0
        nodes, stack = 0, [node for roots in manager.roots.values() for node in roots]
        while stack:
            node = stack.pop()
            nodes += 1
            stack.extend(child for children in node.children.values() for child in children)
        return nodes
    except (ImportError, AttributeError, TypeError):
        return None


def graph_report(module: nn.Module, before: dict, device: torch.device) -> dict:
    """What the compiled step of ``module`` made since ``before`` (:func:`graph_counters`): graphs, graph
    breaks, CUDA graphs skipped, compile seconds; beside them the compiled variants of its forward in
    the process against Dynamo's limit, and the CUDA graphs recorded. ``one_graph``: exactly one graph
    made, no break, below the limit."""
    from torch._dynamo import config

    now = graph_counters()
    made = {key: round(now[key] - before[key], 2) for key in now}
    entries = cache_entries(module)
    limit = int(getattr(config, "recompile_limit", None) or config.cache_size_limit)  # the older name
    return made | {
        "cache_entries": entries,
        "recompile_limit": limit,
        "cuda_graphs": cuda_graphs_recorded(device),
        "one_graph": made["graphs"] == 1 and made["graph_breaks"] == 0 and (entries or 0) < limit,
    }
