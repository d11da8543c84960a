"""Byte-reproducible archives in the WMT sources' layout, WMT-style SGML test sets, and the lock file.

Same inputs, same bytes: tar members carry a fixed mtime, uid/gid 0 and no user names, members are
written in sorted order, gzip headers carry mtime 0 and no file name.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
from pathlib import Path

from aiayn.io import atomic_output, write_json

MTIME = 1388534400           # 2014-01-01T00:00:00Z, the WMT14 release year
SEGMENTS_PER_DOC = 20
OUTLETS = {"en": "herald", "de": "kurier", "fr": "matin"}     # invented news outlets for document ids


def gzip_bytes(data: bytes) -> bytes:
    """gzip ``data`` with header mtime 0 and no stored file name (reproducible)."""
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=6) as handle:
        handle.write(data)
    return buffer.getvalue()


def tar_bytes(members: dict[str, bytes]) -> bytes:
    """An uncompressed tar (GNU format) of ``members`` (path -> content) in sorted path order."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name in sorted(members):
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(members[name]), MTIME, 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(members[name]))
    return buffer.getvalue()


def archive_bytes(file_name: str, members: dict[str, bytes]) -> bytes:
    """``.tgz``/``.tar.gz``: gzip of a tar; ``.tar``: plain tar. Members named ``*.gz`` are gzipped inside."""
    members = {name: gzip_bytes(data) if name.endswith(".gz") else data for name, data in members.items()}
    if file_name.endswith((".tgz", ".tar.gz")):
        return gzip_bytes(tar_bytes(members))
    if file_name.endswith(".tar"):
        return tar_bytes(members)
    raise ValueError(f"archive {file_name!r}: unsupported type (expected .tgz, .tar.gz or .tar)")


def text_bytes(lines: list[str]) -> bytes:
    """One sentence per line, UTF-8, LF; a line holding a newline or a tab is an error."""
    for number, line in enumerate(lines, 1):
        if "\n" in line or "\r" in line:
            raise ValueError(f"line {number} contains a line break: {line!r}")
    return "".join(line + "\n" for line in lines).encode("utf-8")


def sgm_bytes(lines: list[str], *, setid: str, src_lang: str, trg_lang: str, is_ref: bool,
              origlangs: tuple[str, str]) -> bytes:
    """A WMT test set file: ``<srcset>``/``<refset>``, ``<doc>`` blocks of segments numbered from 1 per doc.

    Documents alternate their ``origlang`` between ``origlangs``; the text is written unescaped, as in
    the real newstest files (and sacreBLEU reads it unescaped).
    """
    if is_ref:
        out = [f'<refset trglang="{trg_lang}" setid="{setid}" srclang="any">']
    else:
        out = [f'<srcset setid="{setid}" srclang="any">']
    for start in range(0, len(lines), SEGMENTS_PER_DOC):
        number = start // SEGMENTS_PER_DOC
        origlang = origlangs[number % 2]
        docid = f"{1001 + number}-demo-{OUTLETS.get(origlang, 'news')}.{origlang}"
        sysid = 'sysid="ref" ' if is_ref else ""
        out.append(f'<doc {sysid}docid="{docid}" genre="news" origlang="{origlang}">')
        for seg, line in enumerate(lines[start:start + SEGMENTS_PER_DOC], 1):
            if "<" in line or "\n" in line:
                raise ValueError(f"{setid} segment {start + seg}: text cannot go into SGML: {line!r}")
            out.append(f'<seg id="{seg}">{line}</seg>')
        out.append("</doc>")
    out.append("</refset>" if is_ref else "</srcset>")
    return text_bytes(out)


def write_archive(out_dir: Path, file_name: str, members: dict[str, bytes]) -> dict:
    """Write one archive atomically; return its lock entry ``{"sha256", "size"}``."""
    data = archive_bytes(file_name, members)
    with atomic_output(out_dir / file_name, "wb") as handle:
        handle.write(data)
    return {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}


def write_lock(out_dir: Path, entries: dict[str, dict]) -> None:
    """``sources.lock``: ``{"<archive file name>": {"sha256": "<hex>", "size": <bytes>}}``."""
    write_json(out_dir / "sources.lock", dict(sorted(entries.items())))
