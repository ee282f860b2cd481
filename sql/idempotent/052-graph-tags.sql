-- Knowledge graph (issue #17): tags of entities (lower-case atomic words, reused before new ones are made).

-- A candidate tag as stored: NFKC, lower case, inner spaces and punctuation runs to one hyphen.
create or replace function sag_internal._tag_name(candidate text)
returns text
language sql immutable parallel safe
set search_path = pg_catalog, sag, pg_temp
return nullif(trim(both '-' from regexp_replace(lower(normalize(coalesce(candidate, ''), NFKC)), '[^[:alnum:]]+', '-', 'g')), '');

create or replace function sag.find_tags(p_source_id bigint, prefix text default '', lim integer default 50)
returns setof text
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return query
    select t.name from sag.tags t
     where t.source_id = p_source_id
       and t.name like replace(replace(replace(coalesce(sag_internal._tag_name(prefix), ''), '\', '\\'), '%', '\%'), '_', '\_') || '%'
     order by t.name limit lim;
end
$$;
comment on function sag.find_tags(bigint, text, integer) is
    'The source''s tags that start with prefix (folded like a tag), alphabetical.';

create or replace function sag.entity_count_by_tag(p_source_id bigint, tag text)
returns bigint
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return (
    select count(*) from sag.key_tags kt join sag.tags t on t.source_id = kt.source_id and t.id = kt.tag_id
     where t.source_id = p_source_id and t.name = sag_internal._tag_name(tag));
end
$$;
comment on function sag.entity_count_by_tag(bigint, text) is 'How many entities carry the tag.';

-- The existing tag a candidate reuses (seed §1.3): the same tag; else a tag that one of the two extends by at
-- most two characters ("databases" -> "database", "graph" -> "graphs"), the most used, then the shortest.
create or replace function sag_internal._reuse_tag(p_source_id bigint, candidate text)
returns text
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return (
    select t.name from sag.tags t
     where t.source_id = p_source_id
       and (t.name = candidate
            or (char_length(candidate) >= 3 and char_length(t.name) >= 3
                and abs(char_length(t.name) - char_length(candidate)) <= 2
                and (starts_with(t.name, candidate) or starts_with(candidate, t.name))))
     order by t.name = candidate desc,
              (select count(*) from sag.key_tags kt where kt.source_id = t.source_id and kt.tag_id = t.id) desc,
              char_length(t.name), t.name
     limit 1);
end
$$;

-- Replaces an entity's tags with the candidates (relevances: parallel, NULL = by position, first most
-- relevant: 1, 1/2, 1/3 ...), each reusing an existing tag when one matches, keeping the max_tags most
-- relevant.  Returns how many it kept.
create or replace function sag.set_entity_tags(key_id bigint, tags text[], relevances real[] default null,
                                               max_tags integer default 8)
returns integer
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    src bigint := (select k.source_id from sag.keys k where k.id = set_entity_tags.key_id);
    names text[];
    rels real[];
begin
    if src is null then
        raise exception using errcode = 'P0002', message = format('sag.set_entity_tags: no entity with id %s', key_id);
    end if;
    if (max_tags >= 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.set_entity_tags: max_tags must be >= 1, got %s', max_tags);
    end if;
    if (relevances is null or cardinality(relevances) = cardinality(tags)) is not true then
        raise exception using errcode = '22023',
                              message = 'sag.set_entity_tags: tags and relevances must have the same length';
    end if;
    select coalesce(array_agg(b.name order by b.relevance desc, b.n), '{}'),
           coalesce(array_agg(b.relevance order by b.relevance desc, b.n), '{}')
      into names, rels
      from (select c.name, max(c.relevance) as relevance, min(c.n) as n
              from (select coalesce(sag_internal._reuse_tag(src, f.name), f.name) as name, f.relevance, f.n
                      from (select sag_internal._tag_name(u.tag) as name, coalesce(relevances[u.n], 1.0 / u.n)::real as relevance,
                                   u.n::int as n
                              from unnest(tags) with ordinality as u(tag, n)) f
                     where f.name is not null) c
             group by c.name
             order by max(c.relevance) desc, min(c.n)
             limit max_tags) b;
    insert into sag.tags (source_id, name) select src, u.name from unnest(names) u(name) order by u.name
    on conflict (source_id, name) do nothing;
    delete from sag.key_tags kt where kt.source_id = src and kt.key_id = set_entity_tags.key_id;
    insert into sag.key_tags (source_id, key_id, tag_id, relevance)
    select src, set_entity_tags.key_id, t.id, u.rel

      from unnest(names, rels) u(name, rel) join sag.tags t on t.source_id = src and t.name = u.name;
    return cardinality(names);
end;
$$;
comment on function sag.set_entity_tags(bigint, text[], real[], integer) is
    'Replaces an entity''s tags: candidates folded to lower-case atomic tags ("Graph DB" -> graph-db), each '
    'reusing an existing tag of the source when one matches (same, or one extends the other by <= 2 '
    'characters: "databases" -> "database"), keeping the max_tags (default 8) most relevant (relevances '
    'parallel to tags; NULL: 1, 1/2, 1/3 ... by position). Returns how many it kept.';
