import gzip
import hashlib
import json
import re
import tarfile
from pathlib import Path

import pytest

from aiayn.config import load
from aiayn.data import demo_corpus
from aiayn.data.demo.corpus import rng_for, sample
from aiayn.data.demo.english import english_text, sentence_tree
from aiayn.data.demo.french import french_sentence
from aiayn.data.demo.german import german_sentence
from aiayn.data.demo.grammar import NP, Clause
from aiayn.data.demo.lexicon import lexicon
from aiayn.data.demo.surface import format_number
from aiayn.data.demo.treebank import format_tree, leaf, node, section_sizes

ROOT = Path(__file__).resolve().parents[1]
TRAIN, EVAL, TREES = 90, 30, 60
POS_TAGS = {"DT", "NN", "NNS", "NNP", "VB", "VBZ", "VBP", "VBD", "MD", "IN", "TO", "JJ", "JJR", "RB", "RP",
            "CD", "PRP", "WP", "WDT", ",", ".", "``", "''", ":", "-NONE-"}


@pytest.fixture(scope="module")
def config():
    return load(ROOT / "config.yaml")


@pytest.fixture(scope="module")
def built(tmp_path_factory, config):
    out = tmp_path_factory.mktemp("demo")
    demo_corpus.build(config, out, seed=7, train_pairs=TRAIN, eval_pairs=EVAL, trees=TREES)
    return out


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _members(path: Path) -> dict[str, bytes]:
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def _text(members: dict[str, bytes], name: str) -> list[str]:
    data = members[name]
    if name.endswith(".gz"):
        data = gzip.decompress(data)
    return data.decode("utf-8").splitlines()


def test_same_seed_same_bytes_other_seed_other_bytes(built, config, tmp_path):
    assert demo_corpus.main(["--out-dir", str(tmp_path / "a"), "--seed", "7", "--train-pairs", str(TRAIN),
                             "--eval-pairs", str(EVAL), "--trees", str(TREES),
                             "--config", str(ROOT / "config.yaml")]) == 0
    assert _files(tmp_path / "a") == _files(built)
    demo_corpus.build(config, tmp_path / "b", seed=8, train_pairs=TRAIN, eval_pairs=EVAL, trees=TREES)
    assert json.loads((tmp_path / "b" / "sources.lock").read_text()) != json.loads((built / "sources.lock").read_text())


def test_every_configured_member_is_present_and_aligned(built, config):
    for corpus, source in config["sources"].items():
        archive = built / demo_corpus.archive_name(source["url"])
        members = _members(archive)
        for task, paths in source["members"].items():
            sides = {lang: _text(members, path) for lang, path in paths.items()}
            if corpus in (config["tasks"][task]["dev"], config["tasks"][task]["test"]):
                continue
            expected = TRAIN // len(config["tasks"][task]["train"])
            assert {len(lines) for lines in sides.values()} == {expected}, (corpus, task)
    giga = _members(built / "training-giga-fren.tar")
    assert set(giga) == {"giga-fren.release2.fixed.en.gz", "giga-fren.release2.fixed.fr.gz"}
    assert gzip.decompress(giga["giga-fren.release2.fixed.en.gz"])[:1].isupper()


def test_bad_sizes_and_sources_fail_before_any_work(config, tmp_path):
    with pytest.raises(ValueError, match="--eval-pairs"):
        demo_corpus.build(config, tmp_path, seed=1, train_pairs=10, eval_pairs=0, trees=TREES)
    bad = {**config, "sources": {**config["sources"], "un": {**config["sources"]["un"], "url": "http://x/un.zip"}}}
    with pytest.raises(ValueError, match="sources.un.url"):
        demo_corpus.build(bad, tmp_path, seed=1, train_pairs=10, eval_pairs=5, trees=TREES)
    assert not any(tmp_path.iterdir())


def test_lock_matches_files(built, config):
    lock = json.loads((built / "sources.lock").read_text())
    assert set(lock) == {demo_corpus.archive_name(s["url"]) for s in config["sources"].values()}
    for name, entry in lock.items():
        data = (built / name).read_bytes()
        assert entry == {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}


def _sacrebleu_segments(lines: list[str]) -> list[str]:
    """What sacreBLEU's SGML reader keeps: the text of every ``<seg ...>`` line, whitespace collapsed."""
    return [re.sub(r"\s+", " ", re.sub(r"<seg.*?>(.*)</seg>.*?", r"\1", line)).strip()
            for line in lines if line.startswith("<seg ")]


def test_sgm_test_sets_parse_like_sacrebleu(built, config):
    members = _members(built / "test-full.tgz")
    for task in ("en-de", "en-fr"):
        paths = config["sources"]["newstest2014"]["members"][task]
        src_lines, ref_lines = _text(members, paths["en"]), _text(members, paths[task[3:]])
        src, ref = _sacrebleu_segments(src_lines), _sacrebleu_segments(ref_lines)
        assert len(src) == len(ref) == EVAL
        assert src_lines[0] == '<srcset setid="newstest2014" srclang="any">' and src_lines[-1] == "</srcset>"
        assert ref_lines[0] == f'<refset trglang="{task[3:]}" setid="newstest2014" srclang="any">'
        docs = [re.search(r'docid="([^"]+)"', line).group(1) for line in src_lines if line.startswith("<doc")]
        assert docs == [re.search(r'docid="([^"]+)"', line).group(1) for line in ref_lines if line.startswith("<doc")]
        assert all('sysid="ref"' in line for line in ref_lines if line.startswith("<doc"))
        assert all(s and r and s != r for s, r in zip(src, ref))


def test_held_out_english_is_disjoint_from_training(built, config):
    train, held = set(), {}
    for corpus, source in config["sources"].items():
        members = _members(built / demo_corpus.archive_name(source["url"]))
        for task, paths in source["members"].items():
            lines = _text(members, paths["en"])
            if paths["en"].endswith(".sgm"):
                lines = _sacrebleu_segments(lines)
            if corpus in ("newstest2013", "newstest2014"):
                held[paths["en"]] = set(lines)
            else:
                train |= set(lines)
    assert len(held) == 3 and all(len(s) == EVAL for s in held.values())
    assert not any(s & train for s in held.values())
    dev, test_de, test_fr = held.values()
    assert not (dev & test_de) and not (dev & test_fr) and not (test_de & test_fr)


# --- Translations: exact expectations on hand-built sentences ---------------------------------

LEX = lexicon()


def _noun(en, **kw):
    return NP("noun", noun=next(n for n in LEX.nouns if n.en[0] == en), **kw)


def _verb(en):
    return next(v for v in LEX.verbs if v.en[0] == en)


def _name(text):
    return NP("name", name=next(n for n in LEX.names if n.text == text))


def _all(clause):
    return english_text(sentence_tree(clause)), german_sentence(clause), french_sentence(clause)


def test_subordinate_clause_is_verb_final_in_german():
    comp = Clause("trans", _noun("man"), verb=_verb("buy"), tense="past", obj=_noun("car", det="a"))
    said = Clause("say", _name("Anna"), verb=_verb("say"), tense="pres", comp=comp, that=False)
    assert _all(said) == ("Anna says the man bought a car.",
                          "Anna sagt, dass der Mann ein Auto gekauft hat.",
                          "Anna dit que l'homme a acheté une voiture.")


def test_fronted_adverbial_puts_the_verb_second_and_separable_prefix_last():
    clause = Clause("trans", _noun("woman"), verb=_verb("turn"), tense="pres", obj=_noun("light"),
                    time="yesterday", fronted=True)
    assert _all(clause) == ("Yesterday, the woman turns on the light.",
                            "Gestern schaltet die Frau das Licht ein.",
                            "Hier, la femme allume la lumière.")


def test_agreement_adjective_position_and_hyphenated_compounds():
    subj = _noun("grandmother", plural=True, adj=LEX.adjective("happy"))
    clause = Clause("trans", subj, verb=_verb("write"), tense="pres", obj=_noun("e-mail", det="a"),
                    pp=("for", _noun("boy")))
    assert _all(clause) == ("The happy grandmothers write an e-mail for the boy.",
                            "Die glücklichen Großmütter schreiben eine E-Mail für den Jungen.",
                            "Les grands-mères heureuses écrivent un e-mail pour le garçon.")
    arrived = Clause("intrans", _name("Maria"), verb=_verb("arrive"), tense="past")
    assert _all(arrived)[1:] == ("Maria ist angekommen.", "Maria est arrivée.")


def test_numbers_use_the_decimal_comma_and_local_thousands():
    assert [format_number(v, lang) for v in (3.5, 1200, 12000, 250) for lang in ("en", "de", "fr")] == [
        "3.5", "3,5", "3,5", "1,200", "1.200", "1 200", "12,000", "12.000", "12 000", "250", "250", "250"]
    cost = Clause("cost", _noun("hotel"), tense="pres", price=(3.5, True, False))
    assert _all(cost) == ("The hotel costs 3.5 million euros.", "Das Hotel kostet 3,5 Millionen Euro.",
                          "L'hôtel coûte 3,5 millions d'euros.")


def test_quote_question_and_relative_clause():
    inner = Clause("copula", _noun("dog"), tense="pres", adj=LEX.adjective("small"))
    quote = Clause("say", _name("Paul"), verb=_verb("say"), tense="past", comp=inner, quote="front")
    assert _all(quote) == ('"The dog is small," Paul said.', '"Der Hund ist klein", sagte Paul.',
                           '"Le chien est petit", a dit Paul.')
    colon = Clause("say", NP("pron", pron="they"), verb=_verb("say"), tense="past", comp=inner, quote="colon")
    assert _all(colon) == ('They said: "The dog is small."', 'Sie sagten: "Der Hund ist klein."',
                           'Ils ont dit: "Le chien est petit."')
    man = _noun("man")
    man.rel = Clause("intrans", man, verb=_verb("sleep"), tense="pres")
    question = Clause("motion", man, verb=_verb("go"), modal="can", question=True, pp=("to", _noun("market")))
    assert _all(question) == ("Can the man who sleeps go to the market?",
                              "Kann der Mann, der schläft, zum Markt gehen?",
                              "Est-ce que l'homme qui dort peut aller au marché?")


def test_generated_german_shows_the_phenomena(built, config):
    members = _members(built / "training-parallel-europarl-v7.tgz")
    german = " ".join(_text(members, config["sources"]["europarl_v7"]["members"]["en-de"]["de"]))
    assert re.search(r", (dass|weil) [^,.]* (hat|ist|wird|kann|sind|haben|war)\.", german)
    assert re.search(r"\b\w+-\w+", german)
    assert re.search(r"\b(der|die|das|den|dem) [A-ZÄÖÜ]", german)


def _clauses(clause):
    yield clause
    for np_ in (clause.subj, clause.obj, clause.pp[1] if clause.pp else None):
        if np_ is not None and np_.rel is not None and np_.rel is not clause:
            yield from _clauses(np_.rel)
    for sub in (clause.comp, clause.because):
        if sub is not None:
            yield from _clauses(sub)


def test_no_tense_that_the_english_cannot_show():
    """'they read' and 'bags cost' are present and past at once: the sampler keeps them present."""
    checked = 0
    for sentence in sample(rng_for(3, "tenses"), 3000):
        for clause in _clauses(sentence.clause):
            forms = clause.verb.en if clause.verb else ("cost", "costs", "cost") if clause.kind == "cost" else None
            if forms and forms[0] == forms[2] and not clause.modal and clause.subj.person != "3s":
                assert clause.tense == "pres", sentence.en
                checked += 1
    assert checked > 20


# --- Treebank ----------------------------------------------------------------------------------

def test_tree_layout_is_the_wsj_one():
    tree = node("S", node("NP-SBJ", leaf("NNP", "Anna")),
                node("VP", leaf("VBZ", "sleeps"), node("PP-LOC", leaf("IN", "in"), node("NP", leaf("NNP", "Paris")))),
                leaf(".", "."))
    assert format_tree(tree) == (
        "( (S \n"
        "    (NP-SBJ (NNP Anna) )\n"
        "    (VP (VBZ sleeps) \n"
        "      (PP-LOC (IN in) \n"
        "        (NP (NNP Paris) )))\n"
        "    (. .) ))")


def test_section_sizes_hold_out_ten_percent_each():
    sizes = section_sizes(1000)
    assert len(sizes) == 25 and sum(sizes) == 1000 and sizes[22] == sizes[23] == 100
    with pytest.raises(ValueError, match="--trees"):
        section_sizes(10)


def _read_trees(text: str) -> list[str]:
    """Split a .mrg file into trees by bracket depth, checking balance on the way."""
    trees, depth, current = [], 0, ""
    for char in text:
        if char == "(" and depth == 0:
            current = ""
        depth += (char == "(") - (char == ")")
        assert depth >= 0
        current += char
        if depth == 0 and char == ")":
            trees.append(current)
    assert depth == 0
    return trees


def test_treebank_files_hold_balanced_annotated_trees(built):
    files = sorted((built / "treebank" / "parsed" / "mrg" / "wsj").glob("*/wsj_*.mrg"))
    sections = {f.parent.name for f in files}
    assert sections == {f"{s:02d}" for s in range(25)}
    assert all(f.name[4:6] == f.parent.name for f in files)
    trees = [t for f in files for t in _read_trees(f.read_text(encoding="utf-8"))]
    assert len(trees) == TREES
    text = "\n".join(trees)
    assert all(t.startswith("( (") and t.endswith(")") for t in trees)
    assert "\n\n( (" in files[0].read_text(encoding="utf-8") or len(_read_trees(files[0].read_text())) == 1
    assert re.search(r"\(-NONE- \*T\*-\d\)", text) and re.search(r"\(-NONE- \*-\d\)", text)
    assert re.search(r"NP-SBJ-\d", text) and "NP-SBJ" in text and "-TMP" in text and "(: :)" in text
    preterminals = re.findall(r"\(([^\s()]+) [^\s()]+\)", text)
    assert set(preterminals) <= POS_TAGS
    words = [len([w for tag, w in re.findall(r"\(([^\s()]+) ([^\s()]+)\)", t) if tag != "-NONE-"]) for t in trees]
    assert min(words) >= 5 and max(words) <= 20
