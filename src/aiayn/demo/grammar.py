"""One template grammar: seeded language-neutral clauses, realized by per-language templates and rules.

German and French are a function of the English: word order, agreement and elision to learn, not to
guess. A template is slot names (``subj fin time obj pp verb comp``) and words; English ones hold the
Penn Treebank bracketing, so English comes out as its tree. German: verb second, the verb bracket, verb-
final subordinate clauses, case and gender endings, „quotes“. French: adjectives after or before the noun,
agreement, elision, au, « quotes »; years: in 2008, im Jahr 2008, en 2008.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Callable

from aiayn.demo.lexicon import Adjective, Lexicon, Noun, Verb, french_plural
from aiayn.parsing.trees import Tree

_TOKEN = re.compile(r"\(|\)|[^\s()]+")


@dataclass
class NP:
    head: Noun
    plural: bool = False
    det: str = ""  # "the" | "a" | "" (a bare plural, a name or city)
    adj: Adjective | None = None


@dataclass
class Clause:
    subj: NP
    verb: Verb
    tense: str = "pres"  # "pres" | "past" | "will" | "can"
    role: str = "main"  # "main" | "sub": picks the template ("front" if ``front``)
    obj: NP | None = None
    pp: tuple[str, NP] | None = None  # ("in" | "with" | "to", NP)
    time: dict[str, str] | None = None  # language -> the time adverbial
    front: bool = False  # the time adverbial comes first
    comp: tuple[str, Clause] | None = None  # ("that" | "0" | "quote", clause)


def sample_np(rng: random.Random, lex: Lexicon, classes: str) -> NP:
    """A name or city, or a determiner, maybe an adjective, and a noun, of one of ``classes``."""
    names = [n for n in lex.nouns if n.proper and n.cls in classes]
    if names and rng.random() < 0.25:
        return NP(rng.choice(names))
    np_ = NP(rng.choice([n for n in lex.nouns if not n.proper and n.cls in classes]), rng.random() < 0.3)
    np_.det = rng.choice(["the", "the", ""] if np_.plural else ["the", "the", "a"])
    np_.adj = rng.choice([a for a in lex.adjectives if np_.head.cls in a.classes]) if rng.random() < 0.4 else None
    return np_


def sample_clause(rng: random.Random, lex: Lexicon, role: str = "main", top: bool = False) -> Clause:
    """A clause: a verb, its subject and object, maybe a place and a time; only ``top``, the sentence
    itself, may take a that-clause or a quotation."""
    verb = rng.choice([v for v in lex.verbs if top or v.obj != "!"])
    subj, frame = sample_np(rng, lex, verb.subj), verb.obj
    tense = rng.choices(["pres", "past", "will", "can"], [0.4, 0.4, 0.12, 0.08])[0]
    if verb.en[0] == verb.en[1] and tense == "past" and subj.plural:
        tense = "pres"  # "men read": the English would not show the past
    c = Clause(subj, verb, tense, role)
    if frame == "@":
        c.pp = ("to", sample_np(rng, lex, "pc"))
    elif frame == "!":
        conj = rng.choice(["that", "that", "0"] + ["quote", "quote"] * (verb.en[0] == "say"))
        c.comp = (conj, sample_clause(rng, lex, "main" if conj == "quote" else "sub"))
    elif frame:
        c.obj = sample_np(rng, lex, frame)
    if frame not in ("@", "!") and rng.random() < 0.4:
        c.pp = ("in", sample_np(rng, lex, "pc")) if rng.random() < 0.7 else ("with", sample_np(rng, lex, "ha"))
    if not c.comp and rng.random() < 0.45:
        mark = {"pres": "p", "past": "d", "will": "f", "can": "p"}[tense]
        time, year = rng.choice([t for t in lex.times if mark in t["tenses"]]), rng.randint(1995, 2013)
        c.time = {lang: time[lang].format(year) for lang in ("en", "de", "fr")}
        c.front = role == "main" and rng.random() < 0.5
    return c


def leaf(tag: str, word: str) -> Tree:
    return Tree(tag, [word])


class Language:
    """Realizes clauses by filling templates. A subclass gives templates, tables and ``np`` (a noun phrase
    in a case); ``group`` here is German's and French's (the English past is not a perfect)."""

    code, front_comma = "", ""  # front_comma: the template after a fronted time
    templates: dict[str, str] = {}  # main; front and sub fall back to main
    comps: dict[str, str] = {}  # that, 0, quote -> the template of what follows the verb
    aux: dict[str, tuple[str, str]] = {}  # will, can and the perfect's auxiliaries: (singular, plural)
    prepositions: dict[str, str] = {}  # in, with, to; in-c, to-c before a city
    quotes = ("", "")  # opening and closing quotation marks, as tokens
    rewrites: tuple[tuple[str, str], ...] = ()  # (regex, replacement) on the text: spacing, elision, contractions

    def fill(self, template: str, c: Clause) -> list:
        """Slots replaced by what fills them, other words kept, brackets made into trees."""
        stack, labels, slots = [[]], [], self.slots(c)
        tokens = iter(_TOKEN.findall(template))
        for token in tokens:
            if token == "(":
                labels.append(next(tokens))
                stack.append([])
            elif token == ")":
                label, kids = labels.pop(), stack.pop()
                if len(kids) == 1 and isinstance(kids[0], Tree) and kids[0].label == label:
                    stack[-1].append(kids[0])
                elif kids:
                    stack[-1].append(Tree(label, kids))
            else:
                stack[-1].extend(slots[token]() if token in slots else [token])
        return stack[0]

    def realize(self, c: Clause) -> list:
        return self.fill(self.templates.get("front" if c.front else c.role, self.templates["main"]), c)

    def slots(self, c: Clause) -> dict[str, Callable[[], list]]:
        """What fills each slot of ``c`` (computed only where a template names the slot)."""
        return {
            "subj": lambda: self.np(c.subj, 0),
            "fin": lambda: self.group(c)[0],
            "verb": lambda: self.group(c)[1],
            "obj": lambda: self.np(c.obj, 1) if c.obj else [],
            "pp": lambda: self.pp(*c.pp) if c.pp else [],
            "time": lambda: self.fill(c.time[self.code], c) if c.time and not c.front else [],
            "front": lambda: self.fill(f"{c.time[self.code]} {self.front_comma}", c) if c.time and c.front else [],
            "comp": lambda: self.fill(self.comps[c.comp[0]], c) if c.comp else [],
            "clause": lambda: self.realize(c.comp[1]),
        }

    def group(self, c: Clause) -> tuple[list, list]:
        """(finite verb, rest): ([hat], [gekauft]), ([va], [acheter]), ([kauft], []); the past is a perfect."""
        infinitive, third, plural, participle, aux = getattr(c.verb, self.code)
        n = int(c.subj.plural)
        if c.tense in ("will", "can"):
            return [self.aux[c.tense][n]], [infinitive]
        if c.tense == "past":
            return [self.aux[aux][n]], [self.participle(participle, aux, c.subj)]
        return [plural if n else third], []

    def participle(self, participle: str, aux: str, subj: NP) -> str:
        return participle

    def pp(self, prep: str, np_: NP) -> list:
        word = self.prepositions.get(f"{prep}-{np_.head.cls}", self.prepositions[prep])
        label = {"in": "PP-LOC", "to": "PP-DIR"}.get(prep, "PP")
        return [Tree(label, [leaf("TO" if prep == "to" else "IN", word), Tree("NP", self.np(np_, 2))])]

    def end(self, c: Clause) -> list[str]:
        return ["."] + [self.quotes[1]] * bool(c.comp and c.comp[0] == "quote")

    def sentence(self, c: Clause) -> str:
        return self.text(self.realize(c) + self.end(c))

    def text(self, items: list) -> str:
        """The raw text: words capitalized and joined, then the language's rewrites applied in order."""
        text = " ".join(capitalize(list(words(items)), self.quotes[0]))
        for pattern, replacement in self.rewrites:
            text = re.sub(pattern, replacement, text)
        return text


def words(items: list):
    """The words of realized items (strings and trees), without empty elements (``-NONE-``)."""
    for item in items:
        if isinstance(item, str):
            yield item
        elif item.label != "-NONE-":
            yield from words(item.children)


def capitalize(tokens: list[str], open_quote: str) -> list[str]:
    """The first word of the sentence and of every quotation starts with a capital."""
    out, start = list(tokens), True
    for i, token in enumerate(out):
        if token == open_quote:
            start = True
        elif start and token[:1].isalnum():
            out[i], start = token[:1].upper() + token[1:], False
    return out


class English(Language):
    code, front_comma = "en", "(, ,)"
    templates = {"main": "(S front (NP-SBJ subj) (VP fin (VP verb (NP obj) pp time comp)))"}
    comps = {"that": "(SBAR (IN that) clause)", "0": "(SBAR (-NONE- 0) clause)", "quote": "(: :) (`` ``) clause"}
    prepositions = {"in": "in", "with": "with", "to": "to"}
    quotes, rewrites = ("``", "''"), ((r" ([,.:]|'')", r"\1"), ("`` ", "“"), ("''", "”"))

    def np(self, np_: NP, case: int) -> list[Tree]:
        word = np_.head.en[np_.plural]
        if np_.head.proper:
            return [leaf("NNP", word)]
        kids = ([leaf("JJ", np_.adj.en)] if np_.adj else []) + [leaf("NNS" if np_.plural else "NN", word)]
        det = "an" if np_.det == "a" and kids[0].children[0][0] in "aeiou" else np_.det
        return ([leaf("DT", det)] if det else []) + kids

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
    code = "de"
    templates = {
        "main": "subj fin time obj pp verb comp",
        "front": "front fin subj obj pp verb comp",
        "sub": "subj time obj pp verb fin",
    }
    comps = {"that": ", dass clause", "0": ", dass clause", "quote": ": „ clause"}
    prepositions = {"in": "in", "with": "mit", "to": "zu", "to-c": "nach"}
    quotes = ("„", "“")
    rewrites = (
        (r" ([,.:“])", r"\1"),
        ("„ ", "„"),
        (r"\bin dem\b", "im"),
        (r"\bzu dem\b", "zum"),
        (r"\bzu der\b", "zur"),
    )
    aux = {"will": ("wird", "werden"), "can": ("kann", "können"), "h": ("hat", "haben"), "s": ("ist", "sind")}
    # nominative, accusative, dative; each masculine, feminine, neuter, plural
    ARTICLES = {
        "the": "der die das die den die das die dem der dem den",
        "a": "ein eine ein - einen eine ein - einem einer einem -",
    }
    ENDINGS = {
        "the": "e e e en en e e en en en en en",
        "a": "er e es - en e es - en en en -",  # weak, mixed,
        "": "- - - e - - - e - - - en",
    }  # strong

    def np(self, np_: NP, case: int) -> list[str]:
        """Words of ``np_`` in ``case`` (0 nominative, 1 accusative, 2 dative)."""
        word = np_.head.de[np_.plural]
        if np_.head.proper:
            return [word]
        i = 4 * case + (3 if np_.plural else "mfn".index(np_.head.de_gender))
        tokens = [self.ARTICLES[np_.det].split()[i]] if np_.det else []
        tokens += [np_.adj.de + self.ENDINGS[np_.det].split()[i]] if np_.adj else []
        return tokens + [word + "n" if np_.plural and case == 2 and not word.endswith(("n", "s")) else word]


VOWELS = "aeiouéèêâàîôûhAEIOUÉÈÊÂÀÎÔÛH"  # and mute h: l'homme, l'hôtel


def agree(forms: tuple[str, str, str], gender: str, plural: bool, before_vowel: bool = False) -> str:
    """French agreement: feminine, plural, and "nouvel" (not "nouveau") before a vowel."""
    masculine, feminine, elided = forms
    word = feminine if gender == "f" else elided if before_vowel and not plural else masculine
    return french_plural(word) if plural else word


class French(Language):
    code, front_comma = "fr", ","
    templates = {"main": "front subj fin verb obj pp time comp"}
    comps = {"that": "que clause", "0": "que clause", "quote": ": « clause"}
    prepositions = {"in": "dans", "with": "avec", "to": "à", "in-c": "à"}
    quotes = ("«", "»")
    rewrites = (
        (r" ([,.])", r"\1"),
        (rf"\b([lL])[ae] (?=[{VOWELS}])", r"\1'"),  # le, la, de, que before a vowel
        (rf"\b(qu|[dD])e (?=[{VOWELS}])", r"\1'"),
        (r"\bà le\b", "au"),
        (r"\bà les\b", "aux"),
    )
    aux = {"will": ("va", "vont"), "can": ("peut", "peuvent"), "a": ("a", "ont"), "e": ("est", "sont")}
    DETERMINERS = {"the": ("le", "la", "les"), "a": ("un", "une", ""), "": ("", "", "des")}

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
