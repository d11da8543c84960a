"""Where each side of a corpus comes from: a member of an archive, or a plain file of its own.

A source in the config's ``sources`` is one of

- an archive (the WMT layout): ``{url: URL, members: {<task>: {<lang>: <path inside the archive>}}}``;
- plain files, one per side: ``{files: {<lang>: PATH_OR_URL}}``. A file is a local path (relative to
  the working directory) or a ``file://``, ``http://`` or ``https://`` URL; its name says its format:
  ``.gz``, ``.xz`` or ``.bz2`` are decompressed, ``.sgm`` (also compressed) is a WMT SGML test set
  (one ``<seg>`` per line), anything else is text, one sentence per line.

Every file the workflow fetches lands under ``D/downloads/``: an archive as ``<archive file name>``,
a plain file as ``<corpus>/<lang>/<file name>`` (:func:`downloads`), verified by the download stage
against the lock (``aiayn.data.download``). What a source may be, and the checks the config makes of it:
:mod:`aiayn.options.sources`.
"""

from __future__ import annotations

from aiayn.options.sources import archive_name, is_archive

COMPRESSED = (".gz", ".xz", ".bz2")


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
