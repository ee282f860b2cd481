-- Keys named by a caller (search(query, keys=...), an LLM rewrite, a DAG sub-query) matched to stored keys.

create or replace function sag.match_named_keys(
    names text[], normalized text[], embeddings @extschema:vector@.vector[], source_ids bigint[] default null,
    per_key integer default 3, min_similarity float8 default 0.5)
returns table (key_id bigint, similarity float8)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return query
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
     group by m.key_id;
end
$$;
comment on function sag.match_named_keys(text[], text[], @extschema:vector@.vector[], bigint[], integer, float8) is
    'Stored keys for caller-given key names: exact normalized matches with similarity 1, else the per_key '
    'most similar string keys by embedding (>= min_similarity). These seed stage 1 instead of sag.match_keys.';

create or replace function sag.context_for_query(
    query_embedding @extschema:vector@.vector, source_ids bigint[] default null, event_limit integer default 8,
    key_limit integer default 20)
returns jsonb
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return (
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
                                  where source_ids is null or s.id = any(source_ids)) x), '[]')));
end
$$;
comment on function sag.context_for_query(@extschema:vector@.vector, bigint[], integer, integer) is
    'Background for an LLM query rewrite or plan (sag-algorithm 3.3/3.4 step 1): the events and keys nearest '
    'to the query by vector, and the key types of the sources.';

-- Keys naming the same entity in two names (issue 33 item 3), sag.key_aliases.  A chunk that writes one key's
-- name followed by another's in parentheses ("北溟大学（Beiming University）", "Shen Mo (沈墨)") links the two:
-- that is how news and encyclopedias give a name in another script, a translation or an abbreviation.  Both
-- keys must be the chunk's own (its events hold them), name the same kind of thing (the same type; times and
-- actions are not names) and be written in two scripts (a Han name and one without Han): within one script
-- parentheses hold anything (a registration number, an explanation).  On rgb-zh's news, pairs of one script or
-- of two types were mostly wrong (C919 = B-001A, COMAC = 商飞 as a person, ABC = 文版权归澳大利亚广播公司).  Chunks after after_chunk_id only (an ingest derives from the chunks it stored); a pair the
-- user rejected stays rejected (the row is kept, on conflict nothing changes).  Returns the pairs added.
create or replace function sag.derive_key_aliases(source_id bigint, after_chunk_id bigint default 0)
returns integer
language plpgsql volatile
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
declare
    _result integer;
begin
    with cand as (
        select c.source_id, c.id as chunk_id,
               replace(replace(replace(replace(c.content, '（', '('), '）', ')'), ' (', '('), '( ', '(') as text
          from sag.chunks c
         where c.source_id = derive_key_aliases.source_id and c.id > coalesce(after_chunk_id, 0)
           and (strpos(c.content, '(') > 0 or strpos(c.content, '（') > 0)),
    keys_of as (
        select x.source_id, x.chunk_id, x.text, k.id, k.name, k.type
          from cand x
          join sag.chunk_keys ck on ck.source_id = x.source_id and ck.chunk_id = x.chunk_id
          join sag.keys k on k.source_id = ck.source_id and k.id = ck.key_id
         where k.value_string is not null and k.type not in ('time', 'action') and char_length(k.name) >= 2),
    pairs as (
        select distinct on (a.id, b.id) a.source_id, a.id as a_id, b.id as b_id, a.chunk_id
          from keys_of a
          join keys_of b on b.source_id = a.source_id and b.chunk_id = a.chunk_id and b.id <> a.id
         where strpos(a.text, a.name || '(' || b.name || ')') > 0
           -- one entity: the same type; two scripts (a Han name and a name without Han): within one script a
           -- parenthesis gives anything (C919 (B-001A), a registration; CPI (价格) is not the other way round)
           and a.type = b.type
           -- a topic only when its other name is a name of several words ("Qinglan Project"), not an
           -- acronym a term is explained by (收益 (EPS), 贷款 (PSL))
           and (a.type <> 'topic'
                or array_length(regexp_split_to_array(btrim(case when a.name ~ ('[' || sag_internal._han_class() || ']')
                                                                  then b.name else a.name end), '\s+'), 1) >= 2)
           and (a.name ~ ('[' || sag_internal._han_class() || ']')) <> (b.name ~ ('[' || sag_internal._han_class() || ']'))
           -- a name cut at a middle dot is a piece of a longer one (麦克拉斯 of 亚历克斯·麦克拉斯 gave 克拉斯)
           and strpos(a.text, '·' || a.name || '(' || b.name || ')') = 0
           -- the whole name before the parentheses: not 机器人公司 of 峡湾机器人公司（Fjordline Robotics）
           and not exists (select 1 from keys_of l
                            where l.chunk_id = a.chunk_id and char_length(l.name) > char_length(a.name)
                              and right(l.name, char_length(a.name)) = a.name
                              and strpos(a.text, l.name || '(' || b.name || ')') > 0)
         order by a.id, b.id, a.chunk_id),
    added as (
        insert into sag.key_aliases (source_id, key_id, alias_key_id, origin, chunk_id)
        select p.source_id, p.a_id, p.b_id, 'derived', p.chunk_id from pairs p
        union all
        select p.source_id, p.b_id, p.a_id, 'derived', p.chunk_id from pairs p
        on conflict do nothing
        returning 1)
    select (count(*) / 2)::integer into _result from added;
    return _result;
end
$$;
comment on function sag.derive_key_aliases(bigint, bigint) is
    'Links keys naming the same entity (sag.key_aliases, origin derived): in a chunk of the source (id > '
    'after_chunk_id), key A''s name followed by key B''s in parentheses ("北溟大学（Beiming University）"), both '
    'keys of that chunk, the same type (no time or action), one name Han and the other not (a topic: the other of two words or more), A the longest such key and not cut at a middle dot.  Both directions stored; rejected pairs '
    'stay rejected.  Returns the pairs added.  Ingestion runs it over the chunks it stored.';

-- Keys given as aliases by the user (sag-pg source S --aliases FILE): pairs of names, each resolved to the
-- source's keys of that normalized name (every type but time and action); a pair whose names resolve to no key
-- is returned as not found.  Given pairs are never rejected (given again after an undo, they count again).
create or replace function sag.add_key_aliases(source_id bigint, names text[], alias_names text[])
returns table (name text, alias_name text, pairs integer)
language plpgsql volatile
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return query
    with given as (
        select g.name, g.alias_name, g.n
          from unnest(names, alias_names) with ordinality as g(name, alias_name, n)),
    matched as (
        select g.n, a.id as a_id, b.id as b_id
          from given g
          join sag.keys a on a.source_id = add_key_aliases.source_id
                         and a.normalized = sag_internal._fold_word(g.name) and a.type not in ('time', 'action')
          join sag.keys b on b.source_id = add_key_aliases.source_id
                         and b.normalized = sag_internal._fold_word(g.alias_name) and b.type not in ('time', 'action')
         where a.id <> b.id),
    added as (
        insert into sag.key_aliases as ka (source_id, key_id, alias_key_id, origin)
        select add_key_aliases.source_id, m.a_id, m.b_id, 'file' from matched m
        union
        select add_key_aliases.source_id, m.b_id, m.a_id, 'file' from matched m
        on conflict (source_id, key_id, alias_key_id) do update set rejected = false, origin = 'file'
        returning ka.key_id)
    select g.name, g.alias_name, (select count(*) from matched m where m.n = g.n)::integer
      from given g
     where (select count(*) from added) >= 0   -- the insert runs before the counts are read
     order by g.n;
end
$$;
comment on function sag.add_key_aliases(bigint, text[], text[]) is
    'User-given aliases (origin file): each (names[i], alias_names[i]) pair of names resolved to the source''s keys '
    'of that normalized name (any type but time/action), linked both ways; a rejected pair is restored.  Returns '
    'each pair with the number of key pairs linked (0: a name matched no key).';

-- Undo: the pair (both directions) is kept as rejected, so derivation does not add it again.
create or replace function sag.reject_key_alias(source_id bigint, key_id bigint, alias_key_id bigint)
returns boolean
language plpgsql volatile
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
declare
    _result boolean;
begin
    with done as (
        update sag.key_aliases a set rejected = true
         where a.source_id = reject_key_alias.source_id
           and (a.key_id, a.alias_key_id) in ((reject_key_alias.key_id, reject_key_alias.alias_key_id),
                                              (reject_key_alias.alias_key_id, reject_key_alias.key_id))
        returning 1)
    select count(*) > 0 into _result from done;
    return _result;
end
$$;
comment on function sag.reject_key_alias(bigint, bigint, bigint) is
    'Undoes an alias pair (both directions): kept as rejected, so sag.derive_key_aliases does not add it again '
    'and retrieval ignores it.  False when the pair is not linked.';

-- A source's aliases for listing: each pair once (key_id < alias_key_id), with names, types, origin, the chunk
-- that showed it and whether it was undone.
create or replace function sag.key_aliases_of(source_id bigint)
returns table (key_id bigint, key_type text, key_name text, alias_key_id bigint, alias_type text,
               alias_name text, origin text, chunk_id bigint, rejected boolean)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return query
    select a.key_id, k.type, k.name, a.alias_key_id, b.type, b.name, a.origin, a.chunk_id, a.rejected
      from sag.key_aliases a
      join sag.keys k on k.source_id = a.source_id and k.id = a.key_id
      join sag.keys b on b.source_id = a.source_id and b.id = a.alias_key_id
     where a.source_id = key_aliases_of.source_id and a.key_id < a.alias_key_id
     order by k.name, b.name;
end
$$;
comment on function sag.key_aliases_of(bigint) is
    'The alias pairs of a source (sag.key_aliases), each once: both keys'' ids, types and names, origin (derived '
    'or file), the chunk a derived pair came from, rejected (undone).';

-- The keys linked to the given ones (not rejected), of the same source.
drop function if exists sag_internal._aliases_of(bigint[]);
create or replace function sag_internal._aliases_of(key_ids bigint[], source_ids bigint[])
returns bigint[]
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return (
    select coalesce(array_agg(distinct a.alias_key_id), '{}')
      from sag.keys k
      join sag.key_aliases a on a.source_id = k.source_id and a.key_id = k.id
     where (source_ids is null or k.source_id = any (source_ids))
       and k.id = any (coalesce(key_ids, '{}')) and not a.rejected
       and a.alias_key_id <> all (coalesce(key_ids, '{}')));
end
$$;
