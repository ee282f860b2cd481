"""``SAG.kg``: import a knowledge graph, call the two tools, run the agent loop."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from ..db import ingest as ingest_store
from ..db import kg as store
from ..db.connection import Database
from ..errors import ConfigError, QueryError
from ..limits import INT4_MAX, MAX_TOP_N, check_int
from ..llm import LLM
from .agent import AgentResult, KGAgent
from .backends import KGBackend, PostgresKG
from .importer import ImportReport, import_rdf
from .rdf import FREEBASE_NS
from .sparql import SparqlKG

__all__ = ["KnowledgeGraph"]


class KnowledgeGraph:
    """The knowledge-graph tools of one database; ``sparql=`` URLs query an endpoint instead of sag.relations."""

    def __init__(self, db: Database, llm: Callable[[], LLM | None], prompts_dir: Path | None = None) -> None:
        self.db = db
        self._llm = llm
        self.prompts_dir = prompts_dir

    def backend(self, *, source: str | None = None, sparql: str | None = None, namespace: str = FREEBASE_NS,
                whitelist: Sequence[str] | None = None) -> KGBackend:
        if sparql:
            return SparqlKG(sparql, self.db, namespace=namespace, whitelist=whitelist)
        return PostgresKG(self.db, source=source, whitelist=whitelist)

    def import_files(self, paths: Iterable[str | Path], *, source: str, fmt: str | None = None,
                     namespace: str = FREEBASE_NS, whitelist: Sequence[str] | None = None,
                     on_progress: Callable[[ImportReport], None] | None = None) -> ImportReport:
        """Import N-Triples / Turtle files into ``source``; ``whitelist`` sets its relation whitelist."""
        report = import_rdf(self.db, [Path(p) for p in paths], source=source, fmt=fmt, namespace=namespace,
                            on_progress=on_progress)
        if whitelist is not None:
            with self.db.transaction() as conn:
                store.set_whitelist(conn, ingest_store.ensure_source(conn, source), whitelist)
        return report

    def sources_holding(self, entity: str) -> list[str]:
        """The sources in which ``entity`` (a name or node id) names a node, by name."""
        with self.db.session() as conn:
            return store.sources_holding(conn, entity)

    def choose_source(self, entity: str, source: str | None = None, sparql: str | None = None) -> str | None:
        """The source the tools read for ``entity``: ``source`` when given (or a SPARQL endpoint is), else the
        only source holding it; QueryError naming them when several do (None when none does: the tools then
        say there is no such entity)."""
        if source is not None or sparql:
            return source
        holding = self.sources_holding(entity)
        if len(holding) > 1:
            raise QueryError(f"{entity!r} is in {len(holding)} sources ({', '.join(holding)}): choose one with "
                             "--source (source= in Python)")
        return holding[0] if holding else None

    def hidden_relations(self, entity: str, *, source: str | None = None, limit: int = 5) -> list[str]:
        """Relations of ``entity`` the tools do not show: predicates outside the import's namespace, stored whole."""
        with self.db.session() as conn:
            return store.hidden_relations(conn, entity, source, limit)

    def relations(self, entity: str, *, question: str = "", source: str | None = None, top_k: int = 30,
                  sparql: str | None = None) -> list[tuple[str, float]]:
        check_int("top_k", top_k, 1, MAX_TOP_N)
        source = self.choose_source(entity, source, sparql)
        return self.backend(source=source, sparql=sparql).relations(entity, question=question, top_k=top_k)

    def triples(self, entity: str, relations: Sequence[str], *, question: str = "", source: str | None = None,
                limit_per_relation: int = 5, seed: int = 0, sparql: str | None = None) -> dict[str, Any]:
        check_int("limit_per_relation", limit_per_relation, 1, MAX_TOP_N)
        check_int("seed", seed, -INT4_MAX, INT4_MAX)
        source = self.choose_source(entity, source, sparql)
        return self.backend(source=source, sparql=sparql).triples(
            entity, relations, question=question, limit_per_relation=limit_per_relation, seed=seed)

    def ask(self, question: str, *, source: str | None = None, sparql: str | None = None,
            topic_entities: Sequence[tuple[str, str]] = (), kg_top_k: int = 10, max_calls: int = 10,
            limit_per_relation: int = 5, seed: int = 0) -> AgentResult:
        """The agent loop (needs an LLM: SAG_LLM)."""
        check_int("kg_top_k", kg_top_k, 1, MAX_TOP_N)  # the agent asks for 3 × kg_top_k relations
        check_int("max_calls", max_calls, 1)
        check_int("limit_per_relation", limit_per_relation, 1, MAX_TOP_N)
        check_int("seed", seed, -INT4_MAX, INT4_MAX)
        llm = self._llm()
        if llm is None:
            raise ConfigError("kg ask needs an LLM: set SAG_LLM (e.g. openai:gpt-4o-mini)")
        agent = KGAgent(self.backend(source=source, sparql=sparql), llm, filter_llm=llm, kg_top_k=kg_top_k,
                        max_calls=max_calls, limit_per_relation=limit_per_relation, seed=seed,
                        prompts_dir=self.prompts_dir)
        return agent.ask(question, topic_entities)
