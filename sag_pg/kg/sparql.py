"""The two tools over a SPARQL endpoint (Virtuoso, Oxigraph, ...): the seed's SPARQL fetches the rows, the
same SQL logic as for PostgreSQL (sag.kg_choose_relations, sag.kg_assemble_triples) filters, ranks and
flattens them.

The queries are the seed's with full IRIs in place of ``ns:`` prefixed names (Oxigraph 0.5 rejects a local
name with two dots, ``ns:people.person.spouse_s``; a full IRI means the same on every engine) and an ORDER BY
before each LIMIT, so that a limit cuts the same rows as sag.kg_relations / sag.kg_triples do (by id).  The
endpoint is spoken to with the SPARQL 1.1 protocol (POST, JSON results) through the standard library.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from typing import Any

from ..db import kg as store
from ..db.connection import Database
from ..errors import QueryError
from .backends import is_node_id
from .rdf import FREEBASE_NS

__all__ = ["SparqlKG"]

_NAME = "type.object.name"


class SparqlKG:
    """get_relations / get_triples over a SPARQL endpoint; ``db`` runs the shared SQL logic."""

    def __init__(self, endpoint: str, db: Database, *, namespace: str = FREEBASE_NS,
                 whitelist: Sequence[str] | None = None, timeout: float = 120.0, max_relations: int = 100) -> None:
        self.endpoint = endpoint
        self.db = db
        self.namespace = namespace
        self.whitelist = whitelist
        self.timeout = timeout
        self.max_relations = max_relations

    # -- the endpoint ---------------------------------------------------------------------------------------
    def select(self, query: str) -> list[dict[str, dict[str, str]]]:
        """Run a SELECT query; its bindings (SPARQL 1.1 JSON results)."""
        body = urllib.parse.urlencode({"query": query}).encode()
        request = urllib.request.Request(self.endpoint, data=body, method="POST", headers={
            "Content-Type": "application/x-www-form-urlencoded", "Accept": "application/sparql-results+json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                payload = json.load(response)
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace")[:300]
            raise QueryError(f"SPARQL endpoint {self.endpoint} answered {exc.code}: {detail}") from exc
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            raise QueryError(f"SPARQL endpoint {self.endpoint} cannot be reached: {exc}") from exc
        except ValueError as exc:
            raise QueryError(f"SPARQL endpoint {self.endpoint} did not answer JSON results: {exc}") from exc
        return list(payload.get("results", {}).get("bindings", []))

    def _iri(self, node_id: str) -> str:
        if node_id.startswith("_:"):
            raise QueryError(f"blank node {node_id} cannot be named in a SPARQL query")
        iri = node_id if "://" in node_id else self.namespace + node_id
        return "<" + iri.replace(">", "%3E").replace(" ", "%20") + ">"

    def _node(self, term: dict[str, str]) -> str:
        value = term.get("value", "")
        if term.get("type") == "uri" and value.startswith(self.namespace):
            return value[len(self.namespace):].replace("/", ".")
        if term.get("type") == "bnode":
            return "_:" + value
        return value

    def _relations_of(self, node_id: str, direction: str, limit: int) -> list[str]:
        pattern = f"{self._iri(node_id)} ?relation ?tail" if direction == "out" else f"?head ?relation {self._iri(node_id)}"
        rows = self.select(f"""SELECT DISTINCT ?relation WHERE {{
    {pattern} .
    FILTER(isIRI(?relation))
    FILTER(STRSTARTS(STR(?relation), "{self.namespace}"))
}} ORDER BY ?relation LIMIT {limit}""")
        return [self._node(b["relation"]) for b in rows if "relation" in b]

    def _neighbours(self, node_id: str, relation: str, direction: str, limit: int) -> list[dict[str, str]]:
        name = self._iri(_NAME)
        pattern = (f"{self._iri(node_id)} {self._iri(relation)} ?node" if direction == "out"
                   else f"?node {self._iri(relation)} {self._iri(node_id)}")
        rows = self.select(f"""SELECT ?node (SAMPLE(?name_en) as ?preferred_name) (SAMPLE(?name_any) as ?fallback_name) WHERE {{
    {pattern} .
    OPTIONAL {{ ?node {name} ?name_en . FILTER(LANGMATCHES(LANG(?name_en), 'en')) }}
    OPTIONAL {{ ?node {name} ?name_any . }}
}} GROUP BY ?node ORDER BY ?node LIMIT {limit}""")
        return [{"id": self._node(b["node"]),
                 "name": b.get("preferred_name", {}).get("value", "") or b.get("fallback_name", {}).get("value", "")}
                for b in rows if "node" in b]

    # -- the tools ------------------------------------------------------------------------------------------
    def resolve(self, entity: str) -> str | None:
        if is_node_id(entity):
            return entity
        literal = entity.replace("\\", "\\\\").replace('"', '\\"')
        rows = self.select(f"""SELECT ?e WHERE {{
    ?e {self._iri(_NAME)} ?n .
    FILTER(LCASE(STR(?n)) = LCASE("{literal}"))
}} ORDER BY DESC(LANGMATCHES(LANG(?n), "en")) ?e LIMIT 1""")
        return self._node(rows[0]["e"]) if rows else None

    def entity_name(self, node_id: str) -> str:
        rows = self.select(f"SELECT ?name WHERE {{ {self._iri(node_id)} {self._iri(_NAME)} ?name . }} LIMIT 50")
        names = sorted((not (b["name"].get("xml:lang", "").lower() == "en"
                             or b["name"].get("xml:lang", "").lower().startswith("en-")),
                        b["name"].get("xml:lang", "").lower(), b["name"]["value"]) for b in rows if "name" in b)
        return names[0][2] if names else ""

    def _require(self, entity: str) -> str:
        node = self.resolve(entity)
        if node is None:
            raise QueryError(f"no entity {entity!r} in the knowledge graph")
        return node

    def relations(self, entity: str, *, question: str = "", top_k: int = 30,
                  extra_relations: Sequence[str] | None = None) -> list[tuple[str, float]]:
        node = self._require(entity)
        found = sorted(set(self._relations_of(node, "out", self.max_relations))
                       | set(self._relations_of(node, "in", self.max_relations)))
        with self.db.session() as conn:
            return store.choose_relations(conn, found, question=question, top_k=top_k,
                                          extra_relations=extra_relations, whitelist=self.whitelist)

    def triples(self, entity: str, relations: Sequence[str], *, question: str = "", limit_per_relation: int = 5,
                seed: int = 0, flatten_map: dict[str, Any] | None = None,
                flatten_choice: Sequence[str] | None = None) -> dict[str, Any]:
        node = self._require(entity)
        flatten_map = flatten_map or {}
        hop1: list[dict[str, str]] = []
        for relation in dict.fromkeys(relations):
            if relation in flatten_map:
                continue
            for direction, factor in (("out", 2), ("in", 4)):
                for row in self._neighbours(node, relation, direction, factor * limit_per_relation):
                    hop1.append({"relation": relation, "direction": direction, **row})
        # The edges of every unnamed neighbour (the SQL decides which are CVT nodes) and of the CVT nodes that
        # the requested flattened relations go through.
        wanted = {(h["id"], h["direction"], None) for h in hop1
                  if (not h["name"] or h["name"] == h["id"]) and not h["id"].startswith("_:")
                  and "://" not in h["id"] and _is_iri_like(h["id"])}
        wanted |= {(m["cvt_node_id"], m["direction"], m["cvt_relation"]) for r, m in flatten_map.items()
                   if r in relations}
        hop2: list[dict[str, str]] = []
        for cvt, direction, only in sorted(wanted, key=lambda w: (w[0], w[1], w[2] or "")):
            cvt_relations = [only] if only else sorted(self._relations_of(cvt, direction, 50))
            for cvt_relation in cvt_relations:
                for row in self._neighbours(cvt, cvt_relation, direction, 2 * limit_per_relation):
                    hop2.append({"cvt": cvt, "direction": direction, "relation": cvt_relation, **row})
        with self.db.session() as conn:
            return store.assemble_triples(
                conn, entity_id=node, entity_name=self.entity_name(node) or entity, relation_names=list(relations),
                hop1=hop1, hop2=hop2, flatten_map=flatten_map, question=question,
                limit_per_relation=limit_per_relation, seed=seed, whitelist=self.whitelist,
                flatten_choice=flatten_choice)


def _is_iri_like(node_id: str) -> bool:
    """A node that can have edges: not a literal value (those come back as plain text)."""
    return bool(node_id) and not any(c.isspace() for c in node_id)
