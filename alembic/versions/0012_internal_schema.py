"""Internal functions in their own schema, sag_internal (sql/incremental/012-internal-schema.sql).

Revision ID: 0012
Revises: 0008
Create Date: 2026-11-24
"""

from __future__ import annotations

from alembic import op
from sag_pg.db.sqlfiles import apply_incremental

revision = "0012"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_incremental(op.get_bind().connection.driver_connection, "012-internal-schema.sql")


def downgrade() -> None:
    # Back into sag under the same names, where the older revisions' downgrades look for them.
    op.execute("""
do $$
declare
    f record;
begin
    for f in select p.proname, pg_get_function_identity_arguments(p.oid) as args
               from pg_proc p where p.pronamespace = 'sag_internal'::regnamespace
    loop
        execute format('alter function sag_internal.%I(%s) set schema sag', f.proname, f.args);
    end loop;
end $$
""")
    op.execute("drop schema if exists sag_internal")
