"""The seed profile (issue 34 item 4): sag-algorithm §2.2-2.4's formulas as written, against a reference
computed here.

The reference below is written from the seed's text (../shared/seeds/sag-algorithm.md), not from the code under
test: k1 = the cosine of the query with each key (top_k, no threshold); e1 = the cosine of each event; the
intersection of the seed keys' events with e1's; W_event-key(e) = sum of k1 over the seed keys in e; W_e2 =
W_event-key * e1; reverse activation W(k) = sum of W_e2 over the events holding k; pruning (>= threshold *
max, then top n), no normalization; stage 2 the same with the key-final weights and the cosine of the original
query, new keys at step = the hop; W_init(c) = 0.5 * cos(c, Q) + ln(1 + sum W(k) ln(1 + count(k, c)) / step(k));
PageRank (networkx's own implementation, damping 0.85) over the key-chunk graph, restarting at each node's
initial weight.

Every cosine is clamped at 0 (a negative weight would make ln(1 + x) undefined; docs/retrieval.md lists this
with the other deviations).  Query q = (1, 0, 0).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import networkx as nx
import numpy as np
import psycopg
import pytest
from click.testing import CliRunner

from sag_pg import SAG, Settings
from sag_pg.bench.methods import parse_methods
from sag_pg.cli import cli
from sag_pg.errors import QueryError
from sag_pg.search import RetrievalParams, retrieve
from tests.sql.graph_builder import GraphBuilder, vec
from tests.test_search import DOCS

Q = (1.0, 0.0, 0.0)
TOKENS = ["alpha", "acme"]
THRESHOLD, TOP_N, MAX_STEP = 0.1, 20, 3


def cos(a: Sequence[float], b: Sequence[float]) -> float:
    return max(0.0, float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b))))


@dataclass
class Corpus:
    """The hand-made graph, as the test wrote it: what the reference computes from."""

    source: int = 0
    keys: dict[int, tuple[float, ...]] = field(default_factory=dict)          # key -> embedding
    events: dict[int, tuple[float, ...]] = field(default_factory=dict)        # event -> embedding
    event_chunk: dict[int, int] = field(default_factory=dict)
    event_keys: dict[int, dict[int, int]] = field(default_factory=dict)       # event -> key -> count
    chunks: dict[int, tuple[float, ...]] = field(default_factory=dict)        # chunk -> embedding
    names: dict[str, int] = field(default_factory=dict)


def build(conn: psycopg.Connection) -> Corpus:
    g = GraphBuilder(conn)
    c = Corpus(source=g.source("seedcase"))
    for name, emb in {"A": (1, 0, 0), "B": (3, 4, 0), "C": (0, 1, 0), "D": (0, 1, 1), "E": (0, 0, 1),
                      "F": (7, 24, 0)}.items():
        c.names[name] = k = g.key(c.source, name, emb)
        c.keys[k] = tuple(map(float, emb))
    chunk_specs = {"c1": ((4, 3, 0), "alpha founded acme"), "c2": ((3, 4, 0), "beta joined acme later"),
                   "c3": ((0, 1, 0), "gamma met delta"), "c4": ((1, 1, 1), "delta and epsilon"),
                   "c5": ((0, 0, 1), "zeta alone")}
    for name, (emb, text) in chunk_specs.items():
        doc = g.document(c.source, f"{name}.md", title=name)
        c.names[name] = ch = g.chunk(doc, text, emb)
        c.chunks[ch] = tuple(map(float, emb))
    # (chunk, embedding, {key: count})
    event_specs = {
        "e1": ("c1", (1, 0, 0), {"A": 1, "B": 1}),
        "e2": ("c1", (4, 0, 3), {"B": 2}),
        "e3": ("c2", (3, 4, 0), {"B": 1, "C": 1}),
        "e4": ("c3", (1, 1, 0), {"C": 1, "D": 1}),
        "e5": ("c4", (4, 3, 0), {"D": 1, "E": 1}),
        "e6": ("c2", (7, 24, 0), {"C": 1, "E": 1}),
        "e7": ("c5", (1, 0, 1), {"E": 1, "F": 1}),
        "e8": ("c2", (1, 0, 0), {"A": 1, "C": 1}),
    }
    for name, (chunk, emb, links) in event_specs.items():
        c.names[name] = e = g.event(c.names[chunk], name, emb)
        c.events[e] = tuple(map(float, emb))
        c.event_chunk[e] = c.names[chunk]
        c.event_keys[e] = {}
        for key, count in links.items():
            g.link(e, c.names[key], count)
            c.event_keys[e][c.names[key]] = count
    conn.execute("select sag.flush_term_stats()")
    return c


# ---------------------------------------------------------------------------------------------------------
# The reference: the seed's formulas, from its text.


def prune(w: dict[int, float]) -> dict[int, float]:
    """§2.2 step 8: the keys above threshold * the strongest, then the top n (ties by id); not normalized."""
    w = {k: v for k, v in w.items() if v > 0}
    if not w:
        return {}
    top = max(w.values())
    kept = sorted((k for k, v in w.items() if v >= THRESHOLD * top), key=lambda k: (-w[k], k))[:TOP_N]
    return {k: w[k] for k in kept}


def reverse(c: Corpus, event_w: dict[int, float]) -> dict[int, float]:
    """§2.2 step 7: W(k) = sum of the weights of the events holding k."""
    out: dict[int, float] = defaultdict(float)
    for e, w in event_w.items():
        for k in c.event_keys[e]:
            out[k] += w
    return dict(out)


def stage1(c: Corpus, k1: dict[int, float]) -> dict[int, float]:
    e1 = {e: cos(emb, Q) for e, emb in c.events.items()}                      # step 3 (every event: < 50)
    related = {e for e, keys in c.event_keys.items() if set(keys) & set(k1)}  # step 2
    w_e2 = {}
    for e in related & set(e1):                                               # step 4
        w_ek = sum(k1[k] for k in c.event_keys[e] if k in k1)                 # step 5
        w_e2[e] = w_ek * e1[e]                                                # step 6
    return prune(reverse(c, {e: w for e, w in w_e2.items() if w > 0}))      # steps 7-8


def stage2(c: Corpus, first: dict[int, float]) -> dict[int, tuple[float, int]]:
    final = {k: (w, 1) for k, w in first.items()}
    f = dict(first)
    hop = 1
    while f and hop < MAX_STEP:
        hop += 1
        events = {e for e, keys in c.event_keys.items() if set(keys) & set(f)}   # step 1
        w_jump = {e: sum(f[k] for k in c.event_keys[e] if k in f) * cos(c.events[e], Q) for e in events}  # 2-4
        f = prune(reverse(c, w_jump))                                              # steps 5-6
        if not f:
            break
        new = [k for k in f if k not in final]
        for k, w in f.items():
            old = final.get(k)
            final[k] = (w, hop) if old is None else (max(old[0], w), old[1])
        if len(new) < 1:
            break
    return final


def w_init(c: Corpus, final: dict[int, tuple[float, int]]) -> dict[int, float]:
    """§2.4 step 4 over every chunk (the candidates: all of them, each is among the 50 nearest)."""
    out = {}
    for ch, emb in c.chunks.items():
        counts: dict[int, int] = defaultdict(int)
        for e, keys in c.event_keys.items():
            if c.event_chunk[e] == ch:
                for k, n in keys.items():
                    counts[k] += n
        key_sum = sum(final[k][0] * math.log(1 + n) / final[k][1] for k, n in counts.items() if k in final)
        out[ch] = 0.5 * cos(emb, Q) + math.log(1 + key_sum)
    return out


def pagerank(c: Corpus, final: dict[int, tuple[float, int]], init: dict[int, float]) -> dict[int, float]:
    """§2.4 step 5 with networkx's reference PageRank: damping 0.85, restart at each node's initial weight."""
    graph = nx.Graph()
    graph.add_nodes_from(("c", ch) for ch in init)
    graph.add_nodes_from(("k", k) for k in final)
    for e, keys in c.event_keys.items():
        for k, n in keys.items():
            if k in final:
                a, b = ("c", c.event_chunk[e]), ("k", k)
                old = graph.get_edge_data(a, b, {"weight": 0})["weight"]
                graph.add_edge(a, b, weight=old + n)
    pers = {("c", ch): w for ch, w in init.items()} | {("k", k): w for k, (w, _) in final.items()}
    reference = getattr(nx.algorithms.link_analysis.pagerank_alg, "_pagerank_python", None) or nx.pagerank
    scores = reference(graph, alpha=0.85, personalization=pers, weight="weight", tol=1e-12, max_iter=1000)
    return {ch: scores[("c", ch)] for ch in init}


def k1_of(c: Corpus) -> dict[int, float]:
    """§2.2 step 1: every key's cosine with the query (top 30: all of them), no threshold."""
    return {k: cos(emb, Q) for k, emb in c.keys.items()}


# ---------------------------------------------------------------------------------------------------------


def sql_retrieve(conn: psycopg.Connection, c: Corpus, profile: str, **kw: object) -> dict:
    extra = "".join(f", {k} => %({k})s" for k in kw)
    row = conn.execute(f"select sag.retrieve('alpha acme', %(q)s::vector, array[%(s)s::bigint], "
                       f"query_tokens => %(t)s, with_edges => true, profile => %(p)s{extra})",
                       {"q": vec(Q), "s": c.source, "t": TOKENS, "p": profile, **kw}).fetchone()
    assert row is not None
    return row[0]


def test_seed_stage1_is_the_seeds_formula(db_conn: psycopg.Connection) -> None:
    c = build(db_conn)
    k1 = k1_of(c)
    expected = stage1(c, k1)
    ids, weights = list(k1), list(k1.values())
    best = c.names["c2"]  # a query chunk with a BM25 score: the default would add its keys (feedback) and events
    rows = db_conn.execute(
        "select key_id, weight, step from sag.activate_keys(%s::vector, %s, %s, array[%s::bigint], "
        "chunk_ids => %s, chunk_similarities => %s, chunk_text_scores => %s, text_weight => 0.5, "
        "profile => 'seed')",
        [vec(Q), ids, weights, c.source, [best], [0.6], [1.0]]).fetchall()
    assert {k: w for k, w, _ in rows} == pytest.approx(expected, rel=1e-9)
    assert {s for *_, s in rows} == {1}
    # By hand: k1 A 1, B 0.6, F 0.28 (C, D, E 0).  e1 (cosines): e1 1, e2 0.8, e3 0.6, e4 0.707, e5 0.8,
    # e6 0.28, e7 0.707, e8 1.  W_e2 = (sum of k1 in e) * e1: e1 (A, B) 1.6, e2 (B) 0.48, e3 (B, C) 0.36,
    # e8 (A, C) 1.0, e7 (F, E) 0.28 * 0.707 = 0.198; e4, e5, e6 0 (no seed key of positive k1).
    # W(k): A 1.6 + 1.0 = 2.6, B 1.6 + 0.48 + 0.36 = 2.44, C 0.36 + 1.0 = 1.36, E = F = 0.198.
    # Kept >= 0.1 * 2.6: A, B, C; raw sums, not a distribution (the default divides by their sum, 6.4).
    assert expected == pytest.approx({c.names["A"]: 2.6, c.names["B"]: 2.44, c.names["C"]: 1.36})


def test_seed_key_final_and_w_init_and_pagerank(db_conn: psycopg.Connection) -> None:
    c = build(db_conn)
    final = stage2(c, stage1(c, k1_of(c)))
    init = w_init(c, final)
    got = sql_retrieve(db_conn, c, "seed")
    assert got["profile"] == "seed"
    assert {k["key_id"]: (pytest.approx(k["weight"], rel=1e-9), k["step"]) for k in got["keys"]} == \
        {k: (w, s) for k, (w, s) in final.items()}
    # Hop 2 brings D (through e4, C's event: 1.36 * 0.707 = 0.962 >= 0.1 * B's 9.272) at step 2.
    assert final[c.names["D"]][1] == 2 and {s for _, s in final.values()} == {1, 2}
    assert {ch["chunk_id"]: ch["weight_init"] for ch in got["chunks"]} == pytest.approx(init, rel=1e-9)
    assert got["direct_matches"] == []

    result = retrieve(db_conn, "alpha acme", np.asarray(Q, dtype=np.float32), source_ids=[c.source],
                      query_tokens=TOKENS, top_n=5, params=RetrievalParams(profile="seed"))
    ranks = pagerank(c, final, init)
    expected_order = sorted(ranks, key=lambda ch: (-ranks[ch], -init[ch], ch))
    assert [h.chunk_id for h in result.chunks] == expected_order
    # networkx normalizes over chunks and keys together, as sag_pg.search.pagerank does.
    assert [h.score for h in result.chunks] == pytest.approx([ranks[ch] for ch in expected_order], abs=1e-5)


def test_default_and_seed_differ_where_the_seed_says(db_conn: psycopg.Connection) -> None:
    c = build(db_conn)
    seed = sql_retrieve(db_conn, c, "seed")
    default = sql_retrieve(db_conn, c, "default")
    # The default keeps the seed keys above 0.45 only: F (0.28) seeds nothing there; the seed takes every key.
    stage1_default = db_conn.execute(
        "select key_id from sag.match_keys(%s::vector, array[%s::bigint])", [vec(Q), c.source]).fetchall()
    assert c.names["F"] not in {r[0] for r in stage1_default}
    stage1_seed = db_conn.execute(
        "select key_id from sag.match_keys(%s::vector, array[%s::bigint], min_similarity => 0)",
        [vec(Q), c.source]).fetchall()
    assert c.names["F"] in {r[0] for r in stage1_seed}
    # The default's stage activations are distributions (L1, each sums to 1: key-final's largest weight <= 1);
    # the seed's weights are raw sums (B weighs 2.44 after stage 1).
    assert max(k["weight"] for k in default["keys"]) <= 1.0
    assert max(k["weight"] for k in seed["keys"]) > 1.0
    # s(c, Q): the default mixes in BM25 (text_weight = coverage); the seed's is the cosine.
    by_id = {ch["chunk_id"]: ch for ch in seed["chunks"]}
    assert by_id[c.names["c1"]]["s"] == pytest.approx(0.8)
    assert {ch["chunk_id"]: ch["s"] for ch in default["chunks"]}[c.names["c1"]] != pytest.approx(0.8)
    assert seed["text_weight"] == 0 and seed["key_weight"] == 1
    # The Python side: PageRank's damping 0.85 and no final reordering in the seed profile, 0.3 by default.
    assert RetrievalParams(profile="seed").alpha() == 0.85 and RetrievalParams().alpha() == 0.3
    assert RetrievalParams(profile="seed").final_order() == (False, 0, False)
    assert RetrievalParams().final_order() == (True, 3, True)


def test_psql_search_takes_the_profile(db_conn: psycopg.Connection) -> None:
    c = build(db_conn)
    final = stage2(c, stage1(c, k1_of(c)))
    init = w_init(c, final)
    rows = db_conn.execute("select chunk_id, score from sag.search('alpha acme', 3, source => 'seedcase', "
                           "query_embedding => %s::vector, profile => 'seed')", [vec(Q)]).fetchall()
    best = sorted(init, key=lambda ch: (-init[ch], ch))[:3]
    assert [r[0] for r in rows] == best
    assert [r[1] for r in rows] == pytest.approx([init[ch] for ch in best], rel=1e-9)
    # Named arguments of the former signature still work.
    assert db_conn.execute("select count(*) from sag.search('alpha acme', top_n => 2, source => 'seedcase', "
                           "query_embedding => %s::vector)", [vec(Q)]).fetchone() == (2,)


def test_unknown_profile_is_refused(db_conn: psycopg.Connection) -> None:
    c = build(db_conn)
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="profile"):
        sql_retrieve(db_conn, c, "seedish")
    db_conn.rollback()
    with pytest.raises(QueryError, match="profile"):
        retrieve(db_conn, "alpha", np.asarray(Q, dtype=np.float32), source_ids=[c.source],
                 params=RetrievalParams(profile="seedish"))


def test_bench_knows_sag_seed() -> None:
    assert parse_methods("sag,sag-seed,dataflow,bm25") == ["sag", "sag-seed", "dataflow", "bm25"]


def test_cli_search_profile_seed(db_dsn: str, tmp_path: Path) -> None:
    with SAG(settings=Settings(database_url=db_dsn, home=tmp_path)) as sag:
        for uri, text in DOCS.items():
            sag.ingest_text(text, uri=uri)
        seed = sag.search("Marie Curie Nobel", top_n=4, params=RetrievalParams(profile="seed"))
        default = sag.search("Marie Curie Nobel", top_n=4)
    env = {"SAG_DATABASE_URL": db_dsn, "SAG_HOME": str(tmp_path), "SAG_LLM": "", "SAG_EMBEDDER": ""}
    out = CliRunner().invoke(cli, ["search", "Marie Curie Nobel", "--top-n", "4", "--profile", "seed", "--json"],
                             env=env)
    assert out.exit_code == 0, out.output
    shown = json.loads(out.stdout)["chunks"]
    # The CLI's chunks are the seed profile's (those that score: padding is left out), with its PageRank scores.
    assert shown and [(c["chunk_id"], pytest.approx(c["score"])) for c in shown] == \
        [(h.chunk_id, h.score) for h in seed.chunks][:len(shown)]
    assert [h.score for h in seed.chunks] != pytest.approx([h.score for h in default.chunks])
    refused = CliRunner().invoke(cli, ["search", "x", "--profile", "seed", "--strategy", "dataflow"], env=env)
    assert refused.exit_code != 0 and "--profile" in refused.output
