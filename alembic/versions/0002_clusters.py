"""Event clusters: clustering runs, their clusters and the clusters' events (sag-algorithm §4).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23
"""

from __future__ import annotations

from alembic import op
from sag_pg.db.sqlfiles import apply_incremental

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    conn = op.get_bind().connection.driver_connection
    apply_incremental(conn, "002-clusters.sql")


def downgrade() -> None:
    # The clustering functions (sql/idempotent/040-cluster.sql) only read tables of revision 0001, so they
    # stay; 0001's downgrade drops every function of the schema.
    op.execute("drop table if exists sag.cluster_events, sag.clusters, sag.cluster_runs cascade")
