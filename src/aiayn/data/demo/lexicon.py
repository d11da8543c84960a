"""The demo corpus's lexicon: English words with hand-written German and French equivalents.

Every entry carries what the realizers need for agreement: German gender and plural, French gender,
plural and elision, verb forms by person, the auxiliary of the perfect tense, separable prefixes,
adjective position. The tables are text so that a linguist can read and extend them; :func:`lexicon`
parses them once per process into frozen dataclasses.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

# en_sg en_pl | de_gender de_sg de_pl | fr_gender fr_sg fr_pl | class
# classes: h human, a animal, t thing, r readable thing, e device, p place
NOUNS = """
man men | m Mann Männer | m homme hommes | h
woman women | f Frau Frauen | f femme femmes | h
child children | n Kind Kinder | m enfant enfants | h
teacher teachers | m Lehrer Lehrer | m professeur professeurs | h
doctor doctors | m Arzt Ärzte | m médecin médecins | h
student students | m Student Studenten | m étudiant étudiants | h
friend friends | m Freund Freunde | m ami amis | h
neighbour neighbours | m Nachbar Nachbarn | m voisin voisins | h
mayor mayors | m Bürgermeister Bürgermeister | m maire maires | h
minister ministers | m Minister Minister | m ministre ministres | h
spokesman spokesmen | m Sprecher Sprecher | m porte-parole porte-parole | h
grandmother grandmothers | f Großmutter Großmütter | f grand-mère grands-mères | h
girl girls | n Mädchen Mädchen | f fille filles | h
boy boys | m Junge Jungen | m garçon garçons | h
journalist journalists | m Journalist Journalisten | m journaliste journalistes | h
farmer farmers | m Bauer Bauern | m agriculteur agriculteurs | h
player players | m Spieler Spieler | m joueur joueurs | h
customer customers | m Kunde Kunden | m client clients | h
company companies | f Firma Firmen | f entreprise entreprises | h
dog dogs | m Hund Hunde | m chien chiens | a
cat cats | f Katze Katzen | m chat chats | a
horse horses | n Pferd Pferde | m cheval chevaux | a
bird birds | m Vogel Vögel | m oiseau oiseaux | a
cow cows | f Kuh Kühe | f vache vaches | a
car cars | n Auto Autos | f voiture voitures | t
house houses | n Haus Häuser | f maison maisons | t
bicycle bicycles | n Fahrrad Fahrräder | m vélo vélos | t
ticket tickets | f Karte Karten | m billet billets | t
T-shirt T-shirts | n T-Shirt T-Shirts | m tee-shirt tee-shirts | t
table tables | m Tisch Tische | f table tables | t
key keys | m Schlüssel Schlüssel | f clé clés | t
apple apples | m Apfel Äpfel | f pomme pommes | t
bag bags | f Tasche Taschen | m sac sacs | t
picture pictures | n Bild Bilder | m tableau tableaux | t
book books | n Buch Bücher | m livre livres | r
letter letters | m Brief Briefe | f lettre lettres | r
e-mail e-mails | f E-Mail E-Mails | m e-mail e-mails | r
newspaper newspapers | f Zeitung Zeitungen | m journal journaux | r
report reports | m Bericht Berichte | m rapport rapports | r
plan plans | m Plan Pläne | m projet projets | r
computer computers | m Computer Computer | m ordinateur ordinateurs | e
phone phones | n Telefon Telefone | m téléphone téléphones | e
light lights | n Licht Lichter | f lumière lumières | e
radio radios | n Radio Radios | f radio radios | e
city cities | f Stadt Städte | f ville villes | p
school schools | f Schule Schulen | f école écoles | p
hospital hospitals | n Krankenhaus Krankenhäuser | m hôpital hôpitaux | p
station stations | m Bahnhof Bahnhöfe | f gare gares | p
office offices | n Büro Büros | m bureau bureaux | p
garden gardens | m Garten Gärten | m jardin jardins | p
village villages | n Dorf Dörfer | m village villages | p
market markets | m Markt Märkte | m marché marchés | p
restaurant restaurants | n Restaurant Restaurants | m restaurant restaurants | p
hotel hotels | n Hotel Hotels | m hôtel hôtels | p
"""

# en_base en_3sg en_past en_participle | de_inf de_ich de_er de_plural de_participle aux prefix
# | fr_inf fr_je fr_il fr_nous fr_vous fr_ils fr_participle aux | frame
# aux: h haben / s sein, a avoir / e être; prefix "-" when none (German separable verbs);
# frame: objects' classes for transitive verbs, "i" intransitive, "m" motion, "s" says-that.
VERBS = """
buy buys bought bought | kaufen kaufe kauft kaufen gekauft h - | acheter achète achète achetons achetez achètent acheté a | trep
sell sells sold sold | verkaufen verkaufe verkauft verkaufen verkauft h - | vendre vends vend vendons vendez vendent vendu a | trep
read reads read read | lesen lese liest lesen gelesen h - | lire lis lit lisons lisez lisent lu a | r
write writes wrote written | schreiben schreibe schreibt schreiben geschrieben h - | écrire écris écrit écrivons écrivez écrivent écrit a | r
find finds found found | finden finde findet finden gefunden h - | trouver trouve trouve trouvons trouvez trouvent trouvé a | tre
see sees saw seen | sehen sehe sieht sehen gesehen h - | voir vois voit voyons voyez voient vu a | hatp
like likes liked liked | mögen mag mag mögen gemocht h - | aimer aime aime aimons aimez aiment aimé a | hatp
meet meets met met | treffen treffe trifft treffen getroffen h - | rencontrer rencontre rencontre rencontrons rencontrez rencontrent rencontré a | h
visit visits visited visited | besuchen besuche besucht besuchen besucht h - | visiter visite visite visitons visitez visitent visité a | p
open opens opened opened | öffnen öffne öffnet öffnen geöffnet h - | ouvrir ouvre ouvre ouvrons ouvrez ouvrent ouvert a | r
call calls called called | rufen rufe ruft rufen gerufen h an | appeler appelle appelle appelons appelez appellent appelé a | h
pick picks picked picked | holen hole holt holen geholt h ab | récupérer récupère récupère récupérons récupérez récupèrent récupéré a | hte
turn turns turned turned | schalten schalte schaltet schalten geschaltet h ein | allumer allume allume allumons allumez allument allumé a | e
switch switches switched switched | schalten schalte schaltet schalten geschaltet h aus | éteindre éteins éteint éteignons éteignez éteignent éteint a | e
sleep sleeps slept slept | schlafen schlafe schläft schlafen geschlafen h - | dormir dors dort dormons dormez dorment dormi a | i
work works worked worked | arbeiten arbeite arbeitet arbeiten gearbeitet h - | travailler travaille travaille travaillons travaillez travaillent travaillé a | i
wait waits waited waited | warten warte wartet warten gewartet h - | attendre attends attend attendons attendez attendent attendu a | i
arrive arrives arrived arrived | kommen komme kommt kommen gekommen s an | arriver arrive arrive arrivons arrivez arrivent arrivé e | i
go goes went gone | gehen gehe geht gehen gegangen s - | aller vais va allons allez vont allé e | m
come comes came come | kommen komme kommt kommen gekommen s - | venir viens vient venons venez viennent venu e | m
say says said said | sagen sage sagt sagen gesagt h - | dire dis dit disons dites disent dit a | s
explain explains explained explained | erklären erkläre erklärt erklären erklärt h - | expliquer explique explique expliquons expliquez expliquent expliqué a | s
believe believes believed believed | glauben glaube glaubt glauben geglaubt h - | croire crois croit croyons croyez croient cru a | s
"""

# English particles of phrasal verbs (PTB tag RP, phrase PRT): "picks up", "turns on", "switches off".
PARTICLES = {"pick": "up", "turn": "on", "switch": "off"}

# en | de_attributive_stem de_predicative | fr_ms fr_fs fr_ms_before_vowel | position (b before, a after)
# | noun classes it describes
ADJECTIVES = """
big | groß groß | grand grande grand | b | hatrep
small | klein klein | petit petite petit | b | hatrep
new | neu neu | nouveau nouvelle nouvel | b | htrep
old | alt alt | vieux vieille vieil | b | hatrep
young | jung jung | jeune jeune jeune | b | ha
good | gut gut | bon bonne bon | b | hatrep
beautiful | schön schön | beau belle bel | b | atrep
red | rot rot | rouge rouge rouge | a | tre
green | grün grün | vert verte vert | a | tre
black | schwarz schwarz | noir noire noir | a | atre
white | weiß weiß | blanc blanche blanc | a | atre
expensive | teur teuer | cher chère cher | a | trep
happy | glücklich glücklich | heureux heureuse heureux | a | ha
tired | müd müde | fatigué fatiguée fatigué | a | ha
well-known | bekannt bekannt | célèbre célèbre célèbre | a | htrp
important | wichtig wichtig | important importante important | a | htrp
long-term | langfristig langfristig | à_long_terme à_long_terme à_long_terme | a | r
modern | modern modern | moderne moderne moderne | a | trep
quiet | ruhig ruhig | calme calme calme | a | hap
interesting | interessant interessant | intéressant intéressante intéressant | a | htrp
"""

# name | gender (m/f) ; cities: en | de | fr
NAMES = """
Anna f
Maria f
Sophie f
Laura f
Anne-Marie f
Thomas m
Peter m
Paul m
Martin m
Jean-Pierre m
"""

CITIES = """
Berlin | Berlin | Berlin
Paris | Paris | Paris
London | London | Londres
Munich | München | Munich
Vienna | Wien | Vienne
Cologne | Köln | Cologne
Brussels | Brüssel | Bruxelles
Geneva | Genf | Genève
"""

NUMBER_WORDS = {
    "en": ["two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"],
    "de": ["zwei", "drei", "vier", "fünf", "sechs", "sieben", "acht", "neun", "zehn"],
    "fr": ["deux", "trois", "quatre", "cinq", "six", "sept", "huit", "neuf", "dix"],
}

WEEKDAYS = {
    "en": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"],
    "de": ["Montag", "Dienstag", "Mittwoch", "Donnerstag", "Freitag"],
    "fr": ["lundi", "mardi", "mercredi", "jeudi", "vendredi"],
}


@dataclass(frozen=True)
class Noun:
    en: tuple[str, str]
    de_gender: str
    de: tuple[str, str]
    fr_gender: str
    fr: tuple[str, str]
    cls: str


@dataclass(frozen=True)
class Verb:
    en: tuple[str, str, str, str]          # base, 3rd singular, past, participle
    de_inf: str
    de_pres: tuple[str, str, str]          # ich, er/sie/es, plural (wir, sie, Sie)
    de_part: str
    de_aux: str                            # "h" haben, "s" sein
    de_prefix: str                         # separable prefix or ""
    fr_inf: str
    fr_pres: tuple[str, str, str, str, str]  # je, il, nous, vous, ils
    fr_part: str
    fr_aux: str                            # "a" avoir, "e" être
    frame: str


@dataclass(frozen=True)
class Adjective:
    en: str
    de_stem: str
    de_pred: str
    fr: tuple[str, str, str]               # masculine, feminine, masculine before a vowel
    fr_before: bool
    classes: str                           # noun classes it can describe


@dataclass(frozen=True)
class Name:
    text: str
    gender: str


@dataclass(frozen=True)
class City:
    en: str
    de: str
    fr: str


@dataclass(frozen=True)
class Lexicon:
    nouns: tuple[Noun, ...]
    verbs: tuple[Verb, ...]
    adjectives: tuple[Adjective, ...]
    names: tuple[Name, ...]
    cities: tuple[City, ...]

    def nouns_of(self, classes: str) -> list[Noun]:
        return [n for n in self.nouns if n.cls in classes]

    def verbs_of(self, frame: str) -> list[Verb]:
        """Verbs whose frame is ``frame`` ("i", "m", "s"); "t" means every transitive verb."""
        if frame == "t":
            return [v for v in self.verbs if v.frame not in ("i", "m", "s")]
        return [v for v in self.verbs if v.frame == frame]

    def adjectives_for(self, cls: str) -> list[Adjective]:
        """Adjectives that can describe a noun of class ``cls``."""
        return [a for a in self.adjectives if cls in a.classes]

    def adjective(self, en: str) -> Adjective:
        return next(a for a in self.adjectives if a.en == en)


def _rows(table: str, fields: int) -> list[list[list[str]]]:
    rows = []
    for number, line in enumerate(table.strip().splitlines(), 1):
        cells = [cell.split() for cell in line.split("|")]
        if len(cells) != fields:
            raise ValueError(f"lexicon table line {number}: expected {fields} fields, got {len(cells)}: {line!r}")
        rows.append(cells)
    return rows


def _noun(cells: list[list[str]]) -> Noun:
    en, (dg, dsg, dpl), (fg, fsg, fpl), (cls,) = cells
    return Noun(tuple(en), dg, (dsg, dpl), fg, (fsg, fpl), cls)


def _verb(cells: list[list[str]]) -> Verb:
    en, de, fr, (frame,) = cells
    prefix = "" if de[6] == "-" else de[6]
    return Verb(tuple(en), de[0], tuple(de[1:4]), de[4], de[5], prefix,
                fr[0], tuple(fr[1:6]), fr[6], fr[7], frame)


def _adjective(cells: list[list[str]]) -> Adjective:
    (en,), (stem, pred), fr, (pos,), (classes,) = cells
    return Adjective(en, stem, pred, tuple(f.replace("_", " ") for f in fr), pos == "b", classes)


@functools.lru_cache(maxsize=1)
def lexicon() -> Lexicon:
    """Parse the tables above; a malformed row raises naming its line."""
    names = tuple(Name(*line.split()) for line in NAMES.strip().splitlines())
    cities = tuple(City(*(c.strip() for c in line.split("|"))) for line in CITIES.strip().splitlines())
    return Lexicon(
        nouns=tuple(_noun(r) for r in _rows(NOUNS, 4)),
        verbs=tuple(_verb(r) for r in _rows(VERBS, 4)),
        adjectives=tuple(_adjective(r) for r in _rows(ADJECTIVES, 5)),
        names=names,
        cities=cities,
    )
