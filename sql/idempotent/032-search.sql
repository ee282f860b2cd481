-- The whole SAG retrieval from psql: match_keys + query_chunks -> activate_keys -> expand_keys -> rank_chunks.
-- Re-applied on every upgrade.  The Python API (sag_pg.search.retrieve) adds PageRank on top.

-- Query tokens for BM25 from the query text: lower-cased \w+ words.  CJK text is not segmented here (a run
-- of ideographs is one token); the Python API passes jieba tokens instead.
create or replace function sag._query_tokens(query text)
returns text[]
language sql immutable parallel safe
set search_path = sag, public, pg_catalog
as $$
    select coalesce(array_agg(m[1]), '{}') from regexp_matches(lower(coalesce(query, '')), '\w+', 'g') as m
$$;

create or replace function sag.search_by_vector(
    query_embedding vector,
    query text,
    top_n integer default 10,
    source text default null,
    max_step integer default 3)
returns table (document text, chunk_id bigint, title text, content text, score float8)
language plpgsql stable
set search_path = sag, public, pg_catalog
as $$
declare
    sids bigint[];
    tokens text[] := sag._query_tokens(query);
    qc_ids bigint[];
    qc_sim float8[];
    qc_ts float8[];
    qc_vv boolean[];
    seed_ids bigint[];
    seed_w float8[];
    act_ids bigint[];
    act_w float8[];
    act_s integer[];
    kf_ids bigint[];
    kf_w float8[];
    kf_s integer[];
begin
    perform sag._require(query_embedding is not null, 'sag.search_by_vector: query_embedding must not be NULL');
    perform sag._require(top_n >= 1, format('sag.search_by_vector: top_n must be >= 1, got %s', top_n));
    if source is not null then
        select array[s.id] into sids from sag.sources s where s.name = source;
        if sids is null then
            raise exception using errcode = 'P0002', message = format('no source named %L', source),
                hint = 'List sources with: select name from sag.sources;';
        end if;
    end if;

    select array_agg(m.key_id order by m.similarity desc, m.key_id),
           array_agg(m.similarity order by m.similarity desc, m.key_id)
      into seed_ids, seed_w
      from sag.match_keys(query_embedding, sids) m;
    select array_agg(q.chunk_id), array_agg(q.similarity), array_agg(q.text_score), array_agg(q.via_vector)
      into qc_ids, qc_sim, qc_ts, qc_vv
      from sag.query_chunks(query_embedding, tokens, sids) q;
    select array_agg(a.key_id), array_agg(a.weight), array_agg(a.step) into act_ids, act_w, act_s
      from sag.activate_keys(query_embedding, seed_ids, seed_w, sids, chunk_ids => coalesce(qc_ids, '{}'),
                             chunk_similarities => coalesce(qc_sim, '{}'),
                             chunk_text_scores => coalesce(qc_ts, '{}')) a;
    select array_agg(e.key_id), array_agg(e.weight), array_agg(e.step) into kf_ids, kf_w, kf_s
      from sag.expand_keys(query_embedding, act_ids, act_w, act_s, sids, max_step) e;

    return query
    select d.uri, r.chunk_id, coalesce(nullif(c.title, ''), d.title), c.content, r.weight_init
      from sag.rank_chunks(query_embedding, tokens, kf_ids, kf_w, kf_s, sids, chunk_ids => coalesce(qc_ids, '{}'),
                           chunk_similarities => coalesce(qc_sim, '{}'), chunk_text_scores => coalesce(qc_ts, '{}'),
                           chunk_via_vector => coalesce(qc_vv, '{}')) r
      join sag.chunks c on c.id = r.chunk_id
      join sag.documents d on d.id = c.document_id
     order by r.weight_init desc, r.chunk_id
     limit top_n;
end;
$$;
comment on function sag.search_by_vector(vector, text, integer, text, integer) is
    'SAG search from psql with your own query embedding: sag.match_keys and sag.query_chunks -> sag.activate_keys '
    '-> sag.expand_keys (up to max_step) -> sag.rank_chunks, the top_n chunks by weight_init (document = uri; title = '
    'the chunk''s, else the document''s).  No PageRank here (the Python API adds it).  BM25 tokens are the '
    'lower-cased \w+ words of query: Chinese is not segmented in SQL.  source is a source name (NULL = all '
    'sources; unknown name: P0002).';

create or replace function sag.search(
    query text,
    top_n integer default 10,
    source text default null)
returns table (document text, chunk_id bigint, title text, content text, score float8)
language plpgsql stable
set search_path = sag, public, pg_catalog
as $$
declare
    bound jsonb := sag.bound_embedder();
begin
    if bound is null or coalesce(bound->>'name', '') not like 'hash%' then
        raise exception using errcode = '22023',
            message = format('sag.search embeds the query with sag.embed_hash, but this database''s embedder is %s',
                             coalesce(bound->>'name', 'not bound yet')),
            hint = 'Call sag.search_by_vector(query_embedding, query) with a vector from your embedder, '
                   'or search from Python (sag-pg search).';
    end if;
    return query
    select * from sag.search_by_vector(sag.embed_hash(query, (bound->>'dimension')::integer), query, top_n, source);
end;
$$;
comment on function sag.search(text, integer, text) is
    'SAG search entirely in SQL for databases bound to the offline hash embedder: embeds query with '
    'sag.embed_hash (dimension of the bound embedder) and calls sag.search_by_vector.  No PageRank.  Raises '
    '22023 if the database uses another embedder.  Example: select * from sag.search(''who founded Apple'', 5);';
