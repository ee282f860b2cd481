"""Tiny hand-made SAG graphs for the retrieval tests: sources, documents, chunks, events, keys and links.

Embeddings are written by hand (``dimension`` 3 by default, so cosines are easy to work out), e.g.
``(1, 0, 0)`` against a query ``(1, 0, 0)`` has similarity 1, ``(4, 3, 0)`` 0.8, ``(3, 4, 0)`` 0.6 and
``(0, 1, 0)`` 0.  ``link`` keeps ``chunk_keys`` and ``keys.event_count`` right, as ingestion does.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import psycopg

Vec = Sequence[float]


def vec(values: Vec | None) -> str | None:
    """A pgvector literal, for ``%s::vector`` parameters."""
    return None if values is None else "[" + ",".join(repr(float(v)) for v in values) + "]"


class GraphBuilder:
    def __init__(self, conn: psycopg.Connection, *, dimension: int = 3, embedder: str = "test") -> None:
        self.conn = conn
        self.dimension = dimension
        conn.execute("select sag.bind_embedder(%s, %s)", [embedder, dimension])
        self._ordinals: dict[int, int] = {}

    def _one(self, sql: str, args: Sequence[object]) -> int:
        row = self.conn.execute(sql, args).fetchone()  # type: ignore[arg-type]
        assert row is not None
        return int(row[0])

    def source(self, name: str) -> int:
        return self._one("insert into sag.sources (name) values (%s) returning id", [name])

    def document(self, source_id: int, uri: str, title: str = "") -> int:
        return self._one(
            "insert into sag.documents (source_id, uri, title, content, content_hash) "
            "values (%s, %s, %s, '', md5(%s)) returning id",
            [source_id, uri, title, uri],
        )

    def chunk(self, document_id: int, content: str, embedding: Vec | None, *, tokens: Sequence[str] | None = None,
              title: str = "") -> int:
        """A chunk; ``tokens`` default to the lower-cased ``\\w+`` words of ``content``."""
        toks = list(tokens) if tokens is not None else re.findall(r"\w+", content.lower())
        ordinal = self._ordinals.get(document_id, 0)
        self._ordinals[document_id] = ordinal + 1
        chunk_id = self._one(
            "insert into sag.chunks (document_id, source_id, ordinal, title, content, start_line, end_line, "
            "embedding, tokens, token_count) "
            "select %s, d.source_id, %s, %s, %s, 1, 1, %s::vector, %s, %s from sag.documents d where d.id = %s "
            "returning id",
            [document_id, ordinal, title, content, vec(embedding), " ".join(toks), len(toks), document_id],
        )
        # What sag.store_document does for its chunks: queue their lexemes for the BM25 statistics.
        self.conn.execute("insert into sag.term_stats_pending (source_id, sign, token_count, tsv) "
                          "select c.source_id, 1, c.token_count, c.tsv from sag.chunks c where c.id = %s", [chunk_id])
        return chunk_id

    def event(self, chunk_id: int, content: str, embedding: Vec | None) -> int:
        return self._one(
            "insert into sag.events (chunk_id, document_id, source_id, ordinal, content, embedding) "
            "select c.id, c.document_id, c.source_id, "
            "       (select count(*) from sag.events e where e.chunk_id = c.id), %s, %s::vector "
            "  from sag.chunks c where c.id = %s returning id",
            [content, vec(embedding), chunk_id],
        )

    def key(self, source_id: int, name: str, embedding: Vec | None = None, *, type: str = "entity",
            number: float | None = None) -> int:
        """A string key (``number`` None) or a numeric one (no embedding)."""
        return self._one(
            "insert into sag.keys (source_id, type, name, normalized, value_string, value_number, embedding) "
            "values (%s, %s, %s, %s, %s, %s, %s::vector) returning id",
            [source_id, type, name, name.lower(), name if number is None else None, number, vec(embedding)],
        )

    def link(self, event_id: int, key_id: int, count: int = 1) -> None:
        """event_keys row, plus the chunk_keys count and keys.event_count that ingestion maintains."""
        self.conn.execute("insert into sag.event_keys (source_id, event_id, key_id, count) "
                          "select e.source_id, e.id, %s, %s from sag.events e where e.id = %s",
                          [key_id, count, event_id])
        self.conn.execute(
            "insert into sag.chunk_keys (source_id, chunk_id, key_id, count) "
            "select e.source_id, e.chunk_id, %s, %s from sag.events e where e.id = %s "
            "on conflict (source_id, chunk_id, key_id) do update set count = sag.chunk_keys.count + excluded.count",
            [key_id, count, event_id],
        )

        self.conn.execute("update sag.keys set event_count = event_count + 1 where id = %s", [key_id])
        # ... and the co-occurrence relations the new link makes.
        self.conn.execute("select sag_internal._cooccur_links((select source_id from sag.events where id = %s), "
                          "array[%s::bigint], array[%s::bigint])", [event_id, event_id, key_id])

    def links(self, event_id: int, *key_ids: int) -> None:
        for key_id in key_ids:
            self.link(event_id, key_id)
