"""Knowledge-graph memory (issue #17): entities and typed relations over the keys, tags, traversal,
two-channel recall with scoring strategies, recall statistics and eviction.  The math is SQL
(sql/idempotent/050-055); this package is the Python surface: ``SAG.graph``, ``SAG.memory``, ``SAG.recall``."""

from __future__ import annotations

from .api import KnowledgeGraph, TagConstraints
from .memory import Memory

__all__ = ["KnowledgeGraph", "Memory", "TagConstraints"]
