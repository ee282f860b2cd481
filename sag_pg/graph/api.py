"""``SAG.graph``: the seed's KnowledgeGraph interface over sag-pg's keys and relations, per source.

Entities are named as ingestion names keys (``normalize_key``), optionally with their type; an id works too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg

from ..db import catalog
from ..db import graph as g
from ..db import ingest as store
from ..errors import NotFoundError, QueryError
from ..text.normalize import normalize_key

if TYPE_CHECKING:
    from ..db.connection import Database
    from ..embedders import Embedder
    from ..llm import LLM

__all__ = ["KnowledgeGraph", "TagConstraints"]

EntityRef = int | str


@dataclass(frozen=True)
class TagConstraints:
    max_tags_per_entity: int = 8


class KnowledgeGraph:
    """Entities, typed relations, traversal and tags of one database (each call names its source)."""

    def __init__(self, db: Database, embedder: Callable[[], Embedder], llm: Callable[[], LLM | None],
                 prompts_dir: Path | None = None, constraints: TagConstraints | None = None) -> None:
        self._db, self._embedder, self._llm, self._prompts_dir = db, embedder, llm, prompts_dir
        self.constraints = constraints or TagConstraints()

    def tag_constraints(self) -> TagConstraints:
        return self.constraints

    @contextmanager
    def _write(self) -> Iterator[psycopg.Connection]:
        with self._db.transaction() as conn:
            yield conn

    @contextmanager
    def _read(self) -> Iterator[psycopg.Connection]:
        with self._db.connect(autocommit=True) as conn:
            yield conn

    @staticmethod
    def _source(conn: psycopg.Connection, source: str, *, create: bool = False) -> int:
        found = store.ensure_source(conn, source) if create else catalog.source_id(conn, source)
        if found is None:
            raise NotFoundError(f"no source named {source!r}")
        return found

    def _entity(self, conn: psycopg.Connection, ref: EntityRef, source: str, entity_type: str | None = None) -> int:
        if isinstance(ref, int):
            return ref
        normalized = normalize_key(ref)
        found = g.entity_id(conn, self._source(conn, source), normalized, entity_type) if normalized else None
        if found is None:
            raise NotFoundError(f"no entity named {ref!r} in source {source!r}")
        return found

    # -- entities ------------------------------------------------------------------------------------

    def add_entity(self, name: str, entity_type: str = "entity", *, description: str | None = None,
                   tags: Sequence[str] | None = None, source: str = "default") -> int:
        """Add (or describe) an entity; it is kept when its last event goes. Returns its id."""
        normalized = normalize_key(name)
        if not normalized:
            raise QueryError(f"entity name {name!r} has no letter or digit")
        embedding = self._embedder().embed([name.strip()])[0]
        with self._write() as conn:
            key_id = g.add_entity(conn, self._source(conn, source, create=True), entity_type, name, normalized,
                                  description, embedding)
            if tags:
                g.set_entity_tags(conn, key_id, tags, max_tags=self.constraints.max_tags_per_entity)
        return key_id

    def get_entity(self, ref: EntityRef, *, source: str = "default") -> g.Entity | None:
        with self._read() as conn:
            try:
                return g.get_entity(conn, self._entity(conn, ref, source))
            except NotFoundError:
                return None

    def remove_entity(self, ref: EntityRef, *, source: str = "default") -> bool:
        with self._write() as conn:
            try:
                key_id = self._entity(conn, ref, source)
            except NotFoundError:
                return False
            return g.remove_entity(conn, key_id)

    # -- relations -----------------------------------------------------------------------------------

    def add_relation(self, head: EntityRef, relation_type: str, tail: EntityRef, weight: float = 1.0, *,
                     source: str = "default") -> int:
        with self._write() as conn:
            return g.add_relation(conn, self._entity(conn, head, source), relation_type,
                                  self._entity(conn, tail, source), weight)

    def remove_relation(self, head: EntityRef, tail: EntityRef, relation_type: str | None = None, *,
                        source: str = "default") -> int:
        with self._write() as conn:
            return g.remove_relation(conn, self._entity(conn, head, source), self._entity(conn, tail, source),
                                     relation_type)

    def relations(self, ref: EntityRef, *, limit: int = 100, source: str = "default") -> list[g.Relation]:
        with self._read() as conn:
            return g.relations_of(conn, self._entity(conn, ref, source), limit)

    def relation_counts(self, *, source: str | None = "default") -> list[dict[str, Any]]:
        with self._read() as conn:
            return g.relation_counts(conn, None if source is None else [self._source(conn, source)])

    def rebuild_cooccurrence(self, *, source: str | None = None) -> int:
        """Recompute the co-occurrence relations (a database ingested before they existed): one transaction a
        source (on Citus, each on the worker holding it)."""
        with self._db.connect(autocommit=True) as conn:
            return g.rebuild_cooccurrence(conn, None if source is None else [self._source(conn, source)])

    def get_related(self, ref: EntityRef, depth: int = 2, direction: str = "out",
                    relation_types: Sequence[str] | None = None, *, limit: int = 100,
                    source: str = "default") -> list[g.Related]:
        with self._read() as conn:
            # A name is looked up in the source, so the key's source is known; an id may be any source's.
            return g.get_related(conn, self._entity(conn, ref, source), depth, direction, relation_types, limit,
                                 source_id=None if isinstance(ref, int) else self._source(conn, source))

    def find_by_keywords(self, keywords: Sequence[str], *, limit: int = 20,
                         source: str | None = "default") -> list[g.Entity]:
        with self._read() as conn:
            return g.find_by_keywords(conn, keywords, None if source is None else [self._source(conn, source)], limit)

    def export_graphml(self, ref: EntityRef, path: str | Path, *, depth: int = 1, direction: str = "both",
                       relation_types: Sequence[str] | None = None, source: str = "default") -> Path:
        from .export import write_graphml

        with self._read() as conn:
            key_id = self._entity(conn, ref, source)
            edges = g.neighbourhood_edges(conn, key_id, depth, direction, relation_types)
        return write_graphml(edges, path, center=key_id)

    def extract_relations(self, *, uris: Sequence[str] | None = None, batch_size: int = 8, limit: int = 200,
                          source: str = "default") -> dict[str, int]:
        """Ask the LLM for typed relations between the keys of events that have none from it yet (a call per
        ``batch_size`` events); valid ones are stored with origin llm and their event. Needs an LLM."""
        from .extract import extract_relations

        llm = self._llm()
        if llm is None:
            raise QueryError("relation extraction needs an LLM: set SAG_LLM (e.g. openai:gpt-4o-mini)")
        with self._read() as conn:
            events = g.relation_candidates(conn, self._source(conn, source), uris, limit)
        counts = {"events": len(events), "relations": 0, "rejected": 0}
        for start in range(0, len(events), batch_size):
            batch = extract_relations(llm, events[start:start + batch_size], prompts_dir=self._prompts_dir)
            counts["rejected"] += len(batch.rejected)
            with self._write() as conn:
                for r in batch.relations:
                    g.add_relation(conn, r.head_id, r.relation_type, r.tail_id, r.weight, "llm", r.event_id)
                    counts["relations"] += 1
        return counts

    # -- tags ----------------------------------------------------------------------------------------

    def find_tags(self, prefix: str = "", *, limit: int = 50, source: str = "default") -> list[str]:
        with self._read() as conn:
            return g.find_tags(conn, self._source(conn, source), prefix, limit)

    def entity_count_by_tag(self, tag: str, *, source: str = "default") -> int:
        with self._read() as conn:
            return g.entity_count_by_tag(conn, self._source(conn, source), tag)

    def set_entity_tags(self, ref: EntityRef, tags: Sequence[str], relevances: Sequence[float] | None = None, *,
                        source: str = "default") -> int:
        """Replace the entity's tags, reusing existing ones (seed §1.3), keeping the most relevant
        ``max_tags_per_entity``. Returns how many it kept."""
        with self._write() as conn:
            return g.set_entity_tags(conn, self._entity(conn, ref, source), tags, relevances,
                                     self.constraints.max_tags_per_entity)
