"""KG query tools (issue #18): entity names per language, the RDF import staging table, an index for incoming
relations.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24
"""

from __future__ import annotations

from alembic import op
from sag_pg.db.sqlfiles import apply_incremental

revision = "0007"
down_revision = "0006"  # needs sag.relations (0006)
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_incremental(op.get_bind().connection.driver_connection, "007-kg-tools.sql")


def downgrade() -> None:
    op.execute("drop index if exists sag.relations_tail_type_idx")
    op.execute("drop table if exists sag.kg_import_rows, sag.kg_names")
    op.execute("drop sequence if exists sag.kg_import_batches")
