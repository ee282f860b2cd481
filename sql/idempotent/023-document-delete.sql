-- Deleting one document: what its deletion takes off the rest of the database (term statistics, relations'
-- evidence, key counts), then its rows. Storing one is in 020-ingest.sql; both keep the writers' lock order.

-- What a document's deletion takes off the rest of the database, before its rows go (explicit steps, no
-- triggers: Citus distributes no table with triggers, and a reader sees here everything a deletion does):
--   * its chunks' lexemes, queued (-1) for the BM25 statistics (sag.flush_term_stats folds them);
--   * its events' evidence of relations: co-occurrence relations weaken (n / (n + 1) of the evidence left),
--     co-occurrence and LLM relations left with no evidence are deleted; stated relations stay.  A
--     co-occurrence relation's evidence is the events linked to both of its keys (not stored, 050): what the
--     document takes off is found in its links, as the ingest counted them (sag_internal._cooccur_links).
drop function if exists sag_internal._before_document_delete(bigint);  -- before the source argument
create or replace function sag_internal._before_document_delete(src bigint, p_document_id bigint)
returns void
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    touched bigint[];
    emptied bigint[];
begin
    insert into sag.term_stats_pending (source_id, sign, token_count, tsv)
    select c.source_id, -1, c.token_count, c.tsv from sag.chunks c
     where c.source_id = src and c.document_id = p_document_id;

    -- Co-occurrence: the pairs of entity keys (every type but action and time) of each of its events.
    with entity_links as materialized (
        select ek.event_id, ek.key_id
          from sag.events e
          join sag.event_keys ek on ek.source_id = e.source_id and ek.event_id = e.id
          join sag.keys k on k.source_id = ek.source_id and k.id = ek.key_id
         where e.source_id = src and e.document_id = p_document_id and ek.source_id = src and k.source_id = src
           and k.type not in ('action', 'time')
    ), counted as (
        select a.key_id as head, b.key_id as tail, count(*)::int as n
          from entity_links a join entity_links b on b.event_id = a.event_id and b.key_id > a.key_id
         group by a.key_id, b.key_id
    ), weakened as (
        update sag.relations r
           set evidence_count = r.evidence_count - c.n,
               weight = sag_internal._cooccurrence_weight(greatest(r.evidence_count - c.n, 0))
          from counted c
         where r.source_id = src and r.head_key_id = c.head and r.relation_type = 'related_to'
           and r.tail_key_id = c.tail and r.origin = 'cooccurrence'
        returning r.id, r.evidence_count
    )
    select array_agg(w.id order by w.id) into touched from weakened w where w.evidence_count <= 0;

    -- LLM relations: the evidence rows of its events.
    with gone as (
        delete from sag.relation_events re
         using sag.events e
         where e.source_id = src and e.document_id = p_document_id
           and re.source_id = src and re.event_id = e.id
        returning re.source_id, re.relation_id
    ), counted as (
        select g.relation_id, count(*)::int as n from gone g group by g.relation_id
    ), weakened as (
        update sag.relations r
           set evidence_count = r.evidence_count - c.n
          from counted c
         where r.source_id = src and r.id = c.relation_id and r.origin = 'llm'
        returning r.id, r.evidence_count
    )
    select array_agg(w.id order by w.id) into emptied from weakened w where w.evidence_count <= 0;

    touched := coalesce(touched, '{}') || coalesce(emptied, '{}');
    if cardinality(touched) > 0 then
        delete from sag.relations r where r.source_id = src and r.id = any(touched);
    end if;
end;
$$;
comment on function sag_internal._before_document_delete(bigint, bigint) is
    'A document about to be deleted: queues its chunks for the BM25 statistics and takes its events off the '
    'evidence of relations (deleting co-occurrence and LLM relations left with none).';

-- How many events of a document link to each key: what its deletion takes off, or its insertion adds to,
-- sag.keys.event_count.
drop function if exists sag_internal._document_key_events(bigint);  -- before the source argument
create or replace function sag_internal._document_key_events(p_source_id bigint, p_document_id bigint)
returns table (key_id bigint, n integer)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return query
    select ek.key_id, count(*)::int from sag.event_keys ek
      join sag.events e on e.source_id = ek.source_id and e.id = ek.event_id
     where e.source_id = p_source_id and ek.source_id = p_source_id and e.document_id = p_document_id
     group by ek.key_id;
end
$$;

drop function if exists sag.delete_document(bigint);  -- before the source argument
create or replace function sag.delete_document(p_source_id bigint, p_document_id bigint)
returns boolean
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    ids bigint[];
    deltas integer[];
begin
    perform sag_internal._wait_for_index_builds();
    select array_agg(x.key_id order by x.key_id), array_agg(-x.n order by x.key_id) into ids, deltas
      from sag_internal._document_key_events(p_source_id, p_document_id) x;
    if not exists (select 1 from sag.documents d where d.source_id = p_source_id and d.id = p_document_id) then
        return false;
    end if;
    perform sag_internal._before_document_delete(p_source_id, p_document_id);
    delete from sag.documents where source_id = p_source_id and id = p_document_id;
    if ids is not null then
        perform sag_internal._adjust_key_counts(p_source_id, ids, deltas);
    end if;
    return true;
end;
$$;
comment on function sag.delete_document(bigint, bigint) is
    'Deletes a document (source id, document id) with its chunks, events and links, keeps key event counts '
    'right and removes keys left with no event. Returns false if there was no such document.';

