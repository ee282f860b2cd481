"""The client library: ``SAG`` ties settings, database, embedder and LLM together."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import suppress
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg

from .config import Settings
from .db import catalog
from .db import ingest as store
from .db.connection import Database, raw_connect, resolve_dsn
from .db.status import database_status
from .errors import ConfigError, InputError, NotFoundError, QueryError, SagError
from .ingest.readers import (
    DocumentInput,
    InputFailure,
    ReadResult,
    document_from_text,
    read_inputs,
)
from .limits import INT4_MAX, MAX_TOP_N, check_int, check_question
from .llm import LLM, make_llm

if TYPE_CHECKING:
    from .embedders import Embedder
    from .answer import Answer
    from .cluster import ClusterParams, ClusterResult, EventSelection
    from .dataflow import DataflowParams
    from .db.documents import ChunkView, DocumentInfo, DocumentView, EntityView, ExportedDocument
    from .db.memory import Recalled
    from .graph import KnowledgeGraph, Memory
    from .graphrag import BuildParams, BuildResult, LocalParams
    from .ingest.extractors import Extractor
    from .ingest.runner import DocumentCallback, IngestReport
    from .kg.facade import KnowledgeGraph as KGTools
    from .search.result import SearchResult
    from .search.retrieve import RetrievalParams

DEFAULT_SOURCE = "default"


class SAG:
    """A sag-pg knowledge base.

    ``SAG()`` uses ``SAG_DATABASE_URL`` or, without it, the embedded PostgreSQL under ``SAG_HOME``;
    an empty database gets the schema on first use.  Pass ``dsn=`` or ``settings=`` to choose, and
    ``embedder=`` / ``llm=`` to inject your own implementations of the protocols.
    """

    def __init__(self, dsn: str | None = None, *, settings: Settings | None = None,
                 embedder: Embedder | None = None, llm: LLM | None = None, auto_upgrade: bool = True) -> None:
        self.settings = settings or Settings.from_env()
        if dsn:
            self.settings = self.settings.with_(database_url=dsn)
        self.db = Database.from_settings(self.settings, auto_upgrade=auto_upgrade)
        self._embedder = embedder
        self._llm = llm
        self._llm_resolved = llm is not None
        self.record_recalls = True  # every search counts as a recall of its documents (SAG.memory)

    @property
    def dsn(self) -> str:
        return self.db.dsn

    def __repr__(self) -> str:
        from .db.connection import redact

        return f"SAG(dsn={redact(self.db.dsn)!r}, embedder={self.settings.embedder!r}, llm={self.settings.llm or None!r})"

    def close(self) -> None:
        """Write the pending recall statistics; release the kept search connection and the LLM and embedder HTTP clients."""
        cached = self.__dict__.get("_cached_llm")
        if cached is not None:
            cached.store.close()
        for resource in (self.__dict__.get("memory"), self._llm, self.__dict__.get("embedder")):
            close = getattr(resource, "close", None)
            if callable(close):
                close()
        self.db.close()

    def __enter__(self) -> SAG:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @cached_property
    def embedder(self) -> Embedder:
        """The embedder, bound to the database on first use (a different one than at creation is an error)."""
        from .embedders import make_embedder  # numpy (0.2 s): not for commands that never embed

        embedder = self._embedder or make_embedder(self.settings.embedder, self.settings)
        self.db.bind_embedder(embedder.name, embedder.dimension)
        return embedder

    @property
    def llm(self) -> LLM | None:
        if not self._llm_resolved:
            self._llm = make_llm(self.settings)
            self._llm_resolved = True
        return self._llm

    @cached_property
    def kg(self) -> KGTools:
        """Knowledge-graph tools for agents: RDF import, get_relations / get_triples, the agent loop."""
        from .kg.facade import KnowledgeGraph

        return KnowledgeGraph(self.db, lambda: self.llm, self.settings.prompts_dir)

    def extractor(self) -> Extractor:
        # Imported here: the extractors load jieba and sumy, which plain `import sag_pg` should not.
        from .ingest.extractors import LLMExtractorAdapter, RulesExtractor

        llm = self.extraction_llm()
        return LLMExtractorAdapter(llm, prompts_dir=self.settings.prompts_dir) if llm else RulesExtractor()

    def extraction_llm(self) -> LLM | None:
        """The LLM for ingestion, its extraction answers kept in the database (sag_pg.llm.cache): a document
        whose ingest failed half-way resumes from the chunks already answered."""
        if self.llm is None:
            return None
        if self.__dict__.get("_cached_llm") is None or self.__dict__["_cached_llm"].llm is not self.llm:
            from .db.llm_answers import AnswerStore
            from .llm.cache import CachedLLM

            self._cached_llm = CachedLLM(self.llm, AnswerStore(self.db.dsn))
        return self._cached_llm

    # -- ingestion -------------------------------------------------------------------------------

    def ingest(self, inputs: Iterable[ReadResult], *, source: str = DEFAULT_SOURCE,
               on_document: DocumentCallback | None = None,
               alignment: store.KeyAlignment | None = None, bulk: bool | None = None,
               allow_duplicates: bool = False) -> IngestReport:
        """Ingest documents (or read failures, which are counted and named in the report).

        ``bulk`` rebuilds the vector indexes once after the load instead of row by row; by default that
        happens when at least 1,000 documents changed.  A document whose content the source already holds
        under another URI is skipped and named in ``report.duplicates`` (the same file ingested from another
        directory), unless ``allow_duplicates``.
        """
        from .ingest.prepare import DocumentPreparer
        from .ingest.runner import Ingestor

        if not source or not source.strip():
            raise QueryError("the source name is empty: give a name such as 'default'")

        extractor = self.extractor()
        preparer = DocumentPreparer(
            self.embedder, extractor,
            concurrency=self.settings.llm_concurrency if self.llm else 1,
        )
        runner = Ingestor(self.db, preparer, source=source, alignment=alignment, llm=self.extraction_llm(), bulk=bulk,
                          async_commit=self.settings.async_commit, allow_duplicates=allow_duplicates)
        with self.db.connect(autocommit=True) as conn:
            new_source = catalog.source_id(conn, source) is None
        try:
            return runner.run(inputs, on_document=on_document)
        finally:
            if new_source:  # an ingest that stored nothing leaves no empty source behind
                from .db.sources import delete_if_empty

                with suppress(psycopg.Error, SagError), self.db.transaction() as conn:  # not over the real error
                    delete_if_empty(conn, source)

    def ingest_files(self, paths: Iterable[str | Path], *, source: str = DEFAULT_SOURCE,
                     on_document: DocumentCallback | None = None, bulk: bool | None = None) -> IngestReport:
        """Ingest files, directories (recursive) and JSONL corpora."""
        return self.ingest(read_inputs(paths), source=source, on_document=on_document, bulk=bulk)

    def ingest_text(self, text: str, *, uri: str, title: str = "", source: str = DEFAULT_SOURCE,
                    metadata: dict[str, Any] | None = None) -> IngestReport:
        """Ingest one document given as a string; raises InputError if it cannot be ingested."""
        doc = document_from_text(text, uri=uri, origin=uri, title=title, metadata=metadata)
        if isinstance(doc, InputFailure):
            raise InputError(str(doc))
        report = self.ingest([doc], source=source)
        if report.failed:
            raise InputError("; ".join(report.errors))
        return report

    def delete_document(self, uri: str, *, source: str = DEFAULT_SOURCE) -> bool:
        """Delete a document and any key left with no event; False if there was none. A file's path finds
        the document ``ingest`` made of it (sag_pg.ingest.uris)."""
        from .ingest.uris import candidate_uris

        # Autocommit: sag.delete_document is one statement and one transaction (on Citus a call outside a
        # transaction block runs whole on the worker that holds the source); the BM25 queue is folded after.
        with self.db.connect(autocommit=True) as conn:
            found = catalog.source_id(conn, source)
            return found is not None and any(store.delete_document(conn, found, u) for u in candidate_uris(uri))

    # -- search ----------------------------------------------------------------------------------

    def search(self, query: str, *, keys: Sequence[str] | None = None, sql: str | None = None,
               mode: str = "fast", source: str | Sequence[str] | None = DEFAULT_SOURCE, top_n: int = 10,
               params: RetrievalParams | None = None, use_pagerank: bool = True, strategy: str = "sag",
               dataflow: DataflowParams | None = None) -> SearchResult:
        """SAG's multi-hop search over keys (``strategy="sag"``, docs/retrieval.md), or DataFlow activation
        (``strategy="dataflow"``, tuned by ``dataflow``; the result carries its explain ``trail``).

        ``mode``: ``fast`` (no LLM) or ``normal`` (the LLM rewrites the question and names its keys first).
        ``keys``: key names to start from instead of the query's nearest keys. ``sql``: a restriction over
        ``document``, ``chunk``, ``event`` and ``key`` columns, e.g. ``key.type = 'time' AND
        key.value_number >= 2000``. ``source``: a source name, a list of names, or None for all sources.
        """
        from . import browse
        from .db import retrieval as db_retrieval
        from .search.engine import SEARCH_TIMEOUT_MS, cancelled_as_query_error, resolve_sources
        from .search.engine import search as fast_search
        from .search.normal import rewrite_query

        check_int("top_n", top_n, 1, MAX_TOP_N)  # before any SQL: a bigint matches no SQL function
        check_question(query)  # before any SQL or LLM call (issue #36: a 121 KB question held MCP for 34 s)
        if strategy not in ("sag", "dataflow"):
            raise QueryError(f"unknown search strategy {strategy!r}: use sag or dataflow")
        if strategy == "dataflow" and dataflow is None:
            from .dataflow import DataflowParams as default_dataflow
            dataflow = default_dataflow()
        if mode not in ("fast", "normal"):
            raise QueryError(f"unknown search mode {mode!r}: use fast or normal (deep is `ask --mode deep`)")
        sources = [source] if isinstance(source, str) else (list(source) if source is not None else None)
        rewrite = None
        with self.db.session(autocommit=True) as conn:  # a search only reads: no BEGIN and COMMIT round trips
            # Every statement of the search under its timeout, the synonyms' expansion first (it ran before).
            db_retrieval.read_only_session(conn, statement_timeout_ms=SEARCH_TIMEOUT_MS)
            if mode == "normal":
                if self.llm is None:
                    raise ConfigError("normal mode needs an LLM: set SAG_LLM (e.g. openai:gpt-4o-mini) or use --mode fast")
                rewrite = rewrite_query(conn, self.embedder, self.llm, query, resolve_sources(conn, sources),
                                        prompts_dir=self.settings.prompts_dir)
                conn.commit()
                query, keys = rewrite.query, list(keys or []) + rewrite.keys
                check_question(query, "rewritten question")
            with cancelled_as_query_error():  # synonyms
                query = db_retrieval.expand_question(conn, query, browse.source_ids(conn, sources))
            conn.commit()
            result = fast_search(conn, self.embedder, query, keys=keys, sql=sql, sources=sources, top_n=top_n,
                                 params=params, use_pagerank=use_pagerank,
                                 dataflow=dataflow if strategy == "dataflow" else None)
        if self.record_recalls:
            self.memory.note_search(result)
        if rewrite is not None:
            result.timings_ms["rewrite"] = rewrite.seconds * 1000.0
            result.rewrite = rewrite
        return result

    def ask(self, question: str, *, mode: str = "fast", source: str | Sequence[str] | None = DEFAULT_SOURCE,
            top_n: int = 10, keys: Sequence[str] | None = None, sql: str | None = None, **deep: Any) -> Answer:
        """Search, then the LLM answers citing chunk ids; ``mode`` fast | normal | deep (deep: a DAG of
        sub-questions with a ReAct check; the returned DeepAnswer carries the whole ``trace``; options such
        as ``max_rounds`` and ``max_llm_calls`` go to :func:`sag_pg.answer.deep_ask`), or GraphRAG's local |
        global | drift (:func:`sag_pg.graphrag.graphrag_ask`; ``params=`` LocalParams, GlobalParams or
        DriftParams; ``history=`` the conversation so far, ``[{"role", "content"}]``; needs ``sag-pg communities
        build`` first)."""
        from .answer import ask, deep_ask

        check_int("top_n", top_n, 1, MAX_TOP_N)
        check_question(question)
        if mode in ("local", "global", "drift"):  # GraphRAG (sag_pg.graphrag); options: params=, concurrency=
            from .graphrag import graphrag_ask

            if keys or sql:
                raise QueryError(f"keys and sql are not used in {mode} mode")
            return graphrag_ask(self.db, self.embedder, self.llm, question, mode=mode, source=source,  # type: ignore[return-value]
                                params=deep.pop("params", None),
                                concurrency=deep.pop("concurrency", self.settings.llm_concurrency),
                                prompts_dir=self.settings.prompts_dir, history=deep.pop("history", None))
        if mode == "deep":
            if keys:
                raise QueryError("keys are chosen by the LLM in deep mode; use fast or normal mode to give them")
            deep.setdefault("parallelism", self.settings.llm_concurrency)
            return deep_ask(self.search, self.background, self.llm, question, source=source, top_n=top_n, sql=sql,
                            prompts_dir=self.settings.prompts_dir, **deep)
        if deep:
            raise QueryError(f"{', '.join(sorted(deep))}: only for deep mode")
        return ask(self.search, self.llm, question, mode=mode, source=source, top_n=top_n, keys=keys, sql=sql,
                   prompts_dir=self.settings.prompts_dir, evidence_tokens=self.settings.evidence_tokens)

    def background(self, question: str, sources: Sequence[str] | None) -> dict[str, Any]:
        """The events and keys nearest to ``question`` and the sources' key types (``sag.context_for_query``):
        what an LLM is shown before it rewrites or plans."""
        from .search.engine import resolve_sources
        from .search.normal import query_context

        embedder = self.embedder  # bound here, before any thread of a deep query asks for it
        with self.db.connect() as conn:
            return query_context(conn, embedder, question, resolve_sources(conn, sources))

    @cached_property
    def graph(self) -> KnowledgeGraph:
        """The knowledge graph over the keys: entities, typed relations, get_related, tags (docs/knowledge-graph.md)."""
        from .graph import KnowledgeGraph

        return KnowledgeGraph(self.db, lambda: self.embedder, lambda: self.llm, self.settings.prompts_dir)

    @cached_property
    def memory(self) -> Memory:
        """Recall statistics and eviction of documents (docs/knowledge-graph.md)."""
        from .graph import Memory

        return Memory(self.db)

    def recall(self, query: str, *, source: str | Sequence[str] | None = DEFAULT_SOURCE, channels: str = "hybrid",
               strategy: str = "hybrid", min_score: float = 0.0, top_n: int = 10, **options: Any) -> list[Recalled]:
        """Two-channel memory recall (docs/knowledge-graph.md): documents by keyword (content) and through the entities the
        keywords name and their neighbours (graph), scored by ``strategy`` (hybrid, text_overlap,
        graph_distance, temporal, reference_count) with each score's breakdown; records recall statistics.
        ``channels``: hybrid, knowledge (content only) or graph (graph only)."""
        check_int("top_n", top_n, 1, MAX_TOP_N)
        check_question(query)
        if "depth" in options:
            check_int("depth", options["depth"], 1, INT4_MAX)
        return self.memory.recall(query, source=source, channels=channels, strategy=strategy, min_score=min_score,
                                  top_n=top_n, **options)

    def cluster(self, selection: EventSelection, params: ClusterParams | None = None) -> ClusterResult:
        """Cluster the selected events with Louvain (shared keys weighted by IDF, plus embedding similarity) and
        store the run; titles come from the LLM when one is configured, else from each cluster's top keys."""
        from .cluster import ClusterParams, cluster_events

        return cluster_events(self.db, selection, params or ClusterParams(), llm=self.llm,
                              prompts_dir=self.settings.prompts_dir)

    def build_communities(self, selection: EventSelection, params: BuildParams | None = None, *,
                          offline: bool = False) -> BuildResult:
        """The GraphRAG community hierarchy of the selected events and a report per community (LLM reports
        unless ``offline`` or no LLM; extractive otherwise); reports of unchanged communities are reused."""
        from .graphrag import BuildParams, build_communities

        return build_communities(self.db, self.embedder, selection, params or BuildParams(),
                                 llm=None if offline else self.llm, concurrency=self.settings.llm_concurrency,
                                 prompts_dir=self.settings.prompts_dir)

    def local_context(self, query: str, *, source: str | Sequence[str] | None = DEFAULT_SOURCE,
                      params: LocalParams | None = None) -> dict[str, Any]:
        """GraphRAG local search's context tables (``sag.local_context``), no LLM needed."""
        from .graphrag import LocalParams, build_local_context
        from .graphrag.ask import one_source, sql_errors

        embedder = self.embedder
        with sql_errors(), self.db.connect() as conn:
            return build_local_context(conn, embedder, query, one_source(source), params or LocalParams())

    def configure_source(self, name: str, *, key_types: dict[str, float] | None = None,
                         synonyms: dict[str, str] | None = None, alignment: dict[str, Any] | None = None,
                         replace: bool = False, create: bool = True,
                         dataflow_type_weights: dict[str, float] | None = None) -> dict[str, Any]:
        """Set a source's key types (type → weight, SAG's), DataFlow's entity-type weights (type → weight, over
        the seed's ENTITY_TYPE_WEIGHTS), synonym table (alias → canonical name) and key alignment
        thresholds (``{"trigram": 0.9, "vector": 0.95, "across_types": true}``; null disables a test).
        Settings are merged into the existing ones unless ``replace``. Returns the resulting config. An unknown
        source is created, or with ``create=False`` a NotFoundError naming the existing ones. Synonyms shape
        the keys of later ingests; :meth:`apply_synonyms` applies them to stored documents."""
        patch: dict[str, Any] = {}
        if key_types is not None:
            patch["key_types"] = {str(k).strip().lower(): float(v) for k, v in key_types.items()}
        if dataflow_type_weights is not None:
            patch["dataflow_type_weights"] = {str(k).strip().lower(): float(v)
                                              for k, v in dataflow_type_weights.items()}
        if synonyms is not None:
            from .synonyms import check_synonyms

            patch["synonyms"] = check_synonyms(synonyms)  # a null was stored as the string "None"
        if alignment is not None:
            unknown = set(alignment) - {"trigram", "vector", "across_types"}
            if unknown:
                raise ConfigError(f"unknown alignment settings {sorted(unknown)}: use trigram, vector, across_types")
            patch["alignment"] = alignment
        from . import browse

        with self.db.transaction() as conn:
            found = store.ensure_source(conn, name) if create else browse.source_id(conn, name)
            return catalog.update_source_config(conn, found, patch, replace=replace)

    def apply_synonyms(self, source: str) -> list[str]:
        """Re-ingest the documents of ``source`` holding a key its synonym table names as an alias, so those
        keys merge into the canonical ones; their uris (sag_pg.synonyms)."""
        from .synonyms import apply_synonyms

        return apply_synonyms(self.db, self.ingest, source)

    # -- reading back (sag_pg.browse) ------------------------------------------------------------

    def documents(self, *, source: str | Sequence[str] | None = None, uri_prefix: str | None = None,
                  limit: int | None = 100, offset: int = 0) -> list[DocumentInfo]:
        """Stored documents by source and uri with their counts of chunks, events and keys; ``source`` None:
        every source; ``limit`` None: no limit."""
        from . import browse

        if limit is not None:
            check_int("limit", limit, 0)
        check_int("offset", offset, 0)

        with self.db.connect(autocommit=True) as conn:
            return browse.documents(conn, source=source, uri_prefix=uri_prefix, limit=limit, offset=offset)

    def document(self, uri: str, *, source: str | None = None) -> DocumentView:
        """One document with its chunks in reading order, each with its events and their keys; ``source``
        None: the only source holding ``uri``. NotFoundError if there is none."""
        from . import browse

        with self.db.connect(autocommit=True) as conn:
            return browse.document(conn, uri, source=source)

    def chunk(self, chunk_id: int) -> ChunkView:
        """One chunk (the ids search results cite) with its events, their keys and its document's uri."""
        from . import browse

        with self.db.connect(autocommit=True) as conn:
            return browse.chunk(conn, chunk_id)

    def entity(self, name: str, *, source: str | Sequence[str] | None = None, type: str | None = None,
               events: int = 20, related: int = 20) -> EntityView:
        """The key called ``name`` (any spelling variant; of ``type`` if given; the one with most events if
        several match) with its top ``events`` events and the ``related`` keys sharing most events with it."""
        from . import browse

        check_int("events", events, 0)
        check_int("related", related, 0)

        with self.db.connect(autocommit=True) as conn:
            return browse.entity(conn, name, source=source, key_type=type, events=events, related=related)

    def export(self, *, source: str) -> Iterator[ExportedDocument]:
        """Every document of ``source`` by uri with its text, title and metadata: what ``ingest`` needs to
        store it again with the same content hash (``sag-pg export`` writes these as JSONL)."""
        from . import browse
        from .db.documents import export_documents

        with self.db.connect() as conn:
            yield from export_documents(conn, browse.source_id(conn, source))

    def delete_source(self, name: str) -> dict[str, int]:
        """Delete a source with everything in it; the counts of documents, chunks, events and keys removed."""
        from . import browse
        from .db.sources import delete_source

        with self.db.transaction() as conn:
            return delete_source(conn, browse.source_id(conn, name))

    def prune_cluster_runs(self, *, keep: int = 1, source: str | None = None) -> int:
        """Delete stored ``cluster`` runs but the newest ``keep`` of each source (GraphRAG's community runs
        are kept: each build replaces its own); how many runs were deleted."""
        from . import browse
        from .db.cluster import prune_runs

        check_int("keep", keep, 0)
        with self.db.transaction() as conn:
            return prune_runs(conn, keep=keep, source_ids=browse.source_ids(conn, source))

    # -- information -----------------------------------------------------------------------------

    def sources(self) -> list[dict[str, Any]]:
        """Every source by name: ``{"name", "created_at", "documents", "events", "keys"}`` (counts)."""
        with self.db.connect(autocommit=True) as conn:
            return catalog.list_sources(conn)

    def stats(self, *, source: str | None = None) -> dict[str, Any]:
        """Figures of ``source`` (None: every source): ``{"source", "documents", "chunks", "events", "keys",
        "prompt_tokens", "completion_tokens", "key_types": {type: keys}}``; NotFoundError naming the existing
        sources if there is no such source."""
        from . import browse

        with self.db.connect(autocommit=True) as conn:
            browse.source_ids(conn, source)  # an unknown name: the error names the sources there are
            try:
                figures = catalog.source_figures(conn, source)
            except psycopg.errors.NoDataFound as exc:
                raise NotFoundError(exc.diag.message_primary or str(exc)) from exc
            types = catalog.key_type_counts(conn, source)
        return {"source": source, **figures, "key_types": types}

    def status(self) -> dict[str, Any]:
        with raw_connect(self.db.dsn, autocommit=True) as conn:
            return database_status(conn)


def status_of(settings: Settings) -> dict[str, Any]:
    """Status without creating or checking the schema (works on an empty or old database)."""
    with raw_connect(resolve_dsn(settings), autocommit=True) as conn:
        return database_status(conn)


__all__ = ["SAG", "DocumentInput", "status_of"]
