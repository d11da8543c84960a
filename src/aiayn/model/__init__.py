"""The Transformer of "Attention Is All You Need" (paper section 3).

Names load from their submodules on first use (PEP 562), so that reading :class:`ModelConfig` (the workflow
checks every run's model settings when it parses its config) does not import torch.
"""

import importlib

_HOMES = {"DecoderCache": "cache", "EncoderOut": "cache", "ModelConfig": "config", "count_parameters": "stats",
          "flops_per_token": "stats", "Transformer": "transformer"}
__all__ = sorted(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'aiayn.model' has no attribute {name!r}")
    return getattr(importlib.import_module(f"aiayn.model.{_HOMES[name]}"), name)
