"""Run an ingest: documents in, one transaction each, failures named and isolated, a report out.

Preparing a document (Python) overlaps with storing the previous one (PostgreSQL, in a writer thread):
the two cores of a small machine both stay busy.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import queue
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import asdict, dataclass, field

import psycopg

from ..db import aliases
from ..db import ingest as store
from ..db.connection import LOCK_TIMEOUT_S, Database, settle, timeouts_as_errors
from ..errors import DatabaseError, SagError
from ..llm.base import LLM
from ..types import DEFAULT_KEY_TYPES
from .prepare import DocumentPreparer, PreparedDocument, PreparedPart, StreamedDocument, content_hash
from .readers import DocumentInput, InputFailure, ReadResult

BULK_DOCUMENTS = 1000  # changed documents that always make a load "bulk"
BULK_MIN_DOCUMENTS = 200  # below this, row-by-row index updates are cheaper than a rebuild
# Text (bytes) that makes a load bulk whatever its number of documents, if at least as much as is stored: one
# 4 MB document is ~65,000 chunks, events and keys, ~1.5 ms of HNSW insertion each (issue #36 item 11).
BULK_MIN_BYTES = 200_000
_BULK = 16  # from this many changed documents on, prepare in a worker process
_WINDOW = 32  # documents in flight to the worker
_BATCH = 8  # documents prepared together: their texts go to the embedder in one call
_FLUSH_EVERY = 2000  # stored documents between two folds of the BM25 statistics queue
# Documents of at least this many characters are prepared and stored part by part (offline extractors): a few
# dozen chunks with their events, keys and vectors at a time, so neither side's memory grows with the document.
STREAM_CHARS = 64_000
PART_CHUNKS = 32  # chunks a part (about 270 events and 1,300 key links of dense English prose)

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
    # Inputs not stored because a document of the source already holds the same content under another URI
    # (the same file ingested from another directory): "ORIGIN: identical to URI".
    duplicates: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        data = asdict(self)
        data["seconds"] = round(self.seconds, 3)
        data["timings"] = {k: round(v, 3) for k, v in self.timings.items()}
        return data


DocumentCallback = Callable[[str, str], None]  # (status: stored|skipped|failed|note, origin or message)


class Ingestor:
    def __init__(self, db: Database, preparer: DocumentPreparer, *, source: str = "default",
                 alignment: store.KeyAlignment | None = None, llm: LLM | None = None,
                 bulk: bool | None = None, async_commit: bool = False, allow_duplicates: bool = False) -> None:
        """``bulk``: rebuild the vector indexes after the load instead of row by row — None decides by
        the number of changed documents (at least as many as already stored, at least 200, at most
        BULK_DOCUMENTS needed), True forces it, False never."""
        self.db = db
        self.bulk = bulk
        self.preparer = preparer
        self.source = source
        self.alignment = alignment or store.KeyAlignment()
        self.alignment_from_source = alignment is None  # an explicit alignment wins over the source's config
        self.llm = llm
        self.async_commit = async_commit
        self.allow_duplicates = allow_duplicates

    def run(self, inputs: Iterable[ReadResult], *, on_document: DocumentCallback | None = None) -> IngestReport:
        report = IngestReport()
        started = time.perf_counter()
        notify = on_document or (lambda status, what: None)
        with self.db.connect(autocommit=True) as conn, self.db.connect(autocommit=True) as reader:
            try:
                with timeouts_as_errors():  # waits for another client's bulk load or index build: bounded, named
                    self._run(conn, reader, inputs, report, notify)
            except psycopg.OperationalError as exc:
                if not (conn.broken or reader.broken or conn.closed or reader.closed):
                    raise
                # The server went away (crash, restart, network): one message, not one failure per document left.
                raise DatabaseError(
                    f"lost the connection to the database after storing {report.documents} documents "
                    f"({' '.join(str(exc).split()) or type(exc).__name__}); the document in flight was not stored. "
                    "Run the same command again when the server is back: stored documents are skipped.") from None
        report.seconds = time.perf_counter() - started
        return report

    def _run(self, conn: psycopg.Connection, reader: psycopg.Connection, inputs: Iterable[ReadResult],
             report: IngestReport, notify: DocumentCallback) -> None:
        store.writer_session(conn, async_commit=self.async_commit)
        source_id = self._init_source(conn)
        known = store.document_hashes(conn, source_id)
        chunks_before = aliases.last_chunk_id(conn, source_id)
        conn.commit()
        if self.preparer.extractor.uses_pre_retrieval:
            self.preparer.pre_retriever = lambda vec: store.pre_retrieve(reader, source_id, vec)
        todo = self._changed(inputs, known, report, notify)
        # Look ahead: enough changed documents make rebuilding the HNSW graphs once after the load
        # (several times cheaper than one graph insertion of ~1 ms per row) worth it.
        head = list(itertools.islice(todo, BULK_DOCUMENTS))
        # Rebuilding costs about as much as the rows already indexed: worth it once the load is at least
        # as big as what is there (and not for a handful of documents).
        stored = store.document_count(conn)  # all sources share the indexes
        needed = min(BULK_DOCUMENTS, max(BULK_MIN_DOCUMENTS, stored))
        bulk = bool(head) and (self.bulk or (self.bulk is None and len(head) >= needed))
        if head and self.bulk is None and not bulk:
            # A few big documents: the same rule on their text (rows follow the text, not the documents).
            size = sum(len(doc.text.encode("utf-8")) for doc in head)
            bulk = size >= BULK_MIN_BYTES and size >= store.stored_text_bytes(conn)
        began = time.perf_counter()
        if bulk:
            store.begin_bulk_load(conn, wait_seconds=LOCK_TIMEOUT_S)  # searches meanwhile scan exactly
        elif head and store.repair_vector_indexes(conn):
            # A bulk load died before rebuilding its indexes: the next writer does it (never a search).
            report.timings["index"] = time.perf_counter() - began
        finished = False
        try:
            for doc, outcome in self._prepared(itertools.chain(head, todo), report):
                if isinstance(outcome, str):
                    self._fail(report, f"{doc.origin or doc.uri}: {outcome}", notify)
                    continue
                self._store(conn, source_id, outcome, report, notify)
                for name, seconds in outcome.timings.items():  # a streamed document is prepared as it is stored
                    report.timings[name] = report.timings.get(name, 0.0) + seconds
            finished = True
        finally:
            if bulk and not finished and not conn.broken:
                # Interrupted (Ctrl-C) or failed: say why stopping takes a while (issue #37: 15 s of silence).
                notify("note", "stopping: rebuilding the vector indexes first (Ctrl-C again leaves them to the next "
                               "ingest, which rebuilds them)")
            # After a lost connection there is nothing to flush with (and the error says so already).
            if not finished:
                settle(conn)
            if not conn.broken:
                try:
                    store.flush_term_stats(conn)
                    if finished:  # keys written "name (other name)" in the new chunks (sag.key_aliases)
                        aliases.derive_aliases(conn, source_id, after_chunk_id=chunks_before)
                    if bulk:
                        built = time.perf_counter()
                        if store.finish_bulk_load(conn) >= 0:  # -1: another bulk load builds them when it ends
                            report.timings["index"] = time.perf_counter() - built
                except psycopg.Error:
                    if finished:
                        raise
                    # Already failing: the first error is the one to report (the queue is folded next time,
                    # the indexes rebuilt by the next writer).

    def _changed(self, inputs: Iterable[ReadResult], known: dict[str, str], report: IngestReport,
                 notify: DocumentCallback) -> Iterator[DocumentInput]:
        """The documents that need work: read failures are reported, unchanged documents skipped."""
        queued: dict[str, str] = {}  # this generator runs ahead of storage: remember what it already let through
        # A document's identity must not depend on where the command ran: a new URI whose content a document
        # of the source already holds (or one queued in this run) is that document, not a second copy.
        holders = {} if self.allow_duplicates else {digest: uri for uri, digest in known.items()}
        for item in inputs:
            if isinstance(item, InputFailure):
                self._fail(report, str(item), notify)
                continue
            digest = content_hash(item, extractor=self.preparer.extractor.name)
            # Stored before the hash left the embedder out (the bound embedder is the configured one).
            legacy = content_hash(item, extractor=self.preparer.extractor.name, embedder=self.preparer.embedder.name)
            if known.get(item.uri) in (digest, legacy) or digest == queued.get(item.uri):
                report.skipped += 1
                notify("skipped", item.origin)
                continue
            # A JSONL id or --uri is an identity.
            holder = holders.get(digest, holders.get(legacy)) if item.from_path else None
            if holder is not None and holder != item.uri and item.uri not in known:
                report.skipped += 1
                report.duplicates.append(f"{item.origin}: identical to {holder}, already stored")
                notify("skipped", item.origin)
                continue
            queued[item.uri] = digest
            if not self.allow_duplicates:
                holders.setdefault(digest, item.uri)
            yield item

    def _prepared(self, docs: Iterator[DocumentInput],
                  report: IngestReport) -> Iterator[tuple[DocumentInput, PreparedDocument | str]]:
        """Prepared documents in input order; an error message instead where preparation failed.

        Offline bulk ingests prepare in a worker process, so Python's extraction and PostgreSQL's
        index maintenance use both cores; LLM ingests stay in-process (their work is waiting on the LLM).
        Without an LLM, documents are prepared :data:`_BATCH` at a time, so the embedder gets the texts
        of several documents in one call. The worker gets the preparer pickled: embedders pickle as their
        settings (an HTTP client or a model is rebuilt there, never shipped).
        """
        if self.preparer.extractor.uses_pre_retrieval:
            for doc in docs:
                yield doc, self._prepare_here(doc, report)
            return
        head = list(itertools.islice(docs, _BULK))
        groups = _grouped(itertools.chain(head, docs), _BATCH)
        if len(head) < _BULK or not _can_spawn():
            for group in groups:
                if isinstance(group, list):
                    yield from zip(group, self.preparer.prepare_many(group), strict=True)
                else:
                    yield group, self._prepare_streamed(group)
            return
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=1, mp_context=context, initializer=_init_worker,
                                 initargs=(self.preparer, os.getpid())) as pool:
            window: deque[tuple[list[DocumentInput], Future[list[PreparedDocument | str]]]] = deque()
            for group in groups:
                if not isinstance(group, list):  # a big document: prepared here, part by part, in its turn
                    while window:
                        first, future = window.popleft()
                        yield from zip(first, future.result(), strict=True)
                    yield group, self._prepare_streamed(group)
                    continue
                window.append((group, pool.submit(_prepare_in_worker, group)))
                if len(window) * _BATCH >= _WINDOW:
                    first, future = window.popleft()
                    yield from zip(first, future.result(), strict=True)
            while window:
                first, future = window.popleft()
                yield from zip(first, future.result(), strict=True)

    def _prepare_streamed(self, doc: DocumentInput) -> StreamedDocument | str:
        try:
            return self.preparer.prepare_streamed(doc, PART_CHUNKS)
        except SagError as exc:
            return str(exc)

    def _prepare_here(self, doc: DocumentInput, report: IngestReport) -> PreparedDocument | str:
        before = self.llm.usage.snapshot() if self.llm is not None else None
        try:
            prepared = self.preparer.prepare(doc)
        except SagError as exc:
            return str(exc)
        finally:
            if self.llm is not None and before is not None:
                used = self.llm.usage.snapshot() - before
                report.prompt_tokens += used.prompt_tokens
                report.completion_tokens += used.completion_tokens
        if self.llm is not None and before is not None:
            used = self.llm.usage.snapshot() - before
            prepared.prompt_tokens, prepared.completion_tokens = used.prompt_tokens, used.completion_tokens
        return prepared

    def _init_source(self, conn: psycopg.Connection) -> int:
        source_id = store.ensure_source(conn, self.source)
        if "key_types" not in store.source_config(conn, source_id):
            store.set_key_types(conn, source_id, DEFAULT_KEY_TYPES)
        conn.commit()
        config = store.source_config(conn, source_id)
        conn.commit()
        synonyms = config.get("synonyms") or None
        if self.alignment_from_source and isinstance(config.get("alignment"), dict):
            self.alignment = store.KeyAlignment(**{**store.KeyAlignment().__dict__, **config["alignment"]})
        if synonyms:
            from ..text.normalize import normalize_synonyms

            self.preparer.synonyms = normalize_synonyms(synonyms)  # once, not per key
        return source_id

    def _store(self, conn: psycopg.Connection, source_id: int, prepared: PreparedDocument | StreamedDocument,
               report: IngestReport, notify: DocumentCallback) -> None:
        started = time.perf_counter()
        waited = 0.0  # for the parts of a streamed document: not storage time
        origin = prepared.doc.origin or prepared.doc.uri
        for attempt in range(1, _ATTEMPTS + 1):
            try:
                if isinstance(prepared, StreamedDocument):
                    # Its parts are made by a thread while the previous part is stored (Python's extraction and
                    # PostgreSQL's writes overlap); an extraction error rolls the whole document back.
                    prefetched = _Prefetched(prepared.parts())
                    try:
                        with prefetched as parts:
                            store.store_in_parts(conn, source_id, prepared, parts, self.alignment)
                    finally:
                        waited += prefetched.waited
                elif len(prepared.chunks) > PART_CHUNKS:
                    store.store_in_parts(conn, source_id, prepared, prepared.parts(PART_CHUNKS), self.alignment)
                else:
                    # One statement on an autocommit connection: one round trip, one transaction.
                    store.ingest_document(conn, source_id, prepared, self.alignment)
                break
            except SagError as exc:  # making a part of a streamed document failed (its embedder, say)
                self._fail(report, f"{origin}: {exc}", notify)
                return
            except _RETRYABLE as exc:
                if attempt == _ATTEMPTS:
                    self._fail(report, f"{origin}: gave up after {attempt} attempts with concurrent writers: "
                                       f"{str(exc).strip()}", notify)
                    return
                time.sleep(0.05 * attempt)
            except psycopg.errors.LockNotAvailable as exc:
                # Every document after this one would wait as long: stop the run with the reason.
                raise DatabaseError(f"{origin}: {str(exc).strip()}; {report.documents} documents were stored "
                                    "(run the same command again: they are skipped)") from None
            except psycopg.Error as exc:
                if conn.broken:
                    raise  # a lost connection: the run stops (Ingestor.run says so once)
                self._fail(report, f"{origin}: database refused the document: {str(exc).strip()}", notify)
                return
        report.documents += 1
        self._maybe_analyze(conn, report.documents)
        if report.documents % _FLUSH_EVERY == 0:
            store.flush_term_stats(conn)  # searches meanwhile add up the queue: keep it short
        if isinstance(prepared, StreamedDocument):
            report.chunks += prepared.chunk_count
            report.events += prepared.events
            report.keys += prepared.links
        else:
            report.chunks += len(prepared.chunks)
            report.events += len(prepared.events)
            report.keys += len(prepared.links)
        report.timings["store"] = report.timings.get("store", 0.0) + time.perf_counter() - started - waited
        notify("stored", origin)

    _report_lock = threading.Lock()
    _analyzed_at = 0

    def _maybe_analyze(self, conn: psycopg.Connection, stored: int) -> None:
        """Refresh planner statistics whenever this run has doubled what it wrote.

        Key resolution and storage run cached plans; planned against a nearly empty table they keep
        scanning sequentially long after the trigram and btree indexes would win (autovacuum lags a bulk load).
        """
        if stored >= 16 and stored >= 2 * self._analyzed_at:
            self._analyzed_at = stored
            store.analyze(conn)
            conn.commit()

    def _fail(self, report: IngestReport, message: str, notify: DocumentCallback) -> None:
        with self._report_lock:  # the writer thread and the main thread both report failures
            report.failed += 1
            report.errors.append(message)
        notify("failed", message)


_worker_preparer: DocumentPreparer | None = None


def _init_worker(preparer: DocumentPreparer, parent_pid: int) -> None:
    global _worker_preparer
    _worker_preparer = preparer
    threading.Thread(target=_exit_with_parent, args=(parent_pid,), name="sag-parent-watch", daemon=True).start()


def _exit_with_parent(parent_pid: int, interval: float = 0.2) -> None:
    """End this worker once the ingest that spawned it is gone (kill -9 gives it no chance to say so): an
    orphan would keep its memory, and multiprocessing's resource tracker, which waits for every process holding
    its pipe, would stay with it (issue #15: both seen 17 minutes after the kill)."""
    while os.getppid() == parent_pid:
        time.sleep(interval)
    os._exit(1)


def _prepare_in_worker(docs: list[DocumentInput]) -> list[PreparedDocument | str]:
    assert _worker_preparer is not None
    try:
        return _worker_preparer.prepare_many(docs)
    except SagError as exc:
        return [str(exc)] * len(docs)


def _grouped(items: Iterable[DocumentInput], size: int) -> Iterator[list[DocumentInput] | DocumentInput]:
    """Documents in input order: up to ``size`` small ones in a list, a big one (:data:`STREAM_CHARS`) alone."""
    batch: list[DocumentInput] = []
    for doc in items:
        if len(doc.text) >= STREAM_CHARS:
            if batch:
                yield batch
                batch = []
            yield doc
            continue
        batch.append(doc)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


class _Prefetched:
    """The parts of a streamed document, each made by a thread while the one before is being stored (at most
    two parts exist at a time).  An exception raised making a part is raised where the part is read; leaving
    the ``with`` block early stops the thread."""

    def __init__(self, parts: Iterator[PreparedPart]) -> None:
        self._parts = parts
        self._queue: queue.Queue[tuple[str, object]] = queue.Queue(maxsize=1)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._make, name="sag-parts", daemon=True)
        self.waited = 0.0  # seconds the reader waited for a part

    def __enter__(self) -> Iterator[PreparedPart]:
        self._thread.start()
        return self._read()

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        while self._thread.is_alive():  # let a blocked put() through
            try:
                self._queue.get(timeout=0.05)
            except queue.Empty:
                pass
        self._thread.join()

    def _put(self, item: tuple[str, object]) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _make(self) -> None:
        try:
            for part in self._parts:
                if not self._put(("part", part)):
                    return
            self._put(("end", None))
        except BaseException as exc:  # noqa: BLE001 - handed to the reader, raised there
            self._put(("error", exc))

    def _read(self) -> Iterator[PreparedPart]:
        while True:
            started = time.perf_counter()
            kind, value = self._queue.get()
            self.waited += time.perf_counter() - started
            if kind == "end":
                return
            if kind == "error":
                raise value  # type: ignore[misc]
            yield value  # type: ignore[misc]


def _can_spawn() -> bool:
    """A spawned worker re-imports ``__main__`` from its file: impossible when it came from stdin or ``-c``."""
    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    return main_file is None or os.path.exists(main_file)
