"""Fixtures: one real PostgreSQL server per test session, a migrated template, a fresh copy per test."""

from __future__ import annotations

import os
from collections.abc import Iterator

import psycopg
import pytest
from pgvector.psycopg import register_vector
from pytest_postgresql import factories

from sag_pg.db import migrate

from . import pg
from .pg import server_params

pytest_plugins = ["tests.openai_server"]

SERVER = server_params()
# Unique per pytest process, so several sessions (developers, CI) can share one server.
TEMPLATE_DB = f"sag_test_{os.getpid()}"


def _migrate_template(
    host: str, port: int, user: str, dbname: str, password: str | None = None, **_: object
) -> None:
    migrate.upgrade(psycopg.conninfo.make_conninfo(host=host, port=port, user=user, dbname=dbname,
                                                   password=password or None))


postgresql_sag = factories.postgresql_noproc(
    host=SERVER.host,
    port=SERVER.port,
    user=SERVER.user,
    password=SERVER.password,
    dbname=TEMPLATE_DB,
    maintenance_dbname=SERVER.maintenance_db,
    load=[_migrate_template],
)
_fresh_db = factories.postgresql("postgresql_sag")


@pytest.fixture
def db_dsn(_fresh_db: psycopg.Connection) -> str:
    """DSN of a fresh, fully migrated database (a copy of the session's template)."""
    info = _fresh_db.info
    return psycopg.conninfo.make_conninfo(
        host=info.host, port=info.port, user=info.user, dbname=info.dbname, password=SERVER.password or None
    )


@pytest.fixture
def db_conn(db_dsn: str) -> Iterator[psycopg.Connection]:
    """A psycopg connection (pgvector registered, autocommit off) to a fresh migrated database."""
    with psycopg.connect(db_dsn) as conn:
        register_vector(conn)
        yield conn


@pytest.fixture
def empty_db_dsn(_fresh_db: psycopg.Connection) -> str:
    """DSN of a fresh database with nothing in it (not even the vector extension)."""
    name = f"{_fresh_db.info.dbname}_empty"
    with psycopg.connect(SERVER.dsn(SERVER.maintenance_db), autocommit=True) as admin:
        admin.execute(psycopg.sql.SQL("drop database if exists {}").format(psycopg.sql.Identifier(name)))
        admin.execute(psycopg.sql.SQL("create database {}").format(psycopg.sql.Identifier(name)))
    yield SERVER.dsn(name)
    with psycopg.connect(SERVER.dsn(SERVER.maintenance_db), autocommit=True) as admin:
        admin.execute(
            "select pg_terminate_backend(pid) from pg_stat_activity where datname = %s and pid <> pg_backend_pid()",
            [name],
        )
        admin.execute(psycopg.sql.SQL("drop database if exists {}").format(psycopg.sql.Identifier(name)))


@pytest.fixture
def sag(db_dsn: str, tmp_path):  # type: ignore[no-untyped-def]
    """A client on a fresh database with the offline defaults (hash embedder, rule extractor)."""
    from sag_pg import SAG, Settings

    return SAG(settings=Settings(database_url=db_dsn, home=tmp_path / "unused-home"))


@pytest.fixture
def cli_env(monkeypatch: pytest.MonkeyPatch, db_dsn: str, tmp_path) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """The offline defaults on the test database (no other SAG_ setting of the caller's), for in-process and
    subprocess runs of the CLI alike."""
    for name in list(os.environ):
        if name.startswith("SAG_") and name != "SAG_TEST_DATABASE_URL":
            monkeypatch.delenv(name)
    monkeypatch.setenv("SAG_DATABASE_URL", db_dsn)
    monkeypatch.setenv("SAG_HOME", str(tmp_path / "home"))
    return dict(os.environ)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Stop the embedded server this session started, unless another session's databases are in use (it was
    found running hours after the tests, its parent gone)."""
    if not pg.started_here:
        return
    from sag_pg.db import embedded

    with psycopg.connect(SERVER.dsn(SERVER.maintenance_db), autocommit=True) as conn:
        row = conn.execute("select count(*) from pg_stat_activity where datname like 'sag\\_test\\_%%' "
                           "and datname not like %s", [f"{TEMPLATE_DB}%"]).fetchone()
    if row is not None and row[0] == 0:
        embedded.stop_server(pg.TEST_HOME / "server")
