"""The two tools over a knowledge graph in PostgreSQL (sag.kg_relations / sag.kg_triples)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

import psycopg

from ..db import kg as store
from ..db.connection import Database
from ..errors import error_for_sqlstate

__all__ = ["KGBackend", "PostgresKG", "is_node_id"]

ID_PREFIXES = ("m.", "g.", "en.")


def is_node_id(text: str) -> bool:
    """The seed's rule: strings starting with m., g. or en. are node ids, passed through unresolved."""
    return text.startswith(ID_PREFIXES)


class KGBackend(Protocol):
    """What the agent loop needs from a knowledge graph."""

    def resolve(self, entity: str) -> str | None:
        """The node id an entity name or id stands for, or None."""
        ...

    def relations(self, entity: str, *, question: str = "", top_k: int = 30,
                  extra_relations: Sequence[str] | None = None) -> list[tuple[str, float]]:
        ...

    def triples(self, entity: str, relations: Sequence[str], *, question: str = "", limit_per_relation: int = 5,
                seed: int = 0, flatten_map: dict[str, Any] | None = None,
                flatten_choice: Sequence[str] | None = None) -> dict[str, Any]:
        ...


@contextmanager
def _named_errors() -> Iterator[None]:
    """The SQL's 22023 / P0002 (bad parameter, unknown entity or source) as QueryError / NotFoundError."""
    try:
        yield
    except psycopg.Error as exc:
        error = error_for_sqlstate(exc.sqlstate, exc.diag.message_primary or str(exc))
        if error is None:
            raise
        raise error from exc


class PostgresKG:
    """The tools over sag.relations of one source (None: every source)."""

    def __init__(self, db: Database, source: str | None = None, whitelist: Sequence[str] | None = None) -> None:
        self.db = db
        self.source = source
        self.whitelist = whitelist

    def resolve(self, entity: str) -> str | None:
        with _named_errors(), self.db.session() as conn:
            return store.entity(conn, entity, self.source)

    def relations(self, entity: str, *, question: str = "", top_k: int = 30,
                  extra_relations: Sequence[str] | None = None) -> list[tuple[str, float]]:
        with _named_errors(), self.db.session() as conn:
            return store.relations(conn, entity, question=question, source=self.source, top_k=top_k,
                                   extra_relations=extra_relations, whitelist=self.whitelist)

    def triples(self, entity: str, relations: Sequence[str], *, question: str = "", limit_per_relation: int = 5,
                seed: int = 0, flatten_map: dict[str, Any] | None = None,
                flatten_choice: Sequence[str] | None = None) -> dict[str, Any]:
        with _named_errors(), self.db.session() as conn:
            return store.triples(conn, entity, relations, question=question, source=self.source,
                                 limit_per_relation=limit_per_relation, seed=seed, flatten_map=flatten_map or {},
                                 whitelist=self.whitelist, flatten_choice=flatten_choice)
