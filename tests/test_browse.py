"""The read API (SAG.documents / document / chunk / entity) against a real ingest with the rule extractor."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sag_pg import SAG, NotFoundError, QueryError, Settings
from sag_pg.db.documents import DocumentInfo, KeyView

from .databases import CorpusDatabases

HALVARD = """# Halvard Foods

## Origins
Halvard Foods was founded by Ingrid Halvard in Bergen in 1987.

## Growth
In 1999 Ingrid Halvard opened a second plant in Oslo. Kepler Labs bought Halvard Foods in 2011.
"""
OSLO = "Oslo is the capital of Norway.\n"


def _fill_nordic(dsn: str) -> None:
    with tempfile.TemporaryDirectory() as home, SAG(settings=Settings(database_url=dsn, home=Path(home))) as sag:
        sag.ingest_text(HALVARD, uri="notes/halvard.md", title="Halvard", source="nordic")
        sag.ingest_text(OSLO, uri="notes/oslo.md", title="Oslo", source="nordic")
        sag.ingest_text(OSLO, uri="oslo.md", title="Oslo", source="other")


@pytest.fixture
def nordic(corpus_databases: CorpusDatabases, tmp_path: Path) -> Iterator[SAG]:
    """Two documents in source nordic, one of them again in source other: a client on a fresh copy of a
    database filled once per session."""
    with corpus_databases.client("nordic", _fill_nordic, tmp_path / "unused-home") as sag:
        yield sag


def test_documents_lists_with_counts_filters_and_pages(nordic: SAG) -> None:
    docs = nordic.documents(source="nordic")
    assert [d.uri for d in docs] == ["notes/halvard.md", "notes/oslo.md"]
    halvard = docs[0]
    assert isinstance(halvard, DocumentInfo)
    assert (halvard.title, halvard.source) == ("Halvard", "nordic")
    # Two ## sections = two chunks; three sentences = three events; distinct keys of those events, by hand:
    # Bergen, Halvard Foods, Ingrid Halvard, 1987, Halvard, Origins | Oslo, 1999, Growth | Kepler Labs, 2011.
    assert (halvard.chunk_count, halvard.event_count, halvard.key_count) == (2, 3, 11)
    assert len(halvard.content_hash) == 64
    assert halvard.created_at <= halvard.updated_at
    everything = nordic.documents()
    assert [(d.source, d.uri) for d in everything] == [
        ("nordic", "notes/halvard.md"), ("nordic", "notes/oslo.md"), ("other", "oslo.md")]
    assert [d.uri for d in nordic.documents(uri_prefix="notes/h")] == ["notes/halvard.md"]
    assert [d.uri for d in nordic.documents(limit=1, offset=1)] == ["notes/oslo.md"]
    assert [d.uri for d in nordic.documents(source=["other"])] == ["oslo.md"]


def test_unknown_source_names_the_existing_ones(nordic: SAG) -> None:
    with pytest.raises(NotFoundError, match="no source named 'nope'; sources: nordic, other"):
        nordic.documents(source="nope")
    with pytest.raises(QueryError, match="limit"):
        nordic.documents(limit=-1)


def test_document_has_chunks_in_order_with_events_and_keys(nordic: SAG) -> None:
    doc = nordic.document("notes/halvard.md")  # only one source holds it
    assert doc.source == "nordic"
    assert [c.title for c in doc.chunks] == ["Halvard Foods > Origins", "Halvard Foods > Growth"]
    assert [c.ordinal for c in doc.chunks] == [0, 1]
    assert [len(c.events) for c in doc.chunks] == [1, 2]
    first = doc.chunks[0].events[0]
    assert first.content == "Halvard Foods was founded by Ingrid Halvard in Bergen in 1987."
    assert first.document_uri == "notes/halvard.md" and first.chunk_id == doc.chunks[0].id
    assert KeyView("Ingrid Halvard", "person", "Ingrid Halvard") in first.keys
    assert KeyView("1987", "time", 1987.0) in first.keys  # a year is a number-valued key
    assert "chunks=2" in repr(doc) and "founded" not in repr(doc)  # the repr stays one short line


def test_document_errors_say_why(nordic: SAG) -> None:
    with pytest.raises(QueryError, match="several sources"):
        nordic.ingest_text(OSLO, uri="notes/oslo.md", source="other")
        nordic.document("notes/oslo.md")
    assert nordic.document("notes/oslo.md", source="other").source == "other"
    with pytest.raises(NotFoundError, match="no document 'missing.md'"):
        nordic.document("missing.md")
    with pytest.raises(NotFoundError, match="no document 'oslo.md' in source 'nordic'"):
        nordic.document("oslo.md", source="nordic")


def test_chunk_by_id_names_its_document(nordic: SAG) -> None:
    growth = nordic.document("notes/halvard.md").chunks[1]
    chunk = nordic.chunk(growth.id)
    assert (chunk.document_uri, chunk.source, chunk.ordinal) == ("notes/halvard.md", "nordic", 1)
    assert [e.content for e in chunk.events] == [
        "In 1999 Ingrid Halvard opened a second plant in Oslo.", "Kepler Labs bought Halvard Foods in 2011."]
    with pytest.raises(NotFoundError, match="no chunk 999999"):
        nordic.chunk(999999)


def test_entity_has_events_and_cooccurring_keys(nordic: SAG) -> None:
    ingrid = nordic.entity("ingrid-halvard", source="nordic")  # a spelling variant of the name
    assert (ingrid.name, ingrid.type, ingrid.source, ingrid.event_count) == ("Ingrid Halvard", "person", "nordic", 2)
    assert [e.content[:20] for e in ingrid.events] == ["Halvard Foods was fo", "In 1999 Ingrid Halva"]
    # "Halvard" (topic, from the title) is in both of Ingrid's events; every other neighbour in one.
    assert (ingrid.related[0].name, ingrid.related[0].shared_events) == ("Halvard", 2)
    assert {(r.name, r.shared_events) for r in ingrid.related[1:]} == {
        ("Bergen", 1), ("Halvard Foods", 1), ("1987", 1), ("Origins", 1), ("Oslo", 1), ("1999", 1), ("Growth", 1)}
    capped = nordic.entity("Ingrid Halvard", events=1, related=2)
    assert (len(capped.events), len(capped.related), capped.event_count) == (1, 2, 2)
    # Oslo is a key in both sources: the one with most events wins, the other is named. In "other" the title
    # "Oslo" made the topic key first and the location converged on it (key alignment across types).
    oslo = nordic.entity("Oslo")
    assert (oslo.source, oslo.event_count, oslo.others) == ("nordic", 2, ("other/topic",))
    with pytest.raises(NotFoundError, match="no key 'Oslo' of type 'person'"):
        nordic.entity("Oslo", type="person")
