"""The embedded demo: generated stand-ins for WMT14 and the WSJ treebank, written as a local mirror.

``lexicon`` (tables of words) -> ``grammar`` (sampled clauses; templates and rules: English trees, German and
French sentences) -> ``mirror`` (archives, ``sources.lock``, treebank; ``python -m aiayn.demo``).
"""
