"""The `citus` lane: tests against a running Citus cluster, whose coordinator URL is SAG_CITUS_DATABASE_URL.

They are marked ``citus`` (every test in this directory, by the hook below) and deselected by the default run
(``addopts = -m "not citus"`` in pyproject.toml); ``pytest -m citus`` runs them and, without
SAG_CITUS_DATABASE_URL, stops with a usage error instead of skipping or passing them:

    export SAG_CITUS_DATABASE_URL="$(sag-pg db cluster start --citus-source citus-14.0.1.tar.gz)"
    pytest -m citus

The rebalance test also adds a worker to the cluster (and removes it again): it needs the cluster's SAG_HOME,
SAG_CITUS_HOME (default SAG_HOME).  Each test works in a schema of its own, dropped at its end.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from pgvector.psycopg import register_vector
from psycopg import sql

HERE = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.citus)


def pytest_collection_finish(session: pytest.Session) -> None:
    selected = [i for i in session.items if i.get_closest_marker("citus") is not None]
    if selected and not os.environ.get("SAG_CITUS_DATABASE_URL"):
        raise pytest.UsageError(
            f"{len(selected)} citus tests selected but SAG_CITUS_DATABASE_URL is not set: start a cluster with "
            "`sag-pg db cluster start --citus-source TARBALL` and set it to what `sag-pg db cluster url` prints")


@pytest.fixture(scope="session")
def citus_url() -> str:
    return os.environ["SAG_CITUS_DATABASE_URL"]


@pytest.fixture
def citus(citus_url: str) -> Iterator[psycopg.Connection]:
    """An autocommit connection to the coordinator, in a fresh schema ``lane_<pid>`` dropped at the end."""
    schema = f"lane_{os.getpid()}"
    with psycopg.connect(citus_url, autocommit=True) as conn:
        conn.execute(sql.SQL("drop schema if exists {} cascade").format(sql.Identifier(schema)))
        conn.execute(sql.SQL("create schema {}").format(sql.Identifier(schema)))
        conn.execute(sql.SQL("set search_path = {}, public").format(sql.Identifier(schema)))
        register_vector(conn)
        yield conn
    with psycopg.connect(citus_url, autocommit=True) as conn:
        conn.execute(sql.SQL("drop schema if exists {} cascade").format(sql.Identifier(schema)))
