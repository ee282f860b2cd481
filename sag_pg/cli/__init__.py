"""The `sag-pg` command line: glue only — parse options, call the library, print."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

from ._common import run_main
from .db import db

# Subcommand modules register themselves on `cli` when imported below.
from .root import cli

cli.add_command(db)


def main(argv: Sequence[str] | None = None) -> None:
    sys.exit(run_main(cli, argv))


__all__ = ["cli", "main", "click"]
