-- DataFlow activation (../shared/seeds/dataflow-activation.md), part 1: typed entity weights and the relevance
-- of two events.  Re-applied on every upgrade.  DataFlow is the second retrieval strategy: it reads the same
-- tables as SAG (sag.events are the seed's SourceEvent, sag.keys its Entity, sag.event_keys its event_entity,
-- sag.chunks its ArticleChunk) and adds no table.  docs/retrieval.md ("DataFlow") gives the formulas.
--
--   045 weights and relevance   046 query entities and multi-dimension matching   047 propagation (BFS)
--   048 the four-factor score and weighted RRF   049 chunk recall and completion, sag.dataflow_search

-- The seed's ENTITY_TYPE_WEIGHTS (§4.2): topic 1.5, action 1.2, person 1.1, location 1.0, tag 1.0, time 0.9;
-- any other type (organization, the LLM extractor's own types) 1.0 as the seed's entity_weights.get(type, 1.0).
-- A source's config -> key_types (`sag-pg source --key-type`) overrides them; several sources with different
-- weights for a type: their mean.
create or replace function sag.dataflow_type_weights(source_ids bigint[] default null)
returns jsonb
language sql stable
set search_path = pg_catalog, sag, public, pg_temp
as $$
    select '{"time": 0.9, "location": 1.0, "person": 1.1, "topic": 1.5, "action": 1.2, "tag": 1.0}'::jsonb
        || coalesce((select jsonb_object_agg(t.type, t.weight)
                       from (select e.key as type, avg((e.value #>> '{}')::float8) as weight
                               from sag.sources s
                              cross join lateral jsonb_each(coalesce(s.config -> 'key_types', '{}')) e
                              where (source_ids is null or s.id = any (source_ids))
                                and jsonb_typeof(e.value) = 'number'
                              group by e.key) t), '{}'::jsonb)
$$;
comment on function sag.dataflow_type_weights(bigint[]) is
    'DataFlow''s entity-type weights (seed §4.2) for the given sources (NULL = all): time 0.9, location 1.0, '
    'person 1.1, topic 1.5, action 1.2, tag 1.0, overridden by the sources'' config -> key_types (mean over '
    'sources); a type not listed weighs 1.0.  Example: select sag.dataflow_type_weights();';

-- The weight of one type under such a map (1.0 when the map does not name it).
create or replace function sag_internal._dataflow_type_weight(key_type text, type_weights jsonb)
returns float8
language sql immutable parallel safe
set search_path = pg_catalog, pg_temp
as $$ select coalesce((type_weights ->> key_type)::float8, 1.0) $$;

-- The type a name counts under in DataFlow: the type of its key with most events other than topic, topic only
-- when it has no other key.  The rule extractor makes a document's title a topic key of every event of the
-- document ("subject"), while sentences of other documents give the same name as a person or location key; the
-- seed's LLM types an entity once.  Without this, "Ada Lovelace" the subject and "Ada Lovelace" the person
-- would be two entities and the bridge between the two documents would not exist.
create or replace function sag_internal._dataflow_entity_type(source_id bigint, normalized text, key_type text)
returns text
language sql stable
set search_path = pg_catalog, sag, public, pg_temp
as $$
    select coalesce((select k.type from sag.keys k
                      where k.source_id = _dataflow_entity_type.source_id
                        and k.normalized = _dataflow_entity_type.normalized and k.type <> 'topic'
                      order by k.event_count desc, k.id limit 1), key_type)
$$;

-- Relevance of many (left, right) pairs of key sets at once (seed §4.2 calculate_relevance and
-- calculate_entity_similarity).  An "owner" is an event id or any other label (the query's entities are owner
-- 0 in sag.dataflow_search); member_owner/member_key list each owner's keys.  Names are compared by
-- (type, normalized): one row per distinct name, so the same name stored in two sources counts once.
--   per type t that both sides have:
--     jaccard_t = |A_t ∩ B_t| / |A_t ∪ B_t|
--     vector_t  = mean over a in A_t of max over b in B_t of sim(a, b), sim = 1 for the same name, else
--                 greatest(0, 1 - cosine distance) of the key embeddings (0 without embeddings)
--     sim_t     = (1 - vector_share) jaccard_t + vector_share vector_t          (seed: 0.6 / 0.4)
--   relevance   = Σ_t w_t sim_t / Σ_t w_t over those types (0 when they share no type or Σ w_t = 0)
--   match_ratio = types of A in which B holds one of A's names / types of A   (seed §5.2 match_ratio)
-- Asymmetric like the seed's: the vector term averages over the left side's names.  Every distinct pair gets
-- a row.
create or replace function sag.dataflow_pair_relevance(
    pair_left bigint[], pair_right bigint[], member_owner bigint[], member_key bigint[],
    type_weights jsonb default null, vector_share float8 default 0.4)
returns table (left_id bigint, right_id bigint, relevance float8, match_ratio float8, dimensions jsonb)
language sql stable
set search_path = pg_catalog, sag, public, pg_temp
as $$
    with typed as (
        -- A name is one entity whatever type a key of it was given: its type is the one of its non-topic keys
        -- with most events, topic only when it has no other (see sag_internal._dataflow_entity_type).
        select u.owner, sag_internal._dataflow_entity_type(k.source_id, k.normalized, k.type) as type, k.normalized,
               k.embedding, k.id
          from unnest(member_owner, member_key) as u(owner, key_id)
          join sag.keys k on k.id = u.key_id),
    members as materialized (
        select distinct on (t.owner, t.type, t.normalized) t.owner, t.type, t.normalized, t.embedding
          from typed t
         order by t.owner, t.type, t.normalized, t.id),
    owner_types as (
        select m.owner, m.type, count(*) as n from members m group by m.owner, m.type),
    pairs as (
        select distinct p.l, p.r from unnest(pair_left, pair_right) as p(l, r)),
    dims as (
        select p.l, p.r, a.type, a.n as n_left, b.n as n_right,
               sag_internal._dataflow_type_weight(a.type, type_weights) as w
          from pairs p
          join owner_types a on a.owner = p.l
          join owner_types b on b.owner = p.r and b.type = a.type),
    best as (
        -- every left name against the right names of its type: shared? and its best similarity
        select d.l, d.r, d.type, a.normalized,
               bool_or(a.normalized = b.normalized) as shared,
               max(case when a.normalized = b.normalized then 1.0::float8
                        when a.embedding is null or b.embedding is null then 0.0::float8
                        else coalesce(nullif(greatest(0, 1 - (a.embedding <=> b.embedding)), 'NaN'::float8), 0)
                   end) as sim
          from dims d
          join members a on a.owner = d.l and a.type = d.type
          join members b on b.owner = d.r and b.type = d.type
         group by d.l, d.r, d.type, a.normalized),
    per_type as (
        select d.l, d.r, d.type, d.w,
               x.inter::float8 / (d.n_left + d.n_right - x.inter) as jaccard,
               x.vector_sim, x.inter
          from dims d
          join (select b.l, b.r, b.type, count(*) filter (where b.shared) as inter, avg(b.sim) as vector_sim
                  from best b group by b.l, b.r, b.type) x on (x.l, x.r, x.type) = (d.l, d.r, d.type))
    select p.l, p.r,
           coalesce(sum(t.w * ((1 - vector_share) * t.jaccard + vector_share * t.vector_sim))
                    / nullif(sum(t.w) filter (where t.w > 0), 0), 0),
           coalesce(count(*) filter (where t.inter > 0)::float8
                    / nullif((select count(*) from owner_types o where o.owner = p.l), 0), 0),
           coalesce(jsonb_object_agg(t.type, jsonb_build_object(
                        'weight', t.w, 'jaccard', t.jaccard, 'vector', t.vector_sim,
                        'similarity', (1 - vector_share) * t.jaccard + vector_share * t.vector_sim))
                    filter (where t.type is not null), '{}'::jsonb)
      from pairs p
      left join per_type t on (t.l, t.r) = (p.l, p.r)
     group by p.l, p.r
$$;
comment on function sag.dataflow_pair_relevance(bigint[], bigint[], bigint[], bigint[], jsonb, float8) is
    'DataFlow relevance (seed §4.2) of each (pair_left[i], pair_right[i]) pair of key sets, the owners'' keys '
    'given as member_owner[j] has member_key[j]: per type both have, (1 - vector_share) Jaccard of the names + '
    'vector_share mean best key-embedding similarity; relevance = Σ w_t sim_t / Σ w_t with the type_weights '
    '(sag.dataflow_type_weights); match_ratio = share of the left side''s types in which the right side holds '
    'one of its names; dimensions = each type''s weight, jaccard, vector, similarity.';

-- Two key sets (e.g. two events' keys): the pair function's relevance for one pair.
create or replace function sag.dataflow_relevance(
    left_keys bigint[], right_keys bigint[], type_weights jsonb default null, vector_share float8 default 0.4)
returns float8
language sql stable
set search_path = pg_catalog, sag, public, pg_temp
as $$
    select r.relevance
      from sag.dataflow_pair_relevance(
               array[1::bigint], array[2::bigint],
               array_fill(1::bigint, array[cardinality(left_keys)]) || array_fill(2::bigint, array[cardinality(right_keys)]),
               left_keys || right_keys, coalesce(type_weights, sag.dataflow_type_weights()), vector_share) r
$$;
comment on function sag.dataflow_relevance(bigint[], bigint[], jsonb, float8) is
    'DataFlow relevance (seed §4.2) of two key sets, e.g. two events'' keys (sag.dataflow_pair_relevance '
    'for one pair); type_weights NULL = sag.dataflow_type_weights() of all sources.  Example: select '
    'sag.dataflow_relevance(array(select key_id from sag.event_keys where event_id = 1), '
    'array(select key_id from sag.event_keys where event_id = 2));';
