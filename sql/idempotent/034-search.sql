-- The SAG retrieval as one SQL entry point, for psql and Python alike.  Re-applied on every upgrade.
--
--   sag.retrieve: question -> (sag.query_terms, sag.named_keys, sag.match_keys | caller's seeds) ->
--                 sag.query_chunks -> sag.activate_keys -> sag.expand_keys -> sag.rank_chunks
--                 -> the ranked candidate graph as json (chunks with weight_init and its parts, key-final,
--                    the key-chunk edges, the question's terms and named keys, stage timings).
--   (037-direct-matches.sql: the direct matches and the entity chain's helpers; 036-search-results.sql: the
--   final order, the hit details and psql's sag.search.)
--
-- The Python client calls sag.retrieve once and runs PageRank over the graph it returns (sag-algorithm §2.4
-- step 5 keeps PageRank out of SQL); without PageRank it ranks by weight_init exactly as sag.search does,
-- so the two give the same chunks with the same scores.

drop function if exists sag.search_by_vector(@extschema:vector@.vector, text, integer, text, integer);
drop function if exists sag.keys_named(text[], bigint[], integer);
drop function if exists sag_internal._query_tokens(text);
drop function if exists sag.retrieve(text, @extschema:vector@.vector, bigint[], text[], bigint[], float8[], bigint[], bigint[], integer,
                                    float8, integer, float8, integer, integer, integer, integer, integer, integer,
                                    integer, integer, float8, integer, boolean, float8, boolean, boolean, boolean);
-- Gained profile (issue 34: the seed's formulas as written, profile => 'seed'); match_min_similarity's default
-- became NULL (= the profile's: 0.45, the seed's 0).
drop function if exists sag.retrieve(text, @extschema:vector@.vector, bigint[], text[], bigint[], float8[], bigint[], bigint[], integer,
                                    float8, integer, float8, integer, integer, integer, integer, integer, integer,
                                    integer, integer, float8, integer, boolean, float8, boolean, boolean, boolean,
                                    boolean);
-- Returned jsonb before: json is written out as built, jsonb is built again (keys sorted, numbers made numeric)
-- and then printed back to text, ~1 ms of a search at 10 k events for nothing the caller needs.
do $$
begin
    if (select prorettype = 'jsonb'::regtype from pg_proc
         where oid = to_regprocedure('sag.retrieve(text, @extschema:vector@.vector, bigint[], text[], bigint[], float8[], bigint[], '
                                     'bigint[], integer, float8, integer, float8, integer, integer, integer, integer, '
                                     'integer, integer, integer, integer, float8, integer, boolean, float8, boolean, '
                                     'boolean, boolean, boolean)')) then
        drop function sag.retrieve(text, @extschema:vector@.vector, bigint[], text[], bigint[], float8[], bigint[], bigint[], integer,
                                   float8, integer, float8, integer, integer, integer, integer, integer, integer,
                                   integer, integer, float8, integer, boolean, float8, boolean, boolean, boolean,
                                   boolean);
    end if;
end;
$$;

-- Milliseconds since `since`, for the timings of sag.retrieve.
create or replace function sag_internal._ms_since(since timestamptz)
returns float8
language sql volatile
set search_path = pg_catalog, pg_temp
as $$ select extract(epoch from clock_timestamp() - since)::float8 * 1000 $$;

create or replace function sag.retrieve(
    query text,
    query_embedding @extschema:vector@.vector,
    source_ids bigint[] default null,
    query_tokens text[] default null,
    seed_key_ids bigint[] default null,
    seed_weights float8[] default null,
    event_filter bigint[] default null,
    chunk_filter bigint[] default null,
    match_top_k integer default 30,
    match_min_similarity float8 default null,
    event_limit integer default 50,
    threshold float8 default 0.1,
    key_top_n integer default 20,
    max_key_events integer default null,
    max_step integer default 3,
    min_new_keys integer default 1,
    vector_limit integer default 50,
    text_limit integer default 50,
    text_max_postings integer default 2000,
    key_chunk_limit integer default 100,
    text_weight float8 default null,
    feedback_chunks integer default 1,
    use_names boolean default true,
    named_key_floor float8 default 1.0,
    with_edges boolean default false,
    specificity boolean default true,
    adaptive_keys boolean default true,
    soft_hubs boolean default true,
    profile text default 'default')
returns json
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
set plan_cache_mode = force_generic_plan
as $$
declare
    t0 timestamptz := clock_timestamp();
    t timestamptz;
    timings jsonb := '{}';
    tokens text[];
    named bigint[];
    s_ids bigint[];
    s_w float8[];
    qc_ids bigint[];
    qc_sim float8[];
    qc_ts float8[];
    qc_vv boolean[];
    act_ids bigint[];
    act_w float8[];
    act_s integer[];
    kf_ids bigint[];
    kf_w float8[];
    kf_s integer[];
    chunks json;             -- the candidates as returned (rank_chunks' rows) ...
    c_ids bigint[];          -- ... and as arrays for the steps after the ranking, by weight_init
    c_docs bigint[];
    c_w float8[];
    c_s float8[];
    edges json := '[]';
    corpus_events bigint;
    hub_events integer;
    coverage float8;
    direct bigint[];
    bridge bigint;
    named_chunks bigint[];  -- the chunk of each named key in key-final (sag_internal._named_matches)
    named_chunk bigint;
    pages bigint[];          -- the entity chain: pages about the named keys ...
    chain bigint[];          -- ... and the bridge pages they lead to
    top_w float8;
    key_weight float8;
    floors record;
    unknown bigint;
    srcs bigint[];           -- the sources searched (all when source_ids is NULL): every lookup names them, and
                             -- the stages given them do not look the sources up again
    page_keys bigint[];
    page_documents bigint[];
begin
    if (query_embedding is not null) is not true then
        raise exception using errcode = '22023', message = 'sag.retrieve: query_embedding must not be NULL';
    end if;
    unknown := sag_internal._unknown_source_id(source_ids);
    if unknown is not null then
        raise exception using errcode = 'P0002', message = format('sag.retrieve: no source with id %s', unknown),
                              hint = 'List sources with: select id, name from sag.sources;';
    end if;
    if (named_key_floor >= 0 and named_key_floor <= 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.retrieve: named_key_floor must be in [0, 1], got %s',
                                               named_key_floor);
    end if;
    if (cardinality(coalesce(seed_key_ids, '{}')) = cardinality(coalesce(seed_weights, '{}'))) is not true then
        raise exception using errcode = '22023',
                              message = 'sag.retrieve: seed_key_ids and seed_weights must have the same length';
    end if;
    if (profile in ('default', 'seed')) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.retrieve: profile must be ''default'' or ''seed'', got %s',
                                               coalesce(profile, 'NULL'));
    end if;

    srcs := coalesce(source_ids, array(select x.id from sag.sources x order by x.id));
    t := clock_timestamp();
    select c.events, c.hub_events into corpus_events, hub_events from sag.calibration(source_ids) c;
    select * into floors from sag.similarity_floors(source_ids);
    if profile = 'seed' then
        -- sag-algorithm §2.2-2.4 as written (docs/retrieval.md, "The seed profile"): plain cosines (no chance
        -- level), no hubs, no key specificity, no threshold on the seed keys, no named keys, s(c, Q) = the
        -- cosine, the key term at full weight, no direct matches; the stage functions run their seed formulas.
        -- Limits the caller gives (max_key_events, match_min_similarity, text_weight) still hold.
        select 0::float8 as chunk, 0::float8 as event, 0::float8 as key, 1::float8 as lexical,
               1::float8 as reliability, 1::float8 as redundancy into floors;
        max_key_events := coalesce(max_key_events, 2147483647);
        match_min_similarity := coalesce(match_min_similarity, 0);
        text_weight := coalesce(text_weight, 0);
        specificity := false;
        use_names := false;
        adaptive_keys := false;
        soft_hubs := false;
    end if;
    max_key_events := coalesce(max_key_events, hub_events);
    match_min_similarity := coalesce(match_min_similarity, 0.45);
    if not specificity then
        corpus_events := null;
    end if;
    tokens := coalesce(query_tokens, sag.query_terms(query, source_ids));
    if seed_key_ids is null then
        select coalesce(array_agg(m.key_id order by m.similarity desc, m.key_id), '{}'),
               coalesce(array_agg(m.similarity order by m.similarity desc, m.key_id), '{}')
          into s_ids, s_w
          from sag.match_keys(query_embedding, source_ids, match_top_k, match_min_similarity,
                              similarity_floor => floors.key) m;
        if use_names then
            -- Keys written in the question seed stage 1, hubs included (sag.activate_keys counts a hub seed
            -- in the query's own events only).  k1: 1, as exact caller-named keys; a named hub's is its
            -- weight as a key (specificity and type): "United States" named in a question says less about
            -- where the answer is than "Quentin Vance".
            select array_agg(distinct n.key_id) into named
              from sag.named_keys(query, source_ids, max_key_events => max_key_events) n;
            -- Han topic keys that are names (sag_internal._named_topics), then every key linked to a named
            -- one (sag.key_aliases: "Qinglan Project" names 青岚计划 too).
            named := coalesce(named, '{}')
                     || sag_internal._named_topics(query, source_ids, max_key_events, named);
            named := named || sag_internal._aliases_of(named, srcs);
            if cardinality(named) = 0 then
                named := null;
            end if;
            select s_ids || coalesce(array_agg(k.id order by k.id), '{}'),
                   s_w || coalesce(array_agg(case when k.event_count > max_key_events
                                                  then sag_internal._key_weight(k.type, k.event_count, corpus_events,
                                                                       src.config -> 'key_types')
                                                  else 1.0 end order by k.id), '{}')
              into s_ids, s_w
              from sag.keys k join sag.sources src on src.id = k.source_id
             where k.source_id = any (srcs) and k.id = any (coalesce(named, '{}'));
        end if;
    else
        s_ids := seed_key_ids;
        s_w := seed_weights;
    end if;
    timings := timings || jsonb_build_object('question', sag_internal._ms_since(t));

    t := clock_timestamp();
    select array_agg(q.chunk_id), array_agg(q.similarity), array_agg(q.text_score), array_agg(q.via_vector)
      into qc_ids, qc_sim, qc_ts, qc_vv
      from sag.query_chunks(query_embedding, tokens, source_ids, vector_limit => vector_limit,
                            text_limit => text_limit, text_weight => coalesce(text_weight, 0.5), chunk_filter => chunk_filter,
                            text_max_postings => text_max_postings, similarity_floor => floors.chunk) q;
    timings := timings || jsonb_build_object('query_chunks', sag_internal._ms_since(t));

    -- How much of the question the best BM25 chunks hold on their own (sag.question_coverage): the lexical
    -- evidence's share of s (text_weight), and what is left for the key evidence (key_weight).
    t := clock_timestamp();
    coverage := sag.question_coverage(tokens, (select array_agg(u.id order by u.ts desc, u.id)
                                                 from (select * from unnest(qc_ids, qc_ts) as v(id, ts)
                                                        where v.ts > 0 order by v.ts desc, v.id limit 3) u),
                                      source_ids);
    -- Of that share, a cosine that only repeats the words (the hash embedder: lexical redundancy 1) leaves BM25
    -- all of it; an embedder independent of the words (redundancy 0) takes half: two independent witnesses.
    -- What is independent of the words counts only as far as the embedder is reliable on this corpus
    -- (sag.similarity_floors' redundancy = 1 - (1 - lexical) * reliability): an English model's cosines
    -- between Chinese passages are independent of the words, and mostly noise.
    if text_weight is null then
        text_weight := coverage * (1 + floors.redundancy) / 2;
    end if;
    key_weight := case when adaptive_keys then least(1, 2 * (1 - coverage)) else 1 end;
    timings := timings || jsonb_build_object('coverage', sag_internal._ms_since(t));

    t := clock_timestamp();
    select array_agg(a.key_id), array_agg(a.weight), array_agg(a.step) into act_ids, act_w, act_s
      from sag.activate_keys(query_embedding, s_ids, s_w, srcs, event_limit => event_limit,
                             threshold => threshold, top_n => key_top_n, max_key_events => max_key_events,
                             chunk_ids => coalesce(qc_ids, '{}'), chunk_similarities => coalesce(qc_sim, '{}'),
                             chunk_text_scores => coalesce(qc_ts, '{}'), text_weight => text_weight,
                             feedback_chunks => feedback_chunks, event_filter => event_filter,
                             corpus_events => corpus_events, hub_seed_ids => named,
                             similarity_floor => floors.event, soft_hubs => soft_hubs, profile => profile) a;
    timings := timings || jsonb_build_object('activate_keys', sag_internal._ms_since(t));

    t := clock_timestamp();
    select array_agg(e.key_id), array_agg(e.weight), array_agg(e.step) into kf_ids, kf_w, kf_s
      from sag.expand_keys(query_embedding, act_ids, act_w, act_s, srcs, max_step => max_step,
                           threshold => threshold, top_n => key_top_n, min_new_keys => min_new_keys,
                           max_key_events => max_key_events, event_filter => event_filter,
                           floor_key_ids => named, floor_share => named_key_floor,
                           corpus_events => corpus_events, similarity_floor => floors.event,
                           soft_hubs => soft_hubs, profile => profile) e;
    timings := timings || jsonb_build_object('expand_keys', sag_internal._ms_since(t));

    t := clock_timestamp();
    select coalesce(json_agg(r order by r.weight_init desc, r.chunk_id), '[]'),
           coalesce(array_agg(r.chunk_id order by r.weight_init desc, r.chunk_id), '{}'),
           coalesce(array_agg(r.document_id order by r.weight_init desc, r.chunk_id), '{}'),
           coalesce(array_agg(r.weight_init order by r.weight_init desc, r.chunk_id), '{}'),
           coalesce(array_agg(r.s order by r.weight_init desc, r.chunk_id), '{}')
      into chunks, c_ids, c_docs, c_w, c_s
      from sag.rank_chunks(query_embedding, tokens, coalesce(kf_ids, '{}'), coalesce(kf_w, '{}'),
                           coalesce(kf_s, '{}'), srcs, vector_limit => vector_limit, text_limit => text_limit,
                           key_chunk_limit => key_chunk_limit, text_weight => text_weight,
                           chunk_ids => coalesce(qc_ids, '{}'), chunk_similarities => coalesce(qc_sim, '{}'),
                           chunk_text_scores => coalesce(qc_ts, '{}'), chunk_via_vector => coalesce(qc_vv, '{}'),
                           chunk_filter => chunk_filter, key_weight => key_weight,
                           similarity_floor => floors.chunk, lexical_redundancy => floors.redundancy) r;
    timings := timings || jsonb_build_object('rank_chunks', sag_internal._ms_since(t));

    if with_edges and kf_ids is not null then
        t := clock_timestamp();
        -- In a fixed order: PageRank sums along the edges, and a sum's last bits depend on its order.
        select coalesce(json_agg(json_build_array(ck.chunk_id, ck.key_id, ck.count) order by ck.chunk_id, ck.key_id),
                        '[]') into edges
          from sag.chunk_keys ck
         where ck.source_id = any (srcs)
           and ck.key_id = any (kf_ids)  -- key-final's few chunk_keys rows, then those of candidates
           and ck.chunk_id = any (c_ids);
        timings := timings || jsonb_build_object('edges', sag_internal._ms_since(t));
    end if;

    -- The question's direct matches (sag.spread_documents keeps them near the top): its best chunks by s; the
    -- chunk of each key it names that made key-final (its page first); the best passage's bridges
    -- (sag_internal._bridge_match, then _second_bridge); then, from each named key's chunk, the page about its
    -- strongest unnamed key (_second_bridge without a first): the question names A, A's page names B, and
    -- B's page holds the answer.
    -- The seed profile has none of this (sag-algorithm §2.4: PageRank's order alone).
    direct := '{}';
    if profile <> 'seed' then
        direct := sag_internal._direct_matches(c_ids, c_docs, c_s, floors.redundancy);
        bridge := sag_internal._bridge_match(c_ids, c_docs, c_w, direct[1], kf_ids, kf_w, named, srcs);
        named_chunks := sag_internal._named_matches(c_ids, c_docs, c_w,
                                                    array(select unnest(named) intersect select unnest(kf_ids)), srcs);
        direct := direct || array(select m.id from unnest(named_chunks) with ordinality as m(id, n)
                                   where m.id <> all (direct) order by m.n);
        if bridge is not null and bridge <> all (direct) then  -- (NULL <> all of an empty array is true)
            direct := direct || bridge;
            bridge := sag_internal._second_bridge(c_ids, c_docs, c_w, direct[1], kf_ids, kf_w, named, bridge, srcs);
            if bridge is not null and bridge <> all (direct) then
                direct := direct || bridge;
            end if;
        end if;
        for named_chunk in select m.id from unnest(named_chunks) with ordinality as m(id, n)
                            where m.id is distinct from direct[1] order by m.n loop
            bridge := sag_internal._second_bridge(c_ids, c_docs, c_w, named_chunk, kf_ids, kf_w, named, null, srcs);
            if bridge is not null and bridge <> all (direct) then
                direct := direct || bridge;
            end if;
        end loop;
    end if;

    -- The entity chain before the question's words (issue 33 item 2).  The pages about the keys the question
    -- names (a document titled with the key's name, sag_internal._pages_about; hubs left out), then from each, the page
    -- about its strongest key the question does not name (sag_internal._second_bridge): the first hop and
    -- the bridge it leads to.  They rank first, in that order, ahead of every other candidate (weight_init
    -- raised by 2 and 1 times the strongest weight_init, so the order is (level, weight_init)): a passage
    -- that only shares the question's other words ("许多工程师毕业于该校" for 某计划的主持人毕业于哪所大学,
    -- "many engineers graduated from ..." in English) or only mentions the entities ranked above the bridge's
    -- page before.  Pages only: the corpus says what a document is about by its title; without titles (news)
    -- nothing changes.
    if cardinality(coalesce(named, '{}')) > 0 and cardinality(c_ids) > 0 then
        page_keys := array(select k.id from sag.keys k
                            where k.source_id = any (srcs) and k.id = any (named) and k.event_count <= max_key_events);
        select coalesce(array_agg(p.key_id), '{}'), coalesce(array_agg(p.document_id), '{}')
          into page_keys, page_documents
          from sag_internal._pages_about(page_keys, srcs) p;
        pages := array(select x.chunk_id
                         from (select distinct on (u.doc) u.id as chunk_id, u.w
                                 from unnest(c_ids, c_docs, c_w) as u(id, doc, w)
                                 join unnest(page_keys, page_documents) p(key_id, document_id)
                                   on p.document_id = u.doc
                                order by u.doc, u.w desc, u.id) x
                        order by x.w desc, x.chunk_id);
        chain := '{}';
        foreach named_chunk in array pages loop
            bridge := sag_internal._second_bridge(c_ids, c_docs, c_w, named_chunk, kf_ids, kf_w, named, null, srcs);
            if bridge is not null and bridge <> all (pages) and bridge <> all (chain) then
                chain := chain || bridge;
            end if;
        end loop;
        if cardinality(pages) > 0 then
            top_w := (select max(u.w) from unnest(c_w) as u(w));
            select json_agg(x.r order by (x.r ->> 'weight_init')::float8 desc, (x.r ->> 'chunk_id')::bigint)
              into chunks
              from (select case when (e ->> 'chunk_id')::bigint = any (pages)
                                then e || jsonb_build_object('weight_init', (e ->> 'weight_init')::float8 + 2 * top_w)
                                when (e ->> 'chunk_id')::bigint = any (chain)
                                then e || jsonb_build_object('weight_init', (e ->> 'weight_init')::float8 + top_w)
                                else e end as r
                      from jsonb_array_elements(chunks::jsonb) e) x;
            direct := pages || chain || array(select d.id from unnest(direct) with ordinality as d(id, n)
                                               where d.id <> all (pages) and d.id <> all (chain) order by d.n);
        end if;
    end if;

    return json_build_object(
        'profile', profile,
        'terms', to_json(tokens),
        'named_keys', coalesce(to_json(named), '[]'),
        'keys', coalesce((select json_agg(json_build_object('key_id', k.id, 'weight', k.w, 'step', k.s)
                                          order by k.n)
                            from unnest(kf_ids, kf_w, kf_s) with ordinality as k(id, w, s, n)), '[]'),
        'coverage', coverage,
        'text_weight', text_weight,
        'key_weight', key_weight,
        'similarity_floors', json_build_object('chunk', floors.chunk, 'event', floors.event, 'key', floors.key),
        'lexical_redundancy', floors.lexical,
        'embedder_reliability', floors.reliability,
        'redundancy', floors.redundancy,
        'direct_matches', to_json(direct),
        'chunks', chunks,
        'edges', edges,
        'timings_ms', timings || jsonb_build_object('sql_total', sag_internal._ms_since(t0)));
end;
$$;
comment on function sag.retrieve(text, @extschema:vector@.vector, bigint[], text[], bigint[], float8[], bigint[], bigint[], integer,
                                 float8, integer, float8, integer, integer, integer, integer, integer, integer,
                                 integer, integer, float8, integer, boolean, float8, boolean, boolean, boolean,
                                 boolean, text) is
    'The SAG retrieval, stages 1-3 (sag-algorithm §2.2-2.4), in one call: the question''s BM25 terms '
    '(sag.query_terms, unless query_tokens is given) and named keys (sag.named_keys), seeds (sag.match_keys plus '
    'the named keys with k1 = 1, a named hub its key weight; or seed_key_ids/seed_weights when given), sag.query_chunks, sag.activate_keys, '
    'sag.expand_keys (named keys floored at named_key_floor of the strongest weight), sag.question_coverage '
    '(every cosine taken above the embedder''s chance level of the sources, sag.similarity_floors; soft_hubs: '
    'hubs can be activated, damped, see sag.activate_keys) '
    '(text_weight NULL = coverage * (1 + redundancy) / 2, redundancy = 1 - (1 - lexical redundancy) * the '
    'embedder''s reliability, see sag.calibrate_similarity; key_weight = min(1, 2 (1 - coverage)) with adaptive_keys), sag.rank_chunks.  Returns '
    'json: terms, named_keys, keys (key-final: key_id, weight, step, heaviest first), chunks (chunk_id, '
    'similarity, text_score, s, key_score, weight_init, via_keys, via_vector, via_text, document_id; by '
    'weight_init), coverage, '
    'text_weight, key_weight, similarity_floors, lexical_redundancy, embedder_reliability, redundancy (what s reads, '
    'sag.similarity_floors), direct_matches (the chunks of highest s from '
    'distinct documents, 1 + round(1 - redundancy) of them, then the chunk of each named key in key-final '
    '(of a document titled with its name first, then by weight_init), then the bridge: of the key-final keys of the first '
    'direct match that the question does not name, the strongest with a candidate page about it (a document '
    'titled with its name), that page; else the strongest, its heaviest chunk in another document: '
    'then the second bridge, the page about the next such key (sag_internal._second_bridge), then from each '
    'named key''s chunk the page about its strongest unnamed key-final key: sag.spread_documents'' pinned), edges '
    '([chunk_id, key_id, count] between them, when with_edges: the PageRank graph) and timings_ms.  '
    'event_filter/chunk_filter: the `sql` restriction (NULL = none).  source_ids NULL = all sources.  The other '
    'parameters are those of the stage functions (docs/retrieval.md).  match_min_similarity NULL = the '
    'profile''s (0.45; seed 0).  profile ''seed'': sag-algorithm''s formulas as written, every addition off '
    '(plain cosines, no hubs, no specificity or key-type weight, no named or feedback seeds, e1 = the events'' '
    'cosine, raw (not normalized) key weights, s = the cosine (text_weight NULL = 0), key term at full weight, '
    'no direct matches); docs/retrieval.md lists each deviation of the default.';
