"""Real WMT text through every data stage's CLI: download -> extract -> tokenize -> clean -> bpe -> binarize.

Archives are packed from ``../shared/data/wmt`` with the real inner paths and served from 127.0.0.1;
the downloads use the statmt URLs of ``config.yaml`` through ``data.mirror`` in their settings file.
"""

import hashlib
import http.server
import io
import json
import subprocess
import sys
import tarfile
import threading
from functools import partial
from pathlib import Path

import pytest
from paths import ROOT
from paths import SHARED_WMT as SHARED

from aiayn import config as aiayn_config
from aiayn.data.shards import ShardedCorpus

TRAIN_LINES = 1500
DEV_LINES = 400


def _pack(path: Path, members: dict[str, bytes]) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def _head(path: Path, lines: int) -> bytes:
    return b"".join(path.read_bytes().splitlines(keepends=True)[:lines])


def _build_mirror(mirror: Path) -> Path:
    sample, sgm, plain = SHARED / "train_sample", SHARED / "sgm_newstest2014-full", SHARED / "plain"
    archives = {
        "training-parallel-nc-v9.tgz": {
            f"training/news-commentary-v9.fr-en.{lang}": _head(sample / f"moses-nc-5k.fr-en.{lang}", TRAIN_LINES)
            for lang in ("en", "fr")
        },
        "dev.tgz": {
            f"dev/newstest2013.{lang}": _head(plain / f"newstest2013.{lang}", DEV_LINES) for lang in ("en", "fr")
        },
        "test-full.tgz": {
            f"test-full/{name}": (sgm / name).read_bytes()
            for name in ("newstest2014-fren-src.en.sgm", "newstest2014-fren-ref.fr.sgm")
        },
    }
    lock = {}
    for name, members in archives.items():
        _pack(mirror / name, members)
        data = (mirror / name).read_bytes()
        lock[name] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    (mirror / "sources.lock").write_text(json.dumps(lock))
    return mirror / "sources.lock"


@pytest.fixture
def mirror_server(tmp_path):
    if not SHARED.is_dir():
        pytest.skip(f"shared WMT data not found at {SHARED} (the folder beside the checkout)")
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    lock = _build_mirror(mirror)
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(mirror))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", lock
    server.shutdown()
    server.server_close()


def _settings(directory: Path, **sections) -> dict[str, Path]:
    """One settings file per stage, as the workflow writes them."""
    paths = {}
    for name, values in sections.items():
        paths[name] = directory / f"{name}.json"
        paths[name].write_text(json.dumps(values))
    return paths


def _run(module: str, *args) -> None:
    result = subprocess.run(
        [sys.executable, "-m", f"aiayn.data.{module}", *map(str, args)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, f"{module} {args}:\n{result.stderr[-3000:]}"


@pytest.mark.slow
def test_wmt_en_fr_slice_through_every_stage(mirror_server, tmp_path):
    base, lock = mirror_server
    config = aiayn_config.load(ROOT / "config.yaml")  # the definitions' defaults filled in
    corpora = {"train": "news_commentary_v9", "dev": "newstest2013", "test": "newstest2014"}
    d = tmp_path / "data"
    settings = _settings(
        tmp_path,
        download={"mirror": base, "lock": str(lock)},
        tokenize={"chunk_lines": 500},
        bpe={**config["data"]["bpe"], "vocab_size": 2000},
    )
    for split, corpus in corpora.items():
        source = config["sources"][corpus]
        archive = d / "downloads" / Path(source["url"]).name
        _run("download", "--url", source["url"], "--out", archive, "--settings", settings["download"], "--retries", 0)
        for lang, member in source["members"]["en-fr"].items():
            _run("extract", "--archive", archive, "--member", member, "--out", d / "raw" / f"{split}.{lang}")
            _run(
                "tokenize",
                "--lang",
                lang,
                "--input",
                d / "raw" / f"{split}.{lang}",
                "--output",
                d / "tok" / f"{split}.{lang}",
                "--threads",
                2,
                "--settings",
                settings["tokenize"],
            )
    _run(
        "clean",
        "--src-lang",
        "en",
        "--tgt-lang",
        "fr",
        "--corpora",
        d / "tok" / "train",
        "--out-prefix",
        d / "clean" / "train",
        "--stats",
        d / "clean" / "train.stats.json",
    )
    stats = json.loads((d / "clean" / "train.stats.json").read_text())["total"]
    assert stats["read"] == TRAIN_LINES and stats["empty"] == 10  # one-sided empty pairs in the first 1500
    assert stats["read"] == stats["kept"] + stats["empty"] + stats["too_long"] + stats["ratio"]

    model = d / "bpe" / "spm"
    _run(
        "bpe",
        "learn",
        "--inputs",
        d / "clean" / "train.en",
        d / "clean" / "train.fr",
        "--model-prefix",
        model,
        "--settings",
        settings["bpe"],
        "--threads",
        2,
    )
    splits = {"train": d / "clean" / "train", "dev": d / "tok" / "dev", "test": d / "tok" / "test"}
    for split, prefix in splits.items():
        for lang in ("en", "fr"):
            _run(
                "bpe",
                "encode",
                "--model",
                f"{model}.model",
                "--input",
                f"{prefix}.{lang}",
                "--output",
                d / "bpe" / f"{split}.{lang}",
                "--threads",
                2,
            )
        _run(
            "binarize",
            "--model",
            f"{model}.model",
            "--src",
            d / "bpe" / f"{split}.en",
            "--tgt",
            d / "bpe" / f"{split}.fr",
            "--out-dir",
            d / "bin" / split,
        )

    sizes = {split: len(ShardedCorpus(d / "bin" / split, verify=True)) for split in splits}
    assert sizes == {"train": stats["kept"], "dev": DEV_LINES, "test": 3003}
    test = ShardedCorpus(d / "bin" / "test")
    assert test.manifest["unknown_pieces"] < 0.01 * test.manifest["tgt_tokens"]
    assert (test.src_lengths > 0).all() and (test.tgt_lengths > 0).all()
