-- Recall statistics and eviction (issue #17, seed §5).  A memory item is a document.

-- Signatures of an earlier draft (never released): without the searches argument.
drop function if exists sag.record_recall(bigint[], float8[]);
drop function if exists sag.record_chunk_recall(bigint[], float8[]);

-- One statement for one search or recall, or for a batch of them (searches: which one each row belongs to;
-- NULL: all one): each document a search returned gains one recall and its best score in that search (a
-- document returned twice, e.g. by two of its chunks, counts once).  Rows are taken in id order so
-- concurrent writers never deadlock.
-- (the sources, issue #32: on Citus the documents are found on the workers holding them)
drop function if exists sag.record_recall(bigint[], float8[], integer[]);
drop function if exists sag.record_chunk_recall(bigint[], float8[], integer[]);
create or replace function sag.record_recall(document_ids bigint[], scores float8[], searches integer[] default null,
                                             source_ids bigint[] default null)
returns integer
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
declare
    _result integer;
    attempt integer;
begin
    for attempt in 1..3 loop
        begin
            with per_search as (
                select coalesce(u.search, 0) as search, u.id, max(coalesce(u.score, 0)) as score
                  from unnest(document_ids, scores, searches) u(id, score, search)
                 where u.id is not null group by 1, 2
            ), noted as (
                insert into sag.recall_stats as s (source_id, document_id, recall_count, total_score, last_recall_at)
                select d.source_id, p.id, count(*), sum(p.score), now()
                  from per_search p
                  join sag.documents d on (source_ids is null or d.source_id = any (source_ids)) and d.id = p.id
                 group by d.source_id, p.id order by d.source_id, p.id
                on conflict (source_id, document_id) do update
                   set recall_count = s.recall_count + excluded.recall_count,
                       total_score = s.total_score + excluded.total_score,
                       last_recall_at = excluded.last_recall_at
                returning 1)
            select count(*)::int into _result from noted;
            return _result;
        exception when foreign_key_violation then
            -- A document deleted while its recall was being written (issue #36: a concurrent delete cost the
            -- whole batch): the next attempt's statement no longer sees it, and the rest are recorded.
            if attempt = 3 then
                raise;
            end if;
        end;
    end loop;
end
$$;
comment on function sag.record_recall(bigint[], float8[], integer[], bigint[]) is
    'Records that searches or recalls returned these documents with these scores (parallel arrays; searches '
    'tells a batch''s searches apart, NULL = one; source_ids: their sources when known, NULL = look in all): '
    'per document and search, recall_count + 1 and total_score + its best score; last_recall_at = now(). A '
    'document deleted meanwhile is skipped, not the batch.  Returns how many documents.';

create or replace function sag.record_chunk_recall(chunk_ids bigint[], scores float8[], searches integer[] default null,
                                                   source_ids bigint[] default null)
returns integer
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
declare
    docs bigint[];
    doc_scores float8[];
    doc_searches integer[];
begin
    -- The chunks' documents first, then the recording (a function that writes is not called inside a
    -- statement over distributed tables: Citus).
    select array_agg(c.document_id), array_agg(u.score), array_agg(coalesce(u.search, 0))
      into docs, doc_scores, doc_searches
      from unnest(chunk_ids, scores, searches) u(id, score, search)
      join sag.chunks c on (source_ids is null or c.source_id = any (source_ids)) and c.id = u.id;
    return sag.record_recall(docs, doc_scores, doc_searches, source_ids);
end
$$;
comment on function sag.record_chunk_recall(bigint[], float8[], integer[], bigint[]) is
    'sag.record_recall for searches'' chunks: each chunk counts for its document (once per search, best score).';

-- value = w_recall ln(1 + recall_count) + w_score average score + w_recency 0.5 ^ (age / half_life), the age
-- since the last recall (since the document changed, if it was never recalled).
create or replace function sag.recall_value(recall_count bigint, total_score float8, last_at timestamptz,
                                            now timestamptz default now(), weights float8[] default '{0.3,0.5,0.2}',
                                            half_life interval default '30 days')
returns float8
language sql immutable parallel safe
set search_path = pg_catalog, sag, pg_temp
return weights[1] * ln(1 + greatest(coalesce(recall_count, 0), 0))
     + weights[2] * case when coalesce(recall_count, 0) > 0 then total_score / recall_count else 0 end
     + weights[3] * sag.temporal_weight(last_at, now, half_life);
comment on function sag.recall_value(bigint, float8, timestamptz, timestamptz, float8[], interval) is
    'Seed §5.1 memory value: 0.3 ln(1 + recall_count) + 0.5 total_score / recall_count + 0.2 recency '
    '(sag.temporal_weight of last_at), weights overridable.';

-- Which documents a policy evicts, per source:
--   none          nothing;
--   ttl           last activity (last recall, else last change) older than ttl;
--   capacity      beyond the max_items most recently changed (oldest go first);
--   recall_based  beyond the max_items of highest sag.recall_value (lowest go first);
--   hybrid        ttl, then capacity over what is left (either may be NULL).
create or replace function sag.eviction_candidates(
    policy text, source_ids bigint[] default null, ttl interval default null, max_items integer default null,
    weights float8[] default '{0.3,0.5,0.2}', half_life interval default '30 days', at timestamptz default now())
returns table (document_id bigint, source_id bigint, uri text, reason text, value float8)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
begin
    if (policy in ('none', 'ttl', 'capacity', 'recall_based', 'hybrid')) is not true then
        raise exception using errcode = '22023',
                              message = format('unknown eviction policy %L: use none, ttl, capacity, recall_based or hybrid',
                                               policy);
    end if;
    if (policy not in ('ttl') or ttl is not null) is not true then
        raise exception using errcode = '22023', message = 'the ttl policy needs a ttl';
    end if;
    if (policy not in ('capacity', 'recall_based') or max_items is not null) is not true then
        raise exception using errcode = '22023', message = format('the %s policy needs max_items', policy);
    end if;
    if (policy <> 'hybrid' or ttl is not null or max_items is not null) is not true then
        raise exception using errcode = '22023', message = 'the hybrid policy needs a ttl, max_items or both';
    end if;
    if (max_items is null or max_items >= 0) is not true then
        raise exception using errcode = '22023', message = format('max_items must be >= 0, got %s', max_items);
    end if;
    if (cardinality(weights) = 3) is not true then
        raise exception using errcode = '22023', message = 'recall weights are three: recall, score, recency';
    end if;
    if policy = 'none' then
        return;
    end if;
    return query
    with items as (
        select d.id, d.source_id, d.uri, d.updated_at,
               greatest(d.updated_at, rs.last_recall_at) as last_active,
               sag.recall_value(coalesce(rs.recall_count, 0), coalesce(rs.total_score, 0),
                                coalesce(rs.last_recall_at, d.updated_at), at, weights, half_life) as v
          from sag.documents d left join sag.recall_stats rs on rs.source_id = d.source_id and rs.document_id = d.id
         where source_ids is null or d.source_id = any(source_ids)
    ), expired as (
        select i.*, 'ttl'::text as reason from items i
         where policy in ('ttl', 'hybrid') and ttl is not null and i.last_active < at - ttl
    ), rest as (
        select i.*, row_number() over (partition by i.source_id
                                       order by case when policy = 'recall_based' then i.v end desc nulls last,
                                                i.updated_at desc, i.id desc) as rank
          from items i where i.id not in (select e.id from expired e)
    ), over_capacity as (
        select r.id, r.source_id, r.uri, r.updated_at, r.last_active, r.v,
               case when policy = 'recall_based' then 'recall_based' else 'capacity' end as reason
          from rest r
         where policy in ('capacity', 'recall_based', 'hybrid') and max_items is not null and r.rank > max_items
    )
    select x.id, x.source_id, x.uri, x.reason, x.v
      from (select e.id, e.source_id, e.uri, e.reason, e.v, e.updated_at from expired e
            union all
            select o.id, o.source_id, o.uri, o.reason, o.v, o.updated_at from over_capacity o) x
     order by x.reason, case when x.reason = 'recall_based' then x.v end, x.updated_at, x.id;
end;
$$;
comment on function sag.eviction_candidates(text, bigint[], interval, integer, float8[], interval, timestamptz) is
    'The documents an eviction policy would delete (none | ttl | capacity | recall_based | hybrid; max_items '
    'per source), with the reason and the recall value. Example: '
    'select * from sag.eviction_candidates(''recall_based'', max_items => 1000);';

-- Deletes through sag.delete_document (what `delete` does: key counts, orphan keys, co-occurrence evidence),
-- then folds the BM25 queue, so the statistics stay exact.
create or replace function sag.evict(
    policy text, source_ids bigint[] default null, ttl interval default null, max_items integer default null,
    weights float8[] default '{0.3,0.5,0.2}', half_life interval default '30 days', dry_run boolean default true)
returns table (document_id bigint, source_id bigint, uri text, reason text, value float8)
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    c record;
begin
    for c in select * from sag.eviction_candidates(policy, source_ids, ttl, max_items, weights, half_life, now()) loop
        if not dry_run then
            perform sag.delete_document(c.source_id, c.document_id);
        end if;
        document_id := c.document_id; source_id := c.source_id; uri := c.uri; reason := c.reason; value := c.value;
        return next;
    end loop;
    if not dry_run then
        perform sag.flush_term_stats();
    end if;
end;
$$;
comment on function sag.evict(text, bigint[], interval, integer, float8[], interval, boolean) is
    'Applies an eviction policy (see sag.eviction_candidates): lists the documents, and unless dry_run (the '
    'default) deletes them with sag.delete_document and folds the BM25 statistics queue.';

create or replace function sag.memory_stats(source_ids bigint[] default null, lim integer default 10)
returns table (document_id bigint, uri text, recall_count bigint, average_score float8, last_recall_at timestamptz,
               value float8)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return query
    select d.id, d.uri, rs.recall_count, rs.total_score / nullif(rs.recall_count, 0), rs.last_recall_at,
           sag.recall_value(rs.recall_count, rs.total_score, rs.last_recall_at)
      from sag.recall_stats rs join sag.documents d on d.source_id = rs.source_id and d.id = rs.document_id

     where source_ids is null or d.source_id = any(source_ids)
     order by rs.recall_count desc, rs.last_recall_at desc, d.id
     limit lim;
end
$$;
comment on function sag.memory_stats(bigint[], integer) is 'The most recalled documents with their recall statistics and value.';
