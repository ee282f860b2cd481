-- The dense and hybrid baselines beside BM25 (sag.bm25_chunks in 031-retrieval-chunks.sql): what `sag-pg bench`
-- compares SAG with.  Re-applied on every upgrade.

create or replace function sag.dense_chunks(
    query_embedding @extschema:vector@.vector,
    source_ids bigint[] default null,
    top_k integer default 50,
    chunk_filter bigint[] default null)
returns table (chunk_id bigint, similarity float8)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
set plan_cache_mode = force_generic_plan
as $$
begin
    if (query_embedding is not null) is not true then
        raise exception using errcode = '22023', message = 'sag.dense_chunks: query_embedding must not be NULL';
    end if;
    if (top_k >= 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.dense_chunks: top_k must be >= 1, got %s', top_k);
    end if;
    return query
    select n.chunk_id, greatest(0, 1 - n.distance)
      from sag_internal._nearest_chunks(query_embedding, source_ids, top_k, chunk_filter) n
     order by n.distance, n.chunk_id;
end;
$$;
comment on function sag.dense_chunks(@extschema:vector@.vector, bigint[], integer, bigint[]) is
    'Dense retrieval (baseline): the top_k chunks nearest to the query embedding by the HNSW index on '
    'chunks.embedding, similarity = greatest(0, 1 - cosine distance).  source_ids NULL = all sources; '
    'chunk_filter (NULL = none): exact search over those chunks only.';

create or replace function sag.hybrid_chunks(
    query_embedding @extschema:vector@.vector,
    query_tokens text[],
    source_ids bigint[] default null,
    top_k integer default 50,
    rrf_k integer default 60,
    chunk_filter bigint[] default null)
returns table (chunk_id bigint, score float8)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
set plan_cache_mode = force_generic_plan
as $$
begin
    if (rrf_k >= 0) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.hybrid_chunks: rrf_k must be >= 0, got %s', rrf_k);
    end if;
    return query
    with dense as (
        select d.chunk_id, row_number() over (order by d.similarity desc, d.chunk_id) as r
          from sag.dense_chunks(query_embedding, source_ids, top_k, chunk_filter) d
    ),
    sparse as (
        select t.chunk_id, row_number() over (order by t.score desc, t.chunk_id) as r
          from sag.bm25_chunks(query_tokens, source_ids, top_k, chunk_filter => chunk_filter) t
    )
    select coalesce(dense.chunk_id, sparse.chunk_id),
           coalesce(1.0::float8 / (rrf_k + dense.r), 0) + coalesce(1.0::float8 / (rrf_k + sparse.r), 0) as score
      from dense full join sparse on sparse.chunk_id = dense.chunk_id
     order by 2 desc, 1
     limit top_k;
end;
$$;
comment on function sag.hybrid_chunks(@extschema:vector@.vector, text[], bigint[], integer, integer, bigint[]) is
    'Hybrid retrieval (baseline): reciprocal rank fusion of sag.dense_chunks and sag.bm25_chunks (top_k each): '
    'score = sum over the two lists of 1 / (rrf_k + rank), rank from 1; the top_k fused chunks.  chunk_filter '
    '(NULL = none) is passed to both.';
