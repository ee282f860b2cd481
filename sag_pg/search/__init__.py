"""SAG retrieval: the SQL stages (match → activate → expand → rank), PageRank, and the result types."""

from __future__ import annotations

from .result import ChunkHit, KeyHit, SearchResult
from .retrieve import RetrievalParams, retrieve

__all__ = ["retrieve", "RetrievalParams", "SearchResult", "ChunkHit", "KeyHit"]
