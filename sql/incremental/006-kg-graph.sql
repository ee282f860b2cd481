-- sag-pg schema, version 6 (issue #17): a knowledge graph beside the content store.  Frozen once released.
--
-- Entities are sag.keys (same identity and normalisation as ingestion); this adds their description, typed
-- and weighted relations between them with their provenance, tags, and per-document recall statistics for
-- recall-based eviction.  The math lives in sql/idempotent/050-059.

alter table sag.keys add column description text;
-- An entity added by an explicit call (sag.add_entity) has no event: sag._adjust_key_counts would delete it
-- as an orphan the next time a document that mentions it goes.  pinned keeps it (trigger below).
alter table sag.keys add column pinned boolean not null default false;
comment on column sag.keys.description is 'Free-text description of the entity (knowledge graph).';
comment on column sag.keys.pinned is 'Added by an explicit call: kept when its last event goes.';

create table sag.relations (
    id              bigint generated always as identity primary key,
    source_id       bigint not null references sag.sources(id) on delete cascade,
    head_key_id     bigint not null references sag.keys(id) on delete cascade,
    relation_type   text not null check (relation_type <> ''),
    tail_key_id     bigint not null references sag.keys(id) on delete cascade,
    weight          real not null default 1 check (weight between 0 and 1),
    origin          text not null check (origin in ('llm', 'cooccurrence', 'call', 'import')),
    -- Provenance when extracted from an event (origin llm: the first event that stated it); every stating
    -- event is in sag.relation_events.
    event_id        bigint references sag.events(id) on delete cascade,
    evidence_count  integer not null default 1,
    created_at      timestamptz not null default now(),
    unique (source_id, head_key_id, relation_type, tail_key_id)
);
create index relations_head_idx on sag.relations (head_key_id);
create index relations_tail_idx on sag.relations (tail_key_id);
comment on table sag.relations is
    'Typed, weighted relations between keys (entities). origin cooccurrence: type related_to, stored once '
    'with head_key_id < tail_key_id and followed in both directions, weight = n / (n + 1) for n events '
    'that share both keys.';

-- The events that support a relation: removing a document removes its events, these rows with them, and
-- the trigger below takes the evidence off the relation (deleting it when none is left).
create table sag.relation_events (
    relation_id  bigint not null references sag.relations(id) on delete cascade,
    event_id     bigint not null references sag.events(id) on delete cascade,
    primary key (relation_id, event_id)
);
create index relation_events_event_idx on sag.relation_events (event_id);

create function sag._relation_evidence_gone() returns trigger
language plpgsql
set search_path = pg_catalog, sag, public, pg_temp
as $$
begin
    with gone as (select o.relation_id, count(*)::int as n from gone_evidence o group by o.relation_id)
    update sag.relations r
       set evidence_count = r.evidence_count - g.n,
           weight = case when r.origin = 'cooccurrence'
                         then sag._cooccurrence_weight(greatest(r.evidence_count - g.n, 0)) else r.weight end
      from gone g
     where r.id = g.relation_id and r.origin in ('cooccurrence', 'llm');
    delete from sag.relations r
     where r.id in (select o.relation_id from gone_evidence o)
       and r.origin in ('cooccurrence', 'llm') and r.evidence_count <= 0;
    return null;
end;
$$;
-- A statement trigger with a transition table: one update per statement, cascaded deletes included.
create trigger relation_events_gone after delete on sag.relation_events
    referencing old table as gone_evidence for each statement execute function sag._relation_evidence_gone();

-- Co-occurrence relations follow ingestion: the links of a stored document's events (one insert statement
-- per document) become related_to relations in the same transaction (sag._cooccur_links, 050).
create function sag._links_added() returns trigger
language plpgsql
set search_path = pg_catalog, sag, public, pg_temp
as $$
begin
    perform sag._cooccur_links(array(select n.event_id from new_links n order by n.event_id, n.key_id),
                               array(select n.key_id from new_links n order by n.event_id, n.key_id));
    return null;
end;
$$;
create trigger event_keys_cooccurrence after insert on sag.event_keys
    referencing new table as new_links for each statement execute function sag._links_added();

-- Keeps a pinned key when sag._adjust_key_counts deletes keys left with no event; a cascade from its
-- source (the source row is gone by then) or an unpinned key is deleted as usual.
create function sag._keep_pinned_key() returns trigger
language plpgsql
set search_path = pg_catalog, sag, public, pg_temp
as $$
begin
    if old.pinned and exists (select 1 from sag.sources s where s.id = old.source_id) then
        return null;
    end if;
    return old;
end;
$$;
create trigger keys_keep_pinned before delete on sag.keys
    for each row when (old.pinned) execute function sag._keep_pinned_key();

create table sag.tags (
    id         bigint generated always as identity primary key,
    source_id  bigint not null references sag.sources(id) on delete cascade,
    name       text not null check (name <> '' and name = lower(name) and name !~ '\s'),
    unique (source_id, name)
);
create index tags_name_prefix_idx on sag.tags (source_id, name text_pattern_ops);
comment on table sag.tags is 'Lower-case atomic retrieval tags of entities (one vocabulary per source).';

create table sag.key_tags (
    key_id     bigint not null references sag.keys(id) on delete cascade,
    tag_id     bigint not null references sag.tags(id) on delete cascade,
    relevance  real not null default 1,
    primary key (key_id, tag_id)
);
create index key_tags_tag_idx on sag.key_tags (tag_id);

-- One row per document that a search or recall returned; fillfactor leaves room for HOT updates.
create table sag.recall_stats (
    document_id     bigint primary key references sag.documents(id) on delete cascade,
    recall_count    bigint not null default 0,
    total_score     double precision not null default 0,
    last_recall_at  timestamptz not null default now()
) with (fillfactor = 70);
comment on table sag.recall_stats is
    'How often a document was returned by a search or recall, the sum of its scores and when last: the '
    'input of recall-based eviction.';
