"""``python -m aiayn.demo.mirror --out-dir DIR --seed S [--train-pairs N] [--eval-pairs N] [--trees N]``
writes into DIR every archive of the config's ``sources`` that a task reads (as WMT's: names, members,
gzipped ``*.gz``, ``.sgm`` test sets), ``sources.lock`` and a WSJ-layout treebank. Same seed, same
bytes. Held-out English is in no training corpus and no other held-out set; a file two tasks share is
the same for both.

Deviation from paper: generated data stand in for WMT14 and the Penn Treebank so that the pipeline runs
offline in minutes; ``data.mirror: null`` and ``tasks.wsj.treebank: <LDC99T42 path>`` restore the paper's.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import logging
import random
import tarfile
from collections import namedtuple
from pathlib import Path

from aiayn.cli import add_log
from aiayn.config import load
from aiayn.demo.grammar import LANGUAGES, English, sample_clause
from aiayn.demo.lexicon import lexicon
from aiayn.io import atomic_output, setup_logging, write_json
from aiayn.options.sources import archive_name

log = logging.getLogger(__name__)
MTIME = 1388534400  # 2014-01-01T00:00:00Z, the WMT14 release year
MIN_WORDS, MAX_WORDS, DOC_SEGMENTS, FILE_TREES = 5, 20, 20, 25
Sentence = namedtuple("Sentence", "clause tree en")  # the abstract clause, its English tree and text


def rng_for(seed: int, purpose: str) -> random.Random:
    """A generator of its own for each purpose ("treebank", ...): the order of generation does not matter."""
    return random.Random(f"{seed}:{purpose}")


def sample(rng: random.Random, n: int, exclude=(), unique: bool = False, what: str = "") -> list[Sentence]:
    """``n`` sentences of 5-20 words (punctuation included), not in ``exclude`` (nor repeated, if ``unique``)."""
    english, lex, out, seen, redrawn = English(), lexicon(), [], set(exclude), 0
    while len(out) < n:
        clause = sample_clause(rng, lex, top=True)
        tree = english.tree(clause)
        text = english.text([tree])
        if not MIN_WORDS <= sum(p.label != "-NONE-" for p in tree.preterminals()) <= MAX_WORDS or text in seen:
            redrawn += 1
            continue
        seen |= {text} if unique else set()
        out.append(Sentence(clause, tree, text))
    log.info(
        "%s: %d sentences, %d redrawn (outside %d-%d words, excluded or repeated)",
        what,
        n,
        redrawn,
        MIN_WORDS,
        MAX_WORDS,
    )
    return out


def archive_bytes(file_name: str, members: dict[str, bytes]) -> bytes:
    """A GNU tar of ``members`` in path order, fixed mtime, no owner; gzipped for ``.tgz``, ``.tar.gz``."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name in sorted(members):
            data = gzip.compress(members[name], mtime=0) if name.endswith(".gz") else members[name]
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), MTIME, 0o644
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(buffer.getvalue(), mtime=0) if file_name.endswith((".tgz", ".tar.gz")) else buffer.getvalue()


def sgm_lines(lines: list[str], setid: str, langs: tuple[str, str], is_ref: bool) -> list[str]:
    """A WMT test set: ``<doc>`` blocks of 20 ``<seg>`` (text unescaped, as WMT's), ``origlang`` alternating."""
    out = [
        f'<refset trglang="{langs[1]}" setid="{setid}" srclang="any">'
        if is_ref
        else f'<srcset setid="{setid}" srclang="any">'
    ]
    for start in range(0, len(lines), DOC_SEGMENTS):
        doc, sysid = start // DOC_SEGMENTS, 'sysid="ref" ' if is_ref else ""
        out.append(f'<doc {sysid}docid="{1001 + doc}-demo.{langs[doc % 2]}" genre="news" origlang="{langs[doc % 2]}">')
        out += [f'<seg id="{i}">{line}</seg>' for i, line in enumerate(lines[start : start + DOC_SEGMENTS], 1)]
        out.append("</doc>")
    return out + ["</refset>" if is_ref else "</srcset>"]


def write_treebank(out_dir: Path, seed: int, trees: int) -> None:
    """``out_dir/treebank/parsed/mrg/wsj/NN/wsj_NNMM.mrg``, sections 00-24: 10% of the trees each in 22 (dev)
    and 23 (test), the rest spread evenly; 25 trees a file, each ``( (S ...) )`` on a line."""
    sentences, start = sample(rng_for(seed, "treebank"), trees, unique=True, what="treebank"), 0
    wsj = out_dir / "treebank/parsed/mrg/wsj"
    held, rest = trees // 10, trees - 2 * (trees // 10)
    sizes = [rest // 23 + (i < rest % 23) for i in range(23)]
    for section, size in enumerate(sizes[:22] + [held, held] + sizes[22:]):
        for number, first in enumerate(range(start, start + size, FILE_TREES)):
            text = "".join(f"( {s.tree} )\n" for s in sentences[first : min(first + FILE_TREES, start + size)])
            with atomic_output(wsj / f"{section:02d}/wsj_{section:02d}{number:02d}.mrg") as f:
                f.write(text)
        start += size


def corpus_sentences(config: dict, tasks: dict, seed: int, train_pairs: int, eval_pairs: int) -> dict:
    """(corpus, task) -> sentences; training corpora first, so that held-out sets can exclude them."""
    jobs = [
        (corpus, name, train_pairs // len(task["train"]) + (i < train_pairs % len(task["train"])), False)
        for name, task in sorted(tasks.items())
        for i, corpus in enumerate(task["train"])
    ]
    jobs += [
        (corpus, name, eval_pairs, True)
        for name, task in sorted(tasks.items())
        for corpus in (task["dev"], task["test"])
    ]
    out, by_path, seen = {}, {}, set()
    for corpus, name, size, held_out in jobs:
        path = config["sources"][corpus]["members"][name]["en"]
        if path not in by_path:
            by_path[path] = sample(rng_for(seed, f"{corpus}:{path}"), size, seen if held_out else (), held_out, path)
            seen |= {s.en for s in by_path[path]}
        out[corpus, name] = by_path[path]
    return out


def used_members(tasks: dict) -> set[tuple[str, str]]:
    """(corpus, task) of every source member a task reads."""
    return {(corpus, name) for name, task in tasks.items() for corpus in (*task["train"], task["dev"], task["test"])}


def check(config: dict, tasks: dict, sizes: dict[str, tuple[int, int]]) -> None:
    """Bad sizes, languages or sources fail, all named, before anything is generated."""
    bad = [f"{flag} must be at least {least}, got {value}" for flag, (value, least) in sizes.items() if value < least]
    bad += [
        f"tasks.{name}: the demo has en -> de and en -> fr, not {task['src']} -> {task['tgt']}"
        for name, task in tasks.items()
        if task["src"] != "en" or task["tgt"] not in ("de", "fr")
    ]
    used = {corpus for corpus, _ in used_members(tasks)}
    for corpus, source in config["sources"].items():
        if corpus in used and not archive_name(source["url"]).endswith((".tgz", ".tar.gz", ".tar")):
            bad.append(f"sources.{corpus}.url: not a .tgz, .tar.gz or .tar archive")
    if bad:
        raise ValueError("; ".join(bad))


def build(config: dict, out_dir: Path, seed: int, train_pairs: int, eval_pairs: int, trees: int) -> dict:
    """Write every archive a task reads (a source no task names is left out), the treebank and
    ``sources.lock``; return the lock entries."""
    tasks = {name: task for name, task in config["tasks"].items() if task["kind"] == "translation"}
    check(config, tasks, {"--train-pairs": (train_pairs, 1), "--eval-pairs": (eval_pairs, 1), "--trees": (trees, 25)})
    sentences, archives, lock = corpus_sentences(config, tasks, seed, train_pairs, eval_pairs), {}, {}
    used = used_members(tasks)
    for corpus, source in config["sources"].items():
        for name, paths in source["members"].items():
            if (corpus, name) not in used:
                continue
            for lang, path in paths.items():
                language = LANGUAGES[lang]()
                lines = [s.en if lang == "en" else language.sentence(s.clause) for s in sentences[corpus, name]]
                if path.endswith(".sgm"):
                    lines = sgm_lines(lines, corpus, ("en", tasks[name]["tgt"]), lang != "en")
                archives.setdefault(archive_name(source["url"]), {})[path] = "".join(f"{x}\n" for x in lines).encode()
    for file_name, members in sorted(archives.items()):
        data = archive_bytes(file_name, members)
        with atomic_output(out_dir / file_name, "wb") as handle:
            handle.write(data)
        lock[file_name] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
        log.info("%s: %d members, %d bytes", file_name, len(members), len(data))
    write_treebank(out_dir, seed, trees)
    write_json(out_dir / "sources.lock", lock)
    return lock


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m aiayn.demo.mirror",
        description="Write the demo mirror: WMT14-layout archives, a WSJ-layout treebank.",
    )
    parser.add_argument("--out-dir", required=True, type=Path)
    parser.add_argument("--seed", required=True, type=int)
    parser.add_argument("--train-pairs", type=int, default=20000, help="training pairs per translation task")
    parser.add_argument("--eval-pairs", type=int, default=500, help="pairs in each dev and test set")
    parser.add_argument("--trees", type=int, default=2000, help="trees over WSJ sections 00-24")
    parser.add_argument("--config", type=Path, default=Path("config.yaml"), help="for the sources and tasks")
    add_log(parser)
    args = parser.parse_args(argv)
    setup_logging(args.log)
    build(load(args.config), args.out_dir, args.seed, args.train_pairs, args.eval_pairs, args.trees)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
