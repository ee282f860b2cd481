"""${message}

Revision ID: ${up_revision}
Revises: ${down_revision | comma,n}
Create Date: ${create_date}
"""

from __future__ import annotations

from alembic import op
from sag_pg.db.sqlfiles import apply_idempotent, apply_incremental

revision = ${repr(up_revision)}
down_revision = ${repr(down_revision)}
branch_labels = None
depends_on = None


def upgrade() -> None:
    conn = op.get_bind().connection.driver_connection
    apply_incremental(conn, "NNN-name.sql")
    apply_idempotent(conn)


def downgrade() -> None:
    raise NotImplementedError("fix forward: sag-pg schema files are frozen once released")
