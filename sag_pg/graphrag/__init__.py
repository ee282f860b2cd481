"""GraphRAG's query side over the sag-pg knowledge base (issue 19, ../shared/seeds/graphrag-query.md).

    sag-pg communities build --source demo            # Leiden hierarchy + a report per community
    sag-pg search "Who founded Apple?" --strategy local --json   # local search context tables (no LLM)
    sag-pg ask "What are the main themes?" --mode global        # map-reduce over reports (SAG_LLM)

Entities are keys, relationships are keys held by the same event, text units are chunks, communities are
hierarchical Leiden's levels (GraphRAG's, max community size 10) over the event clustering graph
(``sag.clusters`` with ``level``/``parent_id``), and their reports live in ``sag.community_reports``.

Modules: :mod:`.hierarchy` (Leiden or Louvain levels), :mod:`.reports` (LLM or extractive reports), :mod:`.build`
(the whole build, incremental by membership hash), :mod:`.local`, :mod:`.global_search`, :mod:`.drift`,
:mod:`.ask` (``SAG.ask`` modes), :mod:`.result` (answer and token accounting), :mod:`.schemas`.
"""

from __future__ import annotations

from .ask import MODES, graphrag_ask
from .build import BuildParams, BuildResult, build_communities
from .drift import DriftParams, drift_search
from .global_search import GlobalParams, global_search
from .local import LocalParams, build_local_context, local_search
from .result import GraphRAGAnswer

__all__ = ["MODES", "BuildParams", "BuildResult", "DriftParams", "GlobalParams", "GraphRAGAnswer", "LocalParams",
           "build_communities", "build_local_context", "drift_search", "global_search", "graphrag_ask",
           "local_search"]
