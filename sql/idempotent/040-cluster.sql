-- Event clustering (sag-algorithm §4): the candidate pairs of the clustering graph, built in SQL.
-- Re-applied on every upgrade.  sag_pg.cluster normalizes, fuses and thresholds the pairs and runs Louvain.
--
-- §4.2 loops over all N(N-1)/2 event pairs in Python; at 50,000 events that is 1.25e9 pairs.  Here only
-- the pairs that can carry weight are built:
--   * key pairs: events sharing at least one key, by a self-join of event_keys on key_id (sag.cluster_key_pairs);
--   * semantic pairs: each event and its k nearest chosen events (sag.cluster_semantic_pairs).
-- A pair in neither list has fused weight alpha*0 + (1-alpha)*0 = 0 in sag-pg (see sag_pg/cluster/graph.py
-- for why the spec's sigmoid(z(0)) > 0 is not used), so nothing is lost by not building it.
--
-- IDF (§4.1), as implemented: IDF(k) = ln(N / df(k)), where N = the number of chosen events (those of
-- event_ids that exist) and df(k) = how many of them hold key k (after the key-type filter).  No smoothing:
-- the spec's appendix uses ln(N / (df + 1)) to avoid dividing by df = 0, which cannot happen here (only
-- keys held by a chosen event are returned), and the +1 would make a key held by every chosen event
-- negative (ln(N/(N+1)) < 0) and a key held by all but one worth exactly 0.  Without it every IDF is >= 0,
-- and a key held by every chosen event is worth 0 (it tells no event apart).  use_idf = false makes every
-- IDF 1 (§4.4: "不计算时，所有 IDF 都为 1").

-- Links (event, key) of the chosen events, keys limited to key_types (NULL = every type).
create or replace function sag_internal._cluster_links(event_ids bigint[], key_types text[])
returns table (event_id bigint, key_id bigint)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return query
    select ek.event_id, ek.key_id
      from sag.event_keys ek
      join sag.keys k on k.source_id = ek.source_id and k.id = ek.key_id
     where ek.event_id = any (event_ids)
       and (key_types is null or k.type = any (key_types));
end
$$;

-- IDF of a key held by df of n chosen events; 1 when IDF is switched off.
create or replace function sag_internal._cluster_idf(n float8, df float8, use_idf boolean)
returns float8
language sql immutable parallel safe
set search_path = pg_catalog, sag, pg_temp
as $$ select case when use_idf then ln(n / df) else 1.0::float8 end $$;

create or replace function sag.cluster_key_idf(
    event_ids bigint[],
    key_types text[] default null,
    use_idf boolean default true)
returns table (key_id bigint, idf float8)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    n float8;
begin
    if (event_ids is not null) is not true then
        raise exception using errcode = '22023', message = 'sag.cluster_key_idf: event_ids must not be NULL';
    end if;
    if (use_idf is not null) is not true then
        raise exception using errcode = '22023', message = 'sag.cluster_key_idf: use_idf must not be NULL';
    end if;
    select count(*) into n from sag.events e where e.id = any (event_ids);
    return query
    select l.key_id, sag_internal._cluster_idf(n, count(*)::float8, use_idf)
      from sag_internal._cluster_links(event_ids, key_types) l
     group by l.key_id
     order by l.key_id;
end;
$$;
comment on function sag.cluster_key_idf(bigint[], text[], boolean) is
    'Clustering §4.1: IDF of every key held by at least one of the chosen events, IDF(k) = ln(N / df) with '
    'N = number of chosen events and df = chosen events holding k (no smoothing: every IDF >= 0, a key held by '
    'every chosen event is 0); 1 for all when use_idf is false.  key_types limits the keys (NULL = all types).  '
    'Example: select * from sag.cluster_key_idf(array(select id from sag.events where source_id = 1));';

create or replace function sag.cluster_key_pairs(
    event_ids bigint[],
    key_types text[] default null,
    use_idf boolean default true,
    max_key_events integer default 500)
returns table (event_a bigint, event_b bigint, w_key float8)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    n float8;
begin
    if (event_ids is not null) is not true then
        raise exception using errcode = '22023', message = 'sag.cluster_key_pairs: event_ids must not be NULL';
    end if;
    if (use_idf is not null) is not true then
        raise exception using errcode = '22023', message = 'sag.cluster_key_pairs: use_idf must not be NULL';
    end if;
    if (max_key_events >= 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.cluster_key_pairs: max_key_events must be >= 1, got %s',
                                               max_key_events);
    end if;
    select count(*) into n from sag.events e where e.id = any (event_ids);
    return query
    with links as materialized (
        select l.event_id, l.key_id from sag_internal._cluster_links(event_ids, key_types) l
    ),
    weighted as (
        -- Keys held by one event make no pair; keys held by more than max_key_events would make
        -- df(df-1)/2 pairs each; keys worth 0 (held by every chosen event) add nothing to any pair.
        select l.key_id, sag_internal._cluster_idf(n, count(*)::float8, use_idf) as idf
          from links l
         group by l.key_id
        having count(*) between 2 and max_key_events
    )
    select a.event_id, b.event_id, sum(w.idf)
      from weighted w
      join links a on a.key_id = w.key_id
      join links b on b.key_id = w.key_id and b.event_id > a.event_id
     where w.idf > 0
     group by a.event_id, b.event_id;
end;
$$;
comment on function sag.cluster_key_pairs(bigint[], text[], boolean, integer) is
    'Clustering §4.2, key edges: every pair (event_a < event_b) of chosen events sharing at least one key, '
    'w_key = sum of the IDF (sag.cluster_key_idf) of their shared keys, by a self-join of event_keys instead of '
    'a loop over all pairs.  Keys held by more than max_key_events chosen events are skipped (each would add '
    'df(df-1)/2 pairs, and their IDF is at most ln(N / max_key_events)): selections of at most max_key_events '
    'events are exact; sag.cluster_key_cap picks the cap for a budget of pairs.  Pairs with w_key = 0 are not '
    'returned.  The z-score + sigmoid normalization over these pairs is done by the caller (sag_pg.cluster.graph).';

create or replace function sag.cluster_key_cap(
    event_ids bigint[],
    max_pairs bigint,
    key_types text[] default null,
    use_idf boolean default true)
returns integer
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    n bigint;
    cap integer;
begin
    if (event_ids is not null) is not true then
        raise exception using errcode = '22023', message = 'sag.cluster_key_cap: event_ids must not be NULL';
    end if;
    if (max_pairs >= 0) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.cluster_key_cap: max_pairs must be >= 0, got %s', max_pairs);
    end if;
    if (use_idf is not null) is not true then
        raise exception using errcode = '22023', message = 'sag.cluster_key_cap: use_idf must not be NULL';
    end if;
    select count(*) into n from sag.events e where e.id = any (event_ids);
    with df as (
        select count(*) as df from sag_internal._cluster_links(event_ids, key_types) l group by l.key_id
    ),
    by_df as (
        -- Keys that make pairs: held by two or more events, and not worth 0 (held by all of them, with IDF).
        select d.df, sum(d.df * (d.df - 1) / 2) as pairs
          from df d
         where d.df >= 2 and not (use_idf and d.df = n)
         group by d.df
    ),
    cumulative as (
        select b.df, sum(b.pairs) over (order by b.df) as total from by_df b
    )
    select coalesce(max(c.df) filter (where c.total <= max_pairs), 1) into cap from cumulative c;
    return cap;
end;
$$;
comment on function sag.cluster_key_cap(bigint[], bigint, text[], boolean) is
    'The max_key_events for sag.cluster_key_pairs that keeps its pairs within max_pairs: keys are taken from '
    'the rarest (highest IDF) up, a whole document frequency at a time, while the pairs they make, '
    'sum of df(df-1)/2, fit.  Returns the largest such df (1 when not even the keys held by two events fit: '
    'no key pairs).  sag-pg uses max_pairs = 20 x the number of chosen events by default.';

create or replace function sag.cluster_semantic_pairs(
    event_ids bigint[],
    k integer default 10,
    exact_max integer default 1000)
returns table (event_a bigint, event_b bigint, similarity float8)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
set enable_sort = on
set hnsw.ef_search = 40
set hnsw.iterative_scan = relaxed_order
as $$
declare
    n integer;
    sids bigint[];
    whole_sources boolean;
begin
    if (event_ids is not null) is not true then
        raise exception using errcode = '22023', message = 'sag.cluster_semantic_pairs: event_ids must not be NULL';
    end if;
    if (k >= 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.cluster_semantic_pairs: k must be >= 1, got %s', k);
    end if;
    if (exact_max >= 0) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.cluster_semantic_pairs: exact_max must be >= 0, got %s',
                                               exact_max);
    end if;
    select count(*), array_agg(distinct e.source_id) into n, sids
      from sag.events e where e.id = any (event_ids) and e.embedding is not null;
    if n < 2 then
        return;
    end if;

    if n <= exact_max then
        -- Exact: n(n-1)/2 distances, each pair ranked from both ends.
        return query
        with chosen as materialized (
            select e.id, e.embedding from sag.events e where e.id = any (event_ids) and e.embedding is not null
        ),
        d as materialized (
            select a.id as a, b.id as b, a.embedding operator(@extschema:vector@.<=>) b.embedding as dist
              from chosen a join chosen b on b.id > a.id
        ),
        both_ends as (
            select d.a as e, d.b as o, d.a, d.b, d.dist from d where d.dist <> 'NaN'::float8
            union all
            select d.b, d.a, d.a, d.b, d.dist from d where d.dist <> 'NaN'::float8
        ),
        ranked as (
            select x.a, x.b, x.dist, row_number() over (partition by x.e order by x.dist, x.o) as rn from both_ends x
        )
        select r.a, r.b, max(1 - r.dist)
          from ranked r
         where r.rn <= k and 1 - r.dist > 0
         group by r.a, r.b;
        return;
    end if;

    -- HNSW: one top-k search per chosen event, filtered to the chosen events.  When the chosen events are
    -- every embedded event of their sources (clustering a whole source), the filter is on source_id, which is
    -- cheaper to test than membership in a long id array.  pgvector >= 0.8's iterative scan keeps searching
    -- when the filter removes candidates; results are approximate (HNSW recall), as for retrieval.
    select n = (select count(*) from sag.events e where e.source_id = any (sids) and e.embedding is not null)
      into whole_sources;
    perform set_config('hnsw.ef_search', least(greatest(k, 40), 1000)::text, true);
    perform set_config('enable_sort', 'off', true);  -- take the HNSW index, not "fetch all, sort"
    if whole_sources then
        return query
        select least(a.id, nb.id), greatest(a.id, nb.id), max(1 - nb.dist)
          from sag.events a
          cross join lateral (
              select b.id, b.embedding operator(@extschema:vector@.<=>) a.embedding as dist
                from sag.events b
               where b.embedding is not null and b.source_id = any (sids) and b.id <> a.id
               order by b.embedding operator(@extschema:vector@.<=>) a.embedding
               limit k) nb
         where a.id = any (event_ids) and a.embedding is not null
           and nb.dist <> 'NaN'::float8 and 1 - nb.dist > 0
         group by 1, 2;
    else
        return query
        select least(a.id, nb.id), greatest(a.id, nb.id), max(1 - nb.dist)
          from sag.events a
          cross join lateral (
              select b.id, b.embedding operator(@extschema:vector@.<=>) a.embedding as dist
                from sag.events b
               where b.embedding is not null and b.id = any (event_ids) and b.id <> a.id
               order by b.embedding operator(@extschema:vector@.<=>) a.embedding
               limit k) nb
         where a.id = any (event_ids) and a.embedding is not null
           and nb.dist <> 'NaN'::float8 and 1 - nb.dist > 0
         group by 1, 2;
    end if;
end;
$$;
comment on function sag.cluster_semantic_pairs(bigint[], integer, integer) is
    'Clustering §4.2, semantic edges: every pair (event_a < event_b) of chosen events where one is among the k '
    'nearest chosen events of the other by embedding, similarity = 1 - cosine distance (pairs with similarity '
    '<= 0 and events without embedding are left out).  Exact for at most exact_max events with embeddings, '
    'else one HNSW search per event (LATERAL top-k; pgvector >= 0.8 hnsw.iterative_scan = relaxed_order keeps '
    'the filter on the chosen events from starving it).';
