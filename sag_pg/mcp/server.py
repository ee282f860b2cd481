"""The MCP server: :class:`SagTools` registered on the official SDK's ``MCPServer``, served over stdio or
Streamable HTTP.  Library errors become MCP tool errors with the CLI's messages; the server keeps running."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..errors import user_error
from .policy import Policy
from .tools import READ_TOOLS, WRITE_TOOLS, SagTools

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from ..client import SAG

__all__ = ["MCP_PATH", "build_server", "serve"]

MCP_PATH = "/mcp"  # where Streamable HTTP serves (the SDK's default path)


def _instructions(policy: Policy) -> str:
    scope = f"sources {', '.join(policy.sources)}" if policy.pinned else "every source"
    writes = "may write (ingest_text, remember, forget, delete_document)" if policy.allow_writes else "is read-only"
    return (f"sag-pg: a knowledge base of documents, their events and keys (entities, times, ...) in PostgreSQL. "
            f"This server reads {scope} and {writes}. Start with search (or recall for memories); cite chunk_id; "
            f"read on with get_chunk, get_document and get_entity.")


def build_server(sag: SAG, policy: Policy | None = None, *, debug: bool = False) -> MCPServer:
    """An MCP server whose tools call ``sag`` within ``policy`` (default: every source, read-only); ``debug``
    logs every request on stderr."""
    from mcp.server.mcpserver import MCPServer  # imported here: the rest of sag-pg does not need the SDK
    from mcp.types import ToolAnnotations

    policy = policy or Policy()
    tools = SagTools(sag, policy)
    server: MCPServer = MCPServer("sag-pg", version=__version__, instructions=_instructions(policy),
                                  debug=debug, log_level="DEBUG" if debug else "WARNING")
    # The SDK runs synchronous tools in worker threads, and they run together: one lock around every call made
    # a long search hold up all the others (issue #36: 34 s).  What two threads must not build at once, the
    # client's lazily built parts (embedder, LLM, graph, memory), is built once before the first call runs;
    # Database.session gives each concurrent call its own connection.  At most MAX_CONCURRENT_CALLS run at once.
    gate = _CallGate(sag)
    for name in READ_TOOLS:
        server.add_tool(_tool_call(getattr(tools, name), gate),
                        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=name == "ask"))
    if policy.allow_writes:
        for name in WRITE_TOOLS:
            server.add_tool(_tool_call(getattr(tools, name), gate),
                            annotations=ToolAnnotations(read_only_hint=False, destructive_hint=name in (
                                "delete_document", "forget"), open_world_hint=False))
    return server


MAX_CONCURRENT_CALLS = 8  # tool calls running at once (each may hold a database connection)


class _CallGate:
    """Lets tool calls run together: the client's lazy parts built once under a lock, then at most
    ``MAX_CONCURRENT_CALLS`` calls at a time."""

    def __init__(self, sag: SAG) -> None:
        self.sag = sag
        self._ready = False
        self._ready_lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(MAX_CONCURRENT_CALLS)

    def _prepare(self) -> None:
        with self._ready_lock:
            if self._ready:
                return
            # Each is built on first use (a cached_property); reading one that is built takes no lock.
            from ..errors import SagError

            for part in ("embedder", "llm", "kg", "graph", "memory"):
                try:
                    getattr(self.sag, part)  # the embedder is bound to the database here, once
                except SagError:
                    pass  # a call that needs it says why; the others still run
            self._ready = True

    def __enter__(self) -> None:
        if not self._ready:
            self._prepare()
        self._slots.acquire()

    def __exit__(self, *exc: object) -> None:
        self._slots.release()


def _tool_call(method: Callable[..., dict[str, Any]], gate: _CallGate) -> Callable[..., dict[str, Any]]:
    """``method`` as a tool: its signature and docstring kept (they are the tool's schema and description),
    a user's mistake raised as the SDK's ToolError so the client reads the same message the CLI prints."""
    from mcp.server.mcpserver.exceptions import ToolError

    @functools.wraps(method)
    def call(**arguments: Any) -> dict[str, Any]:
        try:
            with gate:
                return method(**arguments)
        except Exception as exc:
            error = user_error(exc)
            if error is None:
                raise  # a bug: the SDK logs it and answers a tool error without the details
            raise ToolError(str(error)) from exc

    return call


def serve(server: MCPServer, http: tuple[str, int] | None = None, *, token: str | None = None) -> None:
    """Serve until stopped: over stdin/stdout, or with ``http=(host, port)`` Streamable HTTP at
    ``http://host:port/mcp`` (on localhost the SDK also checks Host and Origin headers against DNS rebinding).
    Over HTTP beyond loopback a ``token`` is required, and every request must send it as a bearer token."""
    if http is None:
        server.run("stdio")
        return
    import uvicorn

    from ..http_auth import BearerGuard, check_binding

    host, port = http
    check_binding(host, token)
    app = server.streamable_http_app(streamable_http_path=MCP_PATH, host=host)
    uvicorn.run(BearerGuard(app, token), host=host, port=port, log_level="warning")
