"""The community hierarchy: python-louvain's dendrogram levels over the clustering graph.

``community.generate_dendrogram`` returns Louvain's successive aggregations, finest first; the last level
is ``best_partition`` (what ``sag-pg cluster`` stores).  GraphRAG numbers levels from the root, so here
level 0 is the coarsest partition and level ``L-1`` the finest.  Each level's communities are nested in
the level above (Louvain only merges), so a community's parent is the community above that holds any of
its events.  Communities are ordered as :func:`sag_pg.cluster.graph.communities` orders them: largest
first.
"""

from __future__ import annotations

import itertools

import networkx as nx

from ..cluster import graph as g

__all__ = ["Level", "dendrogram_levels", "parents"]

Level = list[list[int]]  # the communities of one level, each a sorted list of event ids


def dendrogram_levels(graph: nx.Graph, *, resolution: float = 1.0, random_state: int | None = 42,
                      max_levels: int | None = None) -> list[Level]:
    """The levels, coarsest first; at most ``max_levels`` (the coarsest ones).  A graph without edges has
    one level where every event is its own community."""
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
