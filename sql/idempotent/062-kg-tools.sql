-- The KG agent's two tools over the knowledge graph in sag.relations (issue #18, ../shared/seeds/
-- kg-query-tools.md): get_relations = sag.kg_relations, get_triples = sag.kg_triples.  They fetch what the
-- seed's SPARQL fetches (relations out and in, neighbours with their names, the edges of CVT nodes) and hand
-- it to the logic of 060, which the SPARQL backend uses too.  Re-applied on every upgrade.
--
-- A node's id is its key's name: the IRI's local part for imported nodes (m.02mjmr), the lexical form for a
-- literal, the name for a key extracted from a document.  Relations whose type is a full IRI (predicates
-- outside the import's namespace) are not shown, as the seed's STRSTARTS filter does.

-- The key an entity string stands for, in the given source (NULL = all): an imported node with this id, else
-- the node with this name (English names first), else a key with this name (normalized as sag.named_keys
-- does: NFKC, lower case, letters and digits only, words joined).
create or replace function sag.kg_entity(entity text, source text default null)
returns bigint
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    sids bigint[] := sag.source_ids(case when source is null then null else array[source] end);
    found bigint;
begin
    select k.id into found from sag.keys k
     where k.type = 'entity' and k.normalized = entity and (sids is null or k.source_id = any (sids))
     order by k.id limit 1;
    if found is null then
        select n.key_id into found from sag.kg_names n
         where lower(left(n.name, 200)) = lower(left(entity, 200)) and lower(n.name) = lower(entity)
           and (sids is null or n.source_id = any (sids))
         order by (n.lang = 'en' or n.lang like 'en-%') desc, n.key_id limit 1;
    end if;
    if found is null then
        select k.id into found from sag.keys k
         where k.normalized = (select string_agg(sag_internal._fold_word(w), '') from regexp_split_to_table(entity, '\s+') w)
           and (sids is null or k.source_id = any (sids))
         order by k.event_count desc, k.id limit 1;
    end if;
    return found;
end;
$$;
comment on function sag.kg_entity(text, text) is
    'The key an entity string names in the source (NULL = all): an imported node with this id (m.02mjmr), else a '
    'node with this name (sag.kg_names, English first), else a key with this name; NULL when none.  '
    'Example: select sag.kg_entity(''Ada Lovelace'', source => ''freebase'');';

-- The name the tools show for a node: an English name, else a name in any language, else (keys from
-- documents) the key's name; '' for an unnamed imported node or a literal (the id is shown instead).
create or replace function sag.kg_node_name(node bigint)
returns text
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return (
    select coalesce(
        (select n.name from sag.kg_names n
          where n.source_id = (select k.source_id from sag.keys k where k.id = node) and n.key_id = node
          order by (n.lang = 'en' or n.lang like 'en-%') desc, n.lang, n.name limit 1),
        (select case when k.type in ('entity', 'literal', 'number', 'bool', 'date') then '' else k.name end
           from sag.keys k where k.id = node),
        ''));
end
$$;
comment on function sag.kg_node_name(bigint) is
    'A KG node''s display name: English first (LANGMATCHES en), else any language, else a document key''s name; '
    ''''' for unnamed nodes and literals.';

-- Raises P0002 naming the entity when no key stands for it; returns (key, source).
create or replace function sag_internal._kg_require_entity(entity text, source text, out node bigint, out node_source bigint)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
begin
    -- The name first, then its key (on Citus a function reading tables is not called inside a statement over
    -- distributed tables).
    node := sag.kg_entity(entity, source);
    select k.id, k.source_id into node, node_source from sag.keys k where k.id = node;
    if node is null then
        raise exception using errcode = 'P0002', message = format('no entity %L in the knowledge graph', entity);
    end if;
end;
$$;

-- The relation whitelist of a source (sources.config -> 'kg_relation_whitelist'), NULL without one.
create or replace function sag_internal._kg_whitelist(source_id bigint)
returns text[]
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return (
    select case when s.config ? 'kg_relation_whitelist'
                then array(select jsonb_array_elements_text(s.config -> 'kg_relation_whitelist')) end
      from sag.sources s where s.id = source_id);
end
$$;

create or replace function sag.kg_relations(
    entity text, question text default '', source text default null, top_k integer default 30,
    extra_relations text[] default null, whitelist text[] default null, max_relations integer default 100)
returns table (relation text, score float8)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    e record;
    found text[];
begin
    if (max_relations >= 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.kg_relations: max_relations must be >= 1, got %s', max_relations);
    end if;
    e := sag_internal._kg_require_entity(entity, source);
    found := array(
        (select distinct r.relation_type from sag.relations r
          where r.source_id = e.node_source and r.head_key_id = e.node and strpos(r.relation_type, '://') = 0
          order by 1 limit max_relations)
        union
        (select distinct r.relation_type from sag.relations r
          where r.source_id = e.node_source and r.tail_key_id = e.node and strpos(r.relation_type, '://') = 0
          order by 1 limit max_relations));
    return query select c.relation, c.score
                   from sag.kg_choose_relations(found, question, top_k, extra_relations,
                                                coalesce(whitelist, sag_internal._kg_whitelist(e.node_source))) c;
end;
$$;
comment on function sag.kg_relations(text, text, text, integer, text[], text[], integer) is
    'get_relations: the relations of an entity (id or name, sag.kg_entity), out and in (max_relations each), '
    'through the source''s whitelist (config kg_relation_whitelist, or the whitelist given; all when none is on '
    'it), meaningless ones removed, extra_relations (flattened ones of earlier get_triples) added, ranked by BM25 '
    'against the question, top_k.  Example: select * from sag.kg_relations(''m.02mjmr'', ''who is Obama''''s '
    'wife?'', source => ''freebase'');';

create or replace function sag.kg_triples(
    entity text, relations text[], question text default '', source text default null,
    limit_per_relation integer default 5, seed integer default 0, flatten_map jsonb default '{}',
    whitelist text[] default null, flatten_choice text[] default null)
returns jsonb
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    e record;
    entity_id text;
    entity_name text;
    hop1 jsonb;
    hop2 jsonb;
begin
    if (limit_per_relation >= 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.kg_triples: limit_per_relation must be >= 1, got %s',
                                               limit_per_relation);
    end if;
    e := sag_internal._kg_require_entity(entity, source);
    select k.name into entity_id from sag.keys k where k.source_id = e.node_source and k.id = e.node;
    entity_name := coalesce(nullif(sag.kg_node_name(e.node), ''), entity);
    flatten_map := coalesce(flatten_map, '{}');
    -- Neighbours: out 2x, in 4x limit_per_relation per relation, as the seed's two SPARQL queries.
    with rels as (select distinct r from unnest(relations) r where not flatten_map ? r),
    nodes as (
        select rl.r as relation, 'out' as direction, o.node
          from rels rl
         cross join lateral (select x.tail_key_id as node from sag.relations x join sag.keys k on k.source_id = x.source_id and k.id = x.tail_key_id
                              where x.source_id = e.node_source and x.head_key_id = e.node and x.relation_type = rl.r
                              order by k.name limit 2 * limit_per_relation) o
        union all
        select rl.r, 'in', i.node
          from rels rl
         cross join lateral (select x.head_key_id as node from sag.relations x join sag.keys k on k.source_id = x.source_id and k.id = x.head_key_id
                              where x.source_id = e.node_source and x.tail_key_id = e.node and x.relation_type = rl.r
                              order by k.name limit 4 * limit_per_relation) i
    )
    -- (a node's name as sag.kg_node_name gives it, inline: the names are on the source's worker)
    select coalesce(jsonb_agg(jsonb_build_object('relation', n.relation, 'direction', n.direction, 'id', k.name,
                                                 'name', coalesce((select nm.name from sag.kg_names nm
                                                          where nm.source_id = e.node_source and nm.key_id = k.id
                                                          order by (nm.lang = 'en' or nm.lang like 'en-%') desc, nm.lang, nm.name
                                                          limit 1),
                                                        case when k.type in ('entity', 'literal', 'number', 'bool', 'date') then ''
                                                             else k.name end, ''),
                                                 'key', n.node)), '[]')
      into hop1
      from nodes n join sag.keys k on k.source_id = e.node_source and k.id = n.node;
    -- The edges of the CVT nodes (out-CVTs: their out edges, in-CVTs: their in edges; 50 relations each, 2x
    -- limit_per_relation nodes per relation), and of the CVT nodes flatten_map names.
    with cvts as (
        select distinct (h ->> 'key')::bigint as node, h ->> 'id' as id, h ->> 'direction' as direction
          from jsonb_array_elements(hop1) h where sag.kg_is_cvt(h ->> 'id', h ->> 'name')
        union
        select k.id, k.name, m.value ->> 'direction'
          from jsonb_each(flatten_map) m
          join sag.keys k on k.source_id = e.node_source and k.type = 'entity'
                         and k.normalized = m.value ->> 'cvt_node_id'
         where m.key = any (relations)
    ),
    cvt_rels as (
        select c.*, r.rel
          from cvts c
         cross join lateral ((select distinct x.relation_type as rel from sag.relations x
                               where c.direction = 'out' and x.source_id = e.node_source and x.head_key_id = c.node
                                 and strpos(x.relation_type, '://') = 0 order by 1 limit 50)
                             union all
                             (select distinct x.relation_type from sag.relations x
                               where c.direction = 'in' and x.source_id = e.node_source and x.tail_key_id = c.node
                                 and strpos(x.relation_type, '://') = 0 order by 1 limit 50)) r
    ),
    edges as (
        select cr.id as cvt, cr.direction, cr.rel, o.node
          from cvt_rels cr
         cross join lateral ((select x.tail_key_id as node from sag.relations x join sag.keys k on k.source_id = x.source_id and k.id = x.tail_key_id
                               where cr.direction = 'out' and x.source_id = e.node_source and x.head_key_id = cr.node
                                 and x.relation_type = cr.rel order by k.name limit 2 * limit_per_relation)
                             union all
                             (select x.head_key_id from sag.relations x join sag.keys k on k.source_id = x.source_id and k.id = x.head_key_id
                               where cr.direction = 'in' and x.source_id = e.node_source and x.tail_key_id = cr.node
                                 and x.relation_type = cr.rel
                               order by k.name limit 2 * limit_per_relation)) o
    )
    select coalesce(jsonb_agg(jsonb_build_object('cvt', g.cvt, 'direction', g.direction, 'relation', g.rel,
                                                 'id', k.name, 'name', coalesce((select nm.name from sag.kg_names nm
                                                          where nm.source_id = e.node_source and nm.key_id = k.id
                                                          order by (nm.lang = 'en' or nm.lang like 'en-%') desc, nm.lang, nm.name
                                                          limit 1),
                                                        case when k.type in ('entity', 'literal', 'number', 'bool', 'date') then ''
                                                             else k.name end, ''))), '[]')
      into hop2
      from edges g join sag.keys k on k.source_id = e.node_source and k.id = g.node;
    return sag.kg_assemble_triples(entity_id, entity_name, relations, hop1, hop2, flatten_map, question,
                                   limit_per_relation, seed, coalesce(whitelist, sag_internal._kg_whitelist(e.node_source)),
                                   flatten_choice);
end;
$$;
comment on function sag.kg_triples(text, text[], text, text, integer, integer, jsonb, text[], text[]) is
    'get_triples: the triples of an entity (id or name) through each relation, out (2 x limit_per_relation) and '
    'in (4 x), names English first; CVT nodes flattened into two-hop relations (sag.kg_assemble_triples).  '
    'flatten_map: the {flatten_relation: {original_relation, cvt_node_id, cvt_relation, direction}} of earlier '
    'calls (cvt_info), so a flattened relation can be asked for; flatten_choice: the flattened relations to keep '
    '(an LLM''s choice; default the best 8 by BM25).  seed makes the sampling reproducible.  Returns {entity, '
    'triples: [{head, head_id, relation, tail, tail_id}], cvt_info, flatten_candidates}.  Example: select '
    'sag.kg_triples(''m.02mjmr'', array[''people.person.spouse_s''], source => ''freebase'');';
