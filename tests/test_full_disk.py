"""A full disk (ENOSPC) while writing a checkpoint, a shard or a translation: the previous complete
file stays as it was and nothing partial is left beside it."""

import errno
import hashlib
import os

import numpy as np
import pytest
import torch

from aiayn.data import shards
from aiayn.data.shards import ShardedCorpus, ShardWriter
from aiayn.io import atomic_output
from aiayn.runtime.checkpoint import Checkpoint, checkpoint_path, save_checkpoint


def disk_full(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def half_then_full(path_arg):
    """A writer (whose argument ``path_arg`` is its file) that writes part of it, then finds the disk full."""

    def fail(*args, **kwargs):
        path = args[path_arg]
        with open(path, "wb") as handle:
            handle.write(b"\0" * 100)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    return fail


def digest(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def listing(folder):
    return sorted(p.name for p in folder.iterdir())


def write_split(out_dir, n):
    with ShardWriter(out_dir, vocab_size=50) as writer:
        for i in range(n):
            writer.add(np.arange(4, 4 + i % 7 + 1), np.arange(5, 5 + i % 5 + 1))


@pytest.mark.parametrize("where", ["index", "fsync"])
def test_shards_keep_the_previous_split_and_leave_no_temporary_directory(tmp_path, monkeypatch, where):
    out = tmp_path / "bin" / "train"
    write_split(out, 20)
    before = {name: digest(out / name) for name in listing(out)}
    if where == "index":
        monkeypatch.setattr(shards._IndexFile, "close", disk_full)
    else:
        monkeypatch.setattr(shards.os, "fsync", disk_full)
    with pytest.raises(OSError) as raised:
        write_split(out, 30)
    assert raised.value.errno == errno.ENOSPC
    assert listing(tmp_path / "bin") == ["train"]
    assert {name: digest(out / name) for name in listing(out)} == before
    ShardedCorpus(out, verify=True)


def test_a_killed_writers_temporary_directories_are_removed_by_the_next(tmp_path):
    out = tmp_path / "bin" / "train"
    (tmp_path / "bin" / ".train.abc123").mkdir(parents=True)
    (tmp_path / "bin" / ".train.abc123" / "src.000.bin").write_bytes(b"\1\2")
    (tmp_path / "bin" / ".dev.xyz").mkdir()
    write_split(out, 3)
    assert listing(tmp_path / "bin") == [".dev.xyz", "train"]


def test_a_checkpoint_on_a_full_disk_keeps_the_previous_one(tmp_path, monkeypatch):
    first = checkpoint_path(tmp_path, 2)
    save_checkpoint(first, Checkpoint(model={"w": torch.ones(3)}, settings={}, vocab={}, step=2))
    before = digest(first)
    monkeypatch.setattr(torch, "save", half_then_full(1))
    with pytest.raises(OSError, match=r"\[Errno 28\]"):
        save_checkpoint(
            checkpoint_path(tmp_path, 4), Checkpoint(model={"w": torch.zeros(3)}, settings={}, vocab={}, step=4)
        )
    assert listing(first.parent) == [first.name] and digest(first) == before
    monkeypatch.undo()
    monkeypatch.setattr(os, "fsync", disk_full)  # the disk fills while the file is flushed
    with pytest.raises(OSError, match=r"\[Errno 28\]"):
        save_checkpoint(
            checkpoint_path(tmp_path, 4), Checkpoint(model={"w": torch.zeros(3)}, settings={}, vocab={}, step=4)
        )
    assert listing(first.parent) == [first.name] and digest(first) == before


def test_a_translation_on_a_full_disk_keeps_the_previous_one(tmp_path, monkeypatch):
    out = tmp_path / "test-avg.hyp.tok"
    out.write_text("old hypothesis\n")
    for failure in ("write", "fsync"):
        with monkeypatch.context() as patch:
            if failure == "fsync":
                patch.setattr(os, "fsync", disk_full)
            with pytest.raises(OSError, match=r"\[Errno 28\]"):
                with atomic_output(out) as handle:
                    handle.write("new hypothesis\n" * 1000)
                    if failure == "write":
                        disk_full()
        assert listing(tmp_path) == [out.name] and out.read_text() == "old hypothesis\n"


def test_a_killed_writers_temporary_file_is_removed_by_the_next(tmp_path):
    out = tmp_path / "test-avg.hyp.tok"
    (tmp_path / ".test-avg.hyp.tok.k1ll3d.tmp").write_text("half")
    (tmp_path / ".other.k1ll3d.tmp").write_text("not ours")
    with atomic_output(out) as handle:
        handle.write("new\n")
    assert listing(tmp_path) == [".other.k1ll3d.tmp", out.name]


def test_a_checkpoint_that_torch_cannot_finish_for_want_of_space_is_a_full_disk_naming_its_path(tmp_path, monkeypatch):
    """torch's zip writer reports the failed write as a RuntimeError without path or cause; with less room
    on the device than the checkpoint needs, the error is ENOSPC naming the path and both sizes, and the
    CLI's line says so (not "internal error")."""
    import shutil
    from collections import namedtuple

    from aiayn.io import error_line
    from aiayn.runtime import checkpoint as module

    def torch_save(obj, path):
        with open(path, "wb") as handle:
            handle.write(b"\0" * 64)
        raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 64 vs 0")

    usage, real = namedtuple("usage", "total used free"), shutil.disk_usage
    monkeypatch.setattr(module.torch, "save", torch_save)
    monkeypatch.setattr(module.shutil, "disk_usage", lambda path: usage(10**9, 10**9 - 2**20, 2**20))
    path = checkpoint_path(tmp_path, 7)
    weights = Checkpoint(model={"w": torch.zeros(1024, 1024)}, settings={}, vocab={}, step=7)
    with pytest.raises(OSError) as raised:
        save_checkpoint(path, weights)
    assert raised.value.errno == errno.ENOSPC and raised.value.filename == str(path)
    line = error_line(raised.value)
    assert line.startswith(f"no space left on the device writing {path} (the checkpoint needs about 4 MiB, 1 MiB")
    assert listing(path.parent) == []  # nothing half-written beside it
    monkeypatch.setattr(module.shutil, "disk_usage", real)
    with pytest.raises(RuntimeError, match="unexpected pos"):  # room enough: torch's error as it was
        save_checkpoint(path, weights)
