"""Where each side of a corpus comes from: a member of an archive, or a plain file of its own.

A source in the config's ``sources`` is one of

- an archive (the WMT layout): ``{url: URL, members: {<task>: {<lang>: <path inside the archive>}}}``;
- plain files, one per side: ``{files: {<lang>: PATH_OR_URL}}``. A file is a local path (relative to
  the working directory) or a ``file://``, ``http://`` or ``https://`` URL; its name says its format:
  ``.gz``, ``.xz`` or ``.bz2`` are decompressed, ``.sgm`` (also compressed) is a WMT SGML test set
  (one ``<seg>`` per line), anything else is text, one sentence per line.

Every file the workflow fetches lands under ``D/downloads/``: an archive as ``<archive file name>``,
a plain file as ``<corpus>/<lang>/<file name>`` (:func:`downloads`), verified by the download stage
against the lock (``aiayn.data.download``).
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path

from aiayn.data.download import archive_name

COMPRESSED = (".gz", ".xz", ".bz2")
ARCHIVES = (".tar", ".tgz", ".tar.gz", ".tar.xz", ".tar.bz2", ".zip", ".7z")
SCHEMES = ("http", "https", "file")


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
        return (f"{url!r} is an archive, not a plain file: give the source `url` and `members` "
                "(the path of each side inside the archive) instead of `files`")
    if is_local(url) and not local_path(url).is_file():
        return f"no such file {str(local_path(url))!r} (a local path is relative to the working directory)"
    return None


def downloads(sources: dict, corpora: list[str] | None = None) -> dict[str, str]:
    """``{path under D/downloads: URL}`` of every archive and plain file of ``sources`` (only
    ``corpora``, when given)."""
    wanted = {}
    for corpus, source in sources.items():
        if corpora is not None and corpus not in corpora:
            continue
        if is_archive(source):
            wanted[archive_name(source["url"])] = source["url"]
        else:
            for lang, url in source["files"].items():
                wanted[f"{corpus}/{lang}/{archive_name(url)}"] = url
    return wanted


def download_path(sources: dict, corpus: str, lang: str) -> str:
    """Where one side of ``corpus`` is downloaded to, under ``D/downloads``: its archive, or its file."""
    source = sources[corpus]
    if is_archive(source):
        return archive_name(source["url"])
    return f"{corpus}/{lang}/{archive_name(source['files'][lang])}"
