-- DataFlow activation, part 2: the query's entities (seed §1.3 step 1) and multi-dimension matching of events
-- against an entity set (seed §5).  Re-applied on every upgrade.

-- The stored keys a question activates, each once (first origin wins, in this order):
--   caller  the names the caller extracted (the rule extractor on the question, an LLM, --key), matched on the
--           normalized name (as given or folded by sag_internal._fold_word), within the given type when there is one;
--   named   the keys the question names (sag.named_keys);
--   term    string keys whose normalized name is one of the question's terms (sag.query_terms): the
--           question's words that are keys ("战役", "film"), which the capitals rule of named_keys misses;
--   vector  the key_match_top_k keys nearest to the query embedding with similarity >= key_min_similarity
--           (sag.match_keys; 0 = none), the similarity taken above the keys' chance level (sag.similarity_floors,
--           as sag.retrieve does: under E5 every key is at cosine 0.85 or more of any question).
create or replace function sag.dataflow_query_entities(
    query text, query_embedding @extschema:vector@.vector default null, source_ids bigint[] default null,
    entity_names text[] default null, entity_types text[] default null, use_terms boolean default true,
    key_match_top_k integer default 5, key_min_similarity float8 default 0.6, query_tokens text[] default null)
returns table (key_id bigint, type text, name text, origin text)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
declare
    srcs bigint[] := coalesce(source_ids, array(select s.id from sag.sources s order by s.id));
    named bigint[];
    matched bigint[] := '{}';
    terms text[] := coalesce(query_tokens, sag.query_terms(query, source_ids));
begin
    -- The functions first, each in a statement of its own (on Citus a function reading tables is not called
    -- inside a statement over distributed tables).
    named := array(select n.key_id from sag.named_keys(query, source_ids) n);
    if query_embedding is not null and key_match_top_k > 0 then
        matched := array(select m.key_id
                           from sag.match_keys(query_embedding, source_ids, key_match_top_k, key_min_similarity,
                                               similarity_floor => (select f.key from sag.similarity_floors(source_ids) f)) m);
    end if;
    return query
    with found as (
        select k.id, 1 as priority, 'caller' as origin
          from unnest(coalesce(entity_names, '{}'), coalesce(entity_types, array_fill(null::text, array[cardinality(coalesce(entity_names, '{}'))])))
               as c(name, type)
          join sag.keys k on k.source_id = any (srcs) and k.normalized in (c.name, sag_internal._fold_word(c.name))
                         and (nullif(c.type, '') is null or k.type = lower(c.type))
        union all
        select n.key_id, 2, 'named' from unnest(named) n(key_id)
        union all
        select k.id, 3, 'term'
          from sag.keys k
         where use_terms and k.value_string is not null
           and k.normalized = any (terms)
           and k.source_id = any (srcs)
        union all
        select m.key_id, 4, 'vector' from unnest(matched) m(key_id))
    select distinct on (f.id) f.id, k.type, k.name, f.origin
      from found f join sag.keys k on k.source_id = any (srcs) and k.id = f.id
     order by f.id, f.priority;
end
$$;
comment on function sag.dataflow_query_entities(text, @extschema:vector@.vector, bigint[], text[], text[], boolean, integer, float8,
                                                text[]) is
    'The keys a question activates in DataFlow (seed §1.3 step 1): caller-given names (entity_names, optional '
    'entity_types), the keys it names (sag.named_keys), keys equal to one of its terms (query_tokens, NULL = '
    'sag.query_terms; when use_terms) and the key_match_top_k keys nearest to query_embedding with similarity >= key_min_similarity '
    '(sag.match_keys, above the keys'' chance level sag.similarity_floors).  origin says which.  Example: select * from sag.dataflow_query_entities(''Who married '
    'Marie Antoinette?'');';

-- Multi-dimension matching (seed §5.2) of the stored events against an entity set, e.g. the query's:
--   recall: every event holding one of the entities (per type, seed recall_events_by_entities); an entity
--           with more than max_key_events events (a hub, sag.calibration) recalls nothing: it would bring in
--           a large part of the corpus.  The candidate_limit events with most matched types, then the most
--           specific matched keys (Σ sag_internal._dataflow_specificity; their count without corpus_events), are scored;
--   score = ratio_share · match_ratio + (1 - ratio_share) · relevance   (seed: 0.4 / 0.6), relevance and
--           match_ratio of the entity set against the event (sag.dataflow_pair_relevance; names weighted by
--           their specificity when corpus_events is given, key cosines above similarity_floor);
--   the top_k by score, ties by event id.
drop function if exists sag.dataflow_match(bigint[], bigint[], jsonb, integer, integer, integer, float8, float8);
create or replace function sag.dataflow_match(
    entity_keys bigint[], source_ids bigint[] default null, type_weights jsonb default null,
    max_key_events integer default null, candidate_limit integer default 200, top_k integer default 40,
    vector_share float8 default 0.4, ratio_share float8 default 0.4, corpus_events bigint default null,
    similarity_floor float8 default 0)
returns table (event_id bigint, match_ratio float8, relevance float8, score float8, dimensions jsonb)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
declare
    hub integer := coalesce(max_key_events, (select c.hub_events from sag.calibration(source_ids) c limit 1));
    weights jsonb := coalesce(type_weights, sag.dataflow_type_weights(source_ids));
    srcs bigint[] := coalesce(source_ids, array(select s.id from sag.sources s order by s.id));
    cand bigint[];
    m_owner bigint[];
    m_key bigint[];
begin
    if (top_k >= 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.dataflow_match: top_k must be >= 1, got %s', top_k);
    end if;
    if (ratio_share between 0 and 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.dataflow_match: ratio_share must be in [0, 1], got %s',
                                               ratio_share);
    end if;
    select array_agg(x.event_id order by x.types desc, x.keys desc, x.event_id) into cand
      from (select ek.event_id, count(distinct k0.type) as types, sum(sag_internal._dataflow_specificity(k.event_count, corpus_events)) as keys
              from sag.keys k0
              -- the same name under any type (sag_internal._dataflow_entity)
              join sag.keys k on k.source_id = any (srcs) and k.source_id = k0.source_id and k.normalized = k0.normalized
              join sag.event_keys ek on ek.source_id = any (srcs) and ek.source_id = k.source_id and ek.key_id = k.id
              join sag.events e on e.source_id = any (srcs) and e.source_id = ek.source_id and e.id = ek.event_id
             where k0.source_id = any (srcs) and k0.id = any (coalesce(entity_keys, '{}'))

               and k.event_count <= hub
               and (source_ids is null or e.source_id = any (source_ids))
             group by ek.event_id
             order by 2 desc, 3 desc, 1
             limit candidate_limit) x;
    if cand is null then
        return;
    end if;
    -- Owner 0 is the entity set, the candidates are owners by their own ids.
    select array_fill(0::bigint, array[cardinality(entity_keys)]) || array_agg(ek.event_id),
           entity_keys || array_agg(ek.key_id)
      into m_owner, m_key
      from sag.event_keys ek where ek.source_id = any (srcs) and ek.event_id = any (cand);
    return query
    select r.right_id, r.match_ratio, r.relevance,
           ratio_share * r.match_ratio + (1 - ratio_share) * r.relevance as score, r.dimensions
      from sag.dataflow_pair_relevance(array_fill(0::bigint, array[cardinality(cand)]), cand, m_owner, m_key,
                                       weights, vector_share, corpus_events, similarity_floor, srcs) r
     order by 4 desc, r.right_id
     limit top_k;
end;
$$;
comment on function sag.dataflow_match(bigint[], bigint[], jsonb, integer, integer, integer, float8, float8, bigint,
                                       float8) is
    'DataFlow multi-dimension matching (seed §5.2) of events against an entity set: events holding one of the '
    'non-hub entity_keys (max_key_events NULL = sag.calibration''s hub limit; the candidate_limit with most '
    'matched types and keys), score = ratio_share match_ratio + (1 - ratio_share) relevance '
    '(sag.dataflow_pair_relevance with corpus_events, the names'' specificity, and similarity_floor); the '
    'top_k.  Example: select * from sag.dataflow_match(array(select key_id '
    'from sag.dataflow_query_entities(''Who married Marie Antoinette?'')));';
