"""Event clustering (sag-algorithm §4): group chosen events by shared keys and meaning, then title the groups.

    from sag_pg.cluster import ClusterParams, EventSelection, cluster_events
    result = cluster_events(sag.db, EventSelection(source="history"), ClusterParams(alpha=0.7), llm=sag.llm)
    for c in result.clusters:
        print(c.size, c.title)

The candidate pairs come from SQL (``sag.cluster_key_pairs``, ``sag.cluster_semantic_pairs``,
``sql/idempotent/040-cluster.sql``); :mod:`.graph` fuses them and runs Louvain; :mod:`.titles` names the
clusters; :mod:`.export` writes GraphML or a PNG.
"""

from __future__ import annotations

from .export import missing_cjk_font, write_graphml, write_png
from .run import Cluster, ClusterParams, ClusterResult, cluster_events
from .select import EventSelection, parse_key_spec

__all__ = [
    "Cluster",
    "ClusterParams",
    "ClusterResult",
    "EventSelection",
    "cluster_events",
    "missing_cjk_font",
    "parse_key_spec",
    "write_graphml",
    "write_png",
]
