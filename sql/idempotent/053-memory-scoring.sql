-- Memory scoring strategies (issue #17, seed §2): TextOverlap, GraphDistance, TemporalWeight, ReferenceCount
-- and their Hybrid, each a function of its own so a result can show its breakdown.

-- The distinct character bigrams of a text: NFKC, lower case, within each letter/digit run (so Chinese
-- gives its character pairs: 知识图谱 -> 知识 识图 图谱); a one-character run counts as itself.
create or replace function sag.text_bigrams(content text)
returns text[]
language sql immutable parallel safe
set search_path = pg_catalog, sag, pg_temp
as $$
    select coalesce(array_agg(distinct b.bigram), '{}')
      from regexp_matches(lower(normalize(coalesce(content, ''), NFKC)), '([[:alnum:]]+)', 'g') r(m)
     cross join lateral (
         select case when char_length(r.m[1]) = 1 then r.m[1] else substr(r.m[1], i, 2) end as bigram
           from generate_series(1, greatest(char_length(r.m[1]) - 1, 1)) i) b
$$;
comment on function sag.text_bigrams(text) is
    'Distinct character bigrams within the letter/digit runs of a text (NFKC, lower case); Chinese runs give '
    'character pairs. Example: sag.text_bigrams(''Graph db'') = {db,gr,ph,ra,ap}.';

-- Dice = 2 |A ∩ B| / (|A| + |B|) over bigram sets; 0 when both are empty.
create or replace function sag.dice(a text[], b text[])
returns float8
language sql immutable parallel safe
set search_path = pg_catalog, sag, pg_temp
as $$
    select case when cardinality(a) + cardinality(b) = 0 then 0::float8
                else 2.0 * (select count(*) from (select unnest(a) intersect select unnest(b)) i)
                     / (cardinality(a) + cardinality(b)) end
$$;
comment on function sag.dice(text[], text[]) is
    'The Dice coefficient of two sets: 2 |A ∩ B| / (|A| + |B|), 0 when both are empty.';

create or replace function sag.text_overlap(query text, content text)
returns float8
language sql immutable parallel safe
set search_path = pg_catalog, sag, pg_temp
return sag.dice(sag.text_bigrams(query), sag.text_bigrams(content));
comment on function sag.text_overlap(text, text) is
    'TextOverlap: the Dice coefficient of the two texts'' bigram sets (sag.text_bigrams), in [0, 1]. '
    'Example: sag.text_overlap(''night'', ''nacht'') = 2 * 1 / (4 + 4) = 0.25.';

-- Title weighs more than summary, summary more than body: (3 title + 2 summary + 1 body) / 6, each a Dice
-- against the query's bigrams; the body is the best of the item's chunks.  Takes the query's bigrams, so a
-- recall computes them once for all its candidates.
create or replace function sag_internal._overlap(query_bigrams text[], title text, summary text, chunks text[])
returns float8
language sql immutable parallel safe
set search_path = pg_catalog, sag, pg_temp
as $$
    select (3 * sag.dice(query_bigrams, sag.text_bigrams(title)) + 2 * sag.dice(query_bigrams, sag.text_bigrams(summary))
            + coalesce((select max(sag.dice(query_bigrams, sag.text_bigrams(c))) from unnest(chunks) c), 0)) / 6
$$;

create or replace function sag.memory_overlap(query text, title text, summary text, body text)
returns float8
language sql immutable parallel safe
set search_path = pg_catalog, sag, pg_temp
return sag_internal._overlap(sag.text_bigrams(query), title, summary, array[body]);
comment on function sag.memory_overlap(text, text, text, text) is
    'TextOverlap of a memory item: (3 Dice(title) + 2 Dice(summary) + Dice(body)) / 6 against the query.';

create or replace function sag.temporal_weight(at timestamptz, now timestamptz default now(),
                                               half_life interval default '30 days')
returns float8
language sql immutable parallel safe
set search_path = pg_catalog, sag, pg_temp
return power(0.5, greatest(extract(epoch from now - at), 0) / extract(epoch from half_life));
comment on function sag.temporal_weight(timestamptz, timestamptz, interval) is
    'TemporalWeight: 0.5 ^ (age / half_life), 1 for now and the future. Example: 60 days at a 30-day half-life = 0.25.';

create or replace function sag.reference_weight(recall_count bigint)
returns float8
language sql immutable parallel safe
set search_path = pg_catalog, sag, pg_temp
return greatest(coalesce(recall_count, 0), 0)::float8 / (greatest(coalesce(recall_count, 0), 0) + 1);
comment on function sag.reference_weight(bigint) is
    'ReferenceCount: n / (n + 1) for an item recalled n times (0 -> 0, 1 -> 0.5, 3 -> 0.75).';

-- Seed defaults of Hybrid: overlap 0.5, graph 0.2, temporal 0.1, reference 0.2.
create or replace function sag.memory_score(strategy text, overlap float8, graph float8, temporal float8,
                                            reference float8, weights float8[] default '{0.5,0.2,0.1,0.2}')
returns float8
language plpgsql immutable parallel safe
set search_path = pg_catalog, sag, pg_temp
as $$
begin
    case strategy
        when 'text_overlap' then return overlap;
        when 'graph_distance' then return graph;
        when 'temporal' then return temporal;
        when 'reference_count' then return reference;
        when 'hybrid' then
            if (cardinality(weights) = 4) is not true then
                raise exception using errcode = '22023',
                                      message = 'sag.memory_score: hybrid needs 4 weights (overlap, graph, temporal, reference)';
            end if;
            return weights[1] * overlap + weights[2] * graph + weights[3] * temporal + weights[4] * reference;
        else
            raise exception using errcode = '22023',
                message = format('unknown scoring strategy %L: use text_overlap, graph_distance, temporal, reference_count or hybrid', strategy);
    end case;
end;
$$;
comment on function sag.memory_score(text, float8, float8, float8, float8, float8[]) is
    'A memory item''s score under a strategy: text_overlap, graph_distance, temporal, reference_count (that '
    'component) or hybrid (weights . components, default 0.5/0.2/0.1/0.2).';
