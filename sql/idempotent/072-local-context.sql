-- GraphRAG local search context (issue 19, ../shared/seeds/graphrag-query.md "Local Search"), built in SQL
-- from the same knowledge base: keys are the entities, two keys held by one event a relationship (weight =
-- the events they share), chunks the text units, community reports the reports.  Re-applied on every upgrade.
--
-- The budget (max_tokens, sag.estimate_tokens) is split as GraphRAG splits it: community_prop for the reports,
-- text_unit_prop for the sources, the rest for entities then relationships; each table keeps the longest
-- prefix of its ranked rows that fits its share (sag.pack_rows).
--   entities:      the keys the question names (issue 33: the same corrected keys as sag.retrieve: sag.named_keys,
--                  the Han topic keys that are names, and the keys linked to them across languages,
--                  sag.key_aliases), then the caller's include_entities, then the keys the SAG retrieval seeds
--                  stage 1 with (sag.match_keys: of the top_k_entities * oversample nearest keys, GraphRAG's
--                  oversample_scaler, those whose cosine above the sources' calibrated key floor,
--                  sag.similarity_floors, rescaled, reaches min_similarity, sag.retrieve's match_min_similarity:
--                  an English question is not mapped to unrelated Chinese keys by chance cosines);
--                  exclude_entities (and their aliases) never; keys with at least one event; top_k_entities.
--                  None of these: the nearest keys above the floor, as before.
--   relationships: in-network pairs (both ends selected) by weight, then out-network pairs by links (how many
--                  selected entities the outside end co-occurs with), weight; at most top_k_relationships per
--                  selected entity.
--   reports:       the communities (of one level of the latest hierarchy) holding the entities' events, by how
--                  many selected entities they hold, then their rating; content = the report's summary
--                  (GraphRAG's use_community_summary: a full report, with its findings, would take the reports'
--                  whole share of the budget on its own).
--   sources:       the chunks holding the entities, by the best rank of an entity they hold, then how many
--                  selected entities they hold.

drop function if exists sag.local_context(text, @extschema:vector@.vector, text, integer, integer, float8, integer,
                                          integer, float8, float8);

create or replace function sag.local_context(
    query text,
    query_embedding @extschema:vector@.vector default null,
    source text default 'default',
    level integer default null,
    top_k_entities integer default 10,
    oversample float8 default 2.0,
    top_k_relationships integer default 10,
    max_tokens integer default 12000,
    text_unit_prop float8 default 0.5,
    community_prop float8 default 0.15,
    include_entities text[] default null,
    exclude_entities text[] default null,
    min_similarity float8 default 0.45)
returns jsonb
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    sids bigint[];
    run bigint;
    lvl integer;
    budget_reports integer;
    budget_sources integer;
    budget_local integer;
    selected bigint[];
    ent_rows text[]; ent_json jsonb;
    rel_rows text[]; rel_json jsonb;
    rep_rows text[]; rep_json jsonb;
    src_rows text[]; src_json jsonb;
    n integer;
    used_entities integer;
    h_ent constant text := 'id|entity|description|number of relationships';
    h_rel constant text := 'id|source|target|description|weight|links';
    h_rep constant text := 'id|title|content';
    h_src constant text := 'id|text';
    tables text[];
    named bigint[];
    included bigint[];
    excluded bigint[];
    key_floor float8;
    srcs bigint[];  -- the sources (all without one): every table read names them (Citus routes by them)
    m_ids bigint[];
    m_sim float8[];
    h_chunks bigint[];
    h_ranks integer[];
    h_entities integer[];
    h_contents text[];
    h_uris text[];
    h_ordinals integer[];
    nk_ids bigint[];
    nk_first integer[];
    nk_last integer[];
    nk_keys bigint[];
    nk_sources bigint[];
    d_keys bigint[];
    d_texts text[];
    g_keys bigint[];
    g_degrees integer[];
    n_keys bigint[];
    n_names text[];
    n_types text[];
    p_sources bigint[];
    p_srcs bigint[];
    p_tgts bigint[];
    p_weights integer[];
    p_events bigint[];
    l_keys bigint[];
    l_links integer[];
    r_keys bigint[];
    r_names text[];
    r_events bigint[];
    r_texts text[];
begin
    if (top_k_entities >= 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.local_context: top_k_entities must be >= 1, got %s',
                                               top_k_entities);
    end if;
    if (oversample >= 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.local_context: oversample must be >= 1, got %s', oversample);
    end if;
    if (top_k_relationships >= 0) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.local_context: top_k_relationships must be >= 0, got %s',
                                               top_k_relationships);
    end if;
    if (max_tokens >= 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.local_context: max_tokens must be >= 1, got %s', max_tokens);
    end if;
    if (text_unit_prop >= 0 and community_prop >= 0 and text_unit_prop + community_prop <= 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.local_context: text_unit_prop (%s) and community_prop (%s) must be >= 0 and '
                                                      'add up to at most 1', text_unit_prop, community_prop);
    end if;
    query_embedding := sag_internal._psql_query_embedding(query, query_embedding, 'sag.local_context',
        'Pass query_embedding => a vector from your embedder, or use sag-pg search --strategy local.');
    if source is not null then
        sids := sag.source_ids(array[source]);
    end if;
    srcs := coalesce(sids, array(select s.id from sag.sources s order by s.id));
    run := sag.hierarchy_run(source);
    lvl := coalesce(level, (select max(c.level) from sag.clusters c where c.run_id = run));
    budget_reports := floor(max_tokens * community_prop);
    budget_sources := floor(max_tokens * text_unit_prop);
    budget_local := max_tokens - budget_reports - budget_sources;

    -- Entities: named, included, then nearest above the key floor; never excluded.
    -- The named keys in the order the question names them (ties: by source, then key): an order that is the
    -- data's, not the ids' (on Citus a source's ids are its worker's).
    select coalesce(array_agg(n.key_id), '{}'), coalesce(array_agg(n.first_word), '{}'),
           coalesce(array_agg(n.last_word), '{}')
      into nk_ids, nk_first, nk_last
      from sag.named_keys(query, sids) n;
    select coalesce(array_agg(k.id), '{}'), coalesce(array_agg(k.source_id), '{}') into nk_keys, nk_sources
      from sag.keys k where k.source_id = any (srcs) and k.id = any (nk_ids);
    named := array(select u.id
                     from unnest(nk_ids, nk_first, nk_last) as u(id, first_word, last_word)
                     join unnest(nk_keys, nk_sources) as k(id, source_id) on k.id = u.id
                    group by u.id, k.source_id
                    order by min(u.first_word), min(u.last_word), k.source_id, u.id);
    named := named || sag_internal._named_topics(query, sids, null, named);
    named := named || sag_internal._aliases_of(named, srcs);
    included := array(select k.id from unnest(coalesce(include_entities, '{}')) with ordinality as i(name, o)
                        join sag.keys k on k.source_id = any (srcs) and k.normalized = sag_internal._fold_word(i.name)
                       order by i.o, k.source_id, k.id);
    included := included || sag_internal._aliases_of(included, srcs);
    excluded := array(select k.id from unnest(coalesce(exclude_entities, '{}')) as x(name)
                        join sag.keys k on k.source_id = any (srcs) and k.normalized = sag_internal._fold_word(x.name));
    excluded := excluded || sag_internal._aliases_of(excluded, srcs);
    select f.key into key_floor from sag.similarity_floors(sids) f;
    select coalesce(array_agg(n.key_id), '{}'), coalesce(array_agg(n.similarity), '{}') into m_ids, m_sim
      from sag.match_keys(query_embedding, sids, ceil(top_k_entities * oversample)::integer, min_similarity,
                          coalesce(key_floor, 0)) n;
    selected := array(
        select c.key_id
          from (select distinct on (x.key_id) x.key_id, x.tier, x.o
                  from (select m.key_id, 0 as tier, m.o::float8 as o
                          from unnest(named) with ordinality as m(key_id, o)
                        union all
                        select m.key_id, 1, m.o::float8 from unnest(included) with ordinality as m(key_id, o)
                        union all
                        select n.key_id, 2, 1 - n.similarity from unnest(m_ids, m_sim) as n(key_id, similarity)) x
                 order by x.key_id, x.tier, x.o) c
          join sag.keys k on k.source_id = any (srcs) and k.id = c.key_id
         where k.event_count > 0 and c.key_id <> all (excluded)
         order by c.tier, c.o, c.key_id
         limit top_k_entities);
    if cardinality(selected) = 0 then
        -- Nothing named and no key similar enough: the nearest keys above the floor (GraphRAG's plain local
        -- search), rather than an empty context (a DRIFT follow-up query may name nothing).
        select coalesce(array_agg(n.key_id), '{}'), coalesce(array_agg(n.distance), '{}') into m_ids, m_sim
          from sag_internal._nearest_keys(query_embedding, sids, ceil(top_k_entities * oversample)::integer) n;
        selected := array(
            select n.key_id
              from unnest(m_ids, m_sim) as n(key_id, distance)
              join sag.keys k on k.source_id = any (srcs) and k.id = n.key_id
             where k.event_count > 0 and 1 - n.distance > coalesce(key_floor, 0) and n.key_id <> all (excluded)
             order by n.distance, n.key_id
             limit top_k_entities);
    end if;

    -- Each step a statement that reads the per-source tables by source (windows partitioned by the source
    -- and key), or reads none: on Citus each runs on the workers holding the sources, for one or several.
    -- An entity's description: its first two events (by document, then place in it: an order of the data, not
    -- of the ids, which differ between one node and Citus); its degree: the keys sharing one of its first 500
    -- events.
    select coalesce(array_agg(x.key_id), '{}'), coalesce(array_agg(x.description), '{}') into d_keys, d_texts
      from (select ev.key_id, string_agg(sag_internal._cell(coalesce(nullif(ev.title, ''), left(ev.content, 200))), '; '
                                         order by ev.n) as description
              from (select ek.key_id, ev.title, ev.content,
                           row_number() over (partition by ek.source_id, ek.key_id
                                              order by d.uri, ev.ordinal, ev.content, ev.id) as n
                      from sag.event_keys ek
                      join sag.events ev on ev.source_id = any (srcs) and ev.source_id = ek.source_id and ev.id = ek.event_id
                      join sag.documents d on d.source_id = any (srcs) and d.source_id = ev.source_id and d.id = ev.document_id
                     where ek.source_id = any (srcs) and ek.key_id = any (selected)) ev
             where ev.n <= 2
             group by ev.key_id) x;
    select coalesce(array_agg(x.key_id), '{}'), coalesce(array_agg(x.degree), '{}') into g_keys, g_degrees
      from (select m.key_id, count(distinct o.key_id)::integer as degree
              from (select ek.source_id, ek.key_id, ek.event_id,
                           row_number() over (partition by ek.source_id, ek.key_id order by ek.event_id) as n
                      from sag.event_keys ek
                     where ek.source_id = any (srcs) and ek.key_id = any (selected)) m
              join sag.event_keys o on o.source_id = any (srcs) and o.source_id = m.source_id and o.event_id = m.event_id
                                   and o.key_id <> m.key_id
             where m.n <= 500
             group by m.source_id, m.key_id) x;
    select coalesce(array_agg(k.id), '{}'), coalesce(array_agg(k.name), '{}'), coalesce(array_agg(k.type), '{}')
      into n_keys, n_names, n_types
      from sag.keys k where k.source_id = any (srcs) and k.id = any (selected);
    with rows as (
        select e.key_id, e.rank::integer as rank, k.name, k.type, d.description, coalesce(g.degree, 0) as degree
          from unnest(selected) with ordinality as e(key_id, rank)
          join unnest(n_keys, n_names, n_types) as k(id, name, type) on k.id = e.key_id
          left join unnest(d_keys, d_texts) as d(key_id, description) on d.key_id = e.key_id
          left join unnest(g_keys, g_degrees) as g(key_id, degree) on g.key_id = e.key_id
    ),
    lines as (
        -- (the row's rank as its id, as GraphRAG's short ids: the database's ids are not the reader's, and
        -- their digits would count against the token budget)
        select r.*, concat_ws('|', r.rank, sag_internal._cell(r.name), sag_internal._cell(r.type || ': ' || coalesce(r.description, '')),
                              r.degree) as line
          from rows r
    )
    select array_agg(l.line order by l.rank),
           jsonb_agg(jsonb_build_object('id', l.key_id, 'entity', l.name, 'type', l.type,
                                        'description', coalesce(l.description, ''), 'number of relationships', l.degree,
                                        'rank', l.rank) order by l.rank)
      into ent_rows, ent_json
      from lines l;
    n := sag.pack_rows(ent_rows, budget_local - sag_internal._table_overhead('Entities', h_ent));
    ent_rows := ent_rows[1:n];
    ent_json := coalesce((select jsonb_agg(j order by o) from jsonb_array_elements(ent_json) with ordinality t(j, o)
                           where o <= n), '[]'::jsonb);
    used_entities := coalesce(sag.estimate_tokens(sag_internal._table_text('Entities', h_ent, ent_rows)), 0);

    -- Relationships: key co-occurrence around the selected entities.
    select coalesce(array_agg(p.source_id), '{}'), coalesce(array_agg(p.src), '{}'), coalesce(array_agg(p.tgt), '{}'),
           coalesce(array_agg(p.weight), '{}'), coalesce(array_agg(p.event_id), '{}')
      into p_sources, p_srcs, p_tgts, p_weights, p_events
      from (select a.source_id, a.key_id as src, b.key_id as tgt, count(*)::integer as weight,
                   -- the pair's event to describe it: the first by its text (not by id: ids are the node's)
                   (array_agg(e.id order by coalesce(nullif(e.title, ''), left(e.content, 200)), e.content, e.id))[1]
                       as event_id
              from sag.keys sk
              join sag.event_keys a on a.source_id = any (srcs) and a.source_id = sk.source_id and a.key_id = sk.id
              join sag.event_keys b on b.source_id = any (srcs) and b.source_id = a.source_id and b.event_id = a.event_id
                                   and b.key_id <> a.key_id
              join sag.keys kb on kb.source_id = any (srcs) and kb.source_id = b.source_id and kb.id = b.key_id
              join sag.events e on e.source_id = any (srcs) and e.source_id = a.source_id and e.id = a.event_id
             where sk.source_id = any (srcs) and sk.id = any (selected)
               -- an in-network pair once, in the order of the names
               and not (b.key_id = any (selected) and (kb.type, kb.normalized) < (sk.type, sk.normalized))
             group by a.source_id, a.key_id, b.key_id) p;
    -- Each target's links: how many selected entities share an event with it.
    select coalesce(array_agg(x.key_id), '{}'), coalesce(array_agg(x.links), '{}') into l_keys, l_links
      from (select y.key_id, count(distinct x.key_id)::integer as links
              from sag.event_keys y
              join sag.event_keys x on x.source_id = any (srcs) and x.source_id = y.source_id
                                   and x.event_id = y.event_id and x.key_id = any (selected)
             where y.source_id = any (srcs) and y.key_id = any (array(select distinct unnest(p_tgts)))
             group by y.source_id, y.key_id) x;
    select coalesce(array_agg(k.id), '{}'), coalesce(array_agg(k.name), '{}') into r_keys, r_names
      from sag.keys k where k.source_id = any (srcs) and k.id = any (p_srcs || p_tgts);
    select coalesce(array_agg(ev.id), '{}'),
           coalesce(array_agg(sag_internal._cell(coalesce(nullif(ev.title, ''), left(ev.content, 200)))), '{}')
      into r_events, r_texts
      from sag.events ev where ev.source_id = any (srcs) and ev.id = any (p_events);
    with linked as (
        select p.*, p.tgt = any (selected) as in_network, coalesce(l.links, 0) as links,
               ks.name as src_name, kt.name as tgt_name
          from unnest(p_sources, p_srcs, p_tgts, p_weights, p_events) as p(source_id, src, tgt, weight, event_id)
          left join unnest(l_keys, l_links) as l(key_id, links) on l.key_id = p.tgt
          join unnest(r_keys, r_names) as ks(id, name) on ks.id = p.src
          join unnest(r_keys, r_names) as kt(id, name) on kt.id = p.tgt
    ),
    ranked as (
        -- (ties by the names, then the sources: an order of the data, not of the ids)
        select l.*, row_number() over (order by l.in_network desc, l.links desc, l.weight desc, l.src_name, l.tgt_name,
                                                l.source_id, l.src, l.tgt) as n
          from linked l
    ),
    kept as (
        select r.*, ev.text as description
          from ranked r
          left join unnest(r_events, r_texts) as ev(id, text) on ev.id = r.event_id
         where r.n <= top_k_relationships * cardinality(selected)
    )
    select array_agg(concat_ws('|', k.n, sag_internal._cell(k.src_name), sag_internal._cell(k.tgt_name), k.description, k.weight, k.links)
                     order by k.n),
           jsonb_agg(jsonb_build_object('id', k.n, 'source', k.src_name, 'target', k.tgt_name,
                                        'source_id', k.src, 'target_id', k.tgt, 'description', k.description,
                                        'weight', k.weight, 'links', k.links, 'in_network', k.in_network)
                     order by k.n)
      into rel_rows, rel_json
      from kept k;
    n := sag.pack_rows(rel_rows, budget_local - used_entities - sag_internal._table_overhead('Relationships', h_rel));
    rel_rows := rel_rows[1:n];
    rel_json := coalesce((select jsonb_agg(j order by o) from jsonb_array_elements(rel_json) with ordinality t(j, o)
                           where o <= n), '[]'::jsonb);

    -- Reports of the communities holding the entities' events.
    with matched as (
        select ce.cluster_id, count(distinct ek.key_id)::integer as matches
          from sag.keys sk
          join sag.event_keys ek on ek.source_id = any (srcs) and ek.source_id = sk.source_id and ek.key_id = sk.id
          join sag.cluster_events ce on ce.source_id = ek.source_id and ce.event_id = ek.event_id
          join sag.clusters c on c.id = ce.cluster_id and c.run_id = run and c.level = lvl
         where sk.source_id = any (srcs) and sk.id = any (selected)
         group by ce.cluster_id
    ),
    ranked as (
        select m.cluster_id, m.matches, r.title, r.summary as content, r.rating,
               row_number() over (order by m.matches desc, r.rating desc, m.cluster_id) as n
          from matched m join sag.community_reports r on r.cluster_id = m.cluster_id
    )
    select array_agg(concat_ws('|', r.cluster_id, sag_internal._cell(r.title), sag_internal._cell(r.content)) order by r.n),
           jsonb_agg(jsonb_build_object('id', r.cluster_id, 'title', r.title, 'content', r.content,
                                        'matches', r.matches, 'rating', r.rating) order by r.n)
      into rep_rows, rep_json
      from ranked r;
    n := sag.pack_rows(rep_rows, budget_reports - sag_internal._table_overhead('Reports', h_rep));
    rep_rows := rep_rows[1:n];
    rep_json := coalesce((select jsonb_agg(j order by o) from jsonb_array_elements(rep_json) with ordinality t(j, o)
                           where o <= n), '[]'::jsonb);

    -- Sources: the chunks holding the entities (ties: by document and place in it, not by id).
    select coalesce(array_agg(h.chunk_id), '{}'), coalesce(array_agg(h.best_rank), '{}'),
           coalesce(array_agg(h.entities), '{}'), coalesce(array_agg(c.content), '{}'),
           coalesce(array_agg(d.uri), '{}'), coalesce(array_agg(c.ordinal), '{}')
      into h_chunks, h_ranks, h_entities, h_contents, h_uris, h_ordinals
      from (select ck.source_id, ck.chunk_id, min(e.rank)::integer as best_rank, count(*)::integer as entities
              from unnest(selected) with ordinality as e(key_id, rank)
              join sag.keys k on k.source_id = any (srcs) and k.id = e.key_id
              join sag.chunk_keys ck on ck.source_id = any (srcs) and ck.source_id = k.source_id and ck.key_id = k.id
             group by ck.source_id, ck.chunk_id) h
      join sag.chunks c on c.source_id = any (srcs) and c.source_id = h.source_id and c.id = h.chunk_id
      join sag.documents d on d.source_id = any (srcs) and d.source_id = c.source_id and d.id = c.document_id;
    with ranked as (
        select h.*, row_number() over (order by h.best_rank, h.entities desc, h.uri, h.ordinal, h.chunk_id) as n
          from unnest(h_chunks, h_ranks, h_entities, h_contents, h_uris, h_ordinals)
               as h(chunk_id, best_rank, entities, content, uri, ordinal)
    )
    select array_agg(concat_ws('|', r.n, sag_internal._cell(r.content)) order by r.n),
           jsonb_agg(jsonb_build_object('id', r.chunk_id, 'text', r.content, 'entities', r.entities) order by r.n)
      into src_rows, src_json
      from ranked r;
    n := sag.pack_rows(src_rows, budget_sources - sag_internal._table_overhead('Sources', h_src));
    src_rows := src_rows[1:n];
    src_json := coalesce((select jsonb_agg(j order by o) from jsonb_array_elements(src_json) with ordinality t(j, o)
                           where o <= n), '[]'::jsonb);

    tables := array_remove(array[sag_internal._table_text('Reports', h_rep, rep_rows),
                                 sag_internal._table_text('Entities', h_ent, ent_rows),
                                 sag_internal._table_text('Relationships', h_rel, rel_rows),
                                 sag_internal._table_text('Sources', h_src, src_rows)], '');
    return jsonb_build_object(
        'query', query, 'run_id', run, 'level', lvl,
        'reports', rep_json, 'entities', ent_json, 'relationships', rel_json, 'sources', src_json,
        'context_text', array_to_string(tables, E'\n\n'),
        'tokens', jsonb_build_object(
            'reports', coalesce(sag.estimate_tokens(sag_internal._table_text('Reports', h_rep, rep_rows)), 0),
            'entities', used_entities,
            'relationships', coalesce(sag.estimate_tokens(sag_internal._table_text('Relationships', h_rel, rel_rows)), 0),
            'sources', coalesce(sag.estimate_tokens(sag_internal._table_text('Sources', h_src, src_rows)), 0),
            'total', sag.estimate_tokens(array_to_string(tables, E'\n\n'))),
        'budgets', jsonb_build_object('reports', budget_reports, 'local', budget_local, 'sources', budget_sources,
                                      'max_tokens', max_tokens));
end;
$$;
comment on function sag.local_context(text, @extschema:vector@.vector, text, integer, integer, float8, integer, integer, float8, float8,
                                      text[], text[], float8) is
    'GraphRAG local search context as JSON: the tables reports, entities (keys: those the question names, with '
    'their aliases across languages, then include_entities, then sag.match_keys'' keys (cosine above the calibrated '
    'key floor, rescaled, >= min_similarity, as sag.retrieve seeds stage 1); never exclude_entities or their aliases), relationships (key '
    'co-occurrence), sources (chunks), each packed into its share of max_tokens (community_prop, '
    'text_unit_prop, the rest for entities then relationships), and context_text, the -----Table----- text '
    'an LLM is given.  query_embedding NULL: sag.embed_hash(query) (hash-embedder databases only).  level: of '
    'the latest hierarchy (default: its finest); no hierarchy: no reports.  '
    'Example: select jsonb_pretty(sag.local_context(''Who founded Apple?'', source => ''demo''));';
