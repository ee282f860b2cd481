"""The schema distributes by source (issue #32, step A): every key, unique constraint and foreign key of a
per-source table holds source_id, so a row can only point at rows of its own source."""

from __future__ import annotations

import psycopg
import pytest

from tests.sql.graph_builder import GraphBuilder

# Tables whose rows belong to one source.  Left out of step A (a clustering run may span sources):
# cluster_runs, clusters, community_reports; cluster_events points at events with their source all the same.
PARENTS = ("documents", "chunks", "events", "keys", "relations", "tags")
LINKS = ("event_keys", "chunk_keys", "relation_events", "key_tags", "recall_stats", "kg_names")
PER_SOURCE = PARENTS + LINKS

_KEYS = """
select c.conrelid::regclass::text, c.conname, c.contype::text,
       array(select a.attname::text from unnest(c.conkey) with ordinality k(n, o)
               join pg_attribute a on a.attrelid = c.conrelid and a.attnum = k.n order by k.o)
  from pg_constraint c
 where c.connamespace = 'sag'::regnamespace and c.contype in ('p', 'u')
   and c.conrelid = any (%s::regclass[])
 order by 1, 2"""
_UNIQUE_INDEXES = """
select i.indrelid::regclass::text, x.relname::text,
       exists (select 1 from unnest(i.indkey) k join pg_attribute a on a.attrelid = i.indrelid and a.attnum = k
                where a.attname = 'source_id')
  from pg_index i join pg_class x on x.oid = i.indexrelid
 where i.indisunique and i.indrelid = any (%s::regclass[])
 order by 1, 2"""
# Each foreign key as pairs (referencing column, referenced column).
_FOREIGN_KEYS = """
select c.conrelid::regclass::text, c.conname, c.confrelid::regclass::text,
       array(select a.attname::text || '->' || b.attname::text
               from unnest(c.conkey, c.confkey) with ordinality k(mine, theirs, o)
               join pg_attribute a on a.attrelid = c.conrelid and a.attnum = k.mine
               join pg_attribute b on b.attrelid = c.confrelid and b.attnum = k.theirs
              order by k.o)
  from pg_constraint c
 where c.contype = 'f' and c.connamespace = 'sag'::regnamespace
 order by 1, 2"""


def _regclasses(names: tuple[str, ...]) -> list[str]:
    return [f"sag.{n}" for n in names]


def test_every_primary_key_and_unique_constraint_of_a_per_source_table_holds_source_id(
        db_conn: psycopg.Connection) -> None:
    rows = db_conn.execute(_KEYS, [_regclasses(PER_SOURCE)]).fetchall()
    primary = {table: columns for table, _, kind, columns in rows if kind == "p"}
    assert sorted(primary) == sorted(f"sag.{t}" for t in PER_SOURCE if t != "kg_names")  # kg_names: no key
    assert [(t, name) for t, name, _, columns in rows if "source_id" not in columns] == []
    for table in PARENTS:
        assert primary[f"sag.{table}"] == ["source_id", "id"]
    assert primary["sag.event_keys"] == ["source_id", "event_id", "key_id"]
    assert primary["sag.recall_stats"] == ["source_id", "document_id"]
    unique = db_conn.execute(_UNIQUE_INDEXES, [_regclasses(PER_SOURCE)]).fetchall()
    assert ("sag.kg_names", "kg_names_unique_idx", True) in unique
    assert [(t, name) for t, name, has_source in unique if not has_source] == []


def test_every_foreign_key_between_per_source_tables_matches_source_id(db_conn: psycopg.Connection) -> None:
    per_source = {f"sag.{t}" for t in PER_SOURCE}
    rows = db_conn.execute(_FOREIGN_KEYS).fetchall()
    into_per_source = [(t, name, target, pairs) for t, name, target, pairs in rows if target in per_source]
    assert sorted((t, target) for t, _, target, _ in into_per_source) == sorted([
        ("sag.chunks", "sag.documents"), ("sag.events", "sag.chunks"), ("sag.events", "sag.documents"),
        ("sag.event_keys", "sag.events"), ("sag.event_keys", "sag.keys"), ("sag.chunk_keys", "sag.chunks"),
        ("sag.chunk_keys", "sag.keys"), ("sag.relations", "sag.keys"), ("sag.relations", "sag.keys"),
        ("sag.relations", "sag.events"), ("sag.relation_events", "sag.relations"),
        ("sag.relation_events", "sag.events"), ("sag.key_tags", "sag.keys"), ("sag.key_tags", "sag.tags"),
        ("sag.recall_stats", "sag.documents"), ("sag.kg_names", "sag.keys"), ("sag.cluster_events", "sag.events"),
        ("sag.key_aliases", "sag.keys"), ("sag.key_aliases", "sag.keys")])
    assert [(t, name, pairs) for t, name, _, pairs in into_per_source if "source_id->source_id" not in pairs] == []
    # Foreign keys of per-source tables to other tables are those to sag.sources (distributed: a reference table).
    others = {(t, target) for t, _, target, _ in rows if t in per_source and target not in per_source}
    assert {target for _, target in others} == {"sag.sources"}


def test_source_id_is_not_null_and_every_parent_keeps_an_index_on_id(db_conn: psycopg.Connection) -> None:
    nullable = db_conn.execute(
        "select c.relname::text from pg_attribute a join pg_class c on c.oid = a.attrelid "
        "where c.oid = any (%s::regclass[]) and a.attname = 'source_id' and not a.attnotnull",
        [_regclasses(PER_SOURCE) + ["sag.cluster_events"]]).fetchall()
    assert nullable == []
    by_id = db_conn.execute(
        "select t.relname::text from pg_index i join pg_class t on t.oid = i.indrelid "
        "join pg_attribute a on a.attrelid = i.indrelid and a.attnum = i.indkey[0] "
        "where t.oid = any (%s::regclass[]) and i.indnatts = 1 and a.attname = 'id' and not i.indisunique "
        "order by 1", [_regclasses(PARENTS)]).fetchall()
    assert sorted(r[0] for r in by_id) == sorted(PARENTS)


def test_a_link_to_a_row_of_another_source_is_refused(db_conn: psycopg.Connection) -> None:
    g = GraphBuilder(db_conn)
    one, two = g.source("one"), g.source("two")
    event = g.event(g.chunk(g.document(one, "d"), "text", None), "text", None)
    theirs = g.key(two, "other")
    mine = g.key(one, "mine")
    g.link(event, mine)
    db_conn.commit()
    for statement, args in [
        ("insert into sag.event_keys (source_id, event_id, key_id) values (%s, %s, %s)", [one, event, theirs]),
        ("insert into sag.event_keys (source_id, event_id, key_id) values (%s, %s, %s)", [two, event, theirs]),
        (("insert into sag.relations (source_id, head_key_id, relation_type, tail_key_id, origin) "
          "values (%s, %s, 'knows', %s, 'call')"), [one, mine, theirs]),

    ]:
        with pytest.raises(psycopg.errors.ForeignKeyViolation):
            db_conn.execute(statement, args)
        db_conn.rollback()
    # Through the functions: one source's key cannot be tagged or related with another's.
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="one source"):
        db_conn.execute("select sag.add_relation(%s, 'knows', %s)", [mine, theirs])
    db_conn.rollback()
    with pytest.raises(psycopg.errors.ForeignKeyViolation):
        db_conn.execute("select sag.add_relation(%s, 'knows', %s, event_id => %s)",
                        [theirs, g.key(two, "third"), event])
