-- Knowledge graph (issue #17): relation weights and maintenance.

create or replace function sag_internal._cooccurrence_weight(evidence integer)
returns real
language sql immutable parallel safe strict
set search_path = pg_catalog, sag, pg_temp
return (evidence::float8 / (evidence + 1))::real;
comment on function sag_internal._cooccurrence_weight(integer) is
    'Weight of a co-occurrence relation seen in n events: n / (n + 1) (1 -> 0.5, 2 -> 0.667, 3 -> 0.75), in [0, 1).';

-- The co-occurrence pairs (parallel arrays: head key < tail key, one element an event they share) stored: a
-- relation per pair of keys, new or strengthened (a related_to stated by a call or an LLM stays as stated).
-- Shared by the incremental path (sag_internal._cooccur_links) and the rebuild.
--
-- A co-occurrence relation's evidence is not stored: its events are those linked (sag.event_keys) to both of
-- its keys, and evidence_count counts them.  An evidence row a pair (with a foreign-key check to the relation
-- and one to the event) was half the time of co-occurrence and a third of a Chinese document's storing, for
-- rows that only a document's deletion read (issue #36 item 11); that deletion now finds the same pairs in the
-- links it is about to delete (sag_internal._before_document_delete).  LLM relations keep their evidence rows.
drop function if exists sag_internal._add_cooccurrence(bigint, bigint[], bigint[], bigint[]);  -- before 0021
create or replace function sag_internal._add_cooccurrence(p_source_id bigint, heads bigint[], tails bigint[])
returns integer
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    n integer;
begin
    if coalesce(cardinality(heads), 0) = 0 then
        return 0;
    end if;
    with counted as (
        select p.head, p.tail, count(*)::int as n from unnest(heads, tails) p(head, tail) group by p.head, p.tail
    ), stored as (
        -- In key order, so concurrent ingests wait on each other instead of deadlocking.
        insert into sag.relations as r (source_id, head_key_id, relation_type, tail_key_id, weight, origin,
                                        evidence_count)
        select p_source_id, c.head, 'related_to', c.tail, sag_internal._cooccurrence_weight(c.n), 'cooccurrence', c.n
          from counted c order by c.head, c.tail
        on conflict (source_id, head_key_id, relation_type, tail_key_id) do update
           set evidence_count = r.evidence_count + excluded.evidence_count,
               weight = sag_internal._cooccurrence_weight(r.evidence_count + excluded.evidence_count)
         where r.origin = 'cooccurrence'   -- a related_to stated by a call or an LLM stays as stated
        returning 1
    )
    select count(*)::int into n from stored;
    return n;
end;
$$;
comment on function sag_internal._add_cooccurrence(bigint, bigint[], bigint[]) is
    'Stores co-occurrence pairs (head < tail, one element an event they share) as related_to relations, their '
    'evidence_count the events; returns how many relations were created or strengthened.';

-- The related_to relations of co-occurrence that new event-key links (parallel arrays) add: each pair of
-- entity keys (every type but action and time) linked to one event, at least one of the two links new (so a
-- link added later to an event counts its pairs once), stored once with the lower key id as head (the
-- relation has no direction; sag.get_related follows it both ways).  Incremental: an existing relation counts
-- the event in its evidence_count.  Called by the ingest as it stores a document's links (020-ingest.sql).
drop function if exists sag_internal._cooccur_links(bigint[], bigint[]);  -- before the source argument
create or replace function sag_internal._cooccur_links(p_source_id bigint, event_ids bigint[], key_ids bigint[])
returns integer
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    heads bigint[];
    tails bigint[];
begin
    -- The pairs first, then the relations in a statement of their own.  (One statement joining what it inserted
    -- with the pairs ran as a nested loop over two CTEs of estimated one row each: quadratic, 3.4 s for the 640
    -- events of 64 KB of dense prose; issue #36.)
    with fresh as (
        select distinct f.event_id, f.key_id from unnest(event_ids, key_ids) f(event_id, key_id)
    ), entity_links as materialized (
        -- Actions and times are what an event says about its entities, not entities: pairing them with
        -- everything nearly doubled the pairs of a Chinese event (rgb-zh: 7.9 keys and 34.1 pairs an event;
        -- 5.7 and 19.6 without them), which made the relations half of an rgb-zh database and half of its
        -- ingest time.
        select ek.source_id, ek.event_id, ek.key_id
          from sag.event_keys ek join sag.keys k on k.source_id = ek.source_id and k.id = ek.key_id
         where ek.source_id = p_source_id and ek.event_id in (select f.event_id from fresh f)
           and k.type not in ('action', 'time')
    )
    select array_agg(a.key_id), array_agg(b.key_id) into heads, tails
      from entity_links a
      join entity_links b on b.source_id = a.source_id and b.event_id = a.event_id and b.key_id > a.key_id
     where (a.event_id, a.key_id) in (select f.event_id, f.key_id from fresh f)
        or (b.event_id, b.key_id) in (select f.event_id, f.key_id from fresh f);
    return sag_internal._add_cooccurrence(p_source_id, heads, tails);
end;
$$;
comment on function sag_internal._cooccur_links(bigint, bigint[], bigint[]) is
    'Adds the co-occurrence (related_to) relations that new event-key links create between entity keys (every '
    'key type but action and time), or count the events in existing ones; returns how many relations were '
    'created or strengthened.';

-- One source's co-occurrence relations from its links.  A scalar source argument: on Citus `db upgrade`
-- distributes it, so a top-level `select sag.rebuild_source_cooccurrence(s)` runs whole on the worker holding
-- the source (the links never travel to the coordinator; through sag.rebuild_cooccurrence's loop they did, and
-- the rebuild was 2-4x slower than on one node).
create or replace function sag.rebuild_source_cooccurrence(p_source_id bigint)
returns integer
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    heads bigint[];
    tails bigint[];
begin
    delete from sag.relations r where r.source_id = p_source_id and r.origin = 'cooccurrence';
    -- Every link of the source is new here: the pairs of each event's entity keys, without the incremental
    -- path's "at least one link new" test (an OR of two IN lists that would hold every link of the source:
    -- 840 k a source of the 1 M-event benchmark, beyond work_mem for hashing, for a test that is always true).
    with entity_links as materialized (
        select ek.event_id, ek.key_id
          from sag.event_keys ek join sag.keys k on k.source_id = ek.source_id and k.id = ek.key_id
         where ek.source_id = p_source_id and k.source_id = p_source_id
           and k.type not in ('action', 'time')
    )
    select array_agg(a.key_id), array_agg(b.key_id) into heads, tails
      from entity_links a
      join entity_links b on b.event_id = a.event_id and b.key_id > a.key_id;
    return sag_internal._add_cooccurrence(p_source_id, heads, tails);
end;
$$;
comment on function sag.rebuild_source_cooccurrence(bigint) is
    'Recomputes one source''s co-occurrence relations from its events; returns the number of relations. '
    'On Citus a top-level call runs on the worker holding the source. '
    'Example: select sag.rebuild_source_cooccurrence(1);';

create or replace function sag.rebuild_cooccurrence(source_ids bigint[] default null)
returns integer
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    n integer := 0;
    source bigint;
begin
    -- One source at a time, each statement naming it (on Citus each runs on the worker holding the source;
    -- sag-pg itself calls sag.rebuild_source_cooccurrence per source, which runs there whole).
    for source in select s.id from sag.sources s where source_ids is null or s.id = any(source_ids) order by s.id loop
        n := n + sag.rebuild_source_cooccurrence(source);
    end loop;
    return n;
end;
$$;
comment on function sag.rebuild_cooccurrence(bigint[]) is
    'Recomputes every co-occurrence relation of the sources (NULL = all) from their events: for a database '
    'ingested before migration 0006. Returns the number of relations. Example: select sag.rebuild_cooccurrence();';

-- Relation types are lower-case identifiers: "Works On" -> works_on.
create or replace function sag_internal._relation_type(relation_type text)
returns text
language sql immutable parallel safe
set search_path = pg_catalog, sag, pg_temp
return nullif(trim(both '_' from regexp_replace(lower(coalesce(relation_type, '')), '[^[:alnum:]]+', '_', 'g')), '');

create or replace function sag.add_entity(
    p_source_id bigint, entity_type text, name text, description text default null,
    normalized text default null, embedding @extschema:vector@.vector default null)
returns bigint
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    norm text := coalesce(nullif(normalized, ''), lower(regexp_replace(normalize(coalesce(name, ''), NFKC), '\s+', '', 'g')));
    kind text := lower(trim(coalesce(entity_type, '')));
    id bigint;
begin
    if (norm <> '' and kind <> '') is not true then
        raise exception using errcode = '22023', message = 'sag.add_entity: the entity needs a type and a name';
    end if;
    insert into sag.keys as k (source_id, type, name, normalized, value_string, embedding, description, pinned)
    values (p_source_id, kind, trim(name), norm, trim(name), embedding, nullif(description, ''), true)
    on conflict on constraint keys_one_per_meaning do update
       set description = coalesce(excluded.description, k.description), pinned = true,
           embedding = coalesce(k.embedding, excluded.embedding)
    returning k.id into id;
    return id;
end;
$$;
comment on function sag.add_entity(bigint, text, text, text, text, @extschema:vector@.vector) is
    'Adds (or updates the description of) an entity: a key of the source, the same identity as ingestion''s '
    '(type, normalized name; pass the normalized form sag_pg computes, else NFKC lower case without spaces). '
    'The key is pinned: it stays when its last event goes. Returns the key id.';

create or replace function sag.get_entity(key_id bigint)
returns table (id bigint, source_id bigint, type text, name text, description text, event_count integer,
               pinned boolean, tags text[])
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return query
    select k.id, k.source_id, k.type, k.name, k.description, k.event_count, k.pinned,
           array(select t.name from sag.key_tags kt join sag.tags t on t.source_id = kt.source_id and t.id = kt.tag_id
                  where kt.source_id = k.source_id and kt.key_id = k.id order by kt.relevance desc, t.name)
      from sag.keys k where k.id = key_id;
end
$$;
comment on function sag.get_entity(bigint) is 'An entity (key) with its description and tags (most relevant first); no row if none.';

create or replace function sag.remove_entity(key_id bigint)
returns boolean
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
begin
    update sag.keys k set pinned = false where k.id = key_id;
    delete from sag.keys k where k.id = key_id;
    return found;
end;
$$;
comment on function sag.remove_entity(bigint) is
    'Deletes an entity with its relations, tags and event links (the events stay). False if there was none.';

create or replace function sag.add_relation(
    head_key_id bigint, relation_type text, tail_key_id bigint, weight float8 default 1,
    origin text default 'call', event_id bigint default null)
returns bigint
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
declare
    kind text := sag_internal._relation_type(relation_type);
    head_source bigint := (select k.source_id from sag.keys k where k.id = head_key_id);
    tail_source bigint := (select k.source_id from sag.keys k where k.id = tail_key_id);
    rel bigint;
    was_cooccurrence boolean;
begin
    if head_source is null or tail_source is null then
        raise exception using errcode = 'P0002',
            message = format('sag.add_relation: no entity with id %s', case when head_source is null then head_key_id else tail_key_id end);
    end if;
    if (head_source = tail_source) is not true then
        raise exception using errcode = '22023',
                              message = 'sag.add_relation: both entities must belong to one source';
    end if;
    if (kind is not null) is not true then
        raise exception using errcode = '22023', message = 'sag.add_relation: the relation type is empty';
    end if;
    if (head_key_id <> tail_key_id) is not true then
        raise exception using errcode = '22023',
                              message = 'sag.add_relation: a relation joins two different entities';
    end if;
    if (weight between 0 and 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.add_relation: weight must be in [0, 1], got %s', weight);
    end if;
    select r.origin = 'cooccurrence' into was_cooccurrence from sag.relations r
     where r.source_id = head_source and r.head_key_id = add_relation.head_key_id and r.relation_type = kind
       and r.tail_key_id = add_relation.tail_key_id;
    insert into sag.relations as r (source_id, head_key_id, relation_type, tail_key_id, weight, origin, event_id)
    values (head_source, head_key_id, kind, tail_key_id, weight, origin, event_id)
    on conflict (source_id, head_key_id, relation_type, tail_key_id) do update
       set weight = excluded.weight,
           origin = case when r.origin = 'cooccurrence' then excluded.origin else r.origin end,
           evidence_count = r.evidence_count + case when excluded.event_id is null then 0 else 1 end,
           event_id = coalesce(r.event_id, excluded.event_id)
    returning r.id into rel;
    if was_cooccurrence then
        -- Stated now: its co-occurrence evidence (the events linked to both keys, not stored while it was a
        -- co-occurrence) becomes evidence rows, which a document's deletion counts off as before.
        insert into sag.relation_events (source_id, relation_id, event_id)
        select head_source, rel, a.event_id
          from sag.event_keys a
          join sag.event_keys b on b.source_id = a.source_id and b.event_id = a.event_id
         where a.source_id = head_source and a.key_id = add_relation.head_key_id
           and b.source_id = head_source and b.key_id = add_relation.tail_key_id
        on conflict do nothing;
    end if;
    if event_id is not null then
        insert into sag.relation_events (source_id, relation_id, event_id) values (head_source, rel, event_id)
        on conflict do nothing;
    end if;
    return rel;
end;
$$;
comment on function sag.add_relation(bigint, text, bigint, float8, text, bigint) is
    'Adds or re-weights a typed relation head -[type]-> tail (type folded to a lower-case identifier: '
    '"Works On" -> works_on; weight in [0, 1]; origin call, llm or import; event_id: the stating event). '
    'Returns the relation id.';

create or replace function sag.remove_relation(head_key_id bigint, tail_key_id bigint, relation_type text default null)
returns integer
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
declare
    _result integer;
begin
    with gone as (
        delete from sag.relations r
         where r.head_key_id = remove_relation.head_key_id and r.tail_key_id = remove_relation.tail_key_id
           and (remove_relation.relation_type is null or r.relation_type = sag_internal._relation_type(remove_relation.relation_type))
        returning 1)
    select count(*)::int into _result from gone;
    return _result;
end
$$;
comment on function sag.remove_relation(bigint, bigint, text) is
    'Deletes the relations head -> tail of the given type (NULL: every type); returns how many.';

create or replace function sag.relations_of(key_id bigint, lim integer default 100)
returns table (id bigint, head_key_id bigint, head text, relation_type text, tail_key_id bigint, tail text,
               weight real, origin text, evidence_count integer, event_id bigint)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return query
    select r.id, r.head_key_id, h.name, r.relation_type, r.tail_key_id, t.name, r.weight, r.origin,
           r.evidence_count, r.event_id
      from sag.relations r
      join sag.keys h on h.source_id = r.source_id and h.id = r.head_key_id
      join sag.keys t on t.source_id = r.source_id and t.id = r.tail_key_id
     where r.head_key_id = relations_of.key_id or r.tail_key_id = relations_of.key_id
     order by r.weight desc, r.evidence_count desc, r.id
     limit lim;
end
$$;
comment on function sag.relations_of(bigint, integer) is
    'The relations an entity takes part in (as head or tail), strongest first.';

create or replace function sag.relation_counts(source_ids bigint[] default null)
returns table (origin text, relation_type text, relations bigint, evidence bigint)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return query
    select r.origin, r.relation_type, count(*), sum(r.evidence_count)::bigint
      from sag.relations r where source_ids is null or r.source_id = any(source_ids)
     group by r.origin, r.relation_type order by count(*) desc, r.origin, r.relation_type;
end
$$;
comment on function sag.relation_counts(bigint[]) is 'Relations and their evidence per origin and type.';

create or replace function sag.entity_id(p_source_id bigint, normalized text, entity_type text default null)
returns bigint
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return (
    select k.id from sag.keys k
     where k.source_id = p_source_id and k.normalized = entity_id.normalized
       and (entity_type is null or k.type = lower(trim(entity_type)))
     order by k.event_count desc, k.id limit 1);
end
$$;
comment on function sag.entity_id(bigint, text, text) is
    'The entity (key) of a source with this normalized name (and type, if given; else the one with most events).';

-- What an LLM is shown to state relations: events with two keys or more, of the given documents (NULL: all
-- of the source), that no LLM relation cites yet.
create or replace function sag.relation_candidates(p_source_id bigint, uris text[] default null, lim integer default 100)
returns table (event_id bigint, uri text, content text, key_ids bigint[], key_names text[])
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return query
    select e.id, d.uri, e.content, array_agg(k.id order by k.id), array_agg(k.name order by k.id)
      from sag.documents d
      join sag.events e on e.source_id = d.source_id and e.document_id = d.id
      join sag.event_keys ek on ek.source_id = e.source_id and ek.event_id = e.id
      join sag.keys k on k.source_id = ek.source_id and k.id = ek.key_id
     where d.source_id = p_source_id and (uris is null or d.uri = any(uris))
       and not exists (select 1 from sag.relation_events re
                         join sag.relations r on r.source_id = re.source_id and r.id = re.relation_id
                        where re.source_id = e.source_id and re.event_id = e.id and r.origin = 'llm')

     group by e.id, d.uri, e.content
    having count(*) >= 2
     order by e.id
     limit lim;
end
$$;
comment on function sag.relation_candidates(bigint, text[], integer) is
    'Events (with two keys or more) of the given documents that no LLM relation cites yet: what relation '
    'extraction reads.';

