"""The Transformer of "Attention Is All You Need" (paper section 3).

Names load from their submodules on first use (PEP 562), so that importing the package does not import
torch. The model's hyperparameters are defined with every other option: :class:`aiayn.options.ModelConfig`.
"""

import importlib

_HOMES = {
    "DecoderCache": "cache",
    "EncoderOut": "cache",
    "count_parameters": "stats",
    "flops_per_token": "stats",
    "Transformer": "transformer",
}
__all__ = sorted(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'aiayn.model' has no attribute {name!r}")
    return getattr(importlib.import_module(f"aiayn.model.{_HOMES[name]}"), name)
