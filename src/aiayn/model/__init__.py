"""The Transformer of "Attention Is All You Need" (paper section 3)."""

from aiayn.model.cache import DecoderCache, EncoderOut
from aiayn.model.config import ModelConfig
from aiayn.model.stats import count_parameters, flops_per_token
from aiayn.model.transformer import Transformer, load_model

__all__ = ["DecoderCache", "EncoderOut", "ModelConfig", "Transformer", "count_parameters", "flops_per_token", "load_model"]
