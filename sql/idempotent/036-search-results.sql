-- What a search returns, after sag.retrieve (034-search.sql).  Re-applied on every upgrade.
--
--   sag.spread_documents:      the final order: one document's repeats count less, the direct matches kept
--                              near the top.
--   sag_internal._search_hits: that order and the top chunks' details, for the Python client (which ranks the
--                              candidates with PageRank first).
--   sag.search:                psql's search: sag.retrieve, then the top_n chunks by weight_init with their
--                              documents.

drop function if exists sag.search(text, integer, text);
drop function if exists sag.spread_documents(bigint[], float8[]);
drop function if exists sag.spread_documents(bigint[], float8[], bigint[], integer);  -- gained document_ids

-- Diminishing returns per document: the n-th best chunk of a document counts 1/n of its score.  A top
-- list of five chunks of the document a question starts from holds the same facts five times and leaves out
-- the document its second hop leads to; host crowding in web search answers the same problem.  1/n has no
-- parameter and keeps the order of a document's own chunks.  Ties keep the given order.
-- Then the pinned chunks (sag.retrieve's direct_matches) whose document has no chunk among the first
-- pinned_within places move up, in the given order, to just before place pinned_within: the places above stay
-- the graph's (a two-hop question needs both its documents there; pinned_within 2 cost MuSiQue R@2 4 points).
-- document_ids: each chunk's document when the caller has them (sag.retrieve returns them), else looked up.
create or replace function sag.spread_documents(chunk_ids bigint[], scores float8[], pinned bigint[] default '{}',
                                                pinned_within integer default 3, document_ids bigint[] default null)
returns table (chunk_id bigint, score float8)
language sql stable
set search_path = pg_catalog, sag, public, pg_temp
as $$
    with spread as (
        select x.chunk_id, x.document_id, x.score, row_number() over (order by x.score desc, x.n) as place
          from (select y.chunk_id, y.n, y.document_id,
                       y.score / row_number() over (partition by y.document_id order by y.score desc, y.n) as score
                  from (select u.chunk_id, u.n, u.score, u.document_id
                          from unnest(chunk_ids, scores, document_ids) with ordinality as u(chunk_id, score, document_id, n)
                         where document_ids is not null and u.document_id is not null
                        union all  -- (two branches: a one-time filter each, no lookup when the documents are given)
                        select u.chunk_id, u.n, u.score, c.document_id
                          from unnest(chunk_ids, scores) with ordinality as u(chunk_id, score, n)
                          join sag.chunks c on c.id = u.chunk_id
                         where document_ids is null) y) x),
    moved as (
        select p.chunk_id, row_number() over (order by p.n) as k
          from (select u.chunk_id, min(u.n) as n
                  from unnest(coalesce(pinned, '{}')) with ordinality as u(chunk_id, n) group by u.chunk_id) p
          join spread s on s.chunk_id = p.chunk_id
         where coalesce(pinned_within, 0) >= 1
           and not exists (select 1 from spread t where t.document_id = s.document_id and t.place <= pinned_within))
    select s.chunk_id, s.score
      from spread s left join moved m on m.chunk_id = s.chunk_id
     order by case when m.k is null then s.place::float8
                   else pinned_within - 1 + m.k::float8 / ((select count(*) from moved) + 1) end
$$;
comment on function sag.spread_documents(bigint[], float8[], bigint[], integer, bigint[]) is
    'The final order of a search: each chunk''s score divided by its rank among the given chunks of its own '
    'document (1 for the best, 2 for the second, ...), best first, ties in the given order; then each chunk of '
    'pinned (sag.retrieve''s direct_matches) whose document has no chunk in the first pinned_within places '
    'moves up to just before place pinned_within, in pinned''s order (pinned_within 0: no move).  document_ids: '
    'each chunk''s document, as sag.retrieve returns them (NULL: looked up; a chunk that is no more is left out).  '
    'Used by sag.search (on weight_init) and by the Python client (on the PageRank scores).';

-- The details of a search's top chunks, for a client that ranks the candidates itself (the Python client:
-- PageRank over sag.retrieve's graph): the final order of the given (chunk id, score) pairs (sag.spread_documents
-- with the pins, or as given when spread is false), then the first top_n with their score, document, events and
-- keys (each key's key-final weight and step when it has one), and key-final's details.  One statement planned
-- once a session (plpgsql, generic plan): planned at every call it cost 0.5 ms.
create or replace function sag_internal._search_hits(
    chunk_ids bigint[], scores float8[], document_ids bigint[], key_ids bigint[], key_weights float8[],
    key_steps integer[], top_n integer, spread boolean, pinned bigint[], pinned_within integer)
returns table (hits json, keys json)
language plpgsql stable
set search_path = pg_catalog, sag, public, pg_temp
set plan_cache_mode = force_generic_plan
as $$
begin
    return query
    with kf as (select * from unnest(key_ids, key_weights, key_steps) as u(id, weight, step)),
    ranked as (
        select s.chunk_id, s.score, s.n
          from sag.spread_documents(chunk_ids, scores, pinned => pinned, pinned_within => pinned_within,
                                    document_ids => document_ids) with ordinality as s(chunk_id, score, n)
         where spread
        union all
        select u.chunk_id, u.score, u.n
          from unnest(chunk_ids, scores) with ordinality as u(chunk_id, score, n)
         where not spread),
    t as (select r.chunk_id as id, r.score, r.n from ranked r order by r.n limit top_n)
    select
      (select coalesce(json_agg(json_build_object(
                  'chunk_id', c.id, 'score', t.score, 'uri', d.uri, 'document_title', d.title, 'title', c.title,
                  'content', c.content,
                  'events', (select coalesce(json_agg(json_build_object(
                                     'id', e.id, 'title', e.title, 'content', e.content, 'time', e.event_time)
                                     order by e.ordinal, e.id), '[]'::json)
                               from sag.events e where e.chunk_id = c.id),
                  'keys', (select coalesce(json_agg(json_build_object(
                                   'id', k.id, 'type', k.type, 'name', k.name, 'count', ck.count,
                                   'weight', kf.weight, 'step', kf.step)
                                   order by kf.weight desc nulls last, ck.count desc, k.id), '[]'::json)
                             from sag.chunk_keys ck join sag.keys k on k.id = ck.key_id
                             left join kf on kf.id = k.id
                            where ck.chunk_id = c.id))
              order by t.n), '[]'::json)
         from t
         join sag.chunks c on c.id = t.id
         join sag.documents d on d.id = c.document_id),
      (select coalesce(json_agg(json_build_object(
                  'id', k.id, 'type', k.type, 'name', k.name,
                  'value', coalesce(to_json(k.value_string), to_json(k.value_number), to_json(k.value_bool)))),
                  '[]'::json)
         from sag.keys k where k.id in (select kf.id from kf));
end;
$$;

-- The question's vector for a psql entry point (sag.search, sag.local_context): the given one, else
-- sag.embed_hash of the question, which only a database bound to the hash embedder accepts (22023 otherwise,
-- naming the caller, with `hint`).
create or replace function sag_internal._psql_query_embedding(query text, query_embedding vector, caller text, hint text)
returns vector
language plpgsql stable
set search_path = pg_catalog, sag, public, pg_temp
as $$
declare
    bound jsonb;
begin
    if query_embedding is not null then
        return query_embedding;
    end if;
    bound := sag.bound_embedder();
    if bound is null or coalesce(bound->>'name', '') not like 'hash%' then
        raise exception using errcode = '22023',
            message = format('%s embeds the query with sag.embed_hash, but this database''s embedder is %s',
                             caller, coalesce(bound->>'name', 'not bound yet')),
            hint = hint;
    end if;
    return sag.embed_hash(query, (bound->>'dimension')::integer);
end;
$$;

create or replace function sag.search(
    query text,
    top_n integer default 10,
    source text default 'default',
    query_embedding vector default null)
returns table (document text, chunk_id bigint, title text, content text, score float8)
language plpgsql stable
set search_path = pg_catalog, sag, public, pg_temp
as $$
declare
    sids bigint[];
    result json;
    given boolean;
    expanded text;
    hint constant text := 'Pass query_embedding => a vector from your embedder, or search from Python (sag-pg search).';
begin
    if (top_n >= 1) is not true then
        raise exception using errcode = '22023', message = format('sag.search: top_n must be >= 1, got %s', top_n);
    end if;
    given := query_embedding is not null;
    query_embedding := sag_internal._psql_query_embedding(query, query_embedding, 'sag.search', hint);
    if source is not null then
        sids := sag.source_ids(array[source]);
    end if;
    expanded := sag.expand_question(query, sids);  -- the sources' synonyms, as the Python client does
    if expanded is distinct from query then
        query := expanded;
        if not given then
            query_embedding := sag_internal._psql_query_embedding(query, null, 'sag.search', hint);
        end if;
    end if;
    result := sag.retrieve(query, query_embedding, sids);
    return query
    select d.uri, c.id, coalesce(nullif(c.title, ''), d.title), c.content, x.score
      from sag.spread_documents(
               array(select (e.r ->> 'chunk_id')::bigint
                       from json_array_elements(result -> 'chunks') with ordinality as e(r, n) order by e.n),
               array(select (e.r ->> 'weight_init')::float8
                       from json_array_elements(result -> 'chunks') with ordinality as e(r, n) order by e.n),
               array(select d.v::bigint from json_array_elements_text(result -> 'direct_matches')
                                         with ordinality as d(v, n) order by d.n),
               document_ids => array(select (e.r ->> 'document_id')::bigint
                                       from json_array_elements(result -> 'chunks') with ordinality as e(r, n)
                                      order by e.n))
           with ordinality as x(chunk_id, score, n)
      join sag.chunks c on c.id = x.chunk_id
      join sag.documents d on d.id = c.document_id
     order by x.n
     limit top_n;
end;
$$;
comment on function sag.search(text, integer, text, vector) is
    'SAG search from psql: sag.retrieve, then the top_n chunks by weight_init spread over documents '
    '(sag.spread_documents: the n-th chunk of a document counts 1/n; score = that; the question''s direct matches '
    'kept among the first three places) (document = uri; title = the '
    'chunk''s, else the document''s).  No PageRank (the Python client adds it; without it, it returns these very '
    'chunks and scores).  source: a source name, ''default'' as everywhere in sag-pg; NULL = all sources; unknown '
    'name: P0002.  The question is searched as sag.expand_question gives it (the sources'' synonyms added).  '
    'query_embedding: the vector of that question from the database''s embedder; NULL embeds it with '
    'sag.embed_hash, which only a database bound to the hash embedder accepts (22023 otherwise).  '
    'Example: select * from sag.search(''who founded Apple'', 5);';
