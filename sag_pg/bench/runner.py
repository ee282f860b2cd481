"""One benchmark folder end to end: a fresh database, the ingest, every question through every method.

Latency is per question, measured around the method call only (after ``warmup`` untimed questions per
method); p50 / p95 over the questions.  Every method returns ``max(ks)`` chunks; documents are deduplicated
in rank order before Recall@k (see :mod:`.metrics`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..client import SAG
from ..config import Settings
from ..db import migrate
from ..db.connection import resolve_dsn
from ..errors import InputError
from .database import bench_database_name, temporary_database
from .dataset import Dataset
from .methods import open_methods, prepare_query
from .metrics import mean_recall, percentile

__all__ = ["DatasetResult", "MethodResult", "Progress", "run_dataset"]

SOURCE = "default"

Progress = Callable[[str, int, int], None]  # (what, done, total)


@dataclass(frozen=True)
class MethodResult:
    recall: dict[int, float]  # k -> Recall@k in percent
    p50_ms: float
    p95_ms: float

    def to_dict(self) -> dict[str, float]:
        data = {f"R@{k}": round(v, 2) for k, v in sorted(self.recall.items())}
        return {**data, "p50_ms": round(self.p50_ms, 2), "p95_ms": round(self.p95_ms, 2)}


@dataclass
class DatasetResult:
    name: str
    passages: int
    ingest_seconds: float
    questions: int
    methods: dict[str, MethodResult] = field(default_factory=dict)
    failed: int = 0
    errors: list[str] = field(default_factory=list)
    database: str | None = None  # kept database (--keep)

    @property
    def passages_per_second(self) -> float:
        return self.passages / self.ingest_seconds if self.ingest_seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "ingest": {"passages": self.passages, "seconds": round(self.ingest_seconds, 2),
                       "passages_per_s": round(self.passages_per_second, 1), "failed": self.failed},
            "questions": self.questions,
            "methods": {name: result.to_dict() for name, result in self.methods.items()},
        }
        if self.database:
            data["database"] = self.database
        return data


def _noop(what: str, done: int, total: int) -> None:
    pass


def run_dataset(settings: Settings, dataset: Dataset, *, methods: Sequence[str], ks: Sequence[int],
                keep: bool = False, warmup: int = 3, progress: Progress = _noop) -> DatasetResult:
    """Ingest ``dataset`` into ``sag_bench_<name>_<pid>`` (next to the configured database) and measure.

    ``settings`` choose the server, the embedder and the extractor (an LLM if configured).
    """
    top_k = max(ks)
    with temporary_database(resolve_dsn(settings), dataset.name, keep=keep) as dsn:
        migrate.upgrade(dsn)
        with SAG(settings=settings.with_(database_url=dsn)) as sag:
            done = 0

            def on_document(status: str, what: str) -> None:
                nonlocal done
                if status == "note":
                    return
                done += 1
                progress("ingest", done, dataset.passages)

            report = sag.ingest_files([dataset.corpus], source=SOURCE, on_document=on_document)
            if report.documents == 0:
                raise InputError(f"{dataset.corpus}: no passage could be ingested ({'; '.join(report.errors[:3])})")
            result = DatasetResult(name=dataset.name, passages=report.documents, ingest_seconds=report.seconds,
                                   questions=len(dataset.questions), failed=report.failed,
                                   errors=list(report.errors), database=bench_database_name(dataset.name) if keep else None)
            prepared = [prepare_query(sag, q.question) for q in dataset.questions]
            golds = [q.gold for q in dataset.questions]
            with open_methods(sag, methods, source=SOURCE) as available:
                for name, method in available.items():
                    for query in prepared[:warmup]:
                        method(query, top_k)
                    ranked: list[list[str]] = []
                    times: list[float] = []
                    for i, query in enumerate(prepared):
                        started = time.perf_counter()
                        hits = method(query, top_k)
                        times.append((time.perf_counter() - started) * 1000.0)
                        ranked.append(hits)
                        progress(name, i + 1, len(prepared))
                    runs = list(zip(ranked, golds))
                    result.methods[name] = MethodResult(
                        recall={k: mean_recall(runs, k) for k in ks},
                        p50_ms=percentile(times, 50), p95_ms=percentile(times, 95),
                    )
    return result
