"""GraphRAG: community hierarchy (level, parent) on sag.clusters and sag.community_reports.

Revision ID: 0008
Revises: 0004
Create Date: 2026-11-24
"""

from __future__ import annotations

from alembic import op
from sag_pg.db.sqlfiles import apply_incremental

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_incremental(op.get_bind().connection.driver_connection, "008-graphrag.sql")


def downgrade() -> None:
    op.execute("""
drop table if exists sag.community_reports;
delete from sag.clusters where level > 0;
alter table sag.clusters drop constraint clusters_run_level_ordinal_key;
alter table sag.clusters add constraint clusters_run_id_ordinal_key unique (run_id, ordinal);
alter table sag.clusters drop column membership_hash, drop column parent_id, drop column level;
""")
