"""Where each side of a corpus comes from: a member of an archive, or a plain file of its own.

A source in the config's ``sources`` is one of

- an archive (the WMT layout): ``{url: URL, members: {<task>: {<lang>: <path inside the archive>}}}``;
- plain files, one per side: ``{files: {<lang>: PATH_OR_URL}}``. A file is a local path (relative to
  the working directory) or a ``file://``, ``http://`` or ``https://`` URL; its name says its format:
  ``.gz``, ``.xz`` or ``.bz2`` are decompressed, ``.sgm`` (also compressed) is a WMT SGML test set
  (one ``<seg>`` per line), anything else is text, one sentence per line.

The config checks these without a download (:func:`file_problem`); :mod:`aiayn.data.sources` says
where each lands.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from aiayn.options.core import option

ARCHIVES = (".tar", ".tgz", ".tar.gz", ".tar.xz", ".tar.bz2", ".zip", ".7z")
SCHEMES = ("http", "https", "file")
LANG = "^[a-z]{2}$"


@dataclass(frozen=True)
class Archive:
    """A source that is an archive: its URL and, per task and language, the member's path inside it."""

    url: str = option(help="the archive's URL")
    members: dict[str, dict[str, str]] = option(help="{task: {lang: path inside the archive}}")


@dataclass(frozen=True)
class Files:
    """A source of plain files."""

    files: dict[str, str] = option(
        help="one plain file per language: a local path or a URL (.txt, .gz, .xz, .bz2, .sgm)",
        min_items=1,
        key_pattern=LANG,
        min_length=1,
    )


def archive_name(url: str) -> str:
    """``http://www.statmt.org/wmt14/test-full.tgz`` -> ``test-full.tgz`` (also for local paths)."""
    return Path(urllib.parse.urlparse(url).path).name


def is_archive(source: dict) -> bool:
    """Whether a ``sources`` entry is an archive (``url`` + ``members``) rather than plain files."""
    return "members" in source


def is_local(url: str) -> bool:
    """A local path or a ``file://`` URL (what needs neither a lock entry nor a mirror)."""
    return urllib.parse.urlparse(url).scheme in ("", "file")


def local_path(url: str) -> Path:
    """The path of a local source: ``file:///a/b`` -> ``/a/b``; a plain path as it is."""
    parsed = urllib.parse.urlparse(url)
    return Path(urllib.parse.unquote(parsed.path)) if parsed.scheme == "file" else Path(url)


def file_problem(url: str) -> str | None:
    """Why a plain-file source cannot be read (``None`` if it can): an unknown URL scheme, an archive
    given as a plain file, or a local file that does not exist."""
    scheme = urllib.parse.urlparse(url).scheme
    if len(scheme) > 1 and scheme not in SCHEMES:  # one letter: a Windows drive, a path
        return f"unsupported URL scheme {scheme!r} in {url!r} (a local path, file://, http:// or https://)"
    name = archive_name(url).lower()
    if name.endswith(ARCHIVES):
        return (
            f"{url!r} is an archive, not a plain file: give the source `url` and `members` "
            "(the path of each side inside the archive) instead of `files`"
        )
    if is_local(url) and not local_path(url).is_file():
        return f"no such file {str(local_path(url))!r} (a local path is relative to the working directory)"
    return None
