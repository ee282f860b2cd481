"""Search through the client on documents ingested by the real pipeline (hash embedder, rule extractor)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from sag_pg import SAG, ConfigError, QueryError, Settings

from .databases import CorpusDatabases, ingest_texts
from .openai_server import FakeOpenAIServer

DOCS = {
    "lovelace": "# Ada Lovelace\n\nAda Lovelace worked with Charles Babbage on the Analytical Engine.\n"
                "She published the first algorithm for a machine in 1843.",
    "babbage": "# Charles Babbage\n\nCharles Babbage was born in London in 1791.\n"
               "He designed the Difference Engine and taught at Cambridge.",
    "hopper": "# Grace Hopper\n\nGrace Hopper wrote the first compiler in 1952 and promoted COBOL.",
    "curie": "# Marie Curie\n\nMarie Curie won the Nobel Prize in Physics in 1903 and in Chemistry in 1911.",
}


@pytest.fixture
def library(corpus_databases: CorpusDatabases, tmp_path: Path) -> Iterator[SAG]:
    """A client on a fresh database holding DOCS, ingested one by one into source default (a copy of a database
    filled once per session)."""
    with corpus_databases.client("library", ingest_texts(DOCS), tmp_path / "unused-home") as sag:
        yield sag


def test_search_finds_the_document(library: SAG) -> None:
    result = library.search("Who wrote the first compiler?", top_n=3)
    assert result.chunks[0].document_uri == "hopper"
    assert result.timings_ms["total"] > 0
    assert [c.score for c in result.chunks] == sorted((c.score for c in result.chunks), reverse=True)
    assert all(hit.events for hit in result.chunks)  # evidence comes with every chunk


def test_psql_search_uses_the_sql_embedder(library: SAG) -> None:
    with psycopg.connect(library.dsn) as db_conn:
        _psql_search_uses_the_sql_embedder(db_conn)


def _psql_search_uses_the_sql_embedder(db_conn: psycopg.Connection) -> None:
    rows = db_conn.execute("select document, title, score from sag.search('Nobel Prize in Chemistry', 3)").fetchall()
    assert rows[0][0] == "curie"
    rows = db_conn.execute("select document from sag.search('Nobel Prize', 3, 'default')").fetchall()
    assert rows[0][0] == "curie"
    with pytest.raises(psycopg.errors.NoDataFound):
        db_conn.execute("select * from sag.search('Nobel Prize', 3, 'no-such-source')")


def test_keys_seed_the_search(library: SAG) -> None:
    result = library.search("Which machine?", keys=["Charles Babbage"], top_n=2)
    uris = {hit.document_uri for hit in result.chunks}
    assert "babbage" in uris or "lovelace" in uris
    assert any(k.name == "Charles Babbage" for k in result.keys)


def test_sources_do_not_leak(sag: SAG) -> None:
    sag.ingest_text(DOCS["curie"], uri="curie", source="physics")
    sag.ingest_text(DOCS["hopper"], uri="hopper", source="computing")
    result = sag.search("Nobel Prize in Physics", source="computing", top_n=5)
    assert {hit.document_uri for hit in result.chunks} == {"hopper"}
    both = sag.search("Nobel Prize in Physics", source=["computing", "physics"], top_n=5)
    assert both.chunks[0].document_uri == "curie"
    with pytest.raises(QueryError, match="no source named 'chemistry'"):
        sag.search("x", source="chemistry")


def test_bad_queries(library: SAG) -> None:
    with pytest.raises(QueryError, match="empty"):
        library.search("   ")
    with pytest.raises(QueryError, match="top_n"):
        library.search("x", top_n=0)
    with pytest.raises(QueryError, match="mode"):
        library.search("x", mode="psychic")
    with pytest.raises(QueryError):
        library.search("x", sql="1=1; drop table sag.keys")


def test_normal_mode_needs_an_llm(library: SAG) -> None:
    with pytest.raises(ConfigError, match="SAG_LLM"):
        library.search("x", mode="normal")


def test_normal_mode_rewrites_with_the_llm(library: SAG, tmp_path: Path, openai_server: FakeOpenAIServer) -> None:
    db_dsn = library.dsn
    def responder(request: dict[str, Any]) -> str:
        prompt = request["messages"][-1]["content"]
        assert "Original question:" in prompt
        return json.dumps({"query": "Grace Hopper compiler COBOL", "keys": [{"type": "person", "value": "Grace Hopper"}]})

    openai_server.responder = responder
    settings = Settings(database_url=db_dsn, home=tmp_path, llm="openai:m", llm_base_url=openai_server.base_url)
    with SAG(settings=settings) as llm_sag:
        result = llm_sag.search("who made the thing that turns code into programs?", mode="normal", top_n=2)
    assert result.rewrite.query == "Grace Hopper compiler COBOL"  # type: ignore[attr-defined]
    assert result.chunks[0].document_uri == "hopper"
    prompt = openai_server.prompts()[0]
    assert "who made the thing" in prompt and "Related events:" in prompt
    assert "person" in prompt.split("Allowed key types:", 1)[1]


def test_sql_restriction_narrows_the_search(library: SAG) -> None:
    unrestricted = library.search("first", top_n=4)
    assert {hit.document_uri for hit in unrestricted.chunks} >= {"hopper", "lovelace"}
    narrowed = library.search("first", sql="key.type = 'time' AND key.value_number >= 1900", top_n=4)
    uris = {hit.document_uri for hit in narrowed.chunks}
    assert uris and uris <= {"hopper", "curie"}  # the only documents with a year key after 1900
    assert "hopper" in uris
    by_document = library.search("Engine", sql="document.uri = 'babbage'", top_n=4)
    assert {hit.document_uri for hit in by_document.chunks} == {"babbage"}


def test_stats_of_an_unknown_source_is_a_named_error(sag: SAG) -> None:
    from sag_pg import NotFoundError

    with pytest.raises(NotFoundError, match="no source named 'nosuch'"):
        sag.stats(source="nosuch")


def test_ingest_into_an_empty_source_name_is_a_named_error(sag: SAG) -> None:
    with pytest.raises(QueryError, match="source name is empty"):
        sag.ingest_text("Ada Lovelace met Charles Babbage.", uri="a", source=" ")
