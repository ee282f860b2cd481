"""The MCP tools: each a thin call into ``SAG`` under the server's :class:`Policy`, returning plain JSON data.

A method's docstring is the tool's description and its annotated parameters are the tool's input schema, so
both are written for the LLM that reads them.  The MCP SDK is not imported here (see ``server.py``).
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field

from ..errors import NotFoundError, QueryError
from .policy import DEFAULT_SOURCE, Policy

if TYPE_CHECKING:
    from ..client import SAG

__all__ = ["READ_TOOLS", "WRITE_TOOLS", "SagTools"]

Query = Annotated[str, Field(min_length=1, description="The question or keywords, in natural language.")]
Sources = Annotated[list[str] | str | None, Field(description="A source name, or a list of them (see list_sources); "
                                                              "omitted: every source this server may read.")]
Source = Annotated[str | None, Field(description="A source name (see list_sources); omitted: every source this "
                                                 "server may read, where the call allows it.")]
TopN = Annotated[int, Field(ge=1, le=100, description="How many results.")]
Entity = Annotated[str, Field(min_length=1, description="An entity's name (any spelling variant) or, in an "
                                                        "imported knowledge graph, its id such as m.02mjmr.")]
Text = Annotated[str, Field(min_length=1, description="The text to store.")]
Uri = Annotated[str, Field(min_length=1, description="A document's uri (as search results and list_documents "
                                                     "name it).")]
OneSource = Annotated[str | None, Field(description="A source name (see list_sources); omitted: the server's "
                                                    "only source, or 'default'.")]

# Tool name -> method name; the read tools are always served, the write tools only with --allow-writes.
READ_TOOLS = ("list_sources", "search", "ask", "list_documents", "get_document", "get_chunk", "get_entity",
              "get_relations", "get_triples", "recall", "related")
WRITE_TOOLS = ("ingest_text", "delete_document", "remember", "forget")


class SagTools:
    """The tools of one MCP server: a SAG client and the policy that bounds it."""

    def __init__(self, sag: SAG, policy: Policy) -> None:
        self.sag, self.policy = sag, policy
        # A read-only server writes nothing, recall statistics included: a client could otherwise steer
        # recall-based eviction by searching (issue #36).
        if not policy.allow_writes:
            sag.record_recalls = False

    # -- reading ---------------------------------------------------------------------------------

    def list_sources(self) -> dict[str, Any]:
        """The sources (separate knowledge bases) this server can read, with their counts of documents, events
        and keys. Pass their names as `source` to the other tools."""
        return {"sources": [s for s in self.sag.sources() if self.policy.visible(s["name"])]}

    def search(self, query: Query, top_n: TopN = 10, source: Sources = None,
               strategy: Annotated[Literal["sag", "dataflow"], Field(
                   description="sag: multi-hop retrieval over the keys (entities, times, ...) the question "
                               "names. dataflow: activation spreading from event to event.")] = "sag",
               mode: Annotated[Literal["fast", "normal"], Field(
                   description="fast: no LLM. normal: the LLM rewrites the question and names its keys first "
                               "(needs SAG_LLM).")] = "fast") -> dict[str, Any]:
        """Search the knowledge base: the best chunks (document uri, chunk_id, text, score, the events and keys
        found in them) and the keys the retrieval went through. Cite chunk_id; read more with get_chunk or
        get_document."""
        result = self.sag.search(query, top_n=top_n, source=self.policy.many(source), strategy=strategy, mode=mode)
        data = result.to_dict()
        if result.rewrite is not None:
            data["rewrite"] = result.rewrite.to_dict()
        return data

    def ask(self, question: Query, top_n: TopN = 10, source: Sources = None,
            mode: Annotated[Literal["fast", "normal", "deep"], Field(
                description="fast: answer from one search. normal: the LLM rewrites the question first. deep: "
                            "sub-questions answered in turn.")] = "fast") -> dict[str, Any]:
        """Answer a question from the knowledge base: the answer, the chunks it cites and the evidence it was
        written from.  Without an LLM on the server (SAG_LLM), fast mode answers extractively: the facts of
        the retrieved passages that match the question, each cited (normal and deep need the LLM)."""
        return self.sag.ask(question, mode=mode, source=self.policy.many(source), top_n=top_n).to_dict()

    def list_documents(self, source: Sources = None,
                       uri_prefix: Annotated[str | None, Field(description="Only uris starting with this.")] = None,
                       limit: Annotated[int, Field(ge=1, le=1000)] = 100,
                       offset: Annotated[int, Field(ge=0)] = 0) -> dict[str, Any]:
        """The stored documents by source and uri, with their counts of chunks, events and keys."""
        found = self.sag.documents(source=self.policy.many(source), uri_prefix=uri_prefix, limit=limit,
                                   offset=offset)
        return {"documents": [d.to_dict() for d in found]}

    def get_document(self, uri: Uri, source: Source = None) -> dict[str, Any]:
        """One document with its chunks in reading order, each with its events and their keys."""
        return self.sag.document(uri, source=self._holder(uri, source)).to_dict()

    def get_chunk(self, chunk_id: Annotated[int, Field(ge=1, description="A chunk_id from search results.")]
                  ) -> dict[str, Any]:
        """One chunk with its text, its events and their keys, and its document's uri."""
        chunk = self.sag.chunk(chunk_id)
        if not self.policy.visible(chunk.source):
            raise NotFoundError(f"no chunk {chunk_id}")  # the library's words: nothing said of other sources
        return chunk.to_dict()

    def get_entity(self, name: Entity, source: Sources = None,
                   type: Annotated[str | None, Field(description="The key type, e.g. person, time.")] = None,
                   events: Annotated[int, Field(ge=0, le=200, description="How many of its events.")] = 20,
                   related: Annotated[int, Field(ge=0, le=200, description="How many related keys.")] = 20,
                   ) -> dict[str, Any]:
        """An entity (a key: person, place, time, ...) with the events that name it and the keys that share
        most events with it."""
        return self.sag.entity(name, source=self.policy.many(source), type=type, events=events,
                               related=related).to_dict()

    def get_relations(self, entity: Entity, question: Annotated[str, Field(
                          description="Rank the relations against this question.")] = "",
                      source: Source = None, top_k: TopN = 30) -> dict[str, Any]:
        """get_relations (knowledge-graph tool): an entity's relations, out and in, ranked against the question.
        Then call get_triples with the relevant ones."""
        found = self.sag.kg.relations(entity, question=question, source=self.policy.one(source), top_k=top_k)
        return {"entity": entity, "relations": [{"relation": r, "score": s} for r, s in found]}

    def get_triples(self, entity: Entity, relations: Annotated[list[str], Field(
                        min_length=1, description="Relation names from get_relations.")],
                    question: Annotated[str, Field(description="Rank flattened relations against it.")] = "",
                    source: Source = None,
                    limit_per_relation: Annotated[int, Field(ge=1, le=50)] = 5) -> dict[str, Any]:
        """get_triples (knowledge-graph tool): an entity's triples through the given relations, with
        intermediate (CVT) nodes flattened into two-hop relations."""
        return self.sag.kg.triples(entity, relations, question=question, source=self.policy.one(source),
                                   limit_per_relation=limit_per_relation)

    def recall(self, query: Query, source: Sources = None,
               channels: Annotated[Literal["hybrid", "knowledge", "graph"], Field(
                   description="knowledge: by keyword; graph: through the entities the keywords name and their "
                               "neighbours; hybrid: both.")] = "hybrid",
               strategy: Annotated[Literal["hybrid", "text_overlap", "graph_distance", "temporal",
                                           "reference_count"], Field(description="How to score.")] = "hybrid",
               top_n: TopN = 10, min_score: Annotated[float, Field(ge=0.0)] = 0.0) -> dict[str, Any]:
        """Memory recall: documents by keyword and through the knowledge graph, each with its score's breakdown
        (overlap, graph, temporal, reference)."""
        found = self.sag.recall(query, source=self.policy.many(source), channels=channels, strategy=strategy,
                                min_score=min_score, top_n=top_n, record=self.policy.allow_writes)
        return {"memories": [r.to_dict() for r in found]}

    def related(self, entity: Entity, depth: Annotated[int, Field(ge=1, le=6)] = 2,
                direction: Annotated[Literal["out", "in", "both"], Field(
                    description="Follow relations out of the entity, into it, or both.")] = "both",
                relation_types: Annotated[list[str] | None, Field(
                    description="Only these relation types (e.g. co_occurs, works_on).")] = None,
                source: OneSource = None, limit: TopN = 50) -> dict[str, Any]:
        """Entities related to an entity in the knowledge graph, up to `depth` hops, scored by graph distance."""
        where = self.policy.one(source) or DEFAULT_SOURCE
        found = self.sag.graph.get_related(entity, depth, direction, relation_types, limit=limit, source=where)
        return {"entity": entity, "source": where, "related": [asdict(r) for r in found]}

    # -- writing (only with --allow-writes) ------------------------------------------------------

    def ingest_text(self, text: Text, uri: Uri, title: str = "", source: OneSource = None) -> dict[str, Any]:
        """Store a document given as text (extracting its events and keys); an existing uri is replaced."""
        where = self.policy.write("ingest_text", source)
        report = self.sag.ingest_text(text, uri=uri, title=title, source=where)
        return {"uri": uri, "source": where, **report.to_dict()}

    def delete_document(self, uri: Uri, source: OneSource = None) -> dict[str, Any]:
        """Delete a document, its chunks and events, and any key left with no event."""
        where = self.policy.write("delete_document", source)
        return {"uri": uri, "source": where, "deleted": self.sag.delete_document(uri, source=where)}

    def remember(self, text: Text, title: str = "", source: OneSource = None) -> dict[str, Any]:
        """Remember a piece of text (a fact, a note, a conversation turn): stored as a document whose uri is
        returned, recallable with recall and search. The same text remembered twice is one memory."""
        text = text.strip()
        uri = "memory:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
        return self.ingest_text(text, uri, title, source)

    def forget(self, entity: Entity, source: OneSource = None) -> dict[str, Any]:
        """Forget an entity: it leaves the knowledge graph with its relations and tags (the documents stay;
        delete_document removes one)."""
        where = self.policy.write("forget", source)
        return {"entity": entity, "source": where, "forgotten": self.sag.graph.remove_entity(entity, source=where)}

    # -- helpers ---------------------------------------------------------------------------------

    def _holder(self, uri: str, asked: str | None) -> str | None:
        """The source to read ``uri`` from: the asked one, or on a server pinned to several sources the only
        pinned one holding it (the library would look in every source, and its errors would name them)."""
        if asked is not None or len(self.policy.sources) < 2:
            return self.policy.one(asked)
        holders = [d.source for d in self.sag.documents(source=list(self.policy.sources), uri_prefix=uri,
                                                        limit=None) if d.uri == uri]
        if not holders:
            raise NotFoundError(f"no document {uri!r} in sources {', '.join(self.policy.sources)}")
        if len(holders) > 1:
            raise QueryError(f"{uri!r} is in several sources ({', '.join(holders)}): name one")
        return holders[0]
