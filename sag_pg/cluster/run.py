"""One clustering run (sag-algorithm §4): select → IDF → key pairs → semantic pairs → fuse → Louvain → titles → store.

The pairs are built by the SQL functions of ``sql/idempotent/040-cluster.sql`` and read with binary COPY
straight into numpy arrays (millions of pairs in a second, no Python tuple per row); the rest is
:mod:`.graph` and :mod:`.titles`.  The run, its clusters and their events are stored in
``sag.cluster_runs`` / ``sag.clusters`` / ``sag.cluster_events`` in one transaction, after any LLM call.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import numpy.typing as npt
import psycopg

from ..db import cluster as cluster_sql
from ..db.connection import Database
from ..errors import InputError
from ..llm import LLM
from . import graph as g
from .select import EventSelection, SelectedEvents
from .titles import TopKey, llm_title, offline_title, top_keys

__all__ = ["Cluster", "ClusterParams", "ClusterResult", "cluster_events"]


@dataclass(frozen=True)
class ClusterParams:
    """The knobs of a clustering run (§4.4 first).

    * ``use_idf`` — weight shared keys by IDF; False: every key weighs 1.
    * ``key_types`` — only keys of these types make key edges and top keys (None: all), e.g. leave
      ``time`` out.
    * ``alpha`` — weight of the key term against the semantic term (smaller: closer to the events' meaning).
    * ``edge_threshold`` — pairs with a fused weight at or below it make no edge (larger: sparser graph).
    * ``semantic_k`` — each event's nearest chosen events that make semantic pairs.
    * ``max_key_events`` — keys held by more chosen events are skipped (each would add df(df-1)/2 pairs);
      a selection of at most this many events is exact.  None (default): the largest cap whose key pairs
      fit in ``key_pairs_per_event`` × N (``sag.cluster_key_cap``; rarest keys first), which keeps the graph,
      and Louvain's time and memory, linear in N.
    * ``exact_max`` — up to this many events with embeddings, nearest neighbours are exact; above, HNSW.
    * ``resolution``, ``random_state`` — Louvain's (larger resolution: more, smaller clusters).
    * ``top_keys`` — keys kept per cluster; ``max_llm_titles`` — LLM titles for at most this many of the
      largest clusters of two or more events (the others get the top-keys title).
    """

    use_idf: bool = True
    key_types: tuple[str, ...] | None = None
    alpha: float = 0.7
    edge_threshold: float = 0.1
    semantic_k: int = 10
    max_key_events: int | None = None
    key_pairs_per_event: float = 20.0
    exact_max: int = 1000
    resolution: float = 1.0
    random_state: int = 42
    top_keys: int = 5
    max_llm_titles: int = 50

    def validate(self) -> None:
        if not 0.0 <= self.alpha <= 1.0:
            raise InputError(f"alpha must be in [0, 1], got {self.alpha}")
        if not 0.0 <= self.edge_threshold < 1.0:
            raise InputError(f"edge threshold must be in [0, 1), got {self.edge_threshold}")
        if self.semantic_k < 0:
            raise InputError(f"semantic_k must be >= 0 (0: no semantic pairs), got {self.semantic_k}")
        if self.max_key_events is not None and self.max_key_events < 1:
            raise InputError(f"max_key_events must be >= 1, got {self.max_key_events}")
        if self.key_pairs_per_event < 0:
            raise InputError(f"key_pairs_per_event must be >= 0, got {self.key_pairs_per_event}")
        if self.exact_max < 0:
            raise InputError(f"exact_max must be >= 0, got {self.exact_max}")
        if self.resolution <= 0:
            raise InputError(f"resolution must be > 0, got {self.resolution}")
        if self.top_keys < 1:
            raise InputError(f"top_keys must be >= 1, got {self.top_keys}")
        if self.key_types is not None and not self.key_types:
            raise InputError("key_types must name at least one type (None: all types)")

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["key_types"] = list(self.key_types) if self.key_types is not None else None
        return out


@dataclass
class Cluster:
    ordinal: int
    title: str
    event_ids: list[int]
    top_keys: list[TopKey]
    title_source: str = "keys"  # "keys" (offline) or "llm"
    id: int | None = None

    @property
    def size(self) -> int:
        return len(self.event_ids)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "ordinal": self.ordinal, "title": self.title, "title_source": self.title_source,
                "size": self.size, "top_keys": [k.to_dict() for k in self.top_keys], "event_ids": self.event_ids}


@dataclass
class ClusterResult:
    """A clustering: its clusters (largest first), the graph it came from, counts and timings (seconds)."""

    run_id: int | None
    source_id: int | None
    selection: EventSelection
    params: ClusterParams
    event_ids: list[int]
    clusters: list[Cluster]
    modularity: float | None
    key_pairs: int
    semantic_pairs: int
    max_key_events: int
    pairs: g.FusedPairs = field(repr=False)
    graph: nx.Graph = field(repr=False)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def event_count(self) -> int:
        return len(self.event_ids)

    @property
    def edge_count(self) -> int:
        return int(self.graph.number_of_edges())

    def cluster_of(self, event_id: int) -> Cluster:
        for cluster in self.clusters:
            if event_id in cluster.event_ids:
                return cluster
        raise KeyError(event_id)

    def to_dict(self, *, events: bool = True) -> dict[str, Any]:
        clusters = [c.to_dict() for c in self.clusters]
        if not events:
            for c in clusters:
                del c["event_ids"]
        return {
            "run_id": self.run_id, "source_id": self.source_id, "selection": self.selection.describe(),
            "params": self.params.to_dict(), "event_count": self.event_count, "cluster_count": len(self.clusters),
            "modularity": self.modularity, "max_key_events": self.max_key_events, "key_pairs": self.key_pairs,
            "semantic_pairs": self.semantic_pairs,
            "edges": self.edge_count, "timings": self.timings, "clusters": clusters,
        }


# -- the run --------------------------------------------------------------------------------------------

@contextmanager
def _connection(db: Database | psycopg.Connection) -> Iterator[psycopg.Connection]:
    if isinstance(db, psycopg.Connection):
        yield db
    else:
        with db.connect() as conn:
            yield conn


def cluster_events(
    db: Database | psycopg.Connection,
    selection: EventSelection,
    params: ClusterParams = ClusterParams(),
    llm: LLM | None = None,
    *,
    prompts_dir: Path | None = None,
    store: bool = True,
    on_phase: Callable[[str], None] | None = None,
) -> ClusterResult:
    """Cluster the selected events, title the clusters and (``store``) save the run; returns the result.

    ``db`` is a :class:`~sag_pg.db.connection.Database` or an open connection (left open; the run is
    committed on it).  With ``llm``, the largest clusters get LLM titles (``params.max_llm_titles``),
    falling back to the top-keys title when the LLM fails.  Raises :class:`InputError` for an empty
    selection, an unknown source or invalid parameters.
    """
    params.validate()
    timings: dict[str, float] = {}
    started = time.perf_counter()
    clock = [started]

    def phase(name: str) -> None:
        clock[0] = time.perf_counter()
        if on_phase is not None:
            on_phase(name)

    def done(name: str) -> None:
        timings[name] = time.perf_counter() - clock[0]

    key_types = list(params.key_types) if params.key_types is not None else None
    with _connection(db) as conn:
        try:
            fresh = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
            with conn.transaction():
                if fresh:  # one snapshot for every read, so the pairs and the selection agree
                    cluster_sql.snapshot_read(conn)
                phase("select")
                chosen = cluster_sql.select_events(conn, selection)
                done("select")
                ids = chosen.ids
                phase("key_pairs")
                cap = params.max_key_events
                if cap is None:
                    budget = int(params.key_pairs_per_event * len(ids))
                    cap = cluster_sql.key_cap(conn, ids, budget, key_types, params.use_idf)
                ka, kb, kw = cluster_sql.key_pairs(conn, ids, key_types, params.use_idf, cap)
                done("key_pairs")
                phase("semantic_pairs")
                if params.semantic_k > 0:
                    sa, sb, ss = cluster_sql.semantic_pairs(conn, ids, params.semantic_k, params.exact_max)
                else:
                    sa = sb = np.zeros(0, dtype=np.int64)
                    ss = np.zeros(0)
                done("semantic_pairs")
                phase("keys")
                idf = cluster_sql.key_idf(conn, ids, key_types, params.use_idf)
                link_ev, link_key = cluster_sql.links(conn, ids, key_types)
                done("keys")
        except psycopg.errors.InvalidParameterValue as exc:
            raise InputError(exc.diag.message_primary or str(exc)) from exc

        phase("fuse")
        pairs = g.fuse(ids, (ka, kb, kw), (sa, sb, ss), params.alpha)
        done("fuse")
        phase("graph")
        graph = g.build_graph(ids, pairs, params.edge_threshold)
        done("graph")
        phase("louvain")
        partition = g.louvain(graph, resolution=params.resolution, random_state=params.random_state)
        groups = g.communities(partition)
        modularity = g.modularity(graph, partition)
        done("louvain")

        phase("titles")
        clusters = _titled_clusters(conn, chosen, groups, graph, idf, link_ev, link_key, params, llm, prompts_dir)
        done("titles")

        for cluster in clusters:
            for event in cluster.event_ids:
                graph.nodes[event]["cluster"] = cluster.ordinal
                graph.nodes[event]["label"] = chosen.labels.get(event, "")
        result = ClusterResult(
            run_id=None, source_id=chosen.source_id, selection=selection, params=params, event_ids=ids,
            clusters=clusters, modularity=modularity, key_pairs=int(ka.size), semantic_pairs=int(sa.size),
            max_key_events=cap,
            pairs=pairs, graph=graph, timings=timings,
        )
        if store:
            phase("store")
            _store(conn, result)
            done("store")
    timings["total"] = time.perf_counter() - started
    return result


def _titled_clusters(
    conn: psycopg.Connection, chosen: SelectedEvents, groups: list[list[int]], graph: nx.Graph,
    idf: dict[int, float], link_ev: npt.NDArray[np.int64], link_key: npt.NDArray[np.int64],
    params: ClusterParams, llm: LLM | None, prompts_dir: Path | None,
) -> list[Cluster]:
    ids = np.asarray(chosen.ids, dtype=np.int64)
    labels = np.empty(ids.size, dtype=np.int64)
    for ordinal, group in enumerate(groups):
        labels[np.searchsorted(ids, np.asarray(group, dtype=np.int64))] = ordinal
    best = top_keys(labels, link_ev, link_key, idf, event_ids=ids, n=params.top_keys)
    wanted = sorted({k for keys in best for k, _ in keys})
    with conn.transaction():
        info = cluster_sql.key_names(conn, wanted)

    clusters: list[Cluster] = []
    for ordinal, group in enumerate(groups):
        keys = [TopKey(k, info[k][0], info[k][1], score) for k, score in best[ordinal] if k in info]
        # The most connected events first (weighted degree inside the graph), then by id.
        central = sorted(group, key=lambda e: (-graph.degree(e, weight="weight"), e))
        title = offline_title(keys, fallback=chosen.labels.get(central[0], ""))
        clusters.append(Cluster(ordinal=ordinal, title=title, event_ids=group, top_keys=keys))

    if llm is not None:
        asked = [c for c in clusters if c.size >= 2][: params.max_llm_titles]
        for cluster in asked:
            central = sorted(cluster.event_ids, key=lambda e: (-graph.degree(e, weight="weight"), e))[:8]
            answer = llm_title(llm, [chosen.labels.get(e, "") for e in central], cluster.top_keys,
                               size=cluster.size, prompts_dir=prompts_dir)
            if answer:
                cluster.title = answer
                cluster.title_source = "llm"
    return clusters


def _store(conn: psycopg.Connection, result: ClusterResult) -> None:
    params = {
        "params": result.params.to_dict(),
        "selection": result.selection.describe(),
        "graph": {"max_key_events": result.max_key_events, "key_pairs": result.key_pairs,
                  "semantic_pairs": result.semantic_pairs, "edges": result.edge_count},
    }
    with conn.transaction():
        result.run_id, cluster_ids = cluster_sql.store_run(
            conn, source_id=result.source_id, params=params, event_count=result.event_count,
            modularity=result.modularity, clusters=[(c.ordinal, c.title, c.size, [k.to_dict() for k in c.top_keys],
                                                     c.event_ids) for c in result.clusters])
        for cluster, cluster_id in zip(result.clusters, cluster_ids, strict=True):
            cluster.id = cluster_id
