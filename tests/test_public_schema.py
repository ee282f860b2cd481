"""Issue #36: no sag function and no sag session resolves a name through a schema other roles can create in.

With the pre-PostgreSQL-15 default (CREATE on ``public`` for everyone), a role can create exact-type overloads
of built-ins in ``public`` (``public.array_agg(bigint)``, ``public.||(text, bigint)``); a superuser's command
whose SQL resolved names through ``public`` would run them.  Here a role creates such an overload of every
built-in function, aggregate and operator name that sag's SQL uses (with many argument types each), every
overload recording its call; then every command runs as the superuser, and nothing may have been called.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from sag_pg.cli import main

ROOT = Path(__file__).resolve().parent.parent

# Argument types of the hostile overloads: those sag's values have, and some they are coerced to.
TYPES_1 = ["bigint", "integer", "smallint", "text", "double precision", "real", "numeric", "jsonb", "boolean",
           "bigint[]", "text[]", "integer[]", "double precision[]", "real[]", "timestamptz", "json", "tsvector"]
TYPES_2 = ["bigint", "integer", "text", "double precision", "numeric", "jsonb", "bigint[]", "text[]", "real",
           "double precision[]"]
TYPES_3 = ["bigint", "integer", "text", "double precision", "jsonb", "bigint[]"]


def _used_names() -> tuple[set[str], set[str]]:
    """Function names followed by '(' and operator symbols in sag's SQL (idempotent files and sag_pg/db)."""
    texts = [p.read_text("utf-8") for p in sorted((ROOT / "sql" / "idempotent").glob("*.sql"))]
    texts += [p.read_text("utf-8") for p in sorted((ROOT / "sag_pg" / "db").glob("*.py"))]
    text = "\n".join(texts)
    names = {m.lower() for m in re.findall(r"(?<![\w.])([a-zA-Z_][a-zA-Z0-9_]*)\s*\(", text)}
    operators = set(re.findall(r"(?<![<>=!~*+\-/%^&|#@?])(\|\||->>|->|#>>|@>|<@|&&|<>|<=|>=|!=|[-+*/%^<>=~])"
                               r"(?![<>=!~*+\-/%^&|#@?])", text))
    return names, operators


HOSTILE = r"""
do $hostile$
declare
    f record;
    t1 text; t2 text; t3 text;
    types1 text[] := %(types1)s;
    types2 text[] := %(types2)s;
    types3 text[] := %(types3)s;
    made integer := 0;
begin
    create table public.hijacked (what text);
    grant insert, select on public.hijacked to public;
    create function public._hijack(what text) returns void language plpgsql as $f$
        begin insert into public.hijacked values (what); end $f$;
    -- Plain functions: every name sag uses, with the arities pg_catalog has for it.
    for f in select distinct p.proname, p.pronargs from pg_proc p
              where p.pronamespace = 'pg_catalog'::regnamespace and p.prokind = 'f' and p.proname = any (%(names)s)
                and p.pronargs between 1 and 3 and p.proname not like 'pg\_%%'
    loop
        foreach t1 in array types1 loop
            if f.pronargs = 1 then
                begin
                    execute format('create function public.%%I(%%s) returns %%s language plpgsql as '
                                   '$f$ begin perform public._hijack(%%L); return null; end $f$',
                                   f.proname, t1, t1, f.proname || '(' || t1 || ')');
                    made := made + 1;
                exception when others then null;
                end;
            elsif t1 = any (types2) then
                foreach t2 in array types2 loop
                    if f.pronargs = 2 then
                        begin
                            execute format('create function public.%%I(%%s, %%s) returns %%s language plpgsql as '
                                           '$f$ begin perform public._hijack(%%L); return null; end $f$',
                                           f.proname, t1, t2, t1, f.proname || '(' || t1 || ', ' || t2 || ')');
                            made := made + 1;
                        exception when others then null;
                        end;
                    elsif t1 = any (types3) and t2 = any (types3) then
                        foreach t3 in array types3 loop
                            begin
                                execute format('create function public.%%I(%%s, %%s, %%s) returns %%s language plpgsql '
                                               'as $f$ begin perform public._hijack(%%L); return null; end $f$',
                                               f.proname, t1, t2, t3, t1,
                                               f.proname || '(' || t1 || ', ' || t2 || ', ' || t3 || ')');
                                made := made + 1;
                            exception when others then null;
                            end;
                        end loop;
                    end if;
                end loop;
            end if;
        end loop;
    end loop;
    -- Aggregates: array_agg(bigint) and the like, their state function recording the call.
    for f in select distinct p.proname from pg_proc p
              where p.pronamespace = 'pg_catalog'::regnamespace and p.prokind = 'a' and p.proname = any (%(names)s)
    loop
        foreach t1 in array types1 loop
            begin
                execute format('create function public.%%I(s text, x %%s) returns text language plpgsql as '
                               '$f$ begin perform public._hijack(%%L); return s; end $f$',
                               '_agg_' || f.proname || '_' || md5(t1), t1, f.proname || '(' || t1 || ')');
                execute format('create aggregate public.%%I(%%s) (sfunc = public.%%I, stype = text)',
                               f.proname, t1, '_agg_' || f.proname || '_' || md5(t1));
                made := made + 1;
            exception when others then null;
            end;
        end loop;
    end loop;
    -- Operators: every symbol sag uses, for every pair of argument types.
    foreach t1 in array types2 loop
        foreach t2 in array types2 loop
            execute format('create function public.%%I(%%s, %%s) returns boolean language plpgsql as '
                           '$f$ begin perform public._hijack(%%L); return null; end $f$',
                           '_op_' || md5(t1 || t2), t1, t2, 'operator(' || t1 || ', ' || t2 || ')');
            for f in select pg_catalog.unnest(%(operators)s::text[]) as op loop
                begin
                    execute format('create operator public.%%s (leftarg = %%s, rightarg = %%s, function = public.%%I)',
                                   f.op, t1, t2, '_op_' || md5(t1 || t2));
                    made := made + 1;
                exception when others then null;
                end;
            end loop;
        end loop;
    end loop;
    raise notice 'hostile objects: %%', made;
end
$hostile$;
"""


@pytest.fixture
def hostile_db(db_dsn: str) -> Iterator[tuple[str, str]]:
    """The test database with ``public`` open to every role and a role's hostile overloads in it."""
    role = f"mallory_{uuid.uuid4().hex[:8]}"
    names, operators = _used_names()
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute(f'create role "{role}" nologin nosuperuser')
        conn.execute("grant create, usage on schema public to public")
        conn.execute(f'set role "{role}"')
        notices: list[str] = []
        conn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
        conn.execute(HOSTILE % {"types1": _array(TYPES_1), "types2": _array(TYPES_2), "types3": _array(TYPES_3),
                                "names": _array(sorted(names)), "operators": _array(sorted(operators))})
        conn.execute("reset role")
        assert _hijacked(db_dsn) == []  # (the block above names pg_catalog's functions itself)
        made = int(next(n for n in notices if n.startswith("hostile objects")).split(": ")[1])
        assert made > 2000, made  # the trap is wide
    try:
        yield db_dsn, role
    finally:
        with psycopg.connect(db_dsn, autocommit=True) as conn:
            conn.execute(f'drop owned by "{role}" cascade')
            conn.execute(f'drop role "{role}"')


def _array(values: list[str]) -> str:
    return "array[" + ", ".join("'" + v.replace("'", "''") + "'" for v in values) + "]::text[]"


def _hijacked(dsn: str) -> list[str]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return [r[0] for r in conn.execute("select distinct what from public.hijacked order by 1").fetchall()]


def test_the_trap_catches_a_session_that_resolves_through_public(hostile_db: tuple[str, str]) -> None:
    """The hostile overloads do run for a session whose search_path has public (the default): the test
    below can fail."""
    dsn, _ = hostile_db
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("select array_agg(x) from (values (1::bigint)) v(x)")
        conn.execute("select 'a'::text || 1::bigint")
    assert "array_agg(bigint)" in _hijacked(dsn)


def _cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, env: dict[str, str],
         *args: str) -> tuple[int, str, str]:
    """``sag-pg ARGS`` in this process, through the console script's entry point (errors as `Error:` lines)."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SystemExit) as exit_info:
        main(list(args))
    out, err = capsys.readouterr()
    return int(exit_info.value.code or 0), out, err


def test_every_command_as_superuser_runs_nothing_of_another_role(hostile_db: tuple[str, str], tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    dsn, role = hostile_db
    env = {"SAG_DATABASE_URL": dsn, "SAG_HOME": str(tmp_path / "home"), "SAG_LLM": "", "SAG_EMBEDDER": ""}
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Halvard\n\nHalvard Berg founded Fjord Capital in Oslo in 1998. "
                               "Fjord Capital financed the Svalbard expedition.\n", "utf-8")
    (docs / "b.md").write_text("# 沈墨\n\n沈墨毕业于北溟大学，后来主持青岚计划。青岚计划的总部在上海。\n", "utf-8")
    triples = tmp_path / "kg.nt"
    triples.write_text('<http://rdf.freebase.com/ns/m.01> <http://rdf.freebase.com/ns/type.object.name> "Oslo"@en .\n'
                       '<http://rdf.freebase.com/ns/m.01> <http://rdf.freebase.com/ns/location.location.containedby> '
                       '<http://rdf.freebase.com/ns/m.02> .\n'
                       '<http://rdf.freebase.com/ns/m.02> <http://rdf.freebase.com/ns/type.object.name> "Norway"@en .\n',
                       "utf-8")
    synonyms = tmp_path / "syn.json"
    synonyms.write_text(json.dumps({"Fjord": "Fjord Capital"}), "utf-8")
    commands = [
        ["db", "status"],
        ["source", "research", "--create", "--synonyms", str(synonyms)],
        ["ingest", str(docs), "--source", "research"],
        ["ingest", str(docs / "a.md"), "--source", "other"],
        ["search", "who financed the Svalbard expedition?", "--source", "research", "--explain"],
        ["search", "Fjord Capital", "--json", "--all-sources"],
        ["search", "沈墨毕业于哪所大学", "--source", "research", "--strategy", "dataflow", "--explain"],
        ["sources"], ["stats", "--source", "research"], ["documents", "--source", "research"],
        ["show", "docs/a.md", "--source", "research"], ["export", "--source", "research", "-o", str(tmp_path / "x.jsonl")],
        ["source", "research"],
        ["graph", "related", "Fjord Capital", "--source", "research", "--depth", "2"],
        ["graph", "relations", "--source", "research"],
        ["graph", "add", "Polar Batteries", "--type", "organization", "--source", "research"],
        ["graph", "tags", "--source", "research"],
        ["memory", "recall", "Halvard Fjord Capital", "--source", "research"],
        ["memory", "stats", "--json", "--source", "research"],
        ["memory", "evict", "--policy", "recall_based", "--max-items", "1", "--dry-run", "--source", "research"],
        ["kg", "import", str(triples), "--source", "kg"],
        ["kg", "relations", "m.01", "--source", "kg"],
        ["kg", "triples", "m.01", "location.location.containedby", "--source", "kg"],
        ["cluster", "--source", "research", "--json"],
        ["communities", "build", "--source", "research"],
        ["communities", "list", "--source", "research"],
        ["search", "Fjord Capital", "--source", "research", "--strategy", "local", "--json"],
        ["delete", "docs/b.md", "--source", "research"],
        ["source", "other", "--delete", "--yes"],
    ]
    ran = []
    for args in commands:
        code, out, err = _cli(capsys, monkeypatch, env, *args)
        ran.append((args, code, (out + err)[-300:]))
        assert _hijacked(dsn) == [], f"`sag-pg {' '.join(args)}` ran another role's function"
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert conn.execute("select rolsuper from pg_roles where rolname = %s", [role]).fetchone() == (False,)
        # psql's surface, called by an analyst whose session searches public first.
        conn.execute("set search_path = public, sag")
        conn.execute("select * from sag.search(query => 'Fjord Capital', source => 'research', top_n => 3)").fetchall()
        # The two functions left unpinned so that PostgreSQL can inline them name only pg_catalog's objects.
        conn.execute("select sag_internal._key_weight('topic', 3, 100::bigint, '{}'::jsonb), sag.key_signature('ai302')")
    assert _hijacked(dsn) == [], ran
    # The commands did their work (the trap did not just make them fail early).
    failed = [(a, code, out) for a, code, out in ran if code != 0]
    assert not failed, failed


def test_every_sag_function_pins_a_search_path_without_public(db_dsn: str) -> None:
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        rows = conn.execute(
            "select p.oid::regprocedure::text, p.proconfig from pg_proc p"
            " where p.pronamespace in ('sag'::regnamespace, 'sag_internal'::regnamespace)").fetchall()
    assert len(rows) > 100
    inlined = {"sag_internal._key_weight(text,integer,bigint,jsonb)", "sag.key_signature(text)"}
    bad = [(name, config) for name, config in rows if name not in inlined and (
           not any(c.startswith("search_path=") for c in config or [])
           or any(c.startswith("search_path=") and "public" in c for c in config or []))]
    assert bad == []


def test_upgrade_refuses_a_writable_extension_schema_holding_another_roles_functions(
        empty_db_dsn: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    role = f"mallory_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(empty_db_dsn, autocommit=True) as conn:
        conn.execute("create extension if not exists vector")
        conn.execute("create extension if not exists pg_trgm")
        conn.execute(f'create role "{role}" nologin nosuperuser')
        conn.execute("grant create, usage on schema public to public")
        conn.execute(f'set role "{role}"')
        conn.execute("create function public.array_agg(bigint) returns bigint language sql as 'select 1'")
        conn.execute("reset role")
    try:
        code, _, err = _cli(capsys, monkeypatch, {"SAG_DATABASE_URL": empty_db_dsn}, "db", "upgrade")
        assert code == 1
        assert err.startswith("Error: ") and "array_agg(bigint)" in err and role in err
        with psycopg.connect(empty_db_dsn, autocommit=True) as conn:
            assert conn.execute("select to_regclass('sag.documents')").fetchone() == (None,)
    finally:
        with psycopg.connect(empty_db_dsn, autocommit=True) as conn:
            conn.execute(f'drop owned by "{role}" cascade')
            conn.execute(f'drop role "{role}"')
