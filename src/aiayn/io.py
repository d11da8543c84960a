"""Shared file helpers: atomic outputs, compressed text, logging set-up and how a stage fails.

Every output of the workflow is written through :func:`atomic_output` (a temporary file in the
same directory, synced and renamed into place on success), so a killed job or a full disk never
leaves a file that looks complete, and the previous complete file stays until the new one replaces it.

Every CLI calls :func:`setup_logging`, which also decides how an uncaught error ends the process
(exit status 1): bad input (``ValueError``, ``OSError``: a file, line, key or disk at fault) and
memory that ran out (:func:`out_of_memory`) are one line in the log that says what is wrong and where,
without a traceback unless ``AIAYN_DEBUG=1``; anything else is a bug, logged with its traceback after
the line. A long loop shows its progress through :func:`progress` (tqdm on a terminal, log lines in a
log file).
"""

from __future__ import annotations

import contextlib
import errno
import glob
import gzip
import io
import json
import logging
import os
import resource
import sys
import tempfile
from pathlib import Path
from typing import IO, Any, Iterator

from tqdm import tqdm

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
DEBUG_ENV = "AIAYN_DEBUG"
# Errors in what the user gave a stage (files, settings, disk space, memory): reported in one line.
INPUT_ERRORS = (ValueError, OSError, MemoryError)


def out_of_memory(error: BaseException) -> bool:
    """Whether ``error`` is an allocation that failed: Python's, a GPU's (``torch.OutOfMemoryError``) or
    the CPU allocator's, whose messages start "DefaultCPUAllocator: can't allocate memory" (Linux, macOS)
    or "... not enough memory" (Windows), both RuntimeErrors (pytorch/pytorch at v2.13.0,
    ``c10/core/impl/alloc_cpu.cpp``, ``alloc_cpu``; torch 2.13.0 says "[enforce fail at alloc_cpu.cpp:127] err ==
    0. DefaultCPUAllocator: can't allocate memory: ..."). Asks torch only when it is loaded."""
    torch = sys.modules.get("torch")
    return (
        isinstance(error, MemoryError)
        or (torch is not None and isinstance(error, torch.OutOfMemoryError))
        or (isinstance(error, RuntimeError) and "DefaultCPUAllocator:" in str(error))
    )


def first_line(error: BaseException, limit: int | None = 200) -> str:
    """The first line of ``error``'s message, at most ``limit`` characters (None: all): the cause that a
    user's message quotes (torch's errors run to many lines)."""
    lines = str(error).strip().splitlines()
    return lines[0][:limit] if lines else type(error).__name__


def _temporary_beside(path: Path) -> tuple[int, str]:
    """A temporary file beside ``path`` with the permissions a plain ``open`` would give (umask).

    Temporary files of ``path`` that a killed process left behind are deleted first: one job writes
    a given output at a time (Snakemake's lock), so none of them is in use.
    """
    for stale in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        with contextlib.suppress(FileNotFoundError):
            stale.unlink()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    return fd, tmp


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Open a temporary file beside ``path``; rename it onto ``path`` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _temporary_beside(path)
    binary = "b" in mode
    try:
        with os.fdopen(fd, mode, encoding=None if binary else encoding) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path`` for libraries that write by name; rename on success."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _temporary_beside(path)
    os.close(fd)
    try:
        yield Path(tmp)
        _fsync(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _fsync(path: str | os.PathLike) -> None:
    """Flush a file a library wrote by name to the disk, so that a power cut cannot publish it empty."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_json(path: str | os.PathLike, obj: Any) -> None:
    """Write ``obj`` as indented JSON, atomically."""
    with atomic_output(path) as handle:
        json.dump(obj, handle, indent=2, sort_keys=True)
        handle.write("\n")


def read_json(path: str | os.PathLike) -> Any:
    """The JSON value in ``path``; a file that is not JSON is a ValueError naming it, line and column."""
    with open(path, encoding="utf-8") as handle:
        try:
            return json.load(handle)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}: not valid JSON: {error}") from None


def open_text(path: str | os.PathLike, mode: str = "r") -> IO[str]:
    """Open a UTF-8 text file, transparently gunzipping ``*.gz``; invalid UTF-8 raises."""
    path = str(path)
    if path.endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, mode.replace("t", "") + "b"), encoding="utf-8", newline="\n")
    return open(path, mode, encoding="utf-8", newline="\n")


def setup_logging(log_file: str | os.PathLike | None = None, level: int = logging.INFO) -> None:
    """Log to stderr and, when given, to ``log_file`` (appending). Called by each ``main``."""
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file:
        Path(log_file).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(log_file, encoding="utf-8"))
    logging.basicConfig(level=level, format=LOG_FORMAT, handlers=handlers, force=True)
    sys.excepthook = _log_uncaught


def log_resources() -> None:
    """Log what this process and its finished worker processes used: CPU seconds and peak resident
    memory, exact (``getrusage``; a worker's peak is the largest one's, the workers' CPU their sum).

    The process's own peak is Linux's ``VmHWM``, where there is one: ``getrusage``'s would be at least
    the RSS of the process that started it, which Linux carries over an ``exec``.
    """
    own, workers = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    peak = own.ru_maxrss  # KiB on Linux
    with contextlib.suppress(OSError, StopIteration):
        with open("/proc/self/status", encoding="ascii") as status:
            peak = int(next(line for line in status if line.startswith("VmHWM:")).split()[1])
    logging.getLogger("aiayn").info(
        "resources: CPU %.1f s (workers %.1f s); peak RSS %.0f MiB (the largest worker %.0f MiB)",
        own.ru_utime + own.ru_stime + workers.ru_utime + workers.ru_stime,
        workers.ru_utime + workers.ru_stime,
        peak / 1024,
        workers.ru_maxrss / 1024,
    )


def debugging() -> bool:
    """Whether ``AIAYN_DEBUG`` asks for tracebacks of input errors too."""
    return os.environ.get(DEBUG_ENV, "") not in ("", "0")


def error_line(exc: BaseException) -> str:
    """What a user reads about an input error: its message, and for a full disk or memory what to do."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        where = f" writing {exc.filename}" if exc.filename else ""
        detail = f" ({exc.strerror})" if exc.strerror and exc.strerror != os.strerror(exc.errno) else ""
        return (
            f"no space left on the device{where}{detail}: the previous complete outputs are intact; free "
            "space (or move data_dir / results_dir) and run the same command again"
        )
    if out_of_memory(exc) and not isinstance(exc, MemoryError):  # torch's: the allocation, without context
        return f"out of memory ({first_line(exc)}): a smaller batch (the stage's settings) or a device with more memory"
    return str(exc) or type(exc).__name__


def _log_uncaught(exc_type, exc, tb) -> None:
    """How a CLI ends on an uncaught error (Python then exits with status 1): see the module docstring."""
    if issubclass(exc_type, KeyboardInterrupt):
        sys.__excepthook__(exc_type, exc, tb)
        return
    logger = logging.getLogger("aiayn")
    if issubclass(exc_type, INPUT_ERRORS) or out_of_memory(exc):
        debug = debugging()
        hint = "" if debug else f" ({DEBUG_ENV}=1 shows the traceback)"
        logger.critical("error: %s%s", error_line(exc), hint, exc_info=(exc_type, exc, tb) if debug else None)
        return
    logger.critical(
        "internal error, %s: %s (a bug; the traceback follows)", exc_type.__name__, exc, exc_info=(exc_type, exc, tb)
    )


class _LogLines:
    """A file for tqdm that logs each redraw as one line (where stderr is a log file, not a terminal)."""

    def __init__(self, logger: logging.Logger) -> None:
        self.logger = logger

    def write(self, text: str) -> None:
        text = text.strip()
        if text:
            self.logger.info("%s", text)

    def flush(self) -> None:
        pass


def progress(
    total: int | None,
    desc: str,
    unit: str,
    unit_scale: bool = True,
    logger: logging.Logger | None = None,
    stream: IO[str] | None = None,
) -> tqdm:
    """A tqdm bar for a long loop (``stream``: stderr). On a terminal it is redrawn in place every second;
    where stderr is a log file, ``logger`` (``aiayn``) writes ``desc: done/total (pct), rate, ETA`` as one
    line at the start, at most every 30 s, and at the end, so that a stage's log says how far it is."""
    stream = sys.stderr if stream is None else stream
    if stream.isatty():
        return tqdm(
            total=total, desc=desc, unit=unit, unit_scale=unit_scale, dynamic_ncols=True, mininterval=1, file=stream
        )
    shape = (
        "{desc}: {n_fmt}/{total_fmt} ({percentage:.0f}%), {rate_fmt}, ETA {remaining}"
        if total
        else "{desc}: {n_fmt}, {rate_fmt}"
    )
    return tqdm(
        total=total,
        desc=desc,
        unit=unit,
        unit_scale=unit_scale,
        mininterval=30,
        bar_format=shape,
        file=_LogLines(logger or logging.getLogger("aiayn")),
    )
