"""Embeddings stored as half-precision vectors (halfvec), HNSW indexes with halfvec_cosine_ops.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23
"""

from __future__ import annotations

from alembic import op
from sag_pg.db.sqlfiles import apply_incremental

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_incremental(op.get_bind().connection.driver_connection, "004-halfvec.sql")


def downgrade() -> None:
    # Back to float4 vectors (the values keep their half precision); 0003's functions build the indexes
    # with vector_cosine_ops again (sag.create_vector_indexes, on the next sag.bind_embedder).
    op.execute("""
do $$
declare
    dim integer := (select atttypmod from pg_attribute where attrelid = 'sag.keys'::regclass and attname = 'embedding');
    target text := case when dim > 0 then format('vector(%s)', dim) else 'vector' end;
    tbl text;
begin
    drop index if exists sag.chunks_embedding_hnsw, sag.events_embedding_hnsw, sag.keys_embedding_hnsw;
    foreach tbl in array array['chunks', 'events', 'keys'] loop
        execute format('alter table sag.%I alter column embedding type %s', tbl, target);
        execute format('alter table sag.%I alter column embedding set storage %s',
                       tbl, case when dim between 1 and 1500 then 'plain' else 'main' end);
    end loop;
end $$""")
