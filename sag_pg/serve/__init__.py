"""`sag-pg serve`: a resident HTTP service (REST API with an OpenAPI document, the MCP endpoint) over one
:class:`~sag_pg.SAG` client, so the database pool, the embedder and the LLM client are loaded once.

Why FastAPI on uvicorn: the OpenAPI document is generated from the same typed parameters that validate the
requests (one source of truth, checked by a validator in the tests), it runs on Starlette — which the MCP
SDK's Streamable HTTP transport already is, so both mount in one process — and uvicorn is the maintained
ASGI server both document.  Imported only by the `serve` command.
"""

from __future__ import annotations

from ..http_auth import check_binding
from .app import create_app

__all__ = ["check_binding", "create_app"]
