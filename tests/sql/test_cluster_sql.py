"""Clustering SQL (sag-algorithm §4.1–4.2): sag.cluster_key_idf, sag.cluster_key_pairs, sag.cluster_semantic_pairs.

Every expected number was worked out by hand from the formulas; the arithmetic is in the comments.
ln 2 = 0.6931472, ln 3 = 1.0986123, ln 6 = 1.7917595, ln 1.5 = 0.4054651.

The graph (source "one", six events, 3-d embeddings):

    event  embedding   keys (type entity unless said)
    e1     (1, 0, 0)   官渡, 曹操, 三国, 200年 (time)
    e2     (4, 0, 3)   官渡, 曹操, 三国
    e3     (4, 0, -3)  官渡, 三国, 袁绍
    e4     (0, 1, 0)   赤壁, 三国, 袁绍, 200年 (time)
    e5     (0, 4, 3)   赤壁, 周瑜, 三国
    e6     (0, 4, -3)  赤壁, 周瑜, 三国

N = 6; df: 官渡 3, 赤壁 3, 三国 6, 曹操 2, 周瑜 2, 袁绍 2, 200年 2, so IDF = ln(N/df):
官渡 = 赤壁 = ln 2, 三国 = ln 1 = 0, 曹操 = 周瑜 = 袁绍 = 200年 = ln 3.

Cosines: e1·e2 = e1·e3 = e4·e5 = e4·e6 = 4/5 = 0.8; e2·e3 = e5·e6 = (16 - 9)/25 = 0.28;
e2·e5 = e3·e6 = 9/25 = 0.36; e2·e6 = e3·e5 = -0.36; every other pair 0.
"""

from __future__ import annotations

import math

import psycopg
import pytest

from tests.sql.graph_builder import GraphBuilder

LN2, LN3, LN6 = 0.6931472, 1.0986123, 1.7917595


def build(conn: psycopg.Connection) -> dict[str, int]:
    """The graph of the module docstring, plus a second source whose event must never show up."""
    g = GraphBuilder(conn)
    s = g.source("one")
    c = g.chunk(g.document(s, "three-kingdoms"), "text", (1, 0, 0))
    k = {name: g.key(s, name) for name in ["官渡", "曹操", "三国", "袁绍", "赤壁", "周瑜"]}
    k["200年"] = g.key(s, "200年", type="time")
    vectors = {"e1": (1, 0, 0), "e2": (4, 0, 3), "e3": (4, 0, -3), "e4": (0, 1, 0), "e5": (0, 4, 3),
               "e6": (0, 4, -3)}
    e = {name: g.event(c, name, v) for name, v in vectors.items()}
    g.links(e["e1"], k["官渡"], k["曹操"], k["三国"], k["200年"])
    g.links(e["e2"], k["官渡"], k["曹操"], k["三国"])
    g.links(e["e3"], k["官渡"], k["三国"], k["袁绍"])
    g.links(e["e4"], k["赤壁"], k["三国"], k["袁绍"], k["200年"])
    g.links(e["e5"], k["赤壁"], k["周瑜"], k["三国"])
    g.links(e["e6"], k["赤壁"], k["周瑜"], k["三国"])
    # Another source: an event identical to e1 with the same key names; never chosen, never a neighbour.
    s2 = g.source("two")
    c2 = g.chunk(g.document(s2, "other"), "text", (1, 0, 0))
    other = g.event(c2, "o1", (1, 0, 0))
    g.links(other, g.key(s2, "官渡"), g.key(s2, "曹操"))
    return {**e, **{f"k:{n}": v for n, v in k.items()}, "source": s, "other": other}


def ids(x: dict[str, int], *names: str) -> list[int]:
    return [x[n] for n in names]


ALL = ("e1", "e2", "e3", "e4", "e5", "e6")


def idf(conn: psycopg.Connection, event_ids: list[int], **kw: object) -> dict[int, float]:
    named = "".join(f", {k} => %({k})s" for k in kw)
    rows = conn.execute(f"select key_id, idf from sag.cluster_key_idf(%(ids)s{named})", {"ids": event_ids, **kw})
    return {r[0]: r[1] for r in rows.fetchall()}


def key_pairs(conn: psycopg.Connection, event_ids: list[int], **kw: object) -> dict[tuple[int, int], float]:
    named = "".join(f", {k} => %({k})s" for k in kw)
    rows = conn.execute(f"select event_a, event_b, w_key from sag.cluster_key_pairs(%(ids)s{named})",
                        {"ids": event_ids, **kw}).fetchall()
    assert all(a < b for a, b, _ in rows)
    assert len({(a, b) for a, b, _ in rows}) == len(rows)
    return {(a, b): w for a, b, w in rows}


def semantic_pairs(conn: psycopg.Connection, event_ids: list[int], **kw: object) -> dict[tuple[int, int], float]:
    named = "".join(f", {k} => %({k})s" for k in kw)
    rows = conn.execute(f"select event_a, event_b, similarity from sag.cluster_semantic_pairs(%(ids)s{named})",
                        {"ids": event_ids, **kw}).fetchall()
    assert all(a < b for a, b, _ in rows)
    assert len({(a, b) for a, b, _ in rows}) == len(rows)
    return {(a, b): s for a, b, s in rows}


def approx(d: dict[tuple[int, int], float] | dict[int, float]) -> dict:  # type: ignore[type-arg]
    return {k: pytest.approx(v, abs=1e-6) for k, v in d.items()}


def pair(x: dict[str, int], a: str, b: str) -> tuple[int, int]:
    return (min(x[a], x[b]), max(x[a], x[b]))


# ---------------------------------------------------------------------------------------------------------
# IDF


def test_idf_is_ln_n_over_df(db_conn: psycopg.Connection) -> None:
    x = build(db_conn)
    k = lambda n: x[f"k:{n}"]
    expected = {k("官渡"): LN2, k("赤壁"): LN2, k("三国"): 0.0, k("曹操"): LN3, k("周瑜"): LN3, k("袁绍"): LN3,
                k("200年"): LN3}
    assert idf(db_conn, ids(x, *ALL)) == approx(expected)
    # The key-type filter keeps only time keys; N is still the six events: 200年 = ln(6/2).
    assert idf(db_conn, ids(x, *ALL), key_types=["time"]) == approx({k("200年"): LN3})
    # Without IDF every key weighs 1.
    assert idf(db_conn, ids(x, *ALL), use_idf=False) == approx({key: 1.0 for key in expected})


def test_idf_counts_only_the_chosen_events(db_conn: psycopg.Connection) -> None:
    x = build(db_conn)
    k = lambda n: x[f"k:{n}"]
    # Chosen e1, e2, e3 (and an id that does not exist, which does not count): N = 3.
    # 官渡 df 3 -> ln 1 = 0; 三国 df 3 -> 0; 曹操 df 2 -> ln 1.5; 袁绍 df 1 -> ln 3; 200年 df 1 -> ln 3.
    got = idf(db_conn, ids(x, "e1", "e2", "e3") + [10**12])
    assert got == approx({k("官渡"): 0.0, k("三国"): 0.0, k("曹操"): math.log(1.5), k("袁绍"): LN3,
                          k("200年"): LN3})
    # Repeated ids are one event: the same N.
    assert idf(db_conn, ids(x, "e1", "e1", "e2", "e3")) == got
    assert idf(db_conn, []) == {}


# ---------------------------------------------------------------------------------------------------------
# key pairs


def test_key_pairs_sum_the_idf_of_shared_keys(db_conn: psycopg.Connection) -> None:
    x = build(db_conn)
    # 三国 (IDF 0) links every pair but adds nothing, so only pairs sharing another key appear:
    #   e1-e2: 官渡 + 曹操 = ln 2 + ln 3 = ln 6     e5-e6: 赤壁 + 周瑜 = ln 6
    #   e1-e3, e2-e3: 官渡 = ln 2                  e4-e5, e4-e6: 赤壁 = ln 2
    #   e3-e4: 袁绍 = ln 3                          e1-e4: 200年 = ln 3
    expected = {pair(x, "e1", "e2"): LN6, pair(x, "e5", "e6"): LN6, pair(x, "e1", "e3"): LN2,
                pair(x, "e2", "e3"): LN2, pair(x, "e4", "e5"): LN2, pair(x, "e4", "e6"): LN2,
                pair(x, "e3", "e4"): LN3, pair(x, "e1", "e4"): LN3}
    assert key_pairs(db_conn, ids(x, *ALL)) == approx(expected)
    # Only entity keys: the time key 200年 no longer links e1-e4.
    del expected[pair(x, "e1", "e4")]
    assert key_pairs(db_conn, ids(x, *ALL), key_types=["entity"]) == approx(expected)


def test_key_pairs_without_idf_count_shared_keys(db_conn: psycopg.Connection) -> None:
    x = build(db_conn)
    # Every key weighs 1, so 三国 (held by all six) makes all 15 pairs: 1 + the other shared keys.
    expected = {pair(x, a, b): 1.0 for i, a in enumerate(ALL) for b in ALL[i + 1:]}
    for a, b, extra in [("e1", "e2", 2), ("e5", "e6", 2), ("e1", "e3", 1), ("e2", "e3", 1), ("e4", "e5", 1),
                        ("e4", "e6", 1), ("e3", "e4", 1), ("e1", "e4", 1)]:
        expected[pair(x, a, b)] += extra
    assert key_pairs(db_conn, ids(x, *ALL), use_idf=False) == approx(expected)
    # max_key_events = 5 skips 三国 (6 events): the same pairs minus 1, and the 7 pairs it alone made vanish.
    capped = {p: w - 1 for p, w in expected.items() if w > 1}
    assert len(capped) == 8
    assert key_pairs(db_conn, ids(x, *ALL), use_idf=False, max_key_events=5) == approx(capped)


def test_key_pairs_of_a_subset(db_conn: psycopg.Connection) -> None:
    x = build(db_conn)
    # e1, e2, e3, e4: N = 4.  官渡 df 3 -> ln(4/3); 三国 df 4 -> 0; 曹操, 袁绍, 200年 df 2 -> ln 2; 赤壁 df 1.
    #   e1-e2: 官渡 + 曹操 = ln(4/3) + ln 2 = ln(8/3); e1-e3, e2-e3: ln(4/3); e3-e4: 袁绍 = ln 2; e1-e4: ln 2.
    expected = {pair(x, "e1", "e2"): math.log(8 / 3), pair(x, "e1", "e3"): math.log(4 / 3),
                pair(x, "e2", "e3"): math.log(4 / 3), pair(x, "e3", "e4"): LN2, pair(x, "e1", "e4"): LN2}
    assert key_pairs(db_conn, ids(x, "e1", "e2", "e3", "e4")) == approx(expected)
    # max_key_events = 2 also drops 官渡 (3 of the chosen events).
    expected = {pair(x, "e1", "e2"): LN2, pair(x, "e3", "e4"): LN2, pair(x, "e1", "e4"): LN2}
    assert key_pairs(db_conn, ids(x, "e1", "e2", "e3", "e4"), max_key_events=2) == approx(expected)


def test_key_cap_fits_the_pair_budget(db_conn: psycopg.Connection) -> None:
    x = build(db_conn)
    six = ids(x, *ALL)

    def cap(max_pairs: int, **kw: object) -> int:
        named = "".join(f", {k} => %({k})s" for k in kw)
        row = db_conn.execute(f"select sag.cluster_key_cap(%(ids)s, %(p)s{named})",
                              {"ids": six, "p": max_pairs, **kw}).fetchone()
        assert row is not None
        return int(row[0])

    # Pairs per document frequency: df 2 (曹操, 周瑜, 袁绍, 200年) 4·1 = 4; df 3 (官渡, 赤壁) 2·3 = 6, so 10 up to
    # df 3; df 6 (三国) 15 more, but with IDF it is worth 0 and does not count.
    assert [cap(p) for p in (0, 3, 4, 9, 10, 1000)] == [1, 1, 2, 2, 3, 3]
    # Without IDF 三国 counts: 10 + 15 = 25 pairs up to df 6.
    assert [cap(p, use_idf=False) for p in (10, 24, 25)] == [3, 3, 6]
    # Only time keys: 200年 (df 2) alone, 1 pair.
    assert cap(1, key_types=["time"]) == 2
    # The caps do what they promise: max_key_events = 1 makes no key pair, 2 the four df-2 pairs.
    assert key_pairs(db_conn, six, max_key_events=1) == {}
    assert len(key_pairs(db_conn, six, max_key_events=2)) == 4


# ---------------------------------------------------------------------------------------------------------
# semantic pairs


SEMANTIC_ALL = {("e1", "e2"): 0.8, ("e1", "e3"): 0.8, ("e4", "e5"): 0.8, ("e4", "e6"): 0.8, ("e2", "e3"): 0.28,
                ("e5", "e6"): 0.28, ("e2", "e5"): 0.36, ("e3", "e6"): 0.36}


@pytest.mark.parametrize("exact_max", [1000, 0], ids=["exact", "hnsw"])
def test_semantic_pairs_are_the_k_nearest(db_conn: psycopg.Connection, exact_max: int) -> None:
    x = build(db_conn)
    # k = 10 > 5 other events: every pair with a positive cosine (pairs at cosine 0 or below are left out).
    expected = {pair(x, a, b): s for (a, b), s in SEMANTIC_ALL.items()}
    assert semantic_pairs(db_conn, ids(x, *ALL), k=10, exact_max=exact_max) == approx(expected)
    # k = 2: e1 -> e2, e3 (0.8 each); e2 -> e1 (0.8), e5 (0.36); e3 -> e1, e6; e4 -> e5, e6; e5 -> e4, e2;
    # e6 -> e4, e3.  The 0.28 pairs e2-e3 and e5-e6 are nobody's top 2.
    expected = {pair(x, a, b): s for (a, b), s in SEMANTIC_ALL.items() if s != 0.28}
    assert semantic_pairs(db_conn, ids(x, *ALL), k=2, exact_max=exact_max) == approx(expected)
    # k = 1: e1 -> e2 (tie with e3 broken by id in the exact path: any one of them with HNSW)...
    got = semantic_pairs(db_conn, ids(x, *ALL), k=1, exact_max=exact_max)
    assert {pair(x, "e2", "e1"), pair(x, "e4", "e5")} <= set(got)  # e2's and e5's nearest
    assert set(got) <= {pair(x, a, b) for a, b in SEMANTIC_ALL}


@pytest.mark.parametrize("exact_max", [1000, 0], ids=["exact", "hnsw"])
def test_semantic_pairs_stay_within_the_chosen_events(db_conn: psycopg.Connection, exact_max: int) -> None:
    x = build(db_conn)
    # e1, e2, e5: e1-e2 0.8, e2-e5 0.36, e1-e5 0 (left out).  e3 and the other source's o1 = (1, 0, 0) are
    # nearer to e1 than e5 is, but not chosen.
    expected = {pair(x, "e1", "e2"): 0.8, pair(x, "e2", "e5"): 0.36}
    assert semantic_pairs(db_conn, ids(x, "e1", "e2", "e5"), k=5, exact_max=exact_max) == approx(expected)


def test_semantic_pairs_skip_events_without_a_usable_embedding(db_conn: psycopg.Connection) -> None:
    x = build(db_conn)
    chunk = db_conn.execute("select chunk_id from sag.events where id = %s", [x["e1"]]).fetchone()
    assert chunk is not None
    g = GraphBuilder(db_conn)
    no_vector = g.event(chunk[0], "no vector", None)
    zero = g.event(chunk[0], "zero vector", (0, 0, 0))  # cosine undefined (NaN)
    for exact_max in (1000, 0):
        got = semantic_pairs(db_conn, ids(x, "e1", "e2") + [no_vector, zero], k=5, exact_max=exact_max)
        assert got == approx({pair(x, "e1", "e2"): 0.8})
    assert semantic_pairs(db_conn, [x["e1"]]) == {}
    assert semantic_pairs(db_conn, []) == {}


def test_semantic_pairs_restore_the_hnsw_settings(db_conn: psycopg.Connection) -> None:
    x = build(db_conn)
    db_conn.execute("set hnsw.ef_search = 17")
    semantic_pairs(db_conn, ids(x, *ALL), k=300, exact_max=0)
    assert db_conn.execute("select current_setting('hnsw.ef_search')").fetchone() == ("17",)
    assert db_conn.execute("select current_setting('hnsw.iterative_scan')").fetchone() == ("off",)
    assert db_conn.execute("select current_setting('enable_sort')").fetchone() == ("on",)


@pytest.mark.parametrize(
    "call",
    [
        "select * from sag.cluster_key_idf(null)",
        "select * from sag.cluster_key_idf('{1}', use_idf => null)",
        "select * from sag.cluster_key_pairs(null)",
        "select * from sag.cluster_key_pairs('{1}', max_key_events => 0)",
        "select sag.cluster_key_cap('{1}', -1)",
        "select sag.cluster_key_cap(null, 10)",
        "select * from sag.cluster_semantic_pairs(null)",
        "select * from sag.cluster_semantic_pairs('{1}', k => 0)",
        "select * from sag.cluster_semantic_pairs('{1}', exact_max => -1)",
    ],
)
def test_bad_parameters_are_22023(db_conn: psycopg.Connection, call: str) -> None:
    GraphBuilder(db_conn)
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        db_conn.execute(call)


def test_public_functions_are_documented(db_conn: psycopg.Connection) -> None:
    rows = db_conn.execute(
        "select p.proname, obj_description(p.oid, 'pg_proc') from pg_proc p "
        "where p.pronamespace = 'sag'::regnamespace and p.proname like 'cluster%'"
    ).fetchall()
    assert sorted(r[0] for r in rows) == ["cluster_key_cap", "cluster_key_idf", "cluster_key_pairs",
                                          "cluster_semantic_pairs"]
    assert all(r[1] for r in rows)


def test_cluster_tables_cascade(db_conn: psycopg.Connection) -> None:
    x = build(db_conn)
    run = db_conn.execute("insert into sag.cluster_runs (source_id, event_count, cluster_count) "
                          "values (%s, 2, 1) returning id", [x["source"]]).fetchone()
    assert run is not None
    cluster = db_conn.execute("insert into sag.clusters (run_id, ordinal, title, size) values (%s, 0, 't', 2) "
                              "returning id", [run[0]]).fetchone()
    assert cluster is not None
    db_conn.execute("insert into sag.cluster_events (cluster_id, source_id, event_id) values (%s, %s, %s), (%s, %s, %s)",
                    [cluster[0], x["source"], x["e1"], cluster[0], x["source"], x["e2"]])

    db_conn.execute("delete from sag.events where id = %s", [x["e1"]])
    assert db_conn.execute("select event_id from sag.cluster_events").fetchall() == [(x["e2"],)]
    db_conn.execute("delete from sag.sources where id = %s", [x["source"]])
    assert db_conn.execute("select count(*) from sag.cluster_runs").fetchone() == (0,)
    assert db_conn.execute("select count(*) from sag.clusters").fetchone() == (0,)
    assert db_conn.execute("select count(*) from sag.cluster_events").fetchone() == (0,)
