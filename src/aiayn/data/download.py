"""Download one archive, resumable and verified against a lock file of checksums.

``http(s)://`` URLs are fetched with ``Range`` requests onto ``PATH.part``, so a broken transfer
resumes where it stopped; failures are retried with exponential back-off (``backoff * 2**attempt``
seconds). ``file://`` URLs and plain local paths go through the same code. The ``.part`` file is
renamed onto ``PATH`` only after it verified.

``--settings FILE`` (:class:`DownloadConfig`, the ``mirror`` and ``lock`` keys of ``config.yaml``'s ``data``):
``mirror`` makes every URL ``<mirror>/<archive file name>``; the mirror is a local directory, a
``file://`` or an ``http(s)://`` base (air-gapped clusters, local copies, the demo corpus).

``lock``: JSON ``{"<archive file name>": {"sha256": "<hex>", "size": <bytes>}}`` (also optional
``md5``, ``url``, ``source``, ``note``). After every download the size and sha256 (and md5 when
given) are checked; a mismatch is refused, naming file, expected and actual, and the bad file is
removed. A target that already exists and verifies is not downloaded again. Where the lock has no
published sha256 (``"sha256": null`` with a ``note``), a loud warning is logged and the sha256 seen is
recorded beside the download in ``PATH.sha256``. A file without any lock entry is accepted from a
mirror (with a warning) or from a local path (a researcher's own corpus: its sha256 is logged and
recorded in ``PATH.sha256``); a remote URL without one is refused. A local path or ``file://`` URL is
read where it is: the mirror replaces remote URLs only. The default lock (``lock: null``) is
``aiayn/resources/sources.lock``.
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import logging
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from importlib import resources
from pathlib import Path
from typing import IO

from aiayn import settings
from aiayn.cli import add_log, add_settings
from aiayn.io import atomic_output, progress
from aiayn.options import DownloadConfig
from aiayn.options.sources import archive_name

log = logging.getLogger(__name__)

BLOCK = 1 << 20
_LOCK_KEYS = {"sha256", "size", "md5", "url", "source", "note"}
_HEX = {"sha256": re.compile(r"[0-9a-f]{64}"), "md5": re.compile(r"[0-9a-f]{32}")}


class DownloadError(ValueError):
    """A download that failed, or an archive that does not match its lock entry (a ValueError: the
    stage ends with its one line, as for any bad input, :mod:`aiayn.io`)."""


class TransferError(OSError):
    """A transfer that ended early (retried, resuming from what arrived)."""


def is_remote(url: str) -> bool:
    """An ``http(s)://`` URL (what a mirror replaces and a lock entry must pin)."""
    return urllib.parse.urlparse(url).scheme in ("http", "https")


def resolve_url(url: str, mirror: str | None) -> str:
    """The address to fetch: ``url`` itself (also any local path), or ``<mirror>/<archive file name>``."""
    if not mirror or not is_remote(url):
        return url
    if "://" in mirror:
        return f"{mirror.rstrip('/')}/{archive_name(url)}"
    return str(Path(mirror) / archive_name(url))


def load_lock(path: str | os.PathLike | None = None) -> dict[str, dict]:
    """Read and check a lock file; ``None``: the one shipped in the package. Errors name file and key."""
    where = str(path) if path else "aiayn/resources/sources.lock"
    text = (
        Path(path).read_text(encoding="utf-8")
        if path
        else resources.files("aiayn.resources").joinpath("sources.lock").read_text(encoding="utf-8")
    )
    try:
        lock = json.loads(text)
    except json.JSONDecodeError as error:
        raise DownloadError(f"{where}: not valid JSON: {error}") from None
    if not isinstance(lock, dict):
        raise DownloadError(f"{where}: expected an object of archive names")
    for name, entry in lock.items():
        if not isinstance(entry, dict) or "sha256" not in entry:
            raise DownloadError(f"{where}: {name}: an entry needs a 'sha256' (hex or null)")
        unknown = set(entry) - _LOCK_KEYS
        if unknown:
            raise DownloadError(f"{where}: {name}: unknown key(s) {sorted(unknown)}")
        for key, pattern in _HEX.items():
            if entry.get(key) is not None and not pattern.fullmatch(str(entry[key])):
                raise DownloadError(f"{where}: {name}.{key}: not a lower-case hex digest: {entry[key]!r}")
        if entry.get("size") is not None and not isinstance(entry["size"], int):
            raise DownloadError(f"{where}: {name}.size: not an integer: {entry['size']!r}")
    return lock


def digests(path: Path) -> dict[str, str]:
    """sha256 and md5 of a file, in one pass."""
    sha, md5 = hashlib.sha256(), hashlib.md5()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(BLOCK), b""):
            sha.update(block)
            md5.update(block)
    return {"sha256": sha.hexdigest(), "md5": md5.hexdigest()}


def check(path: Path, entry: dict, name: str) -> str:
    """Compare ``path`` with its lock entry; returns its sha256. A mismatch raises :class:`DownloadError`."""
    size = path.stat().st_size
    if entry.get("size") is not None and size != entry["size"]:
        raise DownloadError(f"{name}: size mismatch: expected {entry['size']} bytes, got {size} ({path})")
    seen = digests(path)
    for key in ("sha256", "md5"):
        if entry.get(key) and seen[key] != entry[key]:
            raise DownloadError(
                f"{name}: {key} mismatch: expected {entry[key]}, got {seen[key]} ({path}); "
                "the file is corrupt or not the archive the lock pins"
            )
    return seen["sha256"]


def open_source(url: str, offset: int, timeout: float) -> tuple[IO[bytes], int | None, bool]:
    """Open ``url`` at byte ``offset``: (stream, total size or None, whether it resumes at ``offset``)."""
    scheme = urllib.parse.urlparse(url).scheme
    if scheme in ("http", "https"):
        headers = {"User-Agent": "aiayn-download", **({"Range": f"bytes={offset}-"} if offset else {})}
        response = urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout)
        if response.status == 206:
            total = response.headers.get("Content-Range", "").rpartition("/")[2]
            return response, int(total) if total.isdigit() else None, True
        length = response.headers.get("Content-Length")
        return response, int(length) if length else None, False
    path = urllib.request.url2pathname(urllib.parse.urlparse(url).path) if scheme == "file" else url
    handle = open(path, "rb")
    total = os.fstat(handle.fileno()).st_size
    resumes = 0 < offset <= total
    handle.seek(offset if resumes else 0)
    return handle, total, resumes


def transfer(url: str, part: Path, timeout: float) -> None:
    """Append the rest of ``url`` to ``part`` (or start over when the source cannot resume)."""
    offset = part.stat().st_size if part.exists() else 0
    stream, total, resumes = open_source(url, offset, timeout)
    with stream, open(part, "ab" if resumes else "wb") as out, progress(total, archive_name(url), "B") as bar:
        bar.update(offset if resumes else 0)
        for block in iter(lambda: stream.read(BLOCK), b""):
            out.write(block)
            bar.update(len(block))
    size = part.stat().st_size
    if total is not None and size != total:
        raise TransferError(f"transfer ended early: {size} of {total} bytes")


def _retryable(error: Exception) -> bool:
    if isinstance(error, urllib.error.HTTPError):
        return error.code >= 500 or error.code in (408, 416, 429)
    if isinstance(error, (FileNotFoundError, IsADirectoryError, PermissionError)):
        return False
    return isinstance(error, (OSError, http.client.HTTPException))


def fetch(url: str, part: Path, retries: int, backoff: float, timeout: float) -> None:
    """:func:`transfer` with up to ``retries`` retries, ``backoff * 2**attempt`` seconds apart."""
    for attempt in range(retries + 1):
        try:
            transfer(url, part, timeout)
            return
        except Exception as error:  # noqa: BLE001 - sorted by _retryable below
            if not _retryable(error) or attempt == retries:
                raise DownloadError(f"{url}: download failed after {attempt + 1} attempt(s): {error}") from error
            if isinstance(error, urllib.error.HTTPError) and error.code == 416:
                part.unlink(missing_ok=True)  # the server cannot resume from what we have: start over
            delay = backoff * 2**attempt
            log.warning("%s: %s; retry %d of %d in %.1f s (resuming)", url, error, attempt + 1, retries, delay)
            time.sleep(delay)


def _lock_entry(lock: dict, name: str, lock_path, mirror: str | None, url: str) -> dict:
    entry = lock.get(name)
    if entry is not None:
        return entry
    if not is_remote(url):
        return {"sha256": None, "local": True}
    if not mirror:
        raise DownloadError(
            f"{name}: no entry in the lock file ({lock_path or 'aiayn/resources/sources.lock'}); "
            f'add {{"{name}": {{"sha256": "<hex>", "size": <bytes>}}}}'
        )
    log.warning("%s: no lock entry; accepting the mirror's copy UNVERIFIED", name)
    return {"sha256": None}


def _record_unpinned(out: Path, sha256: str, name: str, entry: dict) -> None:
    if entry.get("local"):
        log.info(
            "%s: a local file without a lock entry, accepted; sha256 %s, recorded in %s.sha256 (add it to "
            "data.lock to have it verified from now on)",
            name,
            sha256,
            out,
        )
    else:
        note = f" ({entry['note']})" if entry.get("note") else ""
        log.warning(
            "!!! %s: no published sha256 to verify against%s; saw sha256 %s, recorded in %s.sha256",
            name,
            note,
            sha256,
            out,
        )
    with atomic_output(f"{out}.sha256") as handle:
        handle.write(f"{sha256}  {name}\n")


def download(
    url: str,
    out: str | os.PathLike,
    mirror: str | None = None,
    lock_path: str | None = None,
    retries: int = 5,
    backoff: float = 2.0,
    timeout: float = 60.0,
) -> Path:
    """Fetch ``url`` (or its mirror copy) to ``out``, verified against the lock; returns ``out``."""
    out, name = Path(out), archive_name(url)
    entry = _lock_entry(load_lock(lock_path), name, lock_path, mirror, url)
    pinned = bool(entry.get("sha256") or entry.get("md5"))
    if out.exists():
        if not pinned:
            _record_unpinned(out, digests(out)["sha256"], name, entry)
            return out
        try:
            check(out, entry, name)
            log.info("%s: already present and verified", out)
            return out
        except DownloadError as error:
            log.warning("%s: present but %s; downloading again", out, error)
    source = resolve_url(url, mirror)
    part = out.with_name(out.name + ".part")
    out.parent.mkdir(parents=True, exist_ok=True)
    log.info("downloading %s -> %s", source, out)
    fetch(source, part, retries, backoff, timeout)
    try:
        sha256 = check(part, entry, name)
    except DownloadError:
        part.unlink()
        raise
    if not entry.get("sha256"):
        _record_unpinned(out, sha256, name, entry)
    os.replace(part, out)
    log.info("%s: %d bytes, sha256 %s", out, out.stat().st_size, sha256)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m aiayn.data.download", description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--out", required=True)
    add_settings(parser, "data.mirror and data.lock as JSON (default: the URLs, the shipped lock)")
    parser.add_argument("--retries", type=int, default=5)
    parser.add_argument("--backoff", type=float, default=2.0, help="seconds before the first retry (doubles)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds without data before a retry")
    add_log(parser)
    args = parser.parse_args(argv)
    opts = settings.start(args, DownloadConfig, "data")
    download(args.url, args.out, opts.mirror, opts.lock, args.retries, args.backoff, args.timeout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
