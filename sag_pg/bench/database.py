"""A fresh database on the configured server (``SAG_DATABASE_URL`` or the embedded default), for one run.

``CREATE DATABASE sag_bench_<name>_<pid>`` through a maintenance connection to the configured database
(or, if that one does not exist yet, ``postgres``); dropped at the end unless kept.

On a Citus coordinator (:func:`citus_nodes` finds it in the configured database's ``pg_dist_node``) Citus keeps
its metadata per database: the database is created on the coordinator and on every worker (reached at the
address the coordinator knows it by, with the configured user and password), each gets the ``citus``,
``vector`` and ``pg_trgm`` extensions, and the new database's coordinator is told its own address and adds
every worker, as ``sag-pg db cluster start`` does for ``sag``; ``sag-pg db upgrade`` (:func:`migrate.upgrade`)
then distributes the schema.  It is dropped on every node.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from ..db.connection import raw_connect, redact
from ..errors import DatabaseError

__all__ = ["CitusNodes", "bench_database_name", "citus_nodes", "database_dsn", "temporary_database"]

_MAX_IDENTIFIER = 63
_CITUS_EXTENSIONS = ("citus", "vector", "pg_trgm")  # citus first: it must be the first extension created
_NODES = """
select groupid = 0, nodename, nodeport
  from pg_catalog.pg_dist_node
 where noderole = 'primary' and isactive
 order by groupid, nodeid"""


@dataclass(frozen=True)
class CitusNodes:
    """A Citus cluster as its coordinator lists it: (host, port) of the coordinator and of each worker."""

    coordinator: tuple[str, int]
    workers: tuple[tuple[str, int], ...]

    def dsn(self, server_dsn: str, node: tuple[str, int], dbname: str) -> str:
        """``server_dsn``'s user, password and options, another node and database."""
        return make_conninfo(server_dsn, host=node[0], port=str(node[1]), dbname=dbname, hostaddr="")


def citus_nodes(conn: psycopg.Connection) -> CitusNodes | None:
    """The cluster ``conn``'s database coordinates, or None: no citus extension, not the coordinator, no worker."""
    from ..db.distribute import is_coordinator

    if not is_coordinator(conn):
        return None
    rows = conn.execute(_NODES).fetchall()
    coordinator = next(((str(h), int(p)) for c, h, p in rows if c), None)
    workers = tuple((str(h), int(p)) for c, h, p in rows if not c)
    if coordinator is None:
        raise DatabaseError("the Citus coordinator does not know its own address (citus_set_coordinator_host)")
    return CitusNodes(coordinator, workers)


def bench_database_name(name: str, pid: int | None = None) -> str:
    """``sag_bench_<name>_<pid>``: lower-case letters, digits and ``_`` only, at most 63 characters."""
    suffix = f"_{os.getpid() if pid is None else pid}"
    slug = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_") or "data"
    return "sag_bench_" + slug[: _MAX_IDENTIFIER - len("sag_bench_") - len(suffix)] + suffix


def database_dsn(dsn: str, dbname: str) -> str:
    """The same server, user and options as ``dsn``, another database."""
    return make_conninfo(dsn, dbname=dbname)


def _maintenance(dsn: str) -> psycopg.Connection:
    try:
        return psycopg.connect(dsn, autocommit=True)
    except psycopg.OperationalError as first:
        if conninfo_to_dict(dsn).get("dbname") in (None, "postgres"):
            raise DatabaseError(f"cannot connect to {redact(dsn)}: {str(first).strip()}") from first
        # The configured database may not exist yet: any database on the server can create another.
        return raw_connect(database_dsn(dsn, "postgres"), autocommit=True)


def _cluster(server_dsn: str) -> CitusNodes | None:
    with _maintenance(server_dsn) as admin:
        return citus_nodes(admin)


def _node_dsns(server_dsn: str, nodes: CitusNodes | None) -> list[str]:
    """Maintenance DSNs: the configured server, then (on Citus) every worker's database of the same name."""
    if nodes is None:
        return [server_dsn]
    dbname = conninfo_to_dict(server_dsn).get("dbname") or "postgres"
    return [server_dsn] + [nodes.dsn(server_dsn, worker, str(dbname)) for worker in nodes.workers]


def drop_database(server_dsn: str, dbname: str, nodes: CitusNodes | None = None) -> None:
    """Drop ``dbname`` on the server of ``server_dsn`` (and on every worker of ``nodes``)."""
    for dsn in _node_dsns(server_dsn, nodes):
        with _maintenance(dsn) as admin:
            admin.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(dbname)))


def _create_database(dsn: str, dbname: str) -> None:
    ident = sql.Identifier(dbname)
    with _maintenance(dsn) as admin:
        admin.execute(sql.SQL("drop database if exists {} with (force)").format(ident))
        try:
            admin.execute(sql.SQL("create database {}").format(ident))
        except psycopg.errors.InsufficientPrivilege as exc:
            raise DatabaseError(f"cannot create database {dbname} on {redact(dsn)}: the benchmark needs "
                                f"a role with CREATEDB ({exc.diag.message_primary})") from exc


def _join_cluster(server_dsn: str, dbname: str, nodes: CitusNodes) -> None:
    """The extensions on every node's new database, then the coordinator's own address and its workers."""
    for node in (nodes.coordinator, *nodes.workers):
        with raw_connect(nodes.dsn(server_dsn, node, dbname), autocommit=True) as conn:
            for extension in _CITUS_EXTENSIONS:
                conn.execute(sql.SQL("create extension if not exists {}").format(sql.Identifier(extension)))
    with raw_connect(database_dsn(server_dsn, dbname), autocommit=True) as conn:
        conn.execute("select pg_catalog.citus_set_coordinator_host(%s, %s)", list(nodes.coordinator))
        for worker in nodes.workers:
            conn.execute("select pg_catalog.citus_add_node(%s, %s)", list(worker))


@contextmanager
def temporary_database(server_dsn: str, name: str, *, keep: bool = False) -> Iterator[str]:
    """Create ``sag_bench_<name>_<pid>`` next to the database of ``server_dsn`` and yield its DSN.

    On a Citus coordinator, the database is made on every node and its coordinator adds the workers (see the
    module docstring).  A leftover database of that name (same pid, an earlier crash) is dropped first.  The
    database is dropped on exit, even after an error, unless ``keep``.
    """
    dbname = bench_database_name(name)
    nodes = _cluster(server_dsn)
    try:
        for dsn in _node_dsns(server_dsn, nodes):
            _create_database(dsn, dbname)
        if nodes is not None:
            _join_cluster(server_dsn, dbname, nodes)
        yield database_dsn(server_dsn, dbname)
    finally:
        if not keep:
            drop_database(server_dsn, dbname, nodes)
