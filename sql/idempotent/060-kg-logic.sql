-- The knowledge-graph query tools' logic (get_relations / get_triples of the KG agent,
-- ../shared/seeds/kg-query-tools.md), as pure functions over arrays and jsonb: the relation filters, the BM25
-- ranking of relation names, CVT detection and flattening, reproducible sampling.  Both backends call them:
-- sag.kg_relations / sag.kg_triples (061) feed them rows of sag.relations, the SPARQL backend
-- (sag_pg/kg/sparql.py) rows an endpoint returned for the seed's SPARQL.  One engine, two sources of rows.
-- Re-applied on every upgrade.

-- Metadata relations the tools never show (the seed's _is_meaningless_pattern_relation): the type system,
-- topic articles and images, schema hints, object keys and permissions.  The seed's list lost four entries to
-- missing commas ("freebase.type_hints.enumeration" "type.object.key" became one string); they are here.
-- type.object.name is here too: names are stored apart (sag.kg_names) and every triple already shows them.
-- A relation is meaningless when it equals a pattern or lies under it (pattern || '.').
create or replace function sag.kg_meaningless_relation(relation text)
returns boolean
language sql immutable parallel safe
set search_path = pg_catalog, sag, pg_temp
as $$
    select exists (
        select 1 from unnest(array[
            'type.object.type', 'type.type.instance', 'type.type.properties', 'type.property.schema',
            'common.topic.article', 'common.topic.image', 'common.image_source', 'common.document',
            'common.webpage', 'common.license', 'common.topic.description',
            'freebase.type_hints.included_types', 'freebase.property_hints.best_value_properties',
            'freebase.property_hints.mediator', 'freebase.property_hints.unit',
            'freebase.property_hints.expected_type', 'freebase.type_hints.enumeration',
            'type.object.key', 'type.object.permission', 'type.object.profile', 'type.object.service',
            'type.object.name', 'common.topic.topic_equivalent_webpage', 'common.topic.topic_equivalent'])
            as p(pattern)
         where relation = p.pattern or starts_with(relation, p.pattern || '.'))
$$;
comment on function sag.kg_meaningless_relation(text) is
    'True for the metadata relations the KG tools never show (type system, articles, images, schema hints, '
    'type.object.key/permission/name, ...): equal to a pattern or under it.  '
    'Example: select sag.kg_meaningless_relation(''freebase.type_hints.included_types'');';

-- A CVT (compound value type) node: an id of the m./g. kind with no name (or the id as its name).
create or replace function sag.kg_is_cvt(node_id text, node_name text)
returns boolean
language sql immutable parallel safe
set search_path = pg_catalog, sag, pg_temp
as $$
    select (starts_with(node_id, 'm.') or starts_with(node_id, 'g.'))
       and (coalesce(node_name, '') = '' or node_name = node_id
            or replace(replace(node_name, '/', '.'), ':', '.') = node_id)
$$;
comment on function sag.kg_is_cvt(text, text) is
    'True when a node is a CVT (mediator) node: its id starts with m. or g. and it has no name, or its name is '
    'its id.  get_triples flattens the paths through such nodes.';

-- The seed's flatten naming: the dot-segments rel1 and rel2 share at their start are cut from rel1, and the
-- rest of rel1 is joined to the whole of rel2 with a dot.
create or replace function sag.kg_flatten_name(rel1 text, rel2 text)
returns text
language plpgsql immutable parallel safe
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    a text[] := string_to_array(rel1, '.');
    b text[] := string_to_array(rel2, '.');
    shared integer := 0;
begin
    while shared < least(cardinality(a), cardinality(b)) and a[shared + 1] = b[shared + 1] loop
        shared := shared + 1;
    end loop;
    if shared = 0 then
        return rel1 || '.' || rel2;
    end if;
    return array_to_string(a[shared + 1:], '.') || '.' || rel2;
end;
$$;
comment on function sag.kg_flatten_name(text, text) is
    'The name of the two-hop relation rel1 then rel2 through a CVT node: the leading dot-segments both share are '
    'removed from rel1, the rest joined to rel2.  Example: select sag.kg_flatten_name(''people.person.spouse_s'', '
    '''people.marriage.spouse'') -- person.spouse_s.people.marriage.spouse';

-- BM25 of short texts against a query, the corpus being the texts themselves: the formula of sag.bm25_chunks
-- (Lucene: idf = ln(1 + (N - df + 0.5) / (df + 0.5)), qtf * idf * tf / (tf + k1 * (1 - b + b * dl / avgdl)))
-- with its tokenizer (sag.query_terms: lower case, letter/digit runs, so "people.person.spouse_s" is
-- people person spouse s) and its query lexemes (sag_internal._bm25_query_terms).  The seed used rank_bm25's Okapi idf,
-- which goes negative for a term in more than half of the texts: a relation sharing the question's most common
-- word then ranked below one sharing nothing.  Ties keep the input order.
create or replace function sag.kg_rank_texts(texts text[], query text, k1 float8 default 1.2, b float8 default 0.75)
returns table (ordinal integer, text text, score float8)
language sql stable
set search_path = pg_catalog, sag, pg_temp
as $$
    with docs as (
        select t.ord::integer as ord, t.txt, v.tsv,
               (select coalesce(sum(cardinality(u.positions)), 0) from unnest(v.tsv) u)::float8 as dl
          from unnest(texts) with ordinality as t(txt, ord)
         cross join lateral (select to_tsvector('simple'::regconfig,
                                                array_to_string(sag.query_terms(t.txt), ' ')) as tsv) v
    ),
    stats as (select count(*)::float8 as n, greatest(avg(d.dl), 1e-9) as avgdl from docs d),
    terms as (
        select q.term, q.qtf, ln(1 + (st.n - c.df + 0.5) / (c.df + 0.5)) as idf
          from sag_internal._bm25_query_terms(sag.query_terms(query)) q
         cross join stats st
         cross join lateral (select count(*)::float8 as df from docs d where d.tsv @@ sag_internal._lexeme_query(q.term)) c
    )
    select d.ord, d.txt,
           coalesce((select sum(t.qtf * t.idf * cardinality(u.positions)
                                / (cardinality(u.positions) + k1 * (1 - b + b * d.dl / st.avgdl)))
                       from unnest(d.tsv) u join terms t on t.term = u.lexeme), 0)::float8 as score
      from docs d cross join stats st
     order by 3 desc, d.ord
$$;
comment on function sag.kg_rank_texts(text[], text, float8, float8) is
    'BM25 (the Lucene formula of sag.bm25_chunks, tokens of sag.query_terms) of each text against the query, the '
    'texts being the corpus; best first, ties in input order.  The KG tools rank relation names with it.  '
    'Example: select * from sag.kg_rank_texts(array[''people.person.children'', ''film.film.director''], '
    '''who are the children of Ada?'');';

-- The relations on the whitelist, or all of them when none is (or there is no whitelist): the seed's fallback.
create or replace function sag_internal._kg_whitelisted(relations text[], whitelist text[])
returns text[]
language sql immutable parallel safe
set search_path = pg_catalog, sag, pg_temp
as $$
    select coalesce(nullif(array(select r from unnest(relations) with ordinality u(r, o)
                                  where r = any (whitelist) order by o), '{}'), relations)
$$;

-- One triple as the tools return it: {head, head_id, relation, tail, tail_id}, the node shown by its name or
-- else its id; direction out: entity -relation-> node, in: node -relation-> entity.
create or replace function sag_internal._kg_triple(entity_id text, entity_name text, relation text, direction text,
                                          node_id text, node_name text)
returns jsonb
language sql immutable parallel safe
set search_path = pg_catalog, sag, pg_temp
as $$
    select case when direction = 'out'
                then jsonb_build_object('head', entity_name, 'head_id', entity_id, 'relation', relation,
                                        'tail', coalesce(nullif(node_name, ''), node_id), 'tail_id', node_id)
                else jsonb_build_object('head', coalesce(nullif(node_name, ''), node_id), 'head_id', node_id,
                                        'relation', relation, 'tail', entity_name, 'tail_id', entity_id) end
$$;

-- get_relations' choice among candidate relations: the whitelist with its fallback (all of them when none is
-- on it), the meaningless ones out, extra relations (the flattened ones found by get_triples, never on a
-- whitelist) added, then BM25 against the question (input sorted by name, so ties are alphabetical).
create or replace function sag.kg_choose_relations(
    relations text[], question text default '', top_k integer default 30, extra_relations text[] default null,
    whitelist text[] default null)
returns table (relation text, score float8)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    candidates text[] := sag_internal._kg_whitelisted(
        array(select distinct r from unnest(relations) r where r is not null and r <> ''), whitelist);
begin
    if (top_k >= 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.kg_choose_relations: top_k must be >= 1, got %s', top_k);
    end if;
    candidates := array(
        select r from (select unnest(candidates) union select unnest(coalesce(extra_relations, '{}'))) c(r)
         where not sag.kg_meaningless_relation(r) and r <> '' order by r);
    if coalesce(btrim(question), '') = '' then
        return query select r, 0::float8 from unnest(candidates) with ordinality as c(r, o) order by o limit top_k;
        return;
    end if;
    return query select t.text, t.score from sag.kg_rank_texts(candidates, question) t limit top_k;
end;
$$;
comment on function sag.kg_choose_relations(text[], text, integer, text[], text[]) is
    'get_relations'' ranking of candidate relations: whitelist (falls back to all when none is on it), '
    'meaningless relations removed (sag.kg_meaningless_relation), extra_relations added, BM25 against the '
    'question (sag.kg_rank_texts; by name without a question), top_k.';

-- A reproducible "random" order: by the md5 of the seed and the item.
create or replace function sag_internal._kg_sample_order(seed integer, item text)
returns text
language sql immutable parallel safe
set search_path = pg_catalog, sag, pg_temp
as $$ select md5(seed::text || ':' || item) $$;

-- get_triples over rows a backend fetched (hop1: the entity's neighbours through each requested relation;
-- hop2: the edges of the CVT nodes among them and of the CVT nodes named by flatten_map).  See
-- sag.kg_triples for what it returns and docs/kg.md for the seed's steps it follows.
--   hop1: [{relation, direction: out|in, id, name}]   out: entity -relation-> id; in: id -relation-> entity
--   hop2: [{cvt, direction: out|in, relation, id, name}]   out: cvt -relation-> id; in: id -relation-> cvt
--   flatten_map: {flatten_relation: {original_relation, cvt_node_id, cvt_relation, direction}} of earlier calls
create or replace function sag.kg_assemble_triples(
    entity_id text, entity_name text, relations text[], hop1 jsonb, hop2 jsonb,
    flatten_map jsonb default '{}', question text default '', limit_per_relation integer default 5,
    seed integer default 0, whitelist text[] default null, flatten_choice text[] default null,
    flatten_candidates integer default 50, flatten_top_k integer default 8)
returns jsonb
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    rel text;
    cvt record;
    cvt_rel text;
    cvt_rels text[];
    base text;
    counters jsonb := '{}';
    n integer;
    cap integer;
    triples jsonb := '[]';
    part jsonb;
    candidates jsonb := '[]';   -- [{flatten_relation, original_relation, cvt_node_id, cvt_relation, direction}]
    ranked jsonb;
    meaningful jsonb := '[]';
    chosen jsonb := '[]';
    cvt_info jsonb := '[]';
    cand jsonb;
    mapped jsonb;
begin
    if (limit_per_relation >= 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.kg_triples: limit_per_relation must be >= 1, got %s',
                                               limit_per_relation);
    end if;
    hop1 := coalesce(hop1, '[]');
    hop2 := coalesce(hop2, '[]');
    flatten_map := coalesce(flatten_map, '{}');
    for rel in select r from unnest(relations) with ordinality u(r, o) group by r order by min(o) loop
        mapped := flatten_map -> rel;
        if mapped is not null then
            -- A flattened relation of an earlier call: the two-hop path through its CVT node.
            triples := triples || sag_internal._kg_flat_triples(entity_id, entity_name, rel, mapped, hop2,
                                                        limit_per_relation, seed);
            continue;
        end if;
        -- The regular triples; the CVT nodes are kept for flattening.  More of them (3x) when CVTs were found:
        -- the seed's 15 against 5.
        select count(*) into n from jsonb_array_elements(hop1) h
         where h ->> 'relation' = rel and sag.kg_is_cvt(h ->> 'id', h ->> 'name');
        cap := case when n > 0 then 3 * limit_per_relation else limit_per_relation end;
        select coalesce(jsonb_agg(t.triple order by t.out desc, t.id), '[]') into part
          from (select x.triple, x.out, x.id
                  from (select h ->> 'direction' = 'out' as out, h ->> 'id' as id,
                               sag_internal._kg_triple(entity_id, entity_name, rel, h ->> 'direction', h ->> 'id',
                                              h ->> 'name') as triple
                          from jsonb_array_elements(hop1) h
                         where h ->> 'relation' = rel and not sag.kg_is_cvt(h ->> 'id', h ->> 'name')) x
                 order by sag_internal._kg_sample_order(seed, rel || ':' || (x.out)::text || ':' || x.id)
                 limit cap) t;
        triples := triples || part;
        -- Flatten candidates: every (CVT node, relation of the node) pair, named rel1.rel2 with a counter.
        for cvt in select h ->> 'id' as id, h ->> 'direction' as direction
                     from jsonb_array_elements(hop1) h
                    where h ->> 'relation' = rel and sag.kg_is_cvt(h ->> 'id', h ->> 'name')
                    group by 1, 2 order by (h ->> 'direction') = 'in', 1 loop
            cvt_rels := array(select distinct e ->> 'relation' from jsonb_array_elements(hop2) e
                               where e ->> 'cvt' = cvt.id and e ->> 'direction' = cvt.direction
                                 and not sag.kg_meaningless_relation(e ->> 'relation') order by 1);
            cvt_rels := sag_internal._kg_whitelisted(cvt_rels, whitelist);
            foreach cvt_rel in array cvt_rels loop
                base := case when cvt.direction = 'out' then sag.kg_flatten_name(rel, cvt_rel)
                             else sag.kg_flatten_name(cvt_rel, rel) end;
                n := coalesce((counters ->> base)::integer, 0) + 1;
                counters := counters || jsonb_build_object(base, n);
                candidates := candidates || jsonb_build_object(
                    'flatten_relation', base || '_' || n, 'original_relation', rel, 'cvt_node_id', cvt.id,
                    'cvt_relation', cvt_rel, 'direction', cvt.direction);
            end loop;
        end loop;
    end loop;

    if jsonb_array_length(candidates) > 0 then
        -- The best flatten_candidates by BM25 against the question and the entity's name (in discovery order
        -- without a question), those giving at least one triple whose head differs from its tail, then the
        -- caller's choice (an LLM's) or the best flatten_top_k.
        if coalesce(btrim(question), '') <> '' then
            select jsonb_agg(candidates -> (r.ordinal - 1) order by r.score desc, r.ordinal) into ranked
              from sag.kg_rank_texts(array(select c ->> 'flatten_relation' from jsonb_array_elements(candidates) c),
                                     question || ' ' || coalesce(entity_name, '')) r;
        else
            ranked := candidates;
        end if;
        for cand in select c from jsonb_array_elements(ranked) with ordinality e(c, o) order by o
                     limit flatten_candidates loop
            part := sag_internal._kg_flat_triples(entity_id, entity_name, cand ->> 'flatten_relation', cand, hop2,
                                         limit_per_relation, seed);
            if jsonb_array_length(part) > 0 then
                meaningful := meaningful || (cand || jsonb_build_object('triples', part));
            end if;
        end loop;
        if flatten_choice is not null then
            select coalesce(jsonb_agg(m order by u.o), '[]') into chosen
              from unnest(flatten_choice) with ordinality u(r, o)
              join jsonb_array_elements(meaningful) m on m ->> 'flatten_relation' = u.r;
            select coalesce(jsonb_agg(c), '[]') into chosen
              from (select c from jsonb_array_elements(chosen) with ordinality e(c, o) order by o
                     limit flatten_top_k) x;
        else
            select coalesce(jsonb_agg(c order by o), '[]') into chosen
              from (select c, o from jsonb_array_elements(meaningful) with ordinality e(c, o) order by o
                     limit flatten_top_k) x;
        end if;
        for cand in select c from jsonb_array_elements(chosen) with ordinality e(c, o) order by o loop
            triples := triples || (cand -> 'triples');
            cvt_info := cvt_info || jsonb_build_object(
                'original_relation', cand ->> 'original_relation', 'cvt_node_id', cand ->> 'cvt_node_id',
                'cvt_relation', cand ->> 'cvt_relation', 'flatten_relation', cand ->> 'flatten_relation',
                'direction', cand ->> 'direction', 'flattened_triples', cand -> 'triples');
        end loop;
    end if;
    return jsonb_build_object(
        'entity', jsonb_build_object('id', entity_id, 'name', entity_name),
        'triples', triples,
        'cvt_info', cvt_info,
        'flatten_candidates', coalesce((select jsonb_agg(m ->> 'flatten_relation') from jsonb_array_elements(meaningful) m),
                                       '[]'));
end;
$$;
comment on function sag.kg_assemble_triples(text, text, text[], jsonb, jsonb, jsonb, text, integer, integer, text[],
                                            text[], integer, integer) is
    'get_triples over rows a backend fetched (sag.kg_triples for sag.relations, the SPARQL backend for an '
    'endpoint): regular triples sampled reproducibly (limit_per_relation, 3x when CVT nodes were found), CVT '
    'nodes flattened into rel1.rel2_N relations (sag.kg_flatten_name), ranked by BM25 (top flatten_candidates), '
    'head = tail dropped, flatten_choice (an LLM''s) or the best flatten_top_k kept.  Returns {entity, triples, '
    'cvt_info, flatten_candidates}.';

-- The triples of one flattened relation: the CVT node's edges through cvt_relation, named flatten_relation,
-- head = tail dropped, sampled to `lim`.
create or replace function sag_internal._kg_flat_triples(
    entity_id text, entity_name text, flatten_relation text, mapping jsonb, hop2 jsonb, lim integer, seed integer)
returns jsonb
language sql stable
set search_path = pg_catalog, sag, pg_temp
as $$
    select coalesce(jsonb_agg(t.triple order by t.id), '[]')
      from (select x.triple, x.id
              from (select e ->> 'id' as id,
                           sag_internal._kg_triple(entity_id, entity_name, flatten_relation, mapping ->> 'direction',
                                          e ->> 'id', e ->> 'name') as triple
                      from jsonb_array_elements(hop2) e
                     where e ->> 'cvt' = mapping ->> 'cvt_node_id' and e ->> 'direction' = mapping ->> 'direction'
                       and e ->> 'relation' = mapping ->> 'cvt_relation'
                       and e ->> 'id' is distinct from entity_id) x
             order by sag_internal._kg_sample_order(seed, flatten_relation || ':' || x.id)
             limit lim) t
$$;
