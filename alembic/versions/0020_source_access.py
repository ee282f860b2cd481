"""Per-source access for SQL roles: row-level security on every per-source table, grants as role memberships
(sql/incremental/020-source-access.sql; issue #36 item 12).

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-28
"""

from __future__ import annotations

from alembic import op
from sag_pg.db.sqlfiles import apply_incremental

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

def upgrade() -> None:
    apply_incremental(op.get_bind().connection.driver_connection, "020-source-access.sql")


def downgrade() -> None:
    op.execute("""
        do $$
        declare
            tbl text;
        begin
            for tbl in select c.relname from pg_catalog.pg_policy p join pg_catalog.pg_class c on c.oid = p.polrelid
                        where p.polname = 'readable_sources' and c.relnamespace = 'sag'::regnamespace loop
                execute format('drop policy readable_sources on sag.%I', tbl);
                execute format('alter table sag.%I disable row level security', tbl);
            end loop;
        end;
        $$""")
    op.execute("drop function if exists sag_internal._may_read(bigint)")
