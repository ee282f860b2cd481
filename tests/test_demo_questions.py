"""`sag-pg demo`'s claim, kept true: with the offline defaults every demo question, two-hop ones included,
has all its expected documents among the top 5 chunks of a fast search."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sag_pg import SAG, Settings
from sag_pg.demo import DEMO_QUERIES, DEMO_SOURCE


@pytest.fixture
def demo_sag(demo_dsn: str, tmp_path: Path) -> Iterator[SAG]:
    """A client on the demo corpus as `sag-pg demo` ingests it (demo_paths() into source demo, offline
    defaults: conftest's demo_dsn, every file ingested without failure)."""
    with SAG(settings=Settings(database_url=demo_dsn, home=tmp_path / "unused-home")) as client:
        yield client


def test_every_demo_question_finds_its_documents(demo_sag) -> None:  # type: ignore[no-untyped-def]
    missed = []
    for query in DEMO_QUERIES:
        result = demo_sag.search(query.question, source=DEMO_SOURCE, top_n=5)
        uris = [hit.document_uri for hit in result.chunks]
        absent = [s for s in query.expected_uris_suffix if not any(u.endswith(s) for u in uris)]
        if absent:
            missed.append((query.question, absent, [u.rsplit("/", 1)[-1] for u in uris]))
    assert not missed, missed


def test_two_hop_answers_need_the_spread_over_documents(demo_sag) -> None:  # type: ignore[no-untyped-def]
    """Without spreading, the documents a question starts from fill the top 5 with their own chunks: the
    check above depends on sag.spread_documents, so it is not passing by accident."""
    from sag_pg.search import RetrievalParams

    plain = RetrievalParams(spread_documents=False)
    missing = 0
    for query in DEMO_QUERIES:
        uris = [h.document_uri for h in demo_sag.search(query.question, source=DEMO_SOURCE, top_n=5,
                                                         params=plain).chunks]
        missing += not all(any(u.endswith(s) for u in uris) for s in query.expected_uris_suffix)
    assert missing >= 1
