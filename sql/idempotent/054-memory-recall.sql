-- Memory recall (issue #17, seed §3-4): keyword extraction and the two-channel retriever.

create or replace function sag.keyword_stopwords()
returns text[]
language sql immutable parallel safe
set search_path = pg_catalog, sag, pg_temp
as $$
    select sag_internal._embed_hash_stopwords() || array[
        'many', 'much', 'please', 'tell', 'know', 'find', 'show', 'give', 'get', 'us', 'let', 'ever', 'yet',
        'among', 'upon', 'within', 'without', 'via', 'per', 'whether', 'whatever', 'whichever', 'anyone',
        '我', '你', '他', '她', '它', '我们', '你们', '他们', '什么', '哪', '哪里', '哪个', '哪些', '谁', '如何',
        '怎么', '怎样', '为什么', '吗', '呢', '吧', '啊', '有', '没有', '一个', '这个', '那个', '这些', '那些',
        '就', '都', '还', '又', '把', '被', '对', '从', '向', '到', '给', '让', '请', '关于', '以及', '并且',
        '但是', '因为', '所以', '如果', '可以', '是否', '多少', '几'
    ]::text[]
$$;
comment on function sag.keyword_stopwords() is
    'Stop words of keyword extraction: the hash embedder''s English and Chinese function words plus question words.';

-- Seed §4: the query's terms (sag.query_terms: letter/digit runs, Chinese segmented against the index's
-- vocabulary) without stop words and one-character words, distinct, in query order.
create or replace function sag.extract_keywords(query text, source_ids bigint[] default null)
returns text[]
language sql stable
set search_path = pg_catalog, sag, pg_temp
as $$
    select coalesce(array_agg(t.term order by t.n), '{}')
      from (select distinct on (u.term) u.term, u.n
              from unnest(sag.query_terms(query, source_ids)) with ordinality as u(term, n)
             where char_length(u.term) > 1 and u.term <> all(sag.keyword_stopwords())
             order by u.term, u.n) t
$$;
comment on function sag.extract_keywords(text, bigint[]) is
    'Keywords of a query: its BM25 terms without stop words (sag.keyword_stopwords) and one-character words. '
    'Example: sag.extract_keywords(''Who founded the Apple company?'') = {founded,apple,company}.';

-- Entities reached from the keywords: the named ones (score 1) and what sag.get_related reaches from them.
create or replace function sag.recall_entities(keywords text[], source_ids bigint[] default null,
                                               depth integer default 2, seeds integer default 10)
returns table (key_id bigint, score float8, distance integer)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
declare
    named bigint[];
    named_sources bigint[];
    i integer;
    ids bigint[] := '{}';
    scores float8[] := '{}';
    distances integer[] := '{}';
begin
    select coalesce(array_agg(s.id), '{}'), coalesce(array_agg(s.source_id), '{}') into named, named_sources
      from sag.find_by_keywords(keywords, source_ids, seeds) s;
    -- Each named entity's neighbourhood in a statement of its own (sag.get_related reads tables), in its source.
    for i in 1..cardinality(named) loop
        select ids || coalesce(array_agg(g.id), '{}'), scores || coalesce(array_agg(g.score), '{}'),
               distances || coalesce(array_agg(g.distance), '{}')
          into ids, scores, distances
          from sag.get_related(named[i], depth, 'both', null, 100, named_sources[i]) g;
    end loop;
    return query
    select x.id, max(x.score), min(x.distance)
      from (select s.id, 1.0::float8 as score, 0 as distance from unnest(named) as s(id)
            union all
            select g.id, g.score, g.distance from unnest(ids, scores, distances) as g(id, score, distance)) x
     group by x.id;
end
$$;
comment on function sag.recall_entities(text[], bigint[], integer, integer) is
    'The graph channel''s entities: those the keywords name (score 1, distance 0) and the ones get_related '
    'reaches from them (both directions), best score kept.';

create or replace function sag.recall(
    query text, source_ids bigint[] default null, channels text default 'hybrid', strategy text default 'hybrid',
    min_score float8 default 0, top_n integer default 10, depth integer default 2,
    weights float8[] default '{0.5,0.2,0.1,0.2}', half_life interval default '30 days',
    record boolean default true, candidates integer default 50)
returns table (document_id bigint, uri text, title text, score float8, overlap float8, graph float8,
               temporal float8, reference float8, via_content boolean, via_graph boolean)
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    kw text[] := sag.extract_keywords(query, source_ids);
    qb text[] := sag.text_bigrams(query);
    tsq tsquery;
    found_rows jsonb;
    srcs bigint[] := coalesce(source_ids, array(select s.id from sag.sources s order by s.id));
    e_ids bigint[] := '{}';
    e_scores float8[] := '{}';
    c_docs bigint[] := '{}';
    c_ranks float8[] := '{}';
    g_docs bigint[] := '{}';
begin
    if (channels in ('hybrid', 'knowledge', 'graph')) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.recall: channels must be hybrid, knowledge or graph, got %L',
                                               channels);
    end if;
    perform sag.memory_score(strategy, 0, 0, 0, 0, weights);  -- validates strategy and weights up front
    if (top_n >= 1) is not true then
        raise exception using errcode = '22023', message = format('sag.recall: top_n must be >= 1, got %s', top_n);
    end if;
    if cardinality(kw) = 0 then
        return;
    end if;
    tsq := to_tsquery('simple', (select string_agg(quote_literal(w), ' | ') from unnest(kw) w));
    -- Each step a statement of its own that reads the per-source tables by source, or none (on Citus a
    -- function reading tables is not called inside a statement over distributed tables).
    if channels <> 'knowledge' then
        select coalesce(array_agg(e.key_id), '{}'), coalesce(array_agg(e.score), '{}') into e_ids, e_scores
          from sag.recall_entities(kw, source_ids, depth) e;
    end if;
    if channels <> 'graph' then
        select coalesce(array_agg(x.document_id), '{}'), coalesce(array_agg(x.rank), '{}') into c_docs, c_ranks
          from (select c.document_id, max(ts_rank(c.tsv, tsq)) as rank from sag.chunks c
                 where c.tsv @@ tsq and c.source_id = any (srcs)
                 group by c.document_id order by 2 desc, 1 limit candidates) x;
    end if;
    select coalesce(array_agg(x.document_id), '{}') into g_docs
      from (select ev.document_id, max(en.score) as g
              from unnest(e_ids, e_scores) as en(key_id, score)
              join sag.keys k on k.source_id = any (srcs) and k.id = en.key_id
              join sag.event_keys ek on ek.source_id = any (srcs) and ek.source_id = k.source_id and ek.key_id = k.id
              join sag.events ev on ev.source_id = any (srcs) and ev.source_id = ek.source_id and ev.id = ek.event_id
             group by ev.document_id order by 2 desc, 1 limit candidates) x;
    with cand as (
        select coalesce(bc.document_id, bg.document_id) as document_id, bc.document_id is not null as via_c,
               bg.document_id is not null as via_g
          from unnest(c_docs) as bc(document_id) full join unnest(g_docs) as bg(document_id)
            on bg.document_id = bc.document_id
    ), scored as materialized (   -- each candidate's components once (not again in the filter and the sort)
        select d.id, d.uri, d.title, c.via_c, c.via_g,
               sag_internal._overlap(qb, d.title, d.summary, coalesce(ch.contents, '{}')) as o,
               coalesce(gr.g, 0) as g,
               sag.temporal_weight(d.updated_at, now(), half_life) as t,
               sag.reference_weight(rs.recall_count) as r
          from cand c
          join sag.documents d on d.source_id = any (srcs) and d.id = c.document_id
          left join (select ch.source_id, ch.document_id, array_agg(ch.content order by ch.ordinal, ch.id) as contents
                       from sag.chunks ch
                      where ch.source_id = any (srcs) and ch.document_id = any (c_docs || g_docs)
                      group by ch.source_id, ch.document_id) ch on ch.source_id = d.source_id and ch.document_id = d.id
          left join (select ev.source_id, ev.document_id, max(en.score) as g
                       from sag.events ev
                       join sag.event_keys ek on ek.source_id = any (srcs) and ek.source_id = ev.source_id
                                             and ek.event_id = ev.id
                       join unnest(e_ids, e_scores) as en(key_id, score) on en.key_id = ek.key_id
                      where ev.source_id = any (srcs) and ev.document_id = any (c_docs || g_docs)
                      group by ev.source_id, ev.document_id) gr on gr.source_id = d.source_id and gr.document_id = d.id
          left join sag.recall_stats rs on rs.source_id = any (srcs) and rs.source_id = d.source_id
                                       and rs.document_id = d.id
    ), ranked as (
        select s.*, sag.memory_score(strategy, s.o, s.g, s.t, s.r, weights) as total from scored s
    )
    select coalesce(jsonb_agg(jsonb_build_object(
               'id', k.id, 'uri', k.uri, 'title', k.title, 'total', k.total, 'o', k.o, 'g', k.g, 't', k.t,
               'r', k.r, 'via_c', k.via_c, 'via_g', k.via_g) order by k.total desc, k.id), '[]')
      into found_rows
      from (select * from ranked k where k.total >= min_score order by k.total desc, k.id limit top_n) k;
    -- Recorded by a session that may write (issue #36): a read-only transaction or a role without INSERT on
    -- sag.recall_stats recalls without recording, instead of failing.
    if record and current_setting('transaction_read_only') = 'off'
       and has_table_privilege('sag.recall_stats', 'INSERT') then
        perform sag.record_recall(array(select (r->>'id')::bigint from jsonb_array_elements(found_rows) r),
                                  array(select (r->>'total')::float8 from jsonb_array_elements(found_rows) r),
                                  null, srcs);
    end if;
    return query
    select x.id, x.uri, x.title, x.total, x.o, x.g, x.t, x.r, x.via_c, x.via_g
      from jsonb_to_recordset(found_rows) as x(id bigint, uri text, title text, total float8, o float8, g float8,
                                                t float8, r float8, via_c boolean, via_g boolean)
     order by x.total desc, x.id;
end;
$$;
comment on function sag.recall(text, bigint[], text, text, float8, integer, integer, float8[], interval, boolean, integer) is
    'Two-channel memory recall (seed §3): keywords (sag.extract_keywords); the content channel (documents whose '
    'chunks contain a keyword) and the graph channel (keywords -> entities -> get_related -> their documents); '
    'best candidates of each channel (candidates, default 50) scored by strategy (text_overlap | graph_distance | temporal | reference_count | hybrid) '
    'with its breakdown; min_score, top_n; channels hybrid | knowledge | graph. Records the results'' recall '
    'statistics unless record => false, or the session may not write (a read-only transaction or a role '
    'without INSERT on sag.recall_stats: recalled, not recorded). Example: select * from '
    'sag.recall(''apple founders'', top_n => 5);';
