"""DataFlow relevance (seed §4.2) and multi-dimension matching (§5.2) on hand-made key sets.

Key embeddings (3 dimensions): X (1,0,0), Y (0,1,0), T (1,0,0), U (4,3,0) (cos(T, U) = 0.8), L (0,0,1).
Event A: person {X, Y}, topic {T}.   Event B: person {X}, topic {U}, location {L}.
Default type weights (seed): person 1.1, topic 1.5, location 1.0.

relevance(A, B), over the types both have (person, topic):
    person: Jaccard {x,y} vs {x} = 1/2; vector: x -> 1, y -> max(cos(Y, X)) = 0, mean 1/2;
            sim = 0.6 * 1/2 + 0.4 * 1/2 = 0.5
    topic:  Jaccard 0; vector: t -> cos(T, U) = 0.8; sim = 0.4 * 0.8 = 0.32
    relevance = (1.1 * 0.5 + 1.5 * 0.32) / (1.1 + 1.5) = 1.03 / 2.6
    match_ratio = A's types where B holds one of A's names (person) / A's types (2) = 1/2
relevance(B, A): person: Jaccard 1/2, vector x -> 1, sim = 0.3 + 0.4 = 0.7; topic 0.32;
    (1.1 * 0.7 + 1.5 * 0.32) / 2.6 = 1.25 / 2.6;  match_ratio: B's types person, topic, location: 1/3
"""

from __future__ import annotations

import json

import psycopg
import pytest

from tests.sql.graph_builder import GraphBuilder


@pytest.fixture
def graph(db_conn: psycopg.Connection) -> dict[str, int]:
    g = GraphBuilder(db_conn)
    s = g.source("one")
    c = g.chunk(g.document(s, "doc"), "text", (1, 0, 0))
    k = {"X": g.key(s, "X", (1, 0, 0), type="person"), "Y": g.key(s, "Y", (0, 1, 0), type="person"),
         "T": g.key(s, "T", (1, 0, 0), type="topic"), "U": g.key(s, "U", (4, 3, 0), type="topic"),
         "L": g.key(s, "L", (0, 0, 1), type="location")}
    k["A"] = g.event(c, "A", (1, 0, 0))
    k["B"] = g.event(c, "B", (0, 1, 0))
    g.links(k["A"], k["X"], k["Y"], k["T"])
    g.links(k["B"], k["X"], k["U"], k["L"])
    k["source"] = s
    return k


def relevance(conn: psycopg.Connection, left: list[int], right: list[int], weights: dict | None = None) -> float:
    row = conn.execute("select sag.dataflow_relevance(%s, %s, %s::jsonb)",
                       [left, right, json.dumps(weights) if weights is not None else None]).fetchone()
    assert row is not None
    return float(row[0])


def test_type_weights_default_to_the_seed_and_follow_the_source_config(db_conn: psycopg.Connection,
                                                                       graph: dict[str, int]) -> None:
    seed = {"time": 0.9, "location": 1.0, "person": 1.1, "topic": 1.5, "action": 1.2, "tag": 1.0}
    row = db_conn.execute("select sag.dataflow_type_weights()").fetchone()
    assert row is not None and row[0] == seed
    db_conn.execute("update sag.sources set config = '{\"dataflow_type_weights\": {\"topic\": 0.5, \"event\": 2}}'")
    row = db_conn.execute("select sag.dataflow_type_weights(%s)", [[graph["source"]]]).fetchone()
    assert row is not None and row[0]["topic"] == 0.5 and row[0]["event"] == 2 and row[0]["person"] == 1.1


def test_sag_key_types_are_not_dataflow_weights(db_conn: psycopg.Connection, graph: dict[str, int]) -> None:
    """Issue 34.2: SAG's key weights (config -> key_types, written into every source ingest creates) are a
    separate setting; DataFlow keeps the seed's ENTITY_TYPE_WEIGHTS."""
    db_conn.execute("update sag.sources set config = '{\"key_types\": {\"person\": 1.0, \"topic\": 0.8, "
                    "\"time\": 0.6, \"tag\": 0.6, \"action\": 0.5}}'")
    row = db_conn.execute("select sag.dataflow_type_weights(%s)", [[graph["source"]]]).fetchone()
    assert row is not None and row[0] == {"time": 0.9, "location": 1.0, "person": 1.1, "topic": 1.5,
                                          "action": 1.2, "tag": 1.0}
    k = graph
    # So the relevance is the seed's (1.03 / 2.6 in the module docstring), not (1.0 * 0.5 + 0.8 * 0.32) / 1.8.
    assert relevance(db_conn, [k["X"], k["Y"], k["T"]], [k["X"], k["U"], k["L"]]) == pytest.approx(1.03 / 2.6,
                                                                                                    abs=1e-4)


def test_jaccard_and_vector_relevance(db_conn: psycopg.Connection, graph: dict[str, int]) -> None:
    k = graph
    a, b = [k["X"], k["Y"], k["T"]], [k["X"], k["U"], k["L"]]
    assert relevance(db_conn, a, b) == pytest.approx(1.03 / 2.6, abs=1e-4)   # halfvec: 1e-4
    assert relevance(db_conn, b, a) == pytest.approx(1.25 / 2.6, abs=1e-4)
    # topic weighted 0.5 by the source: (1.1 * 0.5 + 0.5 * 0.32) / 1.6 = 0.71 / 1.6
    db_conn.execute("update sag.sources set config = '{\"dataflow_type_weights\": {\"topic\": 0.5}}'")
    row = db_conn.execute("select sag.dataflow_type_weights()").fetchone()
    assert row is not None
    assert relevance(db_conn, a, b, row[0]) == pytest.approx(0.71 / 1.6, abs=1e-4)
    # No type in common: 0.  Identical sets: 1.
    assert relevance(db_conn, [k["L"]], [k["X"]]) == 0
    assert relevance(db_conn, a, a) == pytest.approx(1.0, abs=1e-4)


def test_pair_relevance_reports_match_ratio_and_dimensions(db_conn: psycopg.Connection,
                                                           graph: dict[str, int]) -> None:
    k = graph
    rows = db_conn.execute(
        "select left_id, right_id, relevance, match_ratio, dimensions from sag.dataflow_pair_relevance("
        "%s, %s, %s, %s, sag.dataflow_type_weights())",
        [[k["A"], k["B"]], [k["B"], k["A"]], [k["A"]] * 3 + [k["B"]] * 3,
         [k["X"], k["Y"], k["T"], k["X"], k["U"], k["L"]]]).fetchall()
    got = {(r[0], r[1]): r[2:] for r in rows}
    rel, ratio, dims = got[(k["A"], k["B"])]
    assert rel == pytest.approx(1.03 / 2.6, abs=1e-4) and ratio == pytest.approx(1 / 2)
    assert dims["person"]["jaccard"] == pytest.approx(0.5) and dims["topic"]["vector"] == pytest.approx(0.8, abs=1e-3)
    assert set(dims) == {"person", "topic"}
    rel, ratio, _ = got[(k["B"], k["A"])]
    assert rel == pytest.approx(1.25 / 2.6, abs=1e-4) and ratio == pytest.approx(1 / 3)


def test_multi_dimension_match_of_an_entity_set(db_conn: psycopg.Connection, graph: dict[str, int]) -> None:
    k = graph
    # Entities {X (person), L (location)}: 2 dimensions.
    #   A: holds X; person: Jaccard {x,l}∩... per type: person {x} vs {x,y}: J 1/2, vector x -> 1: sim 0.7;
    #      location: A has none.  relevance = 0.7; match_ratio = 1/2; score = 0.4 * 0.5 + 0.6 * 0.7 = 0.62
    #   B: person {x} vs {x}: sim 1; location {l} vs {l}: sim 1; relevance 1; ratio 1; score 1
    rows = db_conn.execute("select event_id, match_ratio, relevance, score from sag.dataflow_match(%s)",
                           [[k["X"], k["L"]]]).fetchall()
    assert [r[0] for r in rows] == [k["B"], k["A"]]
    assert rows[0][1:] == pytest.approx((1.0, 1.0, 1.0), abs=1e-4)
    assert rows[1][1:] == pytest.approx((0.5, 0.7, 0.62), abs=1e-4)
    # An entity with more events than max_key_events recalls nothing: X (2 events) with a limit of 1.
    rows = db_conn.execute("select event_id from sag.dataflow_match(%s, max_key_events => 1)",
                           [[k["X"], k["L"]]]).fetchall()
    assert [r[0] for r in rows] == [k["B"]]


def test_names_count_by_their_specificity(db_conn: psycopg.Connection, graph: dict[str, int]) -> None:
    # N = 3 events in the corpus.  s(name) = ln(1 + N / its events) / ln(1 + N): X is in 2 events,
    # s(X) = ln 2.5 / ln 4 = 0.660964; Y, T, U, L are in one: s = 1.
    #   A -> B  person: Jaccard s(X) / (s(X) + s(Y)) = 0.660964 / 1.660964 = 0.397942; vector (s(X) * 1 + s(Y) * 0)
    #           / (s(X) + s(Y)) = 0.397942; sim 0.397942; m_person = max(s(X), s(Y)) = 1
    #           topic: sim 0.4 * 0.8 = 0.32, m_topic = 1
    #           relevance = (1.1 * 0.397942 + 1.5 * 0.32) / 2.6 = 0.352975;  match_ratio = 1 / (1 + 1) = 0.5
    #   B -> A  person: Jaccard s(X) / (s(X) + s(Y)) = 0.397942; vector 1; sim 0.6 * 0.397942 + 0.4 = 0.638765;
    #           m_person = s(X); topic 0.32, m 1 (location: A has none)
    #           relevance = (1.1 s(X) 0.638765 + 1.5 * 0.32) / (1.1 s(X) + 1.5) = 0.944423 / 2.227060 = 0.424066
    #           match_ratio = s(X) / (s(X) + 1 + 1) = 0.248393
    k = graph
    rows = db_conn.execute(
        "select left_id, right_id, relevance, match_ratio, dimensions from sag.dataflow_pair_relevance("
        "%s, %s, %s, %s, sag.dataflow_type_weights(), corpus_events => 3)",
        [[k["A"], k["B"]], [k["B"], k["A"]], [k["A"]] * 3 + [k["B"]] * 3,
         [k["X"], k["Y"], k["T"], k["X"], k["U"], k["L"]]]).fetchall()
    got = {(r[0], r[1]): r[2:] for r in rows}
    rel, ratio, dims = got[(k["A"], k["B"])]
    assert rel == pytest.approx(0.352975, abs=1e-4) and ratio == pytest.approx(0.5)
    assert dims["person"]["jaccard"] == pytest.approx(0.397942, abs=1e-5)
    assert dims["person"]["specificity"] == pytest.approx(1.0)
    rel, ratio, dims = got[(k["B"], k["A"])]
    assert rel == pytest.approx(0.424066, abs=1e-4) and ratio == pytest.approx(0.248393, abs=1e-5)
    assert dims["person"]["specificity"] == pytest.approx(0.660964, abs=1e-5)


def test_key_cosines_are_taken_above_the_similarity_floor(db_conn: psycopg.Connection,
                                                          graph: dict[str, int]) -> None:
    k = graph
    # Floor 0.5: cos(T, U) 0.8 counts (0.8 - 0.5) / (1 - 0.5) = 0.6.  A -> B: person 0.5 as without a floor;
    # topic 0.4 * 0.6 = 0.24; relevance = (1.1 * 0.5 + 1.5 * 0.24) / 2.6 = 0.35.
    row = db_conn.execute(
        "select relevance, dimensions from sag.dataflow_pair_relevance(%s, %s, %s, %s, sag.dataflow_type_weights(), "
        "similarity_floor => 0.5)",
        [[k["A"]], [k["B"]], [k["A"]] * 3 + [k["B"]] * 3,
         [k["X"], k["Y"], k["T"], k["X"], k["U"], k["L"]]]).fetchone()
    assert row is not None
    assert row[0] == pytest.approx(0.35, abs=1e-4) and row[1]["topic"]["vector"] == pytest.approx(0.6, abs=1e-3)


def test_query_entities_by_vector_use_the_keys_chance_level(db_conn: psycopg.Connection,
                                                            graph: dict[str, int]) -> None:
    k = graph
    # Question vector (1, 0, 0): cosines X 1, T 1, U 0.8, Y 0, L 0; key_min_similarity 0.6.
    query = ("select key_id from sag.dataflow_query_entities('zzz', '[1,0,0]'::vector, use_terms => false, "
             "key_match_top_k => 5, key_min_similarity => 0.6) order by key_id")
    assert [r[0] for r in db_conn.execute(query)] == sorted([k["X"], k["T"], k["U"]])
    # A key floor of 0.6 (sag.similarity_floors): U counts (0.8 - 0.6) / 0.4 = 0.5 < 0.6 and drops out.
    db_conn.execute("insert into sag.settings (name, value) values ('similarity_floors', %s::jsonb) "
                    "on conflict (name) do update set value = excluded.value",
                    [json.dumps({str(k["source"]): {"chunk": 0, "event": 0, "key": 0.6}})])
    assert [r[0] for r in db_conn.execute(query)] == sorted([k["X"], k["T"]])
