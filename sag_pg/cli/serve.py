"""`sag-pg serve`: the REST API (and the MCP endpoint) in one resident process (sag_pg.serve)."""

from __future__ import annotations

import os

import click

from ._common import AppContext, pass_app, require_pinned_sources, source_name


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on. Beyond loopback SAG_API_TOKEN must be set (every request then sends "
                   "Authorization: Bearer <token>).")
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True)
@click.option("--source", "sources", multiple=True, callback=lambda c, p, v: tuple(source_name(c, p, s) for s in v),
              help="Pin the service to this source (repeatable): no endpoint reaches any other. Default: every "
                   "source.")
@click.option("--allow-writes", is_flag=True, help="Also serve the endpoints that write: POST /ingest, "
                                                   "POST /ingest/files, DELETE /documents/{uri}.")
@click.option("--no-mcp", is_flag=True, help="Do not mount the MCP Streamable HTTP endpoint at /mcp.")
@pass_app
def serve(app: AppContext, host: str, port: int, sources: tuple[str, ...], allow_writes: bool, no_mcp: bool) -> None:
    """Serve the REST API (OpenAPI at /openapi.json) and the MCP endpoint (/mcp) from one process that keeps
    the database connections, the embedder and the LLM client loaded.

    Read-only unless --allow-writes.  The JSON of each endpoint is that of the matching `--json` command:
    GET /search?q=...&source=...&top_n=...&strategy=... is `sag-pg search --json`.

    Example:

        sag-pg serve --port 8000 --source demo
        curl 'localhost:8000/search?q=Who+founded+Pixar&source=demo&top_n=3'
    """
    import importlib.util

    import uvicorn

    from ..mcp.policy import Policy
    from ..serve import check_binding, create_app

    token = os.environ.get("SAG_API_TOKEN") or None
    check_binding(host, token)
    sag = app.sag()
    require_pinned_sources(sag, sources, allow_writes)
    policy = Policy(sources=sources, allow_writes=allow_writes)
    sag.embedder  # noqa: B018 - loaded now, once, not by the first request
    mcp_app = lifespan = None
    if not no_mcp and importlib.util.find_spec("mcp") is not None:
        from ..mcp.server import build_server

        server = build_server(sag, policy, debug=app.debug)
        mcp_app = server.streamable_http_app(streamable_http_path="/mcp", host=host)
        lifespan = server.session_manager.run
    web = create_app(sag, policy, token=token, mcp_app=mcp_app, lifespan=lifespan)
    shown = f"[{host}]" if ":" in host else host
    click.echo(f"sag-pg: serving {app.settings.database_url and 'SAG_DATABASE_URL' or app.settings.home} at "
               f"http://{shown}:{port}/ (API: /openapi.json{', MCP: /mcp' if mcp_app is not None else ''}; "
               f"{'writes allowed' if allow_writes else 'read-only'})", err=True)
    uvicorn.run(web, host=host, port=port, log_level="debug" if app.debug else "warning")
