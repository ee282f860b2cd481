"""The table of kept LLM extraction answers (``sag.llm_answers``, sql/incremental/017-llm-answers.sql): the store
behind :class:`sag_pg.llm.cache.CachedLLM`."""

from __future__ import annotations

import os
import threading
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from .connection import raw_connect


class AnswerStore:
    """Reads and writes ``sag.llm_answers`` on its own autocommit connection (one per process, opened on first
    use; a kept answer is committed at once, so an ingest that fails later keeps it).  Picklable: only the DSN
    travels."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self._lock = threading.Lock()
        self._conn: psycopg.Connection | None = None
        self._pid = os.getpid()

    def __getstate__(self) -> dict[str, Any]:
        return {"dsn": self.dsn}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["dsn"])  # type: ignore[misc]

    def _connection(self) -> psycopg.Connection:
        if self._pid != os.getpid():  # a forked child: the parent's socket is not ours
            self._conn, self._pid = None, os.getpid()
        if self._conn is None or self._conn.closed:
            self._conn = raw_connect(self.dsn, autocommit=True)
        return self._conn

    def get(self, key: str) -> Any | None:
        with self._lock:
            row = self._connection().execute("select answer from sag.llm_answers where key = %s", [key]).fetchone()
        return row[0] if row else None

    def put(self, key: str, *, purpose: str, model: str, answer: Any) -> None:
        with self._lock:
            self._connection().execute(
                "insert into sag.llm_answers (key, purpose, model, answer) values (%s, %s, %s, %s) "
                "on conflict (key) do update set answer = excluded.answer, created_at = now()",
                [key, purpose, model, Jsonb(answer)])

    def count(self) -> int:
        with self._lock:
            row = self._connection().execute("select count(*) from sag.llm_answers").fetchone()
        return int(row[0]) if row else 0

    def close(self) -> None:
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None
