-- Re-embedding with another embedder (issue #37 item 6): the database serves one embedder and dimension
-- (sag.bind_embedder); switching means new vectors for every chunk, event and string key.  Re-applied on every
-- upgrade.
--
-- sag.begin_reembed binds the new embedder at once (the columns retyped halfvec(new dimension) with every
-- vector NULL, the HNSW indexes dropped) and records the run in sag.settings ('reembed').  The client then
-- reads the rows still without a vector (sag.reembed_pending), embeds them and stores them in batches
-- (sag.store_reembedded), each batch its own transaction: an interrupted run leaves the rows done so far, and
-- the next sag.begin_reembed with the same embedder resumes.  sag.finish_reembed builds the indexes, measures the
-- new embedder's similarity floors and clears the record.  Rows a writer adds meanwhile are embedded by that
-- writer with the new embedder (it is the bound one).

create or replace function sag.reembed_state()
returns jsonb
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return ( select value from sag.settings where name = 'reembed');
end
$$;
comment on function sag.reembed_state() is
    'The unfinished re-embedding ({"name", "dimension", "from", "sources", "started_at"}), or NULL.';

create or replace function sag.begin_reembed(embedder text, dimension integer, source_ids bigint[] default null)
returns jsonb
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    bound jsonb;
    pending jsonb;
    same boolean;
    left_out text;
begin
    perform sag_internal._check_embedder('sag.begin_reembed', embedder, dimension);
    perform pg_advisory_xact_lock(hashtext('sag.bind_embedder'));
    pending := sag.reembed_state();
    if pending is not null then
        if pending->>'name' = embedder and (pending->>'dimension')::int = dimension then
            return pending || jsonb_build_object('resumed', true);
        end if;
        raise exception using errcode = '22023',
            message = format('a re-embedding to %s (dimension %s) is unfinished', pending->>'name',
                             pending->>'dimension'),
            hint = 'Finish it first: run sag-pg db reembed with that embedder (SAG_EMBEDDER).';
    end if;
    bound := sag.bound_embedder();
    if bound is null then
        raise exception using errcode = '22023',
            message = 'sag.begin_reembed: no embedder is bound yet: nothing to re-embed (the first ingest binds one)';
    end if;
    same := bound->>'name' = embedder and (bound->>'dimension')::int = dimension;
    if not same and source_ids is not null then
        -- One embedder for the whole database: the other sources' vectors would be left in the old space.
        select string_agg(quote_literal(s.name), ', ' order by s.name) into left_out
          from sag.sources s
         where s.id <> all(source_ids)
           and exists (select 1 from sag.chunks c where c.source_id = s.id);
        if left_out is not null then
            raise exception using errcode = '22023',
                message = format('the database serves one embedder: re-embedding only some sources with %s would '
                                 'leave %s with %s vectors', embedder, left_out, bound->>'name'),
                hint = 'Re-embed every source: sag-pg db reembed.';
        end if;
    end if;
    perform sag.drop_vector_indexes();
    if same then
        -- The same embedder again (its vectors are to be recomputed): only these sources' rows.
        update sag.chunks c set embedding = null where source_ids is null or c.source_id = any(source_ids);
        update sag.events e set embedding = null where source_ids is null or e.source_id = any(source_ids);
        update sag.keys k set embedding = null
         where k.value_string is not null and (source_ids is null or k.source_id = any(source_ids));
    else
        -- New empty columns of the new type (sag_internal._type_vector_columns: storage decided as they are
        -- made, the keys' check kept).
        perform sag_internal._type_vector_columns(dimension, discard => true);
        update sag.settings
           set value = jsonb_build_object('name', embedder, 'dimension', dimension, 'bound_at', now(),
                                          'previous', bound - 'previous'),
               updated_at = now()
         where name = 'embedder';
        source_ids := null;  -- every source
    end if;
    pending := jsonb_build_object('name', embedder, 'dimension', dimension, 'from', bound - 'previous',
                                  'sources', to_jsonb(source_ids), 'started_at', now());
    insert into sag.settings (name, value) values ('reembed', pending);
    return pending || jsonb_build_object('resumed', false);
end;
$$;
comment on function sag.begin_reembed(text, integer, bigint[]) is
    'Starts re-embedding with embedder (name, dimension): another embedder than the bound one is bound at once '
    '(columns retyped halfvec(dimension), every vector NULL, HNSW indexes dropped; every source must be included); '
    'the same one recomputes the given sources'' vectors (NULL = all).  Returns the run (sag.reembed_state) with '
    '"resumed": true when an unfinished run with this embedder is continued; 22023 if another one is unfinished.';

create or replace function sag.reembed_pending(
    tbl text, source_ids bigint[], after_source bigint default 0, after_id bigint default 0,
    batch integer default 256)
returns table (source_id bigint, id bigint, passage text)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
begin
    -- The texts ingestion embeds (sag_pg/ingest/prepare.py): title and content of chunks and events, the
    -- string value of keys.  In (source_id, id) order from a cursor, so a batch is one primary-key range scan.
    if tbl = 'chunks' then
        return query select c.source_id, c.id, c.title || E'\n' || c.content from sag.chunks c
                      where c.embedding is null and (source_ids is null or c.source_id = any(source_ids))
                        and (c.source_id, c.id) > (after_source, after_id)
                      order by c.source_id, c.id limit batch;
    elsif tbl = 'events' then
        return query select e.source_id, e.id, e.title || E'\n' || e.content from sag.events e
                      where e.embedding is null and (source_ids is null or e.source_id = any(source_ids))
                        and (e.source_id, e.id) > (after_source, after_id)
                      order by e.source_id, e.id limit batch;
    elsif tbl = 'keys' then
        return query select k.source_id, k.id, k.value_string from sag.keys k
                      where k.embedding is null and k.value_string is not null
                        and (source_ids is null or k.source_id = any(source_ids))
                        and (k.source_id, k.id) > (after_source, after_id)
                      order by k.source_id, k.id limit batch;
    else
        raise exception using errcode = '22023',
            message = format('sag.reembed_pending: tbl must be chunks, events or keys, got %L', tbl);
    end if;
end;
$$;
comment on function sag.reembed_pending(text, bigint[], bigint, bigint, integer) is
    'The next batch of rows of chunks, events or keys without a vector (keys: string keys only), after '
    '(after_source, after_id), with the passage to embed; source_ids NULL = all sources.';

create or replace function sag.store_reembedded(
    tbl text, source_ids bigint[], ids bigint[], embeddings @extschema:vector@.vector[])
returns integer
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    stored integer;
begin
    if tbl = 'chunks' then
        update sag.chunks c set embedding = u.emb
          from unnest(source_ids, ids, embeddings) u(sid, id, emb)
         where c.source_id = u.sid and c.id = u.id;
    elsif tbl = 'events' then
        update sag.events e set embedding = u.emb
          from unnest(source_ids, ids, embeddings) u(sid, id, emb)
         where e.source_id = u.sid and e.id = u.id;
    elsif tbl = 'keys' then
        update sag.keys k set embedding = u.emb
          from unnest(source_ids, ids, embeddings) u(sid, id, emb)
         where k.source_id = u.sid and k.id = u.id;
    else
        raise exception using errcode = '22023',
            message = format('sag.store_reembedded: tbl must be chunks, events or keys, got %L', tbl);
    end if;
    get diagnostics stored = row_count;
    return stored;
end;
$$;
comment on function sag.store_reembedded(text, bigint[], bigint[], @extschema:vector@.vector[]) is
    'Stores re-computed vectors of chunks, events or keys, matched on (source_id, id); returns how many rows.';

create or replace function sag.reembed_remaining(source_ids bigint[] default null)
returns table (tbl text, remaining bigint)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return query
    select 'chunks', count(*) from sag.chunks c
     where c.embedding is null and (source_ids is null or c.source_id = any(source_ids))
    union all
    select 'events', count(*) from sag.events e
     where e.embedding is null and (source_ids is null or e.source_id = any(source_ids))
    union all
    select 'keys', count(*) from sag.keys k
     where k.embedding is null and k.value_string is not null and (source_ids is null or k.source_id = any(source_ids));
end
$$;
comment on function sag.reembed_remaining(bigint[]) is
    'How many chunks, events and string keys still have no vector (source_ids NULL = all sources).';

create or replace function sag.finish_reembed()
returns jsonb
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    pending jsonb := sag.reembed_state();
    sids bigint[];
    left_over bigint;
begin
    if pending is null then
        return null;
    end if;
    sids := case when jsonb_typeof(pending->'sources') = 'array'
                 then array(select jsonb_array_elements_text(pending->'sources')::bigint) end;
    select sum(r.remaining) into left_over from sag.reembed_remaining(sids) r;
    if left_over > 0 then
        raise exception using errcode = '55000',
            message = format('sag.finish_reembed: %s rows have no vector yet', left_over),
            hint = 'Run sag-pg db reembed again: it continues where it stopped.';
    end if;
    perform sag.create_vector_indexes();
    perform sag.calibrate_similarity();  -- the new embedder's chance level and reliability
    delete from sag.settings where name = 'reembed';
    return pending;
end;
$$;
comment on function sag.finish_reembed() is
    'Ends a re-embedding whose rows all have vectors: builds the HNSW indexes, re-measures the similarity floors '
    '(sag.calibrate_similarity) and clears sag.reembed_state(); returns the finished run (NULL if none).';
