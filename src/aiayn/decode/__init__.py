"""Decoding: checkpoint averaging, beam search, translation of a test set."""
