"""`sag-pg mcp` through the official MCP SDK's own client: every tool in memory, the pins and the read-only
mode, errors as tool errors, and the command itself over stdio and Streamable HTTP."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import psycopg
import pytest
from click.testing import CliRunner
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult

from sag_pg import SAG, Settings
from sag_pg.cli import cli
from sag_pg.demo import DEMO_QUERIES, DEMO_SOURCE
from sag_pg.mcp import Policy, RefusedError
from sag_pg.mcp.server import build_server

from .databases import CorpusDatabases
from .openai_server import FakeOpenAIServer

ADA = ("# Ada Lovelace\n\nAda Lovelace wrote the first published algorithm in 1843. "
       "She worked with Charles Babbage on the Analytical Engine.")
HOPPER = "# Grace Hopper\n\nGrace Hopper wrote the first compiler in 1952 at Remington Rand."
READ_TOOLS = {"list_sources", "search", "ask", "list_documents", "get_document", "get_chunk", "get_entity",
              "get_relations", "get_triples", "recall", "related"}
WRITE_TOOLS = {"ingest_text", "delete_document", "remember", "forget"}
NS = "http://rdf.freebase.com/ns/"


def _fill_corpus(dsn: str) -> None:
    with tempfile.TemporaryDirectory() as home, SAG(settings=Settings(database_url=dsn, home=Path(home))) as sag:
        sag.ingest_text(ADA, uri="ada.md", source="alpha")
        sag.ingest_text(HOPPER, uri="hopper.md", source="beta")
        triples = Path(home) / "kg.nt"
        triples.write_text(
            f"<{NS}m.ada> <{NS}people.person.parents> <{NS}m.byron> .\n"
            f"<{NS}m.ada> <{NS}people.person.profession> <{NS}m.math> .\n"
            f'<{NS}m.ada> <{NS}type.object.name> "Ada Lovelace"@en .\n'
            f'<{NS}m.byron> <{NS}type.object.name> "Lord Byron"@en .\n'
            f'<{NS}m.math> <{NS}type.object.name> "Mathematician"@en .\n', encoding="utf-8")
        sag.kg.import_files([triples], source="kg")


@pytest.fixture
def corpus(corpus_databases: CorpusDatabases, tmp_path: Path) -> Iterator[SAG]:
    """Two sources of one document each (alpha: ada.md, beta: hopper.md) and a knowledge graph (kg): a client on
    a fresh copy of a database filled once per session."""
    with corpus_databases.client("mcp", _fill_corpus, tmp_path / "unused-home") as sag:
        yield sag


def session(server: Any, body: Callable[[Client], Awaitable[Any]], mode: str = "auto") -> Any:
    """Run ``body`` with the SDK's client connected to ``server`` (in memory, a URL or stdio parameters);
    ``mode`` legacy: the initialize handshake of clients that predate the 2026 protocol."""
    async def main() -> Any:
        async with Client(server, mode=mode) as client:
            return await body(client)

    return anyio.run(main)


def call(sag: SAG, tool: str, arguments: dict[str, Any] | None = None, **policy: Any) -> CallToolResult:
    return session(build_server(sag, Policy(**policy)), lambda client: client.call_tool(tool, arguments or {}))


def ok(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    # The text an LLM reads is the same data as the structured result.
    assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]
    return result.structured_content


def error(result: CallToolResult) -> str:
    assert result.is_error
    return result.content[0].text  # type: ignore[union-attr]


def uris(data: dict[str, Any]) -> list[str]:
    return [hit["document_uri"] for hit in data["chunks"]]


# -- the tools, in memory ----------------------------------------------------------------------------------


def test_read_only_server_lists_only_read_tools(sag: SAG) -> None:
    tools = session(build_server(sag), lambda client: client.list_tools()).tools
    assert {t.name for t in tools} == READ_TOOLS
    assert all(t.annotations.read_only_hint for t in tools)
    search = next(t for t in tools if t.name == "search")
    assert search.input_schema["required"] == ["query"]
    assert search.input_schema["properties"]["strategy"]["enum"] == ["sag", "dataflow"]
    assert search.description.startswith("Search the knowledge base")


def test_writing_server_adds_the_write_tools(sag: SAG) -> None:
    tools = session(build_server(sag, Policy(allow_writes=True)), lambda client: client.list_tools()).tools
    assert {t.name for t in tools} == READ_TOOLS | WRITE_TOOLS
    destructive = {t.name for t in tools if t.annotations.destructive_hint}
    assert destructive == {"delete_document", "forget"}


def test_list_sources(corpus: SAG) -> None:
    names = [s["name"] for s in ok(call(corpus, "list_sources"))["sources"]]
    assert names == ["alpha", "beta", "kg"]
    pinned = ok(call(corpus, "list_sources", sources=("beta",)))["sources"]
    assert [(s["name"], s["documents"]) for s in pinned] == [("beta", 1)]


def test_search(corpus: SAG) -> None:
    data = ok(call(corpus, "search", {"query": "Who worked with Charles Babbage?", "source": ["alpha"]}))
    assert uris(data) == ["ada.md"]
    assert "Analytical Engine" in data["chunks"][0]["content"]
    everywhere = ok(call(corpus, "search", {"query": "Grace Hopper compiler", "top_n": 5}))
    assert "hopper.md" in uris(everywhere)  # omitted source on an unpinned server: every source
    dataflow = ok(call(corpus, "search", {"query": "Grace Hopper compiler", "source": ["beta"],
                                          "strategy": "dataflow"}))
    assert uris(dataflow) == ["hopper.md"]


def test_pinned_server_refuses_other_sources(corpus: SAG) -> None:
    pinned = {"sources": ("alpha",)}
    message = error(call(corpus, "search", {"query": "Grace Hopper", "source": ["beta"]}, **pinned))
    assert "source 'beta' is outside this server's sources: alpha" in message
    # Omitted, the source is the pinned one: the question names beta's document, which is never found.
    assert "hopper.md" not in uris(ok(call(corpus, "search", {"query": "Grace Hopper compiler 1952"}, **pinned)))
    assert [d["uri"] for d in ok(call(corpus, "list_documents", **pinned))["documents"]] == ["ada.md"]
    assert "outside this server's sources" in error(call(corpus, "list_documents", {"source": ["beta"]}, **pinned))
    assert "outside" in error(call(corpus, "get_document", {"uri": "hopper.md", "source": "beta"}, **pinned))
    assert error(call(corpus, "get_document", {"uri": "hopper.md"}, **pinned)).endswith(
        "no document 'hopper.md' in source 'alpha'")
    assert "no key 'Grace Hopper'" in error(call(corpus, "get_entity", {"name": "Grace Hopper"}, **pinned))
    assert ok(call(corpus, "recall", {"query": "Grace Hopper compiler"}, **pinned))["memories"] == []
    assert "outside" in error(call(corpus, "recall", {"query": "Hopper", "source": ["beta"]}, **pinned))
    assert "outside" in error(call(corpus, "get_relations", {"entity": "m.ada", "source": "kg"}, **pinned))
    assert "outside" in error(call(corpus, "related", {"entity": "Grace Hopper", "source": "beta"}, **pinned))
    assert "outside" in error(call(corpus, "ask", {"question": "Who?", "source": ["beta"]}, **pinned))


def test_get_chunk_of_another_source_is_not_found(corpus: SAG) -> None:
    hopper = corpus.search("Grace Hopper compiler", source="beta").chunks[0].chunk_id
    chunk = ok(call(corpus, "get_chunk", {"chunk_id": hopper}))
    assert chunk["document_uri"] == "hopper.md" and "first compiler" in chunk["content"]
    # Pinned elsewhere, the chunk is as unknown as a chunk that does not exist (same words).
    assert error(call(corpus, "get_chunk", {"chunk_id": hopper}, sources=("alpha",))).endswith(f"no chunk {hopper}")
    assert error(call(corpus, "get_chunk", {"chunk_id": 999999})).endswith("no chunk 999999")


def test_list_and_get_documents(corpus: SAG) -> None:
    listed = ok(call(corpus, "list_documents"))["documents"]
    assert [(d["source"], d["uri"], d["chunk_count"]) for d in listed] == [("alpha", "ada.md", 1),
                                                                          ("beta", "hopper.md", 1)]
    document = ok(call(corpus, "get_document", {"uri": "ada.md"}))
    assert document["source"] == "alpha" and document["title"] == "Ada Lovelace"
    assert "Analytical Engine" in document["chunks"][0]["content"]
    assert document["chunks"][0]["events"], "each chunk comes with its events"
    # On a server pinned to both sources, an omitted source means the one pinned source that holds the uri.
    both = ok(call(corpus, "get_document", {"uri": "hopper.md"}, sources=("alpha", "beta")))
    assert both["source"] == "beta"
    assert error(call(corpus, "get_document", {"uri": "nope.md"}, sources=("alpha", "beta"))).endswith(
        "no document 'nope.md' in sources alpha, beta")


def test_get_entity(corpus: SAG) -> None:
    entity = ok(call(corpus, "get_entity", {"name": "ada lovelace", "source": ["alpha"]}))
    assert entity["source"] == "alpha" and entity["event_count"] >= 1
    assert any("Analytical Engine" in e["content"] for e in entity["events"])
    assert "charles babbage" in {r["name"].lower() for r in entity["related"]}


def test_get_relations_and_triples(corpus: SAG) -> None:
    relations = ok(call(corpus, "get_relations", {"entity": "m.ada", "source": "kg", "question": "Ada's parents"}))
    names = [r["relation"] for r in relations["relations"]]
    assert sorted(names) == ["people.person.parents", "people.person.profession"]
    assert names[0] == "people.person.parents"  # ranked against the question
    triples = ok(call(corpus, "get_triples", {"entity": "m.ada", "relations": ["people.person.parents"],
                                              "source": "kg"}))
    assert "Lord Byron" in json.dumps(triples["triples"])
    assert "Mathematician" not in json.dumps(triples["triples"])


def test_a_read_only_server_records_no_recall_statistics(corpus: SAG) -> None:
    """Issue #36.7: searches and recalls through a read-only server leave sag.recall_stats as they were."""
    def stats() -> list[tuple[Any, ...]]:
        corpus.memory.flush()
        with psycopg.connect(corpus.dsn) as conn:
            return conn.execute("select document_id, recall_count from sag.recall_stats order by 1").fetchall()

    before = stats()
    for _ in range(3):
        ok(call(corpus, "search", {"query": "Who worked with Charles Babbage?", "source": ["alpha"]}))
        ok(call(corpus, "recall", {"query": "Charles Babbage", "source": ["alpha"]}))
    assert stats() == before
    corpus.record_recalls = True
    ok(call(corpus, "recall", {"query": "Charles Babbage", "source": ["alpha"]}, allow_writes=True))
    assert stats() != before  # a server that may write records them (the check above can fail)


def test_recall_and_related(corpus: SAG) -> None:
    memories = ok(call(corpus, "recall", {"query": "Charles Babbage", "source": ["alpha"]}))["memories"]
    assert [m["uri"] for m in memories] == ["ada.md"]
    assert set(memories[0]["breakdown"]) == {"overlap", "graph", "temporal", "reference"}
    related = ok(call(corpus, "related", {"entity": "Ada Lovelace", "source": "alpha", "depth": 1}))
    assert "charles babbage" in {r["name"].lower() for r in related["related"]}
    assert {r["distance"] for r in related["related"]} == {1}


def test_ask_without_an_llm_answers_extractively(corpus: SAG) -> None:
    """Issue #37: the tool works without an LLM (the facts that match, cited) and says so."""
    data = ok(call(corpus, "ask", {"question": "Who worked with Babbage?", "source": ["alpha"]}))
    assert data["mode"] == "extractive" and data["sufficient"]
    assert "Charles Babbage" in data["answer"] and data["notes"][0].startswith("no LLM configured (SAG_LLM)")
    assert [c["document_uri"] for c in data["citations"]] == ["ada.md"]
    assert "SAG_LLM" in error(call(corpus, "ask", {"question": "Who worked with Babbage?", "source": ["alpha"],
                                                   "mode": "normal"}))


def test_ask_with_an_llm(tmp_path: Path, corpus: SAG, openai_server: FakeOpenAIServer) -> None:
    db_dsn = corpus.dsn
    chunk = corpus.search("Charles Babbage", source="alpha").chunks[0].chunk_id
    openai_server.script(json.dumps({"answer": f"Ada Lovelace [{chunk}].", "sufficient": True, "missing": ""}))
    settings = Settings(database_url=db_dsn, home=tmp_path, llm="openai:test", llm_base_url=openai_server.base_url,
                        llm_max_retries=0)
    with SAG(settings=settings) as asker:
        answer = ok(call(asker, "ask", {"question": "Who worked with Charles Babbage?", "source": ["alpha"]}))
    assert answer["answer"] == f"Ada Lovelace [{chunk}]."
    assert [c["document_uri"] for c in answer["citations"]] == ["ada.md"]


def test_writes(corpus: SAG) -> None:
    writes = {"allow_writes": True, "sources": ("beta",)}
    stored = ok(call(corpus, "ingest_text", {"text": "# Alan Turing\n\nAlan Turing proposed the Turing machine "
                                                     "in 1936.", "uri": "turing.md"}, **writes))
    assert (stored["source"], stored["documents"]) == ("beta", 1)
    assert uris(ok(call(corpus, "search", {"query": "Turing machine"}, **writes)))[0] == "turing.md"

    note = "Grace Hopper popularised the term debugging."
    first = ok(call(corpus, "remember", {"text": note}, **writes))
    again = ok(call(corpus, "remember", {"text": note + "\n"}, **writes))
    assert first["uri"] == again["uri"] and first["uri"].startswith("memory:")
    assert (first["documents"], again["documents"], again["skipped"]) == (1, 0, 1)  # unchanged: skipped

    assert ok(call(corpus, "forget", {"entity": "Alan Turing"}, **writes))["forgotten"] is True
    assert ok(call(corpus, "forget", {"entity": "Alan Turing"}, **writes))["forgotten"] is False
    assert ok(call(corpus, "delete_document", {"uri": "turing.md"}, **writes))["deleted"] is True
    assert [d.uri for d in corpus.documents(source="beta")] == ["hopper.md", first["uri"]]
    assert "outside" in error(call(corpus, "ingest_text", {"text": "x y", "uri": "x.md", "source": "alpha"}, **writes))


def test_read_only_server_refuses_writes(corpus: SAG) -> None:
    before = [d.uri for d in corpus.documents()]
    for tool, arguments in [("ingest_text", {"text": "Some text here.", "uri": "new.md"}),
                            ("remember", {"text": "Some text here."}), ("forget", {"entity": "Ada Lovelace"}),
                            ("delete_document", {"uri": "ada.md", "source": "alpha"})]:
        assert error(call(corpus, tool, arguments)) == f"Unknown tool: {tool}"
    assert [d.uri for d in corpus.documents()] == before
    assert corpus.entity("Ada Lovelace", source="alpha").name.lower() == "ada lovelace"
    # The tools refuse too, should one be served without the policy's leave.
    from sag_pg.mcp.tools import SagTools

    with pytest.raises(RefusedError, match="ingest_text writes, and this server is read-only"):
        SagTools(corpus, Policy()).ingest_text("Some text here.", "new.md")


def test_errors_are_tool_errors_and_the_server_goes_on(corpus: SAG) -> None:
    async def body(client: Client) -> list[CallToolResult]:
        return [await client.call_tool("search", {"query": "Ada", "source": ["nope"]}),
                await client.call_tool("search", {"query": "Ada", "top_n": 0}),
                await client.call_tool("get_entity", {"name": "?!"}),
                await client.call_tool("search", {"query": "Ada Lovelace", "source": ["alpha"]})]

    unknown, bad_number, no_letter, fine = session(build_server(corpus), body)
    assert error(unknown) == "Error executing tool search: no source named 'nope'; sources: alpha, beta, kg"
    assert "top_n" in error(bad_number) and "greater than or equal to 1" in error(bad_number)
    assert error(no_letter).endswith("'?!' has no letter or digit: no key can have that name")
    assert uris(ok(fine)) == ["ada.md"]


# -- the policy ----------------------------------------------------------------------------------------------


def test_policy() -> None:
    free, one, two = Policy(), Policy(sources=("a",)), Policy(sources=("a", "b"), allow_writes=True)
    assert (free.many(None), free.many([]), free.many("x"), free.one(None), free.one("x")) == (None, None, ["x"],
                                                                                             None, "x")
    assert (one.many(None), one.one(None), two.many(None), two.many(["b"])) == (["a"], "a", ["a", "b"], ["b"])
    assert two.write("remember", "b") == "b"
    with pytest.raises(RefusedError, match="several sources"):
        two.write("remember", None)
    with pytest.raises(RefusedError, match="outside"):
        one.many(["a", "b"])
    with pytest.raises(RefusedError, match="read-only"):
        free.write("forget", None)
    assert Policy(allow_writes=True).write("remember", None) == "default"


# -- the same documents as `sag-pg search --json` -----------------------------------------------------------


def _env(dsn: str, tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "SAG_DATABASE_URL": dsn, "SAG_HOME": str(tmp_path / "home"), "SAG_LLM": "",
            "SAG_EMBEDDER": ""}


def test_search_matches_the_cli(demo_dsn: str, tmp_path: Path) -> None:
    questions = [q.question for q in DEMO_QUERIES[:4]]
    env = _env(demo_dsn, tmp_path)
    expected = []
    for question in questions:
        out = CliRunner().invoke(cli, ["search", question, "--source", DEMO_SOURCE, "--top-n", "5", "--json"],
                                 env=env, catch_exceptions=False)
        assert out.exit_code == 0, out.output
        expected.append([(h["document_uri"], h["chunk_id"]) for h in json.loads(out.output)["chunks"]])

    async def body(client: Client) -> list[list[tuple[str, int]]]:
        found = []
        for question in questions:
            data = ok(await client.call_tool("search", {"query": question, "top_n": 5}))
            found.append([(h["document_uri"], h["chunk_id"]) for h in data["chunks"]])
        return found

    with SAG(settings=Settings(database_url=demo_dsn, home=tmp_path / "home")) as client:
        found = session(build_server(client, Policy(sources=(DEMO_SOURCE,))), body)
    assert all(len(hits) == 5 for hits in expected)
    assert found == expected


# -- the command: stdio and Streamable HTTP ---------------------------------------------------------------


async def _tools_and_search(client: Client) -> tuple[set[str], list[str]]:
    tools = {t.name for t in (await client.list_tools()).tools}
    data = ok(await client.call_tool("search", {"query": DEMO_QUERIES[0].question, "top_n": 3}))
    return tools, uris(data)


def test_stdio_command(demo_dsn: str, tmp_path: Path) -> None:
    params = StdioServerParameters(command=sys.executable, args=["-m", "sag_pg", "mcp", "--source", DEMO_SOURCE],
                                   env=_env(demo_dsn, tmp_path))
    # As desktop clients do: start the command, then the initialize handshake. The client stops the process
    # when the session ends.
    tools, found = session(params, _tools_and_search, mode="legacy")
    assert tools == READ_TOOLS
    assert all(any(uri.endswith(suffix) for uri in found) for suffix in DEMO_QUERIES[0].expected_uris_suffix)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for_port(port: int, process: subprocess.Popen[bytes], seconds: float = 60) -> None:
    """Until the server started as ``process`` accepts connections on ``port`` (it must not exit first)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                error = process.stderr.read().decode() if process.stderr else ""
                raise AssertionError(f"the server did not start: {error}") from None
            time.sleep(0.1)


@pytest.fixture
def http_server(demo_dsn: str, tmp_path: Path) -> Iterator[str]:
    port = _free_port()
    process = subprocess.Popen([sys.executable, "-m", "sag_pg", "mcp", "--http", f"127.0.0.1:{port}", "--source",
                                DEMO_SOURCE], env=_env(demo_dsn, tmp_path), stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stderr.close()  # type: ignore[union-attr]


def test_streamable_http_command(http_server: str) -> None:
    tools, found = session(http_server, _tools_and_search)
    assert tools == READ_TOOLS
    assert all(any(uri.endswith(suffix) for uri in found) for suffix in DEMO_QUERIES[0].expected_uris_suffix)


def test_http_beyond_loopback_needs_a_token(demo_dsn: str, tmp_path: Path) -> None:
    """Issue #36.6: `mcp --http 0.0.0.0:PORT` refuses to start without SAG_API_TOKEN, and with one every
    request must carry it (an ingest through --allow-writes included)."""
    import urllib.error
    import urllib.request

    port = _free_port()
    refused = subprocess.run([sys.executable, "-m", "sag_pg", "mcp", "--http", f"0.0.0.0:{port}", "--allow-writes"],
                             env=_env(demo_dsn, tmp_path), capture_output=True, text=True, timeout=120, check=False,
                             stdin=subprocess.DEVNULL)
    assert refused.returncode == 1
    assert refused.stderr.startswith("Error: --host 0.0.0.0 listens beyond this machine: set SAG_API_TOKEN")
    token = "s" * 32
    process = subprocess.Popen([sys.executable, "-m", "sag_pg", "mcp", "--http", f"0.0.0.0:{port}", "--allow-writes"],
                               env={**_env(demo_dsn, tmp_path), "SAG_API_TOKEN": token}, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for_port(port, process)
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                           "params": {"name": "ingest_text", "arguments": {"text": "x", "uri": "x.md"}}}).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{port}/mcp", data=body, method="POST",
                                         headers={"content-type": "application/json",
                                                  "accept": "application/json, text/event-stream"})
        with pytest.raises(urllib.error.HTTPError) as denied:
            urllib.request.urlopen(request, timeout=30)
        denied.value.close()
        assert denied.value.code == 401
        request.add_header("Authorization", "Bearer " + "t" * 32)
        with pytest.raises(urllib.error.HTTPError) as wrong:
            urllib.request.urlopen(request, timeout=30)
        wrong.value.close()
        assert wrong.value.code == 401
        initialize = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
        request = urllib.request.Request(f"http://127.0.0.1:{port}/mcp", data=initialize.encode(), method="POST",
                                         headers={"content-type": "application/json", "Authorization": f"Bearer {token}",
                                                  "accept": "application/json, text/event-stream"})
        with urllib.request.urlopen(request, timeout=30) as answered:  # past the guard, the MCP server answers
            assert answered.status == 200 and b"serverInfo" in answered.read()
    finally:
        process.terminate()
        process.wait(timeout=20)


# -- the command's options ------------------------------------------------------------------------------------


def test_command_refuses_bad_addresses_and_unknown_pinned_sources(db_dsn: str, tmp_path: Path) -> None:
    env = _env(db_dsn, tmp_path)
    bad = CliRunner().invoke(cli, ["mcp", "--http", "localhost:http"], env=env)
    assert bad.exit_code == 2 and "give HOST:PORT" in bad.output
    result = subprocess.run([sys.executable, "-m", "sag_pg", "mcp", "--source", "nope"], env=env, check=False,
                            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode == 1
    assert result.stderr.strip() == "Error: no source named 'nope'; sources: none yet"
    assert result.stdout == ""


def test_the_cli_does_not_load_the_sdk_and_says_when_it_is_missing(db_dsn: str, tmp_path: Path) -> None:
    script = "import sys, sag_pg.cli, sag_pg.mcp; print('mcp' in sys.modules)"
    loaded = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True, timeout=60)
    assert loaded.stdout.strip() == "False"
    # sys.modules["mcp"] = None is how Python spells "this package cannot be imported".
    script = "import sys; sys.modules['mcp'] = None; from sag_pg.cli import main; main(['mcp'])"
    missing = subprocess.run([sys.executable, "-c", script], env=_env(db_dsn, tmp_path), check=False,
                             capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert (missing.returncode, missing.stdout) == (1, "")
    assert missing.stderr.strip() == "Error: the MCP server needs the mcp package: pip install 'sag-pg[mcp]'"


# -- issue 37 item 11 -----------------------------------------------------------------------------------------


def test_source_may_be_one_name_or_a_list(corpus: SAG) -> None:
    """A client (or an LLM) passing "alpha" for `source` got pydantic's validation text."""
    assert uris(ok(call(corpus, "search", {"query": "Who worked with Charles Babbage?", "source": "alpha"}))) == [
        "ada.md"]
    assert [m["uri"] for m in ok(call(corpus, "recall", {"query": "Grace Hopper", "source": "beta"}))["memories"]] \
        == ["hopper.md"]
    assert [d["uri"] for d in ok(call(corpus, "list_documents", {"source": "alpha"}))["documents"]] == ["ada.md"]
    message = error(call(corpus, "search", {"query": "Grace Hopper", "source": "beta"}, sources=("alpha",)))
    assert "source 'beta' is outside this server's sources: alpha" in message


def test_the_command_says_which_database_it_serves(demo_dsn: str, tmp_path: Path) -> None:
    """The SDK's stdio_client passes no environment unless given env=: a server that silently served the default
    embedded database instead looked like an empty knowledge base.  Stdin closed: the stdio server ends."""
    done = subprocess.run([sys.executable, "-m", "sag_pg", "mcp", "--source", DEMO_SOURCE],
                          env=_env(demo_dsn, tmp_path), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=120, check=False)
    first = done.stderr.splitlines()[0]
    dbname = demo_dsn.rsplit("dbname=", 1)[1].split()[0]
    assert first.startswith("sag-pg: MCP server on ") and dbname in first, done.stderr
    assert first.endswith(f"(SAG_DATABASE_URL); sources: {DEMO_SOURCE}; read-only")
    assert done.stdout == ""  # stdout is the protocol's


def test_the_readme_client_works(demo_dsn: str, tmp_path: Path) -> None:
    """The README's Python client, run as written: `sag-pg` on PATH, the SAG_* settings handed over."""
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### As an MCP server for agents"):]
    snippet = section[section.index("```python\n") + len("```python\n"):]
    snippet = snippet[:snippet.index("```")]
    shim = tmp_path / "bin" / "sag-pg"  # this checkout's sag-pg, whatever the venv's console script points at
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nPYTHONPATH={Path(__file__).resolve().parent.parent} exec {sys.executable} '
                    '-m sag_pg "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    env = dict(_env(demo_dsn, tmp_path), PATH=f"{shim.parent}{os.pathsep}{os.environ['PATH']}")
    done = subprocess.run([sys.executable, "-c", snippet], env=env, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [done.stdout.strip()]
    assert done.stdout.strip().rsplit("/", 1)[-1] == "pixar.md"
