"""Extraction answers kept between runs (issue #37 item 13): a document's chunks are answered one call at a time,
and on a CPU model a 2.2 KB document took 72 min in 18 calls; one failed call threw all of them away.

:class:`CachedLLM` wraps an :class:`~sag_pg.llm.base.LLM`: an extraction call (summary, events, keys, relations)
whose exact request was answered before gets that answer back without calling the model; a new answer is kept at
once.  The key is a digest of the model, the purpose, the system message, the rendered prompt and the JSON
schema: the prompt holds the chunk's text and the prompt template, so another text or another prompt version
asks again.  A retried ingest of the document therefore resumes where the failed call stopped.  The store is a
plain object (``get``/``put``; ``sag_pg.db.llm_answers.AnswerStore`` keeps them in ``sag.llm_answers``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Protocol

from .base import LLM, Usage
from .jsonparse import JSONAnswerError, parse_answer

# The calls of ingestion: the same request always wants the same answer.  (Answers, rewrites and titles depend
# on the state of the knowledge base and are asked afresh.)
EXTRACTION_PURPOSES = frozenset({"summary", "extract_events", "extract_keys", "extract_relations"})
_VERSION = "1"  # of the key's layout


class AnswerStore(Protocol):
    def get(self, key: str) -> Any | None: ...

    def put(self, key: str, *, purpose: str, model: str, answer: Any) -> None: ...


def answer_key(model: str, purpose: str, system: str | None, prompt: str, schema: Mapping[str, Any] | None) -> str:
    parts = [_VERSION, model, purpose, system or "", prompt,
             json.dumps(schema, sort_keys=True, ensure_ascii=False) if schema is not None else "text"]
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()


class CachedLLM:
    """``llm`` with its extraction answers kept in ``store`` (see the module docstring); ``hits`` counts the
    answers served from the store.  Everything else is ``llm``'s own."""

    def __init__(self, llm: LLM, store: AnswerStore, *, purposes: frozenset[str] = EXTRACTION_PURPOSES) -> None:
        self.llm = llm
        self.store = store
        self.purposes = purposes
        self.name = llm.name
        self.hits = 0

    @property
    def usage(self) -> Usage:
        return self.llm.usage

    def __getattr__(self, name: str) -> Any:
        if name in ("llm", "store", "purposes"):  # not set yet (unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.llm, name)

    def complete_json(self, prompt: str, *, schema: Mapping[str, Any], system: str | None = None,
                      purpose: str = "") -> Any:
        if purpose not in self.purposes:
            return self.llm.complete_json(prompt, schema=schema, system=system, purpose=purpose)
        key = answer_key(self.name, purpose, system, prompt, schema)
        kept = self.store.get(key)
        if kept is not None:
            try:
                answer = parse_answer(json.dumps(kept), schema)  # a kept answer is checked like a new one
                self.hits += 1
                return answer
            except JSONAnswerError:
                pass
        answer = self.llm.complete_json(prompt, schema=schema, system=system, purpose=purpose)
        self.store.put(key, purpose=purpose, model=self.name, answer=answer)
        return answer

    def complete_text(self, prompt: str, *, system: str | None = None, purpose: str = "") -> str:
        if purpose not in self.purposes:
            return self.llm.complete_text(prompt, system=system, purpose=purpose)
        key = answer_key(self.name, purpose, system, prompt, None)
        kept = self.store.get(key)
        if isinstance(kept, str):
            self.hits += 1
            return kept
        answer = self.llm.complete_text(prompt, system=system, purpose=purpose)
        self.store.put(key, purpose=purpose, model=self.name, answer=answer)
        return answer
