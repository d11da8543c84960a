"""English realization: an abstract clause becomes a Penn Treebank tree; its words are the sentence.

The trees follow the WSJ annotation: ``NP-SBJ``, ``NP-TMP``/``PP-TMP``, ``PP-LOC``, ``PP-DIR``,
``ADJP-PRD``, ``SBAR-PRP``; a control verb's empty subject ``(NP-SBJ (-NONE- *-1))`` co-indexed with
``NP-SBJ-1``; a relative clause ``(SBAR (WHNP-2 (WP who)) (S (NP-SBJ (-NONE- *T*-2)) ...))``; a
topicalized quotation ``(S-TPC-3 ...)`` with its trace ``*T*-3``; a null complementizer ``(-NONE- 0)``;
a quotation after a colon ``(VP (VBD said) (: :) (`` ``) (S ...))`` closed by ``(. .) ('' '')``.
"""

from __future__ import annotations

import itertools

from .grammar import NP, Clause
from .lexicon import NUMBER_WORDS, PARTICLES, WEEKDAYS
from .surface import format_number
from .treebank import Tree, leaf, node

BE = {"pres": {"1s": "am", "3s": "is"}, "past": {"1s": "was", "3s": "was"}}


def _article(det: str, next_word: str) -> str:
    if det != "a":
        return det
    vowel = next_word[:1].lower() in "aeiou" or next_word.startswith(("8", "11-", "18-"))
    return "an" if vowel else "a"


def np_tree(np_: NP, label: str, ids: itertools.count) -> Tree:
    """The tree of a noun phrase; a relative clause makes ``(NP (NP ...) (SBAR ...))``."""
    if np_.kind == "pron":
        return node(label, leaf("PRP", np_.pron))
    if np_.kind == "name":
        return node(label, leaf("NNP", np_.name.text))
    if np_.kind == "city":
        return node(label, leaf("NNP", np_.city.en))
    noun = np_.noun.en[1] if np_.plural else np_.noun.en[0]
    words = []
    if np_.adj is not None:
        words.append(leaf("JJ", np_.adj.en))
    if np_.age:
        words.append(leaf("JJ", f"{np_.age}-year-old"))
    words.append(leaf("NNS" if np_.plural else "NN", noun))
    if np_.det == "num":
        count = NUMBER_WORDS["en"][np_.count - 2] if np_.count <= 10 else format_number(np_.count, "en")
        words.insert(0, leaf("CD", count))
    elif np_.det == "this":
        words.insert(0, leaf("DT", "these" if np_.plural else "this"))
    elif np_.det != "bare":
        words.insert(0, leaf("DT", _article(np_.det, words[0].word)))
    if np_.rel is None:
        return node(label, *words)
    index = next(ids)
    wh = leaf("WP", "who") if np_.animate else leaf("WDT", "that")
    gap = node("NP-SBJ", leaf("-NONE-", f"*T*-{index}"))
    inner = node("S", gap, _vp(np_.rel, ids))
    return node(label, node("NP", *words), node("SBAR", node(f"WHNP-{index}", wh), inner))


def _finite(verb_forms: tuple[str, ...], tense: str, person: str) -> tuple[str, str]:
    """(tag, word) of a finite lexical verb."""
    if tense == "past":
        return "VBD", verb_forms[2]
    return ("VBZ", verb_forms[1]) if person == "3s" else ("VBP", verb_forms[0])


def _be(tense: str, person: str) -> Tree:
    word = BE[tense].get(person, "were" if tense == "past" else "are")
    tag = "VBD" if tense == "past" else ("VBZ" if word == "is" else "VBP")
    return leaf(tag, word)


def time_tree(clause: Clause) -> Tree:
    """``NP-TMP`` or ``PP-TMP`` of the clause's time adverbial."""
    key = clause.time
    if key in ("yesterday", "today", "tomorrow"):
        return node("NP-TMP", leaf("NN", key))
    if key == "weekday":
        return node("PP-TMP", leaf("IN", "on"), node("NP", leaf("NNP", WEEKDAYS["en"][clause.time_arg])))
    if key == "last_week":
        return node("NP-TMP", leaf("JJ", "last"), leaf("NN", "week"))
    if key == "next_year":
        return node("NP-TMP", leaf("JJ", "next"), leaf("NN", "year"))
    if key == "year":
        return node("PP-TMP", leaf("IN", "in"), node("NP", leaf("CD", str(clause.time_arg))))
    if key == "this_afternoon":
        return node("NP-TMP", leaf("DT", "this"), leaf("NN", "afternoon"))
    return node("PP-TMP", leaf("IN", "at"), node("NP", leaf("DT", "the"), leaf("NN", "weekend")))


def _price(clause: Clause) -> Tree:
    value, millions, more = clause.price
    number = [leaf("CD", format_number(value, "en"))] + ([leaf("CD", "million")] if millions else [])
    if more:
        number = [leaf("JJR", "more"), leaf("IN", "than")] + number
    if len(number) > 1:
        return node("NP", node("QP", *number), leaf("NNS", "euros"))
    return node("NP", number[0], leaf("NNS", "euros"))


def _dependents(clause: Clause, ids: itertools.count) -> list[Tree]:
    """Objects, prepositional phrases and complements that follow the main verb."""
    kids: list[Tree] = []
    if clause.verb is not None and clause.verb.en[0] in PARTICLES:
        kids.append(node("PRT", leaf("RP", PARTICLES[clause.verb.en[0]])))
    if clause.obj is not None:
        kids.append(np_tree(clause.obj, "NP", ids))
    if clause.kind == "cost":
        kids.append(_price(clause))
    if clause.adj is not None:
        adj = [leaf("RB", "very")] if clause.very else []
        kids.append(node("ADJP-PRD", *adj, leaf("JJ", clause.adj.en)))
    if clause.pp is not None:
        prep, obj = clause.pp
        label = {"in": "PP-LOC", "to": "PP-DIR"}.get(prep, "PP")
        kids.append(node(label, leaf("TO" if prep == "to" else "IN", prep), np_tree(obj, "NP", ids)))
    if clause.comp is not None and not clause.quote:
        comp = clause_tree(clause.comp, ids)
        kids.append(node("SBAR", leaf("IN", "that") if clause.that else leaf("-NONE-", "0"), comp))
    if clause.time and not clause.fronted:
        kids.append(time_tree(clause))
    if clause.because is not None:
        kids.append(node("SBAR-PRP", leaf("IN", "because"), clause_tree(clause.because, ids)))
    return kids


def _vp(clause: Clause, ids: itertools.count, control: int = 0) -> Tree:
    """The verb phrase; with a modal, ``(VP (MD will) (VP (VB buy) ...))``; "want" adds ``(S (NP-SBJ *-k) (VP (TO to) ...))``."""
    person = clause.subj.person
    kids = _dependents(clause, ids)
    head = leaf("VB", "be") if clause.kind == "copula" else None
    if clause.modal == "" or clause.question:
        if clause.question:
            return node("VP", leaf("VB", clause.verb.en[0]), *kids)
        if clause.kind == "copula":
            return node("VP", _be(clause.tense, person), *kids)
        if clause.kind == "cost":
            tag, word = _finite(("cost", "costs", "cost"), clause.tense, person)
            return node("VP", leaf(tag, word), *kids)
        tag, word = _finite(clause.verb.en, clause.tense, person)
        return node("VP", leaf(tag, word), *kids)
    inner = node("VP", head or leaf("VB", clause.verb.en[0]), *kids)
    if clause.modal == "will":
        return node("VP", leaf("MD", "will"), inner)
    if clause.modal == "can":
        return node("VP", leaf("MD", "could" if clause.tense == "past" else "can"), inner)
    tag, word = _finite(("want", "wants", "wanted"), clause.tense, person)
    infinitive = node("S", node("NP-SBJ", leaf("-NONE-", f"*-{control}")), node("VP", leaf("TO", "to"), inner))
    return node("VP", leaf(tag, word), infinitive)


def clause_tree(clause: Clause, ids: itertools.count, label: str = "S") -> Tree:
    """An ``S`` (or ``SQ`` for a question) without final punctuation."""
    control = next(ids) if clause.modal == "want" and not clause.question else 0
    subj = np_tree(clause.subj, f"NP-SBJ-{control}" if control else "NP-SBJ", ids)
    kids: list[Tree] = []
    if clause.fronted and clause.time:
        kids += [time_tree(clause), leaf(",", ",")]
    if clause.question:
        modal = leaf("MD", clause.modal)
        return node("SQ", modal, subj, _vp(clause, ids))
    kids.append(subj)
    if clause.adverb:
        kids.append(node("ADVP", leaf("RB", clause.adverb)))
    kids.append(_vp(clause, ids, control))
    return node(label, *kids)


def sentence_tree(clause: Clause) -> Tree:
    """The whole sentence's tree (final punctuation included, first word capitalized)."""
    ids = itertools.count(1)
    if clause.quote == "colon":
        said = node("VP", leaf("VBD", "said"), leaf(":", ":"), leaf("``", "``"), clause_tree(clause.comp, ids))
        tree = node("S", np_tree(clause.subj, "NP-SBJ", ids), said, leaf(".", "."), leaf("''", "''"))
    elif clause.quote:
        index = next(ids)
        quoted = clause_tree(clause.comp, ids, label=f"S-TPC-{index}")
        trace = node("SBAR", leaf("-NONE-", "0"), node("S", leaf("-NONE-", f"*T*-{index}")))
        said = node("VP", leaf("VBD", "said"), trace)
        tree = node("S", leaf("``", "``"), quoted, leaf(",", ","), leaf("''", "''"),
                    np_tree(clause.subj, "NP-SBJ", ids), said, leaf(".", "."))
    else:
        tree = clause_tree(clause, ids)
        tree.children.append(leaf(".", "?" if clause.question else "."))
    _capitalize(tree)
    return tree


def _capitalize(tree: Tree) -> None:
    start = True
    for pre in tree.preterminals():
        if pre.label == "``":
            start = True
        elif start and pre.label not in ("-NONE-", ",", ".", ":"):
            pre.word = pre.word[:1].upper() + pre.word[1:]
            start = False


def english_text(tree: Tree) -> str:
    """The raw sentence of a tree: PTB quotes become ", punctuation attaches to the previous word."""
    text = ""
    glue = True
    for word in tree.words():
        if not glue and word not in (",", ".", "?", ":", "''"):
            text += " "
        text += '"' if word in ("``", "''") else word
        glue = word == "``"
    return text
