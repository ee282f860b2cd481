"""An answer without an LLM: the facts of the retrieved passages that answer the question, cited.

`sag-pg ask` with no LLM configured (and ``mode="extractive"`` always) runs the same search as every mode and
returns, instead of a written answer, the few events (one fact each; a chunk's sentences when it has none) of
the top passages that best match the question, each followed by its chunk id.  A fact's score is its
passage's score (relative to the best) times how much of the question it holds: the share of the question's
BM25 terms among its words (function words aside) plus the weights of the activated keys it names — the
question's own words and the entities the retrieval reached through them.  ``sufficient`` is false when no
fact holds any of either.  No parameter is tuned: three facts, the passages' own order breaking ties.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..embedders.hashing import STOPWORDS
from ..search.result import ChunkHit, SearchResult
from ..text.tokenize import search_tokens, split_sentences
from .evidence import Citation, citation

__all__ = ["EXTRACTIVE_NOTE", "MAX_FACTS", "extract_answer"]

MAX_FACTS = 3
EXTRACTIVE_NOTE = ("no LLM configured (SAG_LLM): an extractive answer — the facts of the retrieved passages that "
                   "match the question, not a written answer")


@dataclass(frozen=True)
class Extracted:
    text: str
    sufficient: bool
    missing: str
    citations: list[Citation]


def _facts(hit: ChunkHit) -> list[str]:
    events = [str(e.get("content") or "").strip() for e in hit.events]
    return [e for e in events if e] or split_sentences(hit.content)


def extract_answer(result: SearchResult, *, max_facts: int = MAX_FACTS) -> Extracted:
    terms = {t for t in result.terms if t not in STOPWORDS}
    keys = [(k.name.casefold(), k.weight) for k in result.keys if k.name and len(k.name) > 1]
    best = max((h.score for h in result.chunks), default=0.0) or 1.0
    scored: list[tuple[float, int, str, ChunkHit]] = []
    order = 0
    for hit in result.chunks:
        for fact in _facts(hit):
            words = set(search_tokens(fact))
            overlap = len(terms & words) / len(terms) if terms else 0.0
            folded = fact.casefold()
            named = sum(w for name, w in keys if name in folded)
            score = (max(hit.score, 0.0) / best) * (overlap + named)
            scored.append((score, order, fact, hit))
            order += 1
    chosen: list[tuple[float, int, str, ChunkHit]] = []
    seen: set[str] = set()
    for item in sorted(scored, key=lambda s: (-s[0], s[1])):
        if item[0] <= 0 or item[2] in seen:
            continue
        seen.add(item[2])
        chosen.append(item)
        if len(chosen) == max_facts:
            break
    if not chosen:
        missing = ("no passage matched the question" if not result.chunks
                   else "no fact of the retrieved passages names the question's words or entities")
        return Extracted("The knowledge base holds no evidence for this question.", False, missing, [])
    text = " ".join(f"{fact} [{hit.chunk_id}]" for _, _, fact, hit in chosen)
    cited: dict[int, Citation] = {}
    for _, _, _, hit in chosen:
        cited.setdefault(hit.chunk_id, citation(hit))
    return Extracted(text, True, "", list(cited.values()))
