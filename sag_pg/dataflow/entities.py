"""The question's entities for DataFlow (seed §1.3 step 1), offline: the rule extractor run on the question.

The seed has an LLM name the query's typed entities.  Offline, the rule extractor that types the keys of the
stored events (persons, places, organizations, topics, times; jieba's tags for Chinese) reads the question the
same way, so its entities carry the types the stored keys have.  sag.dataflow_query_entities matches these
names to stored keys and adds what SQL finds by itself (named keys, term keys, nearest keys); names given
by the caller (``keys=``, normal mode's LLM rewrite) come first.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from ..extract.rules import RuleExtractor
from ..text.normalize import normalize_key
from ..types import EventDraft

__all__ = ["query_entities"]


@lru_cache(maxsize=1)
def _extractor() -> RuleExtractor:
    return RuleExtractor()


def query_entities(question: str, given: Sequence[str] | None = None) -> tuple[list[str], list[str]]:
    """(normalized names, types) of the question's entities; ``given`` names have no type ('' = any)."""
    names: list[str] = []
    types: list[str] = []
    for name in given or ():
        if name.strip():
            names.append(normalize_key(name))
            types.append("")
    for key in _extractor().keys(EventDraft(title=question, content=question)):
        if isinstance(key.value, str) and key.name.strip():
            names.append(normalize_key(key.name))
            types.append(key.type)
    return names, types
