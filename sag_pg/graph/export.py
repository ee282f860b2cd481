"""GraphML of an entity's neighbourhood (networkx), for Gephi or Cytoscape: nodes are keys (``label`` the
name, ``type``), edges carry ``relation_type``, ``weight`` and ``origin``; parallel relations stay apart."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import networkx as nx

from ..db.graph import Relation

__all__ = ["neighbourhood_graph", "write_graphml"]


def neighbourhood_graph(edges: Sequence[Relation], center: int | None = None) -> nx.MultiDiGraph:
    graph = nx.MultiDiGraph()
    for e in edges:
        graph.add_node(e.head_id, label=e.head, type=e.head_type)
        graph.add_node(e.tail_id, label=e.tail, type=e.tail_type)
        graph.add_edge(e.head_id, e.tail_id, key=e.relation_type, relation_type=e.relation_type,
                       weight=float(e.weight), origin=e.origin)
    if center is not None:
        graph.graph["center"] = center
    return graph


def write_graphml(edges: Sequence[Relation], path: str | Path, center: int | None = None) -> Path:
    target = Path(path)
    nx.write_graphml(neighbourhood_graph(edges, center), target)
    return target
