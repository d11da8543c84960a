"""The embedded demo: generated stand-ins for WMT14 and the WSJ treebank, written as a local mirror:
``lexicon`` (words) -> ``grammar`` (clauses; English trees, German and French) -> ``mirror`` (the files)."""
