"""Every per-source key carries source_id: primary keys (source_id, id), link tables with source_id, composite
foreign keys (sql/incremental/015-source-keys.sql; issue #32, step A of the Citus schema).

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-27
"""

from __future__ import annotations

from alembic import op
from sag_pg.db.sqlfiles import apply_incremental

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply_incremental(op.get_bind().connection.driver_connection, "015-source-keys.sql")


_DOWNGRADE = """
do $$
declare
    fk record;
    tbl text;
begin
    for fk in select c.conrelid::regclass as tbl, c.conname from pg_constraint c
               where c.contype = 'f'
                 and c.confrelid in ('sag.documents'::regclass, 'sag.chunks'::regclass, 'sag.events'::regclass,
                                     'sag.keys'::regclass, 'sag.relations'::regclass, 'sag.tags'::regclass)
    loop
        execute format('alter table %s drop constraint %I', fk.tbl, fk.conname);
    end loop;
    foreach tbl in array array['documents', 'chunks', 'events', 'keys', 'relations', 'tags'] loop
        execute format('alter table sag.%I drop constraint %I', tbl, tbl || '_pkey');
        execute format('alter table sag.%I add constraint %I primary key (id)', tbl, tbl || '_pkey');
        execute format('drop index sag.%I', tbl || '_id_idx');
    end loop;
end $$;
-- Dropping the column drops the keys and indexes that hold it.
alter table sag.event_keys drop column source_id;
alter table sag.event_keys add constraint event_keys_pkey primary key (event_id, key_id);
create index event_keys_key_idx on sag.event_keys (key_id, event_id);
alter table sag.chunk_keys drop column source_id;
alter table sag.chunk_keys add constraint chunk_keys_pkey primary key (chunk_id, key_id);
create index chunk_keys_key_idx on sag.chunk_keys (key_id, chunk_id);
alter table sag.relation_events drop column source_id;
alter table sag.relation_events add constraint relation_events_pkey primary key (relation_id, event_id);
create index relation_events_event_idx on sag.relation_events (event_id);
alter table sag.key_tags drop column source_id;
alter table sag.key_tags add constraint key_tags_pkey primary key (key_id, tag_id);
create index key_tags_tag_idx on sag.key_tags (tag_id);
alter table sag.recall_stats drop column source_id;
alter table sag.recall_stats add constraint recall_stats_pkey primary key (document_id);
alter table sag.cluster_events drop column source_id;
create index cluster_events_event_idx on sag.cluster_events (event_id);
alter table sag.chunks drop constraint chunks_source_id_document_id_ordinal_key;
alter table sag.chunks add constraint chunks_document_id_ordinal_key unique (document_id, ordinal);
create index chunks_source_idx on sag.chunks (source_id);
create index events_source_idx on sag.events (source_id);
drop index sag.events_chunk_idx, sag.events_document_idx;
create index events_chunk_idx on sag.events (chunk_id);
create index events_document_idx on sag.events (document_id);
drop index sag.relations_head_idx, sag.relations_tail_idx, sag.relations_tail_type_idx;
create index relations_head_idx on sag.relations (head_key_id);
create index relations_tail_idx on sag.relations (tail_key_id);
create index relations_tail_type_idx on sag.relations (tail_key_id, relation_type);
drop index sag.kg_names_unique_idx;
create unique index kg_names_unique_idx on sag.kg_names (key_id, lang, md5(name));
alter table sag.chunks add constraint chunks_document_id_fkey
    foreign key (document_id) references sag.documents (id) on delete cascade;
alter table sag.events add constraint events_chunk_id_fkey foreign key (chunk_id) references sag.chunks (id) on delete cascade;
alter table sag.events add constraint events_document_id_fkey
    foreign key (document_id) references sag.documents (id) on delete cascade;
alter table sag.event_keys add constraint event_keys_event_id_fkey
    foreign key (event_id) references sag.events (id) on delete cascade;
alter table sag.event_keys add constraint event_keys_key_id_fkey foreign key (key_id) references sag.keys (id) on delete cascade;
alter table sag.chunk_keys add constraint chunk_keys_chunk_id_fkey
    foreign key (chunk_id) references sag.chunks (id) on delete cascade;
alter table sag.chunk_keys add constraint chunk_keys_key_id_fkey foreign key (key_id) references sag.keys (id) on delete cascade;
alter table sag.relations add constraint relations_head_key_id_fkey
    foreign key (head_key_id) references sag.keys (id) on delete cascade;
alter table sag.relations add constraint relations_tail_key_id_fkey
    foreign key (tail_key_id) references sag.keys (id) on delete cascade;
alter table sag.relations add constraint relations_event_id_fkey
    foreign key (event_id) references sag.events (id) on delete cascade;
alter table sag.relation_events add constraint relation_events_relation_id_fkey
    foreign key (relation_id) references sag.relations (id) on delete cascade;
alter table sag.relation_events add constraint relation_events_event_id_fkey
    foreign key (event_id) references sag.events (id) on delete cascade;
alter table sag.key_tags add constraint key_tags_key_id_fkey foreign key (key_id) references sag.keys (id) on delete cascade;
alter table sag.key_tags add constraint key_tags_tag_id_fkey foreign key (tag_id) references sag.tags (id) on delete cascade;
alter table sag.recall_stats add constraint recall_stats_document_id_fkey
    foreign key (document_id) references sag.documents (id) on delete cascade;
alter table sag.kg_names add constraint kg_names_key_id_fkey foreign key (key_id) references sag.keys (id) on delete cascade;
alter table sag.cluster_events add constraint cluster_events_event_id_fkey
    foreign key (event_id) references sag.events (id) on delete cascade;
"""


def downgrade() -> None:
    # Back to revision 0014's keys (no row is lost; link tables keep their rows without source_id).  Revision
    # 0014's functions do not fill source_id: after a downgrade, apply that release's idempotent files (as
    # `sag-pg db upgrade` of that release does) before writing.
    op.execute(_DOWNGRADE)
