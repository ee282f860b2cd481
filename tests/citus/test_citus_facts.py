"""Citus 14 facts that sag's distributed schema is built on (the `citus` lane): what distributes, what is refused,
where generated ids come from, which settings reach the worker that runs a query or a function.

Each test states one fact as observed on the local cluster; a Citus upgrade that changes one shows up here.
"""

from __future__ import annotations

import psycopg
import pytest

pytestmark = pytest.mark.citus

# Citus numbers a sequence's values on a worker from (its group id << 48) + 1 upwards.
WORKER_RANGE = 1 << 48


def _error(conn: psycopg.Connection, statement: str) -> str:
    with pytest.raises(psycopg.Error) as info:
        conn.execute(statement)
    return info.value.diag.message_primary or ""


def _path(conn: psycopg.Connection) -> str:
    """The SET clause that lets a function's body name the test's tables without their schema, on the workers
    too (a worker checks an SQL function's body under its own search_path: see the test below)."""
    return f"set search_path = {conn.execute('select current_schema()').fetchone()[0]}, public"  # type: ignore[index]


def _sources(conn: psycopg.Connection) -> None:
    conn.execute("create table sources (id int primary key, name text not null)")
    conn.execute("select create_reference_table('sources')")
    conn.execute("insert into sources select i, 's' || i from generate_series(1, 8) i")


def test_an_identity_column_distributes_but_a_foreign_key_must_come_after(citus: psycopg.Connection) -> None:
    _sources(citus)
    citus.execute("set citus.shard_count = 4")
    citus.execute("""create table events (source_id int not null references sources, id bigint generated always as
                     identity, body text, primary key (source_id, id))""")
    assert _error(citus, "select create_distributed_table('events', 'source_id')") == \
        "cannot complete operation on a table with identity column"
    citus.execute("drop table events")
    citus.execute("""create table events (source_id int not null, id bigint generated always as identity,
                     body text, primary key (source_id, id))""")
    citus.execute("select create_distributed_table('events', 'source_id')")
    citus.execute("alter table events add foreign key (source_id) references sources")
    # From the coordinator: 1, 2, …; in a function call pushed down to a worker: the worker's own range.
    ids = citus.execute("insert into events (source_id, body) values (1, 'a'), (2, 'b') returning id").fetchall()
    assert sorted(ids) == [(1,), (2,)]
    citus.execute(f"""create function add_event(p_source int, p_body text) returns bigint language sql
                      {_path(citus)} as $$ insert into events (source_id, body) values (p_source, p_body)
                      returning id $$""")
    citus.execute("select create_distributed_function('add_event(int, text)', distribution_arg_name => 'p_source',"
                  " colocate_with => 'events')")
    on_worker = citus.execute("select add_event(3, 'c')").fetchone()[0]  # type: ignore[index]
    group = citus.execute("select groupid from pg_dist_placement p join pg_dist_shard s using (shardid) where "
                          "s.logicalrelid = 'events'::regclass and get_shard_id_for_distribution_column("
                          "'events', 3) = s.shardid").fetchone()[0]  # type: ignore[index]
    assert on_worker == group * WORKER_RANGE + 1
    assert _error(citus, "insert into events (source_id, body) values (9, 'no such source')").startswith(
        "insert or update on table \"events_")


def test_an_int_identity_takes_no_value_on_a_worker(citus: psycopg.Connection) -> None:
    citus.execute("create table small (source_id int not null, id int generated always as identity, "
                  "primary key (source_id, id))")
    citus.execute("select create_distributed_table('small', 'source_id')")
    citus.execute(f"""create function add_small(p_source int) returns int language sql {_path(citus)}
                      as $$ insert into small (source_id) values (p_source) returning id $$""")
    citus.execute("select create_distributed_function('add_small(int)', distribution_arg_name => 'p_source', "
                  "colocate_with => 'small')")
    assert _error(citus, "select add_small(1)").startswith("nextval: reached maximum value of sequence")


def test_what_create_distributed_table_and_alter_table_refuse(citus: psycopg.Connection) -> None:
    citus.execute("create table t (source_id int not null, id bigint not null, e vector(3), "
                  "primary key (source_id, id))")
    citus.execute("create function touch() returns trigger language plpgsql as $$ begin return new; end $$")
    citus.execute("create trigger touch before insert on t for each row execute function touch()")
    assert _error(citus, "select create_distributed_table('t', 'source_id')") == \
        'cannot distribute relation "t" because it has triggers'
    citus.execute("drop trigger touch on t")
    citus.execute("select create_distributed_table('t', 'source_id')")
    assert _error(citus, "alter table t alter column e set storage plain") == \
        "alter table command is currently unsupported"
    citus.execute("create table u (source_id int not null, id bigint not null unique)")
    assert _error(citus, "select create_distributed_table('u', 'source_id')") == 'cannot create constraint on "u"'


def test_a_join_on_another_column_than_the_source_needs_repartitioning(citus: psycopg.Connection) -> None:
    citus.execute("create table a (source_id int not null, id bigint not null, primary key (source_id, id))")
    citus.execute("create table b (source_id int not null, a_id bigint not null, primary key (source_id, a_id))")
    citus.execute("select create_distributed_table('a', 'source_id')")
    citus.execute("select create_distributed_table('b', 'source_id', colocate_with => 'a')")
    assert "requires repartitioning" in _error(citus, "select count(*) from a join b on b.a_id = a.id")
    assert citus.execute("select count(*) from a join b on b.source_id = a.source_id and b.a_id = a.id"
                         ).fetchone() == (0,)


def test_a_transaction_writing_to_both_workers_commits(citus: psycopg.Connection) -> None:
    citus.execute("create table w (source_id int not null, id bigint not null, primary key (source_id, id))")
    citus.execute("select create_distributed_table('w', 'source_id')")
    with citus.transaction():
        for source in range(1, 9):
            citus.execute("insert into w values (%s, 1)", [source])
    nodes = citus.execute("select count(distinct nodeport) from citus_shards s join w on "
                          "get_shard_id_for_distribution_column('w', w.source_id) = s.shardid").fetchone()
    assert nodes is not None and nodes[0] >= 2  # the transaction wrote on two workers or more
    assert citus.execute("select count(*) from w").fetchone() == (8,)


def test_which_settings_reach_the_worker(citus: psycopg.Connection) -> None:
    """A session SET stays on the coordinator; a function's SET clause, and a SET LOCAL with
    citus.propagate_set_commands = 'local', reach the worker (and so would ALTER DATABASE … SET, which Citus
    propagates, not tried here: it would change every session's setting)."""
    citus.execute("create table items (source_id int not null, id bigint not null, primary key (source_id, id))")
    citus.execute("select create_distributed_table('items', 'source_id')")
    citus.execute("insert into items values (1, 1)")
    seen = "coalesce(nullif(current_setting('hnsw.ef_search', true), ''), 'unset')"
    citus.execute(f"""create function ef(p_source int) returns text language sql stable {_path(citus)}
                      as $$ select {seen} from items where source_id = p_source $$""")
    citus.execute(f"""create function ef_77(p_source int) returns text language sql stable {_path(citus)}
                      set hnsw.ef_search = 77 as $$ select {seen} from items where source_id = p_source $$""")
    for name in ("ef", "ef_77"):
        citus.execute(f"select create_distributed_function('{name}(int)', distribution_arg_name => 'p_source', "
                      "colocate_with => 'items')")
    # The column makes the expression the shard's, evaluated on the worker.
    routed = f"select {seen} || '/' || id from items where source_id = 1"
    citus.execute("load 'vector'")
    citus.execute("set hnsw.ef_search = 123")
    assert citus.execute("show hnsw.ef_search").fetchone() == ("123",)
    assert citus.execute("select ef(1)").fetchone() == ("unset",)
    assert citus.execute(routed).fetchone() == ("unset/1",)
    assert citus.execute("select ef_77(1)").fetchone() == ("77",)
    citus.execute("set citus.propagate_set_commands = 'local'")
    with citus.transaction():
        citus.execute("set local hnsw.ef_search = 125")
        assert citus.execute(routed).fetchone() == ("125/1",)
        assert citus.execute("select ef(1)").fetchone() == ("125",)


def test_a_function_body_is_checked_on_every_worker_under_its_own_search_path(citus: psycopg.Connection) -> None:
    citus.execute("create table items (source_id int not null, id bigint not null, primary key (source_id, id))")
    citus.execute("select create_distributed_table('items', 'source_id')")
    citus.execute("""create function n(p_source int) returns bigint language sql stable
                     as $$ select count(*) from items where source_id = p_source $$""")
    # On the worker: relation "items" does not exist (its server log); the coordinator reports the aborted
    # transaction that follows.
    with pytest.raises(psycopg.errors.InFailedSqlTransaction):
        citus.execute("select create_distributed_function('n(int)', distribution_arg_name => 'p_source', "
                      "colocate_with => 'items')")
    citus.execute(f"alter function n(int) {_path(citus)}")
    citus.execute("select create_distributed_function('n(int)', distribution_arg_name => 'p_source', "
                  "colocate_with => 'items')")
    assert citus.execute("select n(1)").fetchone() == (0,)
