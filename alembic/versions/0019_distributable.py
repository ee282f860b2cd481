"""The pending term statistics keyed by (source_id, id), kg_names identified by the whole row (a shard moves by
logical replication), and sag_internal._colocate for later per-source tables
(sql/incremental/019-distributable.sql; issue #32, the schema Citus distributes).

Revision ID: 0019
Revises: 0016
Create Date: 2026-11-27
"""

from __future__ import annotations

from alembic import op
from sag_pg.db.sqlfiles import apply_incremental

revision = "0019"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_incremental(op.get_bind().connection.driver_connection, "019-distributable.sql")


def downgrade() -> None:
    op.execute("alter table sag.kg_names replica identity default")
    op.execute("drop function if exists sag_internal._colocate(regclass)")
    op.execute("alter table sag.term_stats_pending drop constraint term_stats_pending_source_id_fkey")
    op.execute("alter table sag.term_stats_pending drop constraint term_stats_pending_pkey")
    op.execute("alter table sag.term_stats_pending add constraint term_stats_pending_pkey primary key (id)")
