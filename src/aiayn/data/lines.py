"""Streaming line I/O shared by the data stages: UTF-8 checks, alignment checks, ordered parallel maps.

Corpora are read one line at a time (WMT14 EN-FR is about 40M pairs), so memory stays flat whatever
the input size. Lines are split on ``\\n`` only: ``str.splitlines`` would also split on U+2028, U+0085
and friends, which occur in real WMT text and would silently break the alignment of a parallel corpus.
"""

from __future__ import annotations

import collections
import contextlib
import gzip
import logging
import lzma
import multiprocessing
import os
import signal
import zlib
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator, Sequence, TypeVar

from aiayn.io import atomic_output, open_text, progress
from aiayn.options import TokenizeConfig

log = logging.getLogger(__name__)

# A line this long is a broken file (a missing newline, a binary blob), not a sentence.
MAX_LINE_CHARS = 1_000_000
# Lines per work unit of the worker processes, for every stage that maps lines: data.tokenize.chunk_lines.
CHUNK_LINES = TokenizeConfig.chunk_lines
CHUNK_HELP = "lines per work unit of the worker processes (default: data.tokenize.chunk_lines)"
PART_HELP = "only part I of N of the input's lines (I from 0): a stage run in parts (data.chunks)"
_BLOCK = 1 << 22  # bytes read at a time when counting or skipping lines


T = TypeVar("T")


class DataError(ValueError):
    """Bad input data, with the file (and line) that causes it."""


def first_bad_utf8_line(raw: Iterable[bytes]) -> tuple[int, UnicodeDecodeError] | None:
    """1-based number of the first line of ``raw`` (bytes lines) that is not valid UTF-8, and its error."""
    for number, line in enumerate(raw, 1):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError as error:
            return number, error
    return None


# What a corrupt compressed file raises while it is read: a flipped byte in gzip's deflate stream is
# zlib.error ("Error -3 while decompressing data: invalid distance too far back"), a bad header
# gzip.BadGzipFile (an OSError), a cut one EOFError, a broken bzip2 stream OSError, a broken xz stream
# lzma.LZMAError.
CORRUPT = (zlib.error, EOFError, OSError, lzma.LZMAError)


@contextlib.contextmanager
def decompressing(where: str | os.PathLike, compressed: bool = True):
    """Inside, reading a corrupt compressed stream (``compressed``) is a :class:`DataError` naming ``where``
    and the cause, not an internal error. Wrap reads alone: a full disk is an OSError of writing."""
    if not compressed:
        yield
        return
    try:
        yield
    except CORRUPT as error:
        raise DataError(
            f"{where}: cannot decompress ({type(error).__name__}: {error}): the file is corrupt or cut "
            "short; fetch or copy it again"
        ) from None


def _open_binary(path: str | os.PathLike) -> IO[bytes]:
    return gzip.open(path, "rb") if str(path).endswith(".gz") else open(path, "rb")


def _utf8_error(path: str | os.PathLike) -> DataError:
    with _open_binary(path) as handle:
        found = first_bad_utf8_line(handle)
    where = f"line {found[0]}: {found[1].reason} at byte {found[1].start}" if found else "undecodable"
    return DataError(f"{path}: {where}: invalid UTF-8 (re-encode the file as UTF-8, e.g. with iconv)")


def iter_lines(path: str | os.PathLike, max_chars: int | None = None, part: str | None = None) -> Iterator[str]:
    """Yield the lines of a UTF-8 text file (``.gz`` transparently) without their ``\\n``; with ``part``
    (``I-N``, :func:`part_range`) only the I-th of N consecutive, nearly equal ranges of lines.

    Invalid UTF-8 and lines longer than ``max_chars`` (default :data:`MAX_LINE_CHARS`) raise
    :class:`DataError` naming file and line (counted in the whole file).
    """
    max_chars = max_chars or MAX_LINE_CHARS
    start, stop = part_range(count_lines(path), part) if part else (0, None)
    try:
        with open_text(path) as handle:
            compressed = str(path).endswith(".gz")
            if start:
                with decompressing(path, compressed):
                    _skip_lines(handle, path, start)
            lines = enumerate(handle, start + 1)
            while True:
                with decompressing(path, compressed):
                    number, line = next(lines, (0, None))
                if line is None or (stop is not None and number > stop):
                    break
                line = line[:-1] if line.endswith("\n") else line
                if len(line) > max_chars:
                    raise DataError(f"{path}: line {number}: {len(line)} characters (limit {max_chars})")
                yield line
    except UnicodeDecodeError:
        raise _utf8_error(path) from None


def parse_part(part: str) -> tuple[int, int]:
    """``"I-N"`` -> (I, N): part I (0-based) of N, as the workflow's chunked stages name it."""
    try:
        index, parts = (int(x) for x in part.split("-"))
    except ValueError:
        raise ValueError(f"a part is I-N (the I-th of N, from 0), got {part!r}") from None
    if not 0 <= index < parts:
        raise ValueError(f"part {part!r}: I-N needs 0 <= I < N")
    return index, parts


def part_range(total: int, part: str) -> tuple[int, int]:
    """Lines [start, stop) of part ``I-N`` of ``total`` lines: ``I * total // N`` up to ``(I + 1) * total // N``,
    so that the N parts in order are the whole file, each line once."""
    index, parts = parse_part(part)
    return index * total // parts, (index + 1) * total // parts


def _skip_lines(handle: IO[str], path: str | os.PathLike, count: int) -> None:
    """Move a text handle past ``count`` lines: by the bytes of a plain file (no decoding), by reading a
    compressed one."""
    if str(path).endswith(".gz"):
        for _ in zip(range(count), handle):
            pass
        return
    with _open_binary(path) as raw:
        offset, seen = 0, 0
        for block in iter(lambda: raw.read(_BLOCK), b""):
            found = block.count(b"\n")
            if seen + found < count:
                seen, offset = seen + found, offset + len(block)
                continue
            position = -1
            for _ in range(count - seen):
                position = block.index(b"\n", position + 1)
            offset += position + 1
            break
    handle.seek(offset)


def read_lines(path: str | os.PathLike) -> list[str]:
    """The lines of a UTF-8 text file (``.gz`` transparently) without their ``\\n``, empty lines kept; a
    bad line raises :class:`DataError` naming file and line (:func:`iter_lines`)."""
    return list(iter_lines(path))


def count_lines(path: str | os.PathLike) -> int:
    """Number of lines as ``wc -l`` counts them, plus one for a last line without ``\\n``."""
    count, last = 0, b"\n"
    with _open_binary(path) as handle, decompressing(path, str(path).endswith(".gz")):
        for block in iter(lambda: handle.read(_BLOCK), b""):
            count += block.count(b"\n")
            last = block[-1:]
    return count + (last != b"\n")


def check_aligned(paths: Sequence[str | os.PathLike]) -> int:
    """Line count shared by parallel files; a mismatch names every file and its count."""
    counts = [count_lines(p) for p in paths]
    if len(set(counts)) > 1:
        detail = ", ".join(f"{p}: {c} lines" for p, c in zip(paths, counts))
        raise DataError(
            f"misaligned parallel files ({detail}): line i of each must be a translation of line i "
            "of the others; extract them again from the same corpus"
        )
    return counts[0] if counts else 0


def chunked(lines: Iterable[T], size: int) -> Iterator[list[T]]:
    """Consecutive lists of at most ``size`` lines (or pairs of lines)."""
    if size < 1:
        raise ValueError(f"chunk size must be positive, got {size}")
    chunk: list[T] = []
    for line in lines:
        chunk.append(line)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


_worker_job: Callable[[list], Any] | None = None


def _init_worker(job: Callable[[list], Any]) -> None:
    global _worker_job  # per worker process: the job (e.g. a tokenizer) is built once, not per chunk
    _worker_job = job
    # A forked worker inherits the parent's Python SIGTERM handler (a training's stop handler, where
    # the parent is a test or a notebook that trained first), which only sets a flag: the pool's
    # terminate() would then wait forever for a worker idle in a lock. A worker dies on SIGTERM; it is
    # forked with SIGTERM blocked (ordered_map), so one sent before this line is delivered after it.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})


def _run_job(chunk: list) -> Any:
    return _worker_job(chunk)


def ordered_map(job: Callable[[list[T]], Any], chunks: Iterable[list[T]], processes: int = 1) -> Iterator[Any]:
    """Apply ``job`` to every chunk in ``processes`` worker processes; yield results in input order.

    At most ``2 * processes`` chunks are in flight, so memory does not grow with the input.
    (``Pool.imap`` would do the same work, but its feeder thread reads the whole input ahead.)
    With ``processes == 1`` the job runs in this process: same results, no pickling.
    """
    if processes <= 1:
        yield from map(job, chunks)
        return
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})  # until each worker is set up
    try:
        pool = multiprocessing.get_context("fork").Pool(processes, _init_worker, (job,))
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    with pool:
        pending: collections.deque = collections.deque()
        for chunk in chunks:
            pending.append(pool.apply_async(_run_job, (chunk,)))
            if len(pending) >= 2 * processes:
                yield pending.popleft().get()
        while pending:
            yield pending.popleft().get()


def map_file(
    job: Callable[[list[str]], list[str]],
    src: str | os.PathLike,
    output: str | os.PathLike,
    processes: int = 1,
    chunk_lines: int = CHUNK_LINES,
    part: str | None = None,
) -> int:
    """Stream ``src`` (its lines of ``part``, :func:`iter_lines`) through ``job`` chunk by chunk into the file
    ``output`` (atomically), line for line; returns lines.

    ``job`` maps a list of lines to a list of as many lines, each without ``\\n``; ``processes`` worker
    processes run it (:func:`ordered_map`).
    """
    count, total = 0, count_lines(src)
    lines = part_range(total, part) if part else (0, total)
    with atomic_output(output) as out, progress(lines[1] - lines[0], Path(src).name, "lines") as bar:
        for chunk_out in ordered_map(job, chunked(iter_lines(src, part=part), chunk_lines), processes):
            out.write("".join(line + "\n" for line in chunk_out))
            count += len(chunk_out)
            bar.update(len(chunk_out))
    return count
