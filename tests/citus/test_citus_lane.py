"""What must hold on the local Citus cluster before sag's schema is distributed on it (the `citus` lane).

A small table distributed by ``source_id`` (8 shards) with an HNSW index stands for sag's per-source tables: a
one-source nearest-neighbour query is routed to one shard, a cross-shard one merges to what a single node
returns, a function distributed by its source argument runs on the worker that holds the source, and a worker
added and rebalanced onto changes no answer.
"""

from __future__ import annotations

import os
import random
import re
from pathlib import Path

import psycopg
import pytest
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from sag_pg.db import citus_local

pytestmark = pytest.mark.citus

SHARDS = 8
SOURCES = range(1, 9)
PER_SOURCE = 20
DIM = 8
TABLE = """create table items (source_id int not null, id bigint not null, embedding vector(8) not null,
                               primary key (source_id, id))"""


def _vec(rng: random.Random) -> str:
    return "[" + ",".join(f"{rng.uniform(-1, 1):.6f}" for _ in range(DIM)) + "]"


def _rows() -> list[tuple[int, int, str]]:
    rng = random.Random(32)
    return [(s, s * 1000 + i, _vec(rng)) for s in SOURCES for i in range(PER_SOURCE)]


def _queries() -> list[str]:
    rng = random.Random(3232)
    return [_vec(rng) for _ in range(5)]


def _fill(conn: psycopg.Connection, *, distributed: bool) -> None:
    conn.execute(TABLE)
    if distributed:
        conn.execute(f"set citus.shard_count = {SHARDS}")
        conn.execute("select create_distributed_table('items', 'source_id')")
    conn.execute("create index items_embedding on items using hnsw (embedding vector_cosine_ops)")
    rows = _rows()
    conn.execute("insert into items select * from unnest(%s::int[], %s::bigint[], %s::vector[])",
                 [[r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]])


def _explain(conn: psycopg.Connection, query: str, params: list[object]) -> str:
    return "\n".join(r[0] for r in conn.execute("explain (costs off) " + query, params).fetchall())


def _task_count(plan: str) -> int:
    found = re.search(r"Task Count: (\d+)", plan)
    assert found, plan
    return int(found.group(1))


def _schema(conn: psycopg.Connection) -> str:
    return str(conn.execute("select current_schema()").fetchone()[0])  # type: ignore[index]


def _on_workers(conn: psycopg.Connection, command: str) -> list[str]:
    """What ``command`` returns on every worker (run_command_on_workers; ``{schema}``: the test's schema)."""
    text = command.format(schema=str(sql.Literal(_schema(conn)).as_string(conn)))
    rows = conn.execute("select success, result from run_command_on_workers(%s)", [text]).fetchall()
    assert all(ok for ok, _ in rows), rows
    return [result for _, result in rows]


NEAREST_ONE = "select id from items where source_id = %s order by embedding <=> %s::vector limit 5"
NEAREST_ALL = "select source_id, id from items order by embedding <=> %s::vector limit 10"


def _cluster_in_home(url: str) -> citus_local.Cluster | None:
    """The cluster that SAG_CITUS_HOME (or SAG_HOME) records, if its coordinator is the one at ``url``."""
    home = os.environ.get("SAG_CITUS_HOME") or os.environ.get("SAG_HOME")
    cluster = citus_local.load(Path(home)) if home else None
    if cluster is None or int(conninfo_to_dict(url).get("port") or 0) != cluster.coordinator.port:
        return None
    return cluster


def test_the_coordinator_sees_every_worker_active(citus: psycopg.Connection, citus_url: str) -> None:
    workers = citus.execute("select nodename, nodeport from pg_dist_node where isactive and noderole = 'primary' "
                            "and groupid <> 0 order by nodeport").fetchall()
    assert len(workers) >= 2
    coordinator = citus.execute("select nodename, nodeport, shouldhaveshards from pg_dist_node "
                                "where groupid = 0").fetchall()
    assert coordinator == [("127.0.0.1", int(conninfo_to_dict(citus_url)["port"]), False)]
    cluster = _cluster_in_home(citus_url)
    if cluster is not None:  # the lane's own cluster: exactly the workers it started
        assert workers == sorted(("127.0.0.1", n.port) for n in cluster.workers)


def test_the_local_nodes_have_sag_pgs_settings_for_their_share_of_memory(citus: psycopg.Connection,
                                                                         citus_url: str) -> None:
    """`sag-pg db cluster start` gives each node the settings the embedded server gets, for RAM / nodes (with
    initdb's 128 MB of shared buffers a 1 M-event shard was searched from the OS cache)."""
    from sag_pg.db import tuning

    cluster = _cluster_in_home(citus_url)
    if cluster is None:
        pytest.skip("not a cluster of `sag-pg db cluster start`: its settings are its operator's")
    wanted = tuning.desired_settings(tuning.ram_bytes() // len(cluster.nodes))
    rows = citus.execute(
        "select result from run_command_on_all_nodes($$select concat_ws(',', "
        "pg_size_bytes(current_setting('shared_buffers')), pg_size_bytes(current_setting('maintenance_work_mem')), "
        "pg_size_bytes(current_setting('max_wal_size')))$$)").fetchall()
    expected = ",".join(str(citus.execute("select pg_size_bytes(%s)", [wanted[name]]).fetchone()[0])  # type: ignore[index]
                        for name in ("shared_buffers", "maintenance_work_mem", "max_wal_size"))
    assert rows == [(expected,)] * len(cluster.nodes)
    assert int(expected.split(",")[0]) > 128 * 2**20  # more than initdb's


def test_citus_vector_and_pg_trgm_are_on_every_node(citus: psycopg.Connection) -> None:
    nodes = citus.execute("select count(*) from pg_dist_node where isactive").fetchone()
    results = citus.execute(
        "select success, result from run_command_on_all_nodes($$select string_agg(extname, ',' order by extname) "
        "from pg_extension where extname in ('citus', 'vector', 'pg_trgm')$$)").fetchall()
    assert nodes is not None and len(results) == nodes[0] >= 3
    assert results == [(True, "citus,pg_trgm,vector")] * len(results)
    versions = citus.execute(
        "select distinct result from run_command_on_all_nodes($$select string_agg(extname || ' ' || extversion, "
        "',' order by extname) from pg_extension$$)").fetchall()
    assert len(versions) == 1, versions


def test_a_one_source_nearest_query_is_one_task_on_one_shard(citus: psycopg.Connection) -> None:
    _fill(citus, distributed=True)
    q = _queries()[0]
    plan = _explain(citus, NEAREST_ONE, [3, q])
    assert "Custom Scan (Citus Adaptive)" in plan
    assert _task_count(plan) == 1
    assert _task_count(_explain(citus, NEAREST_ALL, [q])) == SHARDS
    # The HNSW index was created on every shard (the workers also hold the table's shell, with its index).
    assert _hnsw_shard_indexes(citus) == SHARDS


def test_a_cross_shard_nearest_query_returns_what_one_node_returns(citus: psycopg.Connection,
                                                                   empty_db_dsn: str) -> None:
    _fill(citus, distributed=True)
    with psycopg.connect(empty_db_dsn, autocommit=True) as single:
        single.execute("create extension vector")
        register_vector(single)
        _fill(single, distributed=False)
        single.execute("set hnsw.ef_search = 400")  # the whole table: exact on one node
        for q in _queries():
            expected = single.execute(NEAREST_ALL, [q]).fetchall()
            assert len(expected) == 10
            assert citus.execute(NEAREST_ALL, [q]).fetchall() == expected
            for source in (2, 7):
                assert (citus.execute(NEAREST_ONE, [source, q]).fetchall()
                        == single.execute(NEAREST_ONE, [source, q]).fetchall())


def _distribute_nearest(conn: psycopg.Connection) -> None:
    schema = conn.execute("select current_schema()").fetchone()[0]  # type: ignore[index]
    # No schema in the body: the function's SET search_path must reach the worker that runs it.
    conn.execute(f"""create function nearest(p_source int, q vector, k int) returns setof bigint
                     language sql stable set search_path = {schema}, public
                     as $$ select id from items where source_id = p_source order by embedding <=> q limit k $$""")
    conn.execute("select create_distributed_function('nearest(int, vector, int)', "
                 "distribution_arg_name => 'p_source', colocate_with => 'items')")


def test_a_function_distributed_by_its_source_argument_runs_on_the_worker(citus: psycopg.Connection) -> None:
    _fill(citus, distributed=True)
    _distribute_nearest(citus)
    messages: list[str] = []
    citus.add_notice_handler(lambda diag: messages.append(diag.message_primary or ""))
    q = _queries()[1]
    expected = citus.execute(NEAREST_ONE, [5, q]).fetchall()
    citus.execute("set client_min_messages = debug1")
    got = citus.execute("select * from nearest(5, %s::vector, 5)", [q]).fetchall()
    citus.execute("reset client_min_messages")
    assert "pushing down the function call" in messages, messages
    assert got == expected and len(got) == 5
    config = _on_workers(citus, "select array_to_string(proconfig, ';') from pg_proc where proname = 'nearest' "
                                "and pronamespace = {schema}::regnamespace")
    assert set(config) == {f"search_path={_schema(citus)}, public"}


def _hnsw_shard_indexes(conn: psycopg.Connection) -> int:
    """The HNSW indexes of items' shards on the workers (each worker also holds the table's shell, with its
    index)."""
    per_worker = _on_workers(conn, "select count(*) from pg_indexes where schemaname = {schema} and indexname "
                                   "~ '^items_embedding_[0-9]+$' and indexdef like '%USING hnsw%'")
    return sum(int(r) for r in per_worker)


def _placements(conn: psycopg.Connection) -> dict[int, int]:
    rows = conn.execute("select nodeport, count(*) from citus_shards where table_name = 'items'::regclass "
                        "group by nodeport").fetchall()
    return {int(port): int(n) for port, n in rows}


def _answers(conn: psycopg.Connection) -> list[object]:
    answers: list[object] = []
    for q in _queries():
        answers.append(conn.execute(NEAREST_ALL, [q]).fetchall())
        answers += [conn.execute("select * from nearest(%s, %s::vector, 5)", [s, q]).fetchall() for s in SOURCES]
    return answers


def test_a_worker_added_and_rebalanced_onto_changes_no_answer(citus: psycopg.Connection, citus_url: str) -> None:
    cluster = _cluster_in_home(citus_url)
    if cluster is None:
        pytest.skip("adds a worker: needs SAG_CITUS_HOME (or SAG_HOME) of the cluster at SAG_CITUS_DATABASE_URL")
    _fill(citus, distributed=True)
    _distribute_nearest(citus)
    before, placed = _answers(citus), _placements(citus)
    assert sum(placed.values()) == SHARDS and set(placed) <= {n.port for n in cluster.workers}
    node = citus_local.add_worker(cluster.root.parent)
    try:
        assert _placements(citus) == placed  # nothing moves before the rebalance
        citus.execute("select citus_rebalance_start()")
        citus.execute("select citus_rebalance_wait()")
        moved = _placements(citus)
        assert sum(moved.values()) == SHARDS
        assert moved.get(node.port, 0) >= SHARDS // (len(cluster.workers) + 1)
        # The moved shards came with their HNSW index; their old copies stay until the deferred cleanup.
        citus.execute("call citus_cleanup_orphaned_resources()")
        assert _hnsw_shard_indexes(citus) == SHARDS
        assert _answers(citus) == before
    finally:
        citus_local.remove_worker(cluster.root.parent, node.name)
    assert node.port not in _placements(citus)
    assert _answers(citus) == before
