"""sag's own schema on the Citus cluster: `db upgrade` distributes it, ingest and delete give what one node
gives, and a one-source ingest or delete runs whole on the worker that holds the source (the `citus` lane).

The cluster's ``sag`` database is the one sag-pg uses: the module drops its sag schemas first and upgrades it
afresh.  The same corpus (the demo's English and Chinese documents, in three sources) goes into a one-node
database of the test server; rows are compared by content, not by id (Citus numbers identity columns per
node: ``(group << 48) + n``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from sag_pg import SAG, Settings
from sag_pg.db import distribute, migrate
from sag_pg.ingest.readers import document_from_text

DEMO = Path(__file__).resolve().parents[2] / "sag_pg" / "demo" / "docs"
SOURCES = {"tech": DEMO / "tech-company", "kingdoms": DEMO / "three-kingdoms", "both": DEMO}


def _reset(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("set client_min_messages = warning")
        conn.execute("drop schema if exists sag cascade")
        conn.execute("drop schema if exists sag_internal cascade")


def _load(url: str, home: Path) -> SAG:
    sag = SAG(settings=Settings(database_url=url, home=home))
    for source, path in SOURCES.items():
        report = sag.ingest_files([path], source=source)
        assert report.failed == 0, report.errors
    return sag


@pytest.fixture(scope="module")
def clusters(citus_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, SAG]]:
    _reset(citus_url)
    migrate.upgrade(citus_url)
    sag = _load(citus_url, tmp_path_factory.mktemp("citus-home"))
    yield citus_url, sag
    sag.close()
    _reset(citus_url)


@pytest.fixture(scope="module")
def one_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, SAG]]:
    from tests.pg import server_params

    server = server_params()
    name = "sag_citus_parity"
    with psycopg.connect(server.dsn(server.maintenance_db), autocommit=True) as admin:
        admin.execute(f"drop database if exists {name} with (force)")
        admin.execute(f"create database {name}")
    dsn = server.dsn(name)
    sag = _load(dsn, tmp_path_factory.mktemp("one-node-home"))
    yield dsn, sag
    sag.close()
    with psycopg.connect(server.dsn(server.maintenance_db), autocommit=True) as admin:
        admin.execute(f"drop database if exists {name} with (force)")


# What a database holds, by content: documents with their chunks and events, keys with their event counts, the
# event-key links, co-occurrence relations with their evidence, BM25 statistics and the calibration's events.
_CONTENT = {
    "documents": """select s.name, d.uri, d.title, d.content_hash, d.summary from sag.documents d
                    join sag.sources s on s.id = d.source_id order by 1, 2""",
    "chunks": """select s.name, d.uri, c.ordinal, c.content, c.token_count from sag.chunks c
                 join sag.documents d on d.source_id = c.source_id and d.id = c.document_id
                 join sag.sources s on s.id = c.source_id order by 1, 2, 3""",
    "events": """select s.name, d.uri, e.ordinal, e.content, e.event_time from sag.events e
                 join sag.documents d on d.source_id = e.source_id and d.id = e.document_id
                 join sag.sources s on s.id = e.source_id order by 1, 2, 3""",
    "keys": """select s.name, k.type, k.normalized, k.name, k.event_count from sag.keys k
               join sag.sources s on s.id = k.source_id order by 1, 2, 3""",
    "links": """select s.name, e.content, k.type, k.normalized, ek.count from sag.event_keys ek
                join sag.events e on e.source_id = ek.source_id and e.id = ek.event_id
                join sag.keys k on k.source_id = ek.source_id and k.id = ek.key_id
                join sag.sources s on s.id = ek.source_id order by 1, 2, 3, 4""",
    "relations": """select s.name, h.normalized, r.relation_type, t.normalized, r.evidence_count, r.weight
                    from sag.relations r
                    join sag.keys h on h.source_id = r.source_id and h.id = r.head_key_id
                    join sag.keys t on t.source_id = r.source_id and t.id = r.tail_key_id
                    join sag.sources s on s.id = r.source_id order by 1, 2, 3, 4""",
    "aliases": """select s.name, k.normalized, a.normalized, x.origin from sag.key_aliases x
                  join sag.keys k on k.source_id = x.source_id and k.id = x.key_id
                  join sag.keys a on a.source_id = x.source_id and a.id = x.alias_key_id
                  join sag.sources s on s.id = x.source_id order by 1, 2, 3""",
    "term_stats": """select s.name, t.term, t.df from sag.term_stats t join sag.sources s on s.id = t.source_id
                     order by 1, 2""",
    "corpus_stats": """select s.name, c.chunk_count, c.token_total from sag.corpus_stats c
                       join sag.sources s on s.id = c.source_id order by 1""",
    "calibration": """select s.name, (st.value -> s.id::text ->> 'events')::int from sag.settings st, sag.sources s
                      where st.name = 'calibration' order by 1""",
}


def _content(dsn: str) -> dict[str, list[tuple[object, ...]]]:
    with psycopg.connect(dsn) as conn:
        return {name: conn.execute(query).fetchall() for name, query in _CONTENT.items()}  # type: ignore[arg-type]


def test_upgrade_distributes_every_per_source_table_by_source(clusters: tuple[str, SAG]) -> None:
    url, _ = clusters
    with psycopg.connect(url) as conn:
        rows = dict(conn.execute(
            "select logicalrelid::regclass::text, partmethod::text || ':' || coalesce(column_to_column_name("
            "logicalrelid, partkey), '') from pg_dist_partition where logicalrelid::regclass::text like 'sag.%'"
        ).fetchall())
        colocations = conn.execute("select count(distinct colocationid) from pg_dist_partition "
                                   "where partmethod = 'h' and logicalrelid::regclass::text like 'sag.%'").fetchone()
        tables = [t for (t,) in conn.execute("select 'sag.' || relname from pg_class where relkind = 'r' "
                                             "and relnamespace = 'sag'::regnamespace order by 1").fetchall()]
    expected_hash = {"sag.documents", "sag.chunks", "sag.events", "sag.keys", "sag.event_keys", "sag.chunk_keys",
                     "sag.relations", "sag.relation_events", "sag.tags", "sag.key_tags", "sag.kg_names",
                     "sag.recall_stats", "sag.term_stats", "sag.corpus_stats", "sag.term_stats_pending",
                     "sag.key_aliases"}
    assert {t for t, kind in rows.items() if kind == "h:source_id"} == expected_hash
    assert rows["sag.sources"] == rows["sag.settings"] == "n:"  # reference tables
    assert colocations == (1,)  # one co-location group: every join on source_id stays on one worker
    on_coordinator = {"sag.alembic_version", "sag.cluster_runs", "sag.clusters", "sag.cluster_events",
                      "sag.community_reports", "sag.kg_import_rows", "sag.llm_answers"}
    assert set(tables) == expected_hash | {"sag.sources", "sag.settings"} | on_coordinator


def test_custom_plans_are_forced_on_the_coordinator_only(clusters: tuple[str, SAG]) -> None:
    """The coordinator routes sag's statements by their source only with custom plans; on the workers a forced
    custom plan re-planned every foreign-key check against shard statistics that did not know a new source
    (a co-occurrence rebuild of such a source ran quadratic)."""
    url, _ = clusters
    with psycopg.connect(url) as conn:
        assert conn.execute("select current_setting('plan_cache_mode')").fetchone() == ("force_custom_plan",)
        on_workers = conn.execute("select array_agg(result order by nodeport) from run_command_on_workers("
                                  "$$select current_setting('plan_cache_mode')$$)").fetchone()
    assert on_workers is not None and on_workers[0] and set(on_workers[0]) == {"auto"}, on_workers


def test_a_second_upgrade_changes_nothing(clusters: tuple[str, SAG]) -> None:
    url, _ = clusters
    before = _content(url)
    migrate.upgrade(url)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("set search_path = pg_catalog, pg_temp")
        again = distribute.distribute(conn)
    assert not again.changed and again.unenforced == []
    assert _content(url) == before


def test_ingest_stores_what_one_node_stores(clusters: tuple[str, SAG], one_node: tuple[str, SAG]) -> None:
    citus, single = _content(clusters[0]), _content(one_node[0])
    for name in _CONTENT:
        assert len(citus[name]) > 0 or name == "aliases", name
        assert citus[name] == single[name], name


def test_delete_and_replace_leave_what_one_node_leaves(clusters: tuple[str, SAG],
                                                       one_node: tuple[str, SAG]) -> None:
    for dsn, sag in (clusters, one_node):
        with psycopg.connect(dsn) as conn:
            uri = conn.execute("select min(d.uri) from sag.documents d join sag.sources s on s.id = d.source_id "
                               "where s.name = 'both' and d.uri like '%founding.md'").fetchone()[0]  # type: ignore[index]
        assert sag.delete_document(uri, source="both")
        sag.ingest_text("Halvard Systems moved to Bergen in 2031. Ines Okafor still leads it.",
                        uri="halvard-news.md", source="tech")
    citus, single = _content(clusters[0]), _content(one_node[0])
    for name in _CONTENT:
        assert citus[name] == single[name], name


def _pushed_down(url: str, statement: str, params: list[object]) -> tuple[list[str], list[tuple[object, ...]]]:
    messages: list[str] = []
    with psycopg.connect(url, autocommit=True) as conn:
        conn.add_notice_handler(lambda diag: messages.append(diag.message_primary or ""))
        conn.execute("set client_min_messages = debug1")
        rows = conn.execute(statement, params).fetchall()  # type: ignore[arg-type]
    return messages, rows


def test_a_one_source_delete_runs_whole_on_the_worker_that_holds_the_source(clusters: tuple[str, SAG]) -> None:
    url, sag = clusters
    sag.ingest_text("A note to delete, about Bergen.", uri="delete-me.md", source="kingdoms")
    with psycopg.connect(url) as conn:
        source, doc = conn.execute("select d.source_id, d.id from sag.documents d join sag.sources s "
                                   "on s.id = d.source_id where s.name = 'kingdoms' and d.uri = 'delete-me.md'"
                                   ).fetchone()  # type: ignore[misc]
    messages, rows = _pushed_down(url, "select sag.delete_document(%s, %s)", [source, doc])
    assert rows == [(True,)]
    assert "pushing down the function call" in messages, messages


def test_a_one_source_ingest_runs_whole_on_the_worker_that_holds_the_source(clusters: tuple[str, SAG]) -> None:
    from sag_pg.db import ingest as store
    from sag_pg.ingest.prepare import DocumentPreparer

    _, sag = clusters
    prepared = DocumentPreparer(sag.embedder, sag.extractor()).prepare(
        document_from_text("Ines Okafor opened an office in Tromsø.", uri="tromso.md", origin="tromso.md"))
    messages: list[str] = []
    with sag.db.connect(autocommit=True) as conn:
        source = conn.execute("select id from sag.sources where name = 'tech'").fetchone()[0]  # type: ignore[index]
        conn.add_notice_handler(lambda diag: messages.append(diag.message_primary or ""))
        conn.execute("set client_min_messages = debug1")
        store.ingest_document(conn, source, prepared, store.KeyAlignment())
        conn.execute("reset client_min_messages")
        stored = conn.execute("select count(*) from sag.documents where source_id = %s and uri = 'tromso.md'",
                              [source]).fetchone()
    assert stored == (1,)
    assert "pushing down the function call" in messages, messages


def test_a_cooccurrence_rebuild_runs_on_the_workers_and_rebuilds_what_one_node_rebuilds(
        clusters: tuple[str, SAG], one_node: tuple[str, SAG]) -> None:
    from sag_pg.db import graph

    # The test runs after the others: the rebuild must give back exactly what ingests and deletes left.
    before = _content(clusters[0])["relations"]
    messages: list[str] = []
    with psycopg.connect(clusters[0], autocommit=True) as conn:
        sources = conn.execute("select count(*) from sag.sources").fetchone()[0]  # type: ignore[index]
        conn.add_notice_handler(lambda diag: messages.append(diag.message_primary or ""))
        conn.execute("set client_min_messages = debug1")
        rebuilt = graph.rebuild_cooccurrence(conn)
    assert messages.count("pushing down the function call") == sources, messages
    after = _content(clusters[0])["relations"]
    assert after == before  # what the ingests and deletes left is what a rebuild makes
    with psycopg.connect(clusters[0]) as conn:
        assert conn.execute("select count(*) from sag.relations where origin = 'cooccurrence'"
                            ).fetchone() == (rebuilt,) and rebuilt > 0
        # psql's all-sources form, a loop on the coordinator: the same relations
        assert conn.execute("select sag.rebuild_cooccurrence()").fetchone() == (rebuilt,)
    assert _content(clusters[0])["relations"] == before
    # One node (other tests of this module write to the cluster only): its rebuild changes nothing either.
    single = _content(one_node[0])["relations"]
    one_node[1].graph.rebuild_cooccurrence()
    assert _content(one_node[0])["relations"] == single


def test_status_names_the_nodes_and_where_each_source_lives(clusters: tuple[str, SAG]) -> None:
    from sag_pg.db.status import database_status

    url, _ = clusters
    with psycopg.connect(url, autocommit=True) as conn:
        citus = database_status(conn)["citus"]
        placement = dict(conn.execute(
            "select s.name, n.nodename || ':' || n.nodeport from sag.sources s "
            "join pg_dist_placement p on p.shardid = get_shard_id_for_distribution_column('sag.keys', s.id) "
            "join pg_dist_node n on n.groupid = p.groupid").fetchall())
    assert citus["distributed"] is True
    workers = {f"{n['name']}:{n['port']}" for n in citus["nodes"] if n["group"] != 0}
    assert len(workers) >= 2 and all(n["shards"] > 0 for n in citus["nodes"] if n["group"] != 0)
    # Where status says a source lives is where its keys' shard is placed (co-location), on a worker.
    assert {s["source"]: s["node"] for s in citus["sources"]} == placement
    assert set(placement) == set(SOURCES) and set(placement.values()) <= workers
    assert all(s["group_bytes"] > 0 for s in citus["sources"])


def test_a_role_granted_one_source_reads_only_it_on_every_worker(clusters: tuple[str, SAG]) -> None:
    """The per-source policies (migration 0020) hold on the shards: the workers evaluate them."""
    from psycopg import sql

    url, _ = clusters
    role = "citus_lane_analyst"
    query = "select s.name, count(*) from sag.documents d join sag.sources s on s.id = d.source_id group by 1"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("drop role if exists {}").format(sql.Identifier(role)))
        # The coordinator reaches the workers as the role: it logs in there with the password Citus keeps.
        conn.execute(sql.SQL("create role {} login password 'lane-only'").format(sql.Identifier(role)))
        conn.execute("delete from pg_dist_authinfo where rolename = %s", [role])
        conn.execute("insert into pg_dist_authinfo (nodeid, rolename, authinfo) values (0, %s, 'password=lane-only')",
                     [role])
        conn.execute(sql.SQL("grant usage on schema sag, sag_internal to {}").format(sql.Identifier(role)))
        # (one connection per node: the grant reaches the coordinator tables that have a foreign key to a
        # reference table too, which Citus refuses to change after a parallel operation; README)
        conn.execute("set citus.multi_shard_modify_mode to 'sequential'")
        conn.execute(sql.SQL("grant select on all tables in schema sag to {}").format(sql.Identifier(role)))
        conn.execute("reset citus.multi_shard_modify_mode")
        every = sorted(conn.execute(query).fetchall())
        conn.execute("select sag.grant_source('kingdoms', %s)", [role])
        try:
            conn.execute(sql.SQL("set role {}").format(sql.Identifier(role)))
            restricted = sorted(conn.execute(query).fetchall())
            chunks = conn.execute("select count(distinct source_id) from sag.chunks").fetchone()
        finally:
            conn.execute("reset role")
            conn.execute("select sag.revoke_source('kingdoms', %s)", [role])
            conn.execute("delete from pg_dist_authinfo where rolename = %s", [role])
            conn.execute(sql.SQL("drop owned by {}").format(sql.Identifier(role)))
            conn.execute(sql.SQL("drop role {}").format(sql.Identifier(role)))
    assert len(every) == len(SOURCES)
    assert restricted == [r for r in every if r[0] == "kingdoms"] and chunks == (1,)


def test_a_bulk_load_rebuilds_the_vector_indexes_on_the_workers(clusters: tuple[str, SAG]) -> None:
    """`ingest --bulk` drops the HNSW indexes, loads and builds them again: on Citus too (it dropped the three
    in one command, which Citus refuses for distributed objects)."""
    url, sag = clusters
    report = sag.ingest([document_from_text(f"Bulk note {i} about the harbour of Bergen and its ferries.",
                                            uri=f"bulk-{i}.md", origin=f"bulk-{i}.md") for i in range(30)],
                        source="kingdoms", bulk=True)
    assert report.failed == 0, report.errors
    with psycopg.connect(url) as conn:
        stored = conn.execute("select count(*) from sag.documents where uri like 'bulk-%'").fetchone()
        indexes = conn.execute("select count(*) from pg_indexes where schemaname = 'sag' "
                               "and indexname like '%_embedding_hnsw'").fetchone()
        on_workers = conn.execute("select count(distinct result) from run_command_on_workers("
                                  "$$select count(*) from pg_indexes where schemaname = 'sag' "
                                  "and indexname like '%embedding_hnsw%'$$) where success").fetchone()
    assert stored == (30,)
    assert indexes == (3,)  # the distributed tables' indexes, by their names on the coordinator
    assert on_workers is not None and on_workers[0] >= 1


def test_psql_drops_and_rebuilds_the_vector_indexes(clusters: tuple[str, SAG]) -> None:
    """`select sag.drop_vector_indexes()` from psql (a reembed calls it too) where the indexes exist: as a
    SQL-language function its three DROPs reached the workers as one prepared statement, which they refuse."""
    url, _ = clusters
    count = ("select count(*) from pg_indexes where schemaname = 'sag' and indexname like '%_embedding_hnsw'")
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute(count).fetchone() == (3,)
        conn.execute("select sag.drop_vector_indexes()")
        assert conn.execute(count).fetchone() == (0,)
        conn.execute("select sag.create_vector_indexes()")
        assert conn.execute(count).fetchone() == (3,)


def test_the_vector_indexes_are_built_with_the_callers_memory_on_the_workers(clusters: tuple[str, SAG]) -> None:
    """Each shard's HNSW graph is built on its worker: with the worker's own maintenance_work_mem (here 1 MB,
    PostgreSQL's least) it spilled to disk, many times slower, whatever the caller allowed."""
    url, sag = clusters
    report = sag.ingest([document_from_text(f"Harbourmaster Aurelio{i} met pilot Benedikt{i} in Kvitnes{i}.",
                                            uri=f"memory-{i}.md", origin=f"memory-{i}.md") for i in range(400)],
                        source="memory", bulk=True)
    assert report.failed == 0, report.errors
    notices: list[str] = []
    with psycopg.connect(url, autocommit=True) as conn:
        dbname = conn.info.dbname
        conn.execute(f"alter database {dbname} set maintenance_work_mem = '1MB'")  # Citus sets it on every node
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.add_notice_handler(lambda diag: notices.append(diag.message_primary or ""))
            conn.execute("set client_min_messages = debug1")  # Citus relays the workers' notices as DEBUG1
            conn.execute("select sag.drop_vector_indexes()")
            with conn.transaction():
                conn.execute("set local maintenance_work_mem = '256MB'")
                assert conn.execute("select sag.create_vector_indexes()").fetchone() == (3,)
            on_workers = conn.execute("select array_agg(result) from run_command_on_workers("
                                      "$$select current_setting('maintenance_work_mem')$$)").fetchone()
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"alter database {dbname} reset maintenance_work_mem")
    assert on_workers == (["1MB", "1MB"],)  # the setting the builds had to overcome
    assert not [n for n in notices if "no longer fits into maintenance_work_mem" in n], notices


def test_the_cli_searches_the_distributed_schema(clusters: tuple[str, SAG], tmp_path: Path) -> None:
    """`sag-pg search` on a coordinator: the answer, no error (parity with one node: test_search_parity)."""
    import os
    import subprocess
    import sys

    url, _ = clusters
    env = {**os.environ, "SAG_DATABASE_URL": url, "SAG_HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "sag_pg", "search", "Who did Jobs recruit from PepsiCo?",
                           "--source", "tech"], env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("1. ") and "John Sculley" in done.stdout, done.stdout


def test_a_worker_added_and_rebalanced_onto_during_reads_and_writes_changes_nothing(
        clusters: tuple[str, SAG]) -> None:
    """A third worker joins and shards move while one-source reads, a search and an ingest loop run: no error,
    every read and search sees what it saw before (and after), and the database holds what it held plus what
    was written meanwhile."""
    import threading

    from sag_pg.db import citus_local
    from tests.citus.test_citus_lane import _cluster_in_home

    url, sag = clusters
    cluster = _cluster_in_home(url)
    if cluster is None:
        pytest.skip("adds a worker: needs SAG_CITUS_HOME (or SAG_HOME) of the cluster at SAG_CITUS_DATABASE_URL")
    read = ("select s.name, count(*), sum(length(d.content)), sum(c.token_count) from sag.documents d "
            "join sag.sources s on s.id = d.source_id join sag.chunks c on c.source_id = d.source_id "
            "and c.document_id = d.id where d.source_id = %s and d.uri not like 'during-%%' group by s.name")
    # and a search of a source no one writes to (the answers of sag.search, scores included)
    search = "select document, content, score from sag.search('Who founded Halvard Systems?', source => 'tech')"
    with psycopg.connect(url) as conn:
        sources = [i for (i,) in conn.execute("select id from sag.sources order by id").fetchall()]
        expected = {i: conn.execute(read, [i]).fetchall() for i in sources}
        answer = conn.execute(search).fetchall()
    assert answer
    before = _content(url)
    errors: list[str] = []
    reads = writes = searches = 0
    stop = threading.Event()

    def reader() -> None:
        nonlocal reads, searches
        with psycopg.connect(url, autocommit=True) as conn:
            while not stop.is_set():
                for i in sources:
                    try:
                        got = conn.execute(read, [i]).fetchall()
                    except psycopg.Error as exc:
                        errors.append(f"read {i}: {exc}")
                        continue
                    if got != expected[i]:
                        errors.append(f"read {i}: {got} != {expected[i]}")
                    reads += 1
                try:
                    found = conn.execute(search).fetchall()
                except psycopg.Error as exc:
                    errors.append(f"search: {exc}")
                    continue
                if found != answer:
                    errors.append(f"search: {found} != {answer}")
                searches += 1

    def writer() -> None:
        nonlocal writes
        while not stop.is_set():
            try:
                sag.ingest_text(f"Note {writes} about the move of Halvard Systems.", uri=f"during-{writes}.md",
                                source="kingdoms")
                writes += 1
            except Exception as exc:  # noqa: BLE001 - every failure is what the test reports
                errors.append(f"write {writes}: {exc}")

    threads = [threading.Thread(target=reader), threading.Thread(target=writer)]
    for t in threads:
        t.start()
    node = citus_local.add_worker(cluster.root.parent)
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("select citus_rebalance_start()")
            conn.execute("select citus_rebalance_wait()")
            conn.execute("call citus_cleanup_orphaned_resources()")
            on_new = conn.execute("select count(*) from citus_shards where nodeport = %s and table_name::text "
                                  "like 'sag.%%'", [node.port]).fetchone()
        stop.set()
        for t in threads:
            t.join()
        assert errors == []
        assert reads > 0 and writes > 0 and searches > 0
        with psycopg.connect(url) as conn:
            assert conn.execute(search).fetchall() == answer  # after the move too
        assert on_new is not None and on_new[0] > 0
        after = _content(url)
        during = {f"during-{n}.md" for n in range(writes)}
        assert {r[1] for r in after["documents"] if r[0] == "kingdoms"} - {
            r[1] for r in before["documents"] if r[0] == "kingdoms"} == during
        for name in ("documents", "chunks", "events"):
            assert [r for r in after[name] if not str(r[1]).startswith("during-")] == before[name], name
    finally:
        stop.set()
        for t in threads:
            t.join()
        citus_local.remove_worker(cluster.root.parent, node.name)
