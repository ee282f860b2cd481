"""Run an ingest: documents in, one transaction each, failures named and isolated, a report out.

Preparing a document (Python) overlaps with storing the previous one (PostgreSQL, in a writer thread):
the two cores of a small machine both stay busy.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

import psycopg

from ..db.connection import Database
from ..errors import SagError
from ..llm.base import LLM
from ..types import DEFAULT_KEY_TYPES
from . import store
from .prepare import DocumentPreparer, PreparedDocument, content_hash
from .readers import DocumentInput, InputFailure, ReadResult

# Errors after which the same document transaction is simply tried again.
_RETRYABLE = (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure,
              psycopg.errors.ForeignKeyViolation, psycopg.errors.UniqueViolation)
_ATTEMPTS = 4


@dataclass
class IngestReport:
    documents: int = 0
    skipped: int = 0
    failed: int = 0
    chunks: int = 0
    events: int = 0
    keys: int = 0  # key links written (a key shared by two documents counts twice)
    seconds: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    errors: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        data = asdict(self)
        data["seconds"] = round(self.seconds, 3)
        data["timings"] = {k: round(v, 3) for k, v in self.timings.items()}
        return data


DocumentCallback = Callable[[str, str], None]  # (status: stored|skipped|failed, origin or message)


class Ingestor:
    def __init__(self, db: Database, preparer: DocumentPreparer, *, source: str = "default",
                 alignment: store.KeyAlignment | None = None, llm: LLM | None = None) -> None:
        self.db = db
        self.preparer = preparer
        self.source = source
        self.alignment = alignment or store.KeyAlignment()
        self.llm = llm

    def run(self, inputs: Iterable[ReadResult], *, on_document: DocumentCallback | None = None) -> IngestReport:
        report = IngestReport()
        started = time.perf_counter()
        notify = on_document or (lambda status, what: None)
        with self.db.connect() as conn, self.db.connect(autocommit=True) as reader, \
                ThreadPoolExecutor(max_workers=1, thread_name_prefix="sag-writer") as writer:
            # A lost commit after an OS crash is re-ingested next time; atomicity is unaffected.
            conn.execute("set synchronous_commit = off")
            conn.commit()
            source_id = self._init_source(conn)
            known = store.document_hashes(conn, source_id)
            conn.commit()
            if self.preparer.extractor.uses_pre_retrieval:
                self.preparer.pre_retriever = lambda vec: store.pre_retrieve(reader, source_id, vec)
            pending: Future[None] | None = None
            for item in inputs:
                if isinstance(item, InputFailure):
                    self._fail(report, str(item), notify)
                    continue
                if known.get(item.uri) == content_hash(item, extractor=self.preparer.extractor.name,
                                                       embedder=self.preparer.embedder.name):
                    report.skipped += 1
                    notify("skipped", item.origin)
                    continue
                prepared = self._prepare(item, report, notify)
                if prepared is None:
                    continue
                if pending is not None:
                    pending.result()
                known[item.uri] = prepared.content_hash
                pending = writer.submit(self._store, conn, source_id, prepared, report, notify)
            if pending is not None:
                pending.result()
        report.seconds = time.perf_counter() - started
        return report

    def _init_source(self, conn: psycopg.Connection) -> int:
        source_id = store.ensure_source(conn, self.source)
        if "key_types" not in store.source_config(conn, source_id):
            conn.execute(
                "update sag.sources set config = config || jsonb_build_object('key_types', %s::jsonb) where id = %s",
                [psycopg.types.json.Jsonb(DEFAULT_KEY_TYPES), source_id],
            )
        conn.commit()
        synonyms = store.source_config(conn, source_id).get("synonyms") or None
        conn.commit()
        if synonyms:
            self.preparer.synonyms = synonyms
        return source_id

    def _prepare(self, item: DocumentInput, report: IngestReport, notify: DocumentCallback) -> PreparedDocument | None:
        before = self.llm.usage.snapshot() if self.llm is not None else None
        try:
            prepared = self.preparer.prepare(item)
        except SagError as exc:
            self._fail(report, f"{item.origin or item.uri}: {exc}", notify)
            return None
        finally:
            if self.llm is not None and before is not None:
                used = self.llm.usage.snapshot() - before
                report.prompt_tokens += used.prompt_tokens
                report.completion_tokens += used.completion_tokens
        if self.llm is not None and before is not None:
            used = self.llm.usage.snapshot() - before
            prepared.prompt_tokens, prepared.completion_tokens = used.prompt_tokens, used.completion_tokens
        for name, seconds in prepared.timings.items():
            report.timings[name] = report.timings.get(name, 0.0) + seconds
        return prepared

    def _store(self, conn: psycopg.Connection, source_id: int, prepared: PreparedDocument, report: IngestReport,
               notify: DocumentCallback) -> None:
        started = time.perf_counter()
        origin = prepared.doc.origin or prepared.doc.uri
        for attempt in range(1, _ATTEMPTS + 1):
            try:
                with conn.transaction():
                    key_ids = store.resolve_keys(conn, source_id, prepared, self.alignment)
                    store.store_document(conn, source_id, prepared, key_ids)
                break
            except _RETRYABLE:
                if attempt == _ATTEMPTS:
                    self._fail(report, f"{origin}: gave up after {attempt} attempts (concurrent writers)", notify)
                    return
                time.sleep(0.05 * attempt)
            except psycopg.Error as exc:
                self._fail(report, f"{origin}: database refused the document: {str(exc).strip()}", notify)
                return
        report.documents += 1
        report.chunks += len(prepared.chunks)
        report.events += len(prepared.events)
        report.keys += len(prepared.links)
        report.timings["store"] = report.timings.get("store", 0.0) + time.perf_counter() - started
        notify("stored", origin)

    _report_lock = threading.Lock()

    def _fail(self, report: IngestReport, message: str, notify: DocumentCallback) -> None:
        with self._report_lock:  # the writer thread and the main thread both report failures
            report.failed += 1
            report.errors.append(message)
        notify("failed", message)
