"""The tests' databases on the test server: a fresh copy of the migrated template for each test, and corpus
databases (a corpus ingested once per session) copied for each test that wants one.

A copy is ``CREATE DATABASE … TEMPLATE`` (PostgreSQL copies the files: no migration, no ingest again).  The
copy the next test will get is made in a background thread while the current test runs, and a finished test's
database is dropped there too, so neither waits on the test's path; each database has its own name, so a test
never sees another one's.
"""

from __future__ import annotations

import itertools
import queue
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg
from psycopg import sql

from .pg import ServerParams

if TYPE_CHECKING:
    from sag_pg import SAG


class Server:
    def __init__(self, params: ServerParams) -> None:
        self.params = params

    def admin(self) -> psycopg.Connection:
        return psycopg.connect(self.params.dsn(self.params.maintenance_db), autocommit=True)

    def dsn(self, name: str) -> str:
        return self.params.dsn(name)

    @staticmethod
    def drop(admin: psycopg.Connection, name: str) -> None:
        """Drop ``name`` (its connections are ended: WITH (FORCE))."""
        admin.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name)))

    def create(self, admin: psycopg.Connection, name: str, template: str | None = None) -> str:
        """A new database ``name`` (a copy of ``template``, whose connections are ended first); its DSN."""
        self.drop(admin, name)
        if template is None:
            admin.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
        else:
            admin.execute("select pg_terminate_backend(pid) from pg_stat_activity where datname = %s", [template])
            admin.execute(sql.SQL("create database {} template {}").format(sql.Identifier(name),
                                                                            sql.Identifier(template)))
        return self.dsn(name)


class FreshDatabases:
    """Copies of one template, one per test: the next one made ahead and the used ones dropped in a thread."""

    def __init__(self, server: Server, template: str, prefix: str) -> None:
        self.server, self.template, self.prefix = server, template, prefix
        self._names = (f"{prefix}_{n}" for n in itertools.count())
        self._work: queue.Queue[tuple[str, str] | None] = queue.Queue()
        self._ready: queue.Queue[str | Exception] = queue.Queue()
        self.failed_drops: list[str] = []
        self._thread = threading.Thread(target=self._run, name="test-databases", daemon=True)
        self._thread.start()
        self._ask()

    def _ask(self) -> None:
        self._work.put(("create", next(self._names)))

    def _run(self) -> None:
        admin: psycopg.Connection | None = None
        while (job := self._work.get()) is not None:
            action, name = job
            # A server restarting (a crashed backend) ends this connection and refuses new ones for a while:
            # retried for a minute with a new connection, as pytest-postgresql's janitor does.
            deadline = time.monotonic() + 60
            while True:
                try:
                    if admin is None or admin.closed or admin.broken:
                        admin = self.server.admin()
                    if action == "create":
                        self.server.create(admin, name, self.template)
                        self._ready.put(name)
                    else:
                        self.server.drop(admin, name)
                    break
                except psycopg.OperationalError:
                    if time.monotonic() > deadline:
                        self._failed(action, name, traceback.format_exc())
                        break
                    time.sleep(1)
                except Exception:  # noqa: BLE001 (told to the test that waits for this database, or at the end)
                    self._failed(action, name, traceback.format_exc())
                    break
        if admin is not None:
            admin.close()

    def _failed(self, action: str, name: str, error: str) -> None:
        if action == "create":
            self._ready.put(RuntimeError(f"could not make the test database {name}: {error}"))
        else:
            self.failed_drops.append(f"{name}: {error}")

    def take(self) -> str:
        """The name of a fresh copy (made ahead); the next one is started at once."""
        got = self._ready.get(timeout=600)
        self._ask()
        if isinstance(got, Exception):
            raise got
        return got

    def give_back(self, name: str) -> None:
        self._work.put(("drop", name))

    def close(self) -> None:
        """Drop the spare copy and wait for the drops; a database that could not be dropped is an error."""
        self._work.put(None)
        self._thread.join()
        with self.server.admin() as admin:
            while not self._ready.empty():
                spare = self._ready.get()
                if isinstance(spare, str):
                    self.server.drop(admin, spare)
        assert not self.failed_drops, self.failed_drops


class CorpusDatabases:
    """Databases filled once per session (a corpus ingested into a copy of the migrated template), of which
    each test gets a fresh copy: the same rows as its own ingest would give, without ingesting the corpus
    again for every test."""

    def __init__(self, server: Server, migrated: str, prefix: str) -> None:
        self.server, self.migrated, self.prefix = server, migrated, prefix
        self.built: dict[str, str] = {}

    def copy(self, name: str, fill: Callable[[str], None]) -> str:
        """DSN of a fresh copy of corpus ``name``, which ``fill(dsn)`` makes (once) in a migrated database."""
        with self.server.admin() as admin:
            if name not in self.built:
                filled = f"{self.prefix}_corpus_{name}"
                fill(self.server.create(admin, filled, self.migrated))
                self.built[name] = filled
            return self.server.create(admin, f"{self.prefix}_copy_{name}", self.built[name])

    def drop_copy(self, name: str) -> None:
        with self.server.admin() as admin:
            self.server.drop(admin, f"{self.prefix}_copy_{name}")

    @contextmanager
    def client(self, name: str, fill: Callable[[str], None], home: Path) -> Iterator[SAG]:
        """A client (offline defaults, SAG_HOME ``home``) on a fresh copy of corpus ``name``; dropped after."""
        from sag_pg import SAG, Settings

        try:
            with SAG(settings=Settings(database_url=self.copy(name, fill), home=home)) as sag:
                yield sag
        finally:
            self.drop_copy(name)

    def drop_all(self) -> None:
        with self.server.admin() as admin:
            for name in self.built.values():
                self.server.drop(admin, name)


def ingest_texts(docs: Mapping[str, str], source: str | None = None) -> Callable[[str], None]:
    """A corpus filler: ``docs`` (uri: text) ingested one by one with the offline defaults (SAG.ingest_text)."""
    def fill(dsn: str) -> None:
        from sag_pg import SAG, Settings

        with tempfile.TemporaryDirectory() as home, SAG(settings=Settings(database_url=dsn, home=Path(home))) as sag:
            for uri, text in docs.items():
                if source is None:
                    sag.ingest_text(text, uri=uri)
                else:
                    sag.ingest_text(text, uri=uri, source=source)

    return fill
