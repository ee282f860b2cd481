-- Ingestion: sources, key resolution ("one key per meaning"), and storing one document at a time: in one
-- statement (sag.ingest_document), or part by part in one transaction (sag.begin_document, sag.add_document_part,
-- sag.finish_document) for a document too big for one.

create or replace function sag.ensure_source(source_name text)
returns bigint
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    found_id bigint;
    bad text;
begin
    if source_name is null or btrim(source_name) = '' then
        raise exception using errcode = '22023', message = 'source name must not be empty';
    end if;
    -- Names print on one line (issue #36 item 9): no control, separator or bidirectional formatting character.
    bad := substring(source_name from '[\u0001-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]');
    if bad is not null then
        raise exception using errcode = '22023',
            message = format('source name holds a control, separator or bidirectional formatting character '
                             '(U+%s at character %s): names must print on one line',
                             upper(lpad(to_hex(ascii(bad)), 4, '0')), strpos(source_name, bad));
    end if;
    select id into found_id from sag.sources where name = source_name;
    if found_id is null then
        insert into sag.sources (name) values (source_name) on conflict (name) do nothing returning id into found_id;
        if found_id is null then  -- created concurrently by another session
            select id into found_id from sag.sources where name = source_name;
        end if;
    end if;
    return found_id;
end;
$$;
comment on function sag.ensure_source(text) is 'The id of the source with this name, creating it if needed.';

create or replace function sag.source_ids(source_names text[])
returns bigint[]
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    ids bigint[];
    missing text;
begin
    if source_names is null then
        return null;
    end if;
    select array_agg(s.id order by s.id) into ids from sag.sources s where s.name = any(source_names);
    select n into missing from unnest(source_names) n where n not in (select name from sag.sources) limit 1;
    if missing is not null then
        raise exception using errcode = 'P0002', message = format('no source named %L', missing),
            hint = 'List sources with: select name from sag.sources;';
    end if;
    return ids;
end;
$$;
comment on function sag.source_ids(text[]) is
    'Source names to ids (NULL stays NULL = all sources); raises P0002 naming the first unknown source.';

-- Every document write first takes the shared side of the 'sag.vector_indexes' lock, before any table
-- (sql/idempotent/022-bulk-load.sql explains the order): it waits while indexes are dropped or built, at most the
-- session's lock_timeout, and then says so instead of "canceling statement due to lock timeout".
create or replace function sag_internal._wait_for_index_builds()
returns void
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
begin
    perform pg_advisory_xact_lock_shared(hashtext('sag.vector_indexes'));
exception when lock_not_available then
    raise exception using errcode = '55P03',
        message = format('another client kept the vector indexes locked (bulk load or index build) for more than '
                         'lock_timeout (%s)', current_setting('lock_timeout')),
        hint = 'Try again when its index build has finished.';
end;
$$;

-- The existing key each new (type, normalized value) should converge on, NULL for a new key; one row per
-- input position.  Order of preference: exact match of the same type; exact match of another type (when
-- across_types); for strings, a same-type key with the same sag.key_signature ("302ai" ~ "ai302"), then the
-- most similar same-type key by trigram similarity, then by embedding.
-- Set-based (one statement for a whole document) because a per-key function call cost ~0.2 ms each.
create or replace function sag_internal._match_keys(
    p_source_id bigint, types text[], normalized text[], value_strings text[], embeddings @extschema:vector@.vector[],
    trgm_threshold float8, vector_threshold float8, across_types boolean)
returns table (ord integer, key_id bigint)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
-- Planned as a generic plan, the trigram test would scan sag.keys sequentially (the planner cannot see
-- the threshold); the indexes are always the right way in.
set enable_seqscan = off
as $$
#variable_conflict use_column
begin
    return query
    select u.n::int, coalesce(exact.id, other_type.id, reordered.id, fuzzy.id, near.id)
      from unnest(types, normalized, value_strings, embeddings) with ordinality as u(type, norm, vs, emb, n)
      left join lateral (
          select k.id from sag.keys k
           where k.source_id = p_source_id and k.type = u.type and k.normalized = u.norm) exact on true
      left join lateral (
          select k.id from sag.keys k
           where exact.id is null and across_types and u.vs is not null
             and k.source_id = p_source_id and k.normalized = u.norm and k.value_string is not null
           order by k.event_count desc, k.id limit 1) other_type on true
      left join lateral (
          select k.id from sag.keys k
           where exact.id is null and other_type.id is null and u.vs is not null
             and k.source_id = p_source_id and k.type = u.type
             and sag.key_signature(k.normalized) = sag.key_signature(u.norm)
           order by k.event_count desc, k.id limit 1) reordered on true
      -- offset 0 keeps the type and similarity filters outside, so the trigram GIN index drives the lookup
      -- (the source filter stays inside: Citus routes a query to one shard only when every reference to a
      -- distributed table names its source).
      left join lateral (
          select c.id from (
              select k.id, k.type, @extschema:pg_trgm@.similarity(k.normalized, u.norm) as sim from sag.keys k
               where exact.id is null and other_type.id is null and reordered.id is null
                 and trgm_threshold is not null and k.source_id = p_source_id
                 and u.vs is not null and k.normalized operator(@extschema:pg_trgm@.%) u.norm offset 0) c
           where c.type = u.type and c.sim >= trgm_threshold
           order by c.sim desc, c.id limit 1) fuzzy on true
      left join lateral (
          select c.id from (
              select k.id, k.embedding operator(@extschema:vector@.<=>) u.emb as distance from sag.keys k
               where exact.id is null and other_type.id is null and reordered.id is null and fuzzy.id is null
                 and vector_threshold is not null and u.emb is not null
                 and k.source_id = p_source_id and k.type = u.type and k.embedding is not null
               order by k.embedding operator(@extschema:vector@.<=>) u.emb limit 1) c
           where 1 - c.distance >= vector_threshold) near on true;
end
$$;

create or replace function sag.resolve_keys(
    p_source_id bigint,
    types text[], names text[], normalized text[],
    value_strings text[], value_numbers float8[], value_bools boolean[], embeddings @extschema:vector@.vector[],
    trgm_threshold float8 default 0.9,
    vector_threshold float8 default null,
    across_types boolean default true)
returns table (ord integer, key_id bigint)
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    matched bigint[];
    resolved bigint[];
    meanings bigint[];
    meaning bigint;
begin
    -- One meaning is resolved by one transaction at a time, so concurrent ingests end with the keys of a serial
    -- run: a document naming a key that another one is writing waits until that one commits (the lock is held to
    -- the end of the transaction), then finds its key.  A meaning is the normalized value whatever the type
    -- (across types) and, for strings, its sag.key_signature.  Locks are taken in one order (sorted), so two
    -- documents never wait on each other.  Trigram and embedding neighbours are not locked: those matches may
    -- still depend on which document comes first, as they do in a serial run.
    select coalesce(array_agg(m.h order by m.h), '{}') into meanings
      from (select distinct hashtextextended(p_source_id::text || x.meaning, 0) as h
              from unnest(normalized, value_strings) as u(norm, vs),
                   lateral (values (':' || u.norm),
                                   ('~' || case when u.vs is not null then sag.key_signature(u.norm) end)) x(meaning)
             where x.meaning is not null) m;
    -- Advisory locks live in the server's shared lock table (max_locks_per_transaction per connection): a
    -- document with more meanings than that locks the whole source instead (every document takes that lock
    -- shared first, so the two kinds order with each other).
    if cardinality(meanings) > 64 then
        perform pg_advisory_xact_lock(hashtextextended('sag.keys of source ' || p_source_id, 0));
    else
        perform pg_advisory_xact_lock_shared(hashtextextended('sag.keys of source ' || p_source_id, 0));
        foreach meaning in array meanings loop
            perform pg_advisory_xact_lock(meaning);
        end loop;
    end if;
    if trgm_threshold is not null then
        -- The % operator (and its GIN index) filter at this threshold; the exact check follows in _match_keys.
        perform set_config('pg_trgm.similarity_threshold', trgm_threshold::text, true);
    end if;
    select array_agg(m.key_id order by m.ord) into matched
      from sag_internal._match_keys(p_source_id, types, normalized, value_strings, embeddings,
                           trgm_threshold, vector_threshold, across_types) m;

    -- (Vectors are cast to halfvec in the SELECT of every INSERT ... SELECT: Citus 14 on PostgreSQL 18 fails with
    -- "unexpected null value in cached tuple for catalog pg_proc column proargdefaults" on the implicit cast.)
    -- Insert the new ones in a fixed order, so concurrent ingests wait on each other instead of deadlocking.
    -- Across types, one new string key per normalized value: the first of its types in alphabetical order
    -- (whichever document or position named it first).
    insert into sag.keys (source_id, type, name, normalized, value_string, value_number, value_bool, embedding)
    select p_source_id, i.type, i.name, i.normalized, i.vs, i.vn, i.vb,
           case when i.vs is not null then i.emb::@extschema:vector@.halfvec end
      from (select distinct on (u.grp, u.normalized) u.*
              from (select v.*, case when across_types and v.vs is not null then '' else v.type end as grp
                      from unnest(types, names, normalized, value_strings, value_numbers, value_bools, embeddings)
                           with ordinality as v(type, name, normalized, vs, vn, vb, emb, n)) u
             where matched[u.n] is null
             order by u.grp, u.normalized, u.type, u.n) i
     order by i.type, i.normalized
    on conflict on constraint keys_one_per_meaning do nothing;

    -- A new statement: it also sees keys a concurrent ingest committed while we waited on its insert.
    select array_agg(coalesce(
               matched[u.n],
               (select k.id from sag.keys k where k.source_id = p_source_id and k.type = u.type
                                              and k.normalized = u.normalized),
               (select k.id from sag.keys k
                 where across_types and u.vs is not null and k.source_id = p_source_id
                   and k.normalized = u.normalized and k.value_string is not null
                 order by k.type, k.id limit 1)) order by u.n) into resolved
      from unnest(types, normalized, value_strings) with ordinality as u(type, normalized, vs, n);

    -- The same rule for a key matched across types: it takes the first type (alphabetically) of all that named
    -- it, so its type does not depend on which document came first.
    if across_types then
        update sag.keys k set type = t.type
          from (select r.id, min(r.type) as type
                  from unnest(resolved, types, value_strings) as r(id, type, vs)
                 where r.vs is not null and r.id is not null group by r.id) t
         where k.source_id = p_source_id and k.id = t.id and k.type > t.type and k.value_string is not null
           and not exists (select 1 from sag.keys o
                            where o.source_id = k.source_id and o.type = t.type and o.normalized = k.normalized);
    end if;

    return query select r.n::int, r.id from unnest(resolved) with ordinality as r(id, n) order by r.n;
end;
$$;
comment on function sag.resolve_keys(bigint, text[], text[], text[], text[], float8[], boolean[], @extschema:vector@.vector[], float8, float8, boolean) is
    'Maps extracted keys (parallel arrays, 1-based ord) to key ids: reuses an existing key of the same meaning '
    '(exact normalized value; across types; trigram >= trgm_threshold; embedding >= vector_threshold; NULL '
    'disables a test) and creates the rest.';

-- Adds delta to event_count of the given keys, locking rows in id order (no deadlocks between ingests)
-- and deleting keys left with no event.
drop function if exists sag_internal._adjust_key_counts(bigint[], integer[]);  -- before the source argument
create or replace function sag_internal._adjust_key_counts(p_source_id bigint, key_ids bigint[], deltas integer[])
returns void
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
begin
    perform 1 from sag.keys k where k.source_id = p_source_id and k.id = any(key_ids) order by k.id
        for no key update;
    update sag.keys k set event_count = k.event_count + d.delta
      from (select u.id, sum(u.delta)::int as delta from unnest(key_ids, deltas) u(id, delta) group by u.id) d
     where k.source_id = p_source_id and k.id = d.id;
    -- A pinned key (an entity added by hand, sag.add_entity) stays when its last event goes.
    delete from sag.keys k where k.source_id = p_source_id and k.id = any(key_ids) and k.event_count <= 0
       and not k.pinned
       and not exists (select 1 from sag.event_keys ek where ek.source_id = p_source_id and ek.key_id = k.id);
end;
$$;

-- Storing a document is three steps inside the caller's one transaction, so a document of any size goes in
-- part by part (bounded memory on both sides) and a crash still leaves nothing of it:
--   sag.begin_document     replaces the document row (the old version's rows go, its keys stay until the end);
--   sag.add_document_part  (any number of times) stores chunks, their events and the events' key links;
--   sag.finish_document    settles the old version's key counts and removes keys left with no event.
-- sag.ingest_document and sag.store_document are the three in one statement (one part), for documents that
-- fit in one part: on an autocommit connection one round trip and one transaction (and, on Citus, one call run
-- whole on the worker that holds the source).
create or replace function sag.begin_document(
    p_source_id bigint, p_uri text, p_title text, p_content text, p_content_hash text, p_summary text,
    p_metadata jsonb, p_prompt_tokens integer default 0, p_completion_tokens integer default 0,
    lock_source boolean default false)
returns table (document_id bigint, old_key_ids bigint[], old_key_deltas integer[])
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    old_id bigint;
    doc_id bigint;
    old_ids bigint[] := '{}';
    old_deltas integer[] := '{}';
begin
    perform sag_internal._wait_for_index_builds();
    if lock_source then
        -- A document stored in several parts resolves its keys part by part: it takes the whole source's key
        -- lock first (sag.resolve_keys takes the same lock when a document has many meanings), so the locks of
        -- its later parts never order against another writer's.
        perform pg_advisory_xact_lock(hashtextextended('sag.keys of source ' || p_source_id, 0));
    end if;
    -- Changed content replaces the old document inside this same transaction.  Its keys' counts are settled
    -- by sag.finish_document, together with the new document's: a key the new text still uses must not be
    -- deleted as an orphan in between (nor its event_count change before the new parts' keys are resolved).
    select d.id into old_id from sag.documents d where d.source_id = p_source_id and d.uri = p_uri for update;
    if old_id is not null then
        select coalesce(array_agg(x.key_id), '{}'), coalesce(array_agg(-x.n), '{}') into old_ids, old_deltas
          from sag_internal._document_key_events(p_source_id, old_id) x;
        perform sag_internal._before_document_delete(p_source_id, old_id);
        delete from sag.documents d where d.source_id = p_source_id and d.id = old_id;
    end if;
    insert into sag.documents (source_id, uri, title, content, content_hash, summary, metadata,
                               prompt_tokens, completion_tokens)
    values (p_source_id, p_uri, coalesce(p_title, ''), p_content, p_content_hash, coalesce(p_summary, ''),
            coalesce(p_metadata, '{}'::jsonb), coalesce(p_prompt_tokens, 0), coalesce(p_completion_tokens, 0))
    returning id into doc_id;
    return query select doc_id, old_ids, old_deltas;
end;
$$;
comment on function sag.begin_document(bigint, text, text, text, text, text, jsonb, integer, integer, boolean) is
    'First step of storing a document in parts (inside one transaction): replaces the document with this uri '
    'in the source by a new row without chunks; returns its id and the old version''s key counts to pass to '
    'sag.finish_document.  lock_source takes the source''s key lock for the whole transaction (several parts).';

-- Chunks (0-based ordinals from chunk_offset), their events (attached to chunk ordinals of this part; event
-- ordinals from event_offset) and the events' links to already resolved keys (event position in this part,
-- 0-based; key id; count).  Every statement reads only this part's rows through an index: the cost of a part
-- does not grow with the parts before it.
create or replace function sag_internal._store_part(
    p_source_id bigint, p_document_id bigint, chunk_offset integer, event_offset integer,
    chunk_titles text[], chunk_contents text[], chunk_start_lines integer[], chunk_end_lines integer[],
    chunk_embeddings @extschema:vector@.vector[], chunk_tokens text[], chunk_token_counts integer[],
    event_chunk_ordinals integer[], event_titles text[], event_contents text[], event_times timestamptz[],
    event_embeddings @extschema:vector@.vector[],
    link_event_ordinals integer[], link_key_ids bigint[], link_counts integer[])
returns integer
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    n_chunks integer := coalesce(cardinality(chunk_titles), 0);
    chunk_ids bigint[];
    event_ids bigint[];
    link_events bigint[];
    link_keys bigint[];
begin
    if n_chunks = 0 then
        return 0;
    end if;
    insert into sag.chunks (document_id, source_id, ordinal, title, content, start_line, end_line,
                            embedding, tokens, token_count)
    select p_document_id, p_source_id, chunk_offset + (c.n - 1)::int, c.title, c.content, c.start_line, c.end_line,
           c.emb::@extschema:vector@.halfvec, c.tokens, c.tc
      from unnest(chunk_titles, chunk_contents, chunk_start_lines, chunk_end_lines, chunk_embeddings,
                  chunk_tokens, chunk_token_counts) with ordinality as c(title, content, start_line, end_line,
                                                                          emb, tokens, tc, n);
    -- This part's chunks, by their ordinals (a range of the unique index), in ordinal order.
    select array_agg(c.id order by c.ordinal) into chunk_ids
      from sag.chunks c
     where c.source_id = p_source_id and c.document_id = p_document_id
       and c.ordinal >= chunk_offset and c.ordinal < chunk_offset + n_chunks;

    -- The new chunks' lexemes, queued (+1) for the BM25 statistics: computed from the arguments as sag.chunks.tsv
    -- is (not read back: on Citus, an INSERT … SELECT from a distributed table into one with an identity column
    -- goes through intermediate results, ~200 ms a document).
    insert into sag.term_stats_pending (source_id, sign, token_count, tsv)
    select p_source_id, 1, c.tc, to_tsvector('simple'::regconfig, c.tokens)
      from unnest(chunk_tokens, chunk_token_counts) as c(tokens, tc);

    insert into sag.events (chunk_id, document_id, source_id, ordinal, title, content, event_time, embedding)
    select chunk_ids[e.chunk_ordinal - chunk_offset + 1], p_document_id, p_source_id, event_offset + (e.n - 1)::int,
           e.title, e.content, e.t, e.emb::@extschema:vector@.halfvec
      from unnest(event_chunk_ordinals, event_titles, event_contents, event_times, event_embeddings)
           with ordinality as e(chunk_ordinal, title, content, t, emb, n);
    select coalesce(array_agg(e.id order by e.ordinal), '{}') into event_ids
      from sag.events e where e.source_id = p_source_id and e.chunk_id = any(chunk_ids);

    insert into sag.event_keys (source_id, event_id, key_id, count)
    select p_source_id, event_ids[l.event_ordinal + 1], l.key_id, sum(l.cnt)::int
      from unnest(link_event_ordinals, link_key_ids, link_counts) as l(event_ordinal, key_id, cnt)
     group by 2, 3;

    -- The co-occurrence relations its events' links add (in event, key order: concurrent ingests queue).
    -- sag.cooccurrence = off (a session or database setting) skips them for a load followed by
    -- sag.rebuild_cooccurrence().
    -- (The links are read first and passed on: on Citus a function that reads distributed tables must not be
    -- called from a query that reads them.)
    if coalesce(current_setting('sag.cooccurrence', true), '') <> 'off' then
        select array_agg(ek.event_id order by ek.event_id, ek.key_id), array_agg(ek.key_id order by ek.event_id, ek.key_id)
          into link_events, link_keys
          from sag.event_keys ek where ek.source_id = p_source_id and ek.event_id = any(event_ids);
        if link_events is not null then
            perform sag_internal._cooccur_links(p_source_id, link_events, link_keys);
        end if;
    end if;

    insert into sag.chunk_keys (source_id, chunk_id, key_id, count)
    select p_source_id, ev.chunk_id, ek.key_id, sum(ek.count)::int
      from sag.events ev join sag.event_keys ek on ek.source_id = ev.source_id and ek.event_id = ev.id
     where ev.source_id = p_source_id and ev.chunk_id = any(chunk_ids) and ek.source_id = p_source_id
     group by ev.chunk_id, ek.key_id;

    return cardinality(event_ids);
end;
$$;

create or replace function sag.add_document_part(
    p_source_id bigint, p_document_id bigint, chunk_offset integer, event_offset integer,
    chunk_titles text[], chunk_contents text[], chunk_start_lines integer[], chunk_end_lines integer[],
    chunk_embeddings @extschema:vector@.vector[], chunk_tokens text[], chunk_token_counts integer[],
    event_chunk_ordinals integer[], event_titles text[], event_contents text[], event_times timestamptz[],
    event_embeddings @extschema:vector@.vector[],
    key_types text[], key_names text[], key_normalized text[], key_strings text[], key_numbers float8[],
    key_bools boolean[], key_embeddings @extschema:vector@.vector[],
    link_event_ordinals integer[], link_key_ords integer[], link_counts integer[],
    trgm_threshold float8 default 0.9, vector_threshold float8 default null, across_types boolean default true)
returns integer
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    resolved bigint[] := '{}';
begin
    if coalesce(cardinality(key_types), 0) > 0 then
        select coalesce(array_agg(r.key_id order by r.ord), '{}') into resolved
          from sag.resolve_keys(p_source_id, key_types, key_names, key_normalized, key_strings, key_numbers,
                                key_bools, key_embeddings, trgm_threshold, vector_threshold, across_types) r;
    end if;
    return sag_internal._store_part(
        p_source_id, p_document_id, chunk_offset, event_offset, chunk_titles, chunk_contents, chunk_start_lines,
        chunk_end_lines, chunk_embeddings, chunk_tokens, chunk_token_counts, event_chunk_ordinals, event_titles,
        event_contents, event_times, event_embeddings, link_event_ordinals,
        array(select resolved[o] from unnest(link_key_ords) with ordinality as l(o, n) order by l.n),
        link_counts);
end;
$$;
comment on function sag.add_document_part(bigint, bigint, integer, integer, text[], text[], integer[], integer[], @extschema:vector@.vector[], text[], integer[], integer[], text[], text[], timestamptz[], @extschema:vector@.vector[], text[], text[], text[], text[], float8[], boolean[], @extschema:vector@.vector[], integer[], integer[], integer[], float8, float8, boolean) is
    'Stores one part of a document begun with sag.begin_document: its keys (parallel arrays, resolved by '
    'sag.resolve_keys), chunks (ordinals from chunk_offset), events (attached to chunk ordinals; ordinals from '
    'event_offset) and links (event position in this part from 0, 1-based key position, count).  Returns the '
    'number of events stored.';

create or replace function sag.finish_document(
    p_source_id bigint, p_document_id bigint, old_key_ids bigint[] default '{}', old_key_deltas integer[] default '{}')
returns bigint
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    ids bigint[];
    deltas integer[];
begin
    if not exists (select 1 from sag.chunks c where c.source_id = p_source_id and c.document_id = p_document_id) then
        raise exception using errcode = '22023', message = format('document %s has no chunk', p_document_id);
    end if;
    -- Every key's count changes once a document, here, not once a part: an update of sag.keys is not HOT (its
    -- pages are full) and so maintains every index of the table, the trigram GIN index too.
    select coalesce(array_agg(x.key_id), '{}'), coalesce(array_agg(x.n), '{}') into ids, deltas
      from sag_internal._document_key_events(p_source_id, p_document_id) x;
    ids := ids || coalesce(old_key_ids, '{}');
    deltas := deltas || coalesce(old_key_deltas, '{}');
    if cardinality(ids) > 0 then
        perform sag_internal._adjust_key_counts(p_source_id, ids, deltas);
    end if;
    return p_document_id;
end;
$$;
comment on function sag.finish_document(bigint, bigint, bigint[], integer[]) is
    'Last step of storing a document in parts: adds its events to its keys'' counts, takes the replaced '
    'version''s off (the arrays sag.begin_document returned) and removes keys left with no event.  Returns the '
    'document id.';

create or replace function sag.store_document(
    p_source_id bigint, p_uri text, p_title text, p_content text, p_content_hash text, p_summary text,
    p_metadata jsonb, p_prompt_tokens integer, p_completion_tokens integer,
    chunk_titles text[], chunk_contents text[], chunk_start_lines integer[], chunk_end_lines integer[],
    chunk_embeddings @extschema:vector@.vector[], chunk_tokens text[], chunk_token_counts integer[],
    event_chunk_ordinals integer[], event_titles text[], event_contents text[], event_times timestamptz[],
    event_embeddings @extschema:vector@.vector[],
    link_event_ordinals integer[], link_key_ids bigint[], link_counts integer[])
returns bigint
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    begun record;
begin
    select * into begun from sag.begin_document(p_source_id, p_uri, p_title, p_content, p_content_hash, p_summary,
                                                p_metadata, p_prompt_tokens, p_completion_tokens);
    perform sag_internal._store_part(
        p_source_id, begun.document_id, 0, 0, chunk_titles, chunk_contents, chunk_start_lines, chunk_end_lines,
        chunk_embeddings, chunk_tokens, chunk_token_counts, event_chunk_ordinals, event_titles, event_contents,
        event_times, event_embeddings, link_event_ordinals, link_key_ids, link_counts);
    return sag.finish_document(p_source_id, begun.document_id, begun.old_key_ids, begun.old_key_deltas);
end;
$$;
comment on function sag.store_document(bigint, text, text, text, text, text, jsonb, integer, integer, text[], text[], integer[], integer[], @extschema:vector@.vector[], text[], integer[], integer[], text[], text[], timestamptz[], @extschema:vector@.vector[], integer[], bigint[], integer[]) is
    'Stores one document with its chunks (0-based ordinals in array order), events (attached to chunk '
    'ordinals) and event-key links (event ordinal, key id, count), replacing a document with the same uri '
    'in the source. Call inside the caller''s transaction: all or nothing.';

create or replace function sag.pre_retrieve(
    event_embedding @extschema:vector@.vector, p_source_id bigint, direct_k integer default 10, similar_n integer default 3)
returns jsonb
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return (
    select jsonb_build_object(
        'direct_keys', coalesce((
            select jsonb_agg(jsonb_build_object('type', d.type, 'name', d.name) order by d.distance)
              from (select k.type, k.name, k.embedding operator(@extschema:vector@.<=>) event_embedding as distance
                      from sag.keys k
                     where k.source_id = p_source_id and k.embedding is not null
                     order by k.embedding operator(@extschema:vector@.<=>) event_embedding limit direct_k) d), '[]'::jsonb),
        'keys_from_events', coalesce((
            select jsonb_agg(distinct jsonb_build_object('type', k.type, 'name', k.name))
              from (select e.id from sag.events e
                     where e.source_id = p_source_id and e.embedding is not null
                     order by e.embedding operator(@extschema:vector@.<=>) event_embedding limit similar_n) se
              join sag.event_keys ek on ek.source_id = p_source_id and ek.event_id = se.id
              join sag.keys k on k.source_id = ek.source_id and k.id = ek.key_id), '[]'::jsonb),

        'key_types', coalesce((
            select jsonb_agg(t order by t) from (
                select jsonb_object_keys(s.config -> 'key_types') as t from sag.sources s where s.id = p_source_id
                union
                select distinct k.type from sag.keys k where k.source_id = p_source_id) types), '[]'::jsonb)));
end
$$;
comment on function sag.pre_retrieve(@extschema:vector@.vector, bigint, integer, integer) is
    'Pre-retrieval for key extraction (sag-algorithm 1.3): the event''s top-K similar keys (direct_keys), '
    'the keys of its top-N similar events (keys_from_events) and the source''s key types.';

create or replace function sag.ingest_document(
    p_source_id bigint, p_uri text, p_title text, p_content text, p_content_hash text, p_summary text,
    p_metadata jsonb, p_prompt_tokens integer, p_completion_tokens integer,
    chunk_titles text[], chunk_contents text[], chunk_start_lines integer[], chunk_end_lines integer[],
    chunk_embeddings @extschema:vector@.vector[], chunk_tokens text[], chunk_token_counts integer[],
    event_chunk_ordinals integer[], event_titles text[], event_contents text[], event_times timestamptz[],
    event_embeddings @extschema:vector@.vector[],
    key_types text[], key_names text[], key_normalized text[], key_strings text[], key_numbers float8[],
    key_bools boolean[], key_embeddings @extschema:vector@.vector[],
    link_event_ordinals integer[], link_key_ords integer[], link_counts integer[],
    trgm_threshold float8 default 0.9, vector_threshold float8 default null, across_types boolean default true)
returns bigint
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    resolved bigint[] := '{}';
    begun record;
begin
    -- The locks in the order of every writer: the vector indexes' (shared), the keys' (sag.resolve_keys), then
    -- the document's row (sag.begin_document).  A document in parts takes the source's key lock first as well.
    perform sag_internal._wait_for_index_builds();
    if coalesce(cardinality(key_types), 0) > 0 then
        select coalesce(array_agg(r.key_id order by r.ord), '{}') into resolved
          from sag.resolve_keys(p_source_id, key_types, key_names, key_normalized, key_strings, key_numbers,
                                key_bools, key_embeddings, trgm_threshold, vector_threshold, across_types) r;
    end if;
    select * into begun from sag.begin_document(p_source_id, p_uri, p_title, p_content, p_content_hash, p_summary,
                                                p_metadata, p_prompt_tokens, p_completion_tokens);
    perform sag_internal._store_part(
        p_source_id, begun.document_id, 0, 0, chunk_titles, chunk_contents, chunk_start_lines, chunk_end_lines,
        chunk_embeddings, chunk_tokens, chunk_token_counts, event_chunk_ordinals, event_titles, event_contents,
        event_times, event_embeddings, link_event_ordinals,
        array(select resolved[o] from unnest(link_key_ords) with ordinality as l(o, n) order by l.n),
        link_counts);
    return sag.finish_document(p_source_id, begun.document_id, begun.old_key_ids, begun.old_key_deltas);
end;
$$;
comment on function sag.ingest_document(bigint, text, text, text, text, text, jsonb, integer, integer, text[], text[], integer[], integer[], @extschema:vector@.vector[], text[], integer[], integer[], text[], text[], timestamptz[], @extschema:vector@.vector[], text[], text[], text[], text[], float8[], boolean[], @extschema:vector@.vector[], integer[], integer[], integer[], float8, float8, boolean) is
    'One whole document in one call (so one statement is one transaction): sag.resolve_keys for its keys '
    '(parallel arrays), then sag.begin_document, its chunks, events and links (event ordinal, 1-based key '
    'position, count) as one part, and sag.finish_document.';

