"""A real OpenAI-compatible HTTP server for tests, on 127.0.0.1 in a background thread.

It answers ``POST /v1/chat/completions`` from a queue of scripted responses (status,
body or assistant text, delay, headers) or, when the queue is empty, from a responder
callable; ``POST /v1/embeddings`` returns deterministic unit vectors. Every request body
is recorded so tests can assert on the prompts that reached the server.

A request with ``"stream": true`` gets its assistant text as server-sent events, one word a piece, ``gap``
seconds apart (``delay`` before the first, as a model reads the prompt first); a client that closes the
connection mid-answer is counted in ``cancelled`` and the rest is not generated, as llama.cpp's server does.

Register the ``openai_server`` fixture with ``pytest_plugins = ["tests.openai_server"]``
in the top-level conftest, or import it into a test module.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

import pytest


@dataclass
class Scripted:
    """One scripted answer. ``content`` becomes the assistant message of a chat completion;
    ``body`` (any JSON) or ``raw`` (bytes) is sent as is instead."""

    content: str | None = None
    status: int = 200
    body: Any = None
    raw: bytes | None = None
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    usage: tuple[int, int] | None = (10, 5)
    gap: float = 0.0  # between two streamed pieces (an unstreamed answer waits for all of them)


Responder = Callable[[dict[str, Any]], "str | Scripted | dict[str, Any]"]


def error_body(
    message: str, *, type_: str = "invalid_request_error", param: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": param, "code": None}}


def embedding(text: str, dim: int) -> list[float]:
    """A unit vector derived from sha256(text): equal texts, equal vectors."""
    values: list[float] = []
    counter = 0
    while len(values) < dim:
        digest = hashlib.sha256(f"{counter}:{text}".encode()).digest()
        values.extend(v / 2**31 - 1.0 for v in struct.unpack("<8I", digest))
        counter += 1
    values = values[:dim]
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


class FakeOpenAIServer:
    """Scriptable OpenAI-compatible server; see the module docstring."""

    def __init__(self, *, embedding_dim: int = 8) -> None:
        self.embedding_dim = embedding_dim
        self.responder: Responder | None = None
        self.requests: list[dict[str, Any]] = []
        self.embedding_requests: list[dict[str, Any]] = []
        self.headers_seen: list[dict[str, str]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.cancelled = 0  # streamed answers whose client closed the connection before the end
        self.pieces_sent = 0
        self._queue: deque[Scripted] = deque()
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting ----------------------------------------------------------------------

    def script(self, *responses: Scripted | str) -> None:
        """Queue answers, used in order before the responder; a plain string is assistant content."""
        with self._lock:
            self._queue.extend(r if isinstance(r, Scripted) else Scripted(content=r) for r in responses)

    def fail(self, status: int, message: str = "scripted failure", **kwargs: Any) -> Scripted:
        """A scripted error answer with an OpenAI-style error body (queued, and returned)."""
        scripted = Scripted(status=status, body=error_body(message), **kwargs)
        self.script(scripted)
        return scripted

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    @property
    def chat_count(self) -> int:
        with self._lock:
            return len(self.requests)

    def prompts(self) -> list[str]:
        """The last user message of every chat request, in arrival order."""
        with self._lock:
            return [_last_user(r) for r in self.requests]

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> FakeOpenAIServer:
        server = self

        class Handler(_Handler):
            fake = server

        self._httpd = _QuietServer(("127.0.0.1", 0), Handler)
        # A short poll interval: shutdown() waits for the loop to notice, once per test.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- answering (called from handler threads) -----------------------------------------

    def _next_chat(self, request: dict[str, Any]) -> Scripted:
        with self._lock:
            self.requests.append(request)
            scripted = self._queue.popleft() if self._queue else None
        if scripted is not None:
            return scripted
        if self.responder is None:
            # 400 is not retried by the client, so a missing script fails the test at once.
            return Scripted(status=400, body=error_body("fake server: no scripted response left"))
        answer = self.responder(request)
        if isinstance(answer, Scripted):
            return answer
        if isinstance(answer, dict):
            return Scripted(body=answer)
        return Scripted(content=answer)

    def _enter(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1


def _pieces(content: str) -> list[str]:
    """An answer in the pieces a model streams: one word (with the space after it) each."""
    return re.findall(r"\S+\s*|\s+", content) or [""]


def _last_user(request: dict[str, Any]) -> str:
    for message in reversed(request.get("messages", [])):
        if message.get("role") == "user":
            return str(message.get("content", ""))
    return ""


def completion(request: dict[str, Any], content: str, usage: tuple[int, int] | None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", "fake"),
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
    }
    if usage is not None:
        body["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}
    return body


def _encode(vector: list[float], as_base64: bool) -> list[float] | str:
    # The openai client asks for base64 (little-endian float32) unless told otherwise.
    if as_base64:
        return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
    return vector


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out closes the socket under a delayed answer: expected, not noise.
        pass


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAIServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            request = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self._send(400, json.dumps(error_body("body is not JSON")).encode())
            return
        path = self.path.split("?", 1)[0].rstrip("/")
        if path.endswith("/chat/completions"):
            self._chat(request)
        elif path.endswith("/embeddings"):
            self._embeddings(request)
        else:
            self._send(404, json.dumps(error_body(f"no route {self.path}")).encode())

    def _chat(self, request: dict[str, Any]) -> None:
        fake = self.fake
        with fake._lock:
            fake.headers_seen.append({k.lower(): v for k, v in self.headers.items()})
        fake._enter()
        try:
            scripted = fake._next_chat(request)
            if scripted.delay:
                time.sleep(scripted.delay)
            streamed = (request.get("stream") and scripted.raw is None and scripted.body is None
                        and scripted.status == 200)
            if streamed:
                self._stream(request, scripted)
                return
            pieces = _pieces(scripted.content or "")
            if scripted.gap and len(pieces) > 1:
                time.sleep(scripted.gap * (len(pieces) - 1))
        finally:
            fake._leave()
        if scripted.raw is not None:
            payload = scripted.raw
        elif scripted.body is not None:
            payload = json.dumps(scripted.body).encode()
        else:
            payload = json.dumps(completion(request, scripted.content or "", scripted.usage)).encode()
        self._send(scripted.status, payload, scripted.headers)

    def _stream(self, request: dict[str, Any], scripted: Scripted) -> None:
        fake = self.fake
        events = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": piece}}]}
                  for piece in _pieces(scripted.content or "")]
        if (request.get("stream_options") or {}).get("include_usage") and scripted.usage is not None:
            events.append({"choices": [], "usage": {"prompt_tokens": scripted.usage[0],
                                                    "completion_tokens": scripted.usage[1],
                                                    "total_tokens": sum(scripted.usage)}})
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            for name, value in scripted.headers.items():
                self.send_header(name, value)
            self.end_headers()
            for n, event in enumerate(events):
                if n and scripted.gap:
                    time.sleep(scripted.gap)
                self._chunk(f"data: {json.dumps(event)}\n\n".encode())
                with fake._lock:
                    fake.pieces_sent += 1
            self._chunk(b"data: [DONE]\n\n")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            with fake._lock:
                fake.cancelled += 1  # the client closed the connection: stop generating

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _embeddings(self, request: dict[str, Any]) -> None:
        fake = self.fake
        with fake._lock:
            fake.embedding_requests.append(request)
        inputs = request.get("input", [])
        texts = [inputs] if isinstance(inputs, str) else [str(t) for t in inputs]
        dim = int(request.get("dimensions") or fake.embedding_dim)
        as_base64 = request.get("encoding_format") == "base64"
        body = {
            "object": "list",
            "model": request.get("model", "fake"),
            "data": [
                {"object": "embedding", "index": i, "embedding": _encode(embedding(text, dim), as_base64)}
                for i, text in enumerate(texts)
            ],
            "usage": {"prompt_tokens": sum(len(t.split()) for t in texts), "total_tokens": 0},
        }
        self._send(200, json.dumps(body).encode())

    def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
        except OSError:
            pass  # the client gave up (timeout) before the answer was ready


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAIServer]:
    """A started :class:`FakeOpenAIServer`; ``.base_url`` is what an OpenAI client needs."""
    with FakeOpenAIServer() as server:
        yield server
