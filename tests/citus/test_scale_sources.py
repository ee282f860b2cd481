"""`sag-pg bench-scale --sources N` on a Citus coordinator: the bench database is made on every node and distributed,
the multi-source corpus bulk-loads into it, each source lands on one worker, one-source searches stay in their
source, the sizes are reported per node, and the database is gone from every node afterwards."""

from __future__ import annotations

from pathlib import Path

import psycopg
from pgvector.psycopg import register_vector

from sag_pg.bench.database import bench_database_name, citus_nodes, temporary_database
from sag_pg.bench.scale import load, measure, sourced_questions
from sag_pg.bench.synth import SynthConfig
from sag_pg.db import migrate
from sag_pg.search.retrieve import retrieve


def _databases(dsn: str, nodes: object, name: str) -> list[bool]:
    """Whether ``name`` exists on the coordinator and on each worker."""
    assert nodes is not None
    found = []
    for node in (nodes.coordinator, *nodes.workers):  # type: ignore[attr-defined]
        with psycopg.connect(nodes.dsn(dsn, node, "postgres"), autocommit=True) as conn:  # type: ignore[attr-defined]
            found.append(conn.execute("select count(*) from pg_database where datname = %s", [name]).fetchone()
                         == (1,))
    return found


def test_multi_source_bench_database_on_every_node(citus_url: str, tmp_path: Path) -> None:
    config = SynthConfig(events=300, dim=8, batch_chunks=40, sources=3)
    name = "citus_scale_lane"
    dbname = bench_database_name(name)
    with psycopg.connect(citus_url, autocommit=True) as conn:
        nodes = citus_nodes(conn)
    assert nodes is not None and len(nodes.workers) >= 2
    with temporary_database(citus_url, name) as dsn:
        assert _databases(citus_url, nodes, dbname) == [True] * (1 + len(nodes.workers))
        migrate.upgrade(dsn)
        result = load(dsn, config, lambda *a: None, workers=2, spool_dir=tmp_path)
        assert result.citus_workers == len(nodes.workers)
        # Every worker's shards are counted; the events per node add up to the corpus.
        workers = {f"{h}:{p}" for h, p in nodes.workers}
        assert workers <= set(result.node_bytes) and all(result.node_bytes[w] > 0 for w in workers)
        assert sum(result.node_events.values()) == 300 and set(result.node_events) <= workers
        with psycopg.connect(dsn, autocommit=True) as conn:
            register_vector(conn)
            assert conn.execute("select source_id, count(*) from sag.events group by 1 order by 1").fetchall() == [
                (1, 100), (2, 100), (3, 100)]
            assert conn.execute("select count(*) from sag.event_keys x join sag.keys k"
                                " on k.source_id = x.source_id and k.id = x.key_id").fetchone() == (result.event_keys,)
            # Each source's events are in one shard, on a worker: a one-source count is one task (router plan).
            # (Two statements: joined with the citus_shards view in one query, the distributed table gave no row.)
            shards = dict(conn.execute("select shardid, nodename || ':' || nodeport from pg_catalog.citus_shards"
                                       " where table_name = 'sag.events'::regclass").fetchall())
            for source in (1, 2, 3):
                shard = conn.execute("select pg_catalog.get_shard_id_for_distribution_column('sag.events', %s::bigint)",
                                     [source]).fetchone()[0]
                assert shards[shard] in workers
                plan = "\n".join(r[0] for r in conn.execute(
                    "explain select count(*) from sag.events where source_id = %s", [source]).fetchall())
                assert "Task Count: 1" in plan, plan
            for vector, tokens, source in sourced_questions(conn, config, 3):
                found = retrieve(conn, " ".join(tokens), vector, source_ids=[source], top_n=10)
                ids = [hit.chunk_id for hit in found.chunks]
                assert ids
                assert conn.execute("select distinct source_id from sag.chunks where source_id = any(%s)"
                                    " and id = any(%s)", [[1, 2, 3], ids]).fetchall() == [(source,)]
        measure(dsn, config, result, queries=2, warmup=1, progress=lambda *a: None)
        assert result.queries == 2 and result.prewarmed_bytes is not None and result.prewarmed_bytes > 0
    assert _databases(citus_url, nodes, dbname) == [False] * (1 + len(nodes.workers))
