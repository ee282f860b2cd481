"""Fixtures: one real PostgreSQL server per test session, a migrated template, a fresh copy per test
(tests/databases.py), corpus databases ingested once per session and copied per test."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from pgvector.psycopg import register_vector
from pytest_postgresql import factories

from sag_pg.db import migrate

from . import pg
from .databases import CorpusDatabases, FreshDatabases, Server
from .pg import server_params

pytest_plugins = ["tests.openai_server"]

SERVER = server_params()
# Unique per pytest process, so several sessions (developers, CI) can share one server.
TEMPLATE_DB = f"sag_test_{os.getpid()}"
DATABASES = Server(SERVER)


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


@pytest.fixture(scope="session")
def _fresh_databases(postgresql_sag) -> Iterator[FreshDatabases]:  # type: ignore[no-untyped-def]
    fresh = FreshDatabases(DATABASES, postgresql_sag.template_dbname, TEMPLATE_DB)
    yield fresh
    fresh.close()


@pytest.fixture
def db_dsn(_fresh_databases: FreshDatabases) -> Iterator[str]:
    """DSN of a fresh, fully migrated database (a copy of the session's template)."""
    name = _fresh_databases.take()
    yield DATABASES.dsn(name)
    _fresh_databases.give_back(name)


@pytest.fixture
def db_conn(db_dsn: str) -> Iterator[psycopg.Connection]:
    """A psycopg connection (pgvector registered, autocommit off) to a fresh migrated database."""
    with psycopg.connect(db_dsn) as conn:
        register_vector(conn)
        yield conn


@pytest.fixture
def empty_db_dsn() -> Iterator[str]:
    """DSN of a fresh database with nothing in it (not even the vector extension)."""
    name = f"{TEMPLATE_DB}_empty"
    with DATABASES.admin() as admin:
        dsn = DATABASES.create(admin, name)
    yield dsn
    with DATABASES.admin() as admin:
        DATABASES.drop(admin, name)


@pytest.fixture(scope="session")
def corpus_databases(postgresql_sag) -> Iterator[CorpusDatabases]:  # type: ignore[no-untyped-def]
    databases = CorpusDatabases(DATABASES, postgresql_sag.template_dbname, TEMPLATE_DB)
    yield databases
    databases.drop_all()


def _fill_demo(dsn: str) -> None:
    from sag_pg import SAG, Settings
    from sag_pg.demo import DEMO_SOURCE, demo_paths

    with tempfile.TemporaryDirectory() as home, SAG(settings=Settings(database_url=dsn, home=Path(home))) as client:
        report = client.ingest_files(demo_paths(), source=DEMO_SOURCE)
    assert not report.failed, report.errors


@pytest.fixture
def demo_dsn(corpus_databases: CorpusDatabases) -> Iterator[str]:
    """DSN of a fresh migrated database holding the demo corpus in source ``demo`` (ingested with the offline
    defaults, as ``sag-pg demo`` does), a copy of one ingested once per session."""
    yield corpus_databases.copy("demo", _fill_demo)
    corpus_databases.drop_copy("demo")


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
