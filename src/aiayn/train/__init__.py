"""Training: schedule, loss, batching, the trainer and its CLI (paper section 5)."""
