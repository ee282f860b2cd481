-- DataFlow activation (../shared/seeds/dataflow-activation.md), part 1: typed entity weights and the relevance
-- of two events.  Re-applied on every upgrade.  DataFlow is the second retrieval strategy: it reads the same
-- tables as SAG (sag.events are the seed's SourceEvent, sag.keys its Entity, sag.event_keys its event_entity,
-- sag.chunks its ArticleChunk) and adds no table.  docs/dataflow.md gives the formulas.
--
--   045 weights and relevance   046 query entities and multi-dimension matching   047 propagation (BFS)
--   048 the four-factor score and weighted RRF   049 chunk recall and completion, sag.dataflow_search

-- The seed's ENTITY_TYPE_WEIGHTS (§4.2): topic 1.5, action 1.2, person 1.1, location 1.0, tag 1.0, time 0.9;
-- any other type (organization, the LLM extractor's own types) 1.0 as the seed's entity_weights.get(type, 1.0).
-- A source's config -> dataflow_type_weights (`sag-pg source --dataflow-type-weight`) overrides them; several
-- sources with different weights for a type: their mean.  DataFlow's weights are its own setting: a source's
-- config -> key_types (`sag-pg source --key-type`, topic 0.8, action 0.5, time and tag 0.6 for every source
-- ingest creates) are SAG's key weights (sag_internal._key_weight) and do not reach DataFlow (issue 34.2: read as
-- an override they changed 73 % of the event-pair relevances and cost MuSiQue R@5).
create or replace function sag.dataflow_type_weights(source_ids bigint[] default null)
returns jsonb
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return (
    select '{"time": 0.9, "location": 1.0, "person": 1.1, "topic": 1.5, "action": 1.2, "tag": 1.0}'::jsonb
        || coalesce((select jsonb_object_agg(t.type, t.weight)
                       from (select e.key as type, avg((e.value #>> '{}')::float8) as weight
                               from sag.sources s
                              cross join lateral jsonb_each(case when jsonb_typeof(s.config -> 'dataflow_type_weights')
                                                                      = 'object'
                                                                 then s.config -> 'dataflow_type_weights'
                                                                 else '{}'::jsonb end) e
                              where (source_ids is null or s.id = any (source_ids))
                                and jsonb_typeof(e.value) = 'number'
                              group by e.key) t), '{}'::jsonb));
end
$$;
comment on function sag.dataflow_type_weights(bigint[]) is
    'DataFlow''s entity-type weights (seed §4.2 ENTITY_TYPE_WEIGHTS) for the given sources (NULL = all): time '
    '0.9, location 1.0, person 1.1, topic 1.5, action 1.2, tag 1.0, overridden by the sources'' config -> '
    'dataflow_type_weights (mean over sources); a type not listed weighs 1.0.  SAG''s key weights (config -> '
    'key_types) are a separate setting and are not read here.  Example: select sag.dataflow_type_weights();';

-- The weight of one type under such a map (1.0 when the map does not name it).
create or replace function sag_internal._dataflow_type_weight(key_type text, type_weights jsonb)
returns float8
language sql immutable parallel safe
set search_path = pg_catalog, pg_temp
as $$ select coalesce((type_weights ->> key_type)::float8, 1.0) $$;

-- The type a name counts under in DataFlow, and how many events hold it: the type of its key with most events
-- other than topic, topic only when it has no other key; the events of all its keys (whatever their type).
-- The rule extractor makes a document's title a topic key of every event of the document ("subject"), while
-- sentences of other documents give the same name as a person or location key; the seed's LLM types an entity
-- once.  Without this, "Ada Lovelace" the subject and "Ada Lovelace" the person would be two entities and the
-- bridge between the two documents would not exist.
drop function if exists sag_internal._dataflow_entity_type(bigint, text, text);
create or replace function sag_internal._dataflow_entity(source_id bigint, normalized text, key_type text)
returns table (type text, events bigint)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return query
    select coalesce((array_agg(k.type order by k.event_count desc, k.id) filter (where k.type <> 'topic'))[1],
                    key_type),
           coalesce(sum(k.event_count), 0)::bigint
      from sag.keys k
     where k.source_id = _dataflow_entity.source_id and k.normalized = _dataflow_entity.normalized;
end
$$;

-- How specific a name is (the IDF of sag_internal._key_weight): ln(1 + N / events of the name) / ln(1 + N), N = the
-- events of the searched sources (sag.calibration): 1 for a name of one event, near 0 for one in every event.
-- N NULL: 1 for every name (the seed's unweighted formulas).
create or replace function sag_internal._dataflow_specificity(events bigint, corpus_events bigint)
returns float8
language sql immutable parallel safe
set search_path = pg_catalog, pg_temp
as $$
    select case when corpus_events is null or corpus_events < 1 then 1.0::float8
                else ln(1 + corpus_events::float8 / greatest(events, 1)) / ln(1 + corpus_events::float8) end
$$;

-- Relevance of many (left, right) pairs of key sets at once (seed §4.2 calculate_relevance and
-- calculate_entity_similarity).  An "owner" is an event id or any other label (the query's entities are owner
-- 0 in sag.dataflow_search); member_owner/member_key list each owner's keys.  Names are compared by
-- (type, normalized): one row per distinct name, so the same name stored in two sources counts once.
-- Every name n counts with its specificity s(n) (sag_internal._dataflow_specificity, corpus_events; all 1 when it is
-- NULL, and then every formula below is the seed's):
--   per type t that both sides have:
--     jaccard_t = Σ s over A_t ∩ B_t / Σ s over A_t ∪ B_t                   (seed: |A_t ∩ B_t| / |A_t ∪ B_t|)
--     vector_t  = Σ_{a in A_t} s(a) · max over b in B_t of sim(a, b) / Σ_{a in A_t} s(a), sim = 1 for the same
--                 name, else the cosine of the key embeddings above similarity_floor, rescaled:
--                 greatest(0, (cos - floor) / (1 - floor)) (0 without embeddings)
--     sim_t     = (1 - vector_share) jaccard_t + vector_share vector_t          (seed: 0.6 / 0.4)
--   m_t         = max s over A_t: how specific the left side's names of the type are
--   relevance   = Σ_t w_t m_t sim_t / Σ_t w_t m_t over those types (0 when they share no type or the sum is 0)
--   match_ratio = Σ m_t over the types of A in which B holds one of A's names / Σ m_t over the types of A
--                 (seed §5.2 match_ratio: a share of A's types)
-- Without the specificities a question's generic words ("film", "life", a year) count as much as the rare name
-- that says where the answer is: one shared "film" matches a type as fully as the name.
-- Asymmetric like the seed's: the vector term averages over the left side's names.  Every distinct pair gets
-- a row.
drop function if exists sag.dataflow_pair_relevance(bigint[], bigint[], bigint[], bigint[], jsonb, float8);
drop function if exists sag.dataflow_pair_relevance(bigint[], bigint[], bigint[], bigint[], jsonb, float8, bigint, float8);
create or replace function sag.dataflow_pair_relevance(
    pair_left bigint[], pair_right bigint[], member_owner bigint[], member_key bigint[],
    type_weights jsonb default null, vector_share float8 default 0.4, corpus_events bigint default null,
    similarity_floor float8 default 0, source_ids bigint[] default null)
returns table (left_id bigint, right_id bigint, relevance float8, match_ratio float8, dimensions jsonb)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
declare
    srcs bigint[] := coalesce(source_ids, array(select s.id from sag.sources s order by s.id));
begin
    return query
    with typed as (
        -- A name is one entity whatever type a key of it was given (as sag_internal._dataflow_entity: the type
        -- of its keys with most events other than topic, and the events of all of them).
        select u.owner, coalesce(n.type, k.type) as type, k.normalized, k.embedding, k.id,
               sag_internal._dataflow_specificity(n.events, corpus_events) as spec
          from unnest(member_owner, member_key) as u(owner, key_id)
          join sag.keys k on k.source_id = any (srcs) and k.id = u.key_id
         cross join lateral (
               select (array_agg(x.type order by x.event_count desc, x.id) filter (where x.type <> 'topic'))[1] as type,
                      coalesce(sum(x.event_count), 0)::bigint as events
                 from sag.keys x
                where x.source_id = any (srcs) and x.source_id = k.source_id and x.normalized = k.normalized) n),
    members as materialized (
        select distinct on (t.owner, t.type, t.normalized) t.owner, t.type, t.normalized, t.embedding,
               max(t.spec) over (partition by t.owner, t.type, t.normalized) as spec
          from typed t
         order by t.owner, t.type, t.normalized, t.id),
    owner_types as (
        select m.owner, m.type, sum(m.spec) as mass, max(m.spec) as top from members m group by m.owner, m.type),
    pairs as (
        select distinct p.l, p.r from unnest(pair_left, pair_right) as p(l, r)),
    dims as (
        select p.l, p.r, a.type, a.mass as mass_left, b.mass as mass_right, a.top,
               sag_internal._dataflow_type_weight(a.type, type_weights) as w
          from pairs p
          join owner_types a on a.owner = p.l
          join owner_types b on b.owner = p.r and b.type = a.type),
    best as (
        -- every left name against the right names of its type: shared? and its best similarity
        select d.l, d.r, d.type, a.normalized, a.spec,
               bool_or(a.normalized = b.normalized) as shared,
               max(case when a.normalized = b.normalized then 1.0::float8
                        when a.embedding is null or b.embedding is null then 0.0::float8
                        else coalesce(nullif(greatest(0, (1 - (a.embedding operator(@extschema:vector@.<=>) b.embedding) - similarity_floor)
                                                         / (1 - similarity_floor)), 'NaN'::float8), 0)
                   end) as sim
          from dims d
          join members a on a.owner = d.l and a.type = d.type
          join members b on b.owner = d.r and b.type = d.type
         group by d.l, d.r, d.type, a.normalized, a.spec),
    per_type as (
        select d.l, d.r, d.type, d.w, d.top,
               coalesce(x.inter / nullif(d.mass_left + d.mass_right - x.inter, 0), 0) as jaccard,
               x.vector_sim, x.inter
          from dims d
          join (select b.l, b.r, b.type, coalesce(sum(b.spec) filter (where b.shared), 0) as inter,
                       coalesce(sum(b.spec * b.sim) / nullif(sum(b.spec), 0), 0) as vector_sim
                  from best b group by b.l, b.r, b.type) x on (x.l, x.r, x.type) = (d.l, d.r, d.type))
    select p.l, p.r,
           coalesce(sum(t.w * t.top * ((1 - vector_share) * t.jaccard + vector_share * t.vector_sim))
                    / nullif(sum(t.w * t.top) filter (where t.w * t.top > 0), 0), 0),
           coalesce(sum(t.top) filter (where t.inter > 0)
                    / nullif((select sum(o.top) from owner_types o where o.owner = p.l), 0), 0),
           coalesce(jsonb_object_agg(t.type, jsonb_build_object(
                        'weight', t.w, 'specificity', t.top, 'jaccard', t.jaccard, 'vector', t.vector_sim,
                        'similarity', (1 - vector_share) * t.jaccard + vector_share * t.vector_sim))
                    filter (where t.type is not null), '{}'::jsonb)
      from pairs p
      left join per_type t on (t.l, t.r) = (p.l, p.r)
     group by p.l, p.r;
end
$$;
comment on function sag.dataflow_pair_relevance(bigint[], bigint[], bigint[], bigint[], jsonb, float8, bigint,
                                                float8, bigint[]) is
    'DataFlow relevance (seed §4.2) of each (pair_left[i], pair_right[i]) pair of key sets, the owners'' keys '
    'given as member_owner[j] has member_key[j]: per type both have, (1 - vector_share) Jaccard of the names + '
    'vector_share mean best key-embedding similarity (cosine above similarity_floor, rescaled); relevance = '
    'Σ w_t m_t sim_t / Σ w_t m_t with the type_weights (sag.dataflow_type_weights); match_ratio = share of the '
    'left side''s types (weighted by m_t) in which the right side holds one of its names.  Every name counts '
    'with its specificity ln(1 + N / its events) / ln(1 + N), N = corpus_events (NULL: 1, the seed''s '
    'formulas); m_t = the most specific left name of type t.  dimensions = each type''s weight, specificity, '
    'jaccard, vector, similarity.  source_ids (NULL = all): the sources of the keys.';

-- Two key sets (e.g. two events' keys): the pair function's relevance for one pair.
create or replace function sag.dataflow_relevance(
    left_keys bigint[], right_keys bigint[], type_weights jsonb default null, vector_share float8 default 0.4)
returns float8
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return (
    select r.relevance
      from sag.dataflow_pair_relevance(
               array[1::bigint], array[2::bigint],
               array_fill(1::bigint, array[cardinality(left_keys)]) || array_fill(2::bigint, array[cardinality(right_keys)]),
               left_keys || right_keys, coalesce(type_weights, sag.dataflow_type_weights()), vector_share) r);
end
$$;
comment on function sag.dataflow_relevance(bigint[], bigint[], jsonb, float8) is
    'DataFlow relevance (seed §4.2) of two key sets, e.g. two events'' keys (sag.dataflow_pair_relevance '
    'for one pair); type_weights NULL = sag.dataflow_type_weights() of all sources.  Example: select '
    'sag.dataflow_relevance(array(select key_id from sag.event_keys where event_id = 1), '
    'array(select key_id from sag.event_keys where event_id = 2));';
