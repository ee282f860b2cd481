"""The `sag-pg` command line: glue only — parse options, call the library, print."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

from ._common import run_main
from .ask import ask
from .bench import bench, bench_scale
from .cluster import cluster
from .communities import communities
from .db import db
from .demo import demo
from .documents import documents, export, show
from .graph import graph
from .ingest import delete, ingest, source, sources, stats
from .kg import kg
from .mcp import mcp
from .memory import memory
from .root import cli
from .search import search
from .serve import serve

for command in (db, demo, ingest, search, ask, cluster, bench, bench_scale, delete, source, sources, stats,
                graph, memory, kg):
    cli.add_command(command)
cli.add_command(communities)
cli.add_command(mcp)
cli.add_command(serve)
for command in (documents, show, export):
    cli.add_command(command)


def main(argv: Sequence[str] | None = None) -> None:
    sys.exit(run_main(cli, argv))


__all__ = ["cli", "main", "click"]
