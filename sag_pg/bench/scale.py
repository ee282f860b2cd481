"""The scale benchmark: a synthetic corpus (:mod:`.synth`) bulk-loaded with binary COPY into a fresh
database, the HNSW indexes built after the load, then fast-search latency against a plain pgvector probe.

Per size: the corpus is first written out as binary COPY files (:mod:`.spool`, timed apart as
``generate_seconds``); then the bulk-load rate (events/s over the COPY of keys, documents, chunks, events and
links, one transaction per batch on ``workers`` connections, with the HNSW and secondary indexes, keys and
foreign keys dropped, as pg_restore loads; adding them back (foreign keys validated), the co-occurrence
relations of the knowledge graph (built once from all the links, as ``sag.rebuild_cooccurrence``), the HNSW
build and ANALYZE are timed apart, as is the whole), the database size, then, after reading every relation once
(:func:`prewarm`), p50/p95 of :func:`sag_pg.search.retrieve` (the fast search: every SQL stage, PageRank
and the hit details) over ``queries`` questions, p50/p95 of ``select id from sag.events order by embedding <=> q limit 10`` for as many
other question vectors, one probe after each search (the floor), the ratio of the p50s, and the Python
process's peak RSS.

A question is built from a random event: the embeddings of up to two of its string keys plus noise
(cosine ~0.6 to each, so ``match_keys`` finds seeds as with a real question), and their names plus three
filler words (stop words included) as tokens.

With ``sources`` > 1 the corpus is split over that many sources (:mod:`.synth`), loaded the same way; every
question is a one-source search: question i asks source ``i mod N`` about one of its events, and the probe
after it asks the same source (``where source_id = s``).  On a Citus coordinator (``SAG_DATABASE_URL``) the
database is made on every node and distributed by ``sag-pg db upgrade`` (:mod:`.database`) before the load;
the size is then reported per node (the coordinator's database, each worker's shards: ``citus_shards``),
with the events each holds.
"""

from __future__ import annotations

import resource
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from queue import Queue
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql

from ..config import Settings
from ..db import graph, migrate, tuning
from ..db.connection import resolve_dsn
from ..dataflow.search import dataflow_search
from ..search.retrieve import retrieve
from .database import CitusNodes, bench_database_name, citus_nodes, temporary_database
from .metrics import percentile
from .spool import Spool, SpoolPart, copy_part, source_names, write_spool
from .synth import SynthConfig

__all__ = ["TARGETS", "ScaleResult", "load", "measure", "run_scale"]

# The issues' targets: fast-search p50 at 1 M events, its ratio to the HNSW probe at every size (issue 5) and
# at 10 k events (issue 12, where fixed costs weigh most), the bulk-load rate.
TARGETS = {"p50_ms_at_1m": 50.0, "ratio": 10.0, "ratio_at_10k": 6.0, "events_per_s": 20_000.0}

Progress = Callable[[str, int, int], None]  # (stage, done, total)

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
_HNSW_INDEXES = """
select x.relname::text
  from pg_index i
  join pg_class x on x.oid = i.indexrelid
  join pg_am am on am.oid = x.relam
 where x.relnamespace = 'sag'::regnamespace and am.amname = 'hnsw'
 order by 1"""
_PROBE = "select id from sag.events order by embedding <=> %b limit 10"
_SOURCE_PROBE = "select id from sag.events where source_id = %b order by embedding <=> %b limit 10"
_QUERY_KEYS = """
select ek.event_id, k.name, k.embedding
  from sag.event_keys ek join sag.keys k on k.source_id = ek.source_id and k.id = ek.key_id
 where ek.source_id = any(%s) and ek.event_id = any(%s) and k.embedding is not null
 order by ek.event_id, k.id"""
# Citus: bytes of every node's shards, and the events of each node (a source's shard is on one node).
_NODE_BYTES = """
select nodename || ':' || nodeport, sum(shard_size)::bigint
  from pg_catalog.citus_shards group by 1 order by 1"""
_SOURCE_EVENTS = "select source_id, count(*) from sag.events group by source_id order by source_id"
_SOURCE_NODE = """
select nodename || ':' || nodeport
  from pg_catalog.citus_shards
 where table_name = 'sag.events'::regclass
   and shardid = pg_catalog.get_shard_id_for_distribution_column('sag.events', %s::bigint)"""


@dataclass
class ScaleResult:
    events: int
    dim: int
    strategy: str = "sag"          # the search timed: sag (sag.retrieve) or dataflow (sag.dataflow_search)
    sources: int = 1               # every search asks one of them, round-robin
    citus_workers: int = 0         # 0: one node
    chunks: int = 0
    keys: int = 0
    event_keys: int = 0
    chunk_keys: int = 0
    generate_seconds: float = 0.0  # the synthetic corpus written to the spool, before the timed load
    spool_bytes: int = 0
    load_seconds: float = 0.0
    index_seconds: float = 0.0   # constraints and secondary (btree, GIN) indexes, after the load
    graph_seconds: float = 0.0   # the co-occurrence relations (knowledge graph), built once after the load
    hnsw_seconds: float = 0.0
    analyze_seconds: float = 0.0
    db_size_bytes: int = 0         # the database on the server (on Citus: the coordinator's, without the shards)
    node_bytes: dict[str, int] = field(default_factory=dict)   # Citus: host:port -> bytes of its shards
    node_events: dict[str, int] = field(default_factory=dict)  # Citus: host:port -> events in its shards
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
        return self.load_seconds + self.index_seconds + self.graph_seconds + self.hnsw_seconds + self.analyze_seconds

    @property
    def ratio(self) -> float:
        return self.search_p50_ms / self.hnsw_p50_ms if self.hnsw_p50_ms else float("inf")

    def to_dict(self) -> dict[str, Any]:
        data = {k: (round(v, 3) if isinstance(v, float) else v) for k, v in asdict(self).items()}
        data["stage_p50_ms"] = {k: round(v, 2) for k, v in self.stage_p50_ms.items()}
        data["events_per_s"] = round(self.events_per_s)
        data["total_events_per_s"] = round(self.events / self.total_seconds) if self.total_seconds else 0
        data["ratio"] = round(self.ratio, 2)
        data["bytes_per_event"] = round(self.db_size_bytes / self.events) if not self.node_bytes else {
            "coordinator": round(self.db_size_bytes / self.events),
            **{node: round(size / self.node_events[node]) if self.node_events.get(node) else None
               for node, size in self.node_bytes.items()}}
        if data["database"] is None:
            del data["database"]
        return data


# ------------------------------------------------------------------------------------------------ load


def _index_memory_mb() -> int:
    """maintenance_work_mem for the index builds after the load: 40 % of RAM.  It is a ceiling:
    sag.create_vector_indexes gives each HNSW graph only what it needs under it."""
    return int(0.4 * tuning.ram_bytes() / 2**20)


def _ddl_connection(dsn: str) -> psycopg.Connection:
    """A connection for the load's schema changes.  On Citus it works over one connection per worker
    (``citus.multi_shard_modify_mode = sequential``): the tables have foreign keys to a reference table, and
    Citus refuses to change them after a parallel operation in the same transaction."""
    conn = psycopg.connect(dsn)
    if citus_nodes(conn) is not None:
        conn.execute("set citus.multi_shard_modify_mode to 'sequential'")
    conn.commit()
    return conn


def _load_rows(dsn: str, spool: Spool, result: ScaleResult, progress: Progress, workers: int) -> None:
    """The keys' files, then the batches' (documents, chunks, events, links), one transaction a part on
    ``workers`` connections side by side."""
    connections: Queue[psycopg.Connection] = Queue()

    def copy(part: SpoolPart) -> None:
        conn = connections.get()
        try:
            copy_part(conn, part)
            conn.commit()
        finally:
            connections.put(conn)

    try:
        for _ in range(workers):
            conn = psycopg.connect(dsn)
            conn.execute("set synchronous_commit = off")
            conn.commit()
            connections.put(conn)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            try:
                list(pool.map(copy, spool.key_parts))  # every key before the links that point at them
                loaded = 0
                for part, _ in zip(spool.batches, pool.map(copy, spool.batches)):
                    loaded += part.events
                    progress("load", loaded, result.events)
            except BaseException:
                pool.shutdown(cancel_futures=True)  # a failed part stops the load: the rest is not sent
                raise
    finally:
        while not connections.empty():
            connections.get().close()


def load(dsn: str, config: SynthConfig, progress: Progress, *, workers: int = 2,
         spool_dir: Path | None = None) -> ScaleResult:
    """Generate the corpus into a spool (timed apart); bind the embedder; drop indexes and constraints; COPY
    the spool; add them back; HNSW; ANALYZE.

    The spool is a temporary directory in ``spool_dir`` (default: the system's), removed once loaded.
    Batches are independent once the keys are in (a batch holds whole documents with their chunks, events
    and links), so ``workers`` connections load them side by side, one transaction per batch.
    """
    result = ScaleResult(events=config.events, dim=config.dim, sources=config.sources)
    with tempfile.TemporaryDirectory(prefix="sag-bench-spool-", dir=spool_dir) as directory:
        started = time.perf_counter()
        spool = write_spool(config, Path(directory), lambda done, total: progress("generate", done, total))
        result.generate_seconds = time.perf_counter() - started
        result.spool_bytes = spool.bytes
        result.keys = spool.keys
        result.chunks = sum(part.chunks for part in spool.batches)
        result.event_keys = sum(part.links for part in spool.batches)

        with _ddl_connection(dsn) as conn:
            conn.execute("select sag.bind_embedder(%s, %s)", [f"hash-v1:{config.dim}", config.dim])
            if citus_nodes(conn) is None:
                conn.execute("select sag.drop_vector_indexes()")
            else:
                # On Citus 14 the SQL function fails once an index exists ("cannot insert multiple commands
                # into a prepared statement" from a worker); a DROP INDEX a statement does the same.
                for (index,) in conn.execute(_HNSW_INDEXES).fetchall():
                    conn.execute(sql.SQL("drop index {}").format(sql.Identifier("sag", index)))
            secondary = conn.execute(_SECONDARY_INDEXES).fetchall()
            for name, _ in secondary:
                conn.execute(sql.SQL("drop index {}").format(sql.Identifier("sag", name)))
            constraints = conn.execute(_CONSTRAINTS).fetchall()  # foreign keys first
            for schema, table, name, _, _ in constraints:
                conn.execute(sql.SQL("alter table {} drop constraint {}").format(
                    sql.Identifier(schema, table), sql.Identifier(name)))
            # COPY queues no BM25 statistics and makes no co-occurrence relation (sag.store_document's steps):
            # both are counted once after the load (an upsert per pair during it: 1.6 k events/s at 1 M against
            # 38 k without).
            with conn.cursor() as cur:
                cur.executemany("insert into sag.sources (id, name) overriding system value values (%s, %s)",
                                source_names(config))
            conn.commit()

        started = time.perf_counter()
        _load_rows(dsn, spool, result, progress, workers)
    with _ddl_connection(dsn) as conn:
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
        conn.execute("select sag.rebuild_term_stats()")
        conn.commit()
        result.index_seconds = time.perf_counter() - started
        started = time.perf_counter()
        conn.autocommit = True  # one top-level call a source: on Citus each runs on the worker holding it
        graph.rebuild_cooccurrence(conn)
        conn.autocommit = False
        result.graph_seconds = time.perf_counter() - started
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
        nodes = citus_nodes(conn)
        if nodes is not None:
            result.citus_workers = len(nodes.workers)
            result.node_bytes = {str(n): int(b) for n, b in conn.execute(_NODE_BYTES).fetchall()}
            for source, events in conn.execute(_SOURCE_EVENTS).fetchall():
                row = conn.execute(_SOURCE_NODE, [source]).fetchone()
                assert row is not None
                result.node_events[str(row[0])] = result.node_events.get(str(row[0]), 0) + int(events)
    return result


# ------------------------------------------------------------------------------------------- measure


def question_events(config: SynthConfig, rng: np.random.Generator, n: int) -> tuple[list[int], list[int]]:
    """(source id, event id) of n questions: random events of the whole corpus for one source, else question
    i about a random event of source ``i mod N``."""
    if config.sources == 1:
        events = rng.choice(config.events, size=n, replace=n > config.events) + 1
        return [config.slices[0].source_id] * n, events.tolist()
    parts = [config.slices[i % config.sources] for i in range(n)]
    return ([p.source_id for p in parts],
            [p.event_start + int(rng.integers(p.events)) for p in parts])


def questions(conn: psycopg.Connection, config: SynthConfig, n: int, *, stream: int = 9
              ) -> list[tuple[npt.NDArray[np.float32], list[str]]]:
    """n (query vector, tokens) pairs, each about a random event (see the module docstring); another
    ``stream`` gives other questions drawn the same way."""
    return [(vector, tokens) for vector, tokens, _ in sourced_questions(conn, config, n, stream=stream)]


def sourced_questions(conn: psycopg.Connection, config: SynthConfig, n: int, *, stream: int = 9
                      ) -> list[tuple[npt.NDArray[np.float32], list[str], int]]:
    """:func:`questions` with the source each asks: (query vector, tokens, source id)."""
    rng = np.random.default_rng([config.seed, stream])
    sources, event_list = question_events(config, rng, n)
    events = np.asarray(event_list, dtype=np.int64)
    by_event: dict[int, list[tuple[str, np.ndarray]]] = {}
    for event_id, name, embedding in conn.execute(_QUERY_KEYS, [sorted(set(sources)), events.tolist()]).fetchall():
        values = embedding.to_numpy() if hasattr(embedding, "to_numpy") else embedding  # pgvector Vector
        by_event.setdefault(int(event_id), []).append((name, np.asarray(values, dtype=np.float32)))
    out = []
    for event_id, source_id in zip(events.tolist(), sources):
        keys = by_event.get(event_id, [])
        picked = [keys[i] for i in rng.permutation(len(keys))[:2]]
        noise = rng.standard_normal(config.dim).astype(np.float32)
        vector = sum((v for _, v in picked), np.zeros(config.dim, dtype=np.float32)) \
            + 0.7 * noise / np.linalg.norm(noise)
        filler = np.searchsorted(config.filler_cdf, rng.random(3), side="right")
        tokens = [name.lower() for name, _ in picked] + [config.filler[min(i, len(config.filler) - 1)] for i in filler]
        out.append(((vector / np.linalg.norm(vector)).astype(np.float32), tokens, source_id))
    return out


_PREWARM = """
select coalesce(sum(pg_prewarm(c.oid, 'read')), 0) * current_setting('block_size')::bigint
  from pg_class c
 where c.relnamespace = 'sag'::regnamespace and c.relkind in ('r', 'i')"""


def prewarm(conn: psycopg.Connection, nodes: CitusNodes | None = None) -> int | None:
    """Read every relation of the sag schema once (pg_prewarm, mode 'read': into the OS cache), so that
    searches are timed on a server whose data has been read before, as after some use, rather than in
    whatever state the load and the index builds left the caches.  Bytes read; None when the pg_prewarm
    extension is not available (then nothing is read).  On Citus (``nodes``) every worker reads its shards
    (the schema sag on a worker holds them) too."""
    if nodes is not None:
        dsn = conn.info.dsn
        read = [prewarm(conn)]
        for worker in nodes.workers:
            worker_dsn = nodes.dsn(dsn, worker, conn.info.dbname)
            with psycopg.connect(worker_dsn, autocommit=True, password=conn.info.password) as node:
                node.execute("set citus.override_table_visibility to off")  # else pg_class hides the shards
                read.append(prewarm(node))
        return None if any(r is None for r in read) else sum(r for r in read if r is not None)
    try:
        # (a Citus worker refuses CREATE EXTENSION, even a no-op: the coordinator's propagated it there)
        if conn.execute("select 1 from pg_extension where extname = 'pg_prewarm'").fetchone() is None:
            conn.execute("create extension pg_prewarm")
    except psycopg.Error:
        if not conn.autocommit:
            conn.rollback()
        return None
    row = conn.execute(_PREWARM).fetchone()
    return int(row[0]) if row else 0


def measure(dsn: str, config: SynthConfig, result: ScaleResult, *, queries: int = 50, warmup: int = 10,
            progress: Progress) -> None:
    """Fast search and the HNSW probe, one of each in turn (after ``warmup`` pairs), into ``result``.

    The data is read once first (:func:`prewarm`).  The probe runs on its own connection with
    ``enable_sort = off`` (as sag's nearest-neighbour functions do), so it is always the HNSW index scan,
    never a sequential scan and sort that the planner may prefer on small tables.

    The probe gets questions of its own, drawn the same way: given the vector the search had just used,
    it walked the graph pages the search's event scan had just brought into the shared buffers, and timed a
    repeated query rather than a new one (1 M events: probe p50 4.8-5.0 ms so, 6.1-7.5 ms with its own
    vectors or run before the search; the search itself the same).
    """
    search = dataflow_search if result.strategy == "dataflow" else retrieve
    with psycopg.connect(dsn, autocommit=True) as conn, psycopg.connect(dsn, autocommit=True) as probe:
        register_vector(conn)
        register_vector(probe)
        probe.execute("set enable_sort = off")
        result.prewarmed_bytes = prewarm(conn, citus_nodes(conn))
        asked = sourced_questions(conn, config, queries + warmup)
        # The probe asks the source the search just asked (one source: the whole table, as before sources).
        probed_with = [vector for vector, _ in questions(conn, config, queries + warmup, stream=10)]
        query, first = (_PROBE, [probed_with[0]]) if config.sources == 1 else (_SOURCE_PROBE,
                                                                                [asked[0][2], probed_with[0]])
        plan = "\n".join(r[0] for r in probe.execute("explain " + query, first).fetchall())
        result.probe_plan = next((line.strip() for line in plan.splitlines() if "Scan" in line), plan)
        search_ms: list[float] = []
        probe_ms: list[float] = []
        stages: dict[str, list[float]] = {}
        for i, ((vector, tokens, source_id), probe_vector) in enumerate(zip(asked, probed_with)):
            started = time.perf_counter()
            found = search(conn, " ".join(tokens), vector, source_ids=[source_id], top_n=10)
            searched = time.perf_counter()
            probe.execute(query, [probe_vector] if config.sources == 1 else [source_id, probe_vector]).fetchall()
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
              spool_dir: Path | None = None, progress: Progress = lambda stage, done, total: None,
              strategy: str = "sag") -> ScaleResult:
    """Load ``config`` into ``sag_bench_scale_<events>_<pid>`` on the configured server and measure it."""
    name = f"scale_{config.events}" + (f"_{config.sources}s" if config.sources > 1 else "")
    with temporary_database(resolve_dsn(settings), name, keep=keep) as dsn:
        migrate.upgrade(dsn)
        result = load(dsn, config, progress, workers=workers, spool_dir=spool_dir)
        result.strategy = strategy
        measure(dsn, config, result, queries=queries, progress=progress)
    result.peak_rss_mb = peak_rss_mb()
    result.database = bench_database_name(name) if keep else None
    return result
