"""Event clustering (sag-algorithm §4) from Python and the CLI: fusion, Louvain, titles, storage, export.

The graph is the one of tests/sql/test_cluster_sql.py (six events of source "one", groups e1-e3 and e4-e6,
key pairs and cosines worked out there).  The numbers below continue that arithmetic by hand:

Key pairs (w_key): e1-e2 = e5-e6 = ln 6 = 1.7917595; e1-e3 = e2-e3 = e4-e5 = e4-e6 = ln 2 = 0.6931472;
e3-e4 = e1-e4 = ln 3 = 1.0986123.
  mean = (2 ln 6 + 4 ln 2 + 2 ln 3) / 8 = 8.5533322 / 8 = 1.0691665
  deviations: ln 6 +0.7225930, ln 2 -0.3760193, ln 3 +0.0294458
  variance (population) = (2·0.5221407 + 4·0.1413905 + 2·0.0008671) / 8 = 1.6115775 / 8 = 0.2014472
  std = 0.4488287
  z: ln 6 -> 1.6099527, ln 2 -> -0.8377793, ln 3 -> 0.0656058
  sigmoid: ln 6 -> 0.8334048, ln 2 -> 0.3020027, ln 3 -> 0.5163956
Semantic pairs (k = 10): e1-e2 = e1-e3 = e4-e5 = e4-e6 = 0.8; e2-e3 = e5-e6 = 0.28; e2-e5 = e3-e6 = 0.36.
Fused with alpha = 0.7 (0.7·key + 0.3·sim):
  e1-e2 = 0.5833834 + 0.24 = 0.8233834        e5-e6 = 0.5833834 + 0.084 = 0.6673834
  e1-e3 = e4-e5 = e4-e6 = 0.2114019 + 0.24 = 0.4514019
  e2-e3 = 0.2114019 + 0.084 = 0.2954019
  e3-e4 = e1-e4 = 0.3614769 + 0 (not semantic pairs: cosine 0)
  e2-e5 = e3-e6 = 0 + 0.108 = 0.108 (no shared key but 三国, whose IDF is 0)
All ten are above the threshold 0.1.  Communities: {e1, e2, e3} and {e4, e5, e6}.  Modularity of that split:
  m = sum of weights = 4.0793281; inside each group 1.5701872; each group's degree sum 2·1.5701872 + 0.9389538
  (cross edges 2·0.3614769 + 2·0.108) = 4.0793281 = m, so Q = 2·(1.5701872/4.0793281 - (1/2)^2)
  = 2·(0.3849133 - 0.25) = 0.2698266.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import psycopg
import pytest
from click.testing import CliRunner

from sag_pg import Settings
from sag_pg.cli._common import AppContext
from sag_pg.cli.cluster import cluster as cluster_command
from sag_pg.cluster import (
    ClusterParams,
    EventSelection,
    cluster_events,
    parse_key_spec,
    write_graphml,
    write_png,
)
from sag_pg.cluster.graph import communities, fuse, normalize_key_weights
from sag_pg.cluster.titles import offline_title, render_prompt
from sag_pg.errors import ConfigError, InputError
from sag_pg.llm.openai_llm import OpenAILLM
from sag_pg.search.result import ChunkHit, SearchResult

from .openai_server import FakeOpenAIServer, Scripted
from .sql.test_cluster_sql import build

FUSED = {("e1", "e2"): 0.8233834, ("e5", "e6"): 0.6673834, ("e1", "e3"): 0.4514019, ("e4", "e5"): 0.4514019,
         ("e4", "e6"): 0.4514019, ("e2", "e3"): 0.2954019, ("e3", "e4"): 0.3614769, ("e1", "e4"): 0.3614769,
         ("e2", "e5"): 0.108, ("e3", "e6"): 0.108}
LN2, LN3 = 0.6931472, 1.0986123


def names(x: dict[str, int]) -> dict[int, str]:
    return {v: k for k, v in x.items() if k.startswith("e")}


def as_names(x: dict[str, int], groups: list[list[int]]) -> list[list[str]]:
    n = names(x)
    return [[n[e] for e in g] for g in groups]


# ---------------------------------------------------------------------------------------------------------
# graph.py on its own


def test_normalize_is_sigmoid_of_z_score() -> None:
    # w = (1, 2, 3): mean 2, population std sqrt(2/3) = 0.8164966; z = -1.2247449, 0, 1.2247449;
    # sigmoid = 1/(1 + e^1.2247449) = 1/4.4032994 = 0.2271025, then 0.5 and 1 - 0.2271025 = 0.7728975.
    assert normalize_key_weights([1.0, 2.0, 3.0]) == pytest.approx([0.2271025, 0.5, 0.7728975], abs=1e-6)
    # Equal weights: std 0, z 0, sigmoid 0.5 each.
    assert normalize_key_weights([2.0, 2.0]) == pytest.approx([0.5, 0.5])
    assert normalize_key_weights([]).size == 0


def test_fuse_gives_zero_to_the_missing_term() -> None:
    # Key pairs (1,2) w=1, (2,3) w=3 -> z = -1, +1 -> sigmoid 0.2689414, 0.7310586.
    # Semantic pairs (1,2) 0.5, (1,3) 0.9.  alpha = 0.5:
    #   (1,2) = 0.5·0.2689414 + 0.5·0.5 = 0.3844707; (2,3) = 0.5·0.7310586 + 0 = 0.3655293;
    #   (1,3) = 0 + 0.5·0.9 = 0.45.
    fused = fuse([1, 2, 3], ([1, 2], [2, 3], [1.0, 3.0]), ([1, 1], [2, 3], [0.5, 0.9]), alpha=0.5)
    got = fused.as_dict()
    assert set(got) == {(1, 2), (2, 3), (1, 3)}
    assert got[(1, 2)] == pytest.approx((1.0, 0.2689414, 0.5, 0.3844707), abs=1e-6)
    assert got[(2, 3)] == pytest.approx((3.0, 0.7310586, 0.0, 0.3655293), abs=1e-6)
    assert got[(1, 3)] == pytest.approx((0.0, 0.0, 0.9, 0.45), abs=1e-6)
    with pytest.raises(ValueError):
        fuse([1, 2], ([1], [7], [1.0]), ([], [], []), alpha=0.5)


def test_communities_order_largest_first_then_smallest_id() -> None:
    assert communities({5: 0, 1: 1, 2: 1, 9: 2, 3: 2, 7: 3}) == [[1, 2], [3, 9], [5], [7]]


def test_offline_title_and_prompt() -> None:
    from sag_pg.cluster.titles import TopKey

    keys = [TopKey(1, "person", "曹操", 2.2), TopKey(2, "place", "官渡", 2.1), TopKey(3, "person", "袁绍", 1.1),
            TopKey(4, "time", "200年", 1.1)]
    assert offline_title(keys) == "曹操 · 官渡 · 袁绍"
    assert offline_title([], fallback="  an event ") == "an event"
    prompt = render_prompt(["曹操 在 官渡 击败 袁绍", "e2"], keys[:2], size=7)
    assert "(7 in all" in prompt
    assert "- 曹操 在 官渡 击败 袁绍\n- e2" in prompt
    assert "- person: 曹操\n- place: 官渡" in prompt
    assert '{"title": "..."}' in prompt


def test_parse_key_spec() -> None:
    assert parse_key_spec("person:Steve Jobs") == ("person", "Steve Jobs")
    assert parse_key_spec("url:http://x") == ("url", "http://x")
    for bad in ["person", ":x", "person: "]:
        with pytest.raises(InputError):
            parse_key_spec(bad)


# ---------------------------------------------------------------------------------------------------------
# the whole run on the hand-made graph


def test_fused_weights_and_communities_match_the_hand_computation(db_conn: psycopg.Connection) -> None:
    x = build(db_conn)
    result = cluster_events(db_conn, EventSelection(source="one"), ClusterParams(semantic_k=10))
    n = names(x)
    got = {tuple(sorted((n[a], n[b]))): v[3] for (a, b), v in result.pairs.as_dict().items()}
    assert got == {k: pytest.approx(v, abs=1e-6) for k, v in FUSED.items()}
    # The terms behind two of them: e1-e2 = 0.7·sigmoid(z(ln 6)) + 0.3·0.8; e3-e4 = 0.7·sigmoid(z(ln 3)).
    terms = result.pairs.as_dict()
    e12 = terms[(x["e1"], x["e2"])]
    assert e12[:3] == pytest.approx((1.7917595, 0.8334048, 0.8), abs=1e-6)
    e34 = terms[(min(x["e3"], x["e4"]), max(x["e3"], x["e4"]))]
    assert e34[:3] == pytest.approx((LN3, 0.5163956, 0.0), abs=1e-6)

    assert result.event_count == 6 and result.edge_count == 10 and result.max_key_events == 3
    assert result.key_pairs == 8 and result.semantic_pairs == 8
    assert as_names(x, [c.event_ids for c in result.clusters]) == [["e1", "e2", "e3"], ["e4", "e5", "e6"]]
    assert result.modularity == pytest.approx(0.2698266, abs=1e-6)

    # Top keys: Σ IDF over the cluster's events.  {e1,e2,e3}: 曹操 2·ln 3 = 2.1972246, 官渡 3·ln 2 = 2.0794415,
    # 袁绍 (e3) ln 3 and 200年 (e1) ln 3 (tie: smaller key id first); 三国 scores 0 and is left out.
    first, second = result.clusters
    assert [(k.name, k.type) for k in first.top_keys] == [("曹操", "entity"), ("官渡", "entity"),
                                                           ("袁绍", "entity"), ("200年", "time")]
    assert [k.score for k in first.top_keys] == pytest.approx([2 * LN3, 3 * LN2, LN3, LN3], abs=1e-6)
    assert first.title == "曹操 · 官渡 · 袁绍" and first.title_source == "keys"
    assert second.title == "周瑜 · 赤壁 · 袁绍"

    # Stored: the run, its clusters (largest first) and their events.
    run = db_conn.execute("select source_id, event_count, cluster_count, modularity, params "
                          "from sag.cluster_runs where id = %s", [result.run_id]).fetchone()
    assert run is not None
    assert run[:3] == (x["source"], 6, 2) and run[3] == pytest.approx(0.2698266, abs=1e-6)
    assert run[4]["params"]["alpha"] == 0.7 and run[4]["selection"] == {"source": "one"}
    # The default pair budget, 20 × 6 = 120, holds every key (cap = df 3, the largest df worth more than 0).
    assert run[4]["graph"] == {"max_key_events": 3, "key_pairs": 8, "semantic_pairs": 8, "edges": 10}
    rows = db_conn.execute("select c.ordinal, c.title, c.size, c.top_keys->0->>'name', "
                           "array_agg(ce.event_id order by ce.event_id) from sag.clusters c "
                           "join sag.cluster_events ce on ce.cluster_id = c.id where c.run_id = %s "
                           "group by c.id order by c.ordinal", [result.run_id]).fetchall()
    assert rows == [(0, "曹操 · 官渡 · 袁绍", 3, "曹操", [x["e1"], x["e2"], x["e3"]]),
                    (1, "周瑜 · 赤壁 · 袁绍", 3, "周瑜", [x["e4"], x["e5"], x["e6"]])]
    assert [c.id for c in result.clusters] == [r[0] for r in db_conn.execute(
        "select id from sag.clusters where run_id = %s order by ordinal", [result.run_id]).fetchall()]


def test_louvain_is_reproducible(db_conn: psycopg.Connection) -> None:
    build(db_conn)
    runs = [cluster_events(db_conn, EventSelection(source="one"), store=False) for _ in range(3)]
    assert len({tuple(tuple(c.event_ids) for c in r.clusters) for r in runs}) == 1
    assert runs[0].run_id is None
    assert db_conn.execute("select count(*) from sag.cluster_runs").fetchone() == (0,)


def test_threshold_alpha_and_key_types(db_conn: psycopg.Connection) -> None:
    x = build(db_conn)
    sel = EventSelection(source="one")
    # Threshold 0.11 drops the two 0.108 edges (e2-e5, e3-e6).
    assert cluster_events(db_conn, sel, ClusterParams(edge_threshold=0.11), store=False).edge_count == 8
    # alpha = 0: final = similarity alone, so the eight semantic pairs (all > 0.1) and nothing else.
    semantic = cluster_events(db_conn, sel, ClusterParams(alpha=0.0), store=False)
    assert sorted(round(w, 6) for _, _, w in semantic.graph.edges(data="weight")) == \
        [0.28, 0.28, 0.36, 0.36, 0.8, 0.8, 0.8, 0.8]
    # alpha = 1: final = sigmoid(z(w_key)) alone: 0.8334048 (×2), 0.3020027 (×4), 0.5163956 (×2).
    keyed = cluster_events(db_conn, sel, ClusterParams(alpha=1.0), store=False)
    assert sorted(round(w, 6) for _, _, w in keyed.graph.edges(data="weight")) == \
        pytest.approx([0.302003] * 4 + [0.516396] * 2 + [0.833405] * 2, abs=1e-6)
    # Entity keys only: the time key's pair e1-e4 is gone; the groups are unchanged.
    entity = cluster_events(db_conn, sel, ClusterParams(key_types=("entity",)), store=False)
    assert (x["e1"], x["e4"]) not in entity.pairs.as_dict()
    assert entity.key_pairs == 7
    assert as_names(x, [c.event_ids for c in entity.clusters]) == [["e1", "e2", "e3"], ["e4", "e5", "e6"]]
    assert [k.name for k in entity.clusters[0].top_keys] == ["曹操", "官渡", "袁绍"]


def test_pair_budget_sets_the_key_cap(db_conn: psycopg.Connection) -> None:
    x = build(db_conn)
    # 1 pair per event = 6 pairs: the df-2 keys (4 pairs) fit, the df-3 keys (6 more) do not: cap 2, and the
    # key pairs are e1-e2 (曹操), e5-e6 (周瑜), e3-e4 (袁绍), e1-e4 (200年).
    result = cluster_events(db_conn, EventSelection(source="one"), ClusterParams(key_pairs_per_event=1),
                            store=False)
    assert result.max_key_events == 2 and result.key_pairs == 4
    assert sorted(names(x)[a] + names(x)[b] for a, b, w, *_ in zip(*[
        getattr(result.pairs, f) for f in ("a", "b", "w_key")]) if w > 0) == ["e1e2", "e1e4", "e3e4", "e5e6"]
    # An explicit cap wins over the budget.
    fixed = cluster_events(db_conn, EventSelection(source="one"), ClusterParams(max_key_events=6,
                                                                               key_pairs_per_event=0), store=False)
    assert fixed.max_key_events == 6 and fixed.key_pairs == 8


def test_without_idf_every_key_counts_one(db_conn: psycopg.Connection) -> None:
    x = build(db_conn)
    # use_idf = False: 15 key pairs (三国 links all); w = 3 for e1-e2 and e5-e6, 2 for the six pairs sharing one
    # more key, 1 for the other seven.  mean = (2·3 + 6·2 + 7·1)/15 = 25/15 = 1.6666667;
    # variance = (2·(4/3)^2 + 6·(1/3)^2 + 7·(2/3)^2)/15 = (32/9 + 6/9 + 28/9)/15 = (66/9)/15 = 0.4888889,
    # std = 0.6992059.  z(3) = 1.9069252 -> sigmoid 0.8707; e1-e2 = 0.7·0.8707 + 0.3·0.8.
    result = cluster_events(db_conn, EventSelection(source="one"), ClusterParams(use_idf=False), store=False)
    assert result.key_pairs == 15
    e12 = result.pairs.as_dict()[(x["e1"], x["e2"])]
    sig = 1 / (1 + math.exp(-1.9069252))
    assert e12[0] == 3.0 and e12[1] == pytest.approx(sig, abs=1e-6)
    assert e12[3] == pytest.approx(0.7 * sig + 0.24, abs=1e-6)


def test_lonely_events_are_their_own_clusters(db_conn: psycopg.Connection) -> None:
    x = build(db_conn)
    # Source two has one event: one cluster, no edge, modularity undefined; titled by its keys.
    result = cluster_events(db_conn, EventSelection(source="two"))
    assert [c.event_ids for c in result.clusters] == [[x["other"]]]
    assert result.modularity is None and result.edge_count == 0
    # Its keys' IDF is ln(1/1) = 0, so no key scores and the title is the event's label.
    assert result.clusters[0].title == "o1" and result.clusters[0].top_keys == []
    stored = db_conn.execute("select modularity, cluster_count from sag.cluster_runs where id = %s",
                             [result.run_id]).fetchone()
    assert stored == (None, 1)


# ---------------------------------------------------------------------------------------------------------
# selection


def test_selection_criteria(db_conn: psycopg.Connection) -> None:
    x = build(db_conn)
    for name, when in [("e1", "2000-01-01"), ("e2", "2000-06-01"), ("e3", "2001-01-01")]:
        db_conn.execute("update sag.events set event_time = %s where id = %s", [when, x[name]])

    def chosen(sel: EventSelection) -> list[int]:
        return sorted(cluster_events(db_conn, sel, ClusterParams(), store=False).event_ids)

    six = sorted(x[e] for e in ("e1", "e2", "e3", "e4", "e5", "e6"))
    assert chosen(EventSelection(source="one")) == six
    assert chosen(EventSelection()) == sorted(six + [x["other"]])
    assert chosen(EventSelection(documents=("three-kingdoms",))) == six
    with pytest.raises(InputError, match="no events to cluster"):  # the document is in source one
        chosen(EventSelection(source="two", documents=("three-kingdoms",)))
    since, until = datetime(2000, 1, 1, tzinfo=UTC), datetime(2001, 1, 1, tzinfo=UTC)
    assert chosen(EventSelection(since=since, until=until)) == [x["e1"], x["e2"]]
    assert chosen(EventSelection(since=until)) == [x["e3"]]
    # A key: its normalized form matches across sources; with a source only that source's key.
    assert chosen(EventSelection(key=("entity", "曹操"))) == sorted([x["e1"], x["e2"], x["other"]])
    assert chosen(EventSelection(source="one", key=("entity", " 曹操 "))) == [x["e1"], x["e2"]]
    assert chosen(EventSelection(key=("time", "200年"))) == [x["e1"], x["e4"]]
    assert chosen(EventSelection.of_events([x["e5"], x["e4"], x["e5"]])) == [x["e4"], x["e5"]]
    result = cluster_events(db_conn, EventSelection(key=("entity", "曹操")), store=True)
    assert result.source_id is None  # events of two sources


def test_selection_from_search_results(db_conn: psycopg.Connection) -> None:
    x = build(db_conn)

    def hit(*events: str) -> ChunkHit:
        return ChunkHit(chunk_id=1, document_uri="d", document_title="", title="", content="", score=1.0,
                        similarity=0.0, text_score=0.0, key_score=0.0, weight_init=1.0, via_keys=True,
                        via_vector=False, via_text=False, events=[{"id": x[e]} for e in events])

    result = SearchResult(query="q", chunks=[hit("e4", "e5"), hit("e5", "e6")], keys=[], timings_ms={})
    selection = EventSelection.from_search(result)
    assert selection.event_ids == (x["e4"], x["e5"], x["e6"])
    clustered = cluster_events(db_conn, selection, store=False)
    assert [sorted(c.event_ids) for c in clustered.clusters] == [[x["e4"], x["e5"], x["e6"]]]


def test_selection_errors(db_conn: psycopg.Connection) -> None:
    build(db_conn)
    with pytest.raises(InputError, match="no source named 'nowhere'"):
        cluster_events(db_conn, EventSelection(source="nowhere"))
    with pytest.raises(InputError, match="no events to cluster"):
        cluster_events(db_conn, EventSelection(source="one", key=("entity", "刘备")))
    with pytest.raises(InputError, match="alpha"):
        cluster_events(db_conn, EventSelection(), ClusterParams(alpha=1.5))
    with pytest.raises(InputError, match="key_types"):
        cluster_events(db_conn, EventSelection(), ClusterParams(key_types=()))


# ---------------------------------------------------------------------------------------------------------
# LLM titles (a real HTTP server speaking the OpenAI protocol)


def test_llm_titles_with_a_fallback(db_conn: psycopg.Connection, openai_server: FakeOpenAIServer) -> None:
    build(db_conn)

    def responder(request: dict[str, Any]) -> str | Scripted:
        prompt = request["messages"][-1]["content"]
        if "entity: 曹操" in prompt:
            return json.dumps({"title": " 官渡之战。"})
        return Scripted(status=400, body={"error": {"message": "no", "type": "invalid_request_error"}})

    openai_server.responder = responder
    llm = OpenAILLM("test-model", base_url=openai_server.base_url, api_key="k", max_retries=0)
    try:
        result = cluster_events(db_conn, EventSelection(source="one"), llm=llm)
    finally:
        llm.close()
    first, second = result.clusters
    assert (first.title, first.title_source) == ("官渡之战", "llm")
    # The second request failed: the top-keys title stays.
    assert (second.title, second.title_source) == ("周瑜 · 赤壁 · 袁绍", "keys")
    prompts = openai_server.prompts()
    assert len(prompts) == 2
    # The most connected events first: e1 (0.8233834 + 0.4514019 + 0.3614769) before e2 and e3.
    assert "(3 in all; the most connected ones, one per line):\n- e1\n- e2\n- e3\n" in prompts[0]
    assert "- entity: 曹操\n- entity: 官渡\n- entity: 袁绍\n- time: 200年" in prompts[0]
    stored = db_conn.execute("select title from sag.clusters where run_id = %s order by ordinal",
                             [result.run_id]).fetchall()
    assert stored == [("官渡之战",), ("周瑜 · 赤壁 · 袁绍",)]


# ---------------------------------------------------------------------------------------------------------
# export


def test_graphml_round_trip(db_conn: psycopg.Connection, tmp_path: Path) -> None:
    x = build(db_conn)
    result = cluster_events(db_conn, EventSelection(source="one"))
    path = write_graphml(result, tmp_path / "g.graphml")
    graph = nx.read_graphml(path)
    assert graph.number_of_nodes() == 6 and graph.number_of_edges() == 10
    node = graph.nodes[str(x["e1"])]
    assert node["cluster"] == 0 and node["cluster_title"] == "曹操 · 官渡 · 袁绍" and node["label"] == "e1"
    edge = graph.edges[str(x["e1"]), str(x["e2"])]
    assert edge["weight"] == pytest.approx(0.8233834, abs=1e-6)
    assert edge["w_key"] == pytest.approx(1.7917595, abs=1e-6) and edge["sim"] == pytest.approx(0.8, abs=1e-6)
    assert graph.graph["modularity"] == pytest.approx(0.2698266, abs=1e-6)
    assert graph.graph["run_id"] == result.run_id


def test_png_needs_matplotlib(db_conn: psycopg.Connection, tmp_path: Path) -> None:
    build(db_conn)
    result = cluster_events(db_conn, EventSelection(source="one"), store=False)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        with pytest.raises(ConfigError, match=r"pip install 'sag-pg\[plot\]'"):
            write_png(result, tmp_path / "g.png")
        return
    path = write_png(result, tmp_path / "g.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ---------------------------------------------------------------------------------------------------------
# CLI


@pytest.fixture
def committed(db_dsn: str) -> dict[str, int]:
    with psycopg.connect(db_dsn) as conn:
        x = build(conn)
        conn.commit()
    return x


def invoke(db_dsn: str, tmp_path: Path, args: list[str]):  # type: ignore[no-untyped-def]
    app = AppContext(settings=Settings(database_url=db_dsn, home=tmp_path / "home"))
    return CliRunner().invoke(cluster_command, args, obj=app)


def test_cli_json_and_graphml(committed: dict[str, int], db_dsn: str, tmp_path: Path) -> None:
    x = committed
    out = tmp_path / "run.graphml"
    result = invoke(db_dsn, tmp_path, ["--source", "one", "--json", "--graphml", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["event_count"] == 6 and data["cluster_count"] == 2 and data["edges"] == 10
    assert data["max_key_events"] == 3
    assert data["modularity"] == pytest.approx(0.2698266, abs=1e-6)
    assert [c["title"] for c in data["clusters"]] == ["曹操 · 官渡 · 袁绍", "周瑜 · 赤壁 · 袁绍"]
    assert data["clusters"][0]["event_ids"] == [x["e1"], x["e2"], x["e3"]]
    assert data["clusters"][0]["top_keys"][0] == {"id": x["k:曹操"], "type": "entity", "name": "曹操",
                                                  "score": pytest.approx(2 * LN3, abs=1e-6)}
    assert data["params"]["alpha"] == 0.7 and data["selection"] == {"source": "one"}
    assert nx.read_graphml(out).number_of_edges() == 10
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute("select count(*) from sag.cluster_runs").fetchone() == (1,)


def test_cli_text_output_and_options(committed: dict[str, int], db_dsn: str, tmp_path: Path) -> None:
    result = invoke(db_dsn, tmp_path, ["--source", "one", "--alpha", "0.7", "--threshold", "0.11", "--no-idf",
                                       "--key-types", "entity,time", "--semantic-k", "3", "--limit", "1"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("run ") and "6 events, 15 edges → 2 clusters" in lines[0]
    # Without IDF a key scores its count in the cluster: 官渡 3, 三国 3 (tie: smaller key id), 曹操 2.
    assert lines[1:] == ["   #  events  title", "   0       3  官渡 · 三国 · 曹操", "      … 1 more clusters (3 events)"]
    time_only = invoke(db_dsn, tmp_path, ["--key", "time:200年", "--events", f"{committed['e1']},{committed['e4']}",
                                          "--json"])
    assert time_only.exit_code == 0, time_only.output
    assert json.loads(time_only.output)["event_count"] == 2


def test_cli_png_without_matplotlib_fails_before_clustering(committed: dict[str, int], db_dsn: str,
                                                           tmp_path: Path) -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        result = invoke(db_dsn, tmp_path, ["--source", "one", "--png", str(tmp_path / "g.png")])
        assert isinstance(result.exception, ConfigError)
        assert "pip install 'sag-pg[plot]'" in str(result.exception)
        with psycopg.connect(db_dsn) as conn:
            assert conn.execute("select count(*) from sag.cluster_runs").fetchone() == (0,)
    else:
        result = invoke(db_dsn, tmp_path, ["--source", "one", "--png", str(tmp_path / "g.png")])
        assert result.exit_code == 0, result.output
        assert (tmp_path / "g.png").read_bytes()[:4] == b"\x89PNG"


def test_cli_errors_are_one_line(committed: dict[str, int], db_dsn: str, tmp_path: Path) -> None:
    result = invoke(db_dsn, tmp_path, ["--source", "nowhere"])
    assert result.exit_code != 0
    assert isinstance(result.exception, InputError)
    bad = invoke(db_dsn, tmp_path, ["--key", "nocolon"])
    assert isinstance(bad.exception, InputError)
    assert invoke(db_dsn, tmp_path, ["--alpha", "2"]).exit_code == 2  # click's range check
    assert "Example:" in invoke(db_dsn, tmp_path, ["--help"]).output


# ---------------------------------------------------------------------------------------------------------
# end to end on ingested documents


def test_ingested_demo_corpus_clusters(sag: Any) -> None:  # the `sag` fixture: offline defaults
    docs = Path(__file__).resolve().parent.parent / "sag_pg" / "demo" / "docs" / "three-kingdoms"
    report = sag.ingest_files([docs], source="3k")
    assert report.failed == 0
    result = cluster_events(sag.db, EventSelection(source="3k"))
    with psycopg.connect(sag.dsn) as conn:
        events = conn.execute("select count(*) from sag.events e join sag.sources s on s.id = e.source_id "
                              "where s.name = '3k'").fetchone()
        stored = conn.execute("select count(*), count(distinct ce.event_id) from sag.cluster_events ce "
                              "join sag.clusters c on c.id = ce.cluster_id where c.run_id = %s",
                              [result.run_id]).fetchone()
    assert events is not None and stored is not None
    assert result.event_count == events[0] == stored[0] == stored[1]  # each event in exactly one cluster
    assert sum(c.size for c in result.clusters) == result.event_count
    assert result.modularity is not None and result.modularity > 0.2
    big = [c for c in result.clusters if c.size > 1]
    assert big and all(c.title and c.top_keys for c in big)
    assert np.all(np.diff([c.size for c in result.clusters]) <= 0)

    # The CLI on the events of a search's results.
    app = AppContext(settings=sag.settings)
    cli = CliRunner().invoke(cluster_command, ["--query", "官渡之战", "--source", "3k", "--top-n", "5", "--json"],
                             obj=app)
    assert cli.exit_code == 0, cli.output
    data = json.loads(cli.output)
    found = sag.search("官渡之战", source="3k", top_n=5)
    assert data["event_count"] == len({e["id"] for c in found.chunks for e in c.events})
    assert 0 < data["event_count"] < result.event_count


def test_client_cluster_groups_the_demo_battles(sag) -> None:  # type: ignore[no-untyped-def]
    from sag_pg.cluster import EventSelection
    from sag_pg.demo import demo_paths

    sag.ingest_files([p for p in demo_paths() if "three-kingdoms" in str(p)])
    result = sag.cluster(EventSelection(source="default"))
    assert result.clusters and sum(len(c.event_ids) for c in result.clusters) == result.event_count
