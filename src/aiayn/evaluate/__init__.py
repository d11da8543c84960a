"""Evaluation: perplexity, BLEU, parsing F1."""
