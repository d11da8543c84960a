import collections
import gzip
import hashlib
import json
import re
import tarfile
import time
from pathlib import Path

import pytest
from paths import ROOT

from aiayn.config import load
from aiayn.data.extract import extract
from aiayn.demo import mirror
from aiayn.demo.grammar import NP, Clause, English, French, German
from aiayn.demo.lexicon import lexicon
from aiayn.options.sources import archive_name
from aiayn.parsing.clean import clean_tree
from aiayn.parsing.treebank import read_split

TRAIN, EVAL, TREES = 90, 30, 60
POS_TAGS = {
    "DT",
    "NN",
    "NNS",
    "NNP",
    "VB",
    "VBZ",
    "VBP",
    "VBD",
    "MD",
    "IN",
    "TO",
    "JJ",
    "CD",
    ",",
    ".",
    "``",
    "''",
    ":",
    "-NONE-",
}


@pytest.fixture(scope="module")
def config():
    return load(ROOT / "config.yaml")


@pytest.fixture(scope="module")
def built(tmp_path_factory, config):
    out = tmp_path_factory.mktemp("demo")
    mirror.build(config, out, seed=7, train_pairs=TRAIN, eval_pairs=EVAL, trees=TREES)
    return out


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _extracted(built: Path, config: dict, tmp_path: Path) -> dict[tuple[str, str, str], list[str]]:
    """(corpus, task, lang) -> lines of every member a task reads, back through the workflow's own extract stage."""
    out = {}
    used = mirror.used_members({n: t for n, t in config["tasks"].items() if t["kind"] == "translation"})
    for corpus, source in config["sources"].items():
        for task, paths in source["members"].items():
            for lang, member in paths.items() if (corpus, task) in used else ():
                target = tmp_path / f"{corpus}.{task}.{lang}"
                extract(str(built / archive_name(source["url"])), member, str(target))
                out[corpus, task, lang] = target.read_text(encoding="utf-8").splitlines()
    return out


def test_same_seed_same_bytes_other_seed_other_bytes(built, config, tmp_path, monkeypatch):
    monkeypatch.setattr(time, "time", lambda: 2e9)  # no clock may leak into tar or gzip headers
    assert (
        mirror.main(
            [
                "--out-dir",
                str(tmp_path / "a"),
                "--seed",
                "7",
                "--train-pairs",
                str(TRAIN),
                "--eval-pairs",
                str(EVAL),
                "--trees",
                str(TREES),
                "--config",
                str(ROOT / "config.yaml"),
            ]
        )
        == 0
    )
    assert _files(tmp_path / "a") == _files(built)
    mirror.build(config, tmp_path / "b", seed=8, train_pairs=TRAIN, eval_pairs=EVAL, trees=TREES)
    assert json.loads((tmp_path / "b" / "sources.lock").read_text()) != json.loads((built / "sources.lock").read_text())


def test_archives_have_the_wmt_names_members_and_line_counts(built, config, tmp_path):
    lock = json.loads((built / "sources.lock").read_text())
    assert set(lock) == {
        "training-parallel-europarl-v7.tgz",
        "training-parallel-commoncrawl.tgz",
        "dev.tgz",
        "training-parallel-nc-v9.tgz",
        "training-parallel-un.tgz",
        "training-giga-fren.tar",
        "test-full.tgz",
    }
    for name, entry in lock.items():
        data = (built / name).read_bytes()
        assert entry == {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
        assert (data[:2] == b"\x1f\x8b") == name.endswith(".tgz"), name
    lines = _extracted(built, config, tmp_path)
    for (corpus, task, lang), text in lines.items():
        held_out = corpus in (config["tasks"][task]["dev"], config["tasks"][task]["test"])
        assert len(text) == (EVAL if held_out else TRAIN // len(config["tasks"][task]["train"])), (corpus, task, lang)
    with tarfile.open(built / "training-giga-fren.tar", "r:") as tar:  # a plain tar holding gzip members
        assert sorted(tar.getnames()) == ["giga-fren.release2.fixed.en.gz", "giga-fren.release2.fixed.fr.gz"]
        french = gzip.decompress(tar.extractfile("giga-fren.release2.fixed.fr.gz").read()).decode()
        assert french.count("\n") == TRAIN // 5


def test_sgm_test_sets_are_wmt_documents(built, config):
    with tarfile.open(built / "test-full.tgz") as tar:
        for task in ("en-de", "en-fr"):
            paths = config["sources"]["newstest2014"]["members"][task]
            src, ref = (tar.extractfile(paths[lang]).read().decode().splitlines() for lang in ("en", task[3:]))
            assert src[0] == '<srcset setid="newstest2014" srclang="any">' and src[-1] == "</srcset>"
            assert ref[0] == f'<refset trglang="{task[3:]}" setid="newstest2014" srclang="any">'
            assert ref[-1] == "</refset>"
            docs = [line for line in src if line.startswith("<doc ")]
            assert len(docs) == 2 and 'docid="1001-demo.en"' in docs[0] and 'origlang="de"' not in docs[0]
            assert [d.replace('sysid="ref" ', "") for d in ref if d.startswith("<doc ")] == docs
            segs = [line for line in src if line.startswith("<seg ")]
            assert len(segs) == EVAL and segs[0].startswith('<seg id="1">') and segs[20].startswith('<seg id="1">')


def test_held_out_english_is_in_no_training_corpus_and_no_other_held_out_set(built, config, tmp_path):
    lines, train, held = _extracted(built, config, tmp_path), set(), {}
    for (corpus, task, lang), text in lines.items():
        if lang == "en" and corpus in ("newstest2013", "newstest2014"):
            held.setdefault(config["sources"][corpus]["members"][task]["en"], set()).update(text)
        elif lang == "en":
            train.update(text)
    dev, test_de, test_fr = (held[k] for k in sorted(held))
    assert all(len(s) == EVAL for s in (dev, test_de, test_fr)) and not (dev | test_de | test_fr) & train
    assert not dev & test_de and not dev & test_fr and not test_de & test_fr
    assert lines["newstest2013", "en-de", "en"] == lines["newstest2013", "en-fr", "en"]


def test_sample_excludes_and_dedupes():
    first = mirror.sample(mirror.rng_for(1, "x"), 5)
    assert [s.en for s in mirror.sample(mirror.rng_for(1, "x"), 4, exclude={first[0].en})] == [s.en for s in first[1:]]
    assert len({s.en for s in mirror.sample(mirror.rng_for(1, "x"), 300, unique=True)}) == 300


def test_held_out_sets_are_drawn_excluding_all_training_english(config, monkeypatch):
    calls, sample = [], mirror.sample

    def recording(rng, n, exclude=(), unique=False, what=""):
        calls.append((what, set(exclude), unique))
        return sample(rng, n, exclude, unique, what)

    monkeypatch.setattr(mirror, "sample", recording)
    tasks = {name: t for name, t in config["tasks"].items() if t["kind"] == "translation"}
    out = mirror.corpus_sentences(config, tasks, 1, 30, 5)
    train = {s.en for (corpus, name), group in out.items() if corpus in tasks[name]["train"] for s in group}
    held = [(exclude, unique) for what, exclude, unique in calls if "newstest" in what]
    assert len(held) == 3 and all(unique and train <= exclude for exclude, unique in held)


def test_only_the_archives_a_task_reads_are_written(config, tmp_path):
    """config.yaml defines News Commentary v11, which no task reads until tasks.en-de.train names it."""
    assert "news_commentary_v11" in config["sources"]
    lock = mirror.build(config, tmp_path / "v9", seed=1, train_pairs=10, eval_pairs=5, trees=TREES)
    assert "training-parallel-nc-v11.tgz" not in lock and "training-parallel-nc-v9.tgz" in lock
    en_de = {**config["tasks"]["en-de"], "train": ["europarl_v7", "commoncrawl", "news_commentary_v11"]}
    lock = mirror.build(
        {**config, "tasks": {**config["tasks"], "en-de": en_de}},
        tmp_path / "v11",
        seed=1,
        train_pairs=10,
        eval_pairs=5,
        trees=TREES,
    )
    assert "training-parallel-nc-v11.tgz" in lock and "training-parallel-nc-v9.tgz" in lock  # EN-FR still reads v9
    with tarfile.open(tmp_path / "v11" / "training-parallel-nc-v11.tgz") as archive:
        assert sorted(archive.getnames()) == [
            "training-parallel-nc-v11/news-commentary-v11.de-en.de",
            "training-parallel-nc-v11/news-commentary-v11.de-en.en",
        ]


def test_bad_sizes_and_sources_fail_before_any_work(config, tmp_path):
    with pytest.raises(ValueError, match="--eval-pairs must be at least 1"):
        mirror.build(config, tmp_path, seed=1, train_pairs=10, eval_pairs=0, trees=TREES)
    bad = {**config, "sources": {**config["sources"], "un": {**config["sources"]["un"], "url": "http://x/un.zip"}}}
    with pytest.raises(ValueError, match="sources.un.url"):
        mirror.build(bad, tmp_path, seed=1, train_pairs=10, eval_pairs=5, trees=TREES)
    bad = {**config, "tasks": {**config["tasks"], "en-de": {**config["tasks"]["en-de"], "tgt": "cs"}}}
    with pytest.raises(ValueError, match="tasks.en-de"):
        mirror.build(bad, tmp_path, seed=1, train_pairs=10, eval_pairs=5, trees=TREES)
    assert not any(tmp_path.iterdir())


def test_treebank_reads_with_aiayn_parsing_in_every_wsj_section(built, config):
    treebank = built / "treebank"
    assert sorted(p.name for p in (treebank / "parsed/mrg/wsj").iterdir()) == [f"{s:02d}" for s in range(25)]
    splits = {
        split: [tree for tree, _ in read_split(treebank, split, tuple(sections))]
        for split, sections in config["tasks"]["wsj"]["splits"].items()
    }
    assert len(splits["dev"]) == len(splits["test"]) == TREES // 10 and len(splits["train"]) > TREES // 2
    trees = [tree for trees in splits.values() for tree in trees]
    text = "\n".join(str(tree) for tree in trees)
    assert {tag for tree in trees for tag in tree.tags()} <= POS_TAGS
    assert "(NP-SBJ " in text and "-TMP " in text and "(PP-LOC " in text
    assert all(clean_tree(tree).children[0].label == "S" for tree in trees)
    assert all(5 <= sum(tag != "-NONE-" for tag in tree.tags()) <= 20 for tree in trees)


# --- The languages: exact expectations on hand-built clauses ---------------------------------

LEX = lexicon()


def _np(en, **kw):
    return NP(next(n for n in LEX.nouns if n.en[0] == en), **kw)


def _verb(en):
    return next(v for v in LEX.verbs if v.en[0] == en)


def _adj(en):
    return next(a for a in LEX.adjectives if a.en == en)


def _time(en):
    return next({k: t[k].format(2008) for k in ("en", "de", "fr")} for t in LEX.times if en in t["en"])


def _all(clause):
    return English().sentence(clause), German().sentence(clause), French().sentence(clause)


def test_fronted_time_puts_the_german_verb_second_and_the_participle_last():
    clause = Clause(
        _np("woman", det="the"), _verb("buy"), "past", obj=_np("car", det="a"), time=_time("yesterday"), front=True
    )
    assert _all(clause) == (
        "Yesterday, the woman bought a car.",
        "Gestern hat die Frau ein Auto gekauft.",
        "Hier, la femme a acheté une voiture.",
    )
    assert str(English().tree(clause)) == (
        "(S (NP-TMP (NN Yesterday)) (, ,) (NP-SBJ (DT the) (NN woman)) (VP (VBD bought) (NP (DT a) (NN car))) (. .))"
    )


def test_subordinate_clauses_are_verb_final_in_german():
    inner = Clause(_np("man", det="the"), _verb("buy"), "will", "sub", obj=_np("bag", det="the", adj=_adj("black")))
    said = Clause(_np("Anna"), _verb("say"), comp=("0", inner))
    assert _all(said) == (
        "Anna says the man will buy the black bag.",
        "Anna sagt, dass der Mann die schwarze Tasche kaufen wird.",
        "Anna dit que l'homme va acheter le sac noir.",
    )
    assert str(English().tree(said)) == (
        "(S (NP-SBJ (NNP Anna)) (VP (VBZ says) (SBAR (-NONE- 0) (S (NP-SBJ (DT the) (NN man)) (VP (MD will) "
        "(VP (VB buy) (NP (DT the) (JJ black) (NN bag))))))) (. .))"
    )
    that = Clause(
        _np("Thomas"),
        _verb("say"),
        comp=("that", Clause(_np("girl", det="the"), _verb("read"), role="sub", obj=_np("book", plural=True))),
    )
    assert _all(that) == (
        "Thomas says that the girl reads books.",
        "Thomas sagt, dass das Mädchen Bücher liest.",
        "Thomas dit que la fille lit des livres.",
    )


def test_agreement_case_contractions_and_elision():
    went = Clause(
        _np("sister", det="the", plural=True, adj=_adj("happy")),
        _verb("go"),
        "past",
        pp=("to", _np("market", det="the")),
    )
    assert _all(went) == (
        "The happy sisters went to the market.",
        "Die glücklichen Schwestern sind zum Markt gegangen.",
        "Les sœurs heureuses sont allées au marché.",
    )
    works = Clause(
        _np("doctor", det="a", adj=_adj("old")), _verb("work"), "can", pp=("with", _np("child", plural=True))
    )
    assert _all(works) == (
        "An old doctor can work with children.",
        "Ein alter Arzt kann mit Kindern arbeiten.",
        "Un vieux médecin peut travailler avec des enfants.",
    )
    found = Clause(
        _np("grandmother", det="the"),
        _verb("find"),
        "pres",
        obj=_np("computer", det="a", adj=_adj("new")),
        pp=("in", _np("hotel", det="the")),
        time=_time("(CD {})"),
        front=True,
    )
    assert _all(found) == (
        "In 2008, the grandmother finds a new computer in the hotel.",
        "Im Jahr 2008 findet die Großmutter einen neuen Computer im Hotel.",
        "En 2008, la grand-mère trouve un nouvel ordinateur dans l'hôtel.",
    )


def test_quotes_cities_and_elided_subjects():
    sleeps = Clause(_np("man", det="the", adj=_adj("old")), _verb("sleep"), "past", pp=("in", _np("hotel", det="the")))
    assert _all(sleeps) == (
        "The old man slept in the hotel.",
        "Der alte Mann hat im Hotel geschlafen.",
        "Le vieil homme a dormi dans l'hôtel.",
    )
    sleeps.subj = _np("man", det="the")
    assert _all(sleeps)[2] == "L'homme a dormi dans l'hôtel."
    quote = Clause(
        _np("Anne-Marie"),
        _verb("say"),
        "past",
        comp=("quote", Clause(_np("dog", det="the"), _verb("come"), "will", pp=("to", _np("Vienna")))),
    )
    assert _all(quote) == (
        "Anne-Marie said: “The dog will come to Vienna.”",
        "Anne-Marie hat gesagt: „Der Hund wird nach Wien kommen.“",
        "Anne-Marie a dit : « Le chien va venir à Vienne. »",
    )
    assert str(English().tree(quote)).endswith(
        "(: :) (`` ``) (S (NP-SBJ (DT The) (NN dog)) (VP (MD will) "
        "(VP (VB come) (PP-DIR (TO to) (NP (NNP Vienna))))))) (. .) ('' ''))"
    )


# --- Learnability proxies -------------------------------------------------------------------


@pytest.fixture(scope="module")
def sample():
    sentences = mirror.sample(mirror.rng_for(3, "proxies"), 3000)
    return sentences, [German().sentence(s.clause) for s in sentences], [French().sentence(s.clause) for s in sentences]


def test_translations_are_a_function_of_the_english(sample):
    sentences, german, french = sample
    for target in (german, french):
        seen = {}
        for sentence, text in zip(sentences, target):
            assert seen.setdefault(sentence.en, text) == text, sentence.en


def test_the_tense_always_shows_in_the_english(sample):
    """'men read' is present and past at once: the sampler keeps it present."""
    clauses = [s.clause for s in sample[0]] + [s.clause.comp[1] for s in sample[0] if s.clause.comp]
    ambiguous = [c for c in clauses if c.verb.en[0] == c.verb.en[1] and c.subj.plural]
    assert len(ambiguous) > 20 and all(c.tense != "past" for c in ambiguous)


def test_a_small_vocabulary_seen_often_with_real_unicode(sample):
    sentences, german, french = sample
    for text in (" ".join(s.en for s in sentences), " ".join(german), " ".join(french)):
        counts = collections.Counter(text.split())
        assert len(counts) < 1500 and sum(n for n in counts.values() if n >= 5) > 0.9 * sum(counts.values())
    german, french = " ".join(german), " ".join(french)
    assert all(mark in german for mark in "„“äöüß") and all(mark in french for mark in "«»éèàœ")
    assert re.search(r"\bim Jahr (19|20)\d\d\b", german) and re.search(r"\ben (19|20)\d\d\b", french)
    assert {"E-Mail", "T-Shirt", "Jean-Pierre"} <= set(re.findall(r"[\w]+-[\w]+", german))
    assert re.search(r"grands?-mères?", french) and "“" in " ".join(s.en for s in sentences)
    assert any("(-NONE- 0)" in str(s.tree) for s in sentences)
