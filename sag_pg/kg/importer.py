"""Importing RDF files into a source's knowledge graph: parse (sag_pg.kg.rdf), COPY a batch, load it in SQL."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..db import ingest as ingest_store
from ..db import kg as store
from ..db.connection import Database
from .rdf import FREEBASE_NS, NAME_PREDICATES, BadLine, ImportRow, RDFReader

__all__ = ["ImportReport", "import_rdf"]

BATCH_ROWS = 50_000  # triples per COPY + load transaction: ~20 MB of rows, progress every batch
MAX_BAD_LINES_KEPT = 1_000  # named in the report; the count goes on


@dataclass
class ImportReport:
    files: list[str] = field(default_factory=list)
    triples: int = 0
    bad_lines: int = 0
    bad: list[dict[str, Any]] = field(default_factory=list)  # {file, line, message, text}
    keys: int = 0
    names: int = 0
    relations: int = 0
    seconds: float = 0.0

    @property
    def triples_per_second(self) -> float:
        return self.triples / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"files": self.files, "triples": self.triples, "bad_lines": self.bad_lines, "bad": self.bad,
                "keys": self.keys, "names": self.names, "relations": self.relations,
                "seconds": round(self.seconds, 3), "triples_per_second": round(self.triples_per_second, 1)}


def import_rdf(db: Database, paths: Iterable[Path], *, source: str, fmt: str | None = None,
               namespace: str = FREEBASE_NS, name_predicates: tuple[str, ...] = NAME_PREDICATES,
               batch_rows: int = BATCH_ROWS,
               on_progress: Callable[[ImportReport], None] | None = None) -> ImportReport:
    """Import N-Triples / Turtle files into ``source`` (created if needed); one transaction per batch."""
    report = ImportReport()
    started = time.perf_counter()
    # Parsing (Python, holding the GIL) overlaps with loading the previous batch (PostgreSQL; psycopg lets go
    # of the GIL while it waits): one loader thread, at most one batch in flight.
    with db.connect() as conn, ThreadPoolExecutor(max_workers=1, thread_name_prefix="kg-load") as loader:
        with conn.transaction():
            source_id = ingest_store.ensure_source(conn, source)
        in_flight: Future[None] | None = None

        def flush(rows: list[ImportRow]) -> None:
            nonlocal in_flight
            if in_flight is not None:
                in_flight.result()
                report.seconds = time.perf_counter() - started
                if on_progress is not None:
                    on_progress(report)
            in_flight = loader.submit(_load, conn, source_id, rows, report)

        for path in paths:
            report.files.append(str(path))
            reader = RDFReader(namespace=namespace, name_predicates=name_predicates)
            pending: list[ImportRow] = []
            for item in reader.read(Path(path), fmt):
                if isinstance(item, BadLine):
                    report.bad_lines += 1
                    if len(report.bad) < MAX_BAD_LINES_KEPT:
                        report.bad.append({"file": str(path), "line": item.line, "message": item.message,
                                           "text": item.text})
                    continue
                pending.append(item)
                if len(pending) >= batch_rows:
                    flush(pending)
                    pending = []
            if pending:
                flush(pending)
        if in_flight is not None:
            in_flight.result()
        with conn.transaction():
            store.analyze_graph(conn)  # fresh statistics: the tools' plans depend on them
    report.seconds = time.perf_counter() - started
    if on_progress is not None:
        on_progress(report)
    return report


def _load(conn: Any, source_id: int, rows: list[ImportRow], report: ImportReport) -> None:
    with conn.transaction():
        batch = store.new_batch(conn)
        store.copy_import_rows(conn, batch, ((r.line, r.subject, r.predicate, r.object, r.kind, r.lang)
                                             for r in rows))
        counts = store.load_batch(conn, batch, source_id)
    report.triples += counts["triples"]
    report.keys += counts["keys"]
    report.names += counts["names"]
    report.relations += counts["relations"]
