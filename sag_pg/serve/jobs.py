"""Ingest jobs: a long ingest is not one HTTP request.  ``POST /ingest`` queues the documents and answers a
job at once; one worker thread ingests jobs in order (the library's ingest is one writer), counting each
document as it is stored, skipped or fails; ``GET /jobs/{id}`` reads the progress and, at the end, the report
that `sag-pg ingest --json` prints."""

from __future__ import annotations

import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError, NotFoundError, user_error
from ..ingest.readers import ReadResult, document_from_text, read_inputs

if TYPE_CHECKING:
    from ..client import SAG

__all__ = ["Job", "Jobs"]

KEEP_FINISHED = 1000  # jobs remembered after they end


@dataclass
class Job:
    id: str
    source: str
    total: int | None
    status: str = "queued"  # queued | running | done | failed
    stored: int = 0
    skipped: int = 0
    failed: int = 0
    errors: list[str] = field(default_factory=list)
    report: dict[str, Any] | None = None
    error: str | None = None
    created_at: float = field(default_factory=time.time)
    finished_at: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "source": self.source, "status": self.status, "total": self.total,
                "progress": {"stored": self.stored, "skipped": self.skipped, "failed": self.failed},
                "errors": self.errors[-20:], "report": self.report, "error": self.error}


class Jobs:
    def __init__(self, sag: SAG) -> None:
        self._sag = sag
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sag-ingest")

    def get(self, job_id: str) -> Job:
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None:
            raise NotFoundError(f"no ingest job {job_id!r} (jobs are kept in memory until the server stops)")
        return job

    def submit_documents(self, documents: list[dict[str, Any]], *, source: str) -> Job:
        inputs: list[ReadResult] = []
        for n, record in enumerate(documents, 1):
            if not isinstance(record, dict) or not isinstance(record.get("text"), str):
                raise InputError(f"document {n}: expected an object with a string \"text\"")
            uri = str(record.get("id") or record.get("uri") or f"api/{uuid.uuid4().hex}")
            metadata = record.get("metadata") or {}
            if not isinstance(metadata, dict):
                raise InputError(f"document {n} ({uri}): \"metadata\" must be an object")
            inputs.append(document_from_text(record["text"], uri=uri, origin=f"document {n}",
                                             title=str(record.get("title") or ""), metadata=metadata))
        return self._submit(lambda: inputs, len(inputs), source)

    def submit_files(self, files: list[tuple[str, bytes]], *, source: str) -> Job:
        folder = Path(tempfile.mkdtemp(prefix="sag-upload-"))
        paths = []
        for name, data in files:
            path = folder / (Path(name).name or "upload.txt")
            path.write_bytes(data)
            paths.append(path)
        return self._submit(lambda: read_inputs(paths), None, source, cleanup=folder)

    def _submit(self, inputs: Any, total: int | None, source: str, cleanup: Path | None = None) -> Job:
        job = Job(id=uuid.uuid4().hex, source=source, total=total)
        with self._lock:
            self._jobs[job.id] = job
            finished = [j for j in self._jobs.values() if j.finished_at is not None]
            for old in sorted(finished, key=lambda j: j.finished_at or 0)[:max(0, len(finished) - KEEP_FINISHED)]:
                del self._jobs[old.id]
        self._worker.submit(self._run, job, inputs, cleanup)
        return job

    def _run(self, job: Job, inputs: Any, cleanup: Path | None) -> None:
        job.status = "running"

        def seen(status: str, what: str) -> None:
            if status == "stored":
                job.stored += 1
            elif status == "skipped":
                job.skipped += 1
            elif status == "note":
                job.errors.append(what)
            else:
                job.failed += 1
                job.errors.append(what)

        try:
            report = self._sag.ingest(inputs(), source=job.source, on_document=seen)
            job.report = report.to_dict()
            job.status = "done"
        except Exception as exc:  # noqa: BLE001 - the job records what went wrong; the server keeps running
            error = user_error(exc)
            job.error = str(error) if error is not None else f"internal error ({type(exc).__name__})"
            job.status = "failed"
        finally:
            job.finished_at = time.time()
            if cleanup is not None:
                for path in cleanup.iterdir():
                    path.unlink(missing_ok=True)
                cleanup.rmdir()

    def close(self) -> None:
        self._worker.shutdown(wait=True, cancel_futures=True)
