"""One template grammar: a seeded sampler of language-neutral clauses, and templates that order them.

German and French are a deterministic function of the English, so a model has word order, agreement and
number formats to learn, not to guess. A template is a string of slot names (``subj fin time obj adj pp
verb comp``) and words; English ones hold the Penn Treebank bracketing too, ``(S (NP-SBJ subj) (VP fin
(VP verb ...)))``, so English comes out as its tree. An empty bracket is dropped; one holding only a
bracket of its own label merges with it (no modal: one VP).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Callable

from aiayn.demo.lexicon import Adjective, Lexicon, Noun, Verb
from aiayn.parsing.trees import Tree

_TOKEN = re.compile(r"\(|\)|[^\s()]+")


@dataclass
class NP:
    head: Noun
    plural: bool = False
    det: str = ""                       # "the" | "a" | "this" | "" (a bare plural, a name or city)
    adj: Adjective | None = None


@dataclass
class Clause:
    subj: NP
    verb: Verb
    tense: str = "pres"                 # "pres" | "past" | "will" | "can"
    role: str = "main"                  # "main" | "sub": picks the template ("front" if ``front``)
    obj: NP | None = None
    price: float = 0
    pp: tuple[str, NP] | None = None    # ("in" | "with" | "to", NP)
    time: dict[str, str] | None = None  # language -> the time adverbial
    front: bool = False                 # the time adverbial comes first
    comp: tuple[str, Clause] | None = None  # ("that" | "0" | "quote" | "because", clause)


def sample_np(rng: random.Random, lex: Lexicon, classes: str) -> NP:
    """A name or city, or a determiner, maybe an adjective, and a noun, of one of ``classes``."""
    names = [n for n in lex.nouns if n.proper and n.cls in classes]
    if names and rng.random() < 0.25:
        return NP(rng.choice(names))
    np_ = NP(rng.choice([n for n in lex.nouns if not n.proper and n.cls in classes]), rng.random() < 0.3)
    np_.det = rng.choice(["the", "the", "", "this"] if np_.plural else ["the", "the", "a", "a", "this"])
    if rng.random() < 0.4:
        np_.adj = rng.choice([a for a in lex.adjectives if np_.head.cls in a.classes])
    return np_


def sample_clause(rng: random.Random, lex: Lexicon, role: str = "main", top: bool = False) -> Clause:
    """A clause: a verb, its subject and object, maybe a place and a time; ``top``, the sentence itself, may
    take a that-clause, a quotation or a because-clause."""
    verb = rng.choice([v for v in lex.verbs if top or v.obj != "!"])
    subj, frame = sample_np(rng, lex, verb.subj), verb.obj
    tense = rng.choices(["pres", "past", "will", "can"], [0.4, 0.4, 0.12, 0.08])[0]
    if verb.en[0] == verb.en[1] and tense == "past" and subj.plural:
        tense = "pres"                  # "bags cost", "men read": the English would not show the past
    c = Clause(subj, verb, tense, role)
    if frame == "@":
        c.pp = ("to", sample_np(rng, lex, "pc"))
    elif frame == "!":
        conj = rng.choice(["that", "that", "0"] + ["quote", "quote"] * (verb.en[0] == "say"))
        c.comp = (conj, sample_clause(rng, lex, "main" if conj == "quote" else "sub"))
    elif frame == "$":                  # 1,250 euros or 3.5 million euros
        c.price = rng.randint(2, 999) * rng.choice((1, 5, 50)) if rng.random() < 0.7 else rng.randint(11, 99) * 1e5
    elif frame:
        c.obj = sample_np(rng, lex, frame)
    if frame not in ("@", "!") and rng.random() < 0.4:
        c.pp = ("in", sample_np(rng, lex, "pc")) if rng.random() < 0.7 else ("with", sample_np(rng, lex, "ha"))
    if not c.comp and rng.random() < 0.45:
        mark = {"pres": "p", "past": "d", "will": "f", "can": "p"}[tense]
        time, year = rng.choice([t for t in lex.times if mark in t["tenses"]]), rng.randint(1995, 2013)
        c.time = {lang: time[lang].format(year) for lang in ("en", "de", "fr")}
        c.front = role == "main" and rng.random() < 0.5
    if top and not c.comp and rng.random() < 0.15:
        c.comp = ("because", sample_clause(rng, lex, "sub"))
    return c


def leaf(tag: str, word: str) -> Tree:
    return Tree(tag, [word])


def number(value: float, lang: str, million: str) -> list[str]:
    """As a newspaper writes it: 1,200 and 3.5 (en), 1.200 and 3,5 (de), 1 200 and 3,5 (fr); 3.5 million."""
    if value >= 1e6:
        return number(value / 1e6, lang, "") + million.split()
    thousands, decimal = {"en": ",.", "de": ".,", "fr": " ,"}[lang]
    whole, _, fraction = f"{value:.1f}".partition(".")
    return [f"{int(whole):,}".replace(",", thousands) + (decimal + fraction if fraction != "0" else "")]


class Language:
    """Realizes clauses by filling templates. A subclass gives templates, tables and ``np`` (a noun phrase
    in a case); ``group`` here is German's and French's (the English past is not a perfect)."""

    code, million, euro, front_comma = "", "", "", ""  # front_comma: the template after a fronted time
    templates: dict[str, str] = {}      # main; front and sub fall back to main
    comps: dict[str, str] = {}          # that, 0, quote, because -> the template of what follows the verb
    aux: dict[str, tuple[str, str]] = {}  # will, can and the perfect's auxiliaries: (singular, plural)
    prepositions: dict[str, str] = {}   # in, with, to; in-c, to-c before a city
    quotes = ("", "")                   # opening and closing quotation marks, as tokens
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
        price = [leaf("CD", w) for w in number(c.price, self.code, self.million)] + [leaf("NNS", self.euro)]
        return {"subj": lambda: self.np(c.subj, 0), "fin": lambda: self.group(c)[0], "verb": lambda: self.group(c)[1],
                "obj": lambda: price if c.price else self.np(c.obj, 1) if c.obj else [],
                "pp": lambda: self.pp(*c.pp) if c.pp else [],
                "time": lambda: self.when(c) if c.time and not c.front else [],
                "front": lambda: self.when(c) + self.fill(self.front_comma, c) if c.time and c.front else [],
                "comp": lambda: self.fill(self.comps[c.comp[0]], c) if c.comp else [],
                "clause": lambda: self.realize(c.comp[1])}

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

    def when(self, c: Clause) -> list:
        return self.fill(c.time[self.code], c)

    def end(self, c: Clause) -> list[str]:
        return ["."] + ([self.quotes[1]] if c.comp and c.comp[0] == "quote" else [])

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
