"""aiayn: "Attention Is All You Need" (Vaswani et al., 2017) reproduced end to end."""

__version__ = "0.1.0"
