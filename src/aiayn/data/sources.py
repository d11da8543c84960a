"""Where each side of a corpus lands when the workflow fetches it.

A source of the config's ``sources`` is an archive (the WMT layout) or plain files, one per side; their
keys and file formats are defined, and checked without a download, in :mod:`aiayn.options.sources`.

Every file the workflow fetches lands under ``D/downloads/``: an archive as ``<archive file name>``,
a plain file as ``<corpus>/<lang>/<file name>`` (:func:`downloads`), verified by the download stage
against the lock (``aiayn.data.download``).
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
