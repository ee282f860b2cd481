"""A real SPARQL engine (Oxigraph, in-process) behind the SPARQL 1.1 protocol, for the SPARQL backend's tests."""

from __future__ import annotations

import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pyoxigraph
import pytest


class SparqlServer:
    def __init__(self, ntriples: Path) -> None:
        self.store = pyoxigraph.Store()
        self.store.load(path=str(ntriples), format=pyoxigraph.RdfFormat.N_TRIPLES)
        self.queries: list[str] = []
        store, queries = self.store, self.queries

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
                query = urllib.parse.parse_qs(body).get("query", [""])[0]
                queries.append(query)
                try:
                    payload = store.query(query).serialize(format=pyoxigraph.QueryResultsFormat.JSON)
                    status = 200
                except SyntaxError as exc:
                    payload, status = str(exc).encode(), 400
                self.send_response(status)
                self.send_header("Content-Type", "application/sparql-results+json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/sparql"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def sparql_server_for(ntriples: Path) -> Iterator[SparqlServer]:
    server = SparqlServer(ntriples)
    try:
        yield server
    finally:
        server.stop()


__all__ = ["SparqlServer", "pytest", "sparql_server_for"]
