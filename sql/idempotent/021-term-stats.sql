-- BM25 corpus statistics (tables of sql/incremental/003-bm25-stats.sql): folding the queue of chunk changes
-- in, rebuilding from scratch, and reading N, avgdl and df exactly.  Re-applied on every upgrade.

-- A tsquery matching exactly one lexeme, whatever characters it holds (quotes and backslashes escaped).
create or replace function sag_internal._lexeme_query(lexeme text)
returns tsquery
language sql immutable strict parallel safe
set search_path = pg_catalog, sag, pg_temp
as $$ select ('''' || replace(replace(lexeme, '\', '\\'), '''', '''''') || '''')::tsquery $$;

create or replace function sag.flush_term_stats()
returns bigint
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    folded bigint := 0;
    n bigint;
    src bigint;
begin
    -- One flush at a time: the queue rows and the statistics rows are then always taken in one order.
    perform pg_advisory_xact_lock(hashtext('sag.term_stats'));
    -- Source by source, every statement naming it (on Citus each runs on the worker holding the source).
    -- A deleted source's queued changes went with it (foreign key, migration 0019).
    for src in select s.id from sag.sources s order by s.id loop
        with moved as (
            delete from sag.term_stats_pending p where p.source_id = src
            returning p.source_id, p.sign, p.token_count, p.tsv
        ),
        terms as (
            insert into sag.term_stats as ts (term, source_id, df)
            select d.term, src, d.delta
              from (select u.lexeme as term, sum(l.sign)::bigint as delta
                      from moved l, unnest(l.tsv) u group by 1) d
             where d.delta <> 0
             order by 1
            on conflict (term, source_id) do update set df = ts.df + excluded.df
            returning 1
        ),
        totals as (
            insert into sag.corpus_stats as cs (source_id, chunk_count, token_total)
            select src, sum(l.sign), sum(l.sign * l.token_count) from moved l having count(*) > 0
            on conflict (source_id) do update set chunk_count = cs.chunk_count + excluded.chunk_count,
                                                  token_total = cs.token_total + excluded.token_total
            returning 1
        )
        -- (Data-modifying WITH queries run to completion whether or not they are read.)
        select count(*) into n from moved;
        if n > 0 then
            delete from sag.term_stats where source_id = src and df = 0;
        end if;
        folded := folded + n;
    end loop;
    if folded > 0 then
        perform sag.calibrate();
    end if;
    return folded;
end;
$$;
comment on function sag.flush_term_stats() is
    'Folds the queued chunk insertions and deletions (sag.term_stats_pending) into sag.term_stats and '
    'sag.corpus_stats; returns how many queued chunks it folded.  Ingestion calls it at the end of every run; '
    'the statistics read by BM25 are exact whether or not it has run.  When it folded anything it also '
    're-calibrates the retrieval (sag.calibrate).';

-- What the retrieval derives from each source's data instead of taking fixed numbers, stored in
-- sag.settings ('calibration': {"<source id>": {...}}).  docs/retrieval.md gives the measurements.
--   events:      the source's events: N of the key specificity ln(1 + N / events of the key).
--   hub_events:  a key with more events is a hub (never expanded, sag-algorithm's noise keys): the 99th
--                percentile of the keys' event counts, at least 20.  A fixed 20 made every story key of a
--                corpus of repeated news a hub (rgb-zh: 99th percentile 93, MuSiQue 21).
-- Sources with more than 200,000 keys take the percentile over a page sample (TABLESAMPLE SYSTEM) of
-- about 100,000 keys: reading every key of 2.6 M (1 M events) takes seconds.
create or replace function sag.calibrate()
returns jsonb
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    result jsonb;
    sample_percent float8;
begin
    select least(100, 100 * 100000 / greatest(reltuples, 1)) into sample_percent
      from pg_class where oid = 'sag.keys'::regclass;
    if sample_percent >= 50 then
        sample_percent := 100;  -- every page: the exact percentile
    end if;
    -- Grouped by source and joined after (not a subquery per source): Citus runs each aggregate on the
    -- workers and joins the few result rows with sag.sources.
    with per_source as (
        select k.source_id, percentile_disc(0.99) within group (order by k.event_count) as p99
          from sag.keys k tablesample system (sample_percent) group by k.source_id
    ), source_events as (
        select e.source_id, count(*) as n from sag.events e group by e.source_id
    )
    select coalesce(jsonb_object_agg(s.id::text, jsonb_build_object(
               'events', coalesce(ev.n, 0),
               'hub_events', greatest(20, coalesce(p.p99, 20)))), '{}')
      into result
      from sag.sources s left join per_source p on p.source_id = s.id left join source_events ev on ev.source_id = s.id;
    -- (now() in the row, not in DO UPDATE: Citus takes only immutable functions there.)
    insert into sag.settings (name, value, updated_at) values ('calibration', result, now())
    on conflict (name) do update set value = excluded.value, updated_at = excluded.updated_at;
    perform sag.calibrate_similarity();  -- the embedder's chance level (035-similarity-floor.sql)
    return result;
end;
$$;
comment on function sag.calibrate() is
    'Derives the retrieval''s data-dependent parameters for every source and stores them in sag.settings '
    '(''calibration''): events (N of the key specificity) and hub_events (the 99th percentile of the keys'' '
    'event counts, at least 20: keys with more events are hubs), and the similarity floors '
    '(sag.calibrate_similarity).  sag.flush_term_stats runs it after an '
    'ingest; run it by hand after loading rows yourself.  Example: select sag.calibrate();';

-- The calibration of the given sources (NULL = all): their events, and the largest hub limit among them.
-- Without a calibration (nothing ingested through sag-pg yet): events NULL (no specificity) and 20.
create or replace function sag.calibration(source_ids bigint[] default null)
returns table (events bigint, hub_events integer)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return query
    select sum((c.value ->> 'events')::bigint)::bigint, coalesce(max((c.value ->> 'hub_events')::integer), 20)
      from sag.settings st
      left join lateral jsonb_each(st.value) c on source_ids is null or c.key::bigint = any (source_ids)
     where st.name = 'calibration'
    union all
    select null, 20 where not exists (select 1 from sag.settings where name = 'calibration');
end
$$;
comment on function sag.calibration(bigint[]) is
    'The stored calibration (sag.calibrate) of the given sources, NULL = all: events (sum) and hub_events '
    '(the largest).  Without one: NULL and 20.';

create or replace function sag.rebuild_term_stats()
returns void
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
begin
    perform pg_advisory_xact_lock(hashtext('sag.term_stats'));
    -- A chunk written after this snapshot is queued again by its trigger: empty the queue first, under the
    -- same snapshot that the recount reads.
    delete from sag.term_stats_pending;
    delete from sag.term_stats;
    delete from sag.corpus_stats;
    insert into sag.term_stats (term, source_id, df)
    select u.lexeme, c.source_id, count(*) from sag.chunks c, unnest(c.tsv) u group by 1, 2;
    insert into sag.corpus_stats (source_id, chunk_count, token_total)
    select c.source_id, count(*), sum(c.token_count) from sag.chunks c group by 1;
    perform sag.calibrate();
end;
$$;
comment on function sag.rebuild_term_stats() is
    'Recounts sag.term_stats and sag.corpus_stats from sag.chunks (after a TRUNCATE, or a load with the '
    'triggers disabled), and re-calibrates the retrieval (sag.calibrate).';

-- N (chunks) and the average chunk length (tokens) of the given sources, NULL = all.
create or replace function sag.bm25_corpus(source_ids bigint[] default null)
returns table (n float8, avgdl float8)
language plpgsql stable parallel safe
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return query
    select coalesce(sum(x.chunks), 0)::float8, (sum(x.tokens) / nullif(sum(x.chunks), 0))::float8
      from (select cs.chunk_count as chunks, cs.token_total as tokens from sag.corpus_stats cs
             where source_ids is null or cs.source_id = any (source_ids)
            union all
            select p.sign, p.sign * p.token_count from sag.term_stats_pending p
             where (source_ids is null or p.source_id = any (source_ids))
               and exists (select 1 from sag.sources s where s.id = p.source_id)) x;
end
$$;
comment on function sag.bm25_corpus(bigint[]) is
    'BM25 corpus statistics of the given sources (NULL = all): n = number of chunks, avgdl = average '
    'token_count (NULL without chunks).  Exact: sag.corpus_stats plus what is still queued.';

-- Document frequency of each term over the given sources, NULL = all.
create or replace function sag.bm25_df(terms text[], source_ids bigint[] default null)
returns table (term text, df float8)
language plpgsql stable parallel safe
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
declare
    stored_terms text[];
    stored_df float8[];
    queued_terms text[];
    queued_df float8[];
begin
    -- The stored counts and the queued changes, each summed in a statement of its own and per term (on
    -- Citus each is a query over the sources' shards, merged on the coordinator; a subquery correlated
    -- with the term is not).
    select coalesce(array_agg(x.term), '{}'), coalesce(array_agg(x.df), '{}') into stored_terms, stored_df
      from (select ts.term, sum(ts.df)::float8 as df from sag.term_stats ts
             where ts.term = any (terms) and (source_ids is null or ts.source_id = any (source_ids))
             group by ts.term) x;
    select coalesce(array_agg(x.term), '{}'), coalesce(array_agg(x.df), '{}') into queued_terms, queued_df
      from (select t.term, sum(p.sign)::float8 as df
              from sag.term_stats_pending p
              join sag.sources s on s.id = p.source_id
              cross join unnest(terms) as t(term)
             where p.tsv @@ sag_internal._lexeme_query(t.term)
               and (source_ids is null or p.source_id = any (source_ids))
             group by t.term) x;
    return query
    select t.term, coalesce(a.df, 0) + coalesce(b.df, 0)
      from unnest(terms) as t(term)
      left join unnest(stored_terms, stored_df) as a(term, df) on a.term = t.term
      left join unnest(queued_terms, queued_df) as b(term, df) on b.term = t.term;
end
$$;
comment on function sag.bm25_df(text[], bigint[]) is
    'Document frequency (chunks holding the lexeme) of each term over the given sources (NULL = all), exact: '
    'sag.term_stats plus what is still queued.';
