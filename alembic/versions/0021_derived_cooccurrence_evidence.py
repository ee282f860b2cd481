"""Co-occurrence evidence derived from the links, not stored; redundant foreign keys to sources dropped
(sql/incremental/021-derived-cooccurrence-evidence.sql; issue #36 item 11).

Revision ID: 0021
Revises: 0017
Create Date: 2026-11-28
"""

from __future__ import annotations

from alembic import op
from sag_pg.db.sqlfiles import apply_incremental

revision = "0021"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_incremental(op.get_bind().connection.driver_connection, "021-derived-cooccurrence-evidence.sql")


def downgrade() -> None:
    # The evidence rows again, derived as the upgrade's functions read them: the events linked to both keys.
    op.execute("""
        insert into sag.relation_events (source_id, relation_id, event_id)
        select r.source_id, r.id, a.event_id
          from sag.relations r
          join sag.event_keys a on a.source_id = r.source_id and a.key_id = r.head_key_id
          join sag.event_keys b on b.source_id = r.source_id and b.event_id = a.event_id and b.key_id = r.tail_key_id
         where r.origin = 'cooccurrence'
        on conflict do nothing""")
    for table in ("chunks", "events", "relations"):
        op.execute(f"alter table sag.{table} add constraint {table}_source_id_fkey foreign key (source_id) "
                   "references sag.sources (id) on delete cascade")
