"""The clustering graph (sag-algorithm §4.2–4.3): normalize, fuse, threshold, Louvain.

Input: the candidate pairs built in SQL (``sag.cluster_key_pairs``: w_key; ``sag.cluster_semantic_pairs``:
cosine similarity), as numpy arrays.  For each pair (i, j)::

    key(i, j)   = sigmoid((w_key(i, j) - mean(w_key)) / std(w_key))      mean, std over all key pairs
    final(i, j) = alpha * key(i, j) + (1 - alpha) * sim(i, j)

and the graph keeps the pairs with ``final > edge_threshold``.  Choices (see docs in the SQL file too):

* The z-score is taken over the key pairs, i.e. the pairs sharing at least one key (w_key > 0), with the
  population standard deviation (numpy's default, the spec's ``std_dev``).  When every w_key is equal the
  z-score is 0 and every key pair gets 0.5.
* A pair that shares no key gets key(i, j) = 0, and a pair outside the semantic pairs (neither is among
  the other's ``semantic_k`` nearest events) gets sim(i, j) = 0.  The spec's loop over all pairs would
  give a pair with no shared key sigmoid(z(0)) > 0 (about 0.3-0.5), which connects every pair of events
  above the 0.1 threshold: the graph would be complete, N(N-1)/2 edges, which cannot scale and drowns the
  structure that shared keys carry.
* Normalization is done here in numpy (two passes over an array) rather than with window functions in
  SQL, so the SQL functions stay reusable on their own and each pair crosses the wire once.
* Louvain is python-louvain's ``best_partition`` with a fixed ``random_state``: the same graph gives the
  same communities.  Events with no edge are clusters of their own.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np
import numpy.typing as npt

__all__ = ["FusedPairs", "build_graph", "communities", "fuse", "louvain", "modularity", "normalize_key_weights"]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def normalize_key_weights(w_key: npt.ArrayLike) -> FloatArray:
    """sigmoid(z-score(w_key)) over the given weights (population std; 0.5 for all when std is 0)."""
    w = np.asarray(w_key, dtype=np.float64)
    if w.size == 0:
        return w.copy()
    std = float(w.std())
    mean = float(w.mean())
    if not np.isfinite(std) or std <= 1e-12 * max(1.0, abs(mean)):
        z = np.zeros_like(w)
    else:
        z = (w - mean) / std
    return 1.0 / (1.0 + np.exp(-z))


@dataclass
class FusedPairs:
    """Every candidate pair (``a < b``) with its terms: raw w_key, normalized key term, similarity, final."""

    a: IntArray
    b: IntArray
    w_key: FloatArray
    key: FloatArray
    sim: FloatArray
    final: FloatArray

    def __len__(self) -> int:
        return int(self.a.size)

    def as_dict(self) -> dict[tuple[int, int], tuple[float, float, float, float]]:
        """``{(a, b): (w_key, key, sim, final)}`` (for tests and small graphs)."""
        return {
            (int(a), int(b)): (float(w), float(k), float(s), float(f))
            for a, b, w, k, s, f in zip(self.a, self.b, self.w_key, self.key, self.sim, self.final)
        }


def fuse(
    event_ids: npt.ArrayLike,
    key_pairs: tuple[npt.ArrayLike, npt.ArrayLike, npt.ArrayLike],
    semantic_pairs: tuple[npt.ArrayLike, npt.ArrayLike, npt.ArrayLike],
    alpha: float,
) -> FusedPairs:
    """The union of both pair lists with final = alpha·sigmoid(z(w_key)) + (1−alpha)·sim.

    ``event_ids`` are the chosen events (every pair's ends must be among them); each list holds each
    pair at most once with ``a < b`` (as the SQL functions return them).
    """
    ids = np.unique(np.asarray(event_ids, dtype=np.int64))
    n = np.int64(max(ids.size, 1))
    ka, kb, kw = (np.asarray(x) for x in key_pairs)
    sa, sb, ss = (np.asarray(x) for x in semantic_pairs)
    ka, kb, sa, sb = (np.asarray(x, dtype=np.int64) for x in (ka, kb, sa, sb))
    kw = np.asarray(kw, dtype=np.float64)
    ss = np.asarray(ss, dtype=np.float64)

    def codes(a: IntArray, b: IntArray) -> IntArray:
        pa, pb = np.searchsorted(ids, a), np.searchsorted(ids, b)
        if a.size and (pa.max() >= ids.size or pb.max() >= ids.size
                       or not (np.array_equal(ids[pa], a) and np.array_equal(ids[pb], b))):
            raise ValueError("a pair names an event that is not among the chosen events")
        return np.minimum(pa, pb) * n + np.maximum(pa, pb)

    all_codes = np.concatenate([codes(ka, kb), codes(sa, sb)])
    unique, inverse = np.unique(all_codes, return_inverse=True)
    m = unique.size
    w_key = np.zeros(m)
    key = np.zeros(m)
    sim = np.zeros(m)
    nk = ka.size
    w_key[inverse[:nk]] = kw
    key[inverse[:nk]] = normalize_key_weights(kw)
    sim[inverse[nk:]] = ss
    final = alpha * key + (1.0 - alpha) * sim
    return FusedPairs(a=ids[unique // n], b=ids[unique % n], w_key=w_key, key=key, sim=sim, final=final)


def build_graph(event_ids: npt.ArrayLike, pairs: FusedPairs, edge_threshold: float) -> nx.Graph:
    """Every chosen event as a node; an edge ``weight = final`` for each pair with final > edge_threshold."""
    graph = nx.Graph()
    graph.add_nodes_from(int(e) for e in np.asarray(event_ids, dtype=np.int64).tolist())
    keep = pairs.final > edge_threshold
    graph.add_weighted_edges_from(
        zip(pairs.a[keep].tolist(), pairs.b[keep].tolist(), pairs.final[keep].tolist())
    )
    return graph


def louvain(graph: nx.Graph, *, resolution: float = 1.0, random_state: int | None = 42) -> dict[int, int]:
    """Louvain communities ``{event_id: community}`` (python-louvain), reproducible for a given random_state."""
    if graph.number_of_edges() == 0:
        return {node: i for i, node in enumerate(sorted(graph.nodes))}
    import community as community_louvain  # python-louvain

    partition: dict[int, int] = community_louvain.best_partition(
        graph, weight="weight", resolution=resolution, random_state=random_state
    )
    return partition


def modularity(graph: nx.Graph, partition: dict[int, int]) -> float | None:
    """Modularity of the partition (None when the graph has no edge: undefined)."""
    if graph.number_of_edges() == 0:
        return None
    import community as community_louvain

    return float(community_louvain.modularity(partition, graph, weight="weight"))


def communities(partition: dict[int, int]) -> list[list[int]]:
    """The communities as sorted event-id lists, largest first (ties: smallest event id first)."""
    groups: dict[int, list[int]] = {}
    for event, label in partition.items():
        groups.setdefault(label, []).append(event)
    return sorted((sorted(g) for g in groups.values()), key=lambda g: (-len(g), g[0]))
