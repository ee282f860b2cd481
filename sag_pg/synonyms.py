"""A source's synonym table (alias → canonical name), applied to stored documents and to questions.

Synonyms act where keys are made: ``ingest`` normalises every extracted key name through the table, so
"BWR" becomes the key "Brightwater Robotics".  Keys stored before the table existed keep their own name:
:func:`apply_synonyms` re-ingests the documents holding such a key (an alias of the table), so their keys
merge into the canonical ones; it costs what ingesting those documents costs (LLM tokens with an LLM
extractor).  A question naming an alias gets the canonical name added by ``sag.expand_question`` in SQL
(sql/idempotent/032-question.sql), for psql's ``sag.search`` and the Python client alike, so the search finds
the canonical key by name and the text by either name.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .db import documents as store
from .db import ingest as ingest_store
from .errors import InputError
from .ingest.readers import DocumentInput
from .text.normalize import normalize_synonyms

if TYPE_CHECKING:
    from .db.connection import Database
    from .ingest.runner import IngestReport

__all__ = ["apply_synonyms", "check_synonyms", "read_synonyms"]


def read_synonyms(path: str | Path) -> dict[str, str]:
    """The synonym table of a JSON file (an object of alias → canonical name), checked as
    :func:`check_synonyms` does; InputError naming the file for anything else."""
    try:
        table = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (invalid byte at offset {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except ValueError as exc:  # an integer beyond Python's digit limit
        from .limits import json_number_error

        raise InputError(f"{path}: not valid JSON ({json_number_error(exc)})") from None
    except RecursionError:
        raise InputError(f"{path}: not valid JSON (nested too deeply)") from None
    try:
        return check_synonyms(table)
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None


def check_synonyms(table: Any) -> dict[str, str]:
    """``table`` if it maps aliases to canonical names, both non-empty strings that PostgreSQL can store (no
    lone surrogate, no NUL); InputError naming the first entry that does not (a null, a number or an object
    is not a name: it was stored as the string "None")."""
    if not isinstance(table, Mapping):
        raise InputError(f"synonyms must be a JSON object of alias: canonical name, not {_json_type(table)}")
    checked: dict[str, str] = {}
    for alias, name in table.items():
        shown = _shown(alias)
        for what, value in (("alias", alias), ("canonical name", name)):
            if not isinstance(value, str):
                raise InputError(f"synonym {shown}: the {what} must be a string, not {_json_type(value)}")
            if not value.strip():
                raise InputError(f"synonym {shown}: the {what} is empty")
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise InputError(f"synonym {shown}: the {what} holds a lone surrogate "
                                 f"(U+{ord(value[exc.start]):04X}): not valid Unicode") from None
            if "\x00" in value:
                raise InputError(f"synonym {shown}: the {what} holds a NUL character, which PostgreSQL cannot store")
        checked[alias] = name
    return checked


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "an array"
    return type(value).__name__


def _shown(alias: Any) -> str:
    text = str(alias)[:80].encode("unicode_escape").decode("ascii") if isinstance(alias, str) else repr(alias)
    return repr(text) if isinstance(alias, str) else text


def apply_synonyms(db: Database, ingest: Callable[..., IngestReport], source: str) -> list[str]:
    """Re-ingest (with ``ingest``, i.e. ``SAG.ingest``) the documents of ``source`` holding a key named by an
    alias of its synonym table; their uris."""
    from .browse import source_id

    with db.transaction() as conn:
        found = source_id(conn, source)
        table = normalize_synonyms(ingest_store.source_config(conn, found).get("synonyms") or {})
        uris = store.uris_with_keys(conn, found, sorted(table)) if table else []
        docs = store.export_some(conn, found, uris)
        store.mark_stale(conn, found, uris)  # else ingest would skip them as unchanged
    if docs:
        report = ingest([DocumentInput(uri=d.uri, text=d.content, title=d.title, metadata=d.metadata,
                                           origin=d.uri) for d in docs], source=source)
        if report.failed:
            from .errors import InputError

            raise InputError(f"re-ingesting for the synonyms failed: {'; '.join(report.errors)}")
    return [d.uri for d in docs]
