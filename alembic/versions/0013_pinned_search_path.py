"""No sag function resolves names through public (sql/incremental/013-pinned-search-path.sql; issue #36).

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-27
"""

from __future__ import annotations

from alembic import op
from sag_pg.db.sqlfiles import apply_incremental

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_incremental(op.get_bind().connection.driver_connection, "013-pinned-search-path.sql")


def downgrade() -> None:
    # The pinned paths and the qualified key_signature are as correct under revision 0012: nothing to undo.
    pass
