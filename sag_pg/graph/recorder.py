"""Recall statistics off the search's path: searches queue what they returned, a daemon thread writes the
queue in one statement (``sag.record_chunk_recall`` with the searches told apart) at most every
``interval`` seconds, on its own connection.  A search pays for appending to a list, not for round trips
to the server: on a loaded machine each round trip can wait a scheduler slice, which synchronous
recording showed as +5-10 % on the p50 of `sag-pg memory bench`.  Readers of the statistics call
:meth:`flush` first, so they see every search made before."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

import psycopg

from ..db import memory as m
from ..errors import SagError

if TYPE_CHECKING:
    from ..db.connection import Database

log = logging.getLogger(__name__)

__all__ = ["RecallRecorder"]

Batch = list[tuple[list[int], list[float]]]


class RecallRecorder:
    def __init__(self, db: Database, *, interval: float = 0.2) -> None:
        self._db, self._interval = db, interval
        self._pending: Batch = []
        self._cond = threading.Condition()
        self._writing = threading.Lock()  # one write at a time; flush waits for the thread's
        self._thread: threading.Thread | None = None
        self._conn: psycopg.Connection | None = None
        self._pid = os.getpid()
        self._closed = False

    def add(self, chunk_ids: Sequence[int], scores: Sequence[float]) -> None:
        if not chunk_ids:
            return
        with self._cond:
            if self._pid != os.getpid():  # a forked child: the parent's thread and socket are not ours
                self._pending, self._thread, self._conn, self._pid = [], None, None, os.getpid()
            self._pending.append((list(chunk_ids), list(scores)))
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(target=self._run, name="sag-recall-recorder", daemon=True)
                self._thread.start()
            if len(self._pending) == 1:  # only the first of a batch wakes the writer: a wake-up is a thread switch
                self._cond.notify()

    def flush(self) -> None:
        """Write everything queued so far (and wait for a write in progress)."""
        with self._cond:
            batch, self._pending = self._pending, []
        self._write(batch)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)
        self.flush()
        with self._writing:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                # Let more searches join this write (they do not notify: the wait runs its full interval
                # unless close() cuts it short).
                self._cond.wait(timeout=self._interval)
                batch, self._pending = self._pending, []
            self._write(batch)

    def _write(self, batch: Batch) -> None:
        if not batch:
            return
        chunk_ids = [c for ids, _ in batch for c in ids]
        scores = [s for _, ss in batch for s in ss]
        searches = [n for n, (ids, _) in enumerate(batch) for _ in ids]
        with self._writing:
            try:
                if self._conn is None or self._conn.closed:
                    self._conn = self._db.connect()
                m.record_chunk_recall(self._conn, chunk_ids, scores, searches)
                self._conn.commit()
            except (psycopg.Error, SagError) as exc:  # a standby, a read-only role, a dropped database: searches still answer
                if self._conn is not None and not self._conn.closed:
                    self._conn.rollback()
                log.warning("recall statistics of %d searches not recorded: %s", len(batch),
                            str(exc).strip().splitlines()[0])
