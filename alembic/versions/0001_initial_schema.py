"""Initial schema: sources, documents, chunks, events, keys and their links.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

from alembic import op
from sag_pg.db.sqlfiles import apply_incremental

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    conn = op.get_bind().connection.driver_connection
    apply_incremental(conn, "001-schema.sql")


def downgrade() -> None:
    # Everything in schema sag except alembic's own version table, which alembic updates afterwards.
    op.execute(
        """
        do $$
        declare r record;
        begin
            for r in select format('%I.%I', n.nspname, c.relname) as name from pg_class c
                     join pg_namespace n on n.oid = c.relnamespace
                     where n.nspname = 'sag' and c.relkind = 'r' and c.relname <> 'alembic_version'
            loop execute 'drop table if exists ' || r.name || ' cascade'; end loop;
            for r in select p.oid::regprocedure as sig from pg_proc p
                     join pg_namespace n on n.oid = p.pronamespace where n.nspname = 'sag'
            loop execute 'drop function if exists ' || r.sig || ' cascade'; end loop;
        end $$;
        """
    )
