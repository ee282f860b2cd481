-- Chunk retrieval: BM25 over sag.chunks.tsv, dense (HNSW) search, their reciprocal rank fusion, and
-- stage 3 of the SAG retrieval (sag-algorithm §2.4): the initial chunk weights.  Re-applied on every upgrade.
-- docs/retrieval.md explains every formula and choice made here.

-- Signatures that gained parameters: drop the old ones, or calls would be ambiguous between two overloads.
drop function if exists sag_internal._bm25_score(text[], integer[], float8[], tsquery, bigint[], float8, float8, float8);
drop function if exists sag.bm25_chunks(text[], bigint[], integer, float8, float8);
drop function if exists sag.bm25_chunks(text[], bigint[], integer, float8, float8, bigint[]);
drop function if exists sag.bm25_chunks(text[], bigint[], integer, float8, float8, bigint[], integer);
drop function if exists sag.query_chunks(@extschema:vector@.vector, text[], bigint[], integer, integer, float8, bigint[]);
drop function if exists sag.dense_chunks(@extschema:vector@.vector, bigint[], integer);
drop function if exists sag.query_chunks(@extschema:vector@.vector, text[], bigint[], integer, integer, float8, bigint[], integer);
drop function if exists sag.rank_chunks(@extschema:vector@.vector, text[], bigint[], float8[], integer[], bigint[], integer, integer, integer,
                                        float8, bigint[], float8[], float8[], boolean[], bigint[], float8);
drop function if exists sag.hybrid_chunks(@extschema:vector@.vector, text[], bigint[], integer, integer);
drop function if exists sag.rank_chunks(@extschema:vector@.vector, text[], bigint[], float8[], integer[], bigint[], integer, integer,
                                        integer, float8);
drop function if exists sag.rank_chunks(@extschema:vector@.vector, text[], bigint[], float8[], integer[], bigint[], integer, integer,
                                        integer, float8, bigint[], float8[], float8[], boolean[], bigint[]);
drop function if exists sag.rank_chunks(@extschema:vector@.vector, text[], bigint[], float8[], integer[], bigint[], integer, integer,
                                        integer, float8, bigint[], float8[], float8[], boolean[], bigint[], float8,
                                        float8);
-- Gained the column document_id (the steps after the ranking group chunks by document without looking it up).
do $$
begin
    if exists (select 1 from pg_proc p
                where p.oid = to_regprocedure('sag.rank_chunks(@extschema:vector@.vector, text[], bigint[], float8[], integer[], bigint[], '
                                              'integer, integer, integer, float8, bigint[], float8[], float8[], '
                                              'boolean[], bigint[], float8, float8, float8)')
                  and not 'document_id' = any (p.proargnames)) then
        drop function sag.rank_chunks(@extschema:vector@.vector, text[], bigint[], float8[], integer[], bigint[], integer, integer,
                                      integer, float8, bigint[], float8[], float8[], boolean[], bigint[], float8,
                                      float8, float8);
    end if;
end;
$$;

-- The query's lexemes as sag.chunks.tsv stores them (same 'simple' configuration over space-joined tokens),
-- each with its count in the query: a repeated query token counts repeatedly, as in bm25s and Lucene.
create or replace function sag_internal._bm25_query_terms(query_tokens text[])
returns table (term text, qtf integer)
language sql immutable parallel safe
set search_path = pg_catalog, sag, pg_temp
as $$
    select u.lexeme, cardinality(u.positions)
      from unnest(to_tsvector('simple'::regconfig, coalesce(array_to_string(query_tokens, ' '), ''))) as u
$$;

-- Exact BM25 scores of the chunks of the given sources (NULL = all) that match `match_query` (found with the
-- GIN index), on all query terms (`terms`, `qtfs`, `idfs`), only chunks in chunk_filter when it is given.  tf
-- is the number of positions of the lexeme in tsv: setweight + ts_filter cut the tsvector down to the query
-- terms before it is unnested.
create or replace function sag_internal._bm25_score(
    terms text[], qtfs integer[], idfs float8[], match_query tsquery, source_ids bigint[],
    avgdl float8, k1 float8, b float8, chunk_filter bigint[] default null)
returns table (chunk_id bigint, score float8)
language plpgsql stable parallel safe
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return query
    select s.id,
           sum(qtfs[s.i] * idfs[s.i] * s.tf / (s.tf + k1 * (1 - b + b * s.token_count / avgdl)))
      from (select c.id, c.token_count,
                   array_position(terms, (c.x).lexeme) as i, cardinality((c.x).positions)::float8 as tf
              from (select c.id, c.token_count, unnest(ts_filter(setweight(c.tsv, 'A', terms), '{a}')) as x
                      from sag.chunks c
                     where c.tsv @@ match_query and (source_ids is null or c.source_id = any (source_ids))
                       and (chunk_filter is null or c.id in (select unnest(chunk_filter)))) c) s
     group by s.id;
end
$$;

create or replace function sag.bm25_chunks(
    query_tokens text[],
    source_ids bigint[] default null,
    top_k integer default 50,
    k1 float8 default 1.2,
    b float8 default 0.75,
    chunk_filter bigint[] default null,
    max_postings integer default null,
    skip_common boolean default false)
returns table (chunk_id bigint, score float8)
language plpgsql stable parallel safe
set search_path = pg_catalog, sag, pg_temp
set plan_cache_mode = force_generic_plan
as $$
declare
    n float8;
    avgdl float8;
    terms text[];
    qtfs integer[];
    idfs float8[];
    dfs float8[];
    common boolean[];  -- held by at least half the chunks: no evidence of relevance (skip_common)
    rest float8[];     -- rest[j]: the most that terms j+1..m can add to any score (sum of qtf * idf)
    m integer;
    i integer;
    j integer;
    batch_df float8;
    batch tsquery;     -- terms i..j
    seen tsquery;      -- terms 1..i-1, whose chunks have been scored already
    kth float8;
    scanned float8 := 0;  -- postings (chunks) of the terms whose chunks were scored
    best bigint[] := '{}';
    best_scores float8[] := '{}';
begin
    if (top_k >= 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.bm25_chunks: top_k must be >= 1, got %s', top_k);
    end if;
    if (k1 >= 0) is not true then
        raise exception using errcode = '22023', message = format('sag.bm25_chunks: k1 must be >= 0, got %s', k1);
    end if;
    if (b >= 0 and b <= 1) is not true then
        raise exception using errcode = '22023', message = format('sag.bm25_chunks: b must be in [0, 1], got %s', b);
    end if;
    if (max_postings is null or max_postings >= 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.bm25_chunks: max_postings must be >= 1, got %s', max_postings);
    end if;

    -- N, avgdl and df over the searched sources, whatever chunk_filter says: a restriction narrows what is
    -- returned, not the corpus statistics.  Kept by ingestion (sql/idempotent/021-term-stats.sql): counting
    -- them here would read every chunk and every posting of a common term.
    select c.n, c.avgdl into n, avgdl from sag.bm25_corpus(source_ids) c;
    if n = 0 then
        return;
    end if;
    avgdl := greatest(avgdl, 1e-9);  -- every chunk empty: lengths do not matter

    -- Lucene idf of each query term.  Terms are ordered by the most they can add to a score, qtf * idf
    -- (since tf / (tf + K) < 1), biggest first: the rarest first.  With skip_common the common terms go last
    -- (MaxScore holds in any order: rest[j] bounds whatever terms follow j).
    with t as (select * from sag_internal._bm25_query_terms(query_tokens))
    select array_agg(x.term order by x.common, x.ub desc, x.term), array_agg(x.qtf order by x.common, x.ub desc, x.term),
           array_agg(x.idf order by x.common, x.ub desc, x.term), array_agg(x.df order by x.common, x.ub desc, x.term),
           array_agg(x.common order by x.common, x.ub desc, x.term)
      into terms, qtfs, idfs, dfs, common
      from (select y.term, y.qtf, y.df, y.idf, y.qtf * y.idf as ub,
                   -- Robertson-Sparck Jones: a term in at least half the chunks has a relevance weight
                   -- ln((N - df + 0.5) / (df + 0.5)) <= 0, it says nothing about which chunk is relevant.
                   skip_common is true and y.df + 0.5 >= n - y.df + 0.5 as common
              from (select t.term, t.qtf, d.df, ln(1 + (n - d.df + 0.5) / (d.df + 0.5)) as idf
                      from t join sag.bm25_df(array(select t.term from t), source_ids) d on d.term = t.term) y
             where y.df > 0) x;
    m := coalesce(cardinality(terms), 0);
    if m = 0 then
        return;
    end if;
    select array_agg(r.rest order by r.i) into rest
      from (select u.i, coalesce(sum(u.qtf * u.idf) over (order by u.i rows between 1 following
                                                                        and unbounded following), 0) as rest
              from unnest(qtfs, idfs) with ordinality as u(qtf, idf, i)) r;

    -- MaxScore: score the chunks that hold one of terms i..j and none of the terms before i, keeping the
    -- top k so far.  A chunk holding none of terms 1..j scores below rest[j]: once the k-th best score
    -- reaches rest[j], no unscored chunk can enter the top k and the remaining terms are skipped.  Rare
    -- terms are taken together (about 64 chunks a batch) to save statements.
    i := 1;
    while i <= m loop
        j := i;
        batch_df := dfs[i];
        while j < m and batch_df + dfs[j + 1] <= 64 and not common[j + 1]
                    and (max_postings is null or scanned + batch_df + dfs[j + 1] <= max_postings) loop
            j := j + 1;
            batch_df := batch_df + dfs[j];
        end loop;
        -- The posting budget: common terms left once it is spent only score the chunks found so far; so do
        -- the terms of no evidence (skip_common), unless no term has been scanned yet.
        exit when max_postings is not null and scanned > 0 and scanned + batch_df > max_postings;
        exit when common[i] and scanned > 0;
        scanned := scanned + batch_df;
        select string_agg(sag_internal._lexeme_query(t)::text, ' | ')::tsquery into batch from unnest(terms[i:j]) t;
        select array_agg(s.chunk_id order by s.score desc, s.chunk_id),
               array_agg(s.score order by s.score desc, s.chunk_id)
          into best, best_scores
          from (select u.chunk_id, u.score
                  from (select b0.chunk_id, b0.score from unnest(best, best_scores) as b0(chunk_id, score)
                        union all
                        select sc.chunk_id, sc.score
                          from sag_internal._bm25_score(terms, qtfs, idfs,
                                               case when seen is null then batch else batch && !! seen end,
                                               source_ids, avgdl, k1, b, chunk_filter) sc) u
                 order by u.score desc, u.chunk_id
                 limit top_k) s;
        best := coalesce(best, '{}');
        best_scores := coalesce(best_scores, '{}');
        kth := case when cardinality(best) >= top_k then best_scores[top_k] else 0 end;
        exit when cardinality(best) >= top_k and kth >= rest[j];
        seen := case when seen is null then batch else seen || batch end;
        i := j + 1;
    end loop;

    return query select u.c, u.s from unnest(best, best_scores) as u(c, s);
end;
$$;
comment on function sag.bm25_chunks(text[], bigint[], integer, float8, float8, bigint[], integer, boolean) is
    'BM25 (Lucene variant, as bm25s method="lucene") over sag.chunks.tsv: score(c) = sum over query terms t of '
    'qtf(t) * idf(t) * tf / (tf + k1 * (1 - b + b * token_count / avgdl)), idf(t) = ln(1 + (N - df + 0.5) / '
    '(df + 0.5)); N, df, avgdl over the searched sources (NULL = all); qtf = how often t is in the query.  '
    'query_tokens: pre-segmented, lower-cased tokens as in chunks.tokens.  Exact top_k, ties by chunk_id, found '
    'with the GIN index and MaxScore pruning.  tf is capped at 255 (to_tsvector keeps 255 positions per lexeme). '
    'chunk_filter (NULL = none): only those chunks are returned; the statistics stay those of the sources.  '
    'max_postings (NULL = exact): stop taking in new chunks once the terms scanned hold that many (rarest '
    'terms first, at least one term): the chunks found are scored exactly on every term, chunks holding only '
    'the common terms left are missed, like Elasticsearch''s common-terms cutoff.  skip_common: terms held by at '
    'least half the chunks (Robertson-Sparck Jones weight ln((N - df + 0.5) / (df + 0.5)) <= 0: no evidence of '
    'relevance) bring no chunks in, unless no other term does; they still count in the scores.';

-- The query's own chunks (sag-algorithm §2.4 step 2, "Query找Content": vector + BM25), each with s(c, Q).
create or replace function sag.query_chunks(
    query_embedding @extschema:vector@.vector,
    query_tokens text[],
    source_ids bigint[] default null,
    vector_limit integer default 50,
    text_limit integer default 50,
    text_weight float8 default 0.85,
    chunk_filter bigint[] default null,
    text_max_postings integer default 2000,
    similarity_floor float8 default 0)
returns table (chunk_id bigint, similarity float8, text_score float8, s float8, via_vector boolean,
               via_text boolean)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
set plan_cache_mode = force_generic_plan
as $$
declare
    qh @extschema:vector@.halfvec := query_embedding::@extschema:vector@.halfvec;  -- the columns' type, cast once (not per row)
    v_ids bigint[] := '{}';
    v_sim float8[] := '{}';
    t_ids bigint[] := '{}';
    t_scores float8[] := '{}';
    missing bigint[];
    m_ids bigint[] := '{}';
    m_sim float8[] := '{}';
begin
    if (query_embedding is not null) is not true then
        raise exception using errcode = '22023', message = 'sag.query_chunks: query_embedding must not be NULL';
    end if;
    if (similarity_floor >= 0 and similarity_floor < 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.query_chunks: similarity_floor must be in [0, 1), got %s',
                                               similarity_floor);
    end if;
    if (vector_limit >= 0) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.query_chunks: vector_limit must be >= 0, got %s', vector_limit);
    end if;
    if (text_limit >= 0) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.query_chunks: text_limit must be >= 0, got %s', text_limit);
    end if;
    if (text_weight >= 0 and text_weight <= 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.query_chunks: text_weight must be in [0, 1], got %s',
                                               text_weight);
    end if;
    -- Each list read on its own, then the cosine of the BM25-only chunks in one lookup by (source, id): every
    -- statement reads one table, as Citus routes it to the workers holding the sources.
    if vector_limit > 0 then
        select coalesce(array_agg(d.chunk_id), '{}'), coalesce(array_agg(d.similarity), '{}') into v_ids, v_sim
          from sag.dense_chunks(query_embedding, source_ids, vector_limit, chunk_filter) d;
    end if;
    if text_limit > 0 then
        select coalesce(array_agg(t.chunk_id), '{}'), coalesce(array_agg(t.score), '{}') into t_ids, t_scores
          from sag.bm25_chunks(query_tokens, source_ids, text_limit, chunk_filter => chunk_filter,
                               max_postings => text_max_postings, skip_common => text_max_postings is not null) t;
    end if;
    missing := array(select unnest(t_ids) except select unnest(v_ids));
    if cardinality(missing) > 0 then
        select coalesce(array_agg(ch.id), '{}'),
               coalesce(array_agg(greatest(0, 1 - coalesce(nullif(ch.embedding operator(@extschema:vector@.<=>) qh, 'NaN'), 1))), '{}')
          into m_ids, m_sim
          from sag.chunks ch
         where (source_ids is null or ch.source_id = any (source_ids)) and ch.id = any (missing);
    end if;
    return query
    with merged as (
        select m.chunk_id, max(m.similarity) as similarity, max(m.bm25) as bm25,
               bool_or(m.via_vector) as via_vector, bool_or(m.via_text) as via_text
          from (select v.chunk_id, v.similarity, null::float8 as bm25, true as via_vector, false as via_text
                  from unnest(v_ids, v_sim) v(chunk_id, similarity)
                union all
                select t.chunk_id, null, t.score, false, true from unnest(t_ids, t_scores) t(chunk_id, score)) m
         group by m.chunk_id
    ),
    scored as (
        select mg.chunk_id,
               -- dense_chunks computed the cosine already; the BM25-only chunks got it exactly above.  Then
               -- above the floor: greatest(0, (cosine - floor) / (1 - floor)).
               greatest(0, (coalesce(mg.similarity, ms.similarity) - similarity_floor)
                           / (1 - similarity_floor)) as similarity,
               coalesce(mg.bm25 / nullif(max(mg.bm25) over (), 0), 0) as text_score,
               mg.via_vector, mg.via_text
          from merged mg
          left join unnest(m_ids, m_sim) ms(chunk_id, similarity) on ms.chunk_id = mg.chunk_id
    )
    select x.chunk_id, x.similarity, x.text_score,
           (1 - text_weight) * x.similarity + text_weight * x.text_score as s, x.via_vector, x.via_text
      from scored x
     order by 4 desc, 1;
end;
$$;
comment on function sag.query_chunks(@extschema:vector@.vector, text[], bigint[], integer, integer, float8, bigint[], integer, float8) is
    'The query''s own chunks (sag-algorithm §2.4 step 2): sag.dense_chunks (vector_limit) + sag.bm25_chunks '
    '(text_limit), each with similarity = cosine with the query above similarity_floor (greatest(0, (cosine - '
    'floor) / (1 - floor)), sag.similarity_floors; 0 = the plain cosine), text_score = bm25 / the largest bm25 of the list '
    '(0 outside it) and s(c, Q) = (1 - text_weight) * similarity + text_weight * text_score.  Ordered by s. '
    'They seed stage 1 (sag.activate_keys: pseudo-relevance feedback and BM25 events) and are candidates of '
    'stage 3 (sag.rank_chunks).  chunk_filter (NULL = none): only those chunks.  text_max_postings: the '
    'posting budget of sag.bm25_chunks (NULL = exact BM25), which bounds the cost on big corpora; with a budget, '
    'terms in half the chunks or more bring no chunks in either (sag.bm25_chunks'' skip_common).';

create or replace function sag.rank_chunks(
    query_embedding @extschema:vector@.vector,
    query_tokens text[],
    key_ids bigint[],
    key_weights float8[],
    key_steps integer[],
    source_ids bigint[] default null,
    vector_limit integer default 50,
    text_limit integer default 50,
    key_chunk_limit integer default 100,
    text_weight float8 default 0.85,
    chunk_ids bigint[] default null,
    chunk_similarities float8[] default null,
    chunk_text_scores float8[] default null,
    chunk_via_vector boolean[] default null,
    chunk_filter bigint[] default null,
    key_weight float8 default 1,
    similarity_floor float8 default 0,
    lexical_redundancy float8 default 1)
returns table (chunk_id bigint, similarity float8, text_score float8, s float8, key_score float8,
               weight_init float8, via_keys boolean, via_vector boolean, via_text boolean, document_id bigint)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
set plan_cache_mode = force_generic_plan
as $$
declare
    qh @extschema:vector@.halfvec := query_embedding::@extschema:vector@.halfvec;  -- the columns' type, cast once (not per row)
    srcs bigint[] := coalesce(source_ids, array(select x.id from sag.sources x order by x.id));
    kf_sources bigint[];
    kf_ids bigint[];
    kf_w float8[];
    kf_steps integer[];
    ks_ids bigint[];
    ks_scores float8[];
    m_ids bigint[];
    m_sim float8[];
    m_ts float8[];
    m_ks float8[];
    m_vk boolean[];
    m_vv boolean[];
    m_vt boolean[];
    c_ids bigint[];
    c_documents bigint[];
    c_sim float8[];
begin
    if (query_embedding is not null) is not true then
        raise exception using errcode = '22023', message = 'sag.rank_chunks: query_embedding must not be NULL';
    end if;
    if (similarity_floor >= 0 and similarity_floor < 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.rank_chunks: similarity_floor must be in [0, 1), got %s',
                                               similarity_floor);
    end if;
    if (cardinality(coalesce(key_ids, '{}')) = cardinality(coalesce(key_weights, '{}'))
        and cardinality(coalesce(key_ids, '{}')) = cardinality(coalesce(key_steps, '{}'))) is not true then
        raise exception using errcode = '22023',
                              message = 'sag.rank_chunks: key_ids, key_weights and key_steps must have the same length';
    end if;
    if (lexical_redundancy >= 0 and lexical_redundancy <= 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.rank_chunks: lexical_redundancy must be in [0, 1], got %s',
                                               lexical_redundancy);
    end if;
    if (not exists (select 1 from unnest(key_steps) st where st is null or st < 1)) is not true then
        raise exception using errcode = '22023', message = 'sag.rank_chunks: key_steps must be >= 1';
    end if;
    if (vector_limit >= 0) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.rank_chunks: vector_limit must be >= 0, got %s', vector_limit);
    end if;
    if (text_limit >= 0) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.rank_chunks: text_limit must be >= 0, got %s', text_limit);
    end if;
    if (key_chunk_limit >= 0) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.rank_chunks: key_chunk_limit must be >= 0, got %s',
                                               key_chunk_limit);
    end if;
    if (text_weight >= 0 and text_weight <= 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.rank_chunks: text_weight must be in [0, 1], got %s', text_weight);
    end if;
    if (chunk_ids is null
        or (cardinality(chunk_ids) = cardinality(coalesce(chunk_similarities, '{}')) and cardinality(chunk_ids) = cardinality(coalesce(chunk_text_scores, '{}')) and (chunk_via_vector is null or cardinality(chunk_ids) = cardinality(chunk_via_vector)))) is not true then
        raise exception using errcode = '22023',
                              message = 'sag.rank_chunks: chunk_ids, chunk_similarities, chunk_text_scores (and chunk_via_vector) '
                                                      'must have the same length';
    end if;
    -- In steps, each a statement that reads the per-source tables by source or reads none (on Citus each
    -- runs on the workers holding the sources, for one or several; one PostgreSQL runs the same steps).
    -- key-final, restricted to the sources; duplicates merged (largest weight, first step).
    select coalesce(array_agg(x.source_id), '{}'), coalesce(array_agg(x.key_id), '{}'), coalesce(array_agg(x.w), '{}'),
           coalesce(array_agg(x.step), '{}')
      into kf_sources, kf_ids, kf_w, kf_steps
      from (select k.source_id, u.key_id, max(u.w) as w, min(u.step) as step
              from unnest(key_ids, key_weights, key_steps) as u(key_id, w, step)
              join sag.keys k on k.source_id = any (srcs) and k.id = u.key_id
             where u.w > 0
             group by k.source_id, u.key_id) x;
    -- sum over the keys of key-final in c of W(k) * ln(1 + count(k, c)) / step(k)
    select coalesce(array_agg(x.chunk_id), '{}'), coalesce(array_agg(x.key_score), '{}') into ks_ids, ks_scores
      from (select ck.chunk_id, sum(kf.w * ln(1 + ck.count) / kf.step) as key_score
              from unnest(kf_sources, kf_ids, kf_w, kf_steps) as kf(source_id, key_id, w, step)
              join sag.chunk_keys ck on ck.source_id = any (srcs) and ck.source_id = kf.source_id and ck.key_id = kf.key_id
              join sag.chunks c on c.source_id = any (srcs) and c.source_id = ck.source_id and c.id = ck.chunk_id
             where (chunk_filter is null or c.id = any (chunk_filter))
             group by ck.chunk_id) x;
    -- content-query-related: given (from sag.query_chunks), or searched here.
    if chunk_ids is null then
        select coalesce(array_agg(q.chunk_id), '{}'), coalesce(array_agg(q.similarity), '{}'),
               coalesce(array_agg(q.text_score), '{}'), coalesce(array_agg(q.via_vector), '{}')
          into chunk_ids, chunk_similarities, chunk_text_scores, chunk_via_vector
          from sag.query_chunks(query_embedding, query_tokens, source_ids, vector_limit, text_limit, text_weight,
                                chunk_filter, similarity_floor => similarity_floor) q;
    end if;
    -- One row per candidate (a chunk found by keys, vector or text), with its key_score: a single aggregate
    -- instead of joins, whose row estimates over function results are meaningless.
    select coalesce(array_agg(m.chunk_id), '{}'), coalesce(array_agg(m.similarity), '{}'),
           coalesce(array_agg(m.text_score), '{}'), coalesce(array_agg(m.key_score), '{}'),
           coalesce(array_agg(m.via_keys), '{}'), coalesce(array_agg(m.via_vector), '{}'),
           coalesce(array_agg(m.via_text), '{}')
      into m_ids, m_sim, m_ts, m_ks, m_vk, m_vv, m_vt
      from (select m.chunk_id, max(m.similarity) as similarity, max(m.text_score) as text_score,
                   max(m.key_score) as key_score,
                   bool_or(m.via_keys) as via_keys, bool_or(m.via_vector) as via_vector, bool_or(m.via_text) as via_text
              from (-- content-key-related, at most key_chunk_limit chunks: those with the highest key_score
                    select b.chunk_id, null::float8 as similarity, null::float8 as text_score, null::float8 as key_score,
                           true as via_keys, false as via_vector, false as via_text
                      from (select ks.chunk_id from unnest(ks_ids, ks_scores) as ks(chunk_id, key_score)
                             order by ks.key_score desc, ks.chunk_id limit key_chunk_limit) b
                    union all
                    select g.chunk_id, g.sim, g.ts, null, false, coalesce(g.vv, false), coalesce(g.ts, 0) > 0
                      from unnest(chunk_ids, chunk_similarities, chunk_text_scores, chunk_via_vector)
                           as g(chunk_id, sim, ts, vv)
                    union all
                    select ks.chunk_id, null, null, ks.key_score, false, false, false
                      from unnest(ks_ids, ks_scores) as ks(chunk_id, key_score)) m
             group by m.chunk_id
            having bool_or(m.via_keys or m.via_vector or m.via_text)) m;
    -- The candidates' documents, and the cosine of those found by keys only (the query's chunks come with it).
    select coalesce(array_agg(ch.id), '{}'), coalesce(array_agg(ch.document_id), '{}'),
           coalesce(array_agg(greatest(0, (1 - coalesce(nullif(ch.embedding operator(@extschema:vector@.<=>) qh, 'NaN'), 1) - similarity_floor) / (1 - similarity_floor))), '{}')
      into c_ids, c_documents, c_sim
      from sag.chunks ch
     where ch.source_id = any (srcs) and ch.id = any (m_ids)
       and (chunk_filter is null or ch.id = any (chunk_filter));
    return query
    with scored as (
        select mg.chunk_id, coalesce(mg.similarity, ch.similarity) as similarity,
               coalesce(mg.text_score, 0) as text_score,
               coalesce(mg.key_score, 0) as key_score,
               mg.via_keys, mg.via_vector, mg.via_text, ch.document_id
          from unnest(m_ids, m_sim, m_ts, m_ks, m_vk, m_vv, m_vt)
               as mg(chunk_id, similarity, text_score, key_score, via_keys, via_vector, via_text)
          join unnest(c_ids, c_documents, c_sim) as ch(id, document_id, similarity) on ch.id = mg.chunk_id
    )
    -- In s the cosine stands beside text_score, which is relative to the best BM25 chunk (1 for it).  A cosine
    -- that is a witness of its own (a semantic embedder, lexical redundancy 0) goes on the same scale:
    -- relative to the best cosine among the candidates.  One that only repeats the words (the hash embedder,
    -- redundancy 1) stays as it is, below BM25's scale.  In between, the mix of the two.
    select x.chunk_id, x.similarity, x.text_score, x.s, x.key_score,
           0.5 * x.s + key_weight * ln(1 + x.key_score) as weight_init,
           x.via_keys, x.via_vector, x.via_text, x.document_id
      from (select sc.*,
                   (1 - text_weight)
                     * (lexical_redundancy * sc.similarity
                        + (1 - lexical_redundancy) * coalesce(sc.similarity / nullif(max(sc.similarity) over (), 0), 0))
                   + text_weight * sc.text_score as s
              from scored sc) x
     order by 6 desc, 1;
end;
$$;
comment on function sag.rank_chunks(@extschema:vector@.vector, text[], bigint[], float8[], integer[], bigint[], integer, integer, integer,
                                    float8, bigint[], float8[], float8[], boolean[], bigint[], float8, float8,
                                    float8) is
    'Stage 3 (sag-algorithm §2.4): initial chunk weights.  Candidates = chunks of key-final (chunk_keys; at most '
    'key_chunk_limit, highest key_score first) + the query''s chunks (given as chunk_ids/chunk_similarities/'
    'chunk_text_scores/chunk_via_vector from sag.query_chunks, else searched: vector_limit dense, text_limit BM25). '
    's = (1 - text_weight) * sim + text_weight * bm25(c) / max bm25 of the BM25 list (0 outside it), sim = r * '
    'cosine(c, Q) + (1 - r) * cosine(c, Q) / the largest cosine of the candidates, r = lexical_redundancy (1 = '
    'the plain cosine; sag.retrieve passes the embedder''s, sag.calibrate_similarity); '
    'key_score = sum over k in c and key-final of W(k) * ln(1 + count(k, c)) / step(k); weight_init = 0.5 * s + '
    'key_weight * ln(1 + key_score) (sag.retrieve: 1 - the question''s coverage, sag.question_coverage).  Ordered by weight_init (ties by chunk_id), each with its document_id; no PageRank here.  chunk_filter (NULL = '
    'none): only those chunks are candidates.  Cosines of the key chunks are taken above similarity_floor as in '
    'sag.query_chunks.';

-- How much of a question one chunk already answers: the largest share of the question's information (the
-- BM25 idf of its distinct terms, those no chunk holds included) that a single one of the given chunks holds.  A question whose terms all stand
-- in one passage (a single fact) is answered there, and the key graph only reshuffles passages of the same
-- story; a question whose terms spread over several documents (multi-hop) needs the keys to reach the rest.
-- Measured on the development sets (top 3 BM25 chunks, median): rgb-zh 0.84, HotpotQA 0.57, MuSiQue 0.41.
create or replace function sag.question_coverage(query_tokens text[], chunk_ids bigint[],
                                                 source_ids bigint[] default null)
returns float8
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    n float8;
    terms text[];
    idfs float8[];
    share float8;
    total float8;
begin
    select c.n into n from sag.bm25_corpus(source_ids) c;
    if coalesce(n, 0) = 0 or cardinality(chunk_ids) is null or cardinality(chunk_ids) = 0 then
        return 0;
    end if;
    -- A term no chunk holds counts with the largest idf: no passage answers that part of the question.
    select array_agg(d.term), array_agg(ln(1 + (n - d.df + 0.5) / (d.df + 0.5)))
      into terms, idfs
      from sag.bm25_df(array(select distinct q.term from sag_internal._bm25_query_terms(query_tokens) q), source_ids) d;
    if terms is null then
        return 0;
    end if;
    -- The few chunks by primary key first: joined to the terms, the planner would scan every chunk.  Each
    -- chunk's share in one statement over the chunks of the sources, the largest then (on Citus the first
    -- runs on the workers holding the sources).
    total := (select sum(u.idf) from unnest(idfs) as u(idf));
    if coalesce(total, 0) <= 0 then
        return 0;
    end if;
    select max(x.held / total) into share
      from (select (select coalesce(sum(w.idf), 0)
                      from unnest(terms, idfs) as w(term, idf)
                     where c.tsv @@ sag_internal._lexeme_query(w.term)) as held
              from sag.chunks c
             where (source_ids is null or c.source_id = any (source_ids)) and c.id = any (chunk_ids)) x;
    return coalesce(share, 0);
end;
$$;
comment on function sag.question_coverage(text[], bigint[], bigint[]) is
    'The largest share of the question''s information (sum of BM25 idf over its distinct terms) that one of '
    'chunk_ids holds, in [0, 1].  sag.retrieve weighs the key evidence of stage 3 by 1 - coverage of the top '
    'BM25 chunks: a question one passage answers needs no hop.';
