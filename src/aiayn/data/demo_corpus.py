"""The embedded demo corpus: generated WMT14-layout archives and a WSJ-layout treebank, offline.

    python -m aiayn.data.demo_corpus --out-dir DIR --seed S [--train-pairs N] [--eval-pairs N]
        [--trees N] [--config config.yaml] [--log F]

writes into DIR every archive named under the config's ``sources`` (file name = URL basename, the
members at the paths the config names), ``DIR/sources.lock`` (sha256 and size of each archive) and
``DIR/treebank/parsed/mrg/wsj/NN/wsj_NNNN.mrg`` for sections 00-24. The workflow's download stage
reads DIR as a mirror; nothing downstream knows the data is generated. Same seed, same bytes.

Each translation task gets ``--train-pairs`` pairs spread evenly over its training corpora; every dev
and test set gets ``--eval-pairs`` pairs whose English sentences occur in no training corpus and in no
other held-out set. A held-out English file shared by two tasks (``dev/newstest2013.en``) holds the
same sentences for both, as in WMT.

Deviation from paper: generated sentences (a few hundred words, 5-20 words per sentence, a dozen
constructions) stand in for WMT14 and the Penn Treebank so that the whole pipeline runs offline on a
laptop in minutes. The paper's data come back with ``data.mirror: null`` (download WMT14) and
``tasks.wsj.treebank: <your LDC99T42 path>``.
"""

from __future__ import annotations

import argparse
import logging
import math
from pathlib import Path, PurePosixPath
from urllib.parse import urlparse

from aiayn.config import load
from aiayn.data.demo.archives import sgm_bytes, text_bytes, write_archive, write_lock
from aiayn.data.demo.corpus import REALIZERS, Sentence, rng_for, sample, translate
from aiayn.data.demo.treebank import format_mrg, mrg_path, section_sizes
from aiayn.io import atomic_output, setup_logging

log = logging.getLogger(__name__)
ARCHIVE_TYPES = (".tgz", ".tar.gz", ".tar")


def archive_name(url: str) -> str:
    """The archive's file name: the basename of the URL's path."""
    name = PurePosixPath(urlparse(url).path).name
    if not name:
        raise ValueError(f"source URL {url!r} has no file name")
    return name


def translation_tasks(config: dict) -> dict[str, dict]:
    """The config's translation tasks; a target language without a demo realizer is an error."""
    tasks = {name: t for name, t in config["tasks"].items() if t["kind"] == "translation"}
    for name, task in tasks.items():
        if task["src"] != "en" or task["tgt"] not in REALIZERS:
            raise ValueError(f"tasks.{name}: the demo generates en -> {sorted(REALIZERS)} only, "
                             f"not {task['src']} -> {task['tgt']}")
    return tasks


def _split_evenly(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def training_sentences(config: dict, seed: int, train_pairs: int) -> dict[tuple[str, str], list[Sentence]]:
    """(corpus, task) -> sentences: ``train_pairs`` per task, spread evenly over its training corpora."""
    out = {}
    for name, task in translation_tasks(config).items():
        for corpus, n in zip(task["train"], _split_evenly(train_pairs, len(task["train"]))):
            out[corpus, name] = sample(rng_for(seed, f"{name}:train:{corpus}"), n, what=f"{name} {corpus}")
    return out


def held_out_sentences(config: dict, seed: int, eval_pairs: int, exclude: set[str]) -> dict[tuple[str, str], list[Sentence]]:
    """(corpus, task) -> dev/test sentences; tasks that share the English file share the sentences."""
    by_file: dict[str, list[Sentence]] = {}
    out = {}
    seen = set(exclude)
    tasks = translation_tasks(config)
    for name in sorted(tasks):
        for corpus in (tasks[name]["dev"], tasks[name]["test"]):
            english_file = config["sources"][corpus]["members"][name]["en"]
            if english_file not in by_file:
                by_file[english_file] = sample(rng_for(seed, f"{corpus}:{english_file}"), eval_pairs,
                                               exclude=seen, unique=True, what=english_file)
                seen.update(s.en for s in by_file[english_file])
            out[corpus, name] = by_file[english_file]
    return out


def member_bytes(path: str, corpus: str, task: dict, lang: str, sentences: list[Sentence]) -> bytes:
    """A member's content: plain lines, or a WMT ``.sgm`` file (source or reference side)."""
    lines = [s.en for s in sentences] if lang == "en" else translate(sentences, lang)
    if path.endswith(".sgm"):
        return sgm_bytes(lines, setid=corpus, src_lang=task["src"], trg_lang=task["tgt"],
                         is_ref=lang != task["src"], origlangs=(task["src"], task["tgt"]))
    return text_bytes(lines)


def archive_members(config: dict, sentences: dict[tuple[str, str], list[Sentence]]) -> dict[str, dict[str, bytes]]:
    """archive file name -> {member path: bytes} for every source in the config."""
    tasks = translation_tasks(config)
    archives: dict[str, dict[str, bytes]] = {}
    for corpus, source in config["sources"].items():
        members = archives.setdefault(archive_name(source["url"]), {})
        for name, paths in source["members"].items():
            if (corpus, name) not in sentences:
                raise ValueError(f"sources.{corpus}.members.{name}: task {name!r} does not use corpus {corpus!r}")
            for lang, path in paths.items():
                data = member_bytes(path, corpus, tasks[name], lang, sentences[corpus, name])
                if members.get(path, data) != data:
                    raise ValueError(f"sources.{corpus}: member {path!r} would get two different contents")
                members[path] = data
    return archives


def write_treebank(out_dir: Path, seed: int, trees: int) -> int:
    """WSJ-layout ``.mrg`` files under ``out_dir/treebank``: a few files per section 00-24. Returns files written."""
    sizes = section_sizes(trees)
    sentences = sample(rng_for(seed, "treebank"), trees, unique=True, what="treebank")
    files, start = 0, 0
    for section, size in enumerate(sizes):
        n_files = min(99, max(1, math.ceil(size / 25)))
        for number, count in enumerate(_split_evenly(size, n_files), 1):
            chunk = sentences[start:start + count]
            start += count
            with atomic_output(out_dir / "treebank" / mrg_path(section, number)) as handle:
                handle.write(format_mrg([s.tree for s in chunk]))
            files += 1
    return files


def build(config: dict, out_dir: Path, seed: int, train_pairs: int, eval_pairs: int, trees: int) -> dict:
    """Write every archive, the lock and the treebank; return the lock entries."""
    for flag, value, least in (("--train-pairs", train_pairs, 1), ("--eval-pairs", eval_pairs, 1), ("--trees", trees, 25)):
        if value < least:
            raise ValueError(f"{flag} must be at least {least}, got {value}")
    translation_tasks(config)
    for corpus, source in config["sources"].items():
        if not archive_name(source["url"]).endswith(ARCHIVE_TYPES):
            raise ValueError(f"sources.{corpus}.url: {source['url']!r} is not a {' / '.join(ARCHIVE_TYPES)} archive")
    sentences = training_sentences(config, seed, train_pairs)
    train_english = {s.en for group in sentences.values() for s in group}
    sentences.update(held_out_sentences(config, seed, eval_pairs, train_english))
    lock = {}
    for file_name, members in archive_members(config, sentences).items():
        lock[file_name] = write_archive(out_dir, file_name, members)
        log.info("%s: %d members, %d bytes", file_name, len(members), lock[file_name]["size"])
    files = write_treebank(out_dir, seed, trees)
    log.info("treebank: %d trees in %d files", trees, files)
    write_lock(out_dir, lock)
    return lock


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate the demo corpus: WMT14-layout archives and a WSJ-layout treebank.")
    parser.add_argument("--out-dir", required=True, type=Path)
    parser.add_argument("--seed", required=True, type=int)
    parser.add_argument("--train-pairs", type=int, default=20000, help="training pairs per translation task")
    parser.add_argument("--eval-pairs", type=int, default=500, help="pairs in each dev and test set")
    parser.add_argument("--trees", type=int, default=2000, help="trees over WSJ sections 00-24")
    parser.add_argument("--config", type=Path, default=Path("config.yaml"), help="for the sources and tasks")
    parser.add_argument("--log")
    args = parser.parse_args(argv)
    setup_logging(args.log)
    build(load(args.config), args.out_dir, args.seed, args.train_pairs, args.eval_pairs, args.trees)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
