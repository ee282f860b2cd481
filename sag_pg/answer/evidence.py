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

__all__ = ["Citation", "CitationCheck", "check_citations", "citation", "estimate_tokens", "format_evidence",
           "merge_chunks", "parse_citations"]

MAX_CHUNK_CHARS = 1500
MAX_EVENTS_PER_CHUNK = 6
NO_EVIDENCE = "(no passages found)"
# The evidence an answer prompt carries, in (estimated) tokens (Settings.evidence_tokens, SAG_EVIDENCE_TOKENS):
# 5 chunks with up to 6 events each made prompts of 1,900-2,500 tokens, 7-17 min a call for a 1.5B model on a
# CPU (issue #37 item 13).  0: no budget.
DEFAULT_EVIDENCE_TOKENS = 1500
# A passage is not started with less room than this left (its heading and a sentence or two).
_MIN_BLOCK_TOKENS = 40
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def estimate_tokens(text: str) -> int:
    """Tokens ``text`` costs a BPE tokenizer, estimated without one: a CJK character about one token, other
    text about four characters a token (English and code with the GPT, Llama and Qwen vocabularies)."""
    cjk = len(_CJK.findall(text))
    other = len(text) - cjk
    return cjk + (other + 3) // 4

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
                    max_events: int = MAX_EVENTS_PER_CHUNK, max_tokens: int = 0) -> str:
    """Each chunk as ``[id] title — document`` then its text (cut at ``max_chars``) and its events.

    ``max_tokens`` (0: none) budgets the whole evidence by :func:`estimate_tokens`, best chunk first: a chunk
    that does not fit loses events, then text (cut at a sentence where it can); chunks with no room left are
    not shown and a last line says how many.
    """
    if not chunks:
        return NO_EVIDENCE
    blocks: list[str] = []
    left = max_tokens
    for n, hit in enumerate(chunks):
        heading = hit.title or hit.document_title or hit.document_uri
        if hit.document_title and hit.document_title != heading:
            heading = f"{heading} — {hit.document_title}"
        text = " ".join(hit.content.split())
        if len(text) > max_chars:
            text = text[:max_chars].rstrip() + " …"
        events = [f"- {event.get('title') or ''}{_when(event)}: {event.get('content') or ''}"
                  for event in hit.events[:max_events]]
        if max_tokens:
            if blocks and left < _MIN_BLOCK_TOKENS:
                blocks.append(f"({len(chunks) - n} more passages left out: the evidence budget of {max_tokens} "
                              "tokens is spent)")
                break
            text, events = _fit(f"[{hit.chunk_id}] {heading}", text, events, max(left, _MIN_BLOCK_TOKENS))
        lines = [f"[{hit.chunk_id}] {heading}", text]
        if events:
            lines.append("Events:")
            lines.extend(events)
        block = "\n".join(lines)
        left -= estimate_tokens(block) + 1
        blocks.append(block)
    return "\n\n".join(blocks)


def _when(event: dict[str, Any]) -> str:
    return f" ({event['time']})" if event.get("time") else ""


def _fit(heading: str, text: str, events: list[str], room: int) -> tuple[str, list[str]]:
    """The text and events of one passage within ``room`` tokens: events go first (last ones first), then the
    text is cut, at the end of a sentence when one ends in its second half."""
    def cost(body: str, kept: list[str]) -> int:
        return estimate_tokens("\n".join([heading, body, *(["Events:", *kept] if kept else [])]))

    while events and cost(text, events) > room:
        events = events[:-1]
    if cost(text, events) <= room:
        return text, events
    low, high = 0, len(text)
    while low < high:  # the longest prefix that fits
        mid = (low + high + 1) // 2
        if cost(text[:mid] + " …", []) <= room:
            low = mid
        else:
            high = mid - 1
    cut = text[:low]
    end = max(cut.rfind(mark) for mark in (". ", "。", "！", "？", "! ", "? ", "；"))
    if end >= len(cut) // 2:
        cut = cut[:end + 1]
    return cut.rstrip() + " …", []


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
