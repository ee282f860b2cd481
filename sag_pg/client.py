"""The client library: ``SAG`` ties settings, database, embedder and LLM together."""

from __future__ import annotations

from typing import Any

from .config import Settings
from .db.connection import Database, raw_connect, resolve_dsn
from .db.status import database_status


class SAG:
    """A sag-pg knowledge base.

    ``SAG()`` uses ``SAG_DATABASE_URL`` or, without it, the embedded PostgreSQL under ``SAG_HOME``;
    an empty database gets the schema on first use.  Pass ``dsn=`` or ``settings=`` to choose.
    """

    def __init__(self, dsn: str | None = None, *, settings: Settings | None = None, auto_upgrade: bool = True):
        self.settings = settings or Settings.from_env()
        if dsn:
            self.settings = self.settings.with_(database_url=dsn)
        self.db = Database.from_settings(self.settings, auto_upgrade=auto_upgrade)

    @property
    def dsn(self) -> str:
        return self.db.dsn

    def status(self) -> dict[str, Any]:
        with raw_connect(self.db.dsn, autocommit=True) as conn:
            return database_status(conn)


def status_of(settings: Settings) -> dict[str, Any]:
    """Status without creating or checking the schema (works on an empty or old database)."""
    with raw_connect(resolve_dsn(settings), autocommit=True) as conn:
        return database_status(conn)
