"""The SQL calls of ingestion: one typed function per SQL function in sql/idempotent/020-ingest.sql (storing) and
023-document-delete.sql (deleting)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import psycopg
from psycopg.types.json import Jsonb

from ..limits import check_name
from ..types import KeyRef, PreRetrieval

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..ingest.prepare import PreparedDocument, PreparedPart, StreamedDocument


@dataclass(frozen=True)
class KeyAlignment:
    """Thresholds for converging a new key on an existing one (None disables that test)."""

    trigram: float | None = 0.9
    vector: float | None = None
    across_types: bool = True


# Vector parameters are sent in binary (%b): formatting 512 floats as text costs ~0.3 ms a vector,
# which at ~25 vectors a document was most of ingestion's client-side time.


def ensure_source(conn: psycopg.Connection, name: str) -> int:
    check_name("source name", name)  # InputError: a name with a newline, control or bidi character
    row = conn.execute("select sag.ensure_source(%s)", [name]).fetchone()
    assert row is not None
    return int(row[0])


def source_config(conn: psycopg.Connection, source_id: int) -> dict:  # type: ignore[type-arg]
    row = conn.execute("select config from sag.sources where id = %s", [source_id]).fetchone()
    return dict(row[0]) if row else {}


def document_hashes(conn: psycopg.Connection, source_id: int) -> dict[str, str]:
    rows = conn.execute("select uri, content_hash from sag.documents where source_id = %s", [source_id])
    return dict(rows.fetchall())


def delete_document(conn: psycopg.Connection, source_id: int, uri: str) -> bool:
    # Two statements: on Citus a function that writes distributed tables is not called from a query reading them.
    found = conn.execute("select id from sag.documents where source_id = %s and uri = %s", [source_id, uri]).fetchone()
    row = conn.execute("select sag.delete_document(%s, %s)", [source_id, found[0]]).fetchone() if found else None
    deleted = bool(row and row[0])
    if deleted:
        flush_term_stats(conn)
    return deleted


def flush_term_stats(conn: psycopg.Connection, *, attempts: int = 4) -> int:
    """Fold the queued chunk changes into the BM25 statistics (exact either way; this keeps the queue short).

    On an autocommit connection a deadlock is retried (the flush is one transaction, rolled back whole): on
    Citus a flush can meet a shard being moved to another worker in a distributed deadlock."""
    for attempt in range(1, attempts + 1):
        try:
            row = conn.execute("select sag.flush_term_stats()").fetchone()
            return int(row[0]) if row else 0
        except psycopg.errors.DeadlockDetected:
            if not conn.autocommit or attempt == attempts:
                raise
    raise AssertionError("unreachable")


def pre_retrieve(conn: psycopg.Connection, source_id: int, event_embedding: object, *, direct_k: int = 10,
                 similar_n: int = 3) -> PreRetrieval:
    row = conn.execute("select sag.pre_retrieve(%b, %s, %s, %s)",
                       [event_embedding, source_id, direct_k, similar_n]).fetchone()
    data = row[0] if row else {}
    return PreRetrieval(
        direct_keys=[KeyRef(k["type"], k["name"]) for k in data.get("direct_keys", [])],
        keys_from_events=[KeyRef(k["type"], k["name"]) for k in data.get("keys_from_events", [])],
        key_types=list(data.get("key_types", [])),
    )


def _part_params(part: PreparedPart) -> list[object]:
    """The chunk, event, key and link arrays of one part, in the order of sag.add_document_part."""
    from ..text.tokenize import tokens_to_text

    chunks, events, keys = part.chunks, part.events, part.keys
    return [
        [c.title for c in chunks], [c.content for c in chunks], [c.start_line for c in chunks],
        [c.end_line for c in chunks], list(part.chunk_embeddings),
        [tokens_to_text(t) for t in part.chunk_tokens], [len(t) for t in part.chunk_tokens],
        part.event_chunk_ordinals, [e.title for e in events], [e.content for e in events],
        [e.time for e in events], list(part.event_embeddings),
        [k.type for k in keys], [k.name for k in keys], [k.normalized for k in keys],
        [k.value_string for k in keys], [k.value_number for k in keys], [k.value_bool for k in keys],
        part.key_embeddings,
        [e for e, _, _ in part.links], [k + 1 for _, k, _ in part.links], [n for _, _, n in part.links],
    ]


_PART_PLACEHOLDERS = ("%s, %s, %s, %s, %b, %s, %s, %s, %s, %s, %s::timestamptz[], %b,"
                      " %s, %s, %s, %s, %s, %s, %b, %s, %s, %s")


def ingest_document(conn: psycopg.Connection, source_id: int, prepared: PreparedDocument,
                    alignment: KeyAlignment) -> int:
    """Resolve the keys and store the document in one statement: on an autocommit connection that is one
    round trip and one transaction per document.  For a document that fits in one part (see
    :func:`store_in_parts` for the others)."""
    doc = prepared.doc
    row = conn.execute(
        f"select sag.ingest_document(%s, %s, %s, %s, %s, %s, %s, %s, %s, {_PART_PLACEHOLDERS}, %s, %s, %s)",
        [source_id, doc.uri, doc.title, doc.text, prepared.content_hash, prepared.summary, Jsonb(doc.metadata),
         prepared.prompt_tokens, prepared.completion_tokens, *_part_params(prepared.as_part()),
         alignment.trigram, alignment.vector, alignment.across_types],
    ).fetchone()
    assert row is not None
    return int(row[0])


_ANALYZE_GROWN = "analyze sag.keys, sag.events, sag.event_keys, sag.chunks, sag.relations, sag.relation_events"


def store_in_parts(conn: psycopg.Connection, source_id: int, head: PreparedDocument | StreamedDocument,
                   parts: Iterable[PreparedPart], alignment: KeyAlignment) -> int:
    """Store a document part by part in one transaction (sag.begin_document, sag.add_document_part for each
    part as it comes, sag.finish_document): neither side ever holds more than one part's rows, and a failure
    or a crash anywhere leaves nothing of the document.  ``conn`` must be outside a transaction."""
    doc = head.doc
    with conn.transaction():
        row = conn.execute(
            "select document_id, old_key_ids, old_key_deltas from sag.begin_document("
            "%s, %s, %s, %s, %s, %s, %s, %s, %s, lock_source => true)",
            [source_id, doc.uri, doc.title, doc.text, head.content_hash, head.summary, Jsonb(doc.metadata),
             head.prompt_tokens, head.completion_tokens]).fetchone()
        assert row is not None
        document_id, old_ids, old_deltas = row
        for number, part in enumerate(parts, start=1):
            conn.execute(f"select sag.add_document_part(%s, %s, %s, %s, {_PART_PLACEHOLDERS}, %s, %s, %s)",
                         [source_id, document_id, part.chunk_offset, part.event_offset, *_part_params(part),
                          alignment.trigram, alignment.vector, alignment.across_types])
            if number & (number - 1) == 0:
                # The rows written so far have doubled: fresh statistics (ANALYZE counts this transaction's rows),
                # else plans made when the tables were small keep scanning what has grown since (every key of a
                # type for each key looked up, every link of the source for each part: quadratic).
                conn.execute(_ANALYZE_GROWN)
        conn.execute("select sag.finish_document(%s, %s, %s, %s)", [source_id, document_id, old_ids, old_deltas])
    return int(document_id)


# -- the writer's session and bulk loads -----------------------------------------------------------------


def writer_session(conn: psycopg.Connection, *, async_commit: bool = False) -> None:
    """Durable by default: every document's commit waits for its WAL to reach the disk, whatever the server's
    default, so a document reported stored survives a server crash (issue #36).  ``async_commit`` (opt-in,
    ``SAG_ASYNC_COMMIT``) does not wait: a crash may lose the last ~0.6 s of commits; atomicity is unaffected."""
    conn.execute("select pg_catalog.set_config('synchronous_commit', %s, false)", ["off" if async_commit else "on"])


def document_count(conn: psycopg.Connection) -> int:
    """Documents of every source (the vector indexes are shared by all sources)."""
    row = conn.execute("select count(*) from sag.documents").fetchone()
    return int(row[0]) if row else 0


def stored_text_bytes(conn: psycopg.Connection) -> int:
    """Bytes of the stored documents' text, all sources (what the shared vector indexes hold rows of)."""
    row = conn.execute("select coalesce(sum(octet_length(content)), 0) from sag.documents").fetchone()
    return int(row[0]) if row else 0


# Index builds take minutes on millions of rows: their one statement gets this ceiling instead of the session's.
INDEX_BUILD_TIMEOUT_S = 3600


def begin_bulk_load(conn: psycopg.Connection, *, wait_seconds: float) -> int:
    """``sag.begin_bulk_load``: join the bulk loads in progress and drop the HNSW indexes (searches meanwhile
    scan exactly); how many it dropped.  ``conn`` must stay open until :func:`finish_bulk_load`."""
    row = conn.execute("select sag.begin_bulk_load(wait_seconds => %s)", [wait_seconds]).fetchone()
    return int(row[0]) if row else 0


def finish_bulk_load(conn: psycopg.Connection) -> int:
    """``sag.finish_bulk_load``: the last load to end builds the indexes, with at least 512 MB for the HNSW
    graphs (a server configured with more keeps its own); -1 when another load still runs."""
    with conn.transaction():
        _allow_index_build(conn)
        row = conn.execute("select sag.finish_bulk_load()").fetchone()
    return int(row[0]) if row else 0


def missing_vector_indexes(conn: psycopg.Connection) -> int:
    """``sag.missing_vector_indexes``: how many HNSW indexes a bulk load (running or dead) left missing."""
    row = conn.execute("select sag.missing_vector_indexes()").fetchone()
    return int(row[0]) if row else 0


def repair_vector_indexes(conn: psycopg.Connection) -> int:
    """``sag.repair_vector_indexes``: a writer builds the indexes a dead bulk load left missing."""
    with conn.transaction():
        _allow_index_build(conn)
        row = conn.execute("select sag.repair_vector_indexes()").fetchone()
    return int(row[0]) if row else 0


def _allow_index_build(conn: psycopg.Connection) -> None:
    conn.execute("select set_config('statement_timeout', %s, true), set_config('maintenance_work_mem', greatest("
                 "pg_size_bytes(current_setting('maintenance_work_mem')), 512 * 1024 * 1024) / 1024 || 'kB', true)",
                 [f"{INDEX_BUILD_TIMEOUT_S}s"])


def set_key_types(conn: psycopg.Connection, source_id: int, key_types: dict[str, float]) -> None:
    """Give a source its key types (type -> weight)."""
    conn.execute("update sag.sources set config = config || jsonb_build_object('key_types', %s::jsonb) "
                 "where id = %s", [Jsonb(key_types), source_id])


def analyze(conn: psycopg.Connection) -> None:
    """Fresh planner statistics for the tables ingestion grows (cached plans otherwise keep scanning)."""
    conn.execute("analyze sag.keys, sag.events, sag.event_keys, sag.chunks, sag.chunk_keys, sag.documents")
