"""The PostgreSQL server the tests run against: SAG_TEST_DATABASE_URL, or a private embedded one."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict

from sag_pg.db import embedded

TEST_HOME = Path(os.environ.get("SAG_TEST_HOME", Path(__file__).resolve().parent.parent / ".sag-test"))


@dataclass(frozen=True)
class ServerParams:
    host: str
    port: int
    user: str
    password: str | None
    maintenance_db: str

    def dsn(self, dbname: str) -> str:
        return psycopg.conninfo.make_conninfo(
            host=self.host, port=self.port, user=self.user, password=self.password or None, dbname=dbname
        )


# Whether this process started the embedded server (conftest stops it at the end of the session then).
started_here = False


def server_params() -> ServerParams:
    global started_here
    url = os.environ.get("SAG_TEST_DATABASE_URL")
    if not url:
        started_here = not embedded.is_running(TEST_HOME / "server")
        url = embedded.ensure_server(TEST_HOME / "server")
        _no_durability(url)
    info = conninfo_to_dict(url)
    return ServerParams(
        host=str(info.get("host") or "localhost"),
        port=int(info.get("port") or 5432),
        user=str(info.get("user") or "postgres"),
        password=info.get("password"),  # type: ignore[arg-type]
        maintenance_db=str(info.get("dbname") or "postgres"),
    )


def _no_durability(url: str) -> None:
    """The private test server's databases are thrown away: it does not fsync (a database copy per test, each
    commit).  Crashes of PostgreSQL processes (tests kill backends and servers) lose nothing without fsync;
    only the machine's crash would.  The servers tests start in their own homes keep sag-pg's settings."""
    with psycopg.connect(url, autocommit=True) as conn:
        if conn.execute("select setting from pg_settings where name = 'fsync'").fetchone() == ("on",):
            conn.execute("alter system set fsync = off")
            conn.execute("alter system set full_page_writes = off")
            conn.execute("select pg_reload_conf()")
