"""Personalized PageRank over the key–chunk graph: the last step of SAG retrieval (sag-algorithm §2.4 step 5).

The graph is bipartite and undirected: a chunk (a candidate of stage 3) and a key (of key-final) are joined
when the key occurs in the chunk's events, the edge weight being that count.  The random walk restarts at a
node with probability proportional to its personalization: a chunk's ``weight_init``, a key's
``weight / step``.  Chunks without edges keep a score proportional to their personalization.

``retrieve`` orders the chunks by this score with ``alpha = 0.3`` (``RetrievalParams.pagerank_alpha``): a
chunk's score is then 70 % its own share of the personalization and 30 % what flows to it through the
shared keys, i.e. PageRank mixed with ``weight_init``.  At the usual 0.85 the walk follows the graph: chunks
with many activated keys win whatever their own relevance, which cost 4-5 points of Recall@2 on HotpotQA
(docs/retrieval.md).

This is exactly ``networkx.pagerank(G, alpha, personalization=p, weight="weight")`` (dangling nodes jump
back following the personalization), computed by power iteration in numpy: networkx's own implementation
needs scipy, which sag-pg does not depend on.  ``tests/test_pagerank.py`` checks the two agree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

__all__ = ["rank"]


def rank(
    chunks: Mapping[int, float],
    keys: Mapping[int, float],
    edges: Sequence[tuple[int, int, int]],
    alpha: float = 0.85,
    *,
    max_iter: int = 100,
    tol: float = 1.0e-6,
) -> dict[int, float]:
    """PageRank scores of ``chunks`` (chunk id -> weight_init) on the graph of ``edges``.

    ``keys`` maps key id -> personalization (``weight / step``); ``edges`` are ``(chunk_id, key_id, count)``.
    Edges to unknown chunks or keys and non-positive counts are ignored; negative personalization counts
    as 0.  The result maps every chunk id to its score; the scores of all nodes (chunks and keys) sum to 1.
    """
    if not 0.0 <= alpha < 1.0:
        raise ValueError(f"alpha must be in [0, 1), got {alpha}")
    chunk_ids = list(chunks)
    if not chunk_ids:
        return {}
    key_ids = list(keys)
    n_chunks = len(chunk_ids)
    n = n_chunks + len(key_ids)
    index = {("c", c): i for i, c in enumerate(chunk_ids)}
    index.update({("k", k): n_chunks + i for i, k in enumerate(key_ids)})

    p = np.maximum(np.fromiter((*chunks.values(), *keys.values()), dtype=np.float64, count=n), 0.0)
    total = p.sum()
    # All personalization zero: restart uniformly (what networkx does without personalization).
    p = p / total if total > 0 else np.full(n, 1.0 / n)

    src: list[int] = []
    dst: list[int] = []
    weight: list[float] = []
    for chunk_id, key_id, count in edges:
        ci = index.get(("c", chunk_id))
        ki = index.get(("k", key_id))
        if ci is None or ki is None or count <= 0:
            continue
        # Undirected: one edge each way.
        src += (ci, ki)
        dst += (ki, ci)
        weight += (float(count), float(count))
    s = np.asarray(src, dtype=np.int64)
    d = np.asarray(dst, dtype=np.int64)
    w = np.asarray(weight, dtype=np.float64)
    out = np.bincount(s, weights=w, minlength=n)
    dangling = out == 0
    trans = w / out[s] if len(w) else w  # row-stochastic transition weights

    x = p.copy()
    for _ in range(max_iter):
        spread = np.bincount(d, weights=x[s] * trans, minlength=n)
        x_new = alpha * (spread + x[dangling].sum() * p) + (1.0 - alpha) * p
        err = np.abs(x_new - x).sum()
        x = x_new
        if err < n * tol:
            break
    return {c: float(x[i]) for i, c in enumerate(chunk_ids)}
