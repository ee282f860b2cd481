"""The scale benchmark: a synthetic corpus (:mod:`.synth`) bulk-loaded with binary COPY into a fresh
database, the HNSW indexes built after the load, then fast-search latency against a plain pgvector probe.

Per size: the bulk-load rate (events/s over pass 1, keys, documents, chunks, events and links, one
transaction per batch on ``workers`` connections, with the HNSW and secondary indexes, keys and foreign keys
dropped, as pg_restore loads; adding them back (foreign keys validated), the HNSW build and ANALYZE are
timed apart, as is the whole), the database size, then, after reading every relation once
(:func:`prewarm`), p50/p95 of :func:`sag_pg.search.retrieve` (the fast search: every SQL stage, PageRank
and the hit details) over
``queries`` questions, p50/p95 of ``select id from sag.events order by embedding <=> q limit 10`` for the
same query vectors (the floor), the ratio of the p50s, and the Python process's peak RSS.

A question is built from a random event: the embeddings of up to two of its string keys plus noise
(cosine ~0.6 to each, so ``match_keys`` finds seeds as with a real question), and their names plus three
filler words (stop words included) as tokens.
"""

from __future__ import annotations

import resource
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from queue import Queue
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql

from ..config import Settings
from ..db import migrate, tuning
from ..db.connection import resolve_dsn
from ..search.retrieve import retrieve
from .database import bench_database_name, temporary_database
from .metrics import percentile
from .pgcopy import HEADER, TRAILER, binary_rows
from .synth import Structure, SynthConfig, key_counts, key_rows, make_batch, structures

__all__ = ["TARGETS", "ScaleResult", "load", "measure", "run_scale"]

SOURCE_ID = 1
# The targets: fast-search p50 at 1 M events, its ratio to the HNSW probe, the bulk-load rate.
TARGETS = {"p50_ms_at_1m": 50.0, "ratio": 10.0, "events_per_s": 20_000.0}

Progress = Callable[[str, int, int], None]  # (stage, done, total)
T = TypeVar("T")

_COLUMNS = {
    "documents": ("id", "source_id", "uri", "title", "content", "content_hash"),
    "chunks": ("id", "document_id", "source_id", "ordinal", "start_line", "end_line", "token_count", "embedding",
               "title", "content", "tokens"),
    "events": ("id", "chunk_id", "document_id", "source_id", "ordinal", "embedding", "title", "content"),
    "event_keys": ("event_id", "key_id", "count"),
    "chunk_keys": ("chunk_id", "key_id", "count"),
    "keys": ("id", "source_id", "event_count", "embedding", "type", "name", "normalized", "value_string"),
    "time_keys": ("id", "source_id", "event_count", "value_number", "type", "name", "normalized"),
}
_BATCH_TABLES = ("documents", "chunks", "events", "event_keys", "chunk_keys")
_KEY_TABLES = ("keys", "time_keys")
_KEY_BATCH = 20000
_LOADED = "('documents', 'chunks', 'events', 'keys', 'event_keys', 'chunk_keys')"
# Secondary indexes (neither a constraint's nor HNSW) of the loaded tables: dropped for the load and
# rebuilt after it from their own definitions, as pg_restore does; sorted builds beat row-by-row upkeep
# (the GIN indexes have fastupdate off, so every row would touch the posting trees).
_SECONDARY_INDEXES = f"""
select x.relname::text, pg_get_indexdef(i.indexrelid)
  from pg_index i
  join pg_class t on t.oid = i.indrelid
  join pg_class x on x.oid = i.indexrelid
  join pg_am am on am.oid = x.relam
 where t.relnamespace = 'sag'::regnamespace
   and t.relname in {_LOADED}
   and am.amname <> 'hnsw'
   and not exists (select 1 from pg_constraint c where c.conindid = i.indexrelid)
 order by 1"""
# Primary keys, unique constraints and foreign keys of (or pointing at) the loaded tables: dropped for the
# load and added back after it, as pg_restore does — one sorted build and one validating join each,
# instead of an index insertion and a foreign-key lookup per row (~20 lookups an event).
_CONSTRAINTS = f"""
select n.nspname::text, t.relname::text, c.conname::text, pg_get_constraintdef(c.oid), c.contype::text
  from pg_constraint c
  join pg_class t on t.oid = c.conrelid
  join pg_namespace n on n.oid = t.relnamespace
  left join pg_class f on f.oid = c.confrelid
 where c.contype in ('p', 'u', 'f')
   and ((t.relnamespace = 'sag'::regnamespace and t.relname in {_LOADED})
        or (f.relnamespace = 'sag'::regnamespace and f.relname in {_LOADED}))
 order by c.contype = 'f' desc, 1, 2, 3"""
_PROBE = "select id from sag.events order by embedding <=> %b limit 10"
_QUERY_KEYS = """
select ek.event_id, k.name, k.embedding
  from sag.event_keys ek join sag.keys k on k.id = ek.key_id
 where ek.event_id = any(%s) and k.embedding is not null
 order by ek.event_id, k.id"""


@dataclass
class ScaleResult:
    events: int
    dim: int
    chunks: int = 0
    keys: int = 0
    event_keys: int = 0
    chunk_keys: int = 0
    load_seconds: float = 0.0
    index_seconds: float = 0.0   # constraints and secondary (btree, GIN) indexes, after the load
    hnsw_seconds: float = 0.0
    analyze_seconds: float = 0.0
    db_size_bytes: int = 0
    queries: int = 0
    search_p50_ms: float = 0.0
    search_p95_ms: float = 0.0
    hnsw_p50_ms: float = 0.0
    hnsw_p95_ms: float = 0.0
    stage_p50_ms: dict[str, float] = field(default_factory=dict)
    prewarmed_bytes: int | None = None  # None: pg_prewarm was not available, the caches were as the build left them
    probe_plan: str = ""
    notices: list[str] = field(default_factory=list)  # from the index builds (e.g. pgvector spilling to disk)
    peak_rss_mb: float = 0.0
    database: str | None = None

    @property
    def events_per_s(self) -> float:
        return self.events / self.load_seconds if self.load_seconds else 0.0

    @property
    def total_seconds(self) -> float:
        return self.load_seconds + self.index_seconds + self.hnsw_seconds + self.analyze_seconds

    @property
    def ratio(self) -> float:
        return self.search_p50_ms / self.hnsw_p50_ms if self.hnsw_p50_ms else float("inf")

    def to_dict(self) -> dict[str, Any]:
        data = {k: (round(v, 3) if isinstance(v, float) else v) for k, v in asdict(self).items()}
        data["stage_p50_ms"] = {k: round(v, 2) for k, v in self.stage_p50_ms.items()}
        data["events_per_s"] = round(self.events_per_s)
        data["total_events_per_s"] = round(self.events / self.total_seconds) if self.total_seconds else 0
        data["ratio"] = round(self.ratio, 2)
        if data["database"] is None:
            del data["database"]
        return data


# ------------------------------------------------------------------------------------------------ load


def _batch_payloads(config: SynthConfig, s: Structure) -> dict[str, bytes]:
    batch = make_batch(config, s)
    n_chunks = len(s.chunk_ids)
    source = np.full(n_chunks, SOURCE_ID, dtype=np.int64)
    ids = s.chunk_ids.tolist()
    # chunk_keys: the links summed per (chunk, key), as sag.store_document does.
    universe = config.key_universe + 1
    combos, inverse = np.unique(s.event_chunk[s.link_event - s.event_ids[0]] * universe + s.link_key,
                                return_inverse=True)
    return {
        "documents": binary_rows(
            [("int8", s.chunk_ids), ("int8", source)],
            [[f"synthetic://doc/{i}" for i in ids], [f"Document {i}" for i in ids], batch.chunk_contents,
             [f"{i:x}" for i in ids]]),
        "chunks": binary_rows(
            [("int8", s.chunk_ids), ("int8", s.chunk_ids), ("int8", source), ("int4", np.zeros(n_chunks)),
             ("int4", np.ones(n_chunks)), ("int4", np.ones(n_chunks)), ("int4", batch.chunk_token_counts),
             ("vector", batch.chunk_embeddings)],
            [[""] * n_chunks, batch.chunk_contents, batch.chunk_tokens]),
        "events": binary_rows(
            [("int8", s.event_ids), ("int8", s.event_chunk), ("int8", s.event_chunk),
             ("int8", np.full(len(s.event_ids), SOURCE_ID)), ("int4", s.event_ordinal),
             ("vector", batch.event_embeddings)],
            [batch.event_titles, batch.event_contents]),
        "event_keys": binary_rows([("int8", s.link_event), ("int8", s.link_key), ("int4", s.link_count)]),
        "chunk_keys": binary_rows([("int8", combos // universe), ("int8", combos % universe),
                                   ("int4", np.bincount(inverse, weights=s.link_count))]),
    }


def _key_payloads(config: SynthConfig, ids: npt.NDArray[np.int64], counts: npt.NDArray[np.int64],
                  start: int) -> dict[str, bytes]:
    strings, times = key_rows(config, ids, counts, start)
    return {
        "keys": binary_rows(
            [("int8", strings.ids), ("int8", np.full(len(strings.ids), SOURCE_ID)),
             ("int4", strings.event_counts), ("vector", strings.embeddings)],
            [strings.types, strings.names, [n.lower() for n in strings.names], strings.names]),
        "time_keys": binary_rows(
            [("int8", times.ids), ("int8", np.full(len(times.ids), SOURCE_ID)), ("int4", times.event_counts),
             ("float8", times.ids.astype(np.float64))],
            [times.types, times.names, times.names]),
    }


def _copy(conn: psycopg.Connection, table: str, payload: bytes) -> None:
    target = "keys" if table == "time_keys" else table
    statement = sql.SQL("copy {} ({}) from stdin (format binary)").format(
        sql.Identifier("sag", target), sql.SQL(", ").join(map(sql.Identifier, _COLUMNS[table])))
    with conn.cursor() as cur, cur.copy(statement) as copy:
        copy.write(HEADER + payload + TRAILER)


def _copy_all(connections: Queue[psycopg.Connection], payloads: dict[str, bytes], order: tuple[str, ...]) -> None:
    conn = connections.get()
    try:
        for table in order:
            _copy(conn, table, payloads[table])
        conn.commit()
    finally:
        connections.put(conn)


def _parallel(items: Iterator[T], work: Callable[[T], None], workers: int) -> Iterator[T]:
    """work(item) on ``workers`` threads, at most 2 * workers in flight; yields the items as they finish."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pending: deque[tuple[T, Future[None]]] = deque()
        for item in items:
            pending.append((item, pool.submit(work, item)))
            while len(pending) >= 2 * workers:
                done, future = pending.popleft()
                future.result()
                yield done
        while pending:
            done, future = pending.popleft()
            future.result()
            yield done


def _index_memory_mb() -> int:
    """maintenance_work_mem for the index builds after the load: 40 % of RAM.  It is a ceiling:
    sag.create_vector_indexes gives each HNSW graph only what it needs under it."""
    return int(0.4 * tuning.ram_bytes() / 2**20)


def _load_rows(dsn: str, config: SynthConfig, result: ScaleResult, progress: Progress, workers: int) -> None:
    """Keys first, then the batches (documents, chunks, events, links), one transaction a batch on
    ``workers`` connections side by side, while this thread builds the next payloads (at most
    ``2 * workers`` batches in memory).  Building in a separate process was tried: pickling the payloads
    across cost more than it saved (17.8k against 21-22k events/s at 100 k events)."""
    connections: Queue[psycopg.Connection] = Queue()
    try:
        for _ in range(workers):
            conn = psycopg.connect(dsn)
            conn.execute("set synchronous_commit = off")
            conn.commit()
            connections.put(conn)
        ids, counts = key_counts(config)
        result.keys = len(ids)
        keys = (_key_payloads(config, ids[start:start + _KEY_BATCH], counts[start:start + _KEY_BATCH], start)
                for start in range(0, len(ids), _KEY_BATCH))
        for _ in _parallel(keys, lambda payloads: _copy_all(connections, payloads, _KEY_TABLES), workers):
            pass
        batches = ((s, _batch_payloads(config, s)) for s in structures(config))
        loaded = 0
        for s, _ in _parallel(batches, lambda b: _copy_all(connections, b[1], _BATCH_TABLES), workers):
            loaded += len(s.event_ids)
            result.chunks += len(s.chunk_ids)
            result.event_keys += len(s.link_event)
            progress("load", loaded, config.events)
    finally:
        while not connections.empty():
            connections.get().close()


def load(dsn: str, config: SynthConfig, progress: Progress, *, workers: int = 2) -> ScaleResult:
    """Bind the embedder; drop indexes and constraints; COPY the corpus; add them back; HNSW; ANALYZE.

    Batches are independent once the keys are in (a batch holds whole documents with their chunks, events
    and links), so ``workers`` connections load them side by side, one transaction per batch.
    """
    result = ScaleResult(events=config.events, dim=config.dim)
    with psycopg.connect(dsn) as conn:
        conn.execute("select sag.bind_embedder(%s, %s)", [f"hash-v1:{config.dim}", config.dim])
        conn.execute("select sag.drop_vector_indexes()")
        secondary = conn.execute(_SECONDARY_INDEXES).fetchall()
        for name, _ in secondary:
            conn.execute(sql.SQL("drop index {}").format(sql.Identifier("sag", name)))
        constraints = conn.execute(_CONSTRAINTS).fetchall()  # foreign keys first
        for schema, table, name, _, _ in constraints:
            conn.execute(sql.SQL("alter table {} drop constraint {}").format(
                sql.Identifier(schema, table), sql.Identifier(name)))
        # As pg_restore --disable-triggers: the BM25 statistics are counted once after the load instead.
        conn.execute("alter table sag.chunks disable trigger chunks_queue_term_stats_insert")
        conn.execute("insert into sag.sources (id, name) overriding system value values (%s, 'default')",
                     [SOURCE_ID])
        conn.commit()

    started = time.perf_counter()
    _load_rows(dsn, config, result, progress, workers)
    with psycopg.connect(dsn) as conn:
        for table in ("sources", "documents", "chunks", "events", "keys"):  # later inserts continue after ours
            conn.execute(sql.SQL("select setval(pg_get_serial_sequence({}, 'id'), (select max(id) from {}))")
                         .format(sql.Literal(f"sag.{table}"), sql.Identifier("sag", table)))
        conn.commit()
        result.load_seconds = time.perf_counter() - started

        # pgvector says so (a NOTICE) when an HNSW graph no longer fits in maintenance_work_mem and goes on
        # building on disk, many times more slowly: keep the notices, and give the largest graph room.
        conn.add_notice_handler(lambda diag: result.notices.append(diag.message_primary or ""))
        conn.execute(sql.SQL("set maintenance_work_mem = {}").format(sql.Literal(f"{_index_memory_mb()}MB")))
        progress("index", 0, 2)
        started = time.perf_counter()
        # Keys and unique constraints, the secondary indexes, then the foreign keys (validated here).
        for schema, table, name, definition, kind in reversed(constraints):
            if kind == "f":
                for _, index in secondary:
                    conn.execute(index)
                secondary = []
            conn.execute(sql.SQL("alter table {} add constraint {} {}").format(
                sql.Identifier(schema, table), sql.Identifier(name), sql.SQL(definition)))
        for _, index in secondary:
            conn.execute(index)
        conn.execute("alter table sag.chunks enable trigger chunks_queue_term_stats_insert")
        conn.execute("select sag.rebuild_term_stats()")
        conn.commit()
        result.index_seconds = time.perf_counter() - started
        progress("index", 1, 2)
        started = time.perf_counter()
        conn.execute("select sag.create_vector_indexes()")
        conn.commit()
        result.hnsw_seconds = time.perf_counter() - started
        progress("index", 2, 2)
        started = time.perf_counter()
        conn.execute("analyze")
        conn.commit()
        result.analyze_seconds = time.perf_counter() - started
        row = conn.execute("select count(*), pg_database_size(current_database()) from sag.chunk_keys").fetchone()
        assert row is not None
        result.chunk_keys, result.db_size_bytes = int(row[0]), int(row[1])
    return result


# ------------------------------------------------------------------------------------------- measure


def questions(conn: psycopg.Connection, config: SynthConfig, n: int
              ) -> list[tuple[npt.NDArray[np.float32], list[str]]]:
    """n (query vector, tokens) pairs, each about a random event (see the module docstring)."""
    rng = np.random.default_rng([config.seed, 9])
    events = rng.choice(config.events, size=n, replace=n > config.events) + 1
    by_event: dict[int, list[tuple[str, np.ndarray]]] = {}
    for event_id, name, embedding in conn.execute(_QUERY_KEYS, [events.tolist()]).fetchall():
        values = embedding.to_numpy() if hasattr(embedding, "to_numpy") else embedding  # pgvector Vector
        by_event.setdefault(int(event_id), []).append((name, np.asarray(values, dtype=np.float32)))
    out = []
    for event_id in events.tolist():
        keys = by_event.get(event_id, [])
        picked = [keys[i] for i in rng.permutation(len(keys))[:2]]
        noise = rng.standard_normal(config.dim).astype(np.float32)
        vector = sum((v for _, v in picked), np.zeros(config.dim, dtype=np.float32)) \
            + 0.7 * noise / np.linalg.norm(noise)
        filler = np.searchsorted(config.filler_cdf, rng.random(3), side="right")
        tokens = [name.lower() for name, _ in picked] + [config.filler[min(i, len(config.filler) - 1)] for i in filler]
        out.append(((vector / np.linalg.norm(vector)).astype(np.float32), tokens))
    return out


_PREWARM = """
select coalesce(sum(pg_prewarm(c.oid, 'read')), 0) * current_setting('block_size')::bigint
  from pg_class c
 where c.relnamespace = 'sag'::regnamespace and c.relkind in ('r', 'i')"""


def prewarm(conn: psycopg.Connection) -> int | None:
    """Read every relation of the sag schema once (pg_prewarm, mode 'read': into the OS cache), so that
    searches are timed on a server whose data has been read before, as after some use, rather than in
    whatever state the load and the index builds left the caches.  Bytes read; None when the pg_prewarm
    extension is not available (then nothing is read)."""
    try:
        conn.execute("create extension if not exists pg_prewarm")
    except psycopg.Error:
        if not conn.autocommit:
            conn.rollback()
        return None
    row = conn.execute(_PREWARM).fetchone()
    return int(row[0]) if row else 0


def measure(dsn: str, config: SynthConfig, result: ScaleResult, *, queries: int = 50, warmup: int = 10,
            progress: Progress) -> None:
    """Fast search and the HNSW probe for the same questions (after ``warmup`` others), into ``result``.

    The data is read once first (:func:`prewarm`).  The probe runs on its own connection with
    ``enable_sort = off`` (as sag's nearest-neighbour functions do), so it is always the HNSW index scan,
    never a sequential scan and sort that the planner may prefer on small tables.
    """
    with psycopg.connect(dsn, autocommit=True) as conn, psycopg.connect(dsn, autocommit=True) as probe:
        register_vector(conn)
        register_vector(probe)
        probe.execute("set enable_sort = off")
        result.prewarmed_bytes = prewarm(conn)
        asked = questions(conn, config, queries + warmup)
        plan = "\n".join(r[0] for r in probe.execute("explain " + _PROBE, [asked[0][0]]).fetchall())
        result.probe_plan = next((line.strip() for line in plan.splitlines() if "Scan" in line), plan)
        search_ms: list[float] = []
        probe_ms: list[float] = []
        stages: dict[str, list[float]] = {}
        for i, (vector, tokens) in enumerate(asked):
            started = time.perf_counter()
            found = retrieve(conn, vector, tokens, source_ids=[SOURCE_ID], top_n=10)
            searched = time.perf_counter()
            probe.execute(_PROBE, [vector]).fetchall()
            probed = time.perf_counter()
            if i >= warmup:
                search_ms.append((searched - started) * 1000.0)
                probe_ms.append((probed - searched) * 1000.0)
                for stage, ms in found.timings_ms.items():
                    stages.setdefault(stage, []).append(ms)
                progress("search", i + 1 - warmup, queries)
    result.queries = len(search_ms)
    result.search_p50_ms, result.search_p95_ms = percentile(search_ms, 50), percentile(search_ms, 95)
    result.hnsw_p50_ms, result.hnsw_p95_ms = percentile(probe_ms, 50), percentile(probe_ms, 95)
    result.stage_p50_ms = {stage: percentile(ms, 50) for stage, ms in stages.items() if stage != "total"}


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (ru_maxrss is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run_scale(settings: Settings, config: SynthConfig, *, queries: int = 50, keep: bool = False, workers: int = 2,
              progress: Progress = lambda stage, done, total: None) -> ScaleResult:
    """Load ``config`` into ``sag_bench_scale_<events>_<pid>`` on the configured server and measure it."""
    name = f"scale_{config.events}"
    with temporary_database(resolve_dsn(settings), name, keep=keep) as dsn:
        migrate.upgrade(dsn)
        result = load(dsn, config, progress, workers=workers)
        measure(dsn, config, result, queries=queries, progress=progress)
    result.peak_rss_mb = peak_rss_mb()
    result.database = bench_database_name(name) if keep else None
    return result
