"""SAG retrieval: the SQL stages (match → activate → expand → rank), PageRank, and the result types."""

from __future__ import annotations

from .result import ChunkHit, KeyHit, SearchResult
from .retrieve import RetrievalParams, retrieve

__all__ = ["ChunkHit", "KeyHit", "RetrievalParams", "SearchResult", "retrieve"]
