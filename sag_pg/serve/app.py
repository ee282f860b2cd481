"""The REST API: one endpoint per CLI read command, returning exactly what the command's ``--json`` prints
(the same library calls and :mod:`sag_pg.serialize`), errors as RFC 9457 problem documents carrying the
message the CLI prints after ``Error:``.  Sources are bounded by the same :class:`~sag_pg.mcp.policy.Policy`
as the MCP server; writes need ``allow_writes``."""

from __future__ import annotations

import contextlib
import pathlib
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, Annotated, Any, Literal

from fastapi import FastAPI, Path, Query, Request
from fastapi.responses import FileResponse, Response, StreamingResponse
from fastapi.staticfiles import StaticFiles

from .. import __version__
from ..errors import NotFoundError, QueryError
from ..http_auth import authorized
from ..mcp.policy import DEFAULT_SOURCE, Policy, RefusedError
from ..serialize import dumps
from .jobs import Jobs
from .problems import install_problem_handlers, problem

if TYPE_CHECKING:
    from ..client import SAG

__all__ = ["create_app"]

STATIC = pathlib.Path(__file__).resolve().parent / "static"  # the web page: no build step, no CDN
TopN = Annotated[int, Query(ge=1, le=1000, description="How many results.")]
Sources = Annotated[list[str] | None, Query(alias="source", description="Source name (repeatable); omitted: "
                                                                         "'default', or the server's sources.")]


class JSON(Response):
    """A response written by :func:`sag_pg.serialize.dumps` (dates, numpy values), as the CLI's --json."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return dumps(content, indent=None).encode("utf-8")


def create_app(sag: SAG, policy: Policy | None = None, *, token: str | None = None,
               mcp_app: Any = None, lifespan: Callable[[], Any] | None = None) -> FastAPI:
    """The HTTP application over ``sag``: read endpoints always, write endpoints only when ``policy`` allows
    writes; every request needs ``Authorization: Bearer <token>`` when ``token`` is set."""
    policy = policy or Policy()
    if not policy.allow_writes:
        sag.record_recalls = False  # read-only writes nothing, recall statistics included (issue #36)
    jobs = Jobs(sag)

    @contextlib.asynccontextmanager
    async def running(_: FastAPI) -> AsyncIterator[None]:
        try:
            if lifespan is None:
                yield
            else:
                async with lifespan():  # the MCP endpoint's session manager
                    yield
        finally:
            jobs.close()

    app = FastAPI(title="sag-pg", version=__version__, default_response_class=JSON, docs_url=None,
                  redoc_url=None, lifespan=running, description="Search, read and explore a sag-pg knowledge base. The JSON of "
                  "each endpoint is that of the matching `sag-pg ... --json` command.")
    install_problem_handlers(app)

    @app.middleware("http")
    async def bearer(request: Request, call_next: Any) -> Response:
        # The page and its assets hold no data: they load without the token, and ask for it.
        page = request.url.path == "/" or request.url.path.startswith("/static/")
        if not page and not authorized(request.headers.get("authorization"), token):
            return problem(401, "Unauthorized", "send Authorization: Bearer <SAG_API_TOKEN>",
                           headers={"WWW-Authenticate": "Bearer"})
        return await call_next(request)

    def many(asked: list[str] | None) -> list[str] | None:
        if asked:
            return policy.many(asked)
        return policy.many(None) if policy.pinned else [DEFAULT_SOURCE]

    def one(asked: str | None, default: str | None = DEFAULT_SOURCE) -> str | None:
        if asked is None and not policy.pinned:
            return default
        return policy.one(asked)

    # -- service -----------------------------------------------------------------------------------

    @app.get("/", include_in_schema=False)
    def index() -> Response:
        return FileResponse(STATIC / "index.html", media_type="text/html; charset=utf-8")

    @app.get("/service", tags=["service"], summary="What this server allows: writes, pinned sources.")
    def service() -> Response:
        return JSON({"version": __version__, "allow_writes": policy.allow_writes,
                     "sources": list(policy.sources) if policy.pinned else None})

    @app.get("/health", tags=["service"], summary="The process answers.")
    def health() -> Response:
        return JSON({"status": "ok", "version": __version__})

    @app.get("/ready", tags=["service"], summary="The database answers and its schema is current.")
    def ready() -> Response:
        from ..db.status import database_status

        with sag.db.connect(autocommit=True) as conn:
            status = database_status(conn)
        if status["schema_state"] != "current":
            return problem(503, "Service Unavailable", f"schema {status['schema_state']}: run `sag-pg db upgrade`")
        return JSON({"status": "ready", "schema_revision": status["schema_revision"],
                     "embedder": status["embedder"]})

    @app.get("/sources", tags=["sources"], summary="`sag-pg sources --json`")
    def sources() -> Response:
        return JSON([s for s in sag.sources() if policy.visible(s["name"])])

    @app.get("/stats", tags=["sources"], summary="`sag-pg stats --json`")
    def stats(source: str | None = None) -> Response:
        return JSON(sag.stats(source=one(source, default=None)))

    # -- search and answers ------------------------------------------------------------------------

    @app.get("/search", tags=["search"], summary="`sag-pg search --json`")
    def search(q: Annotated[str, Query(min_length=1, description="The question.")], source: Sources = None,
               all_sources: bool = False, top_n: TopN = 10,
               strategy: Literal["sag", "dataflow", "local"] = "sag", mode: Literal["fast", "normal"] = "fast",
               key: Annotated[list[str] | None, Query(description="A key name to start from.")] = None,
               sql: str | None = None) -> Response:
        chosen = policy.many(None) if all_sources else many(source)
        if strategy == "local":
            return JSON(sag.local_context(q, source=chosen))
        extra: dict[str, Any] = {}
        if strategy == "dataflow":
            from ..dataflow import DataflowParams

            extra = {"strategy": "dataflow", "dataflow": DataflowParams()}
        result = sag.search(q, keys=key or None, sql=sql, mode=mode, source=chosen, top_n=top_n, **extra)
        from ..search.presentation import result_json  # what `sag-pg search --json` prints

        return JSON(result_json(result))

    @app.get("/ask", tags=["search"], summary="`sag-pg ask --json`")
    def ask(q: Annotated[str, Query(min_length=1)], source: Sources = None,
            mode: Literal["fast", "normal", "deep", "global", "drift", "local"] = "fast",
            top_n: TopN = 5) -> Response:
        return JSON(sag.ask(q, mode=mode, source=many(source), top_n=top_n).to_dict())

    # -- documents ----------------------------------------------------------------------------------

    @app.get("/documents", tags=["documents"], summary="`sag-pg documents --json`")
    def documents(source: Sources = None, prefix: str | None = None,
                  limit: Annotated[int, Query(ge=1, le=10_000)] = 100,
                  offset: Annotated[int, Query(ge=0)] = 0) -> Response:
        chosen = many(source) if source or policy.pinned else None
        found = sag.documents(source=chosen, uri_prefix=prefix, limit=limit, offset=offset)
        return JSON([d.to_dict() for d in found])

    @app.get("/documents/{uri:path}", tags=["documents"], summary="`sag-pg show URI --json`")
    def document(uri: str, source: str | None = None) -> Response:
        return JSON(sag.document(uri, source=one(source, default=None)).to_dict())

    @app.get("/chunks/{chunk_id}", tags=["documents"], summary="One chunk with its events and keys.")
    def chunk(chunk_id: Annotated[int, Path(ge=1, le=2**63 - 1)]) -> Response:
        view = sag.chunk(chunk_id)
        data = view.to_dict()
        if not policy.visible(str(data.get("source", ""))):
            raise RefusedError(f"chunk {chunk_id} is outside this server's sources")
        return JSON(data)

    @app.get("/export", tags=["documents"], summary="`sag-pg export --source S`: JSONL that `sag-pg ingest` reads back",
             response_class=StreamingResponse)
    def export(source: str | None = None) -> StreamingResponse:
        chosen = one(source) or DEFAULT_SOURCE
        documents = sag.export(source=chosen)  # NotFoundError here, before the response starts

        def lines() -> Any:
            for doc in documents:
                yield dumps({"id": doc.uri, "title": doc.title, "text": doc.content, "metadata": doc.metadata},
                            indent=None) + "\n"

        return StreamingResponse(lines(), media_type="application/x-ndjson")

    @app.get("/db/status", tags=["service"], summary="`sag-pg db status --json`")
    def db_status() -> Response:
        from ..db.status import database_status

        with sag.db.connect(autocommit=True) as conn:
            return JSON(database_status(conn))

    # -- graph ------------------------------------------------------------------------------------

    @app.get("/graph/relations", tags=["graph"], summary="`sag-pg graph relations [ENTITY] --json`")
    def graph_relations(entity: str | None = None, source: str | None = None,
                        limit: Annotated[int, Query(ge=1, le=10_000)] = 50) -> Response:
        chosen = one(source) or DEFAULT_SOURCE
        if entity is None:
            return JSON(sag.graph.relation_counts(source=chosen))
        ref: str | int = int(entity[1:]) if entity.startswith("#") and entity[1:].isdigit() else entity
        return JSON([asdict(r) for r in sag.graph.relations(ref, limit=limit, source=chosen)])

    @app.get("/graph/tags", tags=["graph"], summary="`sag-pg graph tags [ENTITY] [--prefix P] [--count TAG] --json`")
    def graph_tags(entity: str | None = None, prefix: str = "", count: str | None = None,
                   source: str | None = None) -> Response:
        chosen = one(source) or DEFAULT_SOURCE
        if count is not None:
            return JSON(sag.graph.entity_count_by_tag(count, source=chosen))
        if entity is None:
            return JSON(sag.graph.find_tags(prefix, source=chosen))
        ref: str | int = int(entity[1:]) if entity.startswith("#") and entity[1:].isdigit() else entity
        found = sag.graph.get_entity(ref, source=chosen)
        if found is None:
            raise NotFoundError(f"no entity {entity!r}")
        return JSON(list(found.tags))

    @app.get("/memory/stats", tags=["graph"], summary="`sag-pg memory stats --json`")
    def memory_stats(source: str | None = None, limit: Annotated[int, Query(ge=1, le=10_000)] = 10) -> Response:
        return JSON(sag.memory.stats(source=one(source) or DEFAULT_SOURCE, limit=limit))

    @app.get("/entities/{name}", tags=["graph"], summary="An entity with its events and related keys.")
    def entity(name: str, source: Sources = None, type: str | None = None) -> Response:
        return JSON(sag.entity(name, source=many(source), type=type).to_dict())

    @app.get("/entities/{name}/related", tags=["graph"], summary="`sag-pg graph related --json`")
    def related(name: str, source: str | None = None, depth: Annotated[int, Query(ge=1, le=6)] = 2,
                direction: Literal["out", "in", "both"] = "both",
                type: Annotated[list[str] | None, Query(description="Relation type (repeatable).")] = None,
                limit: Annotated[int, Query(ge=1, le=10_000)] = 50) -> Response:
        ref: str | int = int(name[1:]) if name.startswith("#") and name[1:].isdigit() else name
        found = sag.graph.get_related(ref, depth, direction, type or None, limit=limit,
                                      source=one(source) or DEFAULT_SOURCE)
        return JSON([asdict(r) for r in found])

    @app.get("/memory/recall", tags=["graph"], summary="`sag-pg memory recall --json` (not recorded)")
    def recall(q: Annotated[str, Query(min_length=1)], source: str | None = None,
               channels: Literal["hybrid", "knowledge", "graph"] = "hybrid",
               strategy: Literal["hybrid", "text_overlap", "graph_distance", "temporal",
                                 "reference_count"] = "hybrid",
               top_n: TopN = 10, depth: Annotated[int, Query(ge=1, le=6)] = 2) -> Response:
        found = sag.recall(q, source=one(source) or DEFAULT_SOURCE, channels=channels, strategy=strategy,
                           top_n=top_n, depth=depth, record=False)  # reading changes nothing (issue #36)
        return JSON([r.to_dict() for r in found])

    @app.get("/kg/relations/{entity}", tags=["graph"], summary="`sag-pg kg relations --json`")
    def kg_relations(entity: str, question: str = "", source: str | None = None,
                     top_k: Annotated[int, Query(ge=1, le=1000)] = 30) -> Response:
        found = sag.kg.relations(entity, question=question, source=one(source, default=None), top_k=top_k)
        return JSON([{"relation": r, "score": s} for r, s in found])

    @app.get("/kg/triples/{entity}", tags=["graph"], summary="`sag-pg kg triples --json`")
    def kg_triples(entity: str, relation: Annotated[list[str], Query(min_length=1)], question: str = "",
                   source: str | None = None, limit_per_relation: Annotated[int, Query(ge=1, le=1000)] = 5,
                   seed: int = 0) -> Response:
        return JSON(sag.kg.triples(entity, relation, question=question, source=one(source, default=None),
                              limit_per_relation=limit_per_relation, seed=seed))

    @app.get("/communities", tags=["graph"], summary="`sag-pg communities list --json`")
    def communities(source: str | None = None, level: Annotated[int | None, Query(ge=0)] = None) -> Response:
        from ..graphrag.browse import list_reports

        return JSON(list_reports(sag.db, one(source), level))

    @app.get("/communities/{community_id}", tags=["graph"], summary="`sag-pg communities show --json`")
    def community(community_id: Annotated[int, Path(ge=1, le=2**63 - 1)]) -> Response:
        from ..graphrag.browse import show_community

        return JSON(show_community(sag.db, community_id))

    # -- writes -----------------------------------------------------------------------------------

    @app.post("/ingest", tags=["writes"], status_code=202,
              summary="Ingest JSON documents ({\"documents\": [{id, title, text, metadata}]}) or, as "
                      "multipart/form-data, uploaded files (field `files`: .md, .txt, .jsonl, .html) as a job; see "
                      "/jobs/{id}.",
              openapi_extra={"requestBody": {"required": True, "content": {
                  "application/json": {"schema": {"type": "object", "required": ["documents"], "properties": {
                      "documents": {"type": "array", "minItems": 1, "items": {"type": "object"}}}}},
                  "multipart/form-data": {"schema": {"type": "object", "required": ["files"], "properties": {
                      "files": {"type": "array", "items": {"type": "string", "format": "binary"}}}}}}}})
    async def ingest(request: Request, source: str | None = None) -> Response:
        target = policy.write("ingest", source)
        if request.headers.get("content-type", "").startswith("multipart/form-data"):
            form = await request.form()
            uploads = [f for f in form.getlist("files") if hasattr(f, "read")]
            if not uploads:
                raise QueryError("multipart ingest: send the files in the field 'files'")
            files = [(u.filename or "upload.txt", await u.read()) for u in uploads]  # type: ignore[union-attr]
            return JSON(jobs.submit_files(files, source=target).to_dict(), status_code=202)
        try:
            body = await request.json()
        except ValueError as exc:
            raise QueryError(f"ingest: the body is not JSON ({exc})") from None
        documents = body.get("documents") if isinstance(body, dict) else None
        if not isinstance(documents, list) or not documents:
            raise QueryError('ingest: send {"documents": [{"id", "title", "text", "metadata"}, ...]} or files')
        return JSON(jobs.submit_documents(documents, source=target).to_dict(), status_code=202)

    @app.get("/jobs/{job_id}", tags=["writes"], summary="An ingest job: status, progress, report.")
    def job(job_id: str) -> Response:
        return JSON(jobs.get(job_id).to_dict())

    @app.delete("/documents/{uri:path}", tags=["writes"], summary="`sag-pg delete URI`")
    def delete(uri: str, source: str | None = None) -> Response:
        target = policy.write("delete", source)
        if not sag.delete_document(uri, source=target):
            raise QueryError(f"no document {uri!r} in source {target!r}")
        return JSON({"deleted": uri, "source": target})

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    if mcp_app is not None:
        app.mount("", mcp_app)  # it serves /mcp; the API's routes come first
    return app
