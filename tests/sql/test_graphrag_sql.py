"""GraphRAG's SQL (sql/idempotent/070-073): token estimate, packing, local context, report batches, reduce.

Every expected number is worked out by hand in the comments.  The token estimate: one per CJK character, and
each run of other non-space characters cut into pieces of at most 4 characters, one token each.
"""

from __future__ import annotations

import hashlib

import psycopg
import pytest
from psycopg.types.json import Jsonb

from tests.sql.graph_builder import GraphBuilder, vec


def one(conn: psycopg.Connection, query: str, args: list[object] | None = None) -> object:
    row = conn.execute(query, args or []).fetchone()
    assert row is not None
    return row[0]


@pytest.mark.parametrize(("text", "tokens"), [
    ("Ada met 巴贝奇", 5),          # Ada, met, 巴, 贝, 奇
    ("international", 4),          # inte rnat iona l
    ("a  b\nc", 3),
    ("", 0),
    ("----Analyst 1----", 5),      # ---- Anal yst | 1--- -
])
def test_estimate_tokens(db_conn: psycopg.Connection, text: str, tokens: int) -> None:
    assert one(db_conn, "select sag.estimate_tokens(%s)", [text]) == tokens


def test_pack_rows_keeps_the_prefix_that_fits(db_conn: psycopg.Connection) -> None:
    # 'a b' costs 2 + 1 (line break) = 3, 'c' 1 + 1 = 2: budget 3 holds the first only, 5 both, 2 none.
    for budget, n in ((3, 1), (4, 1), (5, 2), (2, 0)):
        assert one(db_conn, "select sag.pack_rows(array['a b', 'c'], %s)", [budget]) == n


def test_reduce_points_drops_zero_sorts_and_caps(db_conn: psycopg.Connection) -> None:
    points = [{"analyst": 0, "score": 0, "description": "nothing"},
              {"analyst": 1, "score": 50, "description": "aa"},
              {"analyst": 0, "score": 80, "description": "bb"}]
    # "----Analyst 1----\nImportance Score: 80\nbb": ---- Anal yst 1--- - (5) Impo rtan ce (3) Scor e: (2) 80 bb
    # = 12 tokens, + 2 for the blank line = 14; the second point (score 50) the same 14: 28 in all.
    full = one(db_conn, "select sag.reduce_points(%s, 28)", [Jsonb(points)])
    assert full["points"] == [{"analyst": 0, "score": 80, "answer": "bb"}, {"analyst": 1, "score": 50, "answer": "aa"}]
    assert full["text"] == "----Analyst 1----\nImportance Score: 80\nbb\n\n----Analyst 2----\nImportance Score: 50\naa"
    assert (full["tokens"], full["dropped_zero"], full["dropped_budget"]) == (28, 1, 0)
    capped = one(db_conn, "select sag.reduce_points(%s, 27)", [Jsonb(points)])
    assert [p["analyst"] for p in capped["points"]] == [0]
    assert (capped["tokens"], capped["dropped_zero"], capped["dropped_budget"]) == (14, 1, 1)


def _graph(conn: psycopg.Connection) -> dict[str, int]:
    """Keys Jobs (1,0,0), Apple (4,3,0) (cosine 0.8 with the query (1,0,0)), NeXT (0,1,0), Wozniak (0,0,1).
    Events: e1 'Jobs founded Apple' (Jobs, Apple) in c1; e2 'Jobs founded NeXT' (Jobs, NeXT) in c2;
    e3 'Wozniak built Apple I' (Wozniak, Apple) in c3."""
    g = GraphBuilder(conn)
    s = g.source("one")
    d = g.document(s, "apple.md")
    x: dict[str, int] = {}
    for name, text in (("c1", "Jobs founded Apple"), ("c2", "Jobs founded NeXT"), ("c3", "Wozniak built Apple I")):
        x[name] = g.chunk(d, text, (1, 0, 0))
        x["e" + name[1]] = g.event(x[name], text, (1, 0, 0))
    for name, v in (("Jobs", (1, 0, 0)), ("Apple", (4, 3, 0)), ("NeXT", (0, 1, 0)), ("Wozniak", (0, 0, 1))):
        x[name] = g.key(s, name, v)
    g.links(x["e1"], x["Jobs"], x["Apple"])
    g.links(x["e2"], x["Jobs"], x["NeXT"])
    g.links(x["e3"], x["Wozniak"], x["Apple"])
    return x


def test_local_context_tables(db_conn: psycopg.Connection) -> None:
    x = _graph(db_conn)
    ctx = one(db_conn, "select sag.local_context('q', %s::vector, 'one', top_k_entities => 2, oversample => 1, "
                       "top_k_relationships => 1, max_tokens => 200, text_unit_prop => 0.15, community_prop => 0)",
              [vec((1, 0, 0))])
    # Entities: the two nearest keys, Jobs (distance 0) then Apple (0.2).  Jobs co-occurs with Apple and NeXT,
    # Apple with Jobs and Wozniak: 2 relationships each; the description is the type and its first two events.
    assert [(e["entity"], e["number of relationships"], e["description"]) for e in ctx["entities"]] == [
        ("Jobs", 2, "Jobs founded Apple; Jobs founded NeXT"), ("Apple", 2, "Jobs founded Apple; Wozniak built Apple I")]
    # Relationships: the in-network pair first, once, its entities in the order of their names (Apple, Jobs);
    # then the out-network pairs by links (1 each), weight (1 each), then the names (Apple-Wozniak before
    # Jobs-NeXT: never the ids, which differ between one node and Citus); at most top_k_relationships (1) x 2
    # selected entities = 2.
    assert [(r["source"], r["target"], r["weight"], r["in_network"]) for r in ctx["relationships"]] == [
        ("Apple", "Jobs", 1, True), ("Apple", "Wozniak", 1, False)]
    # Sources: c1 (Jobs rank 1, 2 entities), c2 (Jobs, 1), c3 (Apple rank 2).  Budget floor(200 x 0.15) = 30;
    # '-----Sources-----' (5) and 'id|text' (2) with their line breaks cost 9, leaving 21: row
    # '1|Jobs founded Apple' = 1|Jo bs foun ded Appl e = 6 + 1, row '2|Jobs founded NeXT' = 5 + 1 (13 so far),
    # row '3|Wozniak built Apple I' = 3|Wo zniak... = 8 + 1 would make 22 > 21.
    assert [s["id"] for s in ctx["sources"]] == [x["c1"], x["c2"]]
    assert ctx["budgets"] == {"reports": 0, "sources": 30, "local": 170, "max_tokens": 200}
    assert ctx["tokens"]["sources"] == 5 + 2 + 6 + 5  # the table's text as the LLM gets it
    assert ctx["reports"] == []  # no hierarchy built
    assert ctx["context_text"].startswith("-----Entities-----\nid|entity|description|number of relationships\n")
    # (the tables' ids are the rows' ranks, as GraphRAG's short ids; the JSON has the chunk ids)
    assert "-----Sources-----\nid|text\n1|Jobs founded Apple\n2|Jobs founded NeXT" in ctx["context_text"]


def _reports(conn: psycopg.Connection, contents: list[tuple[str, float]]) -> list[int]:
    """A hierarchy run with one level-0 community per (content, rating), each with a report."""
    GraphBuilder(conn)
    run = one(conn, "insert into sag.cluster_runs (params, event_count, cluster_count) "
                    "values ('{\"kind\": \"hierarchy\"}', 0, %s) returning id", [len(contents)])
    ids = []
    for ordinal, (content, rating) in enumerate(contents):
        cid = one(conn, "insert into sag.clusters (run_id, ordinal, title, size, level, membership_hash) "
                        "values (%s, %s, 'T', 1, 0, 'h') returning id", [run, ordinal])
        conn.execute("insert into sag.community_reports (cluster_id, kind, title, summary, rating, full_content, "
                     "membership_hash) values (%s, 'extractive', 'T', 's', %s, %s, 'h')", [cid, rating, content])
        ids.append(cid)
    return ids


def test_report_batches_pack_within_the_budget(db_conn: psycopg.Connection) -> None:
    ten = " ".join(["w"] * 10)
    ids = _reports(db_conn, [(ten, 7), (ten, 9), (ten, 8)])
    assert max(ids) < 10
    # Header '-----Reports-----' (5) 'id|title|occurrence' + ... = -----Reports----- | id|t itle |occ urre nce| ...:
    # '-----Reports-----' 17 chars = 5 tokens, 'id|title|occurrence' 19 = 5, 'weight|content|rank' 19 = 5: 15.
    # A row 'ID|T|0|w w ... w|R' (no events: occurrence weight 0): 'ID|T|0|w' = 2, eight 'w', 'w|R' = 1: 11,
    # + 1 line break = 12.  max_tokens 39 = 15 + 2 x 12: two rows a batch, best rated first (9, 8 | 7) without
    # the shuffle.
    rows = db_conn.execute("select batch, report_ids, tokens from sag.report_batches(null, 0, 39, shuffle => false)"
                           ).fetchall()
    assert rows == [(0, [ids[1], ids[2]], 37), (1, [ids[0]], 26)]  # 15 + 11 + 11; 15 + 11
    first = one(db_conn, "select context from sag.report_batches(null, 0, 39, shuffle => false)")
    assert first == (f"-----Reports-----\nid|title|occurrence weight|content|rank\n{ids[1]}|T|0|{ten}|9\n"
                     f"{ids[2]}|T|0|{ten}|8")
    # 38 leaves room for one row a batch.
    assert [r[1] for r in db_conn.execute("select batch, report_ids from sag.report_batches(null, 0, 38, "
                                          "shuffle => false)")] == [[ids[1]], [ids[2]], [ids[0]]]


def test_report_batches_shuffle_with_a_seed(db_conn: psycopg.Connection) -> None:
    """Issue 34.5: GraphRAG's global search shuffles the reports before batching (shuffle_data, random_state
    86); here the permutation is the order of md5('<seed>/<id>')."""
    ten = " ".join(["w"] * 10)
    ids = _reports(db_conn, [(ten, r) for r in (1, 2, 3, 4, 5, 6, 7, 8)])

    def permutation(seed: int) -> list[int]:
        return sorted(ids, key=lambda i: hashlib.md5(f"{seed}/{i}".encode()).hexdigest())

    def batches(sql: str) -> list[int]:
        return [i for r in db_conn.execute(sql).fetchall() for i in r[0]]

    assert batches("select report_ids from sag.report_batches(null, 0, 38)") == permutation(86)
    assert batches("select report_ids from sag.report_batches(null, 0, 38, seed => 7)") == permutation(7)
    assert permutation(86) != sorted(ids, key=lambda i: -i)  # not the rating order (ids 8..1 rated 8..1)
    assert batches("select report_ids from sag.report_batches(null, 0, 38, shuffle => false)") == ids[::-1]


def test_community_level_defaults_to_graphrag_level_2(db_conn: psycopg.Connection) -> None:
    ids = _reports(db_conn, [("x", 1)])
    run = one(db_conn, "select run_id from sag.clusters where id = %s", [ids[0]])
    assert one(db_conn, "select sag.community_level(null)") == 0  # one level: the deepest there is
    for level in (1, 2, 3):
        db_conn.execute("insert into sag.clusters (run_id, ordinal, title, size, level, membership_hash) "
                        "values (%s, 0, 'T', 1, %s, 'h')", [run, level])
    assert one(db_conn, "select sag.community_level(null)") == 2
    assert one(db_conn, "select sag.community_level(null, 3)") == 3


def test_report_batches_cut_a_report_longer_than_a_batch(db_conn: psycopg.Connection) -> None:
    _reports(db_conn, [(" ".join(["w"] * 100), 5)])
    rows = db_conn.execute("select tokens, context from sag.report_batches(null, 0, 40)").fetchall()
    assert len(rows) == 1 and rows[0][0] <= 40 and "|w w w" in rows[0][1]


def test_no_hierarchy_is_not_found(db_conn: psycopg.Connection) -> None:
    GraphBuilder(db_conn).source("one")
    with pytest.raises(psycopg.errors.NoDataFound, match="communities build"):
        db_conn.execute("select * from sag.report_batches('one', 0, 100)")


GRAPHRAG_FUNCTIONS = ["community_digest", "community_level", "community_report", "community_reports", "estimate_tokens",
                      "hierarchy_levels", "hierarchy_run", "local_context", "membership_hash", "nearest_reports",
                      "pack_rows", "reduce_points", "report_batches", "reuse_community_reports"]


def test_public_functions_are_documented_and_pin_search_path(db_conn: psycopg.Connection) -> None:
    found = db_conn.execute(
        "select p.proname, obj_description(p.oid, 'pg_proc') is not null, "
        "'search_path=pg_catalog, sag, pg_temp' = any (p.proconfig) "
        "from pg_proc p where p.pronamespace = 'sag'::regnamespace and p.proname = any (%s) order by 1",
        [GRAPHRAG_FUNCTIONS]).fetchall()
    assert found == [(name, True, True) for name in GRAPHRAG_FUNCTIONS]


def test_membership_hash_ignores_order(db_conn: psycopg.Connection) -> None:
    # The md5 of the ids sorted and joined by commas: equal sets, equal hashes; other sets differ.
    a, b, c = (one(db_conn, "select sag.membership_hash(%s::bigint[])", [ids]) for ids in ([3, 1, 2], [1, 2, 3], [1, 2]))
    assert a == b != c
    assert a == one(db_conn, "select md5('1,2,3')")
