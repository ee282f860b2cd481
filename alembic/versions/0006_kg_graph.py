"""Knowledge graph: relations between keys, key descriptions, tags, recall statistics (issue #17).

Revision ID: 0006
Revises: 0004
Create Date: 2026-11-24
"""

from __future__ import annotations

import re

from alembic import op
from sag_pg._resources import idempotent_sql_files
from sag_pg.db.sqlfiles import apply_incremental

# The functions of sql/idempotent/050-059: they read the tables this revision makes, so they go with them.
# sag_internal: the downgrade of 0012 has moved the internal ones back into sag by the time this runs.
_FUNCTION = re.compile(r"create or replace function sag(?:_internal)?\.(\w+)\(")

revision = "0006"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_incremental(op.get_bind().connection.driver_connection, "006-kg-graph.sql")


def downgrade() -> None:
    names = sorted({name for path in idempotent_sql_files() if path.name[:2] == "05"
                    for name in _FUNCTION.findall(path.read_text(encoding="utf-8"))})
    listed = ", ".join(f"'{n}'" for n in names)
    # Signatures first: a cascade (SQL-standard bodies depend on what they call) may drop some before their turn.
    # Schema-qualified by hand, not by changing search_path: the later downgrades run in this transaction.
    op.execute("do $$ declare sig text; begin "
               "for sig in select unnest(array(select 'sag.' || quote_ident(p.proname) || '(' "
               "|| pg_get_function_identity_arguments(p.oid) || ')' from pg_proc p "
               f"where p.pronamespace = 'sag'::regnamespace and p.proname = any(array[{listed}]::text[]))) loop "
               "execute 'drop function if exists ' || sig || ' cascade'; end loop; end $$")
    op.execute("drop table if exists sag.recall_stats, sag.key_tags, sag.tags, sag.relation_events, sag.relations")
    op.execute("drop trigger if exists keys_keep_pinned on sag.keys")
    op.execute("drop trigger if exists event_keys_cooccurrence on sag.event_keys")
    op.execute("drop function if exists sag._keep_pinned_key(), sag._relation_evidence_gone(), sag._links_added()")
    op.execute("alter table sag.keys drop column if exists pinned, drop column if exists description")
