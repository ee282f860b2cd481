-- Nearest neighbours by the HNSW indexes (keys, events, chunks): the first step of stage 1 and of the chunk
-- searches (sag-algorithm §2.2, §2.4).  Re-applied on every upgrade; the conventions of 030-retrieval-keys.sql
-- hold here too.

-- Nearest neighbours by the HNSW indexes: the `lim` rows nearest to `query_embedding` (cosine distance), in
-- the index's order (relaxed: nearly sorted), NaN distances (zero vectors) left out.  Callers sort.
-- * enable_sort = off makes the planner take the HNSW index even when a source filter looks selective: the
--   alternative (fetch every row of the source, compute all distances, sort) looks cheap to it but is not,
--   because every 2 KB embedding has to be detoasted.  Without an HNSW index (dimension > 2000) the planner
--   still sorts.
-- * hnsw.iterative_scan = relaxed_order keeps a source filter from starving the result (pgvector 0.8).
-- * hnsw.ef_search must be >= lim, and a SET clause only takes constants: the clause sets 40 and
--   set_config(..., true) raises it.  PostgreSQL undoes a set_config(..., true) made inside a function when
--   the function returns only for the variables named in its SET clause (any other would last until the end
--   of the caller's transaction), so both hnsw settings are named there.  The same holds for language sql
--   functions (a `select set_config(...)` statement before the query, plus the SET clause); plpgsql is used
--   here because the limit is a parameter.
-- * Keys use ef_search = lim (at least 40) like events and chunks.  With the hash embedder's near-tie key
--   names that finds 78 % of the true 30 nearest keys on the MuSiQue corpus (4 * lim: 92 %), but the keys it
--   misses are the weak ones below match_keys' min_similarity: R@k on both bench sets was the same at
--   ef_search 40, 60 and 120, and at 100 k keys the wider beam cost 11 ms of a 55 ms search.
-- * With an id filter (events, chunks) of at most 1,000 ids the search is exact over the allowed rows: a
--   selective filter would starve the approximate index scan (and 1,000 exact distances cost a few ms).  A
--   larger filter goes through the HNSW index, the filter applied to the rows it yields; the iterative scan
--   keeps going until enough rows pass (up to hnsw.max_scan_tuples).
create or replace function sag_internal._nearest_keys(query_embedding @extschema:vector@.vector, source_ids bigint[], lim integer)
returns table (key_id bigint, distance float8)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
set enable_sort = off
set hnsw.ef_search = 40
set hnsw.iterative_scan = relaxed_order
as $$
declare
    q @extschema:vector@.halfvec := query_embedding::@extschema:vector@.halfvec;  -- cast once, not per row
begin
    perform set_config('hnsw.ef_search', least(greatest(lim, 40), 1000)::text, true);
    return query
    select x.id, x.distance
      from (select k.id, k.embedding operator(@extschema:vector@.<=>) q as distance
              from sag.keys k
             where k.embedding is not null
               and (source_ids is null or k.source_id = any (source_ids))
             order by k.embedding operator(@extschema:vector@.<=>) q
             limit lim) x
     where x.distance <> 'NaN'::float8;
end;
$$;

create or replace function sag_internal._nearest_events(query_embedding @extschema:vector@.vector, source_ids bigint[], lim integer,
                                               event_filter bigint[] default null)
returns table (event_id bigint, distance float8)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
set enable_sort = off
set hnsw.ef_search = 40
set hnsw.iterative_scan = relaxed_order
as $$
declare
    q @extschema:vector@.halfvec := query_embedding::@extschema:vector@.halfvec;  -- cast once, not per row
begin
    if event_filter is not null and cardinality(event_filter) <= 1000 then
        -- Exact over the allowed events (materialized first, so the planner cannot pick the HNSW index).
        return query
        with allowed as materialized (
            select e.id, e.embedding operator(@extschema:vector@.<=>) q as distance
              from sag.events e
             where e.id in (select unnest(event_filter))
               and e.embedding is not null
               and (source_ids is null or e.source_id = any (source_ids)))
        select a.id, a.distance from allowed a
         where a.distance <> 'NaN'::float8
         order by a.distance, a.id
         limit lim;
        return;
    end if;
    perform set_config('hnsw.ef_search', least(greatest(lim, 40), 1000)::text, true);
    return query
    select x.id, x.distance
      from (select e.id, e.embedding operator(@extschema:vector@.<=>) q as distance
              from sag.events e
             where e.embedding is not null
               and (source_ids is null or e.source_id = any (source_ids))
               and (event_filter is null or e.id in (select unnest(event_filter)))
             order by e.embedding operator(@extschema:vector@.<=>) q
             limit lim) x
     where x.distance <> 'NaN'::float8;
end;
$$;

create or replace function sag_internal._nearest_chunks(query_embedding @extschema:vector@.vector, source_ids bigint[], lim integer,
                                               chunk_filter bigint[] default null)
returns table (chunk_id bigint, distance float8)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
set enable_sort = off
set hnsw.ef_search = 40
set hnsw.iterative_scan = relaxed_order
as $$
declare
    q @extschema:vector@.halfvec := query_embedding::@extschema:vector@.halfvec;  -- cast once, not per row
begin
    if chunk_filter is not null and cardinality(chunk_filter) <= 1000 then
        return query
        with allowed as materialized (
            select c.id, c.embedding operator(@extschema:vector@.<=>) q as distance
              from sag.chunks c
             where c.id in (select unnest(chunk_filter))
               and c.embedding is not null
               and (source_ids is null or c.source_id = any (source_ids)))
        select a.id, a.distance from allowed a
         where a.distance <> 'NaN'::float8
         order by a.distance, a.id
         limit lim;
        return;
    end if;
    perform set_config('hnsw.ef_search', least(greatest(lim, 40), 1000)::text, true);
    return query
    select x.id, x.distance
      from (select c.id, c.embedding operator(@extschema:vector@.<=>) q as distance
              from sag.chunks c
             where c.embedding is not null
               and (source_ids is null or c.source_id = any (source_ids))
               and (chunk_filter is null or c.id in (select unnest(chunk_filter)))
             order by c.embedding operator(@extschema:vector@.<=>) q
             limit lim) x
     where x.distance <> 'NaN'::float8;
end;
$$;

-- Tried and dropped (2026-11-27): turning the iterative scan off when no filter can remove a row saved nothing
-- measurable (0.01-0.02 ms an HNSW search, interleaved A/B).
