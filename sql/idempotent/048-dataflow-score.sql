-- DataFlow activation, part 4: the four-factor score (seed §7) and weighted reciprocal rank fusion (seed §8.1).
-- Re-applied on every upgrade.

-- Time decay (seed §7.2 calculate_time_decay): e^(-λ t), t = whole days from `at` to `now_at` (the seed's
-- timedelta.days), λ = decay_per_day (seed 0.01).  A time in the future counts as today (1.0).
create or replace function sag.dataflow_time_decay(at timestamptz, now_at timestamptz default now(),
                                                   decay_per_day float8 default 0.01)
returns float8
language sql immutable parallel safe
set search_path = pg_catalog, pg_temp
as $$
    -- exp underflows below e^-745: a time centuries back decays to e^-700 (0 for every purpose).
    select exp(-least(700, decay_per_day * greatest(0, floor(extract(epoch from now_at - at) / 86400))))::float8
$$;
comment on function sag.dataflow_time_decay(timestamptz, timestamptz, float8) is
    'DataFlow time decay (seed §7.2): exp(-decay_per_day * whole days from at to now_at), 1 for a time not in '
    'the past.  sag.dataflow_search passes an event''s own time (event_time, else the latest year of its time '
    'keys), else its created_at (ingest time).  '
    'Example: select sag.dataflow_time_decay(now() - interval ''100 days'');  -- e^-1';

-- An event's own time (issue 34.3): its event_time (the date the extractor found in it), else the latest year of
-- its time keys (value_number, e.g. 1843 for "1843", -100 for "100 BC"; January 1st), else NULL (the caller falls
-- back to the ingest time).  The seed decays by SourceEvent.created_time; an event's own time is what the
-- issue asks for "where it has one".
create or replace function sag_internal._dataflow_event_time(source_id bigint, event_id bigint)
returns timestamptz
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return (
    select coalesce(
        (select e.event_time from sag.events e
          where e.source_id = _dataflow_event_time.source_id and e.id = _dataflow_event_time.event_id),
        (select max(make_timestamptz(case when y = 0 then 1 else y end, 1, 1, 0, 0, 0, 'UTC'))
           from (select greatest(-4713, least(294000, floor(k.value_number)))::integer as y
                   from sag.event_keys ek
                   join sag.keys k on k.source_id = ek.source_id and k.id = ek.key_id
                  where ek.source_id = _dataflow_event_time.source_id and ek.event_id = _dataflow_event_time.event_id
                    and k.type = 'time' and k.value_number is not null) t)));
end
$$;

-- User preference (seed §7.2 calculate_preference_score): 0.5, + 0.3 when a focus name is one of the event's
-- topic keys, + 0.2 when one is one of its tag keys, at most 1.  Focus names are compared folded
-- (sag_internal._fold_word) with the keys' normalized names.
create or replace function sag.dataflow_preference(event_id bigint, focus text[])
returns float8
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return (
    select least(1.0, 0.5
               + case when exists (select 1 from sag.event_keys ek join sag.keys k on k.source_id = ek.source_id and k.id = ek.key_id
                                    where ek.event_id = dataflow_preference.event_id and k.type = 'topic'
                                      and k.normalized in (select sag_internal._fold_word(f) from unnest(focus) f))
                      then 0.3 else 0 end
               + case when exists (select 1 from sag.event_keys ek join sag.keys k on k.source_id = ek.source_id and k.id = ek.key_id
                                    where ek.event_id = dataflow_preference.event_id and k.type = 'tag'
                                      and k.normalized in (select sag_internal._fold_word(f) from unnest(focus) f))
                      then 0.2 else 0 end)::float8);
end
$$;
comment on function sag.dataflow_preference(bigint, text[]) is
    'DataFlow preference (seed §7.2): 0.5 + 0.3 if a focus name is one of the event''s topic keys + 0.2 if one '
    'is one of its tag keys, capped at 1.  sag.dataflow_search takes focus from the call, else from the '
    'sources'' config -> focus.  Example: select sag.dataflow_preference(1, array[''战役'']);';

-- The final score (seed §7.1): w1 relevance + w2 vector similarity + w3 time decay + w4 preference,
-- weights (0.3, 0.3, 0.2, 0.2) by default.
create or replace function sag.dataflow_score(relevance float8, similarity float8, time_decay float8,
                                              preference float8, weights float8[] default '{0.3,0.3,0.2,0.2}')
returns float8
language sql immutable parallel safe
set search_path = pg_catalog, pg_temp
as $$
    select weights[1] * coalesce(relevance, 0) + weights[2] * coalesce(similarity, 0)
         + weights[3] * coalesce(time_decay, 0) + weights[4] * coalesce(preference, 0)
$$;
comment on function sag.dataflow_score(float8, float8, float8, float8, float8[]) is
    'DataFlow''s four-factor score (seed §7.1): weights[1] relevance + weights[2] vector similarity + weights[3] '
    'time decay + weights[4] preference; default weights 0.3, 0.3, 0.2, 0.2.  Example: select '
    'sag.dataflow_score(0.5, 0.8, 1, 0.5);  -- 0.69';

-- Weighted reciprocal rank fusion (seed §8.1 reciprocal_rank_fusion): score(x) = Σ_i weight_i / (k + rank_i(x))
-- over the lists holding x (ranks from 1); ties by the first list's rank, then the second's, then id.
create or replace function sag.dataflow_rrf(first_ids bigint[], second_ids bigint[],
                                            first_weight float8 default 0.5, second_weight float8 default 0.5,
                                            k integer default 60)
returns table (id bigint, score float8, first_rank integer, second_rank integer)
language sql immutable parallel safe
set search_path = pg_catalog, pg_temp
as $$
    with a as (select distinct on (u.id) u.id, u.n::integer as n
                 from unnest(first_ids) with ordinality as u(id, n) order by u.id, u.n),
         b as (select distinct on (u.id) u.id, u.n::integer as n
                 from unnest(second_ids) with ordinality as u(id, n) order by u.id, u.n)
    select coalesce(a.id, b.id),
           coalesce(first_weight / (k + a.n), 0) + coalesce(second_weight / (k + b.n), 0),
           a.n, b.n
      from a full join b on b.id = a.id
     order by 2 desc, a.n nulls last, b.n nulls last, 1
$$;
comment on function sag.dataflow_rrf(bigint[], bigint[], float8, float8, integer) is
    'Weighted reciprocal rank fusion (seed §8.1) of two ranked id lists: score = first_weight / (k + rank in the '
    'first) + second_weight / (k + rank in the second), a list not holding the id adding 0; best first.  '
    'Example: select * from sag.dataflow_rrf(array[1, 2], array[2, 3]);';

-- The score weights with the vector factor's lexical part taken out (not in the seed; docs/dataflow.md,
-- DataFlow): w2' = w2 · (1 - r), r = the embedder's redundancy (sag.similarity_floors: how much of its cosine a
-- bag of words already says, the rest discounted by its reliability; 1 for the hash embedder, 0.12-0.27 for
-- MiniLM and E5 in English).  sag.dataflow_search passes it as lexical_redundancy.  When BM25's
-- chunks are fused into the chunk ranking (text_weight > 0) that part of the cosine repeats the words BM25
-- already ranks by: counted twice it only dilutes the entity evidence (HotpotQA, hash embedder: R@5 75.0 with
-- the seed's 0.3, 78.0 with 0).  Without BM25 (text_weight 0, the seed's ranking) the cosine is the only
-- lexical evidence and keeps its weight (HotpotQA 72.0 with it, 69.5 without).  r unknown (NULL) counts as
-- 1, as sag.similarity_floors has it without a calibration; r is clamped to [0, 1].
create or replace function sag.dataflow_score_weights(score_weights float8[], lexical_redundancy float8,
                                                      text_weight float8 default 0.5)
returns float8[]
language sql immutable parallel safe
set search_path = pg_catalog, pg_temp
as $$
    select case when coalesce(text_weight, 0) > 0
                then array[score_weights[1],
                           score_weights[2] * (1 - greatest(0, least(1, coalesce(lexical_redundancy, 1)))),
                           score_weights[3], score_weights[4]]
                else score_weights end
$$;
comment on function sag.dataflow_score_weights(float8[], float8, float8) is
    'DataFlow''s score weights (relevance, vector, time, preference) with the vector weight scaled by 1 - the '
    'embedder''s lexical redundancy (sag.similarity_floors lexical; NULL counts as 1) when BM25 is fused into the '
    'chunk ranking (text_weight > 0); unchanged otherwise.  Example: select '
    'sag.dataflow_score_weights(''{0.3,0.3,0.2,0.2}'', 0.2);  -- {0.3,0.24,0.2,0.2}';
