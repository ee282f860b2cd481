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

_TABLES = ("documents", "chunks", "events", "keys", "event_keys", "chunk_keys", "relations", "relation_events",
           "tags", "key_tags", "kg_names", "recall_stats", "term_stats", "corpus_stats", "term_stats_pending",
           "cluster_events", "sources")


def upgrade() -> None:
    apply_incremental(op.get_bind().connection.driver_connection, "020-source-access.sql")


def downgrade() -> None:
    for table in _TABLES:
        op.execute(f"drop policy if exists readable_sources on sag.{table}")
        op.execute(f"alter table sag.{table} disable row level security")
    op.execute("drop function if exists sag_internal._may_read(bigint)")
