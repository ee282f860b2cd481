"""No triggers on sag's tables: their work is explicit in the ingest and delete functions
(sql/incremental/014-no-triggers.sql; issue #32, a table with triggers cannot be distributed by Citus).

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-27
"""

from __future__ import annotations

from alembic import op
from sag_pg.db.sqlfiles import apply_incremental

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_incremental(op.get_bind().connection.driver_connection, "014-no-triggers.sql")


def downgrade() -> None:
    # Revision 0013's functions keep the explicit steps (they are re-applied from the newest idempotent files
    # by any later upgrade); triggers would do the same work twice.  Nothing to restore.
    pass
