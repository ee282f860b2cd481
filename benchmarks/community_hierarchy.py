"""Louvain against GraphRAG's hierarchical Leiden on the clustering graph of an existing database (issue 34.5).

    .venv/bin/python benchmarks/community_hierarchy.py --dsn "host=... dbname=sag_bench_hotpotqa_train100_123"

Builds the clustering graph (``cluster_events(..., store=False)``, the graph ``sag-pg communities build``
uses), then prints per level the communities, the largest one and the modularity (python-louvain's, weighted)
of python-louvain's dendrogram and of hierarchical Leiden with ``max_cluster_size`` 10 (GraphRAG's default)
and without a limit, with the seconds each took.
"""

from __future__ import annotations

import argparse
import time

import community as community_louvain

from sag_pg.cluster import ClusterParams, EventSelection, cluster_events
from sag_pg.db.connection import Database
from sag_pg.graphrag.hierarchy import Level, dendrogram_levels, leiden_levels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--source", default=None, help="Only this source's events (default: all).")
    args = parser.parse_args()
    graph = cluster_events(Database(args.dsn), EventSelection(source=args.source), ClusterParams(), store=False).graph
    print(f"events {graph.number_of_nodes()}  edges {graph.number_of_edges()}")

    def show(name: str, build: object) -> None:
        started = time.perf_counter()
        levels: list[Level] = build()  # type: ignore[operator]
        seconds = time.perf_counter() - started
        for depth, level in enumerate(levels):
            partition = {e: i for i, members in enumerate(level) for e in members}
            q = community_louvain.modularity(partition, graph, weight="weight")
            print(f"{name:22s} level {depth}: {len(level):5d} communities, largest {max(map(len, level)):5d}, "
                  f"modularity {q:.4f}")
        print(f"{name:22s} {seconds:.1f} s")

    show("louvain dendrogram", lambda: dendrogram_levels(graph))
    show("leiden max size 10", lambda: leiden_levels(graph, max_cluster_size=10))
    show("leiden no max size", lambda: leiden_levels(graph, max_cluster_size=10**9))


if __name__ == "__main__":
    main()
