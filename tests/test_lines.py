import gzip
import signal

import pytest

from aiayn.data.lines import DataError, check_aligned, chunked, count_lines, iter_lines, ordered_map


def _reverse_each(lines):
    return [line[::-1] for line in lines]


def _default_sigterm(lines):
    return [signal.getsignal(signal.SIGTERM) == signal.SIG_DFL for _ in lines]


def test_pool_workers_die_on_sigterm_whatever_the_parent_handles(monkeypatch):
    """A forked worker used to inherit the parent's Python SIGTERM handler (a training's stop flag, where
    a test or notebook trained first): the pool's terminate() then waited forever for a worker idle in
    a lock. Each worker has SIGTERM's default action."""
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: None)
    try:
        seen = [
            flag for flags in ordered_map(_default_sigterm, [["a"], ["b"], ["c"], ["d"]], processes=2) for flag in flags
        ]
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert seen == [True] * 4


RACE = """
import signal
from aiayn.data.lines import ordered_map
signal.signal(signal.SIGTERM, lambda signum, frame: None)
for _ in range(100):
    list(ordered_map(lambda lines: lines, [["a"]], processes=4))
"""


@pytest.mark.slow
def test_a_worker_terminated_before_its_setup_still_dies():
    """One chunk, four workers: the pool is terminated while some workers may not have run their setup
    yet. Forked with the parent's handler in place, such a worker ignored SIGTERM and the pool waited
    forever (a hang within 100 pools on two cores); forked with SIGTERM blocked, it dies once set up."""
    import subprocess
    import sys

    from paths import ROOT

    done = subprocess.run(
        [sys.executable, "-c", RACE], env={"PYTHONPATH": str(ROOT / "src")}, capture_output=True, timeout=60
    )
    assert done.returncode == 0


def test_count_and_iterate_plain_and_gzip(tmp_path):
    plain, packed = tmp_path / "a.txt", tmp_path / "a.txt.gz"
    plain.write_bytes("one\n\nthree\u2028still three\nno newline".encode())
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    for path in (plain, packed):
        assert count_lines(path) == 4
        assert list(iter_lines(path)) == ["one", "", "three\u2028still three", "no newline"]


def test_gzip_invalid_utf8_names_the_line(tmp_path):
    path = tmp_path / "b.gz"
    path.write_bytes(gzip.compress(b"ok\n\xe2\x82 cut\n"))
    with pytest.raises(DataError, match=r"b\.gz: line 2: .*invalid UTF-8"):
        list(iter_lines(path))


def test_ordered_map_keeps_order_across_processes():
    chunks = list(chunked((f"line {i}" for i in range(103)), 10))
    assert [len(c) for c in chunks] == [10] * 10 + [3]
    expected = [_reverse_each(c) for c in chunks]
    assert list(ordered_map(_reverse_each, chunks, processes=1)) == expected
    assert list(ordered_map(_reverse_each, chunks, processes=2)) == expected


def test_check_aligned(tmp_path):
    (tmp_path / "x").write_text("a\nb\n")
    (tmp_path / "y").write_text("a\nb")
    assert check_aligned([tmp_path / "x", tmp_path / "y"]) == 2
    (tmp_path / "z").write_text("a\n")
    with pytest.raises(DataError, match=r"x: 2 lines, .*z: 1 lines"):
        check_aligned([tmp_path / "x", tmp_path / "z"])


@pytest.mark.parametrize("damage", ["flipped", "cut"])
def test_a_corrupt_gzip_file_is_a_data_error_naming_it(tmp_path, damage):
    """A flipped byte in the deflate stream (zlib's "invalid distance too far back" and the like, or a
    failed CRC) and a file cut short: a DataError naming the file, never an internal error."""
    data = bytearray(gzip.compress(("\n".join(f"word{i} and more text {i * 7}" for i in range(20000)) + "\n").encode()))
    if damage == "flipped":
        data[len(data) // 3] ^= 0x55
    else:
        data = data[: len(data) // 2]
    path = tmp_path / "corpus.en.gz"
    path.write_bytes(bytes(data))
    for read in (lambda: sum(1 for _ in iter_lines(path)), lambda: count_lines(path)):
        with pytest.raises(DataError, match=str(path)):
            read()
    with pytest.raises(DataError, match=rf"{path}: cannot decompress \((BadGzipFile|error|EOFError)"):
        count_lines(path)
