"""Distribute sag's schema over a Citus cluster: what `sag-pg db upgrade` does on a Citus coordinator.

One schema serves one node and Citus (migration 0015 gave every per-source table ``source_id`` in its primary
key and foreign keys).  On a coordinator with the ``citus`` extension the upgrade then:

- makes the global tables (``sag.sources``, ``sag.settings``) reference tables, copied to every node;
- distributes every per-source table (a ``source_id`` column in its primary key) by ``source_id``, all in one
  co-location group, so a source's documents, chunks, events, keys and links live on one worker and every
  join on ``source_id`` runs there;
- leaves the rest on the coordinator: the cluster/community tables (a clustering run may span sources), the
  import staging table and alembic's version table;
- distributes the one-source entry points by their scalar source argument (``create_distributed_function``),
  so a call for one source runs whole on the worker that holds it.

Citus refuses to distribute a table that has foreign keys to or from tables not yet distributed alike, and a
table with an identity column once a foreign key to a reference table exists: the foreign keys are dropped,
the tables distributed, and the keys put back, in one transaction.  A key from a coordinator table to a
distributed one cannot exist on Citus: ``sag.cluster_events.event_id`` is not enforced there (the deletes that
cascaded through it remove cluster memberships explicitly, as on one node).  Every step is idempotent.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import psycopg
from psycopg import sql

from ..errors import DatabaseError

REFERENCE_TABLES = ("sources", "settings")
# The table every distributed table is co-located with.
ANCHOR = "documents"

# Tables that stay on the coordinator: a clustering run and its communities may span sources, the import
# staging rows, the cache of LLM answers and alembic's version belong to no source.
COORDINATOR_TABLES = ("alembic_version", "cluster_runs", "clusters", "cluster_events", "community_reports",
                      "kg_import_rows", "llm_answers")

# Per-source tables: every other table of schema sag with a source_id column (in its primary key or unique
# index: migration 0015 and 0019 put it there).
_PER_SOURCE = """
select c.relname
  from pg_catalog.pg_class c
  join pg_catalog.pg_attribute a on a.attrelid = c.oid and a.attname = 'source_id' and not a.attisdropped
 where c.relnamespace = 'sag'::regnamespace and c.relkind = 'r' and c.relname <> all (%s)
   and c.relname <> all (%s)
 order by c.relname <> %s, c.relname"""

_FOREIGN_KEYS = """
select con.conrelid::regclass::text, con.conname, pg_catalog.pg_get_constraintdef(con.oid),
       con.confrelid::regclass::text
  from pg_catalog.pg_constraint con
 where con.contype = 'f'
   and (con.conrelid = any (%(tables)s::regclass[]) or con.confrelid = any (%(tables)s::regclass[]))
 order by con.conrelid::regclass::text, con.conname"""

# One-source entry points: called with one source outside a transaction block (sag-pg's writer calls them as
# one autocommit statement), they run whole on the worker holding it.  Every statement in them, and in what
# they call, names the source.  (force_delegation, which delegates inside transaction blocks too, makes Citus
# 14 refuse an INSERT ... SELECT of the delete path as "a distributed query from a query on a shard".)
DISTRIBUTED_FUNCTIONS = ("sag.ingest_document", "sag.store_document", "sag.delete_document", "sag.resolve_keys",
                         "sag.rebuild_source_cooccurrence")

_FUNCTIONS = """
select p.oid::regprocedure::text, p.proargnames[1]
  from pg_catalog.pg_proc p
 where p.pronamespace::regnamespace::text || '.' || p.proname = any (%s::text[])
   and p.proargtypes[0] = 'bigint'::regtype
   and not exists (select 1 from pg_catalog.pg_dist_object o
                    where o.classid = 'pg_proc'::regclass and o.objid = p.oid and o.distribution_argument_index is not null)
 order by 1"""

# Functions that plan their statements once a session on one node (a generic plan saves ~0.5 ms a call): on
# Citus a generic plan keeps the source in a parameter the planner cannot route by (`could not create
# distributed plan`), so they plan each call (the idempotent SQL files set it back at every upgrade, which
# ends here again).
_GENERIC_PLANS = """
select p.oid::regprocedure::text
  from pg_catalog.pg_proc p
 where p.pronamespace in ('sag'::regnamespace, 'sag_internal'::regnamespace)
   and 'plan_cache_mode=force_generic_plan' = any (p.proconfig)
 order by 1"""

_DISTRIBUTION = """
select logicalrelid::regclass::text, partmethod
  from pg_catalog.pg_dist_partition where logicalrelid = any (%s::regclass[])"""


def citus_version(conn: psycopg.Connection) -> str | None:
    """The installed Citus extension's version, or None on a plain PostgreSQL."""
    row = conn.execute("select extversion from pg_catalog.pg_extension where extname = 'citus'").fetchone()
    return str(row[0]) if row else None


def is_coordinator(conn: psycopg.Connection) -> bool:
    """Citus is installed and this node is its coordinator (group 0) with at least one active worker."""
    if citus_version(conn) is None:
        return False
    row = conn.execute("select pg_catalog.citus_is_coordinator() and exists (select 1 from pg_catalog.pg_dist_node "
                       "where groupid <> 0 and isactive and noderole = 'primary')").fetchone()
    return bool(row and row[0])


@dataclass
class Distribution:
    reference: list[str] = field(default_factory=list)
    distributed: list[str] = field(default_factory=list)
    functions: list[str] = field(default_factory=list)
    unenforced: list[str] = field(default_factory=list)  # foreign keys Citus cannot hold

    @property
    def changed(self) -> bool:
        return bool(self.reference or self.distributed or self.functions)


def per_source_tables(conn: psycopg.Connection) -> list[str]:
    rows = conn.execute(_PER_SOURCE, [list(COORDINATOR_TABLES), list(REFERENCE_TABLES), ANCHOR]).fetchall()
    return [str(r[0]) for r in rows]


def distribute(conn: psycopg.Connection) -> Distribution:
    """Distribute sag's tables and one-source functions on the Citus coordinator ``conn`` is connected to (in a
    transaction of its own; nothing if already done)."""
    if not is_coordinator(conn):
        raise DatabaseError("this database is not a Citus coordinator with active workers (the citus extension "
                            "and `select citus_add_node(...)` for each worker come first)")
    done = Distribution()
    with conn.transaction():
        # DDL on tables with foreign keys to reference tables must not run over parallel shard connections.
        conn.execute("set local citus.multi_shard_modify_mode to 'sequential'")
        reference = [f"sag.{t}" for t in REFERENCE_TABLES]
        distributed = [f"sag.{t}" for t in per_source_tables(conn)]
        state = dict(conn.execute(_DISTRIBUTION, [reference + distributed]).fetchall())
        todo_reference = [t for t in reference if t not in state]
        todo_distributed = [t for t in distributed if t not in state]
        if todo_reference or todo_distributed:
            keys = conn.execute(_FOREIGN_KEYS, {"tables": todo_reference + todo_distributed}).fetchall()
            for table, name, _definition, _target in keys:
                conn.execute(sql.SQL("alter table {} drop constraint {}").format(
                    sql.SQL(table), sql.Identifier(name)))
            for table in todo_reference:
                conn.execute("select pg_catalog.create_reference_table(%s)", [table])
                done.reference.append(table)
            anchor = f"sag.{ANCHOR}"
            for table in todo_distributed:
                colocate = "none" if table == anchor and anchor not in state else anchor
                conn.execute("select pg_catalog.create_distributed_table(%s, 'source_id', colocate_with => %s)",
                             [table, colocate])
                done.distributed.append(table)
            distributed_now = set(reference) | set(distributed)
            for table, name, definition, target in keys:
                if table not in distributed_now and target in distributed_now and target not in reference:
                    done.unenforced.append(f"{table}.{name}")  # coordinator table -> distributed: not on Citus
                    continue
                conn.execute(sql.SQL("alter table {} add constraint {} {}").format(
                    sql.SQL(table), sql.Identifier(name), sql.SQL(definition)))
        # Statements in sag's functions name their source through a parameter: Citus routes them to one shard
        # when the parameter's value is in the plan (a custom plan), not in a generic plan it cannot prune.
        # On the coordinator only (not propagated): on a worker a forced custom plan also re-plans every
        # foreign-key check of a write against the shard's statistics, which know nothing of a source newly
        # given rows there, and the check of a relation (source_id = $1 and id = $2) then walked the
        # (source_id, tail_key_id) index over all of that source's rows: a co-occurrence rebuild of one source
        # sharing its shard ran quadratic (18 minutes and counting, against 2 for the others).  The workers
        # keep PostgreSQL's default, where a check's plan is generic after five (the id index).
        dbname = sql.Identifier(conn.info.dbname)
        conn.execute("set local citus.enable_ddl_propagation to off")
        conn.execute(sql.SQL("alter database {} set plan_cache_mode = force_custom_plan").format(dbname))
        conn.execute("set local citus.enable_ddl_propagation to on")
        failed = conn.execute(
            "select nodename, nodeport, result from pg_catalog.run_command_on_workers(%s) where not success",
            [sql.SQL("set citus.enable_ddl_propagation to off; alter database {} reset plan_cache_mode")
             .format(dbname).as_string(conn)]).fetchall()
        if failed:
            raise DatabaseError("could not reset plan_cache_mode on the workers: "
                                + "; ".join(f"{host}:{port}: {result}" for host, port, result in failed))
        for (function,) in conn.execute(_GENERIC_PLANS).fetchall():
            conn.execute(sql.SQL("alter function {} set plan_cache_mode = force_custom_plan").format(
                sql.SQL(function)))
        for function, argument in conn.execute(_FUNCTIONS, [list(DISTRIBUTED_FUNCTIONS)]).fetchall():
            conn.execute("select pg_catalog.create_distributed_function(%s::regprocedure, %s, colocate_with => %s)",
                         [function, argument, f"sag.{ANCHOR}"])
            done.functions.append(function)
    return done
