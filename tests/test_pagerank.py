"""Personalized PageRank over the key–chunk graph (sag_pg.search.pagerank)."""

from __future__ import annotations

import random

import networkx as nx
import pytest

from sag_pg.search.pagerank import rank


def test_one_chunk_one_key_by_hand() -> None:
    # p = (chunk 1, key 0); x_c = alpha * x_k + (1 - alpha), x_k = alpha * x_c
    # => x_c = (1 - alpha) / (1 - alpha^2) = 1 / (1 + alpha) = 1 / 1.85 = 0.540541
    assert rank({1: 1.0}, {10: 0.0}, [(1, 10, 1)]) == {1: pytest.approx(1 / 1.85, abs=1e-6)}
    # retrieve's damping 0.3: 1 / 1.3 = 0.769231 (most of the score stays with the chunk's own weight)
    assert rank({1: 1.0}, {10: 0.0}, [(1, 10, 1)], alpha=0.3) == {1: pytest.approx(1 / 1.3, abs=1e-6)}


def test_two_chunks_sharing_a_key_by_hand() -> None:
    # Chunks 1 (p = 3/4) and 2 (p = 1/4) share key 10 (p = 0), one edge each; alpha = 0.5.
    # The key passes on half its score to each chunk, and each chunk all of its score to the key:
    #   x_k = 0.5 * (x_1 + x_2) = 0.5 * (1 - x_k)  =>  x_k = 1/3
    #   x_1 = 0.5 * x_k / 2 + 0.5 * 3/4 = 1/12 + 3/8 = 11/24;  x_2 = 1/12 + 1/8 = 5/24   (sum with x_k: 1)
    scores = rank({1: 3.0, 2: 1.0}, {10: 0.0}, [(1, 10, 1), (2, 10, 1)], alpha=0.5, tol=1e-12, max_iter=200)
    assert scores == {1: pytest.approx(11 / 24, abs=1e-9), 2: pytest.approx(5 / 24, abs=1e-9)}


def test_isolated_chunks_keep_their_personalization() -> None:
    # Every node dangles: x = alpha * (sum x) * p + (1 - alpha) * p = p, with p = (1, 2) / 3.
    assert rank({1: 1.0, 2: 2.0}, {}, []) == {1: pytest.approx(1 / 3), 2: pytest.approx(2 / 3)}
    # Next to a connected part, two isolated chunks keep the ratio of their personalizations.
    scores = rank({1: 1.0, 2: 2.0, 3: 1.0}, {10: 1.0}, [(3, 10, 2)])
    assert scores[2] == pytest.approx(2 * scores[1])


def test_symmetric_graph_gives_equal_scores() -> None:
    scores = rank({1: 0.7, 2: 0.7}, {10: 0.5, 11: 0.5}, [(1, 10, 2), (2, 11, 2), (1, 11, 1), (2, 10, 1)])
    assert scores[1] == pytest.approx(scores[2])


def test_chunk_sharing_a_heavy_key_beats_an_isolated_one() -> None:
    # Same weight_init; chunk 1 shares key 10 (weight 1) with chunk 3.
    scores = rank({1: 0.5, 2: 0.5, 3: 0.5}, {10: 1.0}, [(1, 10, 3), (3, 10, 1)])
    assert scores[1] > scores[2]
    assert scores[1] > scores[3]   # more occurrences of the key: a heavier edge


def test_ignores_unknown_nodes_and_bad_counts() -> None:
    base = rank({1: 1.0}, {10: 0.0}, [(1, 10, 1)])
    assert rank({1: 1.0}, {10: 0.0}, [(1, 10, 1), (2, 10, 5), (1, 99, 5), (1, 10, 0)]) == base


def test_degenerate_inputs() -> None:
    assert rank({}, {10: 1.0}, []) == {}
    # All personalization zero: uniform restart.
    assert rank({1: 0.0, 2: 0.0}, {}, []) == {1: pytest.approx(0.5), 2: pytest.approx(0.5)}
    with pytest.raises(ValueError):
        rank({1: 1.0}, {}, [], alpha=1.0)


def test_agrees_with_networkx() -> None:
    """Same numbers as networkx's PageRank (its pure-Python version: networkx.pagerank needs scipy)."""
    reference = getattr(nx.algorithms.link_analysis.pagerank_alg, "_pagerank_python", None)
    if reference is None:  # pragma: no cover - depends on the networkx version
        reference = nx.pagerank
    rnd = random.Random(3)
    chunks = {c: rnd.random() for c in range(1, 41)}
    keys = {100 + k: rnd.random() for k in range(15)}
    edges = list({(rnd.randint(1, 35), rnd.randint(100, 114)): rnd.randint(1, 4) for _ in range(80)}.items())
    edge_list = [(c, k, n) for (c, k), n in edges]
    graph = nx.Graph()
    graph.add_nodes_from(("c", c) for c in chunks)
    graph.add_nodes_from(("k", k) for k in keys)
    graph.add_weighted_edges_from((("c", c), ("k", k), n) for c, k, n in edge_list)
    personalization = {("c", c): w for c, w in chunks.items()} | {("k", k): w for k, w in keys.items()}
    expected = reference(graph, alpha=0.85, personalization=personalization, tol=1e-12, max_iter=1000)
    got = rank(chunks, keys, edge_list, alpha=0.85, tol=1e-12, max_iter=1000)
    assert got == {c: pytest.approx(expected[("c", c)], abs=1e-9) for c in chunks}
