"""The KG agent loop (../shared/seeds/kg-query-tools.md): a model asks ``<kg-query>get_relations("X")</kg-query>``
or ``<kg-query>get_triples("X", ["rel", ...])</kg-query>``, the answers come back in ``<information>``, until it
gives an ``<answer>`` or runs out of calls.

Kept from the seed: its regexes and error strings, the entity registry (lower-cased names and ids, both
directions; ``m.``/``g.``/``en.`` ids passed through), relations checked against what get_relations showed,
at most 4 relations per get_triples, the LLM filter above 10 candidates (shuffled, 3 attempts with
exponential backoff, falling back to the BM25 order), kg_top_k 10, max_calls 10, limit_per_relation 5, and a
trace of tool_call / kg_query / information / error entries.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import prompts
from ..errors import LLMError, SagError
from ..llm import LLM
from .backends import KGBackend, is_node_id
from .rdf import FREEBASE_NS

__all__ = ["AgentResult", "KGAgent", "normalize_relation", "parse_query"]

KG_QUERY = re.compile(r"<kg-query>((?:(?!<kg-query>).)*?)</kg-query>", re.DOTALL)
ANSWER = re.compile(r"<answer>((?:(?!<answer>).)*?)</answer>", re.DOTALL)
GET_RELATIONS = re.compile(r"get_relations\s*\(\s*([\"'])(.*?)\1\s*\)", re.DOTALL)
GET_TRIPLES = re.compile(r"get_triples\s*\(\s*([\"'])(.*?)\1\s*,\s*\[(.*?)\]\s*\)", re.DOTALL)
MAX_RELATIONS_PER_CALL = 4

def normalize_relation(relation: str, namespace: str = FREEBASE_NS) -> str:
    """A relation as the tools name it: ``ns:`` or the namespace IRI cut off, ``/`` read as ``.``."""
    relation = relation.strip().strip("<>")
    for prefix in ("ns:", namespace):
        if relation.startswith(prefix):
            relation = relation[len(prefix):].replace("/", ".")
    return relation


def parse_query(text: str) -> tuple[str, str, list[str]] | None:
    """("get_relations", entity, []) or ("get_triples", entity, relations: unquoted, normalized (see
    :func:`normalize_relation`), deduplicated, <= 4)."""
    text = text.strip()
    found = GET_RELATIONS.match(text)
    if found:
        return "get_relations", found.group(2).strip(), []
    found = GET_TRIPLES.match(text)
    if found:
        relations: list[str] = []
        for part in found.group(3).split(","):
            part = part.strip()
            if len(part) >= 2 and part[0] == part[-1] and part[0] in "\"'":
                relation = normalize_relation(part[1:-1])
                if relation not in relations:
                    relations.append(relation)
        return "get_triples", found.group(2).strip(), relations[:MAX_RELATIONS_PER_CALL]
    return None


@dataclass
class AgentResult:
    answer: str | None
    calls: int
    trace: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"answer": self.answer, "calls": self.calls, "trace": self.trace}


class KGAgent:
    """One question at a time: ``ask`` resets the registry, the seen relations and the trace."""

    def __init__(self, kg: KGBackend, llm: LLM, *, filter_llm: LLM | None = None, kg_top_k: int = 10,
                 max_calls: int = 10, limit_per_relation: int = 5, seed: int = 0, backoff: float = 1.0,
                 max_backoff: float = 4.0, prompts_dir: Path | None = None) -> None:
        self.kg, self.llm, self.filter_llm = kg, llm, filter_llm
        self.kg_top_k, self.max_calls, self.limit_per_relation = kg_top_k, max_calls, limit_per_relation
        self.seed, self.backoff, self.max_backoff = seed, backoff, max_backoff
        self.prompts_dir = prompts_dir
        self._reset([])

    def _reset(self, topic_entities: Sequence[tuple[str, str]]) -> None:
        self.trace: list[dict[str, Any]] = []
        self.registry: dict[str, str] = {}
        self.seen_relations: set[str] = set()
        self.last_relations_text = ""
        self.last_entities_text = ""
        self.flatten_map: dict[str, dict[str, Any]] = {}
        self.pending_flatten: dict[str, list[str]] = {}
        self.initial_names = [name for name, _ in topic_entities]
        for name, node in topic_entities:
            self.registry[name.lower()] = node
            self.registry[node] = name
        self.random = random.Random(self.seed)

    # -- the loop -------------------------------------------------------------------------------------------
    def ask(self, question: str, topic_entities: Sequence[tuple[str, str]] = ()) -> AgentResult:
        self._reset(topic_entities)
        system = prompts.render("kg_agent", prompts_dir=self.prompts_dir)
        transcript = f"Question: {question}\n"
        calls = 0
        while calls < self.max_calls:
            response = self.llm.complete_text(transcript, system=system, purpose="kg_agent")
            query = KG_QUERY.search(response)
            answer = ANSWER.search(response)
            if query and (answer is None or query.start() < answer.start()):
                calls += 1
                content = query.group(1).strip()
                self.trace.append({"type": "kg_query", "content": content, "call_number": calls})
                information = self.run_query(content, question)
                self.trace.append({"type": "information", "content": information, "call_number": calls})
                transcript += f"{response[: query.end()]}\n<information>{information}</information>\n"
                continue
            if answer:
                return AgentResult(answer.group(1).strip(), calls, self.trace)
            transcript += (f"{response}\nYour response did not contain a valid <kg-query> or <answer> tag. "
                           "Please continue by outputting a valid <kg-query> or <answer>.\n")
        self.trace.append({"type": "error", "content": f"max_calls ({self.max_calls}) reached"})
        force = prompts.render("kg_force_answer", prompts_dir=self.prompts_dir)
        response = self.llm.complete_text(f"{transcript}{force}", system=system, purpose="kg_agent")
        answer = ANSWER.search(response)
        return AgentResult(answer.group(1).strip() if answer else None, calls, self.trace)

    def run_query(self, query: str, question: str) -> str:
        """One ``<kg-query>``'s text as the ``<information>`` the model gets back (errors included)."""
        parsed = parse_query(query)
        if parsed is None:
            return f"[Could not parse query: {query}]"
        tool, entity, relations = parsed
        node = self.resolve(entity)
        if node is None:
            return self._entity_error(entity)
        asked = " ".join([question, *self.initial_names]).strip()
        try:
            if tool == "get_relations":
                return self._relations(entity, node, asked, question)
            for relation in relations:
                if self.seen_relations and relation not in self.seen_relations:
                    return self._relation_error(relation)
            return self._triples(entity, node, relations, asked, question)
        except SagError as exc:
            self.trace.append({"type": "error", "content": str(exc), "entity": entity})
            return f"[Query failed: {exc}]"

    # -- registry -------------------------------------------------------------------------------------------
    def resolve(self, entity: str) -> str | None:
        if not entity:
            return None
        if is_node_id(entity):
            return entity
        node = self.registry.get(entity.lower())
        if node is None:
            node = self.kg.resolve(entity)
            if node is not None:
                self.registry[entity.lower()] = node
                self.registry[node] = entity
        return node

    def _register(self, triples: list[dict[str, str]]) -> None:
        for t in triples:
            for name, node in ((t["head"], t["head_id"]), (t["tail"], t["tail_id"])):
                if name:
                    self.registry[name.lower()] = node
                self.registry[node] = name or node

    # -- the two tools --------------------------------------------------------------------------------------
    def _relations(self, entity: str, node: str, asked: str, question: str) -> str:
        found = [r for r, _ in self.kg.relations(node, question=asked, top_k=self.kg_top_k * 3,
                                                 extra_relations=self.pending_flatten.get(node))]
        if len(found) > 10:  # the filter sees them shuffled; its fallback is still the BM25 order
            found = self.filter_relations(found, question, entity, shuffle=True)
        found = found[: self.kg_top_k]
        text = "\n".join(found) if found else "No relations found."
        self.seen_relations.update(found)
        self.last_relations_text, self.last_entities_text = text, ""
        self.trace.append({"type": "tool_call", "tool": "get_relations",
                           "args": {"entity": entity, "entity_resolved": node},
                           "result_count": len(found), "tool_output": text})
        return text

    def _triples(self, entity: str, node: str, relations: list[str], asked: str, question: str) -> str:
        result = self.kg.triples(node, relations, question=asked, limit_per_relation=self.limit_per_relation,
                                 seed=self.seed, flatten_map=self.flatten_map)
        candidates = result.get("flatten_candidates", [])
        if candidates and self.filter_llm is not None:
            chosen = self.filter_relations(candidates, question, entity, limit=8)
            result = self.kg.triples(node, relations, question=asked, limit_per_relation=self.limit_per_relation,
                                     seed=self.seed, flatten_map=self.flatten_map, flatten_choice=chosen)
        triples, cvt_info = result["triples"], result["cvt_info"]
        for info in cvt_info:
            self.flatten_map[info["flatten_relation"]] = {k: info[k] for k in (
                "original_relation", "cvt_node_id", "cvt_relation", "direction")}
            pending = self.pending_flatten.setdefault(node, [])
            if info["flatten_relation"] not in pending:
                pending.append(info["flatten_relation"])
            self.seen_relations.add(info["flatten_relation"])
        self._register(triples)
        text = "\n".join(f"[{t['head']}, {t['relation']}, {t['tail']}]" for t in triples) or "No triples found."
        self.last_entities_text, self.last_relations_text = text, ""
        entry: dict[str, Any] = {"type": "tool_call", "tool": "get_triples",
                                 "args": {"entity": entity, "entity_resolved": node, "relations": relations},
                                 "result_count": len(triples), "tool_output": text}
        if cvt_info:
            entry["cvt_info"] = cvt_info
        self.trace.append(entry)
        return text

    # -- LLM filter -----------------------------------------------------------------------------------------
    def filter_relations(self, relations: list[str], question: str, entity: str, limit: int | None = None, *,
                         shuffle: bool = False) -> list[str]:
        """The filter LLM's choice among ``relations`` (ranked, best first), in its order; the first ``limit``
        of ``relations`` when it fails or answers nothing usable.  ``shuffle``: the LLM is shown them in a
        seeded random order (the seed's guard against position bias), the fallback keeps the ranking."""
        limit = limit or self.kg_top_k
        llm = self.filter_llm or self.llm
        shown = list(relations)
        if shuffle:
            self.random.shuffle(shown)
        prompt = prompts.render("kg_filter_relations", prompts_dir=self.prompts_dir, top_k=limit, question=question,
                                entity=entity, relations=json.dumps(shown, ensure_ascii=False))
        for attempt in range(3):
            try:
                response = llm.complete_text(prompt, purpose="kg_filter")
            except LLMError as exc:
                self.trace.append({"type": "error", "content": f"relation filter: {exc}", "attempt": attempt + 1})
                if attempt < 2:
                    time.sleep(min(self.backoff * 2 ** attempt, self.max_backoff))
                continue
            listed = re.search(r"\[.*?\]", response, re.DOTALL)
            try:
                picked = json.loads(listed.group(0)) if listed else None
            except ValueError:
                picked = None
            chosen = [r for r in picked if isinstance(r, str) and r in relations] if isinstance(picked, list) else []
            if chosen:
                return list(dict.fromkeys(chosen))[:limit]
            break  # an unusable answer is not retried (the seed's rule)
        return relations[:limit]

    def _entity_error(self, entity: str) -> str:
        message = "Invalid entity. Use an entity returned by the previous step and copy it exactly."
        if self.last_entities_text:
            message += "\n\nLast entities (names only):\n\n" + self.last_entities_text
        self.trace.append({"type": "error", "content": message, "entity": entity})
        return message

    def _relation_error(self, relation: str) -> str:
        message = (f"The relation '{relation}' is not in the latest predicate list. "
                   f"Choose predicates from the list below:\n\n{self.last_relations_text}")
        self.trace.append({"type": "error", "content": message, "relation": relation})
        return message
