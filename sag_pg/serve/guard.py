"""Who may call the service: the bearer token (``SAG_API_TOKEN``), required whenever it listens beyond
loopback, compared in constant time; and the read-only default (writes only with ``--allow-writes``)."""

from __future__ import annotations

import hmac
import ipaddress

from ..errors import ConfigError

__all__ = ["authorized", "check_binding", "is_loopback"]


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
