"""``SAG.memory``: recall statistics and eviction of documents (seed §5); ``SAG.recall`` uses :func:`recall`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import psycopg

from ..db import memory as m
from ..db.retrieval import source_ids as resolve_source_ids
from ..errors import NotFoundError
from .recorder import RecallRecorder

if TYPE_CHECKING:
    from ..db.connection import Database
    from ..search.result import SearchResult

__all__ = ["Memory"]

POLICIES = ("none", "ttl", "capacity", "recall_based", "hybrid")
CHANNELS = ("hybrid", "knowledge", "graph")
STRATEGIES = ("hybrid", "text_overlap", "graph_distance", "temporal", "reference_count")


def _sources(conn: psycopg.Connection, source: str | Sequence[str] | None) -> list[int] | None:
    names = [source] if isinstance(source, str) else (list(source) if source is not None else None)
    try:
        return resolve_source_ids(conn, names)
    except psycopg.errors.NoDataFound as exc:
        raise NotFoundError(exc.diag.message_primary or str(exc)) from exc


class Memory:
    def __init__(self, db: Database) -> None:
        self._db = db
        self.recorder = RecallRecorder(db)

    def note_search(self, result: SearchResult) -> None:
        """Count a search's chunks as recalls of their documents (written in the background)."""
        self.recorder.add([c.chunk_id for c in result.chunks], [c.score for c in result.chunks])

    def flush(self) -> None:
        """Write the recall statistics of every search made so far."""
        self.recorder.flush()

    def close(self) -> None:
        self.recorder.close()

    def recall(self, query: str, *, source: str | Sequence[str] | None = "default", channels: str = "hybrid",
               strategy: str = "hybrid", min_score: float = 0.0, top_n: int = 10, depth: int = 2,
               weights: Sequence[float] = (0.5, 0.2, 0.1, 0.2), half_life: timedelta = timedelta(days=30),
               record: bool = True) -> list[m.Recalled]:
        self.flush()  # reference scores count the searches made before
        with self._db.transaction() as conn:
            return m.recall(conn, query, source_ids=_sources(conn, source), channels=channels, strategy=strategy,
                            min_score=min_score, top_n=top_n, depth=depth, weights=weights, half_life=half_life,
                            record=record)

    def stats(self, *, source: str | Sequence[str] | None = "default", limit: int = 10) -> list[dict[str, Any]]:
        self.flush()
        with self._db.connect(autocommit=True) as conn:
            return m.memory_stats(conn, _sources(conn, source), limit)

    def evict(self, policy: str, *, source: str | Sequence[str] | None = "default", ttl: timedelta | None = None,
              max_items: int | None = None, weights: Sequence[float] = (0.3, 0.5, 0.2),
              half_life: timedelta = timedelta(days=30), dry_run: bool = True) -> list[m.Eviction]:
        """The documents ``policy`` evicts (max_items per source); deleted as ``delete`` does unless dry_run."""
        self.flush()
        with self._db.transaction() as conn:
            return m.evict(conn, policy, source_ids=_sources(conn, source), ttl=ttl, max_items=max_items,
                           weights=weights, half_life=half_life, dry_run=dry_run)
