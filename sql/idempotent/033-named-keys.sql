-- Keys named by a caller (search(query, keys=...), an LLM rewrite, a DAG sub-query) matched to stored keys.

create or replace function sag.match_named_keys(
    names text[], normalized text[], embeddings @extschema:vector@.vector[], source_ids bigint[] default null,
    per_key integer default 3, min_similarity float8 default 0.5)
returns table (key_id bigint, similarity float8)
language sql stable
set search_path = pg_catalog, sag, pg_temp
as $$
    -- Exact normalized matches count fully; otherwise the per_key most similar string keys.
    select m.key_id, max(m.similarity)
      from unnest(names, normalized, embeddings) with ordinality as q(name, norm, emb, n)
      cross join lateral (
          select k.id as key_id, 1.0::float8 as similarity from sag.keys k
           where k.normalized = q.norm and (source_ids is null or k.source_id = any(source_ids))
          union all
          select v.id, v.similarity from (
              select k.id, greatest(0, 1 - (k.embedding operator(@extschema:vector@.<=>) q.emb)) as similarity from sag.keys k
               where q.emb is not null and k.embedding is not null
                 and (source_ids is null or k.source_id = any(source_ids))
               order by k.embedding operator(@extschema:vector@.<=>) q.emb limit per_key) v
           where v.similarity >= min_similarity) m
     group by m.key_id
$$;
comment on function sag.match_named_keys(text[], text[], @extschema:vector@.vector[], bigint[], integer, float8) is
    'Stored keys for caller-given key names: exact normalized matches with similarity 1, else the per_key '
    'most similar string keys by embedding (>= min_similarity). These seed stage 1 instead of sag.match_keys.';

create or replace function sag.context_for_query(
    query_embedding @extschema:vector@.vector, source_ids bigint[] default null, event_limit integer default 8,
    key_limit integer default 20)
returns jsonb
language sql stable
set search_path = pg_catalog, sag, pg_temp
as $$
    select jsonb_build_object(
        'events', coalesce((select jsonb_agg(jsonb_build_object('title', e.title, 'content', e.content)
                                             order by e.distance)
                              from (select ev.title, ev.content, ev.embedding operator(@extschema:vector@.<=>) query_embedding as distance
                                      from sag.events ev
                                     where source_ids is null or ev.source_id = any(source_ids)
                                     order by ev.embedding operator(@extschema:vector@.<=>) query_embedding limit event_limit) e), '[]'),
        'keys', coalesce((select jsonb_agg(jsonb_build_object('type', k.type, 'name', k.name) order by k.distance)
                            from (select kk.type, kk.name, kk.embedding operator(@extschema:vector@.<=>) query_embedding as distance
                                    from sag.keys kk
                                   where kk.embedding is not null
                                     and (source_ids is null or kk.source_id = any(source_ids))
                                   order by kk.embedding operator(@extschema:vector@.<=>) query_embedding limit key_limit) k), '[]'),
        'key_types', coalesce((select jsonb_agg(distinct t) from (
                                 select jsonb_object_keys(s.config -> 'key_types') as t from sag.sources s
                                  where source_ids is null or s.id = any(source_ids)) x), '[]'))
$$;
comment on function sag.context_for_query(@extschema:vector@.vector, bigint[], integer, integer) is
    'Background for an LLM query rewrite or plan (sag-algorithm 3.3/3.4 step 1): the events and keys nearest '
    'to the query by vector, and the key types of the sources.';
