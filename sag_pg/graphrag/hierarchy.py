"""The community hierarchy: GraphRAG's hierarchical Leiden over the clustering graph (or Louvain's dendrogram).

``leiden_levels`` (the default) is what GraphRAG's ``cluster_graph`` runs: ``hierarchical_leiden`` of
graspologic (its Rust core, ``graspologic_native``) with a maximum cluster size (GraphRAG's default 10) and a
fixed seed (GraphRAG's 0xDEADBEEF).  Leiden runs on the whole graph (level 0); every community of
``max_cluster_size`` events or more is cut out and clustered again (level 1), and so on until none is left
(or Leiden finds no split of it).  A community
that is not split again is carried down to the deeper levels unchanged (same events, so its report is reused,
``sag.reuse_community_reports``): every level is then a partition of all the events, and level L holds, for
every event, its deepest community at a level <= L -- the communities GraphRAG's ``read_indexer_reports``
selects for ``community_level`` L.  Events without an edge (GraphRAG keeps only the largest connected
component and drops them) are communities of their own.

``dendrogram_levels`` is the earlier hierarchy: python-louvain's successive aggregations (``method='louvain'``).

Levels are numbered from the root as GraphRAG numbers them: level 0 is the coarsest.  Communities are ordered
as :func:`sag_pg.cluster.graph.communities` orders them: largest first.
"""

from __future__ import annotations

import itertools

import networkx as nx

from ..cluster import graph as g

__all__ = ["GRAPHRAG_SEED", "Level", "dendrogram_levels", "leiden_levels", "parents"]

Level = list[list[int]]  # the communities of one level, each a sorted list of event ids

GRAPHRAG_SEED = 0xDEADBEEF  # GraphRAG's cluster_graph seed


def leiden_levels(graph: nx.Graph, *, max_cluster_size: int = 10, resolution: float = 1.0,
                  seed: int | None = GRAPHRAG_SEED, max_levels: int | None = None) -> list[Level]:
    """Hierarchical Leiden's levels, coarsest first, each a partition of every node; at most ``max_levels``."""
    if graph.number_of_edges() == 0:
        return [g.communities({node: i for i, node in enumerate(sorted(graph.nodes))})]
    from graspologic_native import hierarchical_leiden

    # Sorted edges (GraphRAG's "stable" graph): the same graph and seed give the same communities.  The nodes
    # are named by their rank among the event ids, not by the ids: Leiden's result follows the order of the
    # names, and the ids' digits are not the data (Citus numbers rows (group << 48) + n, one node 1, 2, ...;
    # sorted as text, 57 came after 123 on one node and not on Citus).
    rank = {node: i for i, node in enumerate(sorted(graph.nodes))}
    event = sorted(graph.nodes)
    edges = [(str(a), str(b), w) for a, b, w in sorted(
        (min(rank[x], rank[y]), max(rank[x], rank[y]), float(d.get("weight", 1.0))) for x, y, d in graph.edges(data=True))]
    found = hierarchical_leiden(edges, max_cluster_size=max_cluster_size, resolution=resolution, seed=seed)
    by_node: dict[int, dict[int, int]] = {}
    for entry in found:
        by_node.setdefault(event[int(entry.node)], {})[int(entry.level)] = int(entry.cluster)
    depth = 1 + max(level for levels in by_node.values() for level in levels)
    if max_levels is not None:
        depth = min(depth, max_levels)
    next_label = 1 + max(entry.cluster for entry in found)
    lonely = {node: next_label + i for i, node in enumerate(sorted(n for n in graph.nodes if n not in by_node))}
    out: list[Level] = []
    for level in range(depth):
        partition = dict(lonely)
        for node, levels in by_node.items():
            partition[node] = levels[max(lv for lv in levels if lv <= level)]
        out.append(g.communities(partition))
    return out


def dendrogram_levels(graph: nx.Graph, *, resolution: float = 1.0, random_state: int | None = 42,
                      max_levels: int | None = None) -> list[Level]:
    """Louvain's dendrogram levels, coarsest first; at most ``max_levels`` (the coarsest ones).  A graph without
    edges has one level where every event is its own community."""
    if graph.number_of_edges() == 0:
        return [g.communities({node: i for i, node in enumerate(sorted(graph.nodes))})]
    import community as community_louvain  # python-louvain

    dendrogram = community_louvain.generate_dendrogram(graph, weight="weight", resolution=resolution,
                                                       random_state=random_state)
    depth = len(dendrogram)
    levels = [g.communities(community_louvain.partition_at_level(dendrogram, depth - 1 - i))
              for i in range(depth)]
    return levels[:max_levels] if max_levels is not None else levels


def parents(levels: list[Level]) -> list[list[int | None]]:
    """For each level, each community's index in the level above (None on level 0)."""
    out: list[list[int | None]] = [[None] * len(levels[0])] if levels else []
    for above, below in itertools.pairwise(levels):
        where = {event: i for i, members in enumerate(above) for event in members}
        out.append([where[members[0]] for members in below])
    return out
