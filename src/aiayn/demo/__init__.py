"""The embedded demo: generated stand-ins for WMT14 and the WSJ treebank, written as a local mirror.

``lexicon`` (words) -> ``grammar`` (sampled clauses, templates) -> ``languages`` (English trees, German
and French sentences) -> ``mirror`` (archives, ``sources.lock``, treebank; ``python -m aiayn.demo``).
"""
