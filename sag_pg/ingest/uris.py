"""How ``ingest`` names a file (its document's URI), and the names a user may give back for it.

A file's URI is its path relative to the current directory when it lies under it ("notes/halvard.md"), else
relative to the parent of the path that was named on the command line (``ingest /data/notes`` gives
"notes/halvard.md" too). So ``sag-pg delete notes/halvard.md`` finds what ``ingest notes/`` stored, and
ingesting a copy of a folder under the same name updates the same documents instead of adding new ones.
Earlier versions stored absolute paths; :func:`candidate_uris` still finds those.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

__all__ = ["candidate_uris", "file_uri"]


def _relative(path: Path, base: Path) -> str | None:
    try:
        return PurePosixPath(path.relative_to(base)).as_posix()
    except ValueError:
        return None


def file_uri(file: Path, named: Path) -> str:
    """The URI of ``file``, found under (or equal to) ``named``, the path given to ``ingest``."""
    resolved = file.resolve()
    inside_cwd = _relative(resolved, Path.cwd().resolve())
    if inside_cwd:
        return inside_cwd
    return _relative(resolved, named.resolve().parent) or resolved.as_posix()


def candidate_uris(given: str) -> list[str]:
    """What a document named ``given`` on the command line may be stored as: the name itself, then (if it is
    an existing file) its URI as ``ingest`` gives it now and its absolute path (older versions)."""
    found = [given]
    path = Path(given)
    if os.path.isfile(path):
        for uri in (file_uri(path, path), path.resolve().as_posix()):
            if uri not in found:
                found.append(uri)
    else:
        normalized = PurePosixPath(given.replace(os.sep, "/")).as_posix().removeprefix("./")
        if normalized not in found:
            found.append(normalized)
    return found
