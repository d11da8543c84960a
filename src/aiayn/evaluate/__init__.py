"""Evaluation: BLEU, perplexity, EVALB."""
