"""The two ways a document becomes events and keys: the offline rules, or an LLM with pre-retrieval."""

from __future__ import annotations

from typing import Protocol

from ..llm.base import LLM
from ..text.summary import summarize
from ..types import Chunk, EventDraft, KeyDraft, PreRetrieval


class Extractor(Protocol):
    name: str
    uses_pre_retrieval: bool

    def summary(self, text: str, *, title: str) -> str: ...

    def events(self, chunk: Chunk, *, summary: str, doc_title: str) -> list[EventDraft]: ...

    def keys(self, event: EventDraft, *, summary: str, doc_title: str, chunk_title: str,
             pre: PreRetrieval | None) -> list[KeyDraft]: ...


class RulesExtractor:
    """Offline: sumy sentences as the summary, sentence-level events, rule-based typed keys."""

    # Part of every document's content hash: bump it when the rules change what they extract, so
    # re-ingesting an unchanged file re-extracts it (v2: title disambiguators, Latin diacritics folded;
    # v3: the entity gold set's rules — roles and generic actions dropped, more heads, mixed script).
    name = "rules-v3"
    uses_pre_retrieval = False

    def __init__(self, summary_sentences: int = 3) -> None:
        from ..extract.rules import RuleExtractor

        self._rules = RuleExtractor()
        self._summary_sentences = summary_sentences

    def summary(self, text: str, *, title: str) -> str:
        return " ".join(summarize(text, sentences=self._summary_sentences))

    def events(self, chunk: Chunk, *, summary: str, doc_title: str) -> list[EventDraft]:
        return self._rules.events(chunk, summary=summary, doc_title=doc_title)

    def keys(self, event: EventDraft, *, summary: str, doc_title: str, chunk_title: str,
             pre: PreRetrieval | None) -> list[KeyDraft]:
        return self._rules.keys(event, summary=summary, doc_title=doc_title, chunk_title=chunk_title)


class LLMExtractorAdapter:
    """With an LLM: sumy picks sentences and the LLM condenses them; events and keys come from the LLM,
    keys with the pre-retrieved reference lists of sag-algorithm §1.3."""

    uses_pre_retrieval = True

    def __init__(self, llm: LLM, *, prompts_dir: object = None, summary_sentences: int = 5) -> None:
        from ..extract.llm_extractor import LLMExtractor

        self.name = f"llm:{llm.name}"
        self._llm = LLMExtractor(llm, prompts_dir=prompts_dir)  # type: ignore[arg-type]
        self._summary_sentences = summary_sentences

    def summary(self, text: str, *, title: str) -> str:
        sentences = summarize(text, sentences=self._summary_sentences)
        return self._llm.summarize(sentences, title=title) if sentences else ""

    def events(self, chunk: Chunk, *, summary: str, doc_title: str) -> list[EventDraft]:
        return self._llm.events(chunk, summary=summary, doc_title=doc_title)

    def keys(self, event: EventDraft, *, summary: str, doc_title: str, chunk_title: str,
             pre: PreRetrieval | None) -> list[KeyDraft]:
        assert pre is not None, "the LLM extractor needs pre-retrieval"
        return self._llm.keys(event, summary=summary, pre=pre)
