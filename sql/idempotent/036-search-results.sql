-- What a search returns, after sag.retrieve (034-search.sql).  Re-applied on every upgrade.
--
--   sag.spread_documents:      the final order: one document's repeats count less, the direct matches kept
--                              near the top.
--   sag.cover_question:        the order within the top list: each place to what the places above do not hold
--                              of the question yet.
--   sag_internal._search_hits: that order and the top chunks' details, for the Python client (which ranks the
--                              candidates with PageRank first).
--   sag.search:                psql's search: sag.retrieve, then the top_n chunks by weight_init with their
--                              documents.

drop function if exists sag.search(text, integer, text);
drop function if exists sag.search(text, integer, text, @extschema:vector@.vector);  -- gained profile
-- top_n bigint: psql reads 99999999999 as a bigint, and an integer top_n then matched no sag.search at all.
drop function if exists sag.search(text, integer, text, @extschema:vector@.vector, text);
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
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return query
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
                   else pinned_within - 1 + m.k::float8 / ((select count(*) from moved) + 1) end;
end
$$;
comment on function sag.spread_documents(bigint[], float8[], bigint[], integer, bigint[]) is
    'The final order of a search: each chunk''s score divided by its rank among the given chunks of its own '
    'document (1 for the best, 2 for the second, ...), best first, ties in the given order; then each chunk of '
    'pinned (sag.retrieve''s direct_matches) whose document has no chunk in the first pinned_within places '
    'moves up to just before place pinned_within, in pinned''s order (pinned_within 0: no move).  document_ids: '
    'each chunk''s document, as sag.retrieve returns them (NULL: looked up; a chunk that is no more is left out).  '
    'Used by sag.search (on weight_init) and by the Python client (on the PageRank scores).';

-- The order within a search's top list: each next place goes to the chunk that adds most of what the question
-- asks and the places above do not hold yet.  Greedily, from place 2 (place 1 stays the ranking's): a chunk is
-- worth the score its place holds times 1 + the share of the question's words (BM25 terms, each weighted by its
-- idf over the sources) that its document holds (its chunks in the list) and no chunk placed before it does.
-- A two-hop or comparison question asks about two things ("Which band was formed first, The Exies or Circus
-- Diablo?"); the ranking puts the
-- chunks about the first one on top, all alike, and the page about the second at place 3-5.  This is aspect
-- coverage as in xQuAD, with the question's words (not its function words) as its aspects and no parameter:
-- holding all of the question that is not covered yet counts as much as the score itself.  Only the order
-- changes, not which chunks are listed, so Recall@top_n stays; the direct matches (pinned) that were among the
-- first pinned_within places and fell below move back to just before place pinned_within, as
-- sag.spread_documents placed them.
create or replace function sag.cover_question(chunk_ids bigint[], scores float8[], query_terms text[],
                                              source_ids bigint[] default null, pinned bigint[] default '{}',
                                              pinned_within integer default 3)
returns table (chunk_id bigint, score float8)
language plpgsql stable
rows 10  -- as many as it is given, a top list: the planner's default of 1,000 made _search_hits scan chunks
set search_path = pg_catalog, sag, pg_temp
-- Planned once a session: as language sql this statement was planned at every call (0.3 ms).
set plan_cache_mode = force_generic_plan
as $$
declare
    corpus float8;
    aspect_terms text[];
    aspect_idfs float8[];
    held_n integer[];
    held_documents bigint[];
    held_terms text[];
begin
    -- The question's aspects, then the chunks' terms, each read on its own (on Citus every statement reading
    -- a distributed table is routed by source; the ranking below reads none).
    -- Function words ask for nothing: "what", "did", "where" are rare in passages, so their idf is high,
    -- and a chunk holding them would be taken for the question's other half.
    select c.n into corpus from sag.bm25_corpus(source_ids) c;
    select coalesce(array_agg(d.term), '{}'), coalesce(array_agg(ln(1 + (corpus - d.df + 0.5) / (d.df + 0.5))), '{}')
      into aspect_terms, aspect_idfs
      from sag.bm25_df(array(select t.term from sag_internal._bm25_query_terms(query_terms) t
                              where t.term <> all (sag_internal._embed_hash_stopwords())), source_ids) d
     where d.df > 0;
    -- Each chunk with the question's terms it holds (setweight marks them, ts_filter keeps them); a chunk
    -- deleted since the ranking is left out.
    select coalesce(array_agg(u.n::integer), '{}'), coalesce(array_agg(c.document_id), '{}'),
           coalesce(array_agg(x.term), '{}')
      into held_n, held_documents, held_terms
      from unnest(chunk_ids) with ordinality as u(chunk_id, n)
      join sag.chunks c on (source_ids is null or c.source_id = any (source_ids)) and c.id = u.chunk_id
      left join lateral unnest(tsvector_to_array(ts_filter(setweight(c.tsv, 'A', aspect_terms), '{a}'))) as x(term)
        on true;
    return query
    with recursive
    aspects as materialized (select a.term, a.idf from unnest(aspect_terms, aspect_idfs) as a(term, idf)),
    worth as (
        -- What each place is worth: the place's score in the given order, i.e. the n-th best score of the list
        -- (the pins placed some chunks above better-scored ones; that order is the ranking's).
        select w.score, row_number() over (order by w.score desc) as n from unnest(scores) as w(score)),
    held as materialized (
        select u.chunk_id, u.score, u.n::integer as n, w.score as worth, c.document_id, c.terms
          from unnest(chunk_ids, scores) with ordinality as u(chunk_id, score, n)
          join worth w on w.n = u.n
          join (select h.n, h.document_id, array_remove(array_agg(h.term), null) as terms
                  from unnest(held_n, held_documents, held_terms) as h(n, document_id, term)
                 group by h.n, h.document_id) c on c.n = u.n),
    listed as materialized (
        -- What a chunk brings is its document's: once a document has a place, its other chunks add nothing
        -- new (the demo's two-hop question put the first document's second chunk, holding more of the
        -- question's words, above the second hop's page).
        select h.chunk_id, h.score, h.n, h.worth,
               array(select distinct x.term from held o cross join unnest(o.terms) as x(term)
                      where o.document_id = h.document_id) as held
          from held h),
    total as (select nullif(sum(a.idf), 0) as idf from aspects a),
    placed (place, n, chosen, covered) as (
        -- (the first chunk listed: a chunk deleted since the ranking is left out, as sag.spread_documents does)
        (select 1, l.n, array[l.n], l.held from listed l order by l.n limit 1)
        union all
        select p.place + 1, b.n, p.chosen || b.n, p.covered || b.held
          from placed p
          cross join lateral (
              select l.n, l.held
                from listed l
               where l.n <> all (p.chosen)
               order by l.worth * (1 + coalesce((select sum(a.idf) from aspects a
                                                  where a.term = any (l.held) and a.term <> all (p.covered))
                                                / (select t.idf from total t), 0)) desc,
                        l.n
               limit 1) b),
    fallen as (
        -- Pinned chunks that were among the first pinned_within places and are no more.
        select p.n, row_number() over (order by p.place) as k
          from placed p join listed l on l.n = p.n
         where l.chunk_id = any (coalesce(pinned, '{}')) and l.n <= pinned_within and p.place > pinned_within)
    select l.chunk_id, l.score
      from placed p
      join listed l on l.n = p.n
      left join fallen f on f.n = p.n
     order by case when f.k is null then p.place::float8
                   else pinned_within - 1 + f.k::float8 / ((select count(*) from fallen) + 1) end;
end;
$$;
comment on function sag.cover_question(bigint[], float8[], text[], bigint[], bigint[], integer) is
    'The order within a search''s top list (chunk_ids with their scores, in the final order): place 1 stays; '
    'each next place goes to the chunk with the highest w * (1 + g), w = the score its place holds (the n-th '
    'best score of the list at place n), g = the idf-weighted share (idf over '
    'source_ids, NULL = all) of the question''s BM25 terms (query_terms, tokens as sag.query_terms gives them) '
    'that the chunk''s document holds (its chunks in the list) and no chunk placed before it does; ties in the '
    'given order.  Pinned chunks that were '
    'among the first pinned_within places and fell below move back to just before place pinned_within.  Same '
    'chunks and scores, another order; used by sag.search and the Python client after sag.spread_documents.';

-- The details of a search's top chunks, for a client that ranks the candidates itself (the Python client:
-- PageRank over sag.retrieve's graph): the final order of the given (chunk id, score) pairs (sag.spread_documents
-- with the pins, or as given when spread is false), its first top_n (ordered by sag.cover_question when cover is
-- true: query_terms and source_ids are its), with their score, document, events and
-- keys (each key's key-final weight and step when it has one), and key-final's details.  plpgsql with generic
-- plans, planned once a session: planned at every call the details' statement cost 0.5 ms.
drop function if exists sag_internal._search_hits(bigint[], float8[], bigint[], bigint[], float8[], integer[], integer,
                                                  boolean, bigint[], integer);  -- gained the question's terms
create or replace function sag_internal._search_hits(
    chunk_ids bigint[], scores float8[], document_ids bigint[], key_ids bigint[], key_weights float8[],
    key_steps integer[], top_n integer, spread boolean, pinned bigint[], pinned_within integer,
    query_terms text[], source_ids bigint[], cover boolean)
returns table (hits json, keys json)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
set plan_cache_mode = force_generic_plan
as $$
declare
    top_ids bigint[] := chunk_ids[1:top_n];
    top_scores float8[] := scores[1:top_n];
    srcs bigint[] := coalesce(source_ids, array(select s.id from sag.sources s order by s.id));
begin
    -- The top list in three plain statements: one statement with both ways as branches cost 0.5 ms more.
    if spread then
        select array_agg(s.chunk_id order by s.n), array_agg(s.score order by s.n) into top_ids, top_scores
          from (select x.chunk_id, x.score, x.n
                  from sag.spread_documents(chunk_ids, scores, pinned => pinned, pinned_within => pinned_within,
                                            document_ids => document_ids) with ordinality as x(chunk_id, score, n)
                 order by x.n limit top_n) s;
    end if;
    if cover then
        select array_agg(c.chunk_id order by c.n), array_agg(c.score order by c.n) into top_ids, top_scores
          from sag.cover_question(top_ids, top_scores, query_terms, source_ids, pinned => pinned,
                                  pinned_within => pinned_within) with ordinality as c(chunk_id, score, n);
    end if;
    return query
    with kf as (select * from unnest(key_ids, key_weights, key_steps) as u(id, weight, step)),
    t as (select u.id, u.score, u.n from unnest(top_ids, top_scores) with ordinality as u(id, score, n))
    select
      (select coalesce(json_agg(json_build_object(
                  'chunk_id', c.id, 'score', t.score, 'uri', d.uri, 'document_title', d.title, 'title', c.title,
                  'content', c.content,
                  'events', (select coalesce(json_agg(json_build_object(
                                     'id', e.id, 'title', e.title, 'content', e.content, 'time', e.event_time)
                                     order by e.ordinal, e.id), '[]'::json)
                               from sag.events e
                              where e.source_id = any (srcs) and e.source_id = c.source_id and e.chunk_id = c.id),
                  'keys', (select coalesce(json_agg(json_build_object(
                                   'id', k.id, 'type', k.type, 'name', k.name, 'count', ck.count,
                                   'weight', kf.weight, 'step', kf.step)
                                   order by kf.weight desc nulls last, ck.count desc, k.id), '[]'::json)
                             from sag.chunk_keys ck
                             join sag.keys k on k.source_id = any (srcs) and k.source_id = ck.source_id and k.id = ck.key_id
                             left join kf on kf.id = k.id
                            where ck.source_id = any (srcs) and ck.source_id = c.source_id and ck.chunk_id = c.id))
              order by t.n), '[]'::json)
         from t
         join sag.chunks c on c.source_id = any (srcs) and c.id = t.id
         join sag.documents d on d.source_id = any (srcs) and d.source_id = c.source_id and d.id = c.document_id),
      (select coalesce(json_agg(json_build_object(
                  'id', k.id, 'type', k.type, 'name', k.name,
                  'value', coalesce(to_json(k.value_string), to_json(k.value_number), to_json(k.value_bool)))),
                  '[]'::json)
         from sag.keys k where k.source_id = any (srcs) and k.id = any (key_ids));
end;
$$;

-- The question's vector for a psql entry point (sag.search, sag.local_context): the given one, else
-- sag.embed_hash of the question, which only a database bound to the hash embedder accepts (22023 otherwise,
-- naming the caller, with `hint`).
create or replace function sag_internal._psql_query_embedding(query text, query_embedding @extschema:vector@.vector, caller text, hint text)
returns @extschema:vector@.vector
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
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
    top_n bigint default 10,
    source text default 'default',
    query_embedding @extschema:vector@.vector default null,
    profile text default 'default')
returns table (document text, chunk_id bigint, title text, content text, score float8)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    sids bigint[];
    result json;
    given boolean;
    expanded text;
    pins bigint[];
    top_ids bigint[];
    top_scores float8[];
    srcs bigint[];
    hint constant text := 'Pass query_embedding => a vector from your embedder, or search from Python (sag-pg search).';
begin
    perform sag_internal._check_question(query, 'sag.search');  -- refused before it is embedded
    if (top_n between 1 and 10000) is not true then  -- sag_pg.limits.MAX_TOP_N, as for the Python client
        raise exception using errcode = '22023',
            message = format('sag.search: top_n must be from 1 to 10000, got %s', coalesce(top_n::text, 'NULL'));
    end if;
    given := query_embedding is not null;
    query_embedding := sag_internal._psql_query_embedding(query, query_embedding, 'sag.search', hint);
    if source is not null then
        begin
            sids := sag.source_ids(array[source]);
        exception when no_data_found then  -- psql shows this line first: name the function the user called
            raise exception using errcode = 'P0002', message = format('sag.search: no source named %L', source),
                hint = 'Pass source => one of: ' || coalesce((select string_agg(quote_literal(s.name), ', '
                                                               order by s.name) from sag.sources s), 'none yet')
                       || ' (or NULL for all sources).';
        end;
    end if;
    expanded := sag.expand_question(query, sids);  -- the sources' synonyms, as the Python client does
    if expanded is distinct from query then
        query := expanded;
        if not given then
            query_embedding := sag_internal._psql_query_embedding(query, null, 'sag.search', hint);
        end if;
    end if;
    result := sag.retrieve(query, query_embedding, sids, profile => profile);
    srcs := coalesce(sids, array(select s.id from sag.sources s order by s.id));
    if profile = 'seed' then
        -- The seed's order (sag-algorithm §2.4; psql has no PageRank): weight_init, the top_n, nothing moved.
        select coalesce(array_agg((x.r ->> 'chunk_id')::bigint order by x.n), '{}'),
               coalesce(array_agg((x.r ->> 'weight_init')::float8 order by x.n), '{}')
          into top_ids, top_scores
          from json_array_elements(result -> 'chunks') with ordinality as x(r, n)
         where x.n <= top_n;
    else
        pins := array(select d.v::bigint from json_array_elements_text(result -> 'direct_matches')
                                          with ordinality as d(v, n) order by d.n);
        -- The top list, then its chunks: each step a statement of its own (on Citus a function reading tables is
        -- never called inside a statement over distributed tables).
        select coalesce(array_agg(x.chunk_id order by x.n), '{}'), coalesce(array_agg(x.score order by x.n), '{}')
          into top_ids, top_scores
          from (select x.chunk_id, x.score, x.n
                  from sag.spread_documents(
                           array(select (e.r ->> 'chunk_id')::bigint
                                   from json_array_elements(result -> 'chunks') with ordinality as e(r, n) order by e.n),
                           array(select (e.r ->> 'weight_init')::float8
                                   from json_array_elements(result -> 'chunks') with ordinality as e(r, n) order by e.n),
                           pins,
                           document_ids => array(select (e.r ->> 'document_id')::bigint
                                                   from json_array_elements(result -> 'chunks') with ordinality as e(r, n)
                                                  order by e.n))
                       with ordinality as x(chunk_id, score, n)
                 order by x.n
                 limit top_n) x;
        select coalesce(array_agg(x.chunk_id order by x.n), '{}'), coalesce(array_agg(x.score order by x.n), '{}')
          into top_ids, top_scores
          from sag.cover_question(top_ids, top_scores, array(select json_array_elements_text(result -> 'terms')), sids,
                                  pins) with ordinality as x(chunk_id, score, n);
    end if;
    return query
    select d.uri, c.id, coalesce(nullif(c.title, ''), d.title), c.content, x.score
      from unnest(top_ids, top_scores) with ordinality as x(chunk_id, score, n)
      join sag.chunks c on c.source_id = any (srcs) and c.id = x.chunk_id
      join sag.documents d on d.source_id = any (srcs) and d.source_id = c.source_id and d.id = c.document_id
     order by x.n;

end;
$$;
comment on function sag.search(text, bigint, text, @extschema:vector@.vector, text) is
    'SAG search from psql: sag.retrieve, then the top_n chunks by weight_init spread over documents '
    '(sag.spread_documents: the n-th chunk of a document counts 1/n; score = that; the question''s direct matches '
    'kept among the first three places), in the order of sag.cover_question (what each chunk adds to the places '
    'above) (document = uri; title = the '
    'chunk''s, else the document''s).  No PageRank (the Python client adds it; without it, it returns these very '
    'chunks and scores).  source: a source name, ''default'' as everywhere in sag-pg; NULL = all sources; unknown '
    'name: P0002.  The question is searched as sag.expand_question gives it (the sources'' synonyms added).  '
    'query_embedding: the vector of that question from the database''s embedder; NULL embeds it with '
    'sag.embed_hash, which only a database bound to the hash embedder accepts (22023 otherwise).  '
    'profile ''seed'': sag-algorithm''s formulas as written (sag.retrieve), the top_n by weight_init, no '
    'spreading or reordering.  '
    'Example: select * from sag.search(''who founded Apple'', 5);';
