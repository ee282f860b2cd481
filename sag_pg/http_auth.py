"""Who may call sag-pg's HTTP services (`sag-pg serve`, `sag-pg mcp --http`): the bearer token
(``SAG_API_TOKEN``), required whenever a service listens beyond loopback, compared in constant time."""

from __future__ import annotations

import hmac
import ipaddress
import json
from typing import Any

from .errors import ConfigError

__all__ = ["BearerGuard", "authorized", "check_binding", "is_loopback"]


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost: it may resolve anywhere


def check_binding(host: str, token: str | None) -> None:
    """Refuse to listen beyond loopback without a token (one clear error before anything starts)."""
    if not is_loopback(host) and not token:
        raise ConfigError(f"--host {host} listens beyond this machine: set SAG_API_TOKEN (a bearer token every "
                          "request must send) or listen on 127.0.0.1")
    if token is not None and len(token) < 16:
        raise ConfigError("SAG_API_TOKEN is shorter than 16 characters: use a long random token "
                          "(e.g. `python -c 'import secrets; print(secrets.token_urlsafe(32))'`)")


def authorized(header: str | None, token: str | None) -> bool:
    """``Authorization: Bearer <token>`` when a token is set; anything when none is (loopback only)."""
    if token is None:
        return True
    if not header or not header.startswith("Bearer "):
        return False
    return hmac.compare_digest(header[len("Bearer "):].encode(), token.encode())


class BearerGuard:
    """ASGI middleware: every HTTP request needs ``Authorization: Bearer <token>`` (401 problem JSON
    otherwise); paths starting with one of ``open_paths`` are let through (a page without data)."""

    def __init__(self, app: Any, token: str | None, open_paths: tuple[str, ...] = ()) -> None:
        self.app, self.token, self.open_paths = app, token, open_paths

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and self.token is not None:
            path = scope.get("path", "")
            if not any(path == p or (p.endswith("/") and path.startswith(p)) for p in self.open_paths):
                header = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1")
                if not authorized(header, self.token):
                    body = json.dumps({"type": "about:blank", "title": "Unauthorized", "status": 401,
                                       "detail": "send Authorization: Bearer <SAG_API_TOKEN>"}).encode()
                    await send({"type": "http.response.start", "status": 401,
                                "headers": [(b"content-type", b"application/problem+json"),
                                            (b"www-authenticate", b"Bearer"),
                                            (b"content-length", str(len(body)).encode())]})
                    await send({"type": "http.response.body", "body": body})
                    return
        await self.app(scope, receive, send)
