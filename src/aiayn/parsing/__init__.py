"""English constituency parsing as translation (paper section 6.3): treebank, linearization, repair."""
