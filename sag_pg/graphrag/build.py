"""``sag-pg communities build``: the clustering graph → hierarchical Leiden → stored hierarchy → reports.

1. The graph is the clustering's (:func:`sag_pg.cluster.cluster_events` with ``store=False``: the same
   selection, pairs, fusion and threshold as ``sag-pg cluster``).
2. Its levels (:mod:`.hierarchy`: GraphRAG's hierarchical Leiden with a maximum community size, or Louvain's
   dendrogram) are stored as one run of ``sag.cluster_runs``
   (``params.kind = 'hierarchy'``) with each community's level, parent and membership hash.
3. Reports, incrementally: ``sag.reuse_community_reports`` copies the report of every community whose
   membership (hash of its event ids) already had one, in an earlier hierarchy or one level up; only the rest
   are written (LLM or extractive, :mod:`.reports`), embedded and stored.  Then the source's earlier
   hierarchies are deleted.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..cluster import ClusterParams, EventSelection, cluster_events
from ..cluster import graph as g
from ..cluster.titles import TopKey, offline_title, top_keys
from ..db import cluster as cluster_sql
from ..db import graphrag as store
from ..db.connection import Database
from ..embedders import Embedder
from ..errors import InputError
from ..llm import LLM
from .hierarchy import GRAPHRAG_SEED, dendrogram_levels, leiden_levels, parents
from .reports import Draft, extractive_report, llm_report

__all__ = ["BuildParams", "BuildResult", "build_communities"]


@dataclass(frozen=True)
class BuildParams:
    """``method``: ``leiden`` (GraphRAG's hierarchical Leiden: ``max_cluster_size`` 10, seed ``leiden_seed``
    0xDEADBEEF, as GraphRAG's ``cluster_graph``) or ``louvain`` (python-louvain's dendrogram, seed
    ``cluster.random_state``); ``max_levels``: the coarsest levels kept (None: all; 3 keeps levels 0-2, GraphRAG's
    default query level 2 being the finest); ``min_report_size``: smaller communities get no report;
    ``digest_events``: events a report is written from; ``top_keys``: keys kept per community (its findings)."""

    cluster: ClusterParams = field(default_factory=ClusterParams)
    method: str = "leiden"
    max_cluster_size: int = 10
    leiden_seed: int = GRAPHRAG_SEED
    max_levels: int | None = 3
    min_report_size: int = 2
    digest_events: int = 40
    top_keys: int = 8

    def validate(self) -> None:
        self.cluster.validate()
        if self.method not in ("leiden", "louvain"):
            raise InputError(f"method must be leiden or louvain, got {self.method!r}")
        if self.max_cluster_size < 1:
            raise InputError(f"max_cluster_size must be >= 1, got {self.max_cluster_size}")
        if self.max_levels is not None and self.max_levels < 1:
            raise InputError(f"max_levels must be >= 1, got {self.max_levels}")
        if self.min_report_size < 1:
            raise InputError(f"min_report_size must be >= 1, got {self.min_report_size}")
        if self.digest_events < 1:
            raise InputError(f"digest_events must be >= 1, got {self.digest_events}")


@dataclass
class BuildResult:
    run_id: int
    event_count: int
    levels: list[dict[str, int]]
    reports_written: int
    reports_reused: int
    llm_failures: int
    prompt_tokens: int
    completion_tokens: int
    removed_runs: int
    timings: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "event_count": self.event_count, "levels": self.levels,
                "reports_written": self.reports_written, "reports_reused": self.reports_reused,
                "llm_failures": self.llm_failures, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "removed_runs": self.removed_runs,
                "timings": {k: round(v, 3) for k, v in self.timings.items()}}


def build_communities(db: Database, embedder: Embedder, selection: EventSelection, params: BuildParams = BuildParams(),
                      *, llm: LLM | None = None, concurrency: int = 4, prompts_dir: Path | None = None,
                      on_phase: Callable[[str], None] | None = None) -> BuildResult:
    """Build (or rebuild) the hierarchy of the selected events and their reports; see the module docstring."""
    params.validate()
    timings: dict[str, float] = {}
    clock = [time.perf_counter()]
    started = clock[0]

    def phase(name: str) -> None:
        timings[name] = time.perf_counter() - clock[0]
        clock[0] = time.perf_counter()
        if on_phase is not None:
            on_phase(name)

    clustering = cluster_events(db, selection, params.cluster, store=False)
    phase("graph")
    if params.method == "leiden":
        levels = leiden_levels(clustering.graph, max_cluster_size=params.max_cluster_size,
                               resolution=params.cluster.resolution, seed=params.leiden_seed,
                               max_levels=params.max_levels)
    else:
        levels = dendrogram_levels(clustering.graph, resolution=params.cluster.resolution,
                                   random_state=params.cluster.random_state, max_levels=params.max_levels)
    up = parents(levels)
    phase("hierarchy")

    ids = np.asarray(clustering.event_ids, dtype=np.int64)
    key_types = list(params.cluster.key_types) if params.cluster.key_types is not None else None
    with db.connect() as conn:
        idf = cluster_sql.key_idf(conn, clustering.event_ids, key_types, params.cluster.use_idf)
        link_ev, link_key = cluster_sql.links(conn, clustering.event_ids, key_types)
        communities: list[store.Community] = []
        offsets: list[int] = []
        best_by_level = []
        for level, groups in enumerate(levels):
            labels = np.empty(ids.size, dtype=np.int64)
            for ordinal, members in enumerate(groups):
                labels[np.searchsorted(ids, np.asarray(members, dtype=np.int64))] = ordinal
            best_by_level.append(top_keys(labels, link_ev, link_key, idf, event_ids=ids, n=params.top_keys))
        names = cluster_sql.key_names(conn, sorted({k for best in best_by_level for keys in best for k, _ in keys}))
        for level, groups in enumerate(levels):
            offsets.append(len(communities))
            for ordinal, members in enumerate(groups):
                keys = [TopKey(k, names[k][0], names[k][1], s) for k, s in best_by_level[level][ordinal] if k in names]
                parent = up[level][ordinal]
                communities.append(store.Community(
                    level=level, ordinal=ordinal, top_keys=[k.to_dict() for k in keys], event_ids=members,
                    title=offline_title(keys, fallback=str(clustering.graph.nodes[members[0]].get("label", "")))
                    or f"community {level}.{ordinal}",
                    parent=None if parent is None else offsets[level - 1] + parent))
        phase("top_keys")
        conn.commit()  # the reads so far: the writes below start a transaction of their own
        with conn.transaction():
            store.sequential_writes(conn)
            run_id = store.store_hierarchy(
                conn, source_id=clustering.source_id, event_count=clustering.event_count,
                modularity=g.modularity(clustering.graph, {e: i for i, m in enumerate(levels[0]) for e in m}),
                communities=communities,
                params={"params": params.cluster.to_dict(), "selection": selection.describe(),
                        "method": params.method, "max_cluster_size": params.max_cluster_size,
                        "leiden_seed": params.leiden_seed,
                        "max_levels": params.max_levels, "min_report_size": params.min_report_size})
            reused = store.reuse_community_reports(conn, run_id)
        phase("store")
        todo = store.unreported(conn, run_id, params.min_report_size)
        digest = store.community_digest(conn, [c["id"] for c in todo], params.digest_events)
        conn.commit()
        phase("digest")
        largest = {lv: max((len(m) for m in groups), default=0) for lv, groups in enumerate(levels)}
        drafts = _write(todo, digest, largest, llm, concurrency, prompts_dir)
        phase("reports")
        vectors = embedder.embed([f"{d.title}\n{d.summary}" for d in drafts]) if drafts else np.zeros((0, 1))
        phase("embed")
        conn.commit()
        with conn.transaction():
            store.sequential_writes(conn)
            store.store_reports(conn, [
                store.NewReport(c["id"], d.kind, d.title, d.summary, d.findings, d.rating, d.rating_explanation,
                                d.full_content, c["membership_hash"], vectors[i], d.prompt_tokens,
                                d.completion_tokens)
                for i, (c, d) in enumerate(zip(todo, drafts, strict=True))])
            removed = store.delete_older_hierarchies(conn, source_id=clustering.source_id, keep_run=run_id)
            summary = store.hierarchy_levels(conn, run_id)
        phase("store_reports")
    timings["total"] = time.perf_counter() - started
    return BuildResult(run_id=run_id, event_count=clustering.event_count, levels=summary,
                       reports_written=len(drafts), reports_reused=reused,
                       llm_failures=sum(1 for d in drafts if d.kind != "llm") if llm is not None else 0,
                       prompt_tokens=sum(d.prompt_tokens for d in drafts),
                       completion_tokens=sum(d.completion_tokens for d in drafts), removed_runs=removed,
                       timings=timings)


def _write(todo: list[dict[str, Any]], digest: dict[int, list[tuple[int, str, str]]], largest: dict[int, int],
           llm: LLM | None, concurrency: int, prompts_dir: Path | None) -> list[Draft]:
    """A draft per community: the LLM's (in parallel) where it answers, the extractive one otherwise."""
    def one(c: dict[str, Any]) -> Draft:
        events = digest.get(c["id"], [])
        if llm is not None:
            written = llm_report(llm, c["size"], c["level"], c["top_keys"], events, prompts_dir)
            if written is not None:
                return written
        return extractive_report(c["title"], c["size"], largest.get(c["level"], c["size"]), c["top_keys"], events)

    if llm is None or concurrency <= 1 or len(todo) <= 1:
        return [one(c) for c in todo]
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        return list(pool.map(one, todo))
