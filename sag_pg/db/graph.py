"""The knowledge graph's SQL (sql/idempotent/050-052): one typed function per SQL function, arguments by name.

Database errors the functions raise on purpose (22023 bad argument, P0002 no such entity) become
:class:`~sag_pg.errors.QueryError` / :class:`~sag_pg.errors.NotFoundError` here, where the SQL is.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg

from ..errors import error_for_sqlstate

__all__ = [
    "CandidateEvent",
    "Entity",
    "Related",
    "Relation",
    "add_entity",
    "add_relation",
    "entity_count_by_tag",
    "entity_id",
    "find_by_keywords",
    "find_tags",
    "get_entity",
    "get_related",
    "neighbourhood_edges",
    "rebuild_cooccurrence",
    "relation_candidates",
    "relation_counts",
    "relations_of",
    "remove_entity",
    "remove_relation",
    "set_entity_tags",
    "sql_errors",
]


@dataclass(frozen=True)
class Entity:
    id: int
    type: str
    name: str
    description: str | None = None
    event_count: int = 0
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class Related:
    """An entity that get_related reached: fewest hops, best weight product over those paths, their ratio."""

    id: int
    type: str
    name: str
    distance: int
    path_weight: float
    score: float


@dataclass(frozen=True)
class Relation:
    head_id: int
    head: str
    relation_type: str
    tail_id: int
    tail: str
    weight: float
    origin: str
    evidence_count: int = 1
    head_type: str = ""
    tail_type: str = ""


@contextmanager
def sql_errors() -> Iterator[None]:
    """The SQL functions' deliberate errors as SagErrors (others propagate unchanged)."""
    try:
        yield
    except psycopg.Error as exc:
        mapped = error_for_sqlstate(exc.sqlstate, (exc.diag.message_primary or str(exc)) if exc.diag else str(exc))
        if mapped is None:
            raise
        raise mapped from exc


def _one(conn: psycopg.Connection, query: str, params: Sequence[Any]) -> Any:
    with sql_errors():
        row = conn.execute(query, params).fetchone()  # type: ignore[arg-type]
    assert row is not None
    return row[0]


def add_entity(conn: psycopg.Connection, source_id: int, entity_type: str, name: str, normalized: str,
               description: str | None = None, embedding: npt.NDArray[np.floating] | None = None) -> int:
    """``sag.add_entity``: the key id of the (pinned) entity."""
    return int(_one(conn, "select sag.add_entity(p_source_id => %s, entity_type => %s, name => %s, "
                          "description => %s, normalized => %s, embedding => %s)",
                    [source_id, entity_type, name, description, normalized, embedding]))


def entity_id(conn: psycopg.Connection, source_id: int, normalized: str, entity_type: str | None = None) -> int | None:
    """``sag.entity_id``: the key of that normalized name (and type), None if there is none."""
    row = conn.execute("select sag.entity_id(p_source_id => %s, normalized => %s, entity_type => %s)",
                       [source_id, normalized, entity_type]).fetchone()
    return int(row[0]) if row and row[0] is not None else None


def get_entity(conn: psycopg.Connection, key_id: int) -> Entity | None:
    """``sag.get_entity``."""
    row = conn.execute("select id, type, name, description, event_count, tags from sag.get_entity(key_id => %s)",
                       [key_id]).fetchone()
    return Entity(int(row[0]), row[1], row[2], row[3], int(row[4]), tuple(row[5])) if row else None


def remove_entity(conn: psycopg.Connection, key_id: int) -> bool:
    """``sag.remove_entity``."""
    return bool(_one(conn, "select sag.remove_entity(key_id => %s)", [key_id]))


def add_relation(conn: psycopg.Connection, head_id: int, relation_type: str, tail_id: int, weight: float = 1.0,
                 origin: str = "call", event_id: int | None = None) -> int:
    """``sag.add_relation``: the relation id."""
    return int(_one(conn, "select sag.add_relation(head_key_id => %s, relation_type => %s, tail_key_id => %s, "
                          "weight => %s, origin => %s, event_id => %s)",
                    [head_id, relation_type, tail_id, weight, origin, event_id]))


def remove_relation(conn: psycopg.Connection, head_id: int, tail_id: int, relation_type: str | None = None) -> int:
    """``sag.remove_relation``: how many relations went."""
    return int(_one(conn, "select sag.remove_relation(head_key_id => %s, tail_key_id => %s, relation_type => %s)",
                    [head_id, tail_id, relation_type]))


def get_related(conn: psycopg.Connection, key_id: int, depth: int = 2, direction: str = "out",
                relation_types: Sequence[str] | None = None, limit: int = 100,
                source_id: int | None = None) -> list[Related]:
    """``sag.get_related`` (``source_id``: the key's source when known, so Citus asks only its worker)."""
    with sql_errors():
        rows = conn.execute(
            "select id, type, name, distance, path_weight, score from sag.get_related(key_id => %s, depth => %s, "
            "direction => %s, relation_types => %s, lim => %s, source_id => %s)",
            [key_id, depth, direction, list(relation_types) if relation_types else None, limit,
             source_id]).fetchall()
    return [Related(int(i), t, n, int(d), float(p), float(s)) for i, t, n, d, p, s in rows]


def find_by_keywords(conn: psycopg.Connection, keywords: Sequence[str], source_ids: Sequence[int] | None = None,
                     limit: int = 20) -> list[Entity]:
    """``sag.find_by_keywords``."""
    rows = conn.execute("select id, type, name, description, event_count from sag.find_by_keywords("
                        "keywords => %s, source_ids => %s, lim => %s)",
                        [list(keywords), list(source_ids) if source_ids is not None else None, limit]).fetchall()
    return [Entity(int(i), t, n, d, int(c)) for i, t, n, d, c in rows]


def relations_of(conn: psycopg.Connection, key_id: int, limit: int = 100) -> list[Relation]:
    """``sag.relations_of``."""
    rows = conn.execute("select head_key_id, head, relation_type, tail_key_id, tail, weight, origin, evidence_count "
                        "from sag.relations_of(key_id => %s, lim => %s)", [key_id, limit]).fetchall()
    return [Relation(int(h), hn, t, int(ti), tn, float(w), o, int(n)) for h, hn, t, ti, tn, w, o, n in rows]


def neighbourhood_edges(conn: psycopg.Connection, key_id: int, depth: int = 1, direction: str = "both",
                        relation_types: Sequence[str] | None = None, limit: int = 200) -> list[Relation]:
    """``sag.neighbourhood_edges``."""
    with sql_errors():
        rows = conn.execute(
            "select head_key_id, head, head_type, relation_type, tail_key_id, tail, tail_type, weight, origin "
            "from sag.neighbourhood_edges(key_id => %s, depth => %s, direction => %s, relation_types => %s, lim => %s)",
            [key_id, depth, direction, list(relation_types) if relation_types else None, limit]).fetchall()
    return [Relation(int(h), hn, t, int(ti), tn, float(w), o, head_type=ht, tail_type=tt)
            for h, hn, ht, t, ti, tn, tt, w, o in rows]


def relation_counts(conn: psycopg.Connection, source_ids: Sequence[int] | None = None) -> list[dict[str, Any]]:
    """``sag.relation_counts``: relations and evidence per origin and type."""
    rows = conn.execute("select origin, relation_type, relations, evidence from sag.relation_counts(source_ids => %s)",
                        [list(source_ids) if source_ids is not None else None]).fetchall()
    return [{"origin": o, "type": t, "relations": int(n), "evidence": int(e)} for o, t, n, e in rows]


def rebuild_cooccurrence(conn: psycopg.Connection, source_ids: Sequence[int] | None = None) -> int:
    """What ``sag.rebuild_cooccurrence`` does, one top-level ``sag.rebuild_source_cooccurrence`` call a source
    (NULL = every source): on a Citus coordinator and an autocommit connection each call runs whole on the
    worker holding the source, instead of the links travelling to the coordinator and back."""
    ids = [int(r[0]) for r in conn.execute(
        "select s.id from sag.sources s where %(ids)s::bigint[] is null or s.id = any(%(ids)s::bigint[]) "
        "order by s.id", {"ids": list(source_ids) if source_ids is not None else None}).fetchall()]
    return sum(int(_one(conn, "select sag.rebuild_source_cooccurrence(%s)", [i])) for i in ids)


def find_tags(conn: psycopg.Connection, source_id: int, prefix: str = "", limit: int = 50) -> list[str]:
    """``sag.find_tags``."""
    rows = conn.execute("select sag.find_tags(p_source_id => %s, prefix => %s, lim => %s)",
                        [source_id, prefix, limit]).fetchall()
    return [r[0] for r in rows]


def entity_count_by_tag(conn: psycopg.Connection, source_id: int, tag: str) -> int:
    """``sag.entity_count_by_tag``."""
    return int(_one(conn, "select sag.entity_count_by_tag(p_source_id => %s, tag => %s)", [source_id, tag]))


def set_entity_tags(conn: psycopg.Connection, key_id: int, tags: Sequence[str],
                    relevances: Sequence[float] | None = None, max_tags: int = 8) -> int:
    """``sag.set_entity_tags``: how many tags the entity kept."""
    return int(_one(conn, "select sag.set_entity_tags(key_id => %s, tags => %s, relevances => %s::real[], "
                          "max_tags => %s)",
                    [key_id, list(tags), list(relevances) if relevances is not None else None, max_tags]))


@dataclass(frozen=True)
class CandidateEvent:
    event_id: int
    uri: str
    content: str
    keys: dict[str, int]   # name -> key id


def relation_candidates(conn: psycopg.Connection, source_id: int, uris: Sequence[str] | None = None,
                        limit: int = 100) -> list[CandidateEvent]:
    """``sag.relation_candidates``."""
    rows = conn.execute("select event_id, uri, content, key_ids, key_names from sag.relation_candidates("
                        "p_source_id => %s, uris => %s, lim => %s)",
                        [source_id, list(uris) if uris is not None else None, limit]).fetchall()
    return [CandidateEvent(int(e), u, c, dict(zip(names, (int(i) for i in ids), strict=True)))
            for e, u, c, ids, names in rows]
