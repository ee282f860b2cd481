"""Ingestion with an ``openai:`` embedder (the scripted local server), bulk path included (issue #14)."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest

from sag_pg import SAG, Settings
from tests.openai_server import FakeOpenAIServer

from .integrity import violations

PEOPLE = ["Ada Lovelace", "Alan Turing", "Grace Hopper", "Claude Shannon"]
PLACES = ["London", "Princeton", "Cambridge", "Zurich"]


def corpus(path: Path, n: int) -> Path:
    with path.open("w") as out:
        for i in range(n):
            a, b, place = PEOPLE[i % 4], PEOPLE[(i + 1) % 4], PLACES[(i * 3) % 4]
            text = f"{a} met {b} in {place} in {1900 + i}. They talked about the Analytical Engine."
            out.write(json.dumps({"id": f"doc-{i}", "title": f"Meeting {i}", "text": text}) + "\n")
    return path


@pytest.fixture
def openai_sag(db_dsn: str, tmp_path: Path, openai_server: FakeOpenAIServer) -> SAG:
    settings = Settings(database_url=db_dsn, home=tmp_path / "home", embedder="openai:e5-fake",
                        embed_base_url=openai_server.base_url, llm_max_retries=0)
    return SAG(settings=settings)


def test_bulk_ingest_with_an_openai_embedder(openai_sag: SAG, openai_server: FakeOpenAIServer,
                                             tmp_path: Path) -> None:
    # 20 documents: the bulk path, which prepares in a spawned worker process (it used to crash
    # with "cannot pickle '_thread.RLock' object": the embedder's HTTP client went to the worker).
    report = openai_sag.ingest_files([corpus(tmp_path / "c.jsonl", 20)])
    assert (report.documents, report.failed, report.errors) == (20, 0, [])
    requests = openai_server.embedding_requests
    texts = [text for r in requests for text in r["input"]]
    # Batched: several documents per call, not one call per text (nor per document).
    assert len(requests) <= 1 + 20 // 8 + 2
    # E5 by its name: stored texts are passages; each distinct key text is embedded once.
    assert all(t.startswith("passage: ") for t in texts[1:])
    assert texts.count("passage: Ada Lovelace") == 1
    with psycopg.connect(openai_sag.settings.database_url) as conn:
        assert violations(conn) == {}
        bound = conn.execute("select sag.bound_embedder()->>'name'").fetchone()
        assert bound is not None and bound[0].startswith("openai:e5-fake:8:prefix-")
        keys = conn.execute("select count(*) from sag.keys where embedding is not null").fetchone()
        assert keys is not None and keys[0] > 0
    # The question is embedded as a query.
    result = openai_sag.search("Who did Ada Lovelace meet in London?", top_n=3)
    assert result.chunks
    assert any(t == "query: Who did Ada Lovelace meet in London?"
               for r in openai_server.embedding_requests for t in r["input"])


def test_small_ingest_in_process_batches_too(openai_sag: SAG, openai_server: FakeOpenAIServer,
                                             tmp_path: Path) -> None:
    report = openai_sag.ingest_files([corpus(tmp_path / "c.jsonl", 10)])
    assert (report.documents, report.failed) == (10, 0)
    # probe + 2 batches (8 + 2 documents)
    assert len(openai_server.embedding_requests) == 3

