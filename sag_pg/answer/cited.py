"""Answers with citations: search, then the LLM answers from the top chunks and their events.

The answer cites chunk ids in square brackets; citations of chunks that were not in the evidence are
removed from the text and reported (``dropped_citations`` and a note). When the evidence does not
answer the question the model says so (``sufficient`` is false, ``missing`` says what is missing);
when the search finds nothing, no LLM call is made at all.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import ConfigError, QueryError
from ..llm.base import Usage
from ..prompts import render
from ..search.result import ChunkHit, SearchResult
from .evidence import DEFAULT_EVIDENCE_TOKENS, Citation, check_citations, citation, format_evidence
from .meter import MeteredLLM
from .schemas import ANSWER_SCHEMA

if TYPE_CHECKING:
    from ..llm.base import LLM

__all__ = ["NO_EVIDENCE_ANSWER", "Answer", "answer_from_evidence", "ask", "require_llm"]

DEFAULT_SOURCE = "default"  # the client's default source
NO_EVIDENCE_ANSWER = "The knowledge base holds no evidence for this question."


@dataclass(kw_only=True)
class Answer:
    """An answer, the chunks it cites and the evidence it was written from.

    ``usage``: what the LLM endpoint answered for this question (requests and tokens; in normal mode
    this includes the query rewrite). ``notes`` say what was corrected (e.g. dropped citations).
    """

    question: str
    mode: str
    text: str
    sufficient: bool
    missing: str = ""
    citations: list[Citation] = field(default_factory=list)
    evidence: list[ChunkHit] = field(default_factory=list)
    dropped_citations: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    timings_ms: dict[str, float] = field(default_factory=dict)
    search: SearchResult | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "question": self.question, "mode": self.mode, "answer": self.text, "sufficient": self.sufficient,
            "missing": self.missing, "citations": [c.to_dict() for c in self.citations],
            "evidence": [c.to_dict() for c in self.evidence], "dropped_citations": self.dropped_citations,
            "notes": self.notes, "usage": dict(self.usage),
            "timings_ms": {k: round(v, 3) for k, v in self.timings_ms.items()},
        }
        rewrite = getattr(self.search, "rewrite", None)
        if rewrite is not None:
            data["rewrite"] = rewrite.to_dict()
        return data


@dataclass(frozen=True)
class _Written:
    text: str
    sufficient: bool
    missing: str
    citations: list[Citation]
    dropped: list[int]
    notes: list[str]


class Searcher(Protocol):
    """What answering needs of a knowledge base: its search (``SAG.search`` is one)."""

    def __call__(self, query: str, *, keys: Sequence[str] | None = None, sql: str | None = None,
                 mode: str = "fast", source: str | Sequence[str] | None = DEFAULT_SOURCE,
                 top_n: int = 10) -> SearchResult: ...


def require_llm(llm: LLM | None, what: str) -> LLM:
    if llm is None:
        raise ConfigError(f"{what} needs an LLM: set SAG_LLM (e.g. openai:gpt-4o-mini; SAG_LLM_BASE_URL for a "
                          "local OpenAI-compatible server), or use `sag-pg search` for retrieval without one")
    return llm


def repeats_the_example(answer: str, prompt: str) -> bool:
    """``answer`` is (or holds) the example answer that the rendered ``prompt`` shows in its output format."""
    folded = " ".join(answer.split()).casefold().strip(" .")
    for example in re.findall(r'\{"answer": ("(?:[^"\\]|\\.)*")', prompt):
        text = " ".join(str(json.loads(example)).split()).casefold().strip(" .")
        if text and (folded == text or (len(text) > 20 and text in folded)):
            return True
    return False


def answer_from_evidence(llm: MeteredLLM, question: str, chunks: Sequence[ChunkHit], *,
                         prompt: str = "answer_json", prompts_dir: Path | None = None,
                         values: dict[str, object] | None = None, final: bool = False,
                         evidence_tokens: int = DEFAULT_EVIDENCE_TOKENS) -> _Written:
    """The LLM's answer from ``chunks`` with its citations checked against them; the evidence shown is
    budgeted to ``evidence_tokens`` (0: none)."""
    if not chunks:
        return _Written(NO_EVIDENCE_ANSWER, False, "no passage matched the question", [], [],
                        ["the search found no evidence; the LLM was not asked"])
    evidence = format_evidence(chunks, max_tokens=evidence_tokens)
    rendered = render(prompt, prompts_dir=prompts_dir, query=question, evidence=evidence, **(values or {}))
    data = llm.complete_json(rendered, schema=ANSWER_SCHEMA, purpose=prompt, final=final)
    if repeats_the_example(str(data["answer"]), rendered):
        # A small model may copy the output format's example instead of answering (issue #37: a demo answer
        # came back as the example, and passed the citation check): not an answer.
        return _Written(NO_EVIDENCE_ANSWER, False, "the model repeated the prompt's example instead of answering",
                        [], [], ["the model's answer repeated the prompt's example and was discarded"])
    by_id = {c.chunk_id: c for c in chunks}
    check = check_citations(str(data["answer"]).strip(), by_id)
    notes: list[str] = []
    if check.unknown:
        notes.append("dropped citations of chunks that are not in the evidence: "
                     + ", ".join(f"[{i}]" for i in check.unknown))
    sufficient = bool(data["sufficient"])
    if sufficient and not check.cited:
        notes.append("the answer cites no evidence")
    return _Written(check.text, sufficient, str(data.get("missing") or "").strip(),
                    [citation(by_id[i]) for i in check.cited], check.unknown, notes)


def ask(search: Searcher, llm: LLM | None, question: str, *, mode: str = "fast",
        source: str | Sequence[str] | None = DEFAULT_SOURCE, top_n: int = 10, keys: Sequence[str] | None = None,
        sql: str | None = None, prompts_dir: Path | None = None,
        evidence_tokens: int = DEFAULT_EVIDENCE_TOKENS) -> Answer:
    """Search, then answer from the top ``top_n`` chunks with citations (shown to the LLM within
    ``evidence_tokens``, 0: no budget).

    ``mode``: ``fast`` (search without LLM, then answer) or ``normal`` (the LLM rewrites the question and
    names its keys first, §3.3); deep mode is :func:`~sag_pg.answer.deep.deep_ask` (``SAG.ask`` chooses).
    ``extractive``, and ``fast`` with no LLM: the matching facts of the same search, cited, no LLM call
    (:mod:`.extractive`).  Raises ConfigError in normal mode without an LLM.
    """
    if mode not in ("fast", "normal", "extractive"):
        raise QueryError(f"unknown mode {mode!r}: use fast, normal, deep or extractive")
    if mode == "extractive" or (mode == "fast" and llm is None):
        return _extractive(search, question, source=source, top_n=top_n, keys=keys, sql=sql,
                           asked=mode, llm_configured=llm is not None)
    metered = MeteredLLM(require_llm(llm, f"answering in {mode} mode"))
    started = time.perf_counter()
    result = search(question, keys=keys, sql=sql, mode=mode, source=source, top_n=top_n)
    searched = time.perf_counter()
    written = answer_from_evidence(metered, question, result.chunks, prompts_dir=prompts_dir,
                                   evidence_tokens=evidence_tokens)
    usage: Usage = metered.usage()
    return Answer(
        question=question, mode=mode, text=written.text, sufficient=written.sufficient, missing=written.missing,
        citations=written.citations, evidence=list(result.chunks), dropped_citations=written.dropped,
        notes=written.notes, usage=usage.as_dict(), search=result,
        timings_ms={**{f"search.{k}": v for k, v in result.timings_ms.items()},
                    "search": (searched - started) * 1000.0, "answer": (time.perf_counter() - searched) * 1000.0},
    )


def _extractive(search: Searcher, question: str, *, source: str | Sequence[str] | None, top_n: int,
                keys: Sequence[str] | None, sql: str | None, asked: str, llm_configured: bool) -> Answer:
    from .extractive import EXTRACTIVE_NOTE, extract_answer

    started = time.perf_counter()
    result = search(question, keys=keys, sql=sql, mode="fast", source=source, top_n=top_n)
    searched = time.perf_counter()
    found = extract_answer(result)
    note = EXTRACTIVE_NOTE if not llm_configured else "extractive mode: the facts that match, not a written answer"
    return Answer(question=question, mode="extractive", text=found.text, sufficient=found.sufficient,
                  missing=found.missing, citations=found.citations, evidence=list(result.chunks), notes=[note],
                  search=result,
                  timings_ms={**{f"search.{k}": v for k, v in result.timings_ms.items()},
                              "search": (searched - started) * 1000.0,
                              "answer": (time.perf_counter() - searched) * 1000.0})
