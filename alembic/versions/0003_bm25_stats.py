"""BM25 corpus statistics kept by ingestion; embeddings stored inline.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

from __future__ import annotations

from alembic import op
from sag_pg.db.sqlfiles import apply_incremental

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_incremental(op.get_bind().connection.driver_connection, "003-bm25-stats.sql")


def downgrade() -> None:
    # BM25 (sql/idempotent/031) reads these tables: 0002's functions count the statistics per query, so
    # re-apply the functions of that version after downgrading (they are not kept here).
    op.execute("drop trigger if exists chunks_queue_term_stats_insert on sag.chunks")
    op.execute("drop trigger if exists chunks_queue_term_stats_delete on sag.chunks")
    op.execute("drop trigger if exists chunks_queue_term_stats_update on sag.chunks")
    op.execute("drop function if exists sag._queue_inserted_chunks(), sag._queue_deleted_chunks(), "
               "sag._queue_updated_chunks()")
    op.execute("drop table if exists sag.term_stats_pending, sag.corpus_stats, sag.term_stats")
    for table in ("chunks", "events", "keys"):
        op.execute(f"alter table sag.{table} alter column embedding set storage extended")
