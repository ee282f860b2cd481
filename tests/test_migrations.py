"""Migrations: alembic applies exactly the declared SQL files, idempotently and safely in parallel."""

from __future__ import annotations

import subprocess
import sys
import threading

import psycopg
import pytest

from sag_pg._resources import idempotent_sql_files, sql_dir
from sag_pg.db import migrate, sqlfiles
from sag_pg.db.connection import Database
from sag_pg.errors import EmbedderMismatchError, SchemaVersionError

from .schema_snapshot import snapshot


def _apply_files_by_hand(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        for path in sorted((sql_dir() / "incremental").glob("*.sql")):
            conn.execute(path.read_text())
        schemas = sqlfiles.extension_schemas(conn)  # @extschema:vector@ -> the extension's schema
        for path in idempotent_sql_files():
            conn.execute(sqlfiles.with_extension_schemas(path.read_text(), schemas))


def test_upgrade_on_empty_database_equals_declared_schema(empty_db_dsn: str, db_dsn: str) -> None:
    migrate.upgrade(empty_db_dsn)
    with psycopg.connect(empty_db_dsn) as a:
        by_alembic = snapshot(a)
    # db_dsn is a migrated copy; build a third database from the raw files for the comparison.
    with psycopg.connect(db_dsn) as conn:
        conn.execute("drop schema sag cascade")
        conn.commit()
    _apply_files_by_hand(db_dsn)
    with psycopg.connect(db_dsn) as b:
        by_hand = snapshot(b)
    assert by_alembic["columns"] and by_alembic["functions"]
    assert by_alembic == by_hand


def test_upgrade_twice_is_a_no_op(empty_db_dsn: str) -> None:
    migrate.upgrade(empty_db_dsn)
    with psycopg.connect(empty_db_dsn) as conn:
        first = snapshot(conn)
        conn.execute("insert into sag.sources (name) values ('kept')")
        conn.commit()
    migrate.upgrade(empty_db_dsn)
    with psycopg.connect(empty_db_dsn) as conn:
        assert snapshot(conn) == first
        assert conn.execute("select count(*) from sag.sources where name = 'kept'").fetchone() == (1,)
        assert migrate.schema_status(conn).state is migrate.SchemaState.CURRENT


def test_concurrent_upgrades_leave_one_correct_schema(empty_db_dsn: str, db_conn: psycopg.Connection) -> None:
    # Separate processes, as two `sag-pg` commands would be.
    code = "import sys; from sag_pg.db import migrate; migrate.upgrade(sys.argv[1])"
    procs = [subprocess.Popen([sys.executable, "-c", code, empty_db_dsn], stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    outcomes = [(p.wait(timeout=120), p.communicate()[1]) for p in procs]
    assert [rc for rc, _ in outcomes] == [0, 0, 0], outcomes
    with psycopg.connect(empty_db_dsn) as conn:
        assert snapshot(conn) == snapshot(db_conn)
        assert conn.execute("select count(*) from sag.alembic_version").fetchone() == (1,)


def test_older_schema_is_a_clear_error_naming_the_command(db_dsn: str) -> None:
    with psycopg.connect(db_dsn) as conn:
        conn.execute("update sag.settings set value = '{\"hash\": \"old\"}' where name = 'functions'")
        conn.commit()
    with pytest.raises(SchemaVersionError, match="sag-pg db upgrade"):
        Database(db_dsn)
    migrate.upgrade(db_dsn)
    Database(db_dsn)  # current again


def test_unknown_revision_is_refused(db_dsn: str) -> None:
    with psycopg.connect(db_dsn) as conn:
        conn.execute("update sag.alembic_version set version_num = '9999'")
        conn.commit()
    with pytest.raises(SchemaVersionError, match="9999"):
        Database(db_dsn)


def test_empty_database_is_created_on_first_use(empty_db_dsn: str, capsys: pytest.CaptureFixture[str]) -> None:
    Database(empty_db_dsn)
    assert "creating the schema" in capsys.readouterr().err
    with psycopg.connect(empty_db_dsn) as conn:
        assert migrate.schema_status(conn).state is migrate.SchemaState.CURRENT


def test_embedder_is_bound_once_and_mismatch_is_an_error(db_dsn: str) -> None:
    db = Database(db_dsn)
    db.bind_embedder("hash-v1:8", 8)
    db.bind_embedder("hash-v1:8", 8)  # same again: fine
    with pytest.raises(EmbedderMismatchError, match="hash-v1:8"):
        db.bind_embedder("openai:other:8", 8)
    with pytest.raises(EmbedderMismatchError, match="dimension 8"):
        db.bind_embedder("hash-v1:8", 16)
    with psycopg.connect(db_dsn) as conn:
        typed = conn.execute(
            "select format_type(atttypid, atttypmod) from pg_attribute "
            "where attrelid = 'sag.chunks'::regclass and attname = 'embedding'").fetchone()
        assert typed == ("halfvec(8)",)
        hnsw = conn.execute("select count(*) from pg_indexes where schemaname = 'sag' and indexdef like '%hnsw%'").fetchone()
        assert hnsw == (3,)


_EMBEDDING_COLUMNS = """
select c.relname::text, format_type(a.atttypid, a.atttypmod), a.attstorage::text
  from pg_attribute a join pg_class c on c.oid = a.attrelid
 where c.relnamespace = 'sag'::regnamespace and c.relname in ('chunks', 'events', 'keys') and a.attname = 'embedding'
 order by 1"""
_HNSW = "select indexname::text, indexdef from pg_indexes where schemaname = 'sag' and indexdef like '%hnsw%' order by 1"


def test_0004_turns_a_bound_database_to_halfvec_and_back(empty_db_dsn: str,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    # A database bound and filled under revision 0003: vector(8) columns, PLAIN, vector_cosine_ops indexes.
    from alembic import command
    command.upgrade(migrate.alembic_config(empty_db_dsn), "0003")
    value = [0.1, -0.2, 0.3, 0.0004, 0.5, -0.6, 0.7, 0.8]
    with psycopg.connect(empty_db_dsn) as conn:
        for table in ("chunks", "events", "keys"):
            conn.execute(f"alter table sag.{table} alter column embedding type vector(8)")
            conn.execute(f"alter table sag.{table} alter column embedding set storage plain")
            conn.execute(f"create index {table}_embedding_hnsw on sag.{table} using hnsw (embedding vector_cosine_ops)")
        conn.execute("""insert into sag.settings (name, value)
                        values ('embedder', '{"name": "hash-v1:8", "dimension": 8}')""")
        conn.execute("insert into sag.sources (id, name) overriding system value values (1, 's')")
        conn.execute("""insert into sag.keys (source_id, type, name, normalized, value_string, embedding)
                        values (1, 'topic', 'Kept', 'kept', 'Kept', %s::vector)""", [str(value)])
        conn.commit()

    capsys.readouterr()
    migrate.upgrade(empty_db_dsn)
    # The long step is announced (sag-pg db upgrade shows it); no other server notice is.
    err = capsys.readouterr().err
    assert "sag-pg: storing about" in err and "halfvec(8)" in err and "skipping" not in err
    with psycopg.connect(empty_db_dsn) as conn:
        assert conn.execute(_EMBEDDING_COLUMNS).fetchall() == [
            ("chunks", "halfvec(8)", "p"), ("events", "halfvec(8)", "p"), ("keys", "halfvec(8)", "p")]
        indexes = conn.execute(_HNSW).fetchall()
        assert [name for name, _ in indexes] == ["chunks_embedding_hnsw", "events_embedding_hnsw", "keys_embedding_hnsw"]
        assert all("halfvec_cosine_ops" in definition for _, definition in indexes), indexes
        row = conn.execute("select embedding::real[] from sag.keys where name = 'Kept'").fetchone()
        assert row is not None
        assert row[0] == pytest.approx(value, rel=1e-3)
        assert migrate.schema_status(conn).state is migrate.SchemaState.CURRENT
        # The index serves a query passed as a plain vector (cast implicitly).
        conn.execute("set enable_seqscan = off")
        plan = conn.execute("explain select id from sag.keys order by embedding <=> %s::vector limit 1",
                            [str(value)]).fetchall()
        assert any("keys_embedding_hnsw" in line for (line,) in plan), plan

    command.downgrade(migrate.alembic_config(empty_db_dsn), "0003")
    with psycopg.connect(empty_db_dsn) as conn:
        assert conn.execute(_EMBEDDING_COLUMNS).fetchall() == [
            ("chunks", "vector(8)", "p"), ("events", "vector(8)", "p"), ("keys", "vector(8)", "p")]
        assert conn.execute(_HNSW).fetchall() == []
        row = conn.execute("select embedding::real[] from sag.keys where name = 'Kept'").fetchone()
        assert row is not None and row[0] == pytest.approx(value, rel=1e-3)


def test_upgrades_from_threads_of_one_process_are_serialised(empty_db_dsn: str) -> None:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            migrate.upgrade(empty_db_dsn)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_0006_downgrade_takes_the_graph_and_its_functions(empty_db_dsn: str) -> None:
    from alembic import command

    migrate.upgrade(empty_db_dsn)
    with psycopg.connect(empty_db_dsn) as conn:
        assert conn.execute("select count(*) from pg_proc where pronamespace = 'sag'::regnamespace "
                            "and proname in ('get_related', 'memory_overlap', 'recall')").fetchone() == (3,)
        assert conn.execute("select count(*) from pg_proc where pronamespace = 'sag_internal'::regnamespace "
                            "and proname in ('_overlap', '_cooccur_links')").fetchone() == (2,)
    command.downgrade(migrate.alembic_config(empty_db_dsn), "0004")
    with psycopg.connect(empty_db_dsn) as conn:
        assert conn.execute("select count(*) from pg_proc where pronamespace = 'sag'::regnamespace "
                            "and proname in ('get_related', 'memory_overlap', '_overlap', 'recall', '_cooccur_links')"
                            ).fetchone() == (0,)
        # 0012's downgrade moved the internal functions back into sag and dropped their schema.
        assert conn.execute("select to_regnamespace('sag_internal')").fetchone() == (None,)
        assert conn.execute("select to_regclass('sag.relations'), to_regclass('sag.recall_stats')").fetchone() == \
            (None, None)
        assert conn.execute("select count(*) from pg_attribute where attrelid = 'sag.keys'::regclass "
                            "and attname in ('pinned', 'description')").fetchone() == (0,)


# -- 0015: every per-source key carries source_id (issue #32, step A) ------------------------------------------

_LINKS_0014 = {  # what revision 0014's link tables hold, without source_id
    "event_keys": "select event_id, key_id, count from sag.event_keys order by 1, 2",
    "chunk_keys": "select chunk_id, key_id, count from sag.chunk_keys order by 1, 2",
    "relation_events": "select relation_id, event_id from sag.relation_events order by 1, 2",
    "key_tags": "select key_id, tag_id, relevance from sag.key_tags order by 1, 2",
    "recall_stats": "select document_id, recall_count, total_score from sag.recall_stats order by 1",
    "kg_names": "select key_id, lang, name from sag.kg_names order by 1, 2, 3",
    "cluster_events": "select cluster_id, event_id from sag.cluster_events order by 1, 2",
}
_COUNTED = ("sources", "documents", "chunks", "events", "keys", "event_keys", "chunk_keys", "relations",
            "relation_events", "tags", "key_tags", "recall_stats", "kg_names", "term_stats", "corpus_stats",
            "cluster_runs", "clusters", "cluster_events", "community_reports")


_STATED_EVIDENCE = 2  # the fill's relation_events rows of LLM relations (one a source); the others are co-occurrence
_DERIVED_EVIDENCE = ("select r.id, a.event_id from sag.relations r "
                     "join sag.event_keys a on a.source_id = r.source_id and a.key_id = r.head_key_id "
                     "join sag.event_keys b on b.source_id = r.source_id and b.event_id = a.event_id "
                     "and b.key_id = r.tail_key_id where r.origin = 'cooccurrence'")


def _fill_0014(conn: psycopg.Connection) -> dict[str, dict[int, int]]:
    """Two sources with documents, chunks, events, keys and their links, relations with their evidence, tags,
    recall statistics, KG names and a clustering run with a community report, written with plain INSERTs in
    revision 0014's schema (its functions are not installed below head).  Returns the source of every row
    that a link points at, as this test wrote them: {"event": {id: source}, "chunk": ..., ...}."""
    owner: dict[str, dict[int, int]] = {"event": {}, "chunk": {}, "key": {}, "relation": {}, "tag": {}, "document": {}}

    def one(query: str, args: list[object]) -> int:
        row = conn.execute(query, args).fetchone()
        assert row is not None
        return int(row[0])

    texts = {"alpha": [("ada", "Ada Lovelace wrote the first program for the analytical engine"),
                       ("babbage", "Charles Babbage designed the analytical engine in London")],
             "beta": [("turing", "Alan Turing described the universal machine"),
                      ("lovelace-beta", "Lovelace appears in beta too, with a machine")]}
    for s_n, (source, docs) in enumerate(texts.items()):
        sid = one("insert into sag.sources (name) values (%s) returning id", [source])
        keys: dict[str, int] = {}
        for d_n, (uri, text) in enumerate(docs):
            doc = one("insert into sag.documents (source_id, uri, title, content, content_hash) "
                      "values (%s, %s, %s, %s, md5(%s)) returning id", [sid, uri, uri, text, text])
            owner["document"][doc] = sid
            words = [w.lower() for w in text.split()]
            emb = str([1.0, float(d_n), float(s_n)])
            chunk = one("insert into sag.chunks (document_id, source_id, ordinal, content, start_line, end_line, "
                        "embedding, tokens, token_count) values (%s, %s, 0, %s, 1, 1, %s::halfvec, %s, %s) "
                        "returning id", [doc, sid, text, emb, " ".join(words), len(words)])
            owner["chunk"][chunk] = sid
            for e_n, part in enumerate((words[:4], words[4:])):
                event = one("insert into sag.events (chunk_id, document_id, source_id, ordinal, content, embedding) "
                            "values (%s, %s, %s, %s, %s, %s::halfvec) returning id",
                            [chunk, doc, sid, e_n, " ".join(part), emb])
                owner["event"][event] = sid
                for word in part[:3]:
                    if word not in keys:
                        keys[word] = one("insert into sag.keys (source_id, type, name, normalized, value_string, "
                                         "embedding) values (%s, 'entity', %s, %s, %s, %s::halfvec) returning id",
                                         [sid, word, word, word, emb])
                        owner["key"][keys[word]] = sid
                    conn.execute("insert into sag.event_keys (event_id, key_id, count) values (%s, %s, 1) "
                                 "on conflict do nothing", [event, keys[word]])
            conn.execute("insert into sag.chunk_keys (chunk_id, key_id, count) select e.chunk_id, ek.key_id, "
                         "sum(ek.count) from sag.event_keys ek join sag.events e on e.id = ek.event_id "
                         "where e.chunk_id = %s group by 1, 2", [chunk])
            conn.execute("insert into sag.recall_stats (document_id, recall_count, total_score) values (%s, %s, %s)",
                         [doc, d_n + 1, 0.5 * (d_n + 1)])
        conn.execute("update sag.keys k set event_count = (select count(*) from sag.event_keys ek "
                     "where ek.key_id = k.id) where k.source_id = %s", [sid])
        # Co-occurrence relations with their evidence (what sag_internal._cooccur_links stores) ...
        pairs = conn.execute(
            "select a.key_id, b.key_id, array_agg(a.event_id order by a.event_id) from sag.event_keys a "
            "join sag.event_keys b on b.event_id = a.event_id and b.key_id > a.key_id "
            "join sag.keys k on k.id = a.key_id where k.source_id = %s group by 1, 2 order by 1, 2", [sid]).fetchall()
        for head, tail, events in pairs:
            rel = one("insert into sag.relations (source_id, head_key_id, relation_type, tail_key_id, weight, origin, "
                      "evidence_count) values (%s, %s, 'related_to', %s, %s, 'cooccurrence', %s) returning id",
                      [sid, head, tail, len(events) / (len(events) + 1), len(events)])
            owner["relation"][rel] = sid
            for event in events:
                conn.execute("insert into sag.relation_events (relation_id, event_id) values (%s, %s)", [rel, event])
        # ... a stated one, tags and KG names.
        first, second = sorted(keys.values())[:2]
        rel = one("insert into sag.relations (source_id, head_key_id, relation_type, tail_key_id, weight, origin, "
                  "event_id) values (%s, %s, 'knows', %s, 0.9, 'llm', %s) returning id",
                  [sid, first, second, min(e for e, s in owner["event"].items() if s == sid)])
        owner["relation"][rel] = sid
        conn.execute("insert into sag.relation_events (relation_id, event_id) values (%s, %s)",
                     [rel, min(e for e, s in owner["event"].items() if s == sid)])
        for name in ("science", "history"):
            tag = one("insert into sag.tags (source_id, name) values (%s, %s) returning id", [sid, name])
            owner["tag"][tag] = sid
            conn.execute("insert into sag.key_tags (key_id, tag_id, relevance) values (%s, %s, 0.5)", [first, tag])
        conn.execute("insert into sag.kg_names (key_id, source_id, lang, name) values (%s, %s, 'en', 'First'), "
                     "(%s, %s, 'fr', 'Premier')", [first, sid, first, sid])
    # BM25 statistics as revision 0003 counted them.
    conn.execute("insert into sag.term_stats (term, source_id, df) "
                 "select u.lexeme, c.source_id, count(*) from sag.chunks c, unnest(c.tsv) u group by 1, 2")
    conn.execute("insert into sag.corpus_stats (source_id, chunk_count, token_total) "
                 "select c.source_id, count(*), sum(c.token_count) from sag.chunks c group by 1")
    # A hierarchy over the first source's events, two levels, with a report on the root community.
    alpha = min(owner["event"].values())
    alpha_events = sorted(e for e, s in owner["event"].items() if s == alpha)
    run = one("insert into sag.cluster_runs (source_id, params, event_count, cluster_count) "
              "values (%s, '{\"kind\": \"hierarchy\", \"levels\": 2}', %s, 1) returning id", [alpha, len(alpha_events)])
    root = one("insert into sag.clusters (run_id, level, ordinal, title, size, membership_hash) "
               "values (%s, 0, 0, 'all', %s, 'h0') returning id", [run, len(alpha_events)])
    half = len(alpha_events) // 2
    for ordinal, members in enumerate((alpha_events[:half], alpha_events[half:])):
        child = one("insert into sag.clusters (run_id, level, ordinal, title, size, parent_id, membership_hash) "
                    "values (%s, 1, %s, 'part', %s, %s, %s) returning id",
                    [run, ordinal, len(members), root, f"h1{ordinal}"])
        for event in members:
            conn.execute("insert into sag.cluster_events (cluster_id, event_id) values (%s, %s)", [child, event])
    for event in alpha_events:
        conn.execute("insert into sag.cluster_events (cluster_id, event_id) values (%s, %s)", [root, event])
    conn.execute("insert into sag.community_reports (cluster_id, kind, title, summary, rating, full_content, "
                 "membership_hash) values (%s, 'extractive', 'Engines', 'About engines', 5, 'About engines', 'h0')",
                 [root])
    return owner


def _counts(conn: psycopg.Connection) -> dict[str, int]:
    return {t: conn.execute(f"select count(*) from sag.{t}").fetchone()[0] for t in _COUNTED}  # type: ignore[index]


def test_0015_moves_a_0014_database_to_source_keys_with_nothing_lost(empty_db_dsn: str, db_dsn: str,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from alembic import command

    from .integrity import violations

    command.upgrade(migrate.alembic_config(empty_db_dsn), "0014")
    with psycopg.connect(empty_db_dsn) as conn:
        owner = _fill_0014(conn)
        conn.commit()
        before_counts = _counts(conn)
        before = {t: conn.execute(q).fetchall() for t, q in _LINKS_0014.items()}
    assert all(before_counts[t] > 0 for t in _COUNTED), before_counts

    capsys.readouterr()
    migrate.upgrade(empty_db_dsn)
    err = capsys.readouterr().err  # the long steps are announced
    assert "sag-pg: giving every per-source key its source_id" in err and "validating the composite" in err
    with psycopg.connect(empty_db_dsn) as conn:
        assert migrate.schema_status(conn).state is migrate.SchemaState.CURRENT

        # Every row is there, with the source of the row it points at (as the fill wrote it) ...
        assert _counts(conn) == {**before_counts, "relation_events": _STATED_EVIDENCE}
        after = {t: conn.execute(q).fetchall() for t, q in _LINKS_0014.items()}
        # ... but co-occurrence evidence, derived from the links since 0021 (the events linked to both keys).
        after["relation_events"] = sorted(after["relation_events"] + conn.execute(_DERIVED_EVIDENCE).fetchall())
        assert after == before
        checks = {
            "event_keys": ("select source_id, event_id from sag.event_keys", "event"),
            "chunk_keys": ("select source_id, chunk_id from sag.chunk_keys", "chunk"),
            "relation_events": ("select source_id, relation_id from sag.relation_events", "relation"),
            "relation_events by event": ("select source_id, event_id from sag.relation_events", "event"),
            "key_tags": ("select source_id, key_id from sag.key_tags", "key"),
            "key_tags by tag": ("select source_id, tag_id from sag.key_tags", "tag"),
            "recall_stats": ("select source_id, document_id from sag.recall_stats", "document"),
            "kg_names": ("select source_id, key_id from sag.kg_names", "key"),
            "cluster_events": ("select source_id, event_id from sag.cluster_events", "event"),
        }
        for name, (query, kind) in checks.items():
            rows = conn.execute(query).fetchall()
            assert rows and all(source == owner[kind][row_id] for source, row_id in rows), name
        assert violations(conn) == {}
        # The migrated database has the schema of a fresh one.
        with psycopg.connect(db_dsn) as fresh:
            assert snapshot(conn) == snapshot(fresh)

        # A search of one source finds its documents only; the other source's "lovelace" stays out.
        alpha_search = conn.execute(
            "select document from sag.search('lovelace analytical engine', top_n => 5, source => 'alpha', "
            "query_embedding => '[1, 0, 0]'::vector)").fetchall()
        assert alpha_search and alpha_search[0] == ("ada",)
        assert {d for (d,) in alpha_search} <= {"ada", "babbage"}
        beta_search = conn.execute(
            "select document from sag.search('lovelace', top_n => 5, source => 'beta', "
            "query_embedding => '[1, 1, 1]'::vector)").fetchall()
        assert beta_search[0] == ("lovelace-beta",)

        # Deleting a migrated document takes every row that hangs on it, and nothing of the other source.
        doc = next(d for d, s in owner["document"].items() if s == min(owner["document"].values()))
        events = [e for (e,) in conn.execute("select id from sag.events where document_id = %s", [doc])]
        beta_before = {t: conn.execute(f"select count(*) from sag.{t} where source_id = "
                                       "(select id from sag.sources where name = 'beta')").fetchone()
                       for t in ("documents", "events", "event_keys", "chunk_keys", "relations", "relation_events")}
        assert conn.execute("select sag.delete_document((select source_id from sag.documents where id = %s), %s)", [doc, doc]).fetchone() == (True,)
        assert conn.execute("select count(*) from sag.chunks where document_id = %s", [doc]).fetchone() == (0,)
        assert conn.execute("select count(*) from sag.recall_stats where document_id = %s", [doc]).fetchone() == (0,)
        for table in ("event_keys", "relation_events", "cluster_events"):
            assert conn.execute(f"select count(*) from sag.{table} where event_id = any(%s)",
                                [events]).fetchone() == (0,), table
        assert {t: conn.execute(f"select count(*) from sag.{t} where source_id = "
                                "(select id from sag.sources where name = 'beta')").fetchone()
                for t in beta_before} == beta_before
        conn.execute("select sag.flush_term_stats()")
        assert violations(conn) == {}
        conn.commit()


def test_0015_downgrade_and_upgrade_again(empty_db_dsn: str, db_dsn: str) -> None:
    from alembic import command

    command.upgrade(migrate.alembic_config(empty_db_dsn), "0014")
    with psycopg.connect(empty_db_dsn) as conn:
        _fill_0014(conn)
        conn.commit()
        before = {t: conn.execute(q).fetchall() for t, q in _LINKS_0014.items()}
    migrate.upgrade(empty_db_dsn)
    command.downgrade(migrate.alembic_config(empty_db_dsn), "0014")
    with psycopg.connect(empty_db_dsn) as conn:
        assert {t: conn.execute(q).fetchall() for t, q in _LINKS_0014.items()} == before
        assert conn.execute("select count(*) from pg_attribute where attrelid = 'sag.event_keys'::regclass "
                            "and attname = 'source_id' and not attisdropped").fetchone() == (0,)
        assert conn.execute("select pg_get_constraintdef(oid) from pg_constraint "
                            "where conname = 'events_pkey'").fetchone() == ("PRIMARY KEY (id)",)
    migrate.upgrade(empty_db_dsn)
    with psycopg.connect(empty_db_dsn) as conn, psycopg.connect(db_dsn) as fresh:
        after = {t: conn.execute(q).fetchall() for t, q in _LINKS_0014.items()}
        after["relation_events"] = sorted(after["relation_events"] + conn.execute(_DERIVED_EVIDENCE).fetchall())
        assert after == before
        assert snapshot(conn) == snapshot(fresh)
