"""Community reports: GraphRAG's report prompt with an LLM, or an extractive report offline.

Extractive (``kind = 'extractive'``), from the community's most characteristic events
(``sag.community_digest``) and its top keys (``sag.clusters.top_keys``, score = sum of IDF over its events):

* title: the community's title (its three best keys, :func:`sag_pg.cluster.titles.offline_title`);
* summary: the TextRank sentences (sumy, :func:`sag_pg.text.summary.summarize`) of those events;
* findings: one per top key, ``"type: name"`` with the first of the community's sentences that names it,
  rated ``10 × score / best score`` of the community;
* rating (GraphRAG's rank): ``10 × ln(1 + size) / ln(1 + largest size of the level)``: with no model to judge
  impact, the size on a log scale, the largest community of its level rated 10.

With an LLM, the ``graphrag_report`` prompt gets the same events and keys and answers JSON valid against
:data:`~.schemas.REPORT_SCHEMA`; when the LLM fails (after its one repair round) the extractive report is
kept instead and the failure is counted, so one bad answer does not lose the build.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import prompts
from ..errors import LLMError
from ..llm import LLM
from .schemas import REPORT_SCHEMA

__all__ = ["Draft", "extractive_report", "full_content", "llm_report", "size_rating"]

log = logging.getLogger(__name__)

SUMMARY_SENTENCES = 3
MAX_EVENT_CHARS = 400


@dataclass
class Draft:
    """A report before it is embedded and stored."""

    kind: str
    title: str
    summary: str
    findings: list[dict[str, Any]]
    rating: float
    rating_explanation: str
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def full_content(self) -> str:
        return full_content(self.title, self.summary, self.findings)


def full_content(title: str, summary: str, findings: Sequence[dict[str, Any]]) -> str:
    """GraphRAG's full_content: the title, the summary and every finding as markdown."""
    parts = [f"# {title}", summary]
    for finding in findings:
        parts.append(f"## {finding['summary']}\n\n{finding.get('explanation', '')}".rstrip())
    return "\n\n".join(p for p in parts if p)


def size_rating(size: int, largest: int) -> float:
    """10 × ln(1 + size) / ln(1 + largest), rounded to 2 places (10 for the largest community)."""
    if largest <= 0:
        return 0.0
    return round(10.0 * math.log1p(size) / math.log1p(largest), 2)


def extractive_report(title: str, size: int, largest: int, top_keys: Sequence[dict[str, Any]],
                      events: Sequence[tuple[int, str, str]]) -> Draft:
    """The offline report of one community (see the module docstring)."""
    from ..text.summary import summarize
    from ..text.tokenize import split_sentences

    text = "\n".join(content.strip() for _, _, content in events if content.strip())
    summary = " ".join(summarize(text, sentences=SUMMARY_SENTENCES)) if text else ""
    sentences = split_sentences(text) if text else []
    best = max((float(k.get("score", 0.0)) for k in top_keys), default=0.0)
    findings: list[dict[str, Any]] = []
    for key in top_keys:
        name = str(key.get("name", ""))
        said = next((s for s in sentences if name and name.lower() in s.lower()), "")
        rating = round(10.0 * float(key.get("score", 0.0)) / best, 2) if best > 0 else 0.0
        findings.append({"summary": f"{key.get('type', '')}: {name}", "explanation": said, "rating": rating})
    return Draft("extractive", title or (summary[:80] if summary else "community"), summary or title, findings,
                 size_rating(size, largest),
                 f"extractive report: rated by size ({size} events; the largest of its level has {largest})")


def render_prompt(size: int, level: int, top_keys: Sequence[dict[str, Any]],
                  events: Sequence[tuple[int, str, str]], prompts_dir: Path | None = None) -> str:
    def cell(value: object) -> str:
        return " ".join(str(value).replace("|", " ").split())

    keys = "\n".join(f"{k.get('id')}|{cell(k.get('type', ''))}|{cell(k.get('name', ''))}|"
                     f"{float(k.get('score', 0.0)):.3f}" for k in top_keys) or "(none)"
    rows = "\n".join(f"{eid}|{cell(title)}|{cell(content)[:MAX_EVENT_CHARS]}" for eid, title, content in events)
    return prompts.render("graphrag_report", prompts_dir=prompts_dir, size=size, level=level, keys=keys,
                          events=rows or "(none)")


def llm_report(llm: LLM, size: int, level: int, top_keys: Sequence[dict[str, Any]],
               events: Sequence[tuple[int, str, str]], prompts_dir: Path | None = None) -> Draft | None:
    """The LLM's report, or None (logged) when the LLM fails or answers unusable JSON twice."""
    from ..answer.meter import MeteredLLM

    metered = MeteredLLM(llm)
    try:
        data = metered.complete_json(render_prompt(size, level, top_keys, events, prompts_dir),
                                     schema=REPORT_SCHEMA, purpose="graphrag_report")
    except LLMError as exc:
        log.warning("community report: the LLM failed (%s); keeping the extractive report", exc)
        return None
    record = metered.records[-1]
    findings = [{"summary": str(f["summary"]).strip(), "explanation": str(f.get("explanation", "")).strip(),
                 **({"rating": float(f["rating"])} if "rating" in f else {})} for f in data["findings"]]
    return Draft("llm", str(data["title"]).strip(), str(data["summary"]).strip(), findings,
                 float(data["rating"]), str(data["rating_explanation"]).strip(),
                 record.prompt_tokens, record.completion_tokens)
