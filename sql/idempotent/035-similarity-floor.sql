-- The embedder's chance level, calibrated per source: what cosine two unrelated texts get.  Re-applied on
-- every upgrade.
--
-- Embedders differ in where "unrelated" lies.  Two random passages have a cosine of 0.02-0.07 under the hash
-- embedder and all-MiniLM-L6-v2, but 0.85 under multilingual-e5-small (whose cosines all lie in 0.8-0.95):
-- a similarity threshold or a linear mix with BM25 tuned on one embedder means nothing under the other, and
-- under E5 the cosine part of every score is a near-constant that drowns the differences.  Every retrieval
-- cosine is therefore taken above the floor and rescaled, similarity = greatest(0, (cos - floor) / (1 - floor)):
-- 0 at chance, 1 for identical directions.  The floor is the mean cosine of random pairs of the source's own
-- chunks, events and keys (each kind has its own: short key names sit higher under E5, 0.88).  Measured on the
-- development sets (docs/retrieval.md): hash 0.04 / 0.01-0.03 / 0.00, MiniLM 0.02 / 0.03 / 0.16, E5 0.85 /
-- 0.84 / 0.88 (chunks / events / keys).

-- The embedder's lexical redundancy, calibrated per source with the floors: how much of what the embedder's
-- cosine says about two texts a bag of words already says.  Measured as the correlation, over the same sample
-- pairs of chunks, between the embedder's cosine and the cosine of the hash embedder (sag.embed_hash: a
-- sketch of the words) of the very texts it embedded (title, newline, content).  1 for the hash embedder
-- itself; 0.16-0.27 for all-MiniLM-L6-v2 and multilingual-e5-small on the development sets, whatever the
-- corpus or language (docs/retrieval.md).  sag.retrieve reads it to share s between BM25 and the cosine: a
-- cosine that repeats the words adds nothing to BM25, an independent one is evidence of its own.

-- Mean cosine over the pairs of a deterministic sample (by a hash of the content, so a calibration of the same
-- data is the same whatever ids the rows got: on one node or Citus, before or after a re-ingest) of at most 60
-- of one source's embeddings: up to 1,770 pairs.
create or replace function sag_internal._chance_cosine(embeddings @extschema:vector@.halfvec[])
returns float8
language sql immutable
set search_path = pg_catalog, sag, pg_temp
as $$
    select avg(c.cos)
      from (select 1 - (a.e operator(@extschema:vector@.<=>) b.e) as cos
              from unnest(embeddings) with ordinality as a(e, n)
              join unnest(embeddings) with ordinality as b(e, n) on b.n > a.n) c
     where c.cos <> 'NaN'::float8
$$;

-- The calibration's sample of one source's chunks: the floors' deterministic 60 (by a hash of the content), each
-- with its stored embedding (e) and the hash embedder's of the very text that was embedded (h: the words).
create or replace function sag_internal._calibration_sample(source_id bigint)
returns table (id bigint, e @extschema:vector@.vector, h @extschema:vector@.vector)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return query
    select c.id, c.embedding::@extschema:vector@.vector,
           sag.embed_hash(c.title || E'\n' || c.content, @extschema:vector@.vector_dims(c.embedding::@extschema:vector@.vector))
      from sag.chunks c
     where c.source_id = _calibration_sample.source_id and c.embedding is not null
     order by hashtext(c.content), hashtext(c.title), c.ordinal limit 60;
end
$$;

-- Correlation of the stored cosines with the hash embedder's over the pairs of a sample of one source's
-- chunks (the same deterministic sample as the floors); NULL for fewer than 3 chunks (no pairs to compare).
-- (The sample comes as arrays, read by sag.calibrate_similarity first: on Citus a function that reads
-- distributed tables is not called from a query that reads them.)
drop function if exists sag_internal._lexical_redundancy(bigint);  -- before the sample arguments
create or replace function sag_internal._lexical_redundancy(e @extschema:vector@.vector[], h @extschema:vector@.vector[])
returns float8
language sql immutable
set search_path = pg_catalog, sag, pg_temp
as $$
    with numbered as (select s.e, s.h, s.n from unnest(e, h) with ordinality as s(e, h, n)),
    pairs as (select 1 - (a.e operator(@extschema:vector@.<=>) b.e) as model, 1 - (a.h operator(@extschema:vector@.<=>) b.h) as words
                from numbered a join numbered b on b.n > a.n)
    select case when count(*) >= 3 then greatest(0, least(1, corr(p.model, p.words))) end
      from pairs p
     where p.model <> 'NaN'::float8 and p.words <> 'NaN'::float8
$$;

-- The embedder's reliability on the source, calibrated with the floors: how well its cosine finds a passage
-- from one of the passage's own events, against the words doing the same.  For each chunk of the sample (the
-- floors' deterministic 60) one of its events asks for it among the sample's chunks; reliability = the mean
-- reciprocal rank of the right chunk by the stored embeddings, over the same by the hash embedder
-- (sag.embed_hash) of the very texts that were embedded (title, newline, content), at most 1.  An embedder
-- that knows the language is about as good as the words at this (multilingual-e5-small: 0.93 on rgb-zh,
-- 0.98-1 on the English sets; all-MiniLM-L6-v2 0.98-1 in English); one that does not is not (all-MiniLM-L6-v2
-- on Chinese: 0.74), and its low lexical redundancy (0.23) is noise, not independent evidence.  NULL when fewer
-- than 3 chunks have an embedded event.
drop function if exists sag_internal._embedder_reliability(bigint);  -- before the sample arguments
create or replace function sag_internal._embedder_reliability(source_id bigint, ids bigint[],
                                                              e @extschema:vector@.vector[], h @extschema:vector@.vector[])
returns float8
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return (
    with sample as (select * from unnest(ids, e, h) as s(id, e, h)),
    picked as (
        -- One event per chunk, chosen before hashing: DISTINCT ON computes its select list for every row.
        select distinct on (ev.chunk_id) ev.chunk_id, ev.embedding::@extschema:vector@.vector as e, ev.title, ev.content
          from sag.events ev
          join sample s on s.id = ev.chunk_id
         where ev.source_id = _embedder_reliability.source_id and ev.embedding is not null
         order by ev.chunk_id, hashtext(ev.content), hashtext(ev.title)),
    asked as materialized (  -- hashed once, not once per pair of the cross join below
        select p.chunk_id, p.e, sag.embed_hash(p.title || E'\n' || p.content, @extschema:vector@.vector_dims(p.e)) as h
          from picked p),
    ranks as (
        select a.chunk_id, s.id,
               rank() over (partition by a.chunk_id order by a.e operator(@extschema:vector@.<=>) s.e) as model,
               rank() over (partition by a.chunk_id order by a.h operator(@extschema:vector@.<=>) s.h) as words
          from asked a cross join sample s)
    select case when count(*) >= 3 then least(1, avg(1.0 / r.model) / nullif(avg(1.0 / r.words), 0))::float8 end
      from ranks r
     where r.id = r.chunk_id);
end
$$;

create or replace function sag.calibrate_similarity()
returns jsonb
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    result jsonb := '{}';
    src bigint;
    chunks @extschema:vector@.halfvec[];
    events @extschema:vector@.halfvec[];
    keys @extschema:vector@.halfvec[];
    sample_ids bigint[];
    sample_e @extschema:vector@.vector[];
    sample_h @extschema:vector@.vector[];
begin
    -- Source by source, each statement naming it (on Citus each runs on the worker holding the source).
    for src in select s.id from sag.sources s order by s.id loop
        select array_agg(x.id order by x.n), array_agg(x.e order by x.n), array_agg(x.h order by x.n)
          into sample_ids, sample_e, sample_h
          from (select c.*, row_number() over () as n from sag_internal._calibration_sample(src) c) x;
        select array_agg(x.embedding order by x.h) into chunks
          from (select c.embedding, hashtext(c.content) as h from sag.chunks c
                 where c.source_id = src and c.embedding is not null order by 2, hashtext(c.title), c.ordinal limit 60) x;
        select array_agg(x.embedding order by x.h) into events
          from (select e.embedding, hashtext(e.content) as h from sag.events e
                 where e.source_id = src and e.embedding is not null order by 2, hashtext(e.title), e.ordinal limit 60) x;
        select array_agg(x.embedding order by x.h) into keys
          from (select k.embedding, hashtext(k.type || ':' || k.normalized) as h from sag.keys k
                 where k.source_id = src and k.embedding is not null order by 2 limit 60) x;
        result := result || jsonb_build_object(src::text, jsonb_build_object(
            'chunk', coalesce(sag_internal._chance_cosine(chunks), 0),
            'event', coalesce(sag_internal._chance_cosine(events), 0),
            'key', coalesce(sag_internal._chance_cosine(keys), 0),
            'lexical', coalesce(sag_internal._lexical_redundancy(sample_e, sample_h), 1),
            'reliability', coalesce(sag_internal._embedder_reliability(src, sample_ids, sample_e, sample_h), 1)));
    end loop;
    -- (now() in the row, not in DO UPDATE: Citus takes only immutable functions there.)
    insert into sag.settings (name, value, updated_at) values ('similarity_floors', result, now())
    on conflict (name) do update set value = excluded.value, updated_at = excluded.updated_at;
    return result;
end;
$$;
comment on function sag.calibrate_similarity() is
    'Measures, for every source, the mean cosine of random pairs of its chunks, events and keys (a '
    'deterministic sample of 60 of each, 1,770 pairs) and stores them in sag.settings (''similarity_floors''): the '
    'embedder''s chance level, above which sag.retrieve takes every cosine; and the embedder''s lexical redundancy '
    '(''lexical'': the correlation of its chunk cosines with the hash embedder''s over the same sample, 1 when '
    'unknown), by which sag.retrieve shares s between BM25 and the cosine; and its reliability (''reliability'': '
    'the mean reciprocal rank of a chunk found from one of its events by the embeddings, over the same by the '
    'words, at most 1; 1 when unknown).  sag.calibrate runs it.';

-- The floors of the given sources (NULL = all): the mean over them; 0 (the plain cosine) without a calibration.
-- redundancy: the share of the cosine's evidence that adds nothing to the words, what the retrieval reads: what
-- repeats them (lexical) plus, of the rest, what is noise (1 - reliability): 1 - (1 - lexical) * reliability.
drop function if exists sag.similarity_floors(bigint[]);  -- gained the columns lexical, reliability, redundancy
create or replace function sag.similarity_floors(source_ids bigint[] default null)
returns table (chunk float8, event float8, key float8, lexical float8, reliability float8, redundancy float8)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return query
    select greatest(0, least(0.99, coalesce(avg((f.value ->> 'chunk')::float8), 0))),
           greatest(0, least(0.99, coalesce(avg((f.value ->> 'event')::float8), 0))),
           greatest(0, least(0.99, coalesce(avg((f.value ->> 'key')::float8), 0))),
           greatest(0, least(1, coalesce(avg(coalesce((f.value ->> 'lexical')::float8, 1)), 1))),
           greatest(0, least(1, coalesce(avg(coalesce((f.value ->> 'reliability')::float8, 1)), 1))),
           greatest(0, least(1, coalesce(avg(1 - (1 - greatest(0, least(1, coalesce((f.value ->> 'lexical')::float8, 1))))
                                                 * greatest(0, least(1, coalesce((f.value ->> 'reliability')::float8, 1)))), 1)))
      from sag.settings st
      join lateral jsonb_each(st.value) f on source_ids is null or f.key::bigint = any (source_ids)
     where st.name = 'similarity_floors';
end
$$;
comment on function sag.similarity_floors(bigint[]) is
    'The chance-level cosines (sag.calibrate_similarity) of chunks, events and keys of the given sources, NULL '
    '= all (their mean), clamped to [0, 0.99]; 0 without a calibration.  lexical: the embedder''s lexical '
    'redundancy (their mean, in [0, 1]; 1 without a calibration); reliability: the embedder''s (their mean, 1 '
    'without a calibration); redundancy: 1 - (1 - lexical) * reliability per source, their mean: what the '
    'retrieval reads.';

-- A database calibrated before the floors (or their lexical redundancy) existed gets them once, on upgrade.
do $$
begin
    if exists (select 1 from sag.settings where name = 'calibration')
       and not exists (select 1 from sag.settings st
                        where st.name = 'similarity_floors'
                          and not exists (select 1 from jsonb_each(st.value) f
                                           where not (f.value ? 'lexical' and f.value ? 'reliability'))) then
        perform sag.calibrate_similarity();
    end if;
end;
$$;
