"""`sag-pg source S --aliases / --add-aliases FILE / --unalias NAME=OTHER`: the key aliases of a source
(sag.key_aliases, issue 33)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..db import aliases
from ..db.sources import source_ids_by_name
from ._common import AppContext, echo_json


def _fold(name: str) -> str:
    return "".join(name.casefold().split())


def _pairs_file(path: str) -> list[tuple[str, str]]:
    try:
        table = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise click.BadParameter(f"{path}: {exc}", param_hint="--add-aliases") from None
    if not isinstance(table, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in table.items()):
        raise click.BadParameter(f'{path}: expected a JSON object {{"name": "other name"}}', param_hint="--add-aliases")
    return list(table.items())


def source_aliases(app: AppContext, name: str, *, list_aliases: bool, add_file: str | None,
                   unalias: tuple[str, ...], as_json: bool) -> None:
    undo = []
    for item in unalias:
        first, sep, second = item.partition("=")
        if not sep or not first.strip() or not second.strip():
            raise click.BadParameter(f"{item!r}: expected NAME=OTHER", param_hint="--unalias")
        undo.append((_fold(first), _fold(second)))
    pairs = _pairs_file(add_file) if add_file else []
    with app.sag().db.connect(autocommit=True) as conn:
        source_id = source_ids_by_name(conn).get(name)
        if source_id is None:
            raise click.ClickException(f"no source named {name!r}")
        if pairs:
            for first, second, linked in aliases.add_aliases(conn, source_id, pairs):
                click.echo(f"{first} = {second}: " + (f"{linked} key pair(s) linked" if linked else
                                                      "no key of one of these names"), err=True)
        for first, second in undo:
            found = [p for p in aliases.list_aliases(conn, source_id)
                     if {_fold(p.key_name), _fold(p.alias_name)} == {first, second}]
            if not found:
                raise click.ClickException(f"{first}={second}: no such alias pair in source {name!r}")
            for p in found:
                aliases.reject_alias(conn, source_id, p.key_id, p.alias_key_id)
                click.echo(f"undone: {p.key_type}:{p.key_name} = {p.alias_type}:{p.alias_name}", err=True)
        if list_aliases:
            listed = aliases.list_aliases(conn, source_id)
            if as_json:
                echo_json({"source": name, "aliases": [p.to_dict() for p in listed]})
                return
            for p in listed:
                mark = " (undone)" if p.rejected else ""
                where = f"chunk {p.chunk_id}" if p.chunk_id is not None else "given"
                click.echo(f"{p.key_type}:{p.key_name} = {p.alias_type}:{p.alias_name}  [{p.origin}, {where}]{mark}")
