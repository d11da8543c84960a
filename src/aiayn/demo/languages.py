"""English, German and French: templates (word order), tables and agreement rules.

English yields the Penn Treebank tree. German: verb second (a fronted adverbial puts the subject behind
the finite verb), the verb bracket ("hat ... gekauft"), verb-final subordinate clauses ("dass ...
gekauft hat"), articles and adjective endings by gender, number and case, „quotes“. French: adjectives
after the noun but a few before it ("un nouvel ordinateur"), agreement of articles, adjectives and
participles after être ("Anna est restée"), elision and contractions (l', qu', au), « quotes ».
"""

from __future__ import annotations

from aiayn.demo.grammar import NP, Clause, Language, capitalize, leaf
from aiayn.demo.lexicon import french_plural
from aiayn.parsing.trees import Tree


class English(Language):
    code, million, euro, front_comma = "en", "million", "euros", "(, ,)"
    templates = {"main": "(S front (NP-SBJ subj) (VP fin (VP verb (NP obj) pp time comp)))"}
    comps = {"that": "(SBAR (IN that) clause)", "0": "(SBAR (-NONE- 0) clause)", "quote": "(: :) (`` ``) clause",
             "because": "(SBAR-PRP (IN because) clause)"}
    prepositions = {"in": "in", "with": "with", "to": "to"}
    quotes, rewrites = ("``", "''"), ((r" ([,.:]|'')", r"\1"), ("`` ", "“"), ("''", "”"))

    def np(self, np_: NP, case: int) -> list[Tree]:
        word = np_.head.en[np_.plural]
        if np_.head.proper:
            return [leaf("NNP", word)]
        kids = ([leaf("JJ", np_.adj.en)] if np_.adj else []) + [leaf("NNS" if np_.plural else "NN", word)]
        det = {"a": "an" if kids[0].children[0][0] in "aeiou" else "a", "this": "these" if np_.plural else "this"}
        return ([leaf("DT", det.get(np_.det, np_.det))] if np_.det else []) + kids

    def group(self, c: Clause) -> tuple[list, list]:
        """(modal, verb): ([will], [buy]) or ([], [bought])."""
        base, past = c.verb.en
        if c.tense in ("will", "can"):
            return [leaf("MD", c.tense)], [leaf("VB", base)]
        if c.tense == "past":
            return [], [leaf("VBD", past)]
        third = base + ("es" if base.endswith(("s", "sh", "ch", "x", "o")) else "s")
        return [], [leaf("VBP", base) if c.subj.plural else leaf("VBZ", third)]

    def tree(self, c: Clause) -> Tree:
        """The sentence's tree: final punctuation inside, first words capitalized."""
        tree = self.realize(c)[0]
        tree.children += [leaf(word, word) for word in self.end(c)]
        leaves = [p for p in tree.preterminals() if p.label != "-NONE-"]
        for pre, word in zip(leaves, capitalize([p.children[0] for p in leaves], "``")):
            pre.children[0] = word
        return tree


class German(Language):
    code, million, euro = "de", "Millionen", "Euro"
    templates = {"main": "subj fin time obj pp verb comp", "front": "front fin subj obj pp verb comp",
                 "sub": "subj time obj pp verb fin"}
    comps = {"that": ", dass clause", "0": ", dass clause", "quote": ": „ clause", "because": ", weil clause"}
    prepositions = {"in": "in", "with": "mit", "to": "zu", "to-c": "nach"}
    quotes = ("„", "“")
    rewrites = ((r" ([,.:“])", r"\1"), ("„ ", "„"), (r"\bin dem\b", "im"), (r"\bzu dem\b", "zum"),
                (r"\bzu der\b", "zur"))
    aux = {"will": ("wird", "werden"), "can": ("kann", "können"), "h": ("hat", "haben"), "s": ("ist", "sind")}
    # nominative, accusative, dative; each masculine, feminine, neuter, plural
    ARTICLES = {"the": "der die das die den die das die dem der dem den",
                "a": "ein eine ein - einen eine ein - einem einer einem -",
                "this": "dieser diese dieses diese diesen diese dieses diese diesem dieser diesem diesen"}
    ENDINGS = {"the": "e e e en en e e en en en en en", "this": "e e e en en e e en en en en en",  # weak,
               "a": "er e es - en e es - en en en -", "": "- - - e - - - e - - - en"}           # mixed, strong

    def np(self, np_: NP, case: int) -> list[str]:
        """Words of ``np_`` in ``case`` (0 nominative, 1 accusative, 2 dative)."""
        word = np_.head.de[np_.plural]
        if np_.head.proper:
            return [word]
        i = 4 * case + (3 if np_.plural else "mfn".index(np_.head.de_gender))
        tokens = [self.ARTICLES[np_.det].split()[i]] if np_.det else []
        tokens += [np_.adj.de + self.ENDINGS[np_.det].split()[i]] if np_.adj else []
        return tokens + [word + "n" if np_.plural and case == 2 and not word.endswith(("n", "s")) else word]


VOWELS = "aeiouéèêâàîôûhAEIOUÉÈÊÂÀÎÔÛH"      # and mute h: l'homme, l'hôtel


def agree(forms: tuple[str, str, str], gender: str, plural: bool, before_vowel: bool = False) -> str:
    """French agreement: feminine, plural, and "nouvel" (not "nouveau") before a vowel."""
    masculine, feminine, elided = forms
    word = feminine if gender == "f" else elided if before_vowel and not plural else masculine
    return french_plural(word) if plural else word


class French(Language):
    code, million, euro, front_comma = "fr", "millions de", "euros", ","
    templates = {"main": "front subj fin verb obj pp time comp"}
    comps = {"that": "que clause", "0": "que clause", "quote": ": « clause", "because": "parce que clause"}
    prepositions = {"in": "dans", "with": "avec", "to": "à", "in-c": "à"}
    quotes = ("«", "»")
    rewrites = ((r" ([,.])", r"\1"), (rf"\b([lL])[ae] (?=[{VOWELS}])", r"\1'"),     # le, la, de, que, ce
                (rf"\b(qu|[dD])e (?=[{VOWELS}])", r"\1'"), (rf"\b([cC])e (?=[{VOWELS}])", r"\1et "),  # before a vowel
                (r"\bà le\b", "au"), (r"\bà les\b", "aux"))
    aux = {"will": ("va", "vont"), "can": ("peut", "peuvent"), "a": ("a", "ont"), "e": ("est", "sont")}
    DETERMINERS = {"the": ("le", "la", "les"), "a": ("un", "une", ""), "this": ("ce", "cette", "ces"),
                   "": ("", "", "des")}

    def np(self, np_: NP, case: int) -> list[str]:
        word, gender = np_.head.fr[np_.plural], np_.head.fr_gender
        if np_.head.proper:
            return [word]
        before = np_.adj is not None and np_.adj.fr_before
        det = self.DETERMINERS[np_.det][2 if np_.plural else "mf".index(gender)]
        tokens = ["de" if det == "des" and before else det]
        tokens += [agree(np_.adj.fr, gender, np_.plural, word[0] in VOWELS)] if before else []
        return tokens + [word] + ([agree(np_.adj.fr, gender, np_.plural)] if np_.adj and not before else [])

    def participle(self, participle: str, aux: str, subj: NP) -> str:
        return agree((participle, participle + "e", ""), subj.head.fr_gender, subj.plural) if aux == "e" else participle


LANGUAGES = {"en": English, "de": German, "fr": French}
