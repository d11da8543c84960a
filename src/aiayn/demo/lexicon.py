"""The demo's words, English with German and French: entries end at ``;`` or a line end, fields at ``|``.
Classes: h person, a animal, t thing, e device, r text, p place, c city. A verb's frame: ``subject classes >
object`` (classes, none, ``@`` "to" a place, ``!`` "says that"); perfect with h haben, s sein, a avoir, e être."""

from __future__ import annotations

import functools
from collections import namedtuple

# en singular [plural] | de gender singular plural | fr gender singular [plural] | class (plurals only where irregular)
NOUNS = """
man men | m Mann Männer | m homme | h ;              woman women | f Frau Frauen | f femme | h
child children | n Kind Kinder | m enfant | h ;     girl | n Mädchen Mädchen | f fille | h
sister | f Schwester Schwestern | f sœur | h ;       doctor | m Arzt Ärzte | m médecin | h
grandmother | f Großmutter Großmütter | f grand-mère grands-mères | h
dog | m Hund Hunde | m chien | a ;                   cat | f Katze Katzen | m chat | a
car | n Auto Autos | f voiture | t ;                 house | n Haus Häuser | f maison | t
key | m Schlüssel Schlüssel | f clé | t ;            bag | f Tasche Taschen | m sac | t
T-shirt | n T-Shirt T-Shirts | m tee-shirt | t ;     light | n Licht Lichter | f lumière | e
computer | m Computer Computer | m ordinateur | e ;  phone | n Telefon Telefone | m téléphone | e
book | n Buch Bücher | m livre | r ;                 letter | m Brief Briefe | f lettre | r
e-mail | f E-Mail E-Mails | m e-mail | r ;           newspaper | f Zeitung Zeitungen | m journal journaux | r
school | f Schule Schulen | f école | p ;            hotel | n Hotel Hotels | m hôtel | p
station | m Bahnhof Bahnhöfe | f gare | p ;         market | m Markt Märkte | m marché | p
"""

# en base past | de infinitive 3sg participle aux | fr infinitive 3sg 3pl participle aux | frame
VERBS = """
buy bought | kaufen kauft gekauft h | acheter achète achètent acheté a | h>te
find found | finden findet gefunden h | trouver trouve trouvent trouvé a | ha>ter
see saw | sehen sieht gesehen h | voir voit voient vu a | ha>hatp
like liked | mögen mag gemocht h | aimer aime aiment aimé a | ha>hatrp
meet met | treffen trifft getroffen h | rencontrer rencontre rencontrent rencontré a | h>h
visit visited | besuchen besucht besucht h | visiter visite visitent visité a | h>p
read read | lesen liest gelesen h | lire lit lisent lu a | h>r
write wrote | schreiben schreibt geschrieben h | écrire écrit écrivent écrit a | h>r
sleep slept | schlafen schläft geschlafen h | dormir dort dorment dormi a | ha>
work worked | arbeiten arbeitet gearbeitet h | travailler travaille travaillent travaillé a | h>
go went | gehen geht gegangen s | aller va vont allé e | h>@
come came | kommen kommt gekommen s | venir vient viennent venu e | ha>@
say said | sagen sagt gesagt h | dire dit disent dit a | h>!
"""

# en | de | fr masculine feminine [masculine before a vowel] | b: French puts it before the noun | classes
ADJECTIVES = """
big | groß | grand grande | b | hatep ;             small | klein | petit petite | b | hatep
new | neu | nouveau nouvelle nouvel | b | terp ;    old | alt | vieux vieille vieil | b | hatep
good | gut | bon bonne | b | hterp ;                beautiful | schön | beau belle bel | b | atep
red | rot | rouge rouge | a | te ;                   black | schwarz | noir noire | a | ate
happy | glücklich | heureux heureuse | a | ha ;     well-known | bekannt | célèbre célèbre | a | hrp
"""

# en | de | fr | gender | class: names and cities
PROPER = """
Anna | Anna | Anna | f | h ;  Sophie | Sophie | Sophie | f | h ;  Anne-Marie | Anne-Marie | Anne-Marie | f | h
Thomas | Thomas | Thomas | m | h ;  Jean-Pierre | Jean-Pierre | Jean-Pierre | m | h ;  Berlin | Berlin | Berlin | m | c
London | London | Londres | m | c ;  Munich | München | Munich | m | c ;  Vienna | Wien | Vienne | m | c
"""

# en (a tree) | de | fr | tenses it fits: p present, d past, f future ({} is a year)
TIMES = """
(NP-TMP (NN yesterday)) | gestern | hier | d ;           (NP-TMP (NN today)) | heute | aujourd'hui | pdf
(NP-TMP (NN tomorrow)) | morgen | demain | f ; (NP-TMP (JJ last) (NN week)) | letzte Woche | la semaine dernière | d
(NP-TMP (JJ next) (NN year)) | nächstes Jahr | l'année prochaine | f
(NP-TMP (DT this) (NN afternoon)) | heute Nachmittag | cet après-midi | pdf
(PP-TMP (IN on) (NP (NNP Monday))) | am Montag | lundi | pdf ; (PP-TMP (IN in) (NP (CD {}))) | im Jahr {} | en {} | d
"""

# en, de, fr: (singular, plural); proper: a name or city, without determiner or adjective
Noun = namedtuple("Noun", "en de_gender de fr_gender fr cls proper")
# en: (base, past); de and fr: (infinitive, 3rd singular, 3rd plural, participle, auxiliary)
Verb = namedtuple("Verb", "en de fr subj obj")
# fr: (masculine, feminine, masculine before a vowel); fr_before: French puts it before the noun
Adjective = namedtuple("Adjective", "en de fr fr_before classes")
Lexicon = namedtuple("Lexicon", "nouns verbs adjectives times")  # times: {"en", "de", "fr": text, "tenses"}


def french_plural(word: str) -> str:
    """-s; -x after -eau; nothing after -s or -x."""
    return word if word.endswith(("s", "x")) else word + ("x" if word.endswith("eau") else "s")


def _rows(table: str, fields: int) -> list[list[list[str]]]:
    entries = [entry for entry in table.replace("\n", ";").split(";") if entry.strip()]
    rows = [[cell.split() for cell in entry.split("|")] for entry in entries]
    for row in rows:
        if len(row) != fields:
            raise ValueError(f"lexicon entry {row}: {fields} fields expected")
    return rows


@functools.lru_cache(maxsize=1)
def lexicon() -> Lexicon:
    """Parse the tables; a malformed entry raises naming it."""
    nouns = [
        Noun((en[0], (*en, en[0] + "s")[1]), dg, (ds, dp), fg, (fs, (*fp, french_plural(fs))[0]), cls, False)
        for en, (dg, ds, dp), (fg, fs, *fp), (cls,) in _rows(NOUNS, 4)
    ]
    nouns += [
        Noun((*en, *en), "m" if cls == "c" else g, (*de, *de), g, (*fr, *fr), cls, True)
        for en, de, fr, (g,), (cls,) in _rows(PROPER, 5)
    ]
    verbs = [
        Verb(tuple(en), (de[0], de[1], de[0], de[2], de[3]), tuple(fr), *frame[0].split(">"))  # sie kaufen
        for en, de, fr, frame in _rows(VERBS, 4)
    ]
    adjectives = [
        Adjective(en, de, (*fr, fr[0])[:3], pos == "b", cls)
        for (en,), (de,), fr, (pos,), (cls,) in _rows(ADJECTIVES, 5)
    ]
    times = [dict(en=" ".join(en), de=" ".join(de), fr=" ".join(fr), tenses=t) for en, de, fr, (t,) in _rows(TIMES, 4)]
    return Lexicon(tuple(nouns), tuple(verbs), tuple(adjectives), tuple(times))
