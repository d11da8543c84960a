"""Extract one member of a tar / tgz archive, or convert one plain file, as UTF-8 text, streaming.

``--archive A --member M`` reads a member of an archive (no full unpack); ``--file F`` reads a plain
file (a researcher's own corpus, one file per side). Either way, by the name of the member or file:

- ``*.gz``, ``*.xz``, ``*.bz2`` (Giga-FrEn: gzip inside a plain tar) are decompressed on the fly.
- ``*.sgm`` members (the WMT test sets) become one segment per line, exactly as sacreBLEU does: keep
  lines starting with ``<seg ``, drop the tags, strip, collapse every ``\\s+`` (which includes U+00A0)
  to one space.
- Anything else is copied line by line.

A byte order mark opening a file and the carriage returns of CRLF line endings are dropped (logged).

Every line is checked to be UTF-8 (an error names archive, member and line); a last line without a
newline gets one, so line counts agree with ``wc -l``. A missing member is an error listing the
archive's most similar names.
"""

from __future__ import annotations

import argparse
import bz2
import codecs
import difflib
import gzip
import logging
import lzma
import re
import tarfile
from typing import IO, Iterator

from aiayn.cli import add_log
from aiayn.data.lines import DataError, decompressing
from aiayn.io import atomic_output, log_resources, setup_logging

log = logging.getLogger(__name__)

_SEG = re.compile(r"<seg.*?>(.*)</seg>.*?")
_SPACES = re.compile(r"\s+")


def sgm_line(line: str) -> str | None:
    """The text of a ``<seg id="1">  Text </seg>`` line (``"Text"``); ``None`` for any other line."""
    if not line.startswith("<seg "):
        return None
    return _SPACES.sub(" ", _SEG.sub(r"\1", line).strip())


def _normalize(name: str) -> str:
    return name[2:] if name.startswith("./") else name


def open_member(tar: tarfile.TarFile, member: str, archive: str) -> tuple[tarfile.TarInfo, IO[bytes]]:
    """Scan a streamed archive for ``member`` (a leading ``./`` is ignored); error with close names."""
    seen = []
    for info in tar:
        name = _normalize(info.name)
        if name == _normalize(member) and info.isfile():
            return info, tar.extractfile(info)
        seen.append(name)
    close = difflib.get_close_matches(member, seen, n=5, cutoff=0.5) or seen[:5]
    raise DataError(f"{archive}: no member {member!r}; similar names: {close} ({len(seen)} members)")


def decoded_lines(raw: IO[bytes], where: str) -> Iterator[str]:
    """Lines of a byte stream decoded as UTF-8, each ending in ``\\n``; bad bytes name the line. What a
    Windows editor adds is not text: a byte order mark opening the stream and each line's carriage return
    before its ``\\n`` are dropped, and the log says so once per stream. (Moses would keep the mark, which
    is neither space nor alphanumeric, as a token of the first sentence: ``PAD_NOT_ISALNUM`` in
    ``sacremoses/tokenize.py``, hplt-project/sacremoses at 53ce2d9; seen with the 0.2.0 installed.)"""
    crlf = 0
    for number, line in enumerate(raw, 1):
        if number == 1 and line.startswith(codecs.BOM_UTF8):
            line = line[len(codecs.BOM_UTF8) :]
            log.info("%s: dropped the byte order mark that opens it", where)
        if line.endswith(b"\r\n"):
            line, crlf = line[:-2] + b"\n", crlf + 1
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as error:
            raise DataError(f"{where}: line {number}: invalid UTF-8 ({error.reason} at byte {error.start})") from None
        yield text if text.endswith("\n") else text + "\n"
    if crlf:
        log.info("%s: %d lines ended in CRLF (Windows): their carriage returns dropped", where, crlf)


_DECOMPRESS = {
    ".gz": lambda s: gzip.GzipFile(fileobj=s, mode="rb"),
    ".xz": lambda s: lzma.LZMAFile(s, mode="rb"),
    ".bz2": lambda s: bz2.BZ2File(s, mode="rb"),
}


def member_lines(stream: IO[bytes], member: str, where: str) -> Iterator[str]:
    """The text lines of one member or file: decompressed for ``.gz``/``.xz``/``.bz2``, converted for
    ``.sgm`` (also ``.sgm.gz``)."""
    suffix = next((s for s in _DECOMPRESS if member.endswith(s)), "")
    if suffix:
        stream = _DECOMPRESS[suffix](stream)
        member = member[: -len(suffix)]
    lines = decoded_lines(_checked(stream, where), where)
    if member.endswith(".sgm"):
        return (text + "\n" for text in map(sgm_line, lines) if text is not None)
    return lines


def _checked(stream: IO[bytes], where: str) -> Iterator[bytes]:
    """The stream's lines; a corrupt compressed stream is an error naming ``where``
    (:func:`aiayn.data.lines.decompressing`)."""
    lines = iter(stream)
    while True:
        with decompressing(where):
            line = next(lines, None)
        if line is None:
            return
        yield line


def convert(path: str, out_path: str) -> int:
    """Write the plain file ``path`` to ``out_path`` as text, one sentence per line (atomically); returns
    the line count."""
    count = 0
    with open(path, "rb") as stream, atomic_output(out_path) as out:
        for line in member_lines(stream, path, path):
            out.write(line)
            count += 1
    return count


def extract(archive: str, member: str, out_path: str) -> int:
    """Write ``member`` of ``archive`` to ``out_path`` as text (atomically); returns the line count."""
    count = 0
    with tarfile.open(archive, mode="r|*") as tar:
        _, stream = open_member(tar, member, archive)
        with atomic_output(out_path) as out:
            for line in member_lines(stream, member, f"{archive}:{member}"):
                out.write(line)
                count += 1
    return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m aiayn.data.extract", description=__doc__.split("\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--archive", help="a tar archive (with --member)")
    source.add_argument("--file", help="a plain file: text, .gz, .xz, .bz2 or .sgm")
    parser.add_argument("--member", help="path inside the archive")
    parser.add_argument("--out", required=True)
    add_log(parser)
    args = parser.parse_args(argv)
    if bool(args.archive) != bool(args.member):
        parser.error("--archive and --member go together (--file takes neither)")
    setup_logging(args.log)
    if args.file:
        count = convert(args.file, args.out)
        log.info("%s -> %s (%d lines)", args.file, args.out, count)
    else:
        count = extract(args.archive, args.member, args.out)
        log.info("%s:%s -> %s (%d lines)", args.archive, args.member, args.out, count)
    log_resources()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
