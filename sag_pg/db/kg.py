"""The knowledge-graph tools' SQL (sql/idempotent/060-062): one typed function per SQL function."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

__all__ = ["analyze_graph", "assemble_triples", "choose_relations", "copy_import_rows", "entity", "hidden_relations",
           "load_batch", "new_batch", "rank_texts", "relations", "set_whitelist", "sources_holding", "triples"]

_COPY_ROWS = "copy sag.kg_import_rows (batch, line, subject, predicate, object, kind, lang) from stdin"


def new_batch(conn: psycopg.Connection) -> int:
    """A fresh batch number for sag.kg_import_rows."""
    row = conn.execute("select nextval('sag.kg_import_batches')").fetchone()
    assert row is not None
    return int(row[0])


def copy_import_rows(conn: psycopg.Connection, batch: int,
                     rows: Iterable[tuple[int, str, str, str, str, str]]) -> None:
    """COPY parsed triples (line, subject, predicate, object, kind, lang) into sag.kg_import_rows."""
    with conn.cursor() as cur, cur.copy(_COPY_ROWS) as copy:
        for line, subject, predicate, obj, kind, lang in rows:
            copy.write_row((batch, line, subject, predicate, obj, kind, lang))


def load_batch(conn: psycopg.Connection, batch: int, source_id: int, relation_weight: float = 1.0) -> dict[str, int]:
    """sag.kg_load_batch: {triples, keys, names, relations} of one batch."""
    row = conn.execute("select sag.kg_load_batch(batch_id => %s::bigint, target_source => %s::bigint, relation_weight => %s::real)",
                       [batch, source_id, relation_weight]).fetchone()
    assert row is not None
    return {k: int(v) for k, v in row[0].items()}


def analyze_graph(conn: psycopg.Connection) -> None:
    """ANALYZE the tables an import fills."""
    conn.execute("analyze sag.keys, sag.relations, sag.kg_names")


def set_whitelist(conn: psycopg.Connection, source_id: int, relations: Sequence[str] | None) -> None:
    """Store (or, with None, remove) the relation whitelist of a source (config kg_relation_whitelist)."""
    if relations is None:
        conn.execute("update sag.sources set config = config - 'kg_relation_whitelist' where id = %s", [source_id])
    else:
        conn.execute("update sag.sources set config = config || jsonb_build_object('kg_relation_whitelist', %s::jsonb)"
                     " where id = %s", [Jsonb(list(relations)), source_id])


def entity(conn: psycopg.Connection, name: str, source: str | None) -> str | None:
    """sag.kg_entity: the node id (its key's name) an entity string stands for, or None."""
    row = conn.execute("select k.name from sag.keys k where k.id = sag.kg_entity(entity => %s, source => %s)",
                       [name, source]).fetchone()
    return None if row is None else str(row[0])


def sources_holding(conn: psycopg.Connection, name: str) -> list[str]:
    """The sources, by name, in which sag.kg_entity finds a node for ``name``."""
    rows = conn.execute("select s.name from sag.sources s where sag.kg_entity(entity => %s, source => s.name) "
                        "is not null order by s.name", [name]).fetchall()
    return [str(r) for (r,) in rows]


def hidden_relations(conn: psycopg.Connection, name: str, source: str | None, limit: int = 5) -> list[str]:
    """The relations of the node sag.kg_entity finds for ``name`` that the tools never show because they were
    stored whole (their IRI was outside the import's namespace, e.g. http://xmlns.com/foaf/0.1/knows)."""
    rows = conn.execute(
        "with node as materialized (select sag.kg_entity(entity => %s, source => %s) as id) "
        "select relation_type from (select r.relation_type from sag.relations r, node where r.head_key_id = node.id "
        "union select r.relation_type from sag.relations r, node where r.tail_key_id = node.id) found "
        "where position(':' in relation_type) > 0 order by 1 limit %s", [name, source, limit]).fetchall()
    return [str(r) for (r,) in rows]


def relations(conn: psycopg.Connection, name: str, *, question: str, source: str | None, top_k: int,
              extra_relations: Sequence[str] | None, whitelist: Sequence[str] | None) -> list[tuple[str, float]]:
    """sag.kg_relations: (relation, BM25 score), best first."""
    rows = conn.execute(
        "select relation, score from sag.kg_relations(entity => %s, question => %s, source => %s, top_k => %s, "
        "extra_relations => %s::text[], whitelist => %s::text[])",
        [name, question, source, top_k, list(extra_relations) if extra_relations is not None else None,
         list(whitelist) if whitelist is not None else None]).fetchall()
    return [(str(r), float(s)) for r, s in rows]


def triples(conn: psycopg.Connection, name: str, relation_names: Sequence[str], *, question: str,
            source: str | None, limit_per_relation: int, seed: int, flatten_map: dict[str, Any],
            whitelist: Sequence[str] | None, flatten_choice: Sequence[str] | None) -> dict[str, Any]:
    """sag.kg_triples: {entity, triples, cvt_info, flatten_candidates}."""
    row = conn.execute(
        "select sag.kg_triples(entity => %s, relations => %s::text[], question => %s, source => %s, "
        "limit_per_relation => %s, seed => %s, flatten_map => %s, whitelist => %s::text[], "
        "flatten_choice => %s::text[])",
        [name, list(relation_names), question, source, limit_per_relation, seed, Jsonb(flatten_map),
         list(whitelist) if whitelist is not None else None,
         list(flatten_choice) if flatten_choice is not None else None]).fetchone()
    assert row is not None
    return dict(row[0])


def choose_relations(conn: psycopg.Connection, candidates: Sequence[str], *, question: str, top_k: int,
                     extra_relations: Sequence[str] | None,
                     whitelist: Sequence[str] | None) -> list[tuple[str, float]]:
    """sag.kg_choose_relations over relations a SPARQL endpoint returned."""
    rows = conn.execute(
        "select relation, score from sag.kg_choose_relations(relations => %s::text[], question => %s, "
        "top_k => %s, extra_relations => %s::text[], whitelist => %s::text[])",
        [list(candidates), question, top_k, list(extra_relations) if extra_relations is not None else None,
         list(whitelist) if whitelist is not None else None]).fetchall()
    return [(str(r), float(s)) for r, s in rows]


def assemble_triples(conn: psycopg.Connection, *, entity_id: str, entity_name: str, relation_names: Sequence[str],
                     hop1: list[dict[str, str]], hop2: list[dict[str, str]], flatten_map: dict[str, Any],
                     question: str, limit_per_relation: int, seed: int, whitelist: Sequence[str] | None,
                     flatten_choice: Sequence[str] | None) -> dict[str, Any]:
    """sag.kg_assemble_triples over rows a SPARQL endpoint returned."""
    row = conn.execute(
        "select sag.kg_assemble_triples(entity_id => %s, entity_name => %s, relations => %s::text[], hop1 => %s, "
        "hop2 => %s, flatten_map => %s, question => %s, limit_per_relation => %s, seed => %s, "
        "whitelist => %s::text[], flatten_choice => %s::text[])",
        [entity_id, entity_name, list(relation_names), Jsonb(hop1), Jsonb(hop2), Jsonb(flatten_map), question,
         limit_per_relation, seed, list(whitelist) if whitelist is not None else None,
         list(flatten_choice) if flatten_choice is not None else None]).fetchone()
    assert row is not None
    return dict(row[0])


def rank_texts(conn: psycopg.Connection, texts: Sequence[str], query: str) -> list[tuple[str, float]]:
    """sag.kg_rank_texts: (text, BM25 score), best first."""
    rows = conn.execute("select text, score from sag.kg_rank_texts(texts => %s::text[], query => %s)",
                        [list(texts), query]).fetchall()
    return [(str(t), float(s)) for t, s in rows]
