"""Keys naming the same entity in two languages or scripts: sag.key_aliases
(sql/incremental/016-key-aliases.sql; issue 33 item 3).

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-27
"""

from __future__ import annotations

from alembic import op
from sag_pg.db.sqlfiles import apply_incremental

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_incremental(op.get_bind().connection.driver_connection, "016-key-aliases.sql")


def downgrade() -> None:
    op.execute("drop table if exists sag.key_aliases")
