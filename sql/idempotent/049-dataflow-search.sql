-- DataFlow activation, part 5: chunk recall and completion (seed §1.3 steps 6-7) and the whole search
-- (seed §8.2) as one call.  Re-applied on every upgrade.

-- Chunk recall and completion: a chunk scores as its best event; the top_n chunks are recalled; between two
-- recalled chunks of one document at most max_gap chunks apart, the chunks in between are filled in
-- (seed: "片段1、3存在 → 自动补全片段2"), scored as the weaker of the two; documents come in the order of their
-- best recalled chunk, each document's chunks in reading order (ordinal, i.e. line order).
-- With text_weight > 0 the recalled chunks are instead the top_n of the weighted RRF (sag.dataflow_rrf, k =
-- rrf_k) of the chunks by event score (weight 1 - text_weight) and text_chunk_ids (weight text_weight), a
-- ranked lexical list (sag.dataflow_search passes BM25's), and a chunk's score is its RRF score.
drop function if exists sag.dataflow_chunks(bigint[], float8[], integer, integer, bigint[], float8, integer);
create or replace function sag.dataflow_chunks(event_ids bigint[], event_scores float8[], top_n integer default 10,
                                               max_gap integer default 1, text_chunk_ids bigint[] default null,
                                               text_weight float8 default 0, rrf_k integer default 60,
                                               source_ids bigint[] default null)
returns table (chunk_id bigint, document_id bigint, ordinal integer, start_line integer, end_line integer,
               score float8, completed boolean, reading_order integer)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
declare
    srcs bigint[] := coalesce(source_ids, array(select s.id from sag.sources s order by s.id));
    b_ids bigint[];
    b_scores float8[];
    r_ids bigint[];
    r_scores float8[];
begin
    -- Each chunk's best event, then the ranking, then the recalled chunks and the gaps between them: each a
    -- statement of its own (on Citus a statement reads the distributed tables by source, or none).
    select coalesce(array_agg(b.id order by b.score desc, b.id), '{}'), coalesce(array_agg(b.score order by b.score desc, b.id), '{}')
      into b_ids, b_scores
      from (select e.chunk_id as id, max(u.score) as score
              from unnest(event_ids, event_scores) as u(event_id, score)
              join sag.events e on e.source_id = any (srcs) and e.id = u.event_id
             group by e.chunk_id) b;
    if coalesce(text_weight, 0) <= 0 then
        r_ids := b_ids;
        r_scores := b_scores;
    else
        select coalesce(array_agg(f.id), '{}'), coalesce(array_agg(f.score), '{}') into r_ids, r_scores
          from sag.dataflow_rrf(b_ids, coalesce(text_chunk_ids, '{}'), 1 - text_weight, text_weight, rrf_k) f;
    end if;
    return query
    with ranked as (select r.id, r.score from unnest(r_ids, r_scores) as r(id, score)),
    recalled as (
        select c.source_id, c.id, c.document_id, c.ordinal, r.score
          from ranked r join sag.chunks c on c.source_id = any (srcs) and c.id = r.id
         order by r.score desc, c.source_id, c.id  -- (ties by source, then id: ids follow a source's ingest
                                                   -- on one node and on Citus, across sources they do not)
         limit greatest(top_n, 0)),
    neighbours as (
        select r.source_id, r.document_id, r.ordinal as a, r.score as a_score,
               lead(r.ordinal) over w as b, lead(r.score) over w as b_score
          from recalled r
        window w as (partition by r.document_id order by r.ordinal)),
    filled as (
        select c.source_id, c.id, c.document_id, c.ordinal, least(n.a_score, n.b_score) as score
          from neighbours n
          join sag.chunks c on c.source_id = any (srcs) and c.source_id = n.source_id and c.document_id = n.document_id
                           and c.ordinal > n.a and c.ordinal < n.b
         where n.b - n.a - 1 between 1 and max_gap),
    every as (
        select r.source_id, r.id, r.document_id, r.ordinal, r.score, false as completed from recalled r
        union all
        select f.source_id, f.id, f.document_id, f.ordinal, f.score, true from filled f),
    documents as (
        select e.source_id, e.document_id, max(e.score) as best from every e group by e.source_id, e.document_id)
    select e.id, e.document_id, e.ordinal, c.start_line, c.end_line, e.score, e.completed,
           (row_number() over (order by d.best desc, d.source_id, d.document_id, e.ordinal))::integer
      from every e
      join documents d on d.document_id = e.document_id
      join sag.chunks c on c.source_id = any (srcs) and c.source_id = e.source_id and c.id = e.id
     order by 8;
end
$$;
comment on function sag.dataflow_chunks(bigint[], float8[], integer, integer, bigint[], float8, integer, bigint[]) is
    'DataFlow chunk recall and completion (seed §1.3 steps 6-7): chunk score = its best event''s score; the '
    'top_n chunks, plus the chunks between two of them of the same document at most max_gap apart (completed, '
    'scored as the weaker neighbour); documents by best chunk, chunks in reading order (reading_order).  '
    'text_weight > 0: the top_n of the weighted RRF of the chunks by event score (1 - text_weight) and '
    'text_chunk_ids (text_weight) instead.';

-- The DataFlow search (seed §8.2), one call:
--   1. entities: sag.dataflow_query_entities (caller-given names, named keys, term keys, nearest keys);
--      with specificity every name of the matches below counts by its specificity (IDF over the sources'
--      events, sag.calibration), and every cosine is taken above the sources' chance level
--      (sag.similarity_floors: keys for key-to-key, events for question-to-event, rescaled to [0, 1]);
--   2. structured list: sag.dataflow_match of the entities (multi-dimension matching), list_limit events;
--      vector list: the list_limit events nearest to the query embedding (sag_internal._nearest_events);
--   3. initial events: weighted RRF (sag.dataflow_rrf, k = rrf_k) of the two, the first initial_limit;
--      each activated by its match against the query's entities (ratio_share match_ratio + (1 - ratio_share)
--      relevance; 0 without a shared type);
--   4. propagation: sag.dataflow_propagate from them (depth, breadth, threshold, decay);
--   5. score of every reached event: sag.dataflow_score(activation, similarity to the query, time decay of
--      the event's own time (time_basis 'own', the default: event_time, else its latest time key; an event
--      without one gets the median decay of those with one), preference for focus) with score_weights (the
--      seed's 0.3/0.3/0.2/0.2), whose vector weight, with lexical_discount (off by default), keeps only what
--      the cosine adds beyond the words (sag.dataflow_score_weights);
--   6. chunks: sag.dataflow_chunks of the events (top_n, completion up to max_gap).
-- Returns jsonb: entities, type_weights, score_weights (used), lexical_redundancy, redundancy (the one used:
-- sag.similarity_floors), structured and vector lists,
-- initial (RRF), hops (the activation trail), events (each factor of each score, best first), chunks (reading
-- order, completed flagged), timings_ms.
drop function if exists sag.dataflow_search(text, @extschema:vector@.vector, bigint[], text[], text[], integer, integer, integer, float8,
                                            float8, text[], float8[], float8, float8, integer, integer, integer,
                                            integer, integer, integer, boolean, integer, float8, float8, float8,
                                            float8, timestamptz, float8, text, boolean);
drop function if exists sag.dataflow_search(text, @extschema:vector@.vector, bigint[], text[], text[], integer, integer, integer, float8,
                                            float8, text[], float8[], float8, float8, integer, integer, integer,
                                            integer, integer, integer, boolean, integer, float8, float8, float8,
                                            float8, timestamptz, float8, text, boolean, boolean);  -- + lexical_discount
drop function if exists sag.dataflow_search(text, @extschema:vector@.vector, bigint[], text[], text[], integer, integer, integer, float8,
                                            float8, text[], float8[], float8, float8, integer, integer, integer,
                                            integer, integer, integer, boolean, integer, float8, float8, float8,
                                            float8, timestamptz, float8, text, boolean, boolean, boolean);  -- + type_weights
create or replace function sag.dataflow_search(
    query text,
    query_embedding @extschema:vector@.vector,
    source_ids bigint[] default null,
    entity_names text[] default null,
    entity_types text[] default null,
    top_n integer default 10,
    depth integer default 3,
    breadth integer default 5,
    threshold float8 default 0.5,
    decay float8 default 0.8,
    focus text[] default null,
    score_weights float8[] default '{0.3,0.3,0.2,0.2}',
    sql_weight float8 default 0.5,
    vector_weight float8 default 0.5,
    rrf_k integer default 60,
    list_limit integer default null,
    initial_limit integer default null,
    max_frontier integer default 10,
    candidate_limit integer default 10,
    max_gap integer default 1,
    use_terms boolean default true,
    key_match_top_k integer default 5,
    key_min_similarity float8 default 0.6,
    vector_share float8 default 0.4,
    ratio_share float8 default 0.4,
    decay_per_day float8 default 0.01,
    now_at timestamptz default null,
    text_weight float8 default 0.5,
    time_basis text default 'own',
    text_seeds boolean default false,
    specificity boolean default true,
    lexical_discount boolean default false,
    type_weights jsonb default null)
returns jsonb
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
declare
    t0 timestamptz := clock_timestamp();
    t timestamptz;
    timings jsonb := '{}';
    weights jsonb;
    hub integer;
    q_keys bigint[];
    entities jsonb;
    s_ids bigint[];
    structured jsonb;
    v_ids bigint[];
    vector_list jsonb;
    init_ids bigint[];
    init_act float8[];
    initial jsonb;
    reached jsonb;
    scored jsonb;
    chunks jsonb;
    ev_ids bigint[];
    ev_scores float8[];
    text_ids bigint[];
    tokens text[];
    floors record;
    corpus bigint;
    weights_used float8[];
    -- The sources (all when source_ids is NULL): every table read names them, and a function reading tables is
    -- called in a statement of its own, so that on Citus each statement runs on the workers holding them.
    srcs bigint[] := coalesce(source_ids, array(select s.id from sag.sources s order by s.id));
    e_ids bigint[];
    e_types text[];
    e_names text[];
    e_origins text[];
    m_ids bigint[];
    m_owner bigint[];
    m_key bigint[];
    text_events bigint[];
    r_ids bigint[];
    r_hops integer[];
    r_act float8[];
begin
    if (query_embedding is not null) is not true then
        raise exception using errcode = '22023', message = 'sag.dataflow_search: query_embedding must not be NULL';
    end if;
    if (top_n >= 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.dataflow_search: top_n must be >= 1, got %s', top_n);
    end if;
    if (cardinality(score_weights) = 4) is not true then
        raise exception using errcode = '22023',
                              message = 'sag.dataflow_search: score_weights must hold 4 weights (relevance, vector, time, preference)';
    end if;
    if (max_gap >= 0) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.dataflow_search: max_gap must be >= 0, got %s', max_gap);
    end if;
    if (text_weight >= 0 and text_weight < 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.dataflow_search: text_weight must be in [0, 1), got %s',
                                               text_weight);
    end if;
    if (time_basis in ('event', 'own', 'ingest')) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.dataflow_search: time_basis must be event, own or ingest, got %s',
                                               time_basis);
    end if;
    list_limit := coalesce(list_limit, 4 * top_n);       -- seed: sql_search/vector_search top_k * 2, top_k = 2 top_n
    initial_limit := coalesce(initial_limit, 2 * top_n); -- seed: hybrid_search(top_k = config.top_k * 2)
    now_at := coalesce(now_at, now());
    -- DataFlow's own type weights (the seed's, the sources' config -> dataflow_type_weights), then the call's.
    weights := sag.dataflow_type_weights(source_ids) || coalesce(type_weights, '{}'::jsonb);
    select c.hub_events, c.events into hub, corpus from sag.calibration(source_ids) c limit 1;
    if not specificity then
        corpus := null;  -- every name counts 1: the seed's formulas
    end if;
    select * into floors from sag.similarity_floors(source_ids);
    -- The vector factor without what its cosine only repeats of the words BM25 already brings in (text_weight).
    weights_used := case when lexical_discount then sag.dataflow_score_weights(score_weights, floors.redundancy, text_weight)
                         else score_weights end;
    if focus is null then
        select array_agg(f.name) into focus
          from sag.sources s, jsonb_array_elements_text(case when jsonb_typeof(s.config -> 'focus') = 'array'
                                                              then s.config -> 'focus' else '[]' end) as f(name)
         where source_ids is null or s.id = any (source_ids);
    end if;

    -- 1. the query's entities (and its terms, for the term keys and BM25)
    t := clock_timestamp();
    tokens := sag.query_terms(query, source_ids);
    select coalesce(array_agg(e.key_id), '{}'), coalesce(array_agg(e.type), '{}'), coalesce(array_agg(e.name), '{}'),
           coalesce(array_agg(e.origin), '{}')
      into e_ids, e_types, e_names, e_origins
      from sag.dataflow_query_entities(query, query_embedding, source_ids, entity_names, entity_types, use_terms,
                                       key_match_top_k, key_min_similarity, tokens) e;
    select coalesce(jsonb_agg(jsonb_build_object('key_id', e.key_id, 'type', e.type, 'name', e.name,
                                                 'origin', e.origin, 'hub', k.event_count > hub,
                                                 'weight', sag_internal._dataflow_type_weight(e.type, weights))
                              order by e.key_id), '[]'),
           array_agg(e.key_id order by e.key_id)
      into entities, q_keys
      from unnest(e_ids, e_types, e_names, e_origins) as e(key_id, type, name, origin)
      join sag.keys k on k.source_id = any (srcs) and k.id = e.key_id;
    timings := timings || jsonb_build_object('entities', sag_internal._ms_since(t));

    -- 2. the structured (entity) list and the vector list
    t := clock_timestamp();
    select coalesce(jsonb_agg(jsonb_build_object('event_id', m.event_id, 'match_ratio', m.match_ratio,
                                                 'relevance', m.relevance, 'score', m.score) order by m.n), '[]'),
           array_agg(m.event_id order by m.n)
      into structured, s_ids
      from (select x.*, row_number() over (order by x.score desc, x.event_id) as n
              from sag.dataflow_match(coalesce(q_keys, '{}'), source_ids, weights, hub, top_k => list_limit,
                                      vector_share => vector_share, ratio_share => ratio_share,
                                      corpus_events => corpus, similarity_floor => floors.key) x) m;
    timings := timings || jsonb_build_object('structured', sag_internal._ms_since(t));
    -- The full-text list (BM25 chunks, sag.bm25_chunks): fused into the chunk ranking (step 6) when text_weight
    -- > 0; with text_seeds its chunks' events join the structured list (RRF, equal weights) before step 3.
    t := clock_timestamp();
    if text_weight > 0 or text_seeds then
        select array_agg(b.chunk_id order by b.score desc, b.chunk_id) into text_ids
          from sag.bm25_chunks(tokens, source_ids, list_limit, max_postings => 2000) b;
    end if;
    if text_seeds and text_ids is not null then
        text_events := array(select e.id
                               from unnest(text_ids) with ordinality as t(chunk_id, n)
                               join sag.events e on e.source_id = any (srcs) and e.chunk_id = t.chunk_id
                              order by t.n, e.ordinal, e.id);
        select array_agg(f.id order by f.score desc, f.first_rank nulls last, f.second_rank nulls last, f.id) into s_ids
          from sag.dataflow_rrf(coalesce(s_ids, '{}'), text_events, 0.5, 0.5, rrf_k) f;
        s_ids := s_ids[1:list_limit];
    end if;
    timings := timings || jsonb_build_object('text', sag_internal._ms_since(t));
    t := clock_timestamp();
    select coalesce(jsonb_agg(jsonb_build_object('event_id', v.event_id,
                                                 'similarity', greatest(0, (1 - v.distance - floors.event)
                                                                           / (1 - floors.event)))
                              order by v.distance, v.event_id), '[]'),
           array_agg(v.event_id order by v.distance, v.event_id)
      into vector_list, v_ids
      from sag_internal._nearest_events(query_embedding, source_ids, list_limit) v;
    timings := timings || jsonb_build_object('vector', sag_internal._ms_since(t));

    -- 3. weighted RRF of the two, each initial event activated by its match against the query's entities
    t := clock_timestamp();
    m_ids := array(select f.id
                     from sag.dataflow_rrf(coalesce(s_ids, '{}'), coalesce(v_ids, '{}'), sql_weight, vector_weight, rrf_k) f
                    order by f.score desc, f.first_rank nulls last, f.second_rank nulls last, f.id
                    limit initial_limit);
    select array_fill(0::bigint, array[cardinality(coalesce(q_keys, '{}'))]) || coalesce(array_agg(ek.event_id), '{}'),
           coalesce(q_keys, '{}') || coalesce(array_agg(ek.key_id), '{}')
      into m_owner, m_key
      from sag.event_keys ek where ek.source_id = any (srcs) and ek.event_id = any (m_ids);
    with fused as (
        select f.*, row_number() over (order by f.score desc, f.first_rank nulls last, f.second_rank nulls last, f.id) as n
          from sag.dataflow_rrf(coalesce(s_ids, '{}'), coalesce(v_ids, '{}'), sql_weight, vector_weight, rrf_k) f
         limit initial_limit),
    matched as (
        select r.right_id as event_id, ratio_share * r.match_ratio + (1 - ratio_share) * r.relevance as activation
          from sag.dataflow_pair_relevance(array_fill(0::bigint, array[cardinality(m_ids)]), m_ids, m_owner, m_key,
                                           weights, vector_share, corpus, floors.key, srcs) r)
    select coalesce(jsonb_agg(jsonb_build_object('event_id', f.id, 'rrf', f.score, 'structured_rank', f.first_rank,
                                                 'vector_rank', f.second_rank,
                                                 'activation', coalesce(m.activation, 0)) order by f.n), '[]'),
           array_agg(f.id order by f.n), array_agg(coalesce(m.activation, 0) order by f.n)
      into initial, init_ids, init_act
      from fused f left join matched m on m.event_id = f.id;
    timings := timings || jsonb_build_object('fusion', sag_internal._ms_since(t));

    -- 4. propagation
    t := clock_timestamp();
    select coalesce(jsonb_agg(to_jsonb(p) order by p.hop, p.activation desc, p.event_id), '[]') into reached
      from sag.dataflow_propagate(coalesce(init_ids, '{}'), coalesce(init_act, '{}'), source_ids, weights,
                                  depth, breadth, threshold, decay, max_frontier, candidate_limit, hub,
                                  vector_share, ratio_share, corpus, floors.key) p;
    timings := timings || jsonb_build_object('propagate', sag_internal._ms_since(t));

    -- 5. the four-factor score of every reached event
    t := clock_timestamp();
    select coalesce(array_agg((x ->> 'event_id')::bigint), '{}'), coalesce(array_agg((x ->> 'hop')::integer), '{}'),
           coalesce(array_agg((x ->> 'activation')::float8), '{}')
      into r_ids, r_hops, r_act
      from jsonb_array_elements(reached) x;
    with timed as (
        -- The event's own time (sag_internal._dataflow_event_time: its event_time, else its latest time key)
        -- and the preference (sag.dataflow_preference: a focus name among its topic / tag keys), set-based.
        select r.event_id, r.hop, e.chunk_id, r.activation as relevance,
               coalesce(nullif(greatest(0, (1 - (e.embedding operator(@extschema:vector@.<=>) query_embedding) - floors.event)
                                           / (1 - floors.event)), 'NaN'::float8), 0) as similarity,
               case when time_basis in ('event', 'own') then coalesce(e.event_time, kt.year_time) end as own_time,
               e.created_at,
               case when cardinality(coalesce(focus, '{}')) = 0 then 0.5
                    else least(1.0, 0.5 + case when coalesce(kf.topic, false) then 0.3 else 0 end
                                        + case when coalesce(kf.tag, false) then 0.2 else 0 end)::float8 end as preference
          from unnest(r_ids, r_hops, r_act) as r(event_id, hop, activation)
          join sag.events e on e.source_id = any (srcs) and e.id = r.event_id
          left join (select ek.source_id, ek.event_id,
                            max(make_timestamptz(case when y.y = 0 then 1 else y.y end, 1, 1, 0, 0, 0, 'UTC')) as year_time
                       from sag.event_keys ek
                       join sag.keys k on k.source_id = ek.source_id and k.id = ek.key_id
                      cross join lateral (select greatest(-4713, least(294000, floor(k.value_number)))::integer as y) y
                      where ek.source_id = any (srcs) and k.source_id = any (srcs) and ek.event_id = any (r_ids)
                        and k.type = 'time' and k.value_number is not null
                      group by ek.source_id, ek.event_id) kt on kt.source_id = e.source_id and kt.event_id = e.id
          left join (select ek.source_id, ek.event_id, bool_or(k.type = 'topic') as topic, bool_or(k.type = 'tag') as tag
                       from sag.event_keys ek
                       join sag.keys k on k.source_id = ek.source_id and k.id = ek.key_id
                      where ek.source_id = any (srcs) and k.source_id = any (srcs) and ek.event_id = any (r_ids)
                        and k.type in ('topic', 'tag')
                        and k.normalized = any (array(select sag_internal._fold_word(f) from unnest(focus) f))
                      group by ek.source_id, ek.event_id) kf on kf.source_id = e.source_id and kf.event_id = e.id),
    factors as (
        -- 'event': the event's own time, else its ingest time.  'own': an event without a time of its own gets
        -- the median decay of the scored events that have one (neither favoured nor penalised for having no
        -- date), 1 when none has.  'ingest': the ingest time (every fresh event 1).
        select t.event_id, t.hop, t.chunk_id, t.relevance, t.similarity,
               case when t.own_time is not null or time_basis = 'event'
                    then sag.dataflow_time_decay(coalesce(t.own_time, t.created_at), now_at, decay_per_day)
                    when time_basis = 'own'
                    then coalesce((select percentile_cont(0.5) within group (
                                              order by sag.dataflow_time_decay(o.own_time, now_at, decay_per_day))
                                     from timed o where o.own_time is not null), 1.0)
                    else sag.dataflow_time_decay(t.created_at, now_at, decay_per_day) end as time_decay,
               t.preference
          from timed t),
    final as (
        select f.*, sag.dataflow_score(f.relevance, f.similarity, f.time_decay, f.preference, weights_used) as score
          from factors f)
    select coalesce(jsonb_agg(to_jsonb(f) order by f.score desc, f.event_id), '[]'),
           array_agg(f.event_id order by f.score desc, f.event_id), array_agg(f.score order by f.score desc, f.event_id)
      into scored, ev_ids, ev_scores
      from final f;
    timings := timings || jsonb_build_object('score', sag_internal._ms_since(t));

    -- 6. chunks (fused with BM25's when text_weight > 0)
    t := clock_timestamp();
    select coalesce(jsonb_agg(to_jsonb(c) order by c.reading_order), '[]') into chunks
      from sag.dataflow_chunks(coalesce(ev_ids, '{}'), coalesce(ev_scores, '{}'), top_n, max_gap,
                               text_ids, text_weight, rrf_k, srcs) c;
    timings := timings || jsonb_build_object('chunks', sag_internal._ms_since(t));

    return jsonb_build_object(
        'entities', entities, 'type_weights', weights, 'focus', coalesce(to_jsonb(focus), '[]'),
        'score_weights', to_jsonb(weights_used), 'lexical_redundancy', floors.lexical, 'redundancy', floors.redundancy,
        'structured', structured, 'vector', vector_list, 'initial', initial,
        'hops', coalesce((select jsonb_agg(jsonb_build_object('hop', h.hop, 'events', h.events) order by h.hop)
                            from (select (x ->> 'hop')::integer as hop, jsonb_agg(x) as events
                                    from jsonb_array_elements(reached) x group by 1) h), '[]'),
        'events', scored, 'text', coalesce(to_jsonb(text_ids), '[]'), 'chunks', chunks,
        'timings_ms', timings || jsonb_build_object('sql_total', sag_internal._ms_since(t0)));
end;
$$;
comment on function sag.dataflow_search(text, @extschema:vector@.vector, bigint[], text[], text[], integer, integer, integer, float8,
                                        float8, text[], float8[], float8, float8, integer, integer, integer, integer,
                                        integer, integer, boolean, integer, float8, float8, float8, float8,
                                        timestamptz, float8, text, boolean, boolean, boolean, jsonb) is
    'The DataFlow search (seed §8.2) in one call: the query''s entities (sag.dataflow_query_entities; '
    'entity_names/entity_types from the caller), the structured list (sag.dataflow_match) and the vector list '
    '(nearest events), weighted RRF (sag.dataflow_rrf: sql_weight, vector_weight, rrf_k), propagation '
    '(sag.dataflow_propagate: depth, breadth, threshold, decay), the four-factor score (sag.dataflow_score with '
    'score_weights; time decay of the event''s own time (time_basis: own = event_time, else its latest time '
    'key, an event without one the median decay of those with one; event = own time else created_at; '
    'ingest = created_at); preference for focus, NULL = the sources'' '
    'config -> focus) and chunk recall with completion (sag.dataflow_chunks: top_n, max_gap).  Returns jsonb: '
    'entities, type_weights, focus, structured, vector, initial, hops (the activation trail), events (each '
    'factor), chunks (reading order), timings_ms.  specificity: every name counts by ln(1 + N / its events) / '
    'ln(1 + N) in the matches (false: the seed''s unweighted formulas); cosines above sag.similarity_floors.  '
    'lexical_discount (default false: the seed''s weights): the vector weight scaled by 1 - the embedder''s lexical '
    'redundancy when BM25 is fused (sag.dataflow_score_weights; score_weights in the output are the ones used).  '
    'type_weights: entity-type weights over sag.dataflow_type_weights(source_ids) (the seed''s, the sources'' '
    'config -> dataflow_type_weights; never SAG''s key_types).  '
    'source_ids NULL = all sources.  Example: select '
    'sag.dataflow_search(''Who married Marie Antoinette?'', sag.embed_hash(''Who married Marie Antoinette?'', 512));';
