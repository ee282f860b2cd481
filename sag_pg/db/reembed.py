"""Re-embedding a database with another embedder (issue #37 item 6): the SQL calls of
sql/idempotent/075-reembed.sql and the batched, resumable loop around them.

The database serves one embedder (``sag.bind_embedder``).  :func:`reembed` binds the configured one
(``sag.begin_reembed``), then embeds every chunk, event and string key still without a vector in batches, each
batch its own transaction, and ends with ``sag.finish_reembed`` (HNSW indexes, similarity floors).  Interrupted
(Ctrl-C, a crash, an embedding endpoint that went away), it leaves the batches done so far; the next run with
the same embedder continues from there.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import psycopg

from ..errors import EmbedderMismatchError
from .ingest import INDEX_BUILD_TIMEOUT_S

if TYPE_CHECKING:
    from ..embedders.base import Embedder
    from .connection import Database

TABLES = ("chunks", "events", "keys")
DEFAULT_BATCH = 256


def state(conn: psycopg.Connection) -> dict[str, Any] | None:
    """``sag.reembed_state``: the unfinished re-embedding, or None."""
    row = conn.execute("select sag.reembed_state()").fetchone()
    return row[0] if row else None


def begin(conn: psycopg.Connection, name: str, dimension: int, source_ids: Sequence[int] | None) -> dict[str, Any]:
    """``sag.begin_reembed``; its refusals (another run unfinished, some sources only) as EmbedderMismatchError."""
    try:
        with conn.transaction():
            row = conn.execute("select sag.begin_reembed(%s, %s, %s)",
                               [name, dimension, list(source_ids) if source_ids is not None else None]).fetchone()
    except psycopg.errors.InvalidParameterValue as exc:
        hint = f" {exc.diag.message_hint}" if exc.diag.message_hint else ""
        raise EmbedderMismatchError(f"{exc.diag.message_primary or exc}.{hint}") from exc
    assert row is not None
    return dict(row[0])


def pending(conn: psycopg.Connection, table: str, source_ids: Sequence[int] | None, after: tuple[int, int],
            batch: int) -> list[tuple[int, int, str]]:
    """``sag.reembed_pending``: (source_id, id, passage) of the next rows without a vector."""
    rows = conn.execute("select * from sag.reembed_pending(%s, %s, %s, %s, %s)",
                        [table, list(source_ids) if source_ids is not None else None, after[0], after[1], batch])
    return [(int(s), int(i), str(p)) for s, i, p in rows.fetchall()]


def store(conn: psycopg.Connection, table: str, rows: Sequence[tuple[int, int, str]], vectors: Any) -> int:
    """``sag.store_reembedded``: the vectors of ``rows`` (one transaction on an autocommit connection)."""
    row = conn.execute("select sag.store_reembedded(%s, %s, %s, %b)",
                       [table, [r[0] for r in rows], [r[1] for r in rows], list(vectors)]).fetchone()
    return int(row[0]) if row else 0


def remaining(conn: psycopg.Connection, source_ids: Sequence[int] | None) -> dict[str, int]:
    """``sag.reembed_remaining``: rows still without a vector, per table."""
    rows = conn.execute("select * from sag.reembed_remaining(%s)",
                        [list(source_ids) if source_ids is not None else None])
    return {str(t): int(n) for t, n in rows.fetchall()}


def finish(conn: psycopg.Connection) -> dict[str, Any] | None:
    """``sag.finish_reembed``: builds the HNSW indexes (with the index builds' time and memory) and recalibrates."""
    with conn.transaction():
        conn.execute("select set_config('statement_timeout', %s, true), set_config('maintenance_work_mem', greatest("
                     "pg_size_bytes(current_setting('maintenance_work_mem')), 512 * 1024 * 1024) / 1024 || 'kB', "
                     "true)", [f"{INDEX_BUILD_TIMEOUT_S}s"])
        row = conn.execute("select sag.finish_reembed()").fetchone()
    return row[0] if row else None


@dataclass
class ReembedReport:
    embedder: str
    previous: str | None
    resumed: bool
    embedded: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TABLES, 0))
    seconds: float = 0.0


def reembed(database: Database, embedder: Embedder, *, source_ids: Sequence[int] | None = None,
            batch: int = DEFAULT_BATCH, progress: Callable[[str], None] | None = None) -> ReembedReport:
    """Re-embed the chunks, events and string keys of ``source_ids`` (None: every source) with ``embedder``.

    Another embedder than the bound one needs every source (the database serves one).  ``progress`` gets a line
    per batch ("chunks 512/1,204 …").  Resumable: see the module docstring.
    """
    started = time.perf_counter()
    say = progress or (lambda line: None)
    with database.connect(autocommit=True) as conn:
        run = begin(conn, embedder.name, embedder.dimension, source_ids)
        scope = run.get("sources")
        ids = [int(s) for s in scope] if isinstance(scope, list) else None
        report = ReembedReport(embedder.name, (run.get("from") or {}).get("name"), bool(run.get("resumed")))
        todo = remaining(conn, ids)
        total = sum(todo.values())
        if report.resumed:
            say(f"resuming the re-embedding with {embedder.name}: {total:,} rows left")
        else:
            say(f"re-embedding {total:,} chunks, events and keys with {embedder.name} (was {report.previous})")
        done = 0
        for table in TABLES:
            after = (0, 0)
            while rows := pending(conn, table, ids, after, batch):
                vectors = embedder.embed([passage for _, _, passage in rows])
                store(conn, table, rows, vectors)
                report.embedded[table] += len(rows)
                done += len(rows)
                after = (rows[-1][0], rows[-1][1])
                say(f"{table} {report.embedded[table]:,}/{todo.get(table, 0):,}  (all: {done:,}/{total:,})")
        say("building the vector indexes and measuring the embedder's similarity floors…")
        finish(conn)
    report.seconds = time.perf_counter() - started
    return report
