-- Knowledge graph (issue #17): traversal (sag.get_related), entities by keyword, a neighbourhood's edges.

-- The neighbours of one entity in a direction: out follows head -> tail, in tail -> head, both either way.
-- Co-occurrence relations have no direction (stored once, lower id first) and are followed both ways always.
create or replace function sag_internal._neighbours(key_id bigint, direction text, relation_types text[])
returns table (neighbour bigint, weight real, relation_type text)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return query
    select r.tail_key_id, r.weight, r.relation_type from sag.relations r
     where r.source_id = (select k.source_id from sag.keys k where k.id = _neighbours.key_id)
       and r.head_key_id = _neighbours.key_id
       and (direction in ('out', 'both') or r.origin = 'cooccurrence')
       and (relation_types is null or r.relation_type = any(relation_types))
    union all
    select r.head_key_id, r.weight, r.relation_type from sag.relations r
     where r.source_id = (select k.source_id from sag.keys k where k.id = _neighbours.key_id)
       and r.tail_key_id = _neighbours.key_id
       and (direction in ('in', 'both') or r.origin = 'cooccurrence')
       and (relation_types is null or r.relation_type = any(relation_types));
end
$$;

-- Breadth first, one row per level: the recursive CTE carries the level's frontier (ids and path scores)
-- and every entity visited so far, and only expands into unvisited ones; so it stops on cycles and costs
-- one pass over each reached entity's relations, not one per path.
--   distance(e)  = fewest hops from the start;
--   path(e)      = the largest product of relation weights over the shortest paths to e;
--   score(e)     = path(e) / distance(e), in [0, 1].
-- Example: A -[0.8]-> B -[0.5]-> C: B at 1 with 0.8, C at 2 with 0.8 * 0.5 / 2 = 0.2.
drop function if exists sag.get_related(bigint, integer, text, text[], integer);
create or replace function sag.get_related(
    key_id bigint, depth integer default 2, direction text default 'out', relation_types text[] default null,
    lim integer default 100, source_id bigint default null)
returns table (id bigint, type text, name text, distance integer, path_weight float8, score float8)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    types text[] := (select array_agg(sag_internal._relation_type(t)) from unnest(relation_types) t);
    src bigint;
    frontier bigint[];
    frontier_w float8[];
    visited bigint[];
    next_ids bigint[];
    next_w float8[];
    lvl integer := 0;
    out_ids bigint[] := '{}';
    out_w float8[] := '{}';
    out_level integer[] := '{}';
begin
    if (depth between 1 and 6) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.get_related: depth must be between 1 and 6, got %s', depth);
    end if;
    if (direction in ('out', 'in', 'both')) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.get_related: direction must be out, in or both, got %L',
                                               direction);
    end if;
    -- The key's source: given, or looked up (by id alone: on Citus a lookup on every worker).
    src := (select k.source_id from sag.keys k
             where (get_related.source_id is null or k.source_id = get_related.source_id) and k.id = get_related.key_id);
    if src is null then
        raise exception using errcode = 'P0002', message = format('sag.get_related: no entity with id %s', key_id);
    end if;
    -- Breadth first, one statement a level over the relations of the key's source (an entity's graph is its
    -- source's: on Citus each level runs on the worker holding it).
    frontier := array[key_id];
    frontier_w := array[1.0::float8];
    visited := frontier;
    while lvl < depth loop
        select array_agg(x.neighbour order by x.neighbour), array_agg(x.w order by x.neighbour) into next_ids, next_w
          from (select n.neighbour, max(n.w) as w
                  from (select r.tail_key_id as neighbour, f.w * r.weight as w
                          from unnest(frontier, frontier_w) as f(id, w)
                          join sag.relations r on r.source_id = src and r.head_key_id = f.id
                         where (direction in ('out', 'both') or r.origin = 'cooccurrence')
                           and (types is null or r.relation_type = any (types))
                        union all
                        select r.head_key_id, f.w * r.weight
                          from unnest(frontier, frontier_w) as f(id, w)
                          join sag.relations r on r.source_id = src and r.tail_key_id = f.id
                         where (direction in ('in', 'both') or r.origin = 'cooccurrence')
                           and (types is null or r.relation_type = any (types))) n
                 -- NOT IN a subquery is a hashed lookup; <> all(array) would scan it per row.
                 where n.neighbour not in (select unnest(visited))
                 group by n.neighbour) x;
        exit when next_ids is null;
        lvl := lvl + 1;
        out_ids := out_ids || next_ids;
        out_w := out_w || next_w;
        out_level := out_level || array_fill(lvl, array[cardinality(next_ids)]);
        visited := visited || next_ids;
        frontier := next_ids;
        frontier_w := next_w;
    end loop;
    return query
    select k.id, k.type, k.name, f.level, f.w, f.w / f.level
      from unnest(out_ids, out_w, out_level) as f(id, w, level)
      join sag.keys k on k.source_id = src and k.id = f.id
     order by f.w / f.level desc, f.level, k.id
     limit lim;
end;
$$;
comment on function sag.get_related(bigint, integer, text, text[], integer, bigint) is
    'Entities reachable from key_id within depth hops (direction out|in|both; co-occurrence relations both '
    'ways; relation_types NULL = all), breadth first and cycle-safe: distance = fewest hops, path_weight = '
    'the best product of weights over shortest paths, score = path_weight / distance. '
    'Example: select * from sag.get_related(42, depth => 2, direction => ''both'');  source_id: the key''s source when known (NULL: looked up).';

-- A key matches a keyword when its normalized form is the keyword, or its name contains the keyword as a
-- word (Latin) or as a substring (Han, which has no spaces).  Ordered by matched keywords, then events.
create or replace function sag.find_by_keywords(keywords text[], source_ids bigint[] default null, lim integer default 20)
returns table (id bigint, source_id bigint, type text, name text, description text, event_count integer, matched integer)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
declare
    srcs bigint[] := coalesce(source_ids, array(select s.id from sag.sources s order by s.id));
begin
    return query
    with kw as (
        select distinct lower(normalize(w, NFKC)) as w from unnest(keywords) w where coalesce(w, '') <> ''
    ), hits as (
        select k.source_id, k.id, count(distinct kw.w)::int as matched
          from kw join sag.keys k
            on k.normalized like '%' || replace(replace(replace(kw.w, '\', '\\'), '%', '\%'), '_', '\_') || '%'
         where k.source_id = any (srcs)
           and (k.normalized = kw.w
                or kw.w ~ ('[' || sag_internal._han_class() || ']')
                or position(' ' || kw.w || ' ' in ' ' || regexp_replace(lower(k.name), '[^[:alnum:]]+', ' ', 'g') || ' ') > 0)
         group by k.source_id, k.id
    )
    select k.id, k.source_id, k.type, k.name, k.description, k.event_count, h.matched
      from hits h join sag.keys k on k.source_id = any (srcs) and k.source_id = h.source_id and k.id = h.id
     order by h.matched desc, (k.normalized = any(select w from kw)) desc, k.event_count desc, k.id
     limit lim;
end
$$;
comment on function sag.find_by_keywords(text[], bigint[], integer) is
    'Entities (keys) named by the keywords: normalized name equal to a keyword, or the keyword a word of the '
    'name (a substring for Chinese). Most keywords matched first, then exact names, then most events.';

-- The edges among an entity's neighbourhood (for GraphML export): every relation between two of the
-- entities sag.get_related reaches, with the start.
create or replace function sag.neighbourhood_edges(key_id bigint, depth integer default 1, direction text default 'both',
                                                   relation_types text[] default null, lim integer default 200)
returns table (head_key_id bigint, head text, head_type text, relation_type text, tail_key_id bigint, tail text,
               tail_type text, weight real, origin text)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
declare
    src bigint := (select k.source_id from sag.keys k where k.id = neighbourhood_edges.key_id);
    nodes bigint[];
begin
    -- The neighbourhood first (sag.get_related reads tables: not called inside a statement over them), then
    -- the relations among it in the key's source.
    nodes := array[neighbourhood_edges.key_id]
             || array(select g.id from sag.get_related(neighbourhood_edges.key_id, depth, direction, relation_types, lim,
                                                       src) g);
    return query
    select r.head_key_id, h.name, h.type, r.relation_type, r.tail_key_id, t.name, t.type, r.weight, r.origin
      from sag.relations r
      join sag.keys h on h.source_id = src and h.source_id = r.source_id and h.id = r.head_key_id
      join sag.keys t on t.source_id = src and t.source_id = r.source_id and t.id = r.tail_key_id
     where r.source_id = src
       and r.head_key_id = any (nodes) and r.tail_key_id = any (nodes)
       and (relation_types is null or r.relation_type = any(array(select sag_internal._relation_type(x) from unnest(relation_types) x)))
     order by r.head_key_id, r.tail_key_id, r.relation_type;
end
$$;
comment on function sag.neighbourhood_edges(bigint, integer, text, text[], integer) is
    'The relations among an entity and the entities sag.get_related reaches from it: a neighbourhood to export.';
