"""Generated stand-ins for WMT14 and the WSJ treebank (the embedded demo).

``lexicon`` (words and their German and French equivalents) -> ``grammar`` (seeded sampler of
abstract clauses) -> ``english`` (Penn Treebank tree and its sentence), ``german``, ``french``
(realizers, sharing ``surface``) -> ``corpus`` (whole sentences, split by purpose) -> ``archives``
and ``treebank`` (files in the real sources' layouts). The CLI is :mod:`aiayn.data.demo_corpus`.
"""
