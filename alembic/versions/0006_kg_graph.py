"""Knowledge graph: relations between keys, key descriptions, tags, recall statistics (issue #17).

Revision ID: 0006
Revises: 0004
Create Date: 2026-11-24
"""

from __future__ import annotations

from alembic import op
from sag_pg.db.sqlfiles import apply_incremental

revision = "0006"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_incremental(op.get_bind().connection.driver_connection, "006-kg-graph.sql")


def downgrade() -> None:
    op.execute("drop table if exists sag.recall_stats, sag.key_tags, sag.tags, sag.relation_events, sag.relations")
    op.execute("drop trigger if exists keys_keep_pinned on sag.keys")
    op.execute("drop trigger if exists event_keys_cooccurrence on sag.event_keys")
    op.execute("drop function if exists sag._keep_pinned_key(), sag._relation_evidence_gone(), sag._links_added()")
    op.execute("alter table sag.keys drop column if exists pinned, drop column if exists description")
