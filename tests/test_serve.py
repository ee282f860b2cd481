"""`sag-pg serve` as a client sees it: a real server process, real HTTP on loopback, a real database.

The API answers what the CLI's --json prints, errors are RFC 9457 problem documents with the CLI's message,
the OpenAPI document is valid (openapi-spec-validator) and names an endpoint for every CLI read command, the
service is read-only unless --allow-writes, refuses to listen beyond loopback without a token and then
demands it, and stays within its pinned sources.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from sag_pg import SAG
from sag_pg.config import Settings

from .cli_support import run_cli
from .databases import CorpusDatabases

DOCS = {
    "notes/halvard.md": "# Halvard Berg\n\nHalvard Berg founded Fjord Capital in Oslo in 1998. Fjord Capital financed "
                        "the Svalbard expedition of 2004.\n",
    "notes/expedition.md": "# Svalbard expedition\n\nThe Svalbard expedition sailed on the ship Kronprins Haakon "
                           "and mapped the glaciers near Longyearbyen.\n",
}
TOKEN = "t" * 24


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(dsn: str, tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAG_")}
    return {**env, "SAG_DATABASE_URL": dsn, "SAG_HOME": str(tmp_path / "home"), **extra}


@contextmanager
def _server(dsn: str, tmp_path: Path, *args: str, **env: str) -> Iterator[str]:
    port = _free_port()
    log = tmp_path / f"serve-{port}.log"
    with log.open("w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "sag_pg", "serve", "--port", str(port), *args],
                                env=_env(dsn, tmp_path, **env), stdout=subprocess.DEVNULL, stderr=err)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            if proc.poll() is not None:
                raise AssertionError(f"the server exited: {log.read_text()}")
            try:
                with urllib.request.urlopen(base + "/health", timeout=2):
                    break
            except urllib.error.HTTPError:
                break  # it answers (beyond loopback every path wants the token: 401)
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.1)
        else:
            raise AssertionError(f"the server did not answer within a minute: {log.read_text()}")
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def _call(url: str, *, method: str = "GET", body: Any = None,
          headers: dict[str, str] | None = None) -> tuple[int, str, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"content-type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, response.headers.get("content-type", ""), json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("content-type", ""), json.loads(exc.read())


def _fill_corpus(dsn: str) -> None:
    with tempfile.TemporaryDirectory() as home, SAG(settings=Settings(database_url=dsn, home=Path(home))) as sag:
        for uri, text in DOCS.items():
            sag.ingest_text(text, uri=uri, source="research")
        sag.ingest_text("# Other\n\nNothing about Oslo here, only Bergen.\n", uri="other.md", source="other")


@pytest.fixture
def corpus(corpus_databases: CorpusDatabases) -> Iterator[str]:
    """DSN of a fresh database with DOCS in source research and one document in source other (a copy of a
    database filled once per session)."""
    yield corpus_databases.copy("serve", _fill_corpus)
    corpus_databases.drop_copy("serve")


def _finished(base: str, job: dict[str, Any]) -> dict[str, Any]:
    """The ingest job once it is done or failed (polled through GET /jobs/{id})."""
    for _ in range(600):
        job = _call(base + f"/jobs/{job['id']}")[2]
        if job["status"] in ("done", "failed"):
            break
        time.sleep(0.1)
    return job


@pytest.fixture
def cli_json(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
             tmp_path: Path) -> Callable[..., Any]:
    """``sag-pg ARGS --json`` on a database, in this process (tests/cli_support.run_cli: the console script's
    entry point), with the environment the server gets (_env): its parsed output."""
    def run(dsn: str, *args: str) -> Any:
        for name in [name for name in os.environ if name.startswith("SAG_")]:
            monkeypatch.delenv(name)
        monkeypatch.setenv("SAG_DATABASE_URL", dsn)
        monkeypatch.setenv("SAG_HOME", str(tmp_path / "home"))
        code, out, err = run_cli(capsys, *args, "--json")
        assert code == 0, err
        return json.loads(out)

    return run


def _without_timings(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _without_timings(v) for k, v in data.items() if k not in ("timings", "timings_ms", "seconds")}
    if isinstance(data, list):
        return [_without_timings(v) for v in data]
    return data


def test_the_api_answers_what_the_cli_prints(corpus: str, tmp_path: Path, cli_json: Callable[..., Any]) -> None:
    with _server(corpus, tmp_path) as base:
        status, kind, found = _call(base + "/search?q=Who+financed+the+Svalbard+expedition&source=research&top_n=3")
        assert status == 200 and kind.startswith("application/json")
        expected = cli_json(corpus, "search", "Who financed the Svalbard expedition", "--source",
                             "research", "--top-n", "3")
        assert _without_timings(found) == _without_timings(expected)
        assert found["chunks"][0]["document_uri"].startswith("notes/")
        assert _call(base + "/sources")[2] == cli_json(corpus, "sources")
        assert _call(base + "/documents?source=research")[2] == cli_json(corpus, "documents",
                                                                          "--source", "research")
        assert _call(base + "/documents/notes/halvard.md?source=research")[2] == cli_json(
            corpus, "show", "notes/halvard.md", "--source", "research")
        assert _call(base + "/entities/Fjord%20Capital/related?source=research")[2] == cli_json(
            corpus, "graph", "related", "Fjord Capital", "--source", "research")
        assert _call(base + "/stats?source=research")[2] == cli_json(corpus, "stats", "--source", "research")
        assert _call(base + "/graph/relations?source=research")[2] == cli_json(
            corpus, "graph", "relations", "--source", "research")
        with urllib.request.urlopen(base + "/export?source=research", timeout=60) as response:
            exported = [json.loads(line) for line in response.read().decode().splitlines()]
        assert sorted(d["id"] for d in exported) == sorted(DOCS)


def test_errors_are_problem_documents_with_the_cli_message(corpus: str, tmp_path: Path) -> None:
    with _server(corpus, tmp_path) as base:
        status, kind, body = _call(base + "/search?q=x&source=nosuch")
        assert status == 404 and kind == "application/problem+json"
        assert body["status"] == 404 and "no source named 'nosuch'" in body["detail"]
        status, kind, body = _call(base + "/search?q=x&top_n=0")
        assert status == 422 and kind == "application/problem+json" and body["detail"].startswith("top_n:")
        status, _, body = _call(base + "/search?q=x&top_n=99999999999")
        assert status == 422


def test_openapi_is_valid_and_covers_every_read_command(corpus: str, tmp_path: Path) -> None:
    from openapi_spec_validator import validate

    with _server(corpus, tmp_path) as base:
        status, _, spec = _call(base + "/openapi.json")
    assert status == 200
    validate(spec)
    paths = set(spec["paths"])
    # Every CLI command that reads has its endpoint (the commands that write or compute and store — ingest,
    # delete, source, cluster, communities build, graph add/tags, kg import, memory evict, bench, db upgrade —
    # are not read commands; ingest and delete have write endpoints).
    read_commands = {"search": "/search", "ask": "/ask", "sources": "/sources", "stats": "/stats",
                     "documents": "/documents", "show": "/documents/{uri}", "export": "/export",
                     "graph related": "/entities/{name}/related", "graph relations": "/graph/relations",
                     "graph tags": "/graph/tags",
                     "memory recall": "/memory/recall", "memory stats": "/memory/stats",
                     "kg relations": "/kg/relations/{entity}", "kg triples": "/kg/triples/{entity}",
                     "communities list": "/communities", "communities show": "/communities/{community_id}",
                     "db status": "/db/status"}
    for command, path in read_commands.items():
        assert path in paths, (command, path)
    for path in ("/chunks/{chunk_id}", "/entities/{name}", "/health", "/ready", "/jobs/{job_id}", "/ingest"):
        assert path in paths, path


def test_read_only_by_default_and_writes_with_allow_writes(corpus: str, tmp_path: Path) -> None:
    with _server(corpus, tmp_path) as base:
        status, _, body = _call(base + "/ingest?source=research", method="POST",
                                body={"documents": [{"id": "x.md", "text": "Ingrid Lund sails."}]})
        assert status == 403 and "read-only" in body["detail"]
        assert _call(base + "/documents/notes/halvard.md?source=research", method="DELETE")[0] == 403
    with _server(corpus, tmp_path, "--allow-writes") as base:
        status, _, job = _call(base + "/ingest?source=research", method="POST",
                               body={"documents": [{"id": "notes/ingrid.md", "title": "Ingrid",
                                                    "text": "Ingrid Lund captained the Kronprins Haakon in 2004."}]})
        assert status == 202 and job["status"] in ("queued", "running", "done")
        job = _finished(base, job)
        assert job["status"] == "done" and job["progress"]["stored"] == 1, job
        uris = [c["document_uri"] for c in _call(base + "/search?q=Ingrid+Lund&source=research")[2]["chunks"]]
        assert "notes/ingrid.md" in uris
        assert _call(base + "/documents/notes/ingrid.md?source=research", method="DELETE")[0] == 200
        assert _call(base + "/documents/notes/ingrid.md?source=research")[0] == 404
        # Files, multipart, at the same POST /ingest.
        boundary = "sagpgboundary"
        body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"astrid.md\"\r\n"
                f"Content-Type: text/markdown\r\n\r\n# Astrid\n\nAstrid Holm sailed to Tromsø.\n\r\n"
                f"--{boundary}--\r\n").encode()
        request = urllib.request.Request(base + "/ingest?source=research", data=body, method="POST",
                                         headers={"content-type": f"multipart/form-data; boundary={boundary}"})
        with urllib.request.urlopen(request, timeout=60) as response:
            job = json.loads(response.read())
        job = _finished(base, job)
        assert job["status"] == "done" and job["progress"]["stored"] == 1, job
        assert _call(base + "/documents/astrid.md?source=research")[0] == 200


def test_pinned_sources_are_the_only_ones_reached(corpus: str, tmp_path: Path) -> None:
    with _server(corpus, tmp_path, "--source", "research") as base:
        assert [s["name"] for s in _call(base + "/sources")[2]] == ["research"]
        status, _, body = _call(base + "/search?q=Bergen&source=other")
        assert status == 403 and "outside this server's sources" in body["detail"]
        uris = {c["document_uri"] for c in _call(base + "/search?q=Bergen+Oslo")[2]["chunks"]}
        assert uris and "other.md" not in uris


def test_a_token_is_required_beyond_loopback(corpus: str, tmp_path: Path) -> None:
    refused = subprocess.run([sys.executable, "-m", "sag_pg", "serve", "--host", "0.0.0.0", "--port",
                              str(_free_port())], env=_env(corpus, tmp_path), capture_output=True, text=True,
                             timeout=120, check=False)
    assert refused.returncode == 1
    assert refused.stderr.startswith("Error: --host 0.0.0.0 listens beyond this machine: set SAG_API_TOKEN")
    with _server(corpus, tmp_path, "--host", "0.0.0.0", SAG_API_TOKEN=TOKEN) as base:
        status, kind, _ = _call(base + "/sources")
        assert status == 401 and kind == "application/problem+json"
        assert _call(base + "/sources", headers={"Authorization": "Bearer " + "x" * 24})[0] == 401
        assert _call(base + "/sources", headers={"Authorization": f"Bearer {TOKEN}"})[0] == 200
        assert _call(base + "/mcp", method="POST", body={})[0] == 401  # the MCP endpoint too
