-- Loading an RDF import (issue #18): the parser (sag_pg/kg/rdf.py) COPYs triples into sag.kg_import_rows, one
-- batch at a time; sag.kg_load_batch turns a batch into keys, names and relations.  Re-applied on every upgrade.

-- The key type of an imported node or literal (sag.kg_import_rows.kind).
create or replace function sag_internal._kg_key_type(kind "char")
returns text
language sql immutable parallel safe
set search_path = pg_catalog, sag, pg_temp
as $$
    select case kind when 'e' then 'entity' when 's' then 'literal' when 'f' then 'number' when 'b' then 'bool'
                     when 'd' then 'date' end
$$;

-- A key's normalized form for an imported value: the value itself (ids are case-sensitive and already
-- canonical), cut to 400 characters plus its md5 when longer than 1,000 bytes (a B-tree entry holds ~2,700).
create or replace function sag_internal._kg_normalized(value text)
returns text
language sql immutable parallel safe
set search_path = pg_catalog, sag, pg_temp
as $$ select case when octet_length(value) <= 1000 then value else left(value, 400) || '#' || md5(value) end $$;

create or replace function sag.kg_load_batch(batch_id bigint, target_source bigint, relation_weight real default 1)
returns jsonb
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    triples bigint;
    new_keys bigint;
    new_names bigint;
    new_relations bigint;
begin
    if (relation_weight between 0 and 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.kg_load_batch: relation_weight must be in [0, 1], got %s',
                                               relation_weight);
    end if;
    select count(*) into triples from sag.kg_import_rows r where r.batch = batch_id;
    -- Fresh statistics for the joins below: a batch is COPYed just before (the planner would take 50,000 rows
    -- for a few dozen and pick nested loops), and while a graph is young every batch multiplies its keys and
    -- relations.  Re-analysed when a batch is at least half their size: O(log n) times in an import.
    analyze sag.kg_import_rows;
    if triples * 2 >= (select greatest(c.reltuples, 0) from pg_class c where c.oid = 'sag.keys'::regclass) then
        analyze sag.keys;
    end if;
    if triples * 2 >= (select greatest(c.reltuples, 0) from pg_class c where c.oid = 'sag.relations'::regclass) then
        analyze sag.relations;
    end if;
    -- Nodes: every subject, every object that is not a name.  Imported keys have no event: pinned keeps them.
    with nodes as (
        select r.subject as value, 'e'::"char" as kind from sag.kg_import_rows r where r.batch = batch_id
        union
        select r.object, r.kind from sag.kg_import_rows r where r.batch = batch_id and r.kind <> 'n'
    ),
    added as (
        insert into sag.keys (source_id, type, name, normalized, value_string, value_number, value_bool, pinned)
        select target_source, sag_internal._kg_key_type(n.kind), n.value, sag_internal._kg_normalized(n.value),
               case when n.kind in ('e', 's', 'd') then n.value end,
               case when n.kind = 'f' then n.value::float8 end,
               case when n.kind = 'b' then n.value::boolean end,
               true
          from nodes n
         order by 2, 4
        on conflict (source_id, type, normalized) do nothing
        returning 1
    )
    select count(*) into new_keys from added;

    with added as (
        insert into sag.kg_names (key_id, source_id, lang, name)
        select k.id, target_source, r.lang, r.object
          from sag.kg_import_rows r
          join sag.keys k on k.source_id = target_source and k.type = 'entity'
                         and k.normalized = sag_internal._kg_normalized(r.subject)
         where r.batch = batch_id and r.kind = 'n'
        on conflict (source_id, key_id, lang, md5(name)) do nothing

        returning 1
    )
    select count(*) into new_names from added;

    with added as (
        insert into sag.relations (source_id, head_key_id, relation_type, tail_key_id, weight, origin)
        select target_source, h.id, r.predicate, t.id, relation_weight, 'import'
          from sag.kg_import_rows r
          join sag.keys h on h.source_id = target_source and h.type = 'entity'
                         and h.normalized = sag_internal._kg_normalized(r.subject)
          join sag.keys t on t.source_id = target_source and t.type = sag_internal._kg_key_type(r.kind)
                         and t.normalized = sag_internal._kg_normalized(r.object)
         where r.batch = batch_id and r.kind <> 'n'
        on conflict (source_id, head_key_id, relation_type, tail_key_id) do nothing
        returning 1
    )
    select count(*) into new_relations from added;

    delete from sag.kg_import_rows r where r.batch = batch_id;
    return jsonb_build_object('triples', triples, 'keys', new_keys, 'names', new_names, 'relations', new_relations);
end;
$$;
comment on function sag.kg_load_batch(bigint, bigint, real) is
    'Moves one batch of parsed triples (sag.kg_import_rows) into the source''s knowledge graph: nodes become '
    'keys (type entity, normalized = the id; literals: literal / number / bool / date), names sag.kg_names, the '
    'other triples sag.relations (origin import, relation_weight).  Returns the counts of triples read and of '
    'keys, names and relations added (duplicates are skipped).';
