"""sag_pg.search.retrieve: multi-hop through a bridge key, source isolation, ordering, the result shape."""

from __future__ import annotations

import numpy as np
import psycopg
import pytest
from psycopg.adapt import PyFormat

from sag_pg.errors import QueryError
from sag_pg.search import RetrievalParams, SearchResult, retrieve
from sag_pg.text.normalize import normalize_key
from tests.sql.graph_builder import GraphBuilder

Q = np.array([1.0, 0.0, 0.0], dtype=np.float32)
# The film chunk holds a third of the question (zorblax); the rest is elsewhere, so the key evidence counts
# fully (sag.question_coverage).
TOKENS = ["where", "did", "zorblax", "director", "grow", "up"]
QUESTION = "where did zorblax director grow up"  # lower case: names no key


def bridge_graph(g: GraphBuilder, source: str) -> dict[str, int]:
    """The answer chunk shares no word and no direction with the question; only the key
    "Quentin Vance" leads to it, through the chunk about the film.  The other chunks are near the
    question's direction, but only the film and the toys share a word with it."""
    s = g.source(source)
    doc = g.document(s, f"{source}/films.md", title="Films")
    film = g.chunk(doc, "Zorblax is a 1999 film directed by Quentin Vance.", (1, 0, 0))
    answer = g.chunk(doc, "Born in Oslo, the filmmaker later moved to Paris.", (0, 0, 1))      # similarity 0
    toys = g.chunk(doc, "Zorblax toys were popular.", (4, 3, 0))                              # 0.8
    knows = g.chunk(doc, "Nobody knows.", (1, 1, 0))                                          # 0.71
    energy = g.chunk(doc, "Energy weapons.", (3, 4, 0))                                       # 0.6
    zorblax = g.key(s, "Zorblax", (1, 0, 0))
    vance = g.key(s, "Quentin Vance", (0, 0, 1))
    oslo = g.key(s, "Oslo", (0, 1, 0))
    toy = g.key(s, "toy", (0, 1, 0))
    g.links(g.event(film, "Zorblax was directed by Quentin Vance", (1, 0, 0)), zorblax, vance)
    e = g.event(answer, "Quentin Vance was born in Oslo; Vance moved to Paris", (0, 0, 1))
    g.link(e, vance, 2)
    g.link(e, oslo)
    g.links(g.event(toys, "Zorblax toys sold well", (4, 3, 0)), zorblax, toy)
    g.event(knows, "nobody knows", (1, 1, 0))
    g.event(energy, "energy weapons", (3, 4, 0))
    return {"source": s, "film": film, "answer": answer, "toys": toys, "vance": vance, "zorblax": zorblax}


@pytest.fixture
def two_sources(db_conn: psycopg.Connection) -> tuple[dict[str, int], dict[str, int]]:
    g = GraphBuilder(db_conn)
    return bridge_graph(g, "one"), bridge_graph(g, "two")


def ids(result: SearchResult) -> list[int]:
    return [c.chunk_id for c in result.chunks]


def test_bridge_key_reaches_what_bm25_and_dense_miss(
        db_conn: psycopg.Connection, two_sources: tuple[dict[str, int], dict[str, int]]) -> None:
    one, _ = two_sources
    src = [one["source"]]
    dense = db_conn.execute("select chunk_id from sag.dense_chunks(%s, %s, 3)", [Q, src]).fetchall()
    sparse = db_conn.execute("select chunk_id from sag.bm25_chunks(%s, %s, 3)", [TOKENS, src]).fetchall()
    assert one["answer"] not in {r[0] for r in dense}
    assert one["answer"] not in {r[0] for r in sparse}
    # Even the full lists never see it: no shared word, similarity 0 (ranked last by dense).
    assert one["answer"] not in {r[0] for r in db_conn.execute(
        "select chunk_id from sag.bm25_chunks(%s, %s)", [TOKENS, src]).fetchall()}

    # The lexical share of s fixed (by default it is the question's coverage): this graph is about the hop.
    lexical = RetrievalParams(text_weight=0.85)
    for use_pagerank in (True, False):
        result = retrieve(db_conn, QUESTION, Q, query_tokens=TOKENS, source_ids=src, top_n=3, use_pagerank=use_pagerank,
                          params=lexical)
        assert one["answer"] in ids(result), use_pagerank
        hit = next(c for c in result.chunks if c.chunk_id == one["answer"])
        assert hit.via_keys and not hit.via_text and hit.similarity == pytest.approx(0.0)
    # The bridge key was activated (stage 1, from the film's event).
    vance = next(k for k in result.keys if k.key_id == one["vance"])
    assert (vance.name, vance.type, vance.value, vance.step) == ("Quentin Vance", "entity", "Quentin Vance", 1)


def test_explicit_seed_keys(db_conn: psycopg.Connection, two_sources: tuple[dict[str, int], dict[str, int]]) -> None:
    one, _ = two_sources
    result = retrieve(db_conn, QUESTION, Q, query_tokens=TOKENS, source_ids=[one["source"]], seed_keys=[(one["vance"], 1.0)], top_n=5)
    assert one["answer"] in ids(result)


def test_sources_never_cross(db_conn: psycopg.Connection, two_sources: tuple[dict[str, int], dict[str, int]]) -> None:
    one, two = two_sources
    chunks_of = {
        sid: {r[0] for r in db_conn.execute("select id from sag.chunks where source_id = %s", [sid]).fetchall()}
        for sid in (one["source"], two["source"])
    }
    keys_of = {
        sid: {r[0] for r in db_conn.execute("select id from sag.keys where source_id = %s", [sid]).fetchall()}
        for sid in (one["source"], two["source"])
    }
    for sid in (one["source"], two["source"]):
        # Seeds from the other source are ignored too.
        seeds = [(one["zorblax"], 1.0), (two["zorblax"], 1.0)]
        for seed_keys in (None, seeds):
            result = retrieve(db_conn, QUESTION, Q, query_tokens=TOKENS, source_ids=[sid], seed_keys=seed_keys, top_n=10)
            assert result.chunks and set(ids(result)) <= chunks_of[sid]
            assert {k.key_id for k in result.keys} <= keys_of[sid]
            for chunk in result.chunks:
                assert {k["id"] for k in chunk.keys} <= keys_of[sid]
    both = retrieve(db_conn, QUESTION, Q, query_tokens=TOKENS, source_ids=None, top_n=10)
    assert set(ids(both)) & chunks_of[one["source"]] and set(ids(both)) & chunks_of[two["source"]]


def test_results_are_ordered_by_score(db_conn: psycopg.Connection,
                                      two_sources: tuple[dict[str, int], dict[str, int]]) -> None:
    for use_pagerank in (True, False):
        result = retrieve(db_conn, QUESTION, Q, query_tokens=TOKENS, source_ids=None, top_n=10, use_pagerank=use_pagerank)
        scores = [c.score for c in result.chunks]
        assert len(scores) == 10 and scores == sorted(scores, reverse=True)
        if not use_pagerank:
            # The final order spreads over documents: a document's n-th chunk counts weight_init / n.
            seen: dict[str, int] = {}
            expected = []
            for c in result.chunks:
                seen[c.document_uri] = seen.get(c.document_uri, 0) + 1
                expected.append(c.weight_init / seen[c.document_uri])
            assert scores == pytest.approx(expected, abs=1e-12)
            assert max(seen.values()) > 1  # the spread was exercised


def test_result_shape(db_conn: psycopg.Connection, two_sources: tuple[dict[str, int], dict[str, int]]) -> None:
    one, _ = two_sources
    result = retrieve(db_conn, "Who directed Zorblax?", Q, query_tokens=TOKENS, source_ids=[one["source"]], top_n=2)
    d = result.to_dict()
    assert set(d) == {"query", "chunks", "keys", "terms", "named_keys", "timings_ms"}
    assert len(d["chunks"]) == 2
    first = next(r for r in d["chunks"] if r["chunk_id"] == one["film"])
    assert set(first) == {"document_uri", "document_title", "chunk_id", "title", "content", "score", "events", "keys",
                          "explain"}
    assert first["document_uri"] == "one/films.md" and (first["title"], first["document_title"]) == ("", "Films")
    assert first["content"] == "Zorblax is a 1999 film directed by Quentin Vance."
    assert [e["content"] for e in first["events"]] == ["Zorblax was directed by Quentin Vance"]
    assert {k["name"] for k in first["keys"]} == {"Zorblax", "Quentin Vance"}
    assert all(k["weight"] is not None and k["step"] == 1 for k in first["keys"])
    # Every hop's activation is a distribution (key-final keeps each key's largest weight); Zorblax is the
    # heaviest key.
    assert d["keys"][0]["name"] == "Zorblax"
    assert all(0 < k["weight"] <= 1 for k in d["keys"])
    assert set(first["explain"]) == {"similarity", "text_score", "key_score", "weight_init",
                                      "via_keys", "via_vector", "via_text", "direct_match"}
    # One direct match without a calibrated embedder (r = 1): the film's passage, which holds the question's words.
    assert [c["explain"]["direct_match"] for c in d["chunks"]] == [c["chunk_id"] == one["film"] for c in d["chunks"]]
    assert set(d["timings_ms"]) == {"retrieve", "sql_question", "sql_query_chunks", "sql_activate_keys",
                                    "sql_expand_keys", "sql_coverage", "sql_rank_chunks", "sql_edges",
                                    "sql_sql_total", "pagerank", "fetch", "total"}
    assert d["terms"] == TOKENS
    assert result.query == "Who directed Zorblax?"


def test_bad_parameters(db_conn: psycopg.Connection, two_sources: tuple[dict[str, int], dict[str, int]]) -> None:
    with pytest.raises(QueryError, match="threshold"):
        retrieve(db_conn, QUESTION, Q, query_tokens=TOKENS, source_ids=None, params=RetrievalParams(threshold=2.0))
    with pytest.raises(QueryError, match="top_n"):
        retrieve(db_conn, QUESTION, Q, query_tokens=TOKENS, source_ids=None, top_n=0)
    with pytest.raises(QueryError, match="named_key_floor"):
        retrieve(db_conn, QUESTION, Q, query_tokens=TOKENS, source_ids=None, params=RetrievalParams(named_key_floor=1.5))
    # Out of PostgreSQL's integer range, or a damping PageRank cannot use: named, not an UndefinedFunction or
    # a bare ValueError.
    with pytest.raises(QueryError, match="key_top_n must be at most"):
        retrieve(db_conn, QUESTION, Q, query_tokens=TOKENS, source_ids=None, params=RetrievalParams(key_top_n=2**31))
    with pytest.raises(QueryError, match="pagerank_alpha"):
        retrieve(db_conn, QUESTION, Q, query_tokens=TOKENS, source_ids=None, params=RetrievalParams(pagerank_alpha=5))
    with pytest.raises(QueryError, match="1-D"):
        retrieve(db_conn, QUESTION, np.zeros((2, 3)), query_tokens=TOKENS, source_ids=None)
    # The connection is still usable: the failed statement was rolled back to a savepoint.
    assert retrieve(db_conn, QUESTION, Q, query_tokens=TOKENS, source_ids=None, top_n=1).chunks


def test_allowed_narrows_the_search(db_conn: psycopg.Connection,
                                    two_sources: tuple[dict[str, int], dict[str, int]]) -> None:
    one, _ = two_sources
    src = [one["source"]]
    everything = retrieve(db_conn, QUESTION, Q, query_tokens=TOKENS, source_ids=src, top_n=5)
    assert one["answer"] in ids(everything) and one["toys"] in ids(everything)
    events_of = {c: [e for (e,) in db_conn.execute("select id from sag.events where chunk_id = %s", [c]).fetchall()]
                 for c in (one["film"], one["answer"], one["toys"])}

    # Only the film and the answer allowed: nothing else is returned.
    allowed_chunks = [one["film"], one["answer"]]
    allowed_events = events_of[one["film"]] + events_of[one["answer"]]
    result = retrieve(db_conn, QUESTION, Q, query_tokens=TOKENS, source_ids=src, top_n=5, allowed=(allowed_events, allowed_chunks))
    assert ids(result) == [one["film"], one["answer"]]

    # The film's event not allowed: the bridge key Quentin Vance can no longer be activated from it (the
    # answer's own event, orthogonal to the query, carries no weight), so the answer comes only if its chunk
    # is allowed -- and then only through the vector list, with no key score.
    result = retrieve(db_conn, QUESTION, Q, query_tokens=TOKENS, source_ids=src, top_n=5,
                      allowed=(events_of[one["answer"]] + events_of[one["toys"]], allowed_chunks + [one["toys"]]))
    hit = next(c for c in result.chunks if c.chunk_id == one["answer"])
    assert hit.key_score == 0 and not hit.via_keys
    assert one["vance"] not in {k.key_id for k in result.keys}

    # Nothing allowed: no result.  Duplicated ids (one chunk per event, as allowed_events gives them) are fine.
    assert retrieve(db_conn, QUESTION, Q, query_tokens=TOKENS, source_ids=src, allowed=([], [])).chunks == []
    twice = retrieve(db_conn, QUESTION, Q, query_tokens=TOKENS, source_ids=src, top_n=5,
                     allowed=(allowed_events * 2, allowed_chunks * 2))
    assert ids(twice) == [one["film"], one["answer"]]


def test_binary_vector_parameters(db_dsn: str, db_conn: psycopg.Connection,
                                  two_sources: tuple[dict[str, int], dict[str, int]]) -> None:
    """The query vector goes as a binary parameter; a connection without pgvector's adapters gets them."""
    one, _ = two_sources
    db_conn.commit()   # the graph (and bind_embedder's locks) must be visible to the other connection
    with psycopg.connect(db_dsn) as plain:   # no register_vector
        result = retrieve(plain, QUESTION, Q, query_tokens=TOKENS, source_ids=[one["source"]], top_n=3)
        assert one["answer"] in ids(result)
        plain.adapters.get_dumper(np.ndarray, PyFormat.BINARY)   # registered by retrieve
        # A list works as well as a numpy array.
        assert ids(retrieve(plain, QUESTION, [1.0, 0.0, 0.0], query_tokens=TOKENS, source_ids=[one["source"]], top_n=3)) == ids(result)


def test_empty_database(db_conn: psycopg.Connection) -> None:
    GraphBuilder(db_conn)
    result = retrieve(db_conn, QUESTION, Q, query_tokens=TOKENS, source_ids=None)
    assert result.chunks == [] and result.keys == []


def _normalize_keys(conn: psycopg.Connection) -> None:
    """GraphBuilder stores lower-cased names; ingestion stores normalize_key (no spaces)."""
    for key_id, name in conn.execute("select id, name from sag.keys").fetchall():
        conn.execute("update sag.keys set normalized = %s where id = %s", [normalize_key(name), key_id])


def test_keys_named_in_the_question_seed_and_keep_a_floor(
        db_conn: psycopg.Connection, two_sources: tuple[dict[str, int], dict[str, int]]) -> None:
    """Quentin Vance is orthogonal to the query vector (no seed by similarity) and activated only through the
    film's event; written in the question, it becomes a seed and weighs as much as the strongest key of
    key-final."""
    one, _ = two_sources
    _normalize_keys(db_conn)
    src = [one["source"]]
    question = "Who was Quentin Vance?"

    def vance_weight(params: RetrievalParams, query: str = question) -> tuple[float, float]:
        result = retrieve(db_conn, query, Q, query_tokens=TOKENS, source_ids=src, top_n=5, params=params)
        weights = {k.key_id: k.weight for k in result.keys}
        return weights[one["vance"]], max(weights.values())

    plain, plain_top = vance_weight(RetrievalParams(use_names=False))
    assert plain < plain_top                      # without names: Zorblax leads
    assert vance_weight(RetrievalParams(), query=QUESTION) == (plain, plain_top)   # no name in the question
    seeded, _ = vance_weight(RetrievalParams(named_key_floor=0))
    # As a seed it adds weight to the film's event (the answer's event is orthogonal to the query): never less.
    assert seeded >= plain
    floored, floored_top = vance_weight(RetrievalParams())
    assert floored == pytest.approx(floored_top)  # named_key_floor 1: as heavy as the strongest key
    half, half_top = vance_weight(RetrievalParams(named_key_floor=0.5))
    assert half == pytest.approx(max(seeded, 0.5 * half_top))
    # Explicit seed keys replace the query's own key matching, names included.
    explicit = retrieve(db_conn, question, Q, query_tokens=TOKENS, source_ids=src, seed_keys=[(one["zorblax"], 1.0)])
    assert explicit.named_keys == []


def test_a_named_hub_is_still_a_seed(db_conn: psycopg.Connection,
                                     two_sources: tuple[dict[str, int], dict[str, int]]) -> None:
    """Zorblax has two events: with max_key_events 1 it is a hub.  Named in the question it is still one of the
    question's named keys, the seeds of stage 1 (counted in the question's own events only)."""
    one, _ = two_sources
    _normalize_keys(db_conn)
    src = [one["source"]]
    toy = db_conn.execute("select id from sag.keys where name = 'toy' and source_id = %s", src).fetchone()[0]
    hubs = RetrievalParams(max_key_events=1, text_weight=0.85, feedback_chunks=0)
    named = retrieve(db_conn, "Who made Zorblax toys", Q, query_tokens=["zorblax", "toys"], source_ids=src,
                     params=hubs)
    assert named.named_keys == [one["zorblax"]]
    unnamed = retrieve(db_conn, "who made zorblax toys", Q, query_tokens=["zorblax", "toys"], source_ids=src,
                       params=hubs)
    assert unnamed.named_keys == []
    assert toy in {k.key_id for k in named.keys}
