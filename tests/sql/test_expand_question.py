"""sag.expand_question: a question naming an alias of its sources' synonym tables gets the canonical name."""

from __future__ import annotations

import json

import psycopg
import pytest

from sag_pg import SAG


@pytest.fixture
def sources(db_conn: psycopg.Connection) -> dict[str, int]:
    def source(name: str, synonyms: object) -> int:
        row = db_conn.execute("insert into sag.sources (name, config) values (%s, %s) returning id",
                              [name, json.dumps({"synonyms": synonyms})]).fetchone()
        assert row is not None
        return int(row[0])

    ids = {"robots": source("robots", {"BWR": "Brightwater Robotics", "Big Blue": "IBM", "大蓝": "国际商业机器",
                                       "Zürich Re": "Zurich Insurance", "C++": "C plus plus"}),
           "rafting": source("rafting", {"bwr": "Black Water Rafting", "MS": "Microsoft"}),
           "broken": source("broken", ["not", "a", "table"])}
    db_conn.commit()
    return ids


def expand(conn: psycopg.Connection, question: str | None, source_ids: list[int] | None = None) -> str | None:
    row = conn.execute("select sag.expand_question(%s, %s)", [question, source_ids]).fetchone()
    assert row is not None
    return row[0]


def test_an_alias_of_whole_words_adds_its_canonical_name(db_conn: psycopg.Connection,
                                                        sources: dict[str, int]) -> None:
    robots = [sources["robots"]]
    assert expand(db_conn, "Where is BWR based?", robots) == "Where is BWR based? (Brightwater Robotics)"
    # Case, hyphens, spacing and accents fold as in key names; part of a word names nothing.
    assert expand(db_conn, "Is big-blue older?", robots) == "Is big-blue older? (IBM)"
    assert expand(db_conn, "Is BIG  BLUE older?", robots) == "Is BIG  BLUE older? (IBM)"
    assert expand(db_conn, "Does zurich re insure it?", robots) == "Does zurich re insure it? (Zurich Insurance)"
    assert expand(db_conn, "Where is BWRX based?", robots) == "Where is BWRX based?"
    assert expand(db_conn, "Is Big Bluebird older?", robots) == "Is Big Bluebird older?"
    # Punctuation that makes another name counts, as in key names: C++ is not C.
    assert expand(db_conn, "Is C++ hard?", robots) == "Is C++ hard? (C plus plus)"
    assert expand(db_conn, "Is C hard?", robots) == "Is C hard?"
    # Chinese does not separate words: anywhere in the question.
    assert expand(db_conn, "大蓝公司在哪里", robots) == "大蓝公司在哪里 (国际商业机器)"


def test_names_come_once_in_question_order_and_not_when_already_there(db_conn: psycopg.Connection,
                                                                     sources: dict[str, int]) -> None:
    robots = [sources["robots"]]
    assert expand(db_conn, "Did Big Blue buy BWR, or BWR big blue?", robots) == \
        "Did Big Blue buy BWR, or BWR big blue? (IBM; Brightwater Robotics)"
    assert expand(db_conn, "Is BWR (Brightwater Robotics) big?", robots) == "Is BWR (Brightwater Robotics) big?"
    assert expand(db_conn, "Is BWR (brightwater-robotics) big?", robots) == "Is BWR (brightwater-robotics) big?"


def test_the_searched_sources_decide(db_conn: psycopg.Connection, sources: dict[str, int]) -> None:
    assert expand(db_conn, "Where is BWR?", [sources["rafting"]]) == "Where is BWR? (Black Water Rafting)"
    # An alias in several sources: the one with the lowest id names it, whatever the order asked.
    both = [sources["rafting"], sources["robots"]]
    assert expand(db_conn, "Where is BWR?", both) == "Where is BWR? (Brightwater Robotics)"
    assert expand(db_conn, "Where is BWR, says MS?") == "Where is BWR, says MS? (Brightwater Robotics; Microsoft)"
    # No source, a source without a table (a list is no table), no words: the question as it is.
    assert expand(db_conn, "Where is BWR?", []) == "Where is BWR?"
    assert expand(db_conn, "Where is BWR?", [sources["broken"]]) == "Where is BWR?"
    assert expand(db_conn, "", None) == ""
    assert expand(db_conn, None, None) is None


def test_psql_and_python_search_the_same_expanded_question(sag: SAG, db_dsn: str) -> None:
    sag.configure_source("default", synonyms={"BWR": "Brightwater Robotics"})
    sag.ingest_text("Brightwater Robotics is headquartered in Trondheim, beside the fjord.", uri="bwr.md")
    sag.ingest_text("Harbour Cranes Ltd is headquartered in Bergen and builds cranes.", uri="cranes.md")
    sag.ingest_text("Trondheim hosts a robotics fair every spring.", uri="fair.md")
    python = sag.search("Where is BWR headquartered?", top_n=3, use_pagerank=False)
    assert python.query == "Where is BWR headquartered? (Brightwater Robotics)"
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        psql = conn.execute("select document, chunk_id, score from sag.search('Where is BWR headquartered?', 3)"
                            ).fetchall()
    assert [(h.document_uri, h.chunk_id) for h in python.chunks] == [(d, c) for d, c, _ in psql]
    assert [h.score for h in python.chunks] == pytest.approx([s for _, _, s in psql], rel=1e-9, abs=1e-12)
    assert psql[0][0] == "bwr.md"
