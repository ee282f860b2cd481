-- Retrieval stage 1 (sag-algorithm §2.2): from the query to the weighted key set of step 1 (stage 2, the
-- multi-hop loop, is in 030-retrieval-multihop.sql).  The conventions below hold for both.
-- Re-applied on every upgrade.  docs/retrieval.md gives the formulas as implemented and the choices made.
--
-- Conventions shared by every retrieval function:
--   * source_ids NULL means all sources; otherwise no key, event or chunk outside them is read or returned.
--   * similarity(a, b) = greatest(0, 1 - (a <=> b)): cosine, clamped at 0 so weights stay non-negative; a zero
--     vector (cosine undefined, NaN) has similarity 0.
--   * HNSW searches go through sag_internal._nearest_keys/_events/_chunks, which set hnsw.ef_search (>= the limit) and
--     hnsw.iterative_scan = relaxed_order for their own duration only (see below).
--   * A key linked to more than max_key_events events is a hub: it is never expanded (its events are not
--     fetched) and never enters key-final.
--   * Key weights are distributions: every activation (stage 1, each hop of stage 2) is L1-normalized over
--     the keys it keeps, so the weights of one activation sum to 1.
--   * event_filter / chunk_filter (bigint[], NULL = no filter): the `sql` restriction of sag-algorithm §3.1,
--     pre-computed (sag_pg.search.restrict.allowed_events).  Only allowed events activate keys; only allowed
--     chunks are returned.  An empty array allows nothing.
--   * The entry points (match_keys, activate_keys, expand_keys and the chunk functions of 031) run with
--     plan_cache_mode = force_generic_plan: their statements are planned once per session, not at every
--     call.  Left to choose, PostgreSQL kept planning most of them anew (their arrays differ every call):
--     a fast search at 10 k events took 16.6-16.9 ms so and 15.0-15.8 ms with generic plans (at 100 k the
--     difference is within the noise); the top 10 of 100 questions at 100 k were the same chunks with the
--     same scores either way.

-- Argument checks raise in the function the caller called (22023), so an error's context names that
-- function and no internal helper.
drop function if exists sag_internal._require(boolean, text);

-- The first id of source_ids that is no source (NULL if all are, or source_ids is NULL = all sources): the
-- entry points raise P0002 naming it, as an unknown id would otherwise just find nothing.
create or replace function sag_internal._unknown_source_id(source_ids bigint[])
returns bigint
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return (
    select s.id from unnest(source_ids) s(id) where not exists (select 1 from sag.sources x where x.id = s.id) limit 1);
end
$$;

-- sag.match_keys gained name and type columns: a new return type needs the old function dropped.
drop function if exists sag.match_keys(@extschema:vector@.vector, bigint[], integer, float8, float8);

-- Signatures that gained parameters: drop the old ones, or calls would be ambiguous between two overloads.
drop function if exists sag_internal._nearest_events(@extschema:vector@.vector, bigint[], integer);
drop function if exists sag_internal._nearest_chunks(@extschema:vector@.vector, bigint[], integer);
drop function if exists sag.activate_keys(@extschema:vector@.vector, bigint[], float8[], bigint[], integer, float8, integer, integer);
drop function if exists sag.activate_keys(@extschema:vector@.vector, bigint[], float8[], bigint[], integer, float8, integer, integer,
                                          bigint[], float8[], float8[], float8, integer, bigint[]);
drop function if exists sag.activate_keys(@extschema:vector@.vector, bigint[], float8[], bigint[], integer, float8, integer, integer,
                                          bigint[], float8[], float8[], float8, integer, bigint[], bigint);

drop function if exists sag.match_keys(@extschema:vector@.vector, bigint[], integer, float8);
drop function if exists sag_internal._every_source(bigint[]);
drop function if exists sag_internal._activate(bigint[], float8[], bigint[], float8, integer, integer, bigint);
drop function if exists sag.activate_keys(@extschema:vector@.vector, bigint[], float8[], bigint[], integer, float8, integer, integer,
                                          bigint[], float8[], float8[], float8, integer, bigint[], bigint, bigint[],
                                          float8);
drop function if exists sag.activate_keys(@extschema:vector@.vector, bigint[], float8[], bigint[], integer, float8, integer, integer,
                                          bigint[], float8[], float8[], float8, integer, bigint[], bigint, bigint[]);
drop function if exists sag.activate_keys(@extschema:vector@.vector, bigint[], float8[], bigint[], integer, float8, integer, integer,
                                          bigint[], float8[], float8[], float8, integer, bigint[], bigint, bigint[],
                                          float8, boolean);  -- gained profile

create or replace function sag.match_keys(
    query_embedding @extschema:vector@.vector,
    source_ids bigint[] default null,
    top_k integer default 30,
    min_similarity float8 default 0.45,
    similarity_floor float8 default 0)
returns table (key_id bigint, similarity float8, name text, type text)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
set plan_cache_mode = force_generic_plan
as $$
declare
    unknown bigint;
    near_ids bigint[];
    near_distances float8[];
begin
    if (query_embedding is not null) is not true then
        raise exception using errcode = '22023', message = 'sag.match_keys: query_embedding must not be NULL';
    end if;
    unknown := sag_internal._unknown_source_id(source_ids);
    if unknown is not null then
        raise exception using errcode = 'P0002', message = format('sag.match_keys: no source with id %s', unknown),
                              hint = 'List sources with: select id, name from sag.sources;';
    end if;
    if (top_k >= 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.match_keys: top_k must be >= 1, got %s', top_k);
    end if;
    if (min_similarity is not null) is not true then
        raise exception using errcode = '22023',
                              message = 'sag.match_keys: min_similarity must not be NULL (use 0 to keep every match)';
    end if;
    -- The similarity filter stays outside the index scan: inside, an iterative scan would keep looking for
    -- rows that pass it.  Only string keys have embeddings.
    if (similarity_floor >= 0 and similarity_floor < 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.match_keys: similarity_floor must be in [0, 1), got %s',
                                               similarity_floor);
    end if;
    -- name and type: an analyst reading the result in psql sees the keys, not bare ids.  The nearest keys
    -- first, then their names by (source, id): a function reading tables is not called inside a statement
    -- over distributed tables (Citus).
    select coalesce(array_agg(x.key_id), '{}'), coalesce(array_agg(x.distance), '{}') into near_ids, near_distances
      from sag_internal._nearest_keys(query_embedding, source_ids, top_k) x;
    return query
    select n.key_id, n.similarity, k.name, k.type
      from (select x.key_id, x.distance,
                   greatest(0, (1 - x.distance - similarity_floor) / (1 - similarity_floor)) as similarity
              from unnest(near_ids, near_distances) as x(key_id, distance)) n
      join sag.keys k on (source_ids is null or k.source_id = any (source_ids)) and k.id = n.key_id
     where n.similarity >= min_similarity
     order by n.distance, n.key_id;
end;
$$;
comment on function sag.match_keys(@extschema:vector@.vector, bigint[], integer, float8, float8) is
    'Stage 1 step 1 (sag-algorithm §2.2): the top_k string keys nearest to the query embedding (HNSW on '
    'keys.embedding), similarity = cosine above similarity_floor, rescaled: greatest(0, (cosine - floor) / '
    '(1 - floor)) (sag.similarity_floors; 0 = the plain cosine) >= min_similarity; these are the seed '
    'keys and their weights k1, with each key''s name and type.  Unknown source id: P0002.  The default 0.45 suits the hash embedder (one-word keys sharing a common word '
    'with the question score up to about 0.5, entity names it contains 0.5-0.9).  '
    'Example: select * from sag.match_keys(sag.embed_hash(''who founded Apple''));';

-- How much an activated key counts, besides the weight of the events that activate it:
--   * specificity: ln(1 + N / events of the key) / ln(1 + N), N = the events of the searched sources
--     (sag.calibration): 1 for a key of one event, small for one in every event.  Activation sums over
--     events, so without it the generic keys a question's neighbourhood shares (工程师, 研究, 2022, "film")
--     outweigh the rare name that bridges two documents.  corpus_events NULL: 1.
--   * the key type's weight of the key's source (sources.config -> key_types, `sag-pg source --key-type`),
--     by default SAG's own (sag_pg.types.DEFAULT_KEY_TYPES, written into every source ingest creates):
--     person, organization, location 1, topic 0.8, time and tag 0.6, action 0.5; other types 1.  These are
--     not dataflow-activation's ENTITY_TYPE_WEIGHTS (topic 1.5, action 1.2, person 1.1, ...): DataFlow keeps
--     those as its own setting (sag.dataflow_type_weights, config -> dataflow_type_weights).
create or replace function sag_internal._key_weight(key_type text, event_count integer, corpus_events bigint,
                                           key_types jsonb default null)
returns float8
language sql immutable parallel safe
-- No SET clause: it would stop PostgreSQL from inlining this expression into its callers' queries, and it is
-- evaluated once per candidate key (600 calls a search, 10 % of sag.retrieve's time at MuSiQue's size).  Inlined,
-- it is parsed under the caller's pinned search_path.  Called directly (psql), it is parsed under the
-- session's: so every function and operator is named with its schema (a public.ln or a public./ created by
-- another role cannot run; issue #36).
as $$
    select (case when corpus_events is null or corpus_events operator(pg_catalog.<) 1::bigint then 1.0::float8
                 -- (operator(...) has one precedence for every operator: the parentheses say the order)
                 else pg_catalog.ln(1::float8 operator(pg_catalog.+)
                                    (corpus_events::float8 operator(pg_catalog./) greatest(event_count, 1)::float8))
                      operator(pg_catalog./) pg_catalog.ln(1::float8 operator(pg_catalog.+) corpus_events::float8) end)
         operator(pg_catalog.*)
           coalesce((key_types operator(pg_catalog.->>) key_type)::float8,
                    case when key_type operator(pg_catalog.=) 'topic'::text then 0.8::float8
                         when key_type operator(pg_catalog.=) 'time'::text then 0.6::float8
                         when key_type operator(pg_catalog.=) 'tag'::text then 0.6::float8
                         when key_type operator(pg_catalog.=) 'action'::text then 0.5::float8 else 1.0::float8 end)
$$;

-- Reverse activation and dynamic pruning, shared by stage 1 and every hop of stage 2:
--   W(k) = sum of the weights of the given events that contain k, times the key's weight (sag_internal._key_weight);
--   kept if W(k) >= threshold * the largest W, then the top_n by W (ties by key_id);
--   L1-normalized over the kept keys: the returned weights sum to 1.
-- Hub keys (event_count > max_key_events) and keys outside source_ids are left out before anything else;
-- with soft_hubs a hub is kept, its W times (max_key_events / event_count)^2 (1 at the limit): a bridge
-- entity of a small corpus, with a few more events than the limit, can still be activated.
-- seed (profile 'seed', sag-algorithm §2.2 step 7-8 as written): W(k) = the plain sum of the event weights (no
-- key weight, no soft hubs), pruned the same way, not normalized.
drop function if exists sag_internal._activate(bigint[], float8[], bigint[], float8, integer, integer);
drop function if exists sag_internal._activate(bigint[], float8[], bigint[], float8, integer, integer, bigint, boolean);
create or replace function sag_internal._activate(
    event_ids bigint[], event_weights float8[], source_ids bigint[],
    threshold float8, top_n integer, max_key_events integer, corpus_events bigint default null,
    soft_hubs boolean default false, seed boolean default false)
returns table (key_id bigint, weight float8)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
-- A few hundred to a few thousand key lookups: by primary key, not by a hash join over all keys.
set enable_seqscan = off
as $$
#variable_conflict use_column
declare
    -- The sources named, never NULL: event_keys' key starts with source_id, and "source_ids is null or ..."
    -- kept it out of the generic plan's index condition, each event's links found by a skip scan over the
    -- sources (3 index searches an event, 0.52 against 0.23 ms for 50 events at 10 k events).
    srcs bigint[] := coalesce(source_ids, array(select x.id from sag.sources x order by x.id));
begin
    return query
    with activated as (
        select ek.source_id, ek.key_id, sum(e.w) as w
          from unnest(event_ids, event_weights) as e(event_id, w)
          join sag.event_keys ek on ek.source_id = any (srcs) and ek.event_id = e.event_id
         where e.w > 0
         group by ek.source_id, ek.key_id
    ),
    key_types as materialized (
        -- Each source's key-type weights, read once: not one sources lookup per activated key (materialized:
        -- else the plan may put the aggregate on a nested loop's inner side, re-run for every activated key,
        -- 0.3 ms of a 1 ms call at 10 k events).
        select coalesce(jsonb_object_agg(s.id::text, s.config -> 'key_types'), '{}') as by_source from sag.sources s
    ),
    eligible as (
        select x.key_id, x.w, max(x.w) over () as top
          from (select a.key_id,
                       case when seed then a.w
                            else a.w * sag_internal._key_weight(k.type, k.event_count, corpus_events,
                                                                kt.by_source -> k.source_id::text)
                                 * case when k.event_count <= max_key_events then 1
                                        else (max_key_events::float8 / k.event_count) ^ 2 end end as w
                  from activated a
                  join sag.keys k on k.source_id = a.source_id and k.id = a.key_id
                  cross join key_types kt
                 where (k.event_count <= max_key_events or (soft_hubs and not seed))
                   and k.source_id = any (srcs)) x
         where x.w > 0
    ),
    kept as (
        select g.key_id, g.w
          from eligible g
         where g.w >= threshold * g.top
         order by g.w desc, g.key_id
         limit top_n
    )
    select k.key_id, case when seed then k.w else k.w / sum(k.w) over () end as weight
      from kept k
     order by k.w desc, k.key_id;
end
$$;

create or replace function sag.activate_keys(
    query_embedding @extschema:vector@.vector,
    seed_key_ids bigint[],
    seed_weights float8[],
    source_ids bigint[] default null,
    event_limit integer default 50,
    threshold float8 default 0.1,
    top_n integer default 20,
    max_key_events integer default 20,
    chunk_ids bigint[] default null,
    chunk_similarities float8[] default null,
    chunk_text_scores float8[] default null,
    text_weight float8 default 0.85,
    feedback_chunks integer default 1,
    event_filter bigint[] default null,
    corpus_events bigint default null,
    hub_seed_ids bigint[] default null,
    similarity_floor float8 default 0,
    soft_hubs boolean default false,
    profile text default 'default')
returns table (key_id bigint, weight float8, step integer)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
set plan_cache_mode = force_generic_plan
as $$
declare
    qh @extschema:vector@.halfvec := query_embedding::@extschema:vector@.halfvec;  -- the columns' type, cast once (not per row)
    ev_ids bigint[];
    ev_w float8[];
    -- Weight of the BM25 part in an event's relevance: only when the query's chunks are given.
    etw float8 := case when chunk_ids is null then 0 else text_weight end;
    -- The sources (all when source_ids is NULL): every table read below names them, so that on Citus each
    -- statement for one source runs on the worker holding it.
    srcs bigint[] := coalesce(source_ids, array(select x.id from sag.sources x order by x.id));
    near_ids bigint[];
    near_distances float8[];
    qc_ids bigint[];
    qc_s float8[];
    qc_ts float8[];
    named_chunk_ids bigint[];
    fb_ids bigint[];
    fb_s float8[];
    fb_keys bigint[];
    fb_key_w float8[];
    sd_source bigint[];
    sd_key bigint[];
    sd_w float8[];
    sd_hub boolean[];
    bm_events bigint[];
    e1_ids bigint[];
    e1_sim float8[];
    se_ids bigint[];
    se_chunks bigint[];
    se_w float8[];
    cos_ids bigint[];
    cos_sim float8[];
begin
    if (query_embedding is not null) is not true then
        raise exception using errcode = '22023', message = 'sag.activate_keys: query_embedding must not be NULL';
    end if;
    if (similarity_floor >= 0 and similarity_floor < 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.activate_keys: similarity_floor must be in [0, 1), got %s',
                                               similarity_floor);
    end if;
    if (cardinality(coalesce(seed_key_ids, '{}')) = cardinality(coalesce(seed_weights, '{}'))) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.activate_keys: seed_key_ids (%s) and seed_weights (%s) must have the same length',
                                                      cardinality(seed_key_ids), cardinality(seed_weights));
    end if;
    if (cardinality(coalesce(chunk_ids, '{}')) = cardinality(coalesce(chunk_similarities, '{}'))
        and cardinality(coalesce(chunk_ids, '{}')) = cardinality(coalesce(chunk_text_scores, '{}'))) is not true then
        raise exception using errcode = '22023',
                              message = 'sag.activate_keys: chunk_ids, chunk_similarities and chunk_text_scores must have the same length';
    end if;
    if (event_limit >= 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.activate_keys: event_limit must be >= 1, got %s', event_limit);
    end if;
    if (threshold >= 0 and threshold <= 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.activate_keys: threshold must be in [0, 1] (relative to the strongest key), got %s',
                                                      threshold);
    end if;
    if (top_n >= 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.activate_keys: top_n must be >= 1, got %s', top_n);
    end if;
    if (max_key_events >= 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.activate_keys: max_key_events must be >= 1, got %s',
                                               max_key_events);
    end if;
    if (text_weight >= 0 and text_weight <= 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.activate_keys: text_weight must be in [0, 1], got %s',
                                               text_weight);
    end if;
    if (feedback_chunks >= 0) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.activate_keys: feedback_chunks must be >= 0, got %s',
                                               feedback_chunks);
    end if;
    if (profile in ('default', 'seed')) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.activate_keys: profile must be ''default'' or ''seed'', got %s',
                                               coalesce(profile, 'NULL'));
    end if;
    if profile = 'seed' then
        -- sag-algorithm §2.2 as written: e1 = the cosine of the query's nearest events (no BM25 events), the
        -- given seeds only (no feedback keys, no hub seeds), W(k) the plain sum (no specificity, no key-type
        -- weight, no soft hubs), not normalized; no fallback for an empty intersection.
        etw := 0;
        chunk_ids := null;
        chunk_similarities := null;
        chunk_text_scores := null;
        feedback_chunks := 0;
        hub_seed_ids := null;
        corpus_events := null;
        soft_hubs := false;
    end if;

    -- Stage 1 in steps, each a statement that reads the per-source tables by source or reads none: on Citus
    -- every step runs on the workers holding the sources, for one source or several (a CTE over distributed
    -- tables with correlated subqueries is not plannable there), and one PostgreSQL runs the same steps.
    -- The event_limit events nearest to the query (HNSW).
    select coalesce(array_agg(n.event_id), '{}'), coalesce(array_agg(n.distance), '{}') into near_ids, near_distances
      from sag_internal._nearest_events(query_embedding, srcs, event_limit, event_filter) n;
    -- The query's own chunks (sag.query_chunks): s(c, Q) and the BM25 part text_score.
    select coalesce(array_agg(q.chunk_id order by q.chunk_id), '{}'), coalesce(array_agg(q.s order by q.chunk_id), '{}'),
           coalesce(array_agg(q.ts order by q.chunk_id), '{}')
      into qc_ids, qc_s, qc_ts
      from (select u.chunk_id, max((1 - text_weight) * coalesce(u.sim, 0) + text_weight * coalesce(u.ts, 0)) as s,
                   max(coalesce(u.ts, 0)) as ts
              from unnest(chunk_ids, chunk_similarities, chunk_text_scores) as u(chunk_id, sim, ts)
             group by u.chunk_id) q;
    -- The query's chunks holding a key the question names (hub_seed_ids, hubs left out: a name shared by
    -- thousands of events says little about which passage is about it).
    if cardinality(coalesce(hub_seed_ids, '{}')) > 0 then
        named_chunk_ids := array(
            select distinct ck.chunk_id
              from sag.keys k
              join sag.chunk_keys ck on ck.source_id = any (srcs) and ck.source_id = k.source_id and ck.key_id = k.id
             where k.source_id = any (srcs) and k.id = any (hub_seed_ids) and k.event_count <= max_key_events
               and ck.chunk_id = any (array(select q.chunk_id from unnest(qc_ids, qc_s) as q(chunk_id, s) where q.s > 0)));
    end if;
    -- Pseudo-relevance feedback: the feedback_chunks chunks with the highest s, those naming what the
    -- question names first.  The first hop is the passage about the question's entity, not the one
    -- sharing most of its other words: for "青岚计划的主持人毕业于哪所大学" the page of 青岚计划 (naming
    -- its leader), not a university's page where "many engineers graduated" and "projects were led",
    -- whose keys would fill key-final and lead nowhere.
    select coalesce(array_agg(f.chunk_id), '{}'), coalesce(array_agg(f.s), '{}') into fb_ids, fb_s
      from (select q.chunk_id, q.s from unnest(qc_ids, qc_s) as q(chunk_id, s)
             where q.s > 0
             order by q.chunk_id = any (coalesce(named_chunk_ids, '{}')) desc, q.s desc, q.chunk_id
             limit feedback_chunks) f;
    select coalesce(array_agg(ck.key_id), '{}'), coalesce(array_agg(f.s), '{}') into fb_keys, fb_key_w
      from unnest(fb_ids, fb_s) as f(chunk_id, s)
      join sag.chunk_keys ck on ck.source_id = any (srcs) and ck.chunk_id = f.chunk_id;
    -- k1: the given seeds, plus every key of the feedback chunks with k1 = s of its chunk; a key given
    -- twice keeps its largest weight.  Keys outside the sources are left out, and so are hubs, except
    -- those in hub_seed_ids (the keys the question names): a named key is always a seed.
    select coalesce(array_agg(x.source_id), '{}'), coalesce(array_agg(x.key_id), '{}'), coalesce(array_agg(x.w), '{}'),
           coalesce(array_agg(x.hub), '{}')
      into sd_source, sd_key, sd_w, sd_hub
      from (select k.source_id, s.key_id, max(s.w) as w, bool_or(k.event_count > max_key_events) as hub
              from (select u.key_id, u.w from unnest(seed_key_ids, seed_weights) as u(key_id, w)
                    union all
                    select u.key_id, u.w from unnest(fb_keys, fb_key_w) as u(key_id, w)) s
              join sag.keys k on k.source_id = any (srcs) and k.id = s.key_id
             where s.w > 0
               and (k.event_count <= max_key_events or k.id = any (hub_seed_ids))
             group by k.source_id, s.key_id) x;
    -- Event-query-related (e1): the event_limit events nearest to the query (cosine known), and the events of
    -- the query's BM25 chunks (text_score > 0; cosine computed below when needed).
    bm_events := array(select e.id
                         from unnest(qc_ids, qc_ts) as q(chunk_id, ts)
                         join sag.events e on e.source_id = any (srcs) and e.chunk_id = q.chunk_id
                        where q.ts > 0 and (event_filter is null or e.id = any (event_filter)));
    select coalesce(array_agg(x.event_id order by x.event_id), '{}'), coalesce(array_agg(x.sim order by x.event_id), '{}')
      into e1_ids, e1_sim
      from (select y.event_id, max(y.sim) as sim
              from (select n.event_id,
                           greatest(0, (1 - coalesce(nullif(n.distance, 'NaN'), 1) - similarity_floor) / (1 - similarity_floor)) as sim
                      from unnest(near_ids, near_distances) as n(event_id, distance)
                    union all
                    select b.event_id, null::float8 from unnest(bm_events) as b(event_id)) y
             group by y.event_id) x;
    -- Event-key-query-related, with W_event-key(e) = sum of k1 over the seed keys e contains.  A hub seed
    -- counts only in the events related to the query (e1): its other events would be read for nothing.
    select coalesce(array_agg(x.event_id), '{}'), coalesce(array_agg(x.chunk_id), '{}'), coalesce(array_agg(x.w_ek), '{}')
      into se_ids, se_chunks, se_w
      from (select ek.event_id, e.chunk_id, sum(s.w) as w_ek
              from unnest(sd_source, sd_key, sd_w, sd_hub) as s(source_id, key_id, w, hub)
              join sag.event_keys ek on ek.source_id = any (srcs) and ek.source_id = s.source_id and ek.key_id = s.key_id
              join sag.events e on e.source_id = any (srcs) and e.source_id = ek.source_id and e.id = ek.event_id
             where (event_filter is null or e.id = any (event_filter))
               and (not s.hub or ek.event_id = any (e1_ids))
             group by e.source_id, ek.event_id, e.chunk_id) x;
    -- Event-related = the intersection; W_e2 = W_event-key * e1, where e1 of an event mixes its cosine
    -- with the BM25 of its chunk like s does: (1 - text_weight) * cos + text_weight * text_score.  The cosine
    -- of an e1 event found by BM25 only is computed exactly.
    select coalesce(array_agg(e.id), '{}'),
           coalesce(array_agg(greatest(0, (1 - coalesce(nullif(e.embedding operator(@extschema:vector@.<=>) qh, 'NaN'), 1) - similarity_floor) / (1 - similarity_floor))), '{}')
      into cos_ids, cos_sim
      from sag.events e
     where e.source_id = any (srcs)
       and e.id = any (array(select x.event_id from unnest(e1_ids, e1_sim) as x(event_id, sim)
                              where x.sim is null and x.event_id = any (se_ids)));
    select coalesce(array_agg(r.event_id), '{}'), coalesce(array_agg(r.w), '{}') into ev_ids, ev_w
      from (select se.event_id,
                   se.w_ek * ((1 - etw) * coalesce(e1.sim, c.sim) + etw * coalesce(q.ts, 0)) as w
              from unnest(se_ids, se_chunks, se_w) as se(event_id, chunk_id, w_ek)
              join unnest(e1_ids, e1_sim) as e1(event_id, sim) on e1.event_id = se.event_id
              left join unnest(cos_ids, cos_sim) as c(event_id, sim) on c.event_id = se.event_id
              left join unnest(qc_ids, qc_ts) as q(chunk_id, ts) on q.chunk_id = se.chunk_id) r
     where r.w > 0;
    if cardinality(ev_ids) = 0 and profile <> 'seed' then
        -- Empty intersection: the seed keys' events (the event_limit with the largest W_event-key),
        -- with e1 computed exactly for them.
        select coalesce(array_agg(r.event_id), '{}'), coalesce(array_agg(r.w), '{}') into ev_ids, ev_w
          from (select s.event_id,
                       s.w_ek * ((1 - etw) * greatest(0, (1 - coalesce(nullif(e.embedding operator(@extschema:vector@.<=>) qh, 'NaN'), 1) - similarity_floor) / (1 - similarity_floor))
                                 + etw * coalesce(q.ts, 0)) as w
                  from (select se.event_id, se.chunk_id, se.w_ek
                          from unnest(se_ids, se_chunks, se_w) as se(event_id, chunk_id, w_ek)
                         order by se.w_ek desc, se.event_id
                         limit event_limit) s
                  join sag.events e on e.source_id = any (srcs) and e.id = s.event_id
                  left join unnest(qc_ids, qc_ts) as q(chunk_id, ts) on q.chunk_id = s.chunk_id) r
         where r.w > 0;
    end if;
    if cardinality(ev_ids) = 0 and profile <> 'seed' then
        -- No seed-key event relates to the query at all: event-driven retrieval (§2.1 option 2),
        -- the e1 events with W_event-key = 1.
        select coalesce(array_agg(r.event_id), '{}'), coalesce(array_agg(r.w), '{}') into ev_ids, ev_w
          from (select e1.event_id,
                       (1 - etw) * coalesce(e1.sim,
                                      greatest(0, (1 - coalesce(nullif(e.embedding operator(@extschema:vector@.<=>) qh, 'NaN'), 1) - similarity_floor) / (1 - similarity_floor)))
                       + etw * coalesce(q.ts, 0) as w
                  from unnest(e1_ids, e1_sim) as e1(event_id, sim)
                  join sag.events e on e.source_id = any (srcs) and e.id = e1.event_id
                  left join unnest(qc_ids, qc_ts) as q(chunk_id, ts) on q.chunk_id = e.chunk_id) r
         where r.w > 0;
    end if;

    return query
    select a.key_id, a.weight, 1
      from sag_internal._activate(ev_ids, ev_w, srcs, threshold, top_n, max_key_events, corpus_events, soft_hubs,
                                  seed => profile = 'seed') a
     order by a.weight desc, a.key_id;
end;
$$;
comment on function sag.activate_keys(@extschema:vector@.vector, bigint[], float8[], bigint[], integer, float8, integer, integer,
                                      bigint[], float8[], float8[], float8, integer, bigint[], bigint, bigint[],
                                      float8, boolean, text) is
    'Stage 1 (sag-algorithm §2.2 steps 2-8).  Seeds k1: the given keys (e.g. from sag.match_keys) plus, when the '
    'query''s chunks are given (chunk_ids/chunk_similarities/chunk_text_scores, from sag.query_chunks), every key '
    'of the feedback_chunks chunks with the highest s, with k1 = s (pseudo-relevance feedback).  Seeds -> their '
    'events (SQL join; hubs with more than max_key_events events are not expanded); the query -> its event_limit '
    'nearest events (HNSW) and the events of its BM25 chunks, e1 = (1 - text_weight) * cosine + text_weight * '
    'text_score of the event''s chunk (plain cosine without chunks); intersection; W_event-key(e) = sum of k1 '
    'over the seeds in e; W_e2 = W_event-key * e1; W(k) = sum of W_e2 over the intersected events containing k; '
    'kept if >= threshold * max W, then the top_n (ties by key_id); L1-normalized (weights sum to 1); step = 1. '
    'Empty intersection: the seeds'' events scored exactly; still nothing: the e1 events with W_event-key = 1. '
    'hub_seed_ids: seeds kept although they are hubs (the keys the question names), counted in e1 events only. '
    'event_filter (NULL = none): only those events activate keys.  source_ids NULL = all sources.  Every '
    'cosine is taken above similarity_floor (the embedder''s chance level, sag.similarity_floors): '
    'greatest(0, (cosine - floor) / (1 - floor)); 0 = the plain cosine.  soft_hubs: a hub can be activated '
    '(never expanded), its W times (max_key_events / event_count)^2.  profile ''seed'': sag-algorithm §2.2 as '
    'written (e1 = the cosine of the event_limit nearest events; the given seeds only; W(k) = sum of W_e2, no '
    'key weight, not normalized; no fallback): the query''s chunks, feedback_chunks, hub_seed_ids, '
    'corpus_events and soft_hubs are ignored.';
