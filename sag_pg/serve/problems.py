"""Errors as RFC 9457 problem documents (``application/problem+json``) whose ``detail`` is the message the
CLI prints after ``Error:``: the same :func:`sag_pg.errors.user_error` decides what a user may read."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from ..errors import (
    ConfigError,
    DatabaseError,
    EmbedderMismatchError,
    LLMError,
    NotFoundError,
    QueryError,
    SagError,
    user_error,
)
from ..mcp.policy import RefusedError

__all__ = ["install_problem_handlers", "problem"]

_TITLES = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 409: "Conflict",
           422: "Unprocessable Content", 500: "Internal Server Error", 502: "Bad Gateway",
           503: "Service Unavailable"}


def problem(status: int, title: str | None, detail: str, *, headers: dict[str, str] | None = None,
            **extra: Any) -> JSONResponse:
    body = {"type": "about:blank", "title": title or _TITLES.get(status, "Error"), "status": status,
            "detail": detail, **extra}
    return JSONResponse(body, status_code=status, media_type="application/problem+json", headers=headers)


def status_of(error: SagError) -> int:
    if isinstance(error, RefusedError):
        return 403
    if isinstance(error, NotFoundError):
        return 404
    if isinstance(error, QueryError):
        return 400
    if isinstance(error, LLMError):
        return 502
    if isinstance(error, (DatabaseError, EmbedderMismatchError, ConfigError)):
        return 503
    return 422


def install_problem_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        first = errors[0] if errors else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p not in ("query", "path", "body"))
        detail = f"{where}: {first.get('msg', 'invalid')}" if where else str(first.get("msg", "invalid request"))
        return problem(422, None, detail, errors=[{"loc": list(e.get("loc", ())), "msg": e.get("msg")}
                                                  for e in errors])

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        return problem(exc.status_code, None, str(exc.detail))

    @app.exception_handler(Exception)
    async def library_error(request: Request, exc: Exception) -> JSONResponse:
        error = user_error(exc)
        if error is None:  # a bug: no details to the client (the server logs the traceback)
            raise exc
        return problem(status_of(error), None, str(error))
