"""A comparable description of everything in schemas sag and sag_internal (functions): columns, constraints, indexes, functions."""

from __future__ import annotations

import psycopg


def snapshot(conn: psycopg.Connection) -> dict[str, list[tuple]]:  # type: ignore[type-arg]
    q = {
        "columns": """select table_name, column_name, data_type, udt_name, is_nullable, column_default,
                             is_generated, generation_expression
                        from information_schema.columns where table_schema = 'sag' and table_name <> 'alembic_version'
                       order by 1, 2""",
        "constraints": """select conrelid::regclass::text, conname, pg_get_constraintdef(oid) from pg_constraint
                           where connamespace = 'sag'::regnamespace
                             and conrelid::regclass::text <> 'sag.alembic_version' order by 1, 2""",
        "indexes": """select tablename, indexname, indexdef from pg_indexes where schemaname = 'sag'
                       and tablename <> 'alembic_version' order by 1, 2""",
        "functions": """select p.oid::regprocedure::text, md5(pg_get_functiondef(p.oid)),
                               obj_description(p.oid, 'pg_proc') is not null
                          from pg_proc p
                         where p.pronamespace in (select oid from pg_namespace where nspname in ('sag', 'sag_internal'))
                         order by 1""",
        "extensions": "select extname from pg_extension order by 1",
    }
    return {name: [tuple(r) for r in conn.execute(sql).fetchall()] for name, sql in q.items()}
