"""LLM answers of extraction calls, kept so a retried ingest resumes (sql/incremental/017-llm-answers.sql; issue
#37 item 13).

Revision ID: 0017
Revises: 0020
Create Date: 2026-11-27
"""

from __future__ import annotations

from alembic import op
from sag_pg.db.sqlfiles import apply_incremental

revision = "0017"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_incremental(op.get_bind().connection.driver_connection, "017-llm-answers.sql")


def downgrade() -> None:
    op.execute("drop table sag.llm_answers")
