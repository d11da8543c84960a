"""Evaluation: BLEU, perplexity, parsing F1."""
