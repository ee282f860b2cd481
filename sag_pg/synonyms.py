"""A source's synonym table (alias → canonical name), applied to stored documents and to questions.

Synonyms act where keys are made: ``ingest`` normalises every extracted key name through the table, so
"BWR" becomes the key "Brightwater Robotics".  Keys stored before the table existed keep their own name:
:func:`apply_synonyms` re-ingests the documents holding such a key (an alias of the table), so their keys
merge into the canonical ones; it costs what ingesting those documents costs (LLM tokens with an LLM
extractor).  A question naming an alias gets the canonical name added (:func:`expand_question`), so the
search finds the canonical key by name and the text by either name.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import psycopg

from .db import documents as store
from .db import ingest as ingest_store
from .db.sources import source_configs
from .ingest.readers import DocumentInput
from .text.normalize import normalize_key, normalize_synonyms

if TYPE_CHECKING:
    from .db.connection import Database
    from .ingest.runner import IngestReport

__all__ = ["apply_synonyms", "expand_question"]

_WORD_RE = re.compile(r"\w[\w.+#&'-]*")
_MAX_ALIAS_WORDS = 4


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


def expand_question(conn: psycopg.Connection, question: str, source_ids: Sequence[int] | None) -> str:
    """``question`` with the canonical name of every alias it names appended ("Where is BWR based?" →
    "Where is BWR based? (Brightwater Robotics)"), using the synonym tables of the sources (None: all)."""
    canonical: dict[str, str] = {}
    for config in source_configs(conn, source_ids):
        for alias, name in (config.get("synonyms") or {}).items():
            canonical.setdefault(normalize_key(str(alias)), str(name))
    canonical.pop("", None)
    if not canonical:
        return question
    words = _WORD_RE.findall(question)
    found: list[str] = []
    for size in range(1, _MAX_ALIAS_WORDS + 1):
        for start in range(len(words) - size + 1):
            name = canonical.get(normalize_key(" ".join(words[start:start + size])))
            if name is not None and name not in found:
                found.append(name)
    if not question.isascii():  # unsegmented scripts (Chinese): an alias is any part of the question
        squeezed = normalize_key(question)
        found += [n for a, n in canonical.items() if not a.isascii() and a in squeezed and n not in found]
    found = [n for n in found if normalize_key(n) not in normalize_key(question)]
    return f"{question} ({'; '.join(found)})" if found else question
