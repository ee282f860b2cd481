"""The Citus pieces of the schema on one PostgreSQL: nothing is distributed, the embedding columns get their
storage when they are typed, and `db upgrade --distributed` refuses a server without Citus."""

from __future__ import annotations

import psycopg
import pytest

from sag_pg.db import distribute, migrate
from sag_pg.db.connection import Database
from sag_pg.errors import DatabaseError

_COLUMNS = """
select c.relname::text, format_type(a.atttypid, a.atttypmod), a.attstorage::text
  from pg_attribute a join pg_class c on c.oid = a.attrelid
 where c.relnamespace = 'sag'::regnamespace and c.relname in ('chunks', 'events', 'keys')
   and a.attname = 'embedding' and not a.attisdropped
 order by 1"""


@pytest.mark.parametrize(("dimension", "storage"), [(8, "p"), (3001, "m")])
def test_the_first_binding_types_the_columns_with_their_storage(db_dsn: str, dimension: int, storage: str) -> None:
    Database(db_dsn).bind_embedder(f"hash-v1:{dimension}", dimension)
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute(_COLUMNS).fetchall() == [
            (t, f"halfvec({dimension})", storage) for t in ("chunks", "events", "keys")]
        # The column was made anew: the keys' check on it is back.
        check = conn.execute("select pg_get_constraintdef(oid) from pg_constraint where conrelid = 'sag.keys'::regclass "
                             "and conname = 'keys_embedding_only_for_strings'").fetchone()
        assert check == ("CHECK (((embedding IS NULL) OR (value_string IS NOT NULL)))",)
        hnsw = conn.execute("select count(*) from pg_indexes where schemaname = 'sag' "
                            "and indexdef like '%USING hnsw%'").fetchone()
    assert hnsw == ((3,) if dimension <= 4000 else (0,))


def test_nothing_is_distributed_on_one_postgresql(db_dsn: str) -> None:
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        assert distribute.citus_version(conn) is None
        assert distribute.is_coordinator(conn) is False
        assert conn.execute("select sag_internal._colocate('sag.documents')").fetchone() == (False,)
        with pytest.raises(DatabaseError, match="not a Citus coordinator"):
            distribute.distribute(conn)
    with pytest.raises(DatabaseError, match="not a Citus coordinator"):
        migrate.upgrade(db_dsn, distributed=True)


def test_every_per_source_table_has_source_id_in_a_key_citus_can_distribute_by(db_dsn: str) -> None:
    """What Citus asks of a distributed table: its primary key and unique constraints include the distribution
    column, and logical replication (a shard move) can identify its rows."""
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("set search_path = pg_catalog, pg_temp")
        tables = distribute.per_source_tables(conn)
        bad = conn.execute("""
            select c.conrelid::regclass::text, c.conname from pg_constraint c
             where c.conrelid = any (%s::regclass[]) and c.contype in ('p', 'u')
               and not exists (select 1 from pg_attribute a where a.attrelid = c.conrelid
                                  and a.attname = 'source_id' and a.attnum = any (c.conkey))""",
                           [[f"sag.{t}" for t in tables]]).fetchall()
        unidentified = conn.execute("""
            select c.oid::regclass::text from pg_class c
             where c.oid = any (%s::regclass[]) and c.relreplident <> 'f'
               and not exists (select 1 from pg_index i where i.indrelid = c.oid and i.indisprimary)""",
                                    [[f"sag.{t}" for t in tables]]).fetchall()
    assert "documents" in tables and "term_stats_pending" in tables and "kg_names" in tables
    assert not set(tables) & set(distribute.COORDINATOR_TABLES)
    assert bad == [] and unidentified == []
