"""French realization of an abstract clause.

What it exercises: most adjectives after the noun ("la voiture rouge") and a few before it with
their pre-vowel forms ("un nouvel ordinateur"), gender and number agreement of articles, adjectives
and past participles after "être" ("Anna est arrivée"), "des" becoming "de" before a plural
adjective, elision (l', d', qu', j') and contractions (au, aux), "cet" before a vowel, the passé
composé, "aller" + infinitive for the future, decimal comma and space-separated thousands.
"""

from __future__ import annotations

from .grammar import NP, Clause
from .lexicon import NUMBER_WORDS, WEEKDAYS, Adjective
from .surface import CLOSE_QUOTE, OPEN_QUOTE, finish, format_number

PRONOUNS = {"I": ("je", "m"), "you": ("vous", "m"), "he": ("il", "m"), "she": ("elle", "f"),
            "we": ("nous", "m"), "they": ("ils", "m")}
# je, il, nous, vous, ils
FORMS = {
    "avoir": ("ai", "a", "avons", "avez", "ont"), "être": ("suis", "est", "sommes", "êtes", "sont"),
    "était": ("étais", "était", "étions", "étiez", "étaient"), "aller": ("vais", "va", "allons", "allez", "vont"),
    "pouvoir": ("peux", "peut", "pouvons", "pouvez", "peuvent"),
    "pouvait": ("pouvais", "pouvait", "pouvions", "pouviez", "pouvaient"),
    "vouloir": ("veux", "veut", "voulons", "voulez", "veulent"),
    "voulait": ("voulais", "voulait", "voulions", "vouliez", "voulaient"),
    "coûter": ("coûte", "coûte", "coûtons", "coûtez", "coûtent"),
    "coûtait": ("coûtais", "coûtait", "coûtions", "coûtiez", "coûtaient"),
}
TIMES = {"yesterday": ["hier"], "today": ["aujourd'hui"], "tomorrow": ["demain"],
         "last_week": ["la", "semaine", "dernière"], "next_year": ["l'", "année", "prochaine"],
         "this_afternoon": ["cet", "après-midi"], "weekend": ["ce", "week-end"]}
ELISION = {"le": "l'", "la": "l'", "je": "j'", "de": "d'", "que": "qu'"}
CONTRACTIONS = {("à", "le"): "au", ("à", "les"): "aux", ("de", "le"): "du", ("de", "les"): "des"}
_ASPIRATED = ("huit", "onze")


def _person(np_: NP) -> int:
    return {"1s": 0, "3s": 1, "1p": 2, "2f": 3}.get(np_.person, 4)


def _gender(np_: NP) -> str:
    if np_.kind == "pron":
        return PRONOUNS[np_.pron][1]
    if np_.kind == "name":
        return np_.name.gender
    if np_.kind == "city":
        return "m"
    return np_.noun.fr_gender


def adjective_form(adj: Adjective, gender: str, plural: bool, before_vowel: bool = False) -> str:
    """Agreement: masculine/feminine, singular/plural (+s, +x after -eau, none after -s/-x)."""
    masculine, feminine, pre_vowel = adj.fr
    if " " in masculine:                       # "à long terme" is invariable
        return masculine
    if gender == "f":
        return feminine + ("s" if plural else "")
    if not plural:
        return pre_vowel if before_vowel else masculine
    if masculine.endswith(("s", "x")):
        return masculine
    return masculine + ("x" if masculine.endswith("eau") else "s")


def _vowel(word: str) -> bool:
    return word[:1].lower() in "aeiouhéèêàâîôû" and word.lower() not in _ASPIRATED


def _determiner(np_: NP, gender: str, pre_adjective: bool) -> list[str]:
    if np_.det == "num":
        return [NUMBER_WORDS["fr"][np_.count - 2] if np_.count <= 10 else format_number(np_.count, "fr")]
    if np_.plural:
        return [{"the": "les", "this": "ces", "bare": "de" if pre_adjective else "des"}[np_.det]]
    feminine = gender == "f"
    return [{"the": "la" if feminine else "le", "a": "une" if feminine else "un",
             "this": "cette" if feminine else "ce"}[np_.det]]


def np_tokens(np_: NP) -> list[str]:
    """Determiner + (pre-noun adjective) + noun + (adjective) + (de N ans) + (qui ...)."""
    if np_.kind == "pron":
        return [PRONOUNS[np_.pron][0]]
    if np_.kind == "name":
        return [np_.name.text]
    if np_.kind == "city":
        return [np_.city.fr]
    gender = np_.noun.fr_gender
    noun = np_.noun.fr[1] if np_.plural else np_.noun.fr[0]
    adj = np_.adj
    before = adj is not None and adj.fr_before
    tokens = _determiner(np_, gender, before)
    if before:
        tokens.append(adjective_form(adj, gender, np_.plural, _vowel(noun)))
    tokens.append(noun)
    if adj is not None and not before:
        tokens.append(adjective_form(adj, gender, np_.plural))
    if np_.age:
        tokens += ["de", str(np_.age), "ans"]
    if np_.rel is not None:
        tokens += ["qui", *_predicate(np_.rel)]
    return tokens


def _pp(prep: str, obj: NP) -> list[str]:
    if obj.kind == "city":
        return ["à", obj.city.fr]
    return [{"in": "dans", "with": "avec", "for": "pour", "to": "à"}[prep], *np_tokens(obj)]


def time_tokens(clause: Clause) -> list[str]:
    if clause.time == "weekday":
        return [WEEKDAYS["fr"][clause.time_arg]]
    if clause.time == "year":
        return ["en", str(clause.time_arg)]
    return list(TIMES[clause.time])


def _verb_group(clause: Clause) -> list[str]:
    """Finite verb, then (adverb), then participle or infinitive, agreeing with the subject."""
    p = _person(clause.subj)
    adverb = [{"often": "souvent", "also": "aussi"}[clause.adverb]] if clause.adverb else []
    if clause.kind == "copula":
        if clause.modal == "will":
            return [FORMS["aller"][p], "être"]
        return [FORMS["était" if clause.tense == "past" else "être"][p]]
    if clause.kind == "cost":
        return [FORMS["coûtait" if clause.tense == "past" else "coûter"][p]]
    verb = clause.verb
    if clause.modal:
        lemma = {("will", "pres"): "aller", ("can", "pres"): "pouvoir", ("can", "past"): "pouvait",
                 ("want", "pres"): "vouloir", ("want", "past"): "voulait"}[clause.modal, clause.tense]
        return [FORMS[lemma][p], *adverb, verb.fr_inf]
    if clause.tense == "pres":
        return [verb.fr_pres[p], *adverb]
    if verb.fr_aux == "e":
        participle = verb.fr_part + ("e" if _gender(clause.subj) == "f" else "") + \
            ("s" if clause.subj.person in ("1p", "2f", "3p") else "")
        return [FORMS["être"][p], *adverb, participle]
    return [FORMS["avoir"][p], *adverb, verb.fr_part]


def _price(price: tuple[float, bool, bool]) -> list[str]:
    value, millions, more = price
    tokens = (["plus", "de"] if more else []) + [format_number(value, "fr")]
    if millions:
        return tokens + ["millions" if value >= 2 else "million", "de", "euros"]
    return tokens + ["euros"]


def _predicate(clause: Clause) -> list[str]:
    """Everything after the subject: verb group, object, price, predicate, prepositional phrase, time."""
    tokens = _verb_group(clause)
    if clause.obj is not None:
        tokens += np_tokens(clause.obj)
    if clause.kind == "cost":
        tokens += _price(clause.price)
    if clause.adj is not None:
        tokens += (["très"] if clause.very else []) + \
            [adjective_form(clause.adj, _gender(clause.subj), clause.subj.person in ("1p", "2f", "3p"))]
    if clause.pp is not None:
        tokens += _pp(*clause.pp)
    if clause.time and not clause.fronted:
        tokens += time_tokens(clause)
    return tokens


def clause_tokens(clause: Clause) -> list[str]:
    """Subject-verb-object order; a fronted adverbial is followed by a comma."""
    tokens = time_tokens(clause) + [","] if clause.time and clause.fronted else []
    tokens += np_tokens(clause.subj) + _predicate(clause)
    if clause.comp is not None:
        tokens += ["que", *clause_tokens(clause.comp)]
    if clause.because is not None:
        tokens += ["parce", "que", *clause_tokens(clause.because)]
    return tokens


def elide(tokens: list[str]) -> list[str]:
    """le/la/je/de/que before a vowel -> l'/j'/d'/qu'; ce -> cet; then à le -> au, à les -> aux, de les -> des."""
    out = list(tokens)
    for i in range(len(out) - 1):
        if _vowel(out[i + 1]):
            if out[i] in ELISION:
                out[i] = ELISION[out[i]]
            elif out[i] == "ce":
                out[i] = "cet"
    merged: list[str] = []
    for token in out:
        if merged and (merged[-1], token) in CONTRACTIONS:
            merged[-1] = CONTRACTIONS[(merged[-1], token)]
        else:
            merged.append(token)
    return merged


def french_sentence(clause: Clause) -> str:
    """The French translation of a sampled sentence, as raw text."""
    said = [FORMS["avoir"][_person(clause.subj)], "dit"]
    if clause.quote == "colon":
        tokens = [*np_tokens(clause.subj), *said, ":", OPEN_QUOTE, *clause_tokens(clause.comp), ".", CLOSE_QUOTE]
    elif clause.quote:
        tokens = [OPEN_QUOTE, *clause_tokens(clause.comp), CLOSE_QUOTE, ",", *said, *np_tokens(clause.subj), "."]
    elif clause.question:
        tokens = ["est-ce", "que", *clause_tokens(clause), "?"]
    else:
        tokens = clause_tokens(clause) + ["."]
    return finish(elide(tokens))
