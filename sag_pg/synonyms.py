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

from collections.abc import Callable
from typing import TYPE_CHECKING

from .db import documents as store
from .db import ingest as ingest_store
from .ingest.readers import DocumentInput
from .text.normalize import normalize_synonyms

if TYPE_CHECKING:
    from .db.connection import Database
    from .ingest.runner import IngestReport

__all__ = ["apply_synonyms"]


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
