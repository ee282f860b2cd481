"""`sag-pg mcp`: serve the knowledge base to agents over the Model Context Protocol (stdio or Streamable HTTP)."""

from __future__ import annotations

import importlib.util
import os

import click

from ..errors import ConfigError
from ._common import AppContext, pass_app, require_pinned_sources, source_name

LOCALHOST = "127.0.0.1"


def http_address(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, int] | None:
    """Click callback: ``HOST:PORT``, ``:PORT`` or ``PORT`` (host 127.0.0.1); ``[::1]:PORT`` for IPv6."""
    if value is None:
        return None
    host, _, port = value.rpartition(":")
    host = host.strip("[]") or LOCALHOST
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise click.BadParameter(f"{value!r}: give HOST:PORT, e.g. 127.0.0.1:8765")
    return host, int(port)


@click.command()
@click.option("--http", "http", metavar="HOST:PORT", callback=http_address,
              help="Serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio (HOST defaults to 127.0.0.1; "
                   "beyond loopback only with SAG_API_TOKEN set, which every request then sends as a bearer "
                   "token).")
@click.option("--source", "sources", multiple=True, callback=lambda c, p, v: tuple(source_name(c, p, s) for s in v),
              help="Pin the server to this source (repeatable): no tool reaches any other. Default: every source.")
@click.option("--allow-writes", is_flag=True,
              help="Also serve the tools that write: ingest_text, remember, forget, delete_document.")
@pass_app
def mcp(app: AppContext, http: tuple[str, int] | None, sources: tuple[str, ...], allow_writes: bool) -> None:
    """Serve search, documents, the knowledge-graph tools and memory as MCP tools for any agent.

    Read-only unless --allow-writes. Speaks MCP on stdin/stdout (what desktop clients start; nothing else is
    printed there), or over Streamable HTTP with --http 127.0.0.1:8765.

    Example:

        sag-pg mcp --source demo
    """
    if importlib.util.find_spec("mcp") is None:
        raise ConfigError("the MCP server needs the mcp package: pip install 'sag-pg[mcp]'")
    token = os.environ.get("SAG_API_TOKEN") or None
    if http is not None:
        from ..http_auth import check_binding

        check_binding(http[0], token)  # before anything starts
    from ..mcp import Policy
    from ..mcp.server import MCP_PATH, build_server, serve

    sag = app.sag()
    require_pinned_sources(sag, sources, allow_writes)
    server = build_server(sag, Policy(sources=sources, allow_writes=allow_writes), debug=app.debug)
    # On stderr (stdout carries the protocol on stdio): which database this is, for a client that started the
    # command without SAG_HOME / SAG_DATABASE_URL in its environment and so got the default embedded one.
    click.echo(f"sag-pg: MCP server on {_database(app, sag.dsn)}; sources: {', '.join(sources) or 'all'}; "
               f"{'read and write' if allow_writes else 'read-only'}", err=True)
    if http is not None:
        click.echo(f"sag-pg: MCP server at http://{http[0]}:{http[1]}{MCP_PATH}", err=True)
    serve(server, http, token=token)


def _database(app: AppContext, dsn: str) -> str:
    from ..db.connection import redact

    if app.settings.database_url:
        return f"{redact(dsn)} (SAG_DATABASE_URL)"
    return f"the embedded PostgreSQL of SAG_HOME={app.settings.home} ({redact(dsn)})"
