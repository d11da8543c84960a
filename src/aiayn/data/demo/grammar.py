"""A seeded sampler of abstract sentences (clauses and noun phrases) over the demo lexicon.

A sentence is sampled once as a language-neutral structure; :mod:`english`, :mod:`german` and
:mod:`french` realize it. The target sentences are therefore a deterministic function of the
English one, which is what makes the demo learnable: a model must learn word order, agreement and
number formatting, not guess. The constructions are few on purpose (the demo trains in minutes).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from .lexicon import Adjective, City, Lexicon, Name, Noun, Verb

PRONOUNS = {"I": "1s", "you": "2f", "he": "3s", "she": "3s", "we": "1p", "they": "3p"}
# Time adverbials: key -> tenses it fits ("p" present, "d" past, "f" future).
TIMES = {"yesterday": "d", "today": "pdf", "tomorrow": "f", "weekday": "pdf", "last_week": "d",
         "next_year": "f", "year": "d", "this_afternoon": "pdf", "weekend": "pdf"}
COUNTS = (12, 15, 20, 25, 30, 40, 50, 120, 250, 300, 1200, 1500, 2000, 3500)
PRICES = (15, 20, 50, 120, 250, 800, 1200, 1500, 4500, 12000)
MILLIONS = (1.5, 2, 2.5, 3.5, 4.2, 7, 12, 30)


@dataclass
class NP:
    """A noun phrase: a pronoun, a person's name, a city, or a determiner + noun with modifiers."""
    kind: str                      # "pron" | "name" | "city" | "noun"
    pron: str = ""
    name: Name | None = None
    city: City | None = None
    noun: Noun | None = None
    plural: bool = False
    det: str = "the"               # "the" | "a" | "this" | "num" | "bare"
    count: int = 0                 # the number of a "num" determiner
    adj: Adjective | None = None
    age: int = 0                   # "a 24-year-old man"
    rel: Clause | None = None      # subject relative clause: "who bought a car"

    @property
    def person(self) -> str:
        if self.kind == "pron":
            return PRONOUNS[self.pron]
        return "3p" if self.plural else "3s"

    @property
    def cls(self) -> str:
        """The lexicon class of the head: people for pronouns and names."""
        return self.noun.cls if self.noun is not None else "h"

    @property
    def animate(self) -> bool:
        return self.kind in ("pron", "name") or (self.noun is not None and self.noun.cls in "ha")


@dataclass
class Clause:
    """One clause: subject, verb group and its dependents; ``kind`` picks the construction."""
    kind: str                      # "trans" | "intrans" | "motion" | "copula" | "say" | "cost"
    subj: NP
    verb: Verb | None = None
    tense: str = "pres"            # "pres" | "past"
    modal: str = ""                # "" | "will" | "can" | "want"
    obj: NP | None = None
    pp: tuple[str, NP] | None = None   # ("in" | "with" | "for" | "to", NP)
    adj: Adjective | None = None   # predicate of a copular clause
    very: bool = False
    time: str = ""                 # a key of TIMES
    time_arg: int = 0              # weekday index or year
    fronted: bool = False          # time adverbial before the subject
    adverb: str = ""               # "often" | "also"
    comp: Clause | None = None     # complement of "say": "... said that <comp>"
    that: bool = True              # overt complementizer
    because: Clause | None = None
    quote: str = ""                # "front": '"<comp>," <subj> said.'; "colon": '<subj> said: "<comp>."'
    question: bool = False         # "Can <subj> <vp>?"
    price: tuple[float, bool, bool] = field(default=(0, False, False))  # (value, millions, "more than")


def sample_np(rng: random.Random, lex: Lexicon, classes: str, *, pron: bool = False,
              names: bool = False, rel: bool = False) -> NP:
    """A noun phrase of one of ``classes`` (see the lexicon), optionally a pronoun or a name."""
    draw = rng.random()
    if pron and draw < 0.15:
        return NP("pron", pron=rng.choice(list(PRONOUNS)))
    if names and "h" in classes and draw < 0.32:
        return NP("name", name=rng.choice(lex.names))
    noun = rng.choice(lex.nouns_of(classes))
    plural = rng.random() < 0.3
    if plural:
        det = rng.choices(["the", "bare", "num", "this"], [0.45, 0.2, 0.25, 0.1])[0]
    else:
        det = rng.choices(["the", "a", "this"], [0.5, 0.3, 0.2])[0]
    count = 0
    if det == "num":
        count = rng.randint(2, 10) if rng.random() < 0.6 else rng.choice(COUNTS)
    np_ = NP("noun", noun=noun, plural=plural, det=det, count=count)
    draw = rng.random()
    if draw < 0.3:
        np_.adj = rng.choice(lex.adjectives_for(noun.cls))
    elif draw < 0.36 and noun.cls == "h" and not plural and det in ("the", "a"):
        np_.age = rng.randint(18, 70)
    if rel and rng.random() < 0.12:
        np_.rel = sample_relative(rng, lex, np_)
    return np_


def sample_relative(rng: random.Random, lex: Lexicon, head: NP) -> Clause:
    """A subject relative clause for ``head``: transitive or intransitive, simple tense."""
    tense = rng.choice(["pres", "past"])
    if head.animate and rng.random() < 0.3:
        return Clause("intrans", head, verb=rng.choice(lex.verbs_of("i")), tense=tense)
    verbs = [v for v in lex.verbs_of("t") if head.animate or v.en[0] in ("see", "like")]
    if not head.animate:
        return Clause("copula", head, adj=rng.choice(lex.adjectives_for(head.cls)), tense=tense)
    verb = rng.choice(verbs)
    return Clause("trans", head, verb=verb, tense=_unambiguous(tense, verb.en, head),
                  obj=sample_np(rng, lex, verb.frame))


def _unambiguous(tense: str, forms: tuple[str, ...], subj: NP) -> str:
    """Present tense where the English past would look the same ("they read", "bags cost").

    The targets must be a function of the English sentence; "they read" cannot say which tense.
    """
    return "pres" if forms[0] == forms[2] and subj.person != "3s" else tense


def _tense_and_modal(rng: random.Random) -> tuple[str, str]:
    tense = rng.choices(["pres", "past"], [0.45, 0.55])[0]
    modal = rng.choices(["", "will", "can", "want"], [0.7, 0.12, 0.09, 0.09])[0]
    if modal == "will":
        tense = "pres"
    return tense, modal


def _time(rng: random.Random, clause: Clause) -> None:
    tense = "f" if clause.modal == "will" else ("d" if clause.tense == "past" else "p")
    options = [key for key, tenses in TIMES.items() if tense in tenses]
    clause.time = rng.choice(options)
    clause.time_arg = rng.randint(0, 4) if clause.time == "weekday" else rng.randint(1995, 2013)
    clause.fronted = rng.random() < 0.5


def sample_simple(rng: random.Random, lex: Lexicon, *, subj_pron: bool = True, rel: bool = True) -> Clause:
    """A clause without embedding: transitive, intransitive, motion, copular or price."""
    kind = rng.choices(["trans", "intrans", "motion", "copula", "cost"], [0.45, 0.12, 0.14, 0.19, 0.1])[0]
    if kind == "cost":
        return _sample_cost(rng, lex)
    tense, modal = _tense_and_modal(rng)
    subj = sample_np(rng, lex, "ha" if kind in ("trans", "copula") else "h", pron=subj_pron, names=True, rel=rel)
    clause = Clause(kind, subj, tense=tense, modal=modal if kind != "copula" or modal == "will" else "")
    if kind == "copula":
        clause.adj = rng.choice(lex.adjectives_for(subj.cls))
        clause.very = rng.random() < 0.25
    elif kind == "motion":
        clause.verb = rng.choice(lex.verbs_of("m"))
        dest = NP("city", city=rng.choice(lex.cities)) if rng.random() < 0.4 else \
            NP("noun", noun=rng.choice(lex.nouns_of("p")), det="the")
        clause.pp = ("to", dest)
    else:
        verbs = lex.verbs_of("t" if kind == "trans" else "i")
        if not subj.animate or (subj.noun is not None and subj.noun.cls == "a"):
            verbs = [v for v in verbs if v.en[0] in ("see", "like", "find", "sleep", "wait")] or verbs
        clause.verb = rng.choice(verbs)
        clause.tense = _unambiguous(clause.tense, clause.verb.en, subj)
        if kind == "trans":
            clause.obj = sample_np(rng, lex, clause.verb.frame, names="h" in clause.verb.frame, rel=rel)
        _sample_pp(rng, lex, clause)
    if rng.random() < 0.35:
        _time(rng, clause)
    if not clause.modal and kind in ("trans", "intrans") and rng.random() < 0.12:
        clause.adverb = rng.choice(["often", "also"])
    return clause


def _sample_pp(rng: random.Random, lex: Lexicon, clause: Clause) -> None:
    draw = rng.random()
    if draw < 0.2:
        place = NP("city", city=rng.choice(lex.cities)) if rng.random() < 0.4 else \
            sample_np(rng, lex, "p")
        clause.pp = ("in", place)
    elif draw < 0.28:
        clause.pp = ("with", sample_np(rng, lex, "ha", names=True))
    elif draw < 0.33 and clause.kind == "trans" and clause.verb.en[0] in ("buy", "write", "find"):
        clause.pp = ("for", sample_np(rng, lex, "h", names=True))


def _sample_cost(rng: random.Random, lex: Lexicon) -> Clause:
    subj = sample_np(rng, lex, "tep")
    millions = subj.noun is not None and subj.noun.cls == "p" and rng.random() < 0.7
    value = rng.choice(MILLIONS) if millions else rng.choice(PRICES)
    tense = _unambiguous(rng.choice(["pres", "past"]), ("cost", "costs", "cost"), subj)
    return Clause("cost", subj, tense=tense, price=(value, millions, rng.random() < 0.2))


def sample_sentence(rng: random.Random, lex: Lexicon) -> Clause:
    """One sentence: a simple clause, or one with a that-clause, a because-clause, a quote or a question."""
    kind = rng.choices(["simple", "say", "because", "quote", "question"], [0.55, 0.15, 0.12, 0.08, 0.1])[0]
    if kind == "simple":
        return sample_simple(rng, lex)
    if kind == "because":
        main = sample_simple(rng, lex, rel=False)
        main.because = sample_simple(rng, lex, rel=False)
        main.because.fronted = False
        return main
    if kind == "question":
        return _sample_question(rng, lex)
    quote = rng.choice(["front", "colon"]) if kind == "quote" else ""
    speaker = sample_np(rng, lex, "h", pron=quote != "front", names=True)
    comp = sample_simple(rng, lex, rel=False)
    comp.fronted = False
    clause = Clause("say", speaker, verb=rng.choice(lex.verbs_of("s")), comp=comp,
                    tense="past" if kind == "quote" else rng.choice(["pres", "past"]))
    clause.that = rng.random() < 0.6
    if quote:
        clause.quote = quote
        clause.verb = next(v for v in lex.verbs_of("s") if v.en[0] == "say")
    return clause


def _sample_question(rng: random.Random, lex: Lexicon) -> Clause:
    while True:
        clause = sample_simple(rng, lex, rel=False)
        if clause.kind in ("trans", "intrans", "motion"):
            break
    clause.modal = rng.choice(["will", "can"])
    clause.tense = "pres"
    clause.question = True
    clause.adverb = ""
    if clause.time:
        _time(rng, clause)
    clause.fronted = False
    return clause
