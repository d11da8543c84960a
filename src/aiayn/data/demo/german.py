"""German realization of an abstract clause.

What it exercises: verb-second main clauses (a fronted adverbial moves the subject behind the
finite verb: "Gestern hat Anna ..."), the verb bracket (participle, infinitive or separable prefix at
the end: "hat ... gekauft", "ruft ... an"), verb-final subordinate and relative clauses ("weil ...
gekauft hat", "der ... schläft"), case and gender on articles and adjective endings (weak after
der/dieser, mixed after ein, strong without article), dative plural -n, capitalized nouns,
contractions (im, zum, zur), decimal comma and "." thousands.
"""

from __future__ import annotations

from .grammar import NP, Clause
from .lexicon import NUMBER_WORDS, WEEKDAYS
from .surface import CLOSE_QUOTE, OPEN_QUOTE, finish, format_number

_CASES = ("nom", "acc", "dat")
DEF = dict(zip(_CASES, ({"m": "der", "f": "die", "n": "das", "pl": "die"},
                        {"m": "den", "f": "die", "n": "das", "pl": "die"},
                        {"m": "dem", "f": "der", "n": "dem", "pl": "den"})))
INDEF = dict(zip(_CASES, ({"m": "ein", "f": "eine", "n": "ein"},
                          {"m": "einen", "f": "eine", "n": "ein"},
                          {"m": "einem", "f": "einer", "n": "einem"})))
WEAK = dict(zip(_CASES, ({"m": "e", "f": "e", "n": "e", "pl": "en"},
                         {"m": "en", "f": "e", "n": "e", "pl": "en"},
                         {"m": "en", "f": "en", "n": "en", "pl": "en"})))
MIXED = dict(zip(_CASES, ({"m": "er", "f": "e", "n": "es"},
                          {"m": "en", "f": "e", "n": "es"},
                          {"m": "en", "f": "en", "n": "en"})))
STRONG_PLURAL = {"nom": "e", "acc": "e", "dat": "en"}
PRONOUNS = {"I": "ich", "you": "Sie", "he": "er", "she": "sie", "we": "wir", "they": "sie"}
# Finite forms (ich, er/sie/es, plural) of auxiliaries and modals.
FORMS = {
    "haben": ("habe", "hat", "haben"), "sein": ("bin", "ist", "sind"), "war": ("war", "war", "waren"),
    "werden": ("werde", "wird", "werden"), "können": ("kann", "kann", "können"),
    "konnte": ("konnte", "konnte", "konnten"), "wollen": ("will", "will", "wollen"),
    "wollte": ("wollte", "wollte", "wollten"), "kosten": ("koste", "kostet", "kosten"),
    "kostete": ("kostete", "kostete", "kosteten"),
}
TIMES = {"yesterday": ["gestern"], "today": ["heute"], "tomorrow": ["morgen"], "last_week": ["letzte", "Woche"],
         "next_year": ["nächstes", "Jahr"], "this_afternoon": ["heute", "Nachmittag"], "weekend": ["am", "Wochenende"]}
# Weak masculine nouns (n-declension): accusative and dative singular take -(e)n, here their plural form.
WEAK_NOUNS = {"Junge", "Student", "Journalist", "Kunde", "Bauer", "Nachbar"}
CONTRACTIONS = {("in", "dem"): "im", ("zu", "dem"): "zum", ("zu", "der"): "zur"}


def _person(np_: NP) -> int:
    return {"1s": 0, "3s": 1}.get(np_.person, 2)


def np_tokens(np_: NP, case: str) -> list[str]:
    """Article + adjective (with its ending) + noun (+ relative clause) in ``case`` (nom/acc/dat)."""
    if np_.kind == "pron":
        return [PRONOUNS[np_.pron]]
    if np_.kind == "name":
        return [np_.name.text]
    if np_.kind == "city":
        return [np_.city.de]
    noun = np_.noun
    key = "pl" if np_.plural else noun.de_gender
    word = noun.de[1] if np_.plural else noun.de[0]
    if np_.plural and case == "dat" and not word.endswith(("n", "s")):
        word += "n"
    elif not np_.plural and case != "nom" and word in WEAK_NOUNS:
        word = noun.de[1]
    if np_.det in ("the", "this"):
        article = DEF[case][key]
        if np_.det == "this":
            article = "dies" + {"der": "er", "die": "e", "das": "es", "den": "en", "dem": "em"}[article]
        tokens, endings = [article], WEAK[case]
    elif np_.det == "a":
        tokens, endings = [INDEF[case][key]], MIXED[case]
    else:
        tokens = [] if np_.det == "bare" else [_count(np_.count)]
        endings = {"pl": STRONG_PLURAL[case]}
    if np_.adj is not None:
        tokens.append(np_.adj.de_stem + endings[key])
    if np_.age:
        tokens.append(f"{np_.age}-jährig" + endings[key])
    tokens.append(word)
    if np_.rel is not None:
        relative = DEF["nom"][key]
        tokens += [",", *clause_tokens(np_.rel, "sub", subject=[relative]), ","]
    return tokens


def _count(count: int) -> str:
    return NUMBER_WORDS["de"][count - 2] if count <= 10 else format_number(count, "de")


def _pp(prep: str, obj: NP) -> list[str]:
    if obj.kind == "city":
        return ["nach" if prep == "to" else "in", obj.city.de]
    german, case = {"in": ("in", "dat"), "with": ("mit", "dat"), "for": ("für", "acc"), "to": ("zu", "dat")}[prep]
    tokens = [german, *np_tokens(obj, case)]
    if (tokens[0], tokens[1]) in CONTRACTIONS:
        tokens[:2] = [CONTRACTIONS[(tokens[0], tokens[1])]]
    return tokens


def time_tokens(clause: Clause) -> list[str]:
    if clause.time == "weekday":
        return ["am", WEEKDAYS["de"][clause.time_arg]]
    if clause.time == "year":
        return ["im", "Jahr", str(clause.time_arg)]
    return list(TIMES[clause.time])


def verb_parts(clause: Clause) -> tuple[str, list[str], str]:
    """(finite verb, verb-final tail, separable prefix of the finite verb) for the person of the subject."""
    p = _person(clause.subj)
    if clause.kind == "copula":
        if clause.modal == "will":
            return FORMS["werden"][p], ["sein"], ""
        return FORMS["war" if clause.tense == "past" else "sein"][p], [], ""
    if clause.kind == "cost":
        return FORMS["kostete" if clause.tense == "past" else "kosten"][p], [], ""
    verb = clause.verb
    infinitive = verb.de_prefix + verb.de_inf
    if clause.modal == "will":
        return FORMS["werden"][p], [infinitive], ""
    if clause.modal in ("can", "want"):
        lemma = {("can", "pres"): "können", ("can", "past"): "konnte",
                 ("want", "pres"): "wollen", ("want", "past"): "wollte"}[clause.modal, clause.tense]
        return FORMS[lemma][p], [infinitive], ""
    if clause.tense == "past":
        return FORMS["sein" if verb.de_aux == "s" else "haben"][p], [verb.de_prefix + verb.de_part], ""
    return verb.de_pres[p], [], verb.de_prefix


def _middle(clause: Clause) -> list[str]:
    """The middle field after the subject: time, adverb, object, price, prepositional phrase, predicate."""
    tokens: list[str] = []
    if clause.time and not clause.fronted:
        tokens += time_tokens(clause)
    if clause.adverb:
        tokens.append({"often": "oft", "also": "auch"}[clause.adverb])
    if clause.obj is not None:
        tokens += np_tokens(clause.obj, "acc")
    if clause.kind == "cost":
        tokens += _price(clause.price)
    if clause.pp is not None:
        tokens += _pp(*clause.pp)
    if clause.adj is not None:
        tokens += (["sehr"] if clause.very else []) + [clause.adj.de_pred]
    return tokens


def _price(price: tuple[float, bool, bool]) -> list[str]:
    value, millions, more = price
    tokens = (["mehr", "als"] if more else []) + [format_number(value, "de")]
    return tokens + (["Millionen"] if millions else []) + ["Euro"]


def clause_tokens(clause: Clause, order: str, subject: list[str] | None = None) -> list[str]:
    """Tokens of a clause in ``order``: "main" (verb second), "sub" (verb last) or "question" (verb first)."""
    subj = subject if subject is not None else np_tokens(clause.subj, "nom")
    finite, tail, prefix = verb_parts(clause)
    middle = _middle(clause)
    if order == "sub":
        return subj + middle + tail + [prefix + finite]
    if order == "question":
        return [finite] + subj + middle + tail + [prefix]
    tail = tail + ([prefix] if prefix else [])
    if clause.time and clause.fronted:
        tokens = time_tokens(clause) + [finite] + subj + middle + tail
    else:
        tokens = subj + [finite] + middle + tail
    if clause.comp is not None:
        tokens += [",", "dass", *clause_tokens(clause.comp, "sub")]
    if clause.because is not None:
        tokens += [",", "weil", *clause_tokens(clause.because, "sub")]
    return tokens


def german_sentence(clause: Clause) -> str:
    """The German translation of a sampled sentence, as raw text."""
    said = "sagte" if _person(clause.subj) < 2 else "sagten"
    if clause.quote == "colon":
        tokens = [*np_tokens(clause.subj, "nom"), said, ":", OPEN_QUOTE, *clause_tokens(clause.comp, "main"), ".",
                  CLOSE_QUOTE]
    elif clause.quote:
        tokens = [OPEN_QUOTE, *clause_tokens(clause.comp, "main"), CLOSE_QUOTE, ",", said,
                  *np_tokens(clause.subj, "nom"), "."]
    elif clause.question:
        tokens = [t for t in clause_tokens(clause, "question") if t] + ["?"]
    else:
        tokens = clause_tokens(clause, "main") + ["."]
    return finish(tokens)
