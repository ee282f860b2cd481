"""Evidence for the LLM (chunks with their events, each under its chunk id) and the citations in its answers.

An answer cites chunks as ``[12]``, ``[12][15]`` or ``[12, 15]``. :func:`check_citations` keeps the ids
that are in the evidence and removes the others from the text, so an answer never points at a chunk
its reader cannot see.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..search.result import ChunkHit

__all__ = ["Citation", "CitationCheck", "check_citations", "citation", "format_evidence", "merge_chunks",
           "parse_citations"]

MAX_CHUNK_CHARS = 1500
MAX_EVENTS_PER_CHUNK = 6
NO_EVIDENCE = "(no passages found)"

# [12], [12, 15], [12，15], [chunk 12], [#12]; not [a], [2a] or Markdown links.
_MARKER = re.compile(r"\[\s*(?:chunks?\s*|#)?(\d+(?:\s*[,，、;；]\s*(?:chunks?\s*|#)?\d+)*)\s*\](?!\()",
                     re.IGNORECASE)
_ID = re.compile(r"\d+")


@dataclass(frozen=True)
class Citation:
    """A chunk an answer cites, with what a reader needs to find it."""

    chunk_id: int
    document_uri: str
    title: str
    document_title: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"chunk_id": self.chunk_id, "document_uri": self.document_uri, "title": self.title,
                "document_title": self.document_title}


def citation(hit: ChunkHit) -> Citation:
    return Citation(hit.chunk_id, hit.document_uri, hit.title or hit.document_title, hit.document_title)


def format_evidence(chunks: Sequence[ChunkHit], *, max_chars: int = MAX_CHUNK_CHARS,
                    max_events: int = MAX_EVENTS_PER_CHUNK) -> str:
    """Each chunk as ``[id] title — document`` then its text (cut at ``max_chars``) and its events."""
    if not chunks:
        return NO_EVIDENCE
    blocks = []
    for hit in chunks:
        heading = hit.title or hit.document_title or hit.document_uri
        if hit.document_title and hit.document_title != heading:
            heading = f"{heading} — {hit.document_title}"
        text = " ".join(hit.content.split())
        if len(text) > max_chars:
            text = text[:max_chars].rstrip() + " …"
        lines = [f"[{hit.chunk_id}] {heading}", text]
        events = hit.events[:max_events]
        if events:
            lines.append("Events:")
            for event in events:
                when = f" ({event['time']})" if event.get("time") else ""
                lines.append(f"- {event.get('title') or ''}{when}: {event.get('content') or ''}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def parse_citations(text: str) -> list[int]:
    """The chunk ids cited in ``text``, in order of first citation."""
    ids: list[int] = []
    for marker in _MARKER.finditer(text or ""):
        for number in _ID.findall(marker.group(1)):
            if int(number) not in ids:
                ids.append(int(number))
    return ids


@dataclass(frozen=True)
class CitationCheck:
    text: str  # the answer without citations of unknown chunks
    cited: list[int]  # known ids, in order of first citation
    unknown: list[int]  # ids that are not in the evidence (removed from the text)


def check_citations(text: str, known: Iterable[int]) -> CitationCheck:
    """Keep the citations of ``known`` chunk ids; drop the others from the markers (and empty markers)."""
    allowed = set(known)
    cited: list[int] = []
    unknown: list[int] = []

    def rewrite(marker: re.Match[str]) -> str:
        kept = []
        for number in (int(n) for n in _ID.findall(marker.group(1))):
            target = cited if number in allowed else unknown
            if number not in target:
                target.append(number)
            if number in allowed and number not in kept:
                kept.append(number)
        if not kept:
            return ""
        return marker.group(0) if len(kept) == len(_ID.findall(marker.group(1))) else \
            "".join(f"[{n}]" for n in kept)

    cleaned = _MARKER.sub(rewrite, text or "")
    if unknown:
        cleaned = re.sub(r"[ \t]+([.,;:!?。，；：！？])", r"\1", cleaned)
        cleaned = re.sub(r"[ \t]{2,}", " ", cleaned).strip()
    return CitationCheck(cleaned, cited, unknown)


def merge_chunks(*groups: Iterable[ChunkHit], limit: int | None = None) -> list[ChunkHit]:
    """The chunks of several groups, each once (first occurrence wins), at most ``limit``."""
    seen: set[int] = set()
    merged: list[ChunkHit] = []
    for group in groups:
        for hit in group:
            if hit.chunk_id not in seen:
                seen.add(hit.chunk_id)
                merged.append(hit)
                if limit is not None and len(merged) >= limit:
                    return merged
    return merged
