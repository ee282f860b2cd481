-- GraphRAG communities and reports (issue 19): reading a hierarchy, reusing reports whose community kept its
-- events, and the material an extractive report is made of.  Re-applied on every upgrade.

create or replace function sag.membership_hash(event_ids bigint[])
returns text
language sql immutable parallel safe strict
set search_path = pg_catalog, sag, pg_temp
as $$ select md5(coalesce((select string_agg(e::text, ',' order by e) from unnest(event_ids) e), '')) $$;
comment on function sag.membership_hash(bigint[]) is
    'md5 of the sorted event ids of a community: equal for equal memberships, whatever their order.  A report '
    'is reused (sag.reuse_community_reports) while its community keeps this hash.';

create or replace function sag.hierarchy_run(source text default 'default')
returns bigint
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    sid bigint;
begin
    if source is not null then
        sid := (sag.source_ids(array[source]))[1];  -- P0002 for an unknown source
    end if;
    return (select r.id from sag.cluster_runs r
             where r.params->>'kind' = 'hierarchy' and r.source_id is not distinct from sid
             order by r.created_at desc, r.id desc limit 1);
end;
$$;
comment on function sag.hierarchy_run(text) is
    'The latest community hierarchy (sag-pg communities build) of a source (NULL: the one built over every '
    'source), or NULL when none was built.  Example: select sag.hierarchy_run(''demo'');';

create or replace function sag_internal._hierarchy_run_or_raise(source text, run_id bigint)
returns bigint
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    found bigint := coalesce(run_id, sag.hierarchy_run(source));
begin
    if found is null then
        raise exception using errcode = 'P0002',
            message = format('no community hierarchy for source %s', coalesce(source, '(all sources)')),
            hint = 'Build one with: sag-pg communities build';
    end if;
    return found;
end;
$$;

create or replace function sag.reuse_community_reports(run_id bigint)
returns integer
language plpgsql volatile
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
declare
    _result integer;
begin
    with missing as (
        select c.id, c.membership_hash from sag.clusters c
         where c.run_id = reuse_community_reports.run_id
           and not exists (select 1 from sag.community_reports r where r.cluster_id = c.id)
    ),
    found as (
        -- The newest report of the same membership (another run, or the same community one level up).
        select distinct on (m.id) m.id, r.*
          from missing m
          join sag.community_reports r on r.membership_hash = m.membership_hash
         order by m.id, r.created_at desc, r.cluster_id desc
    ),
    copied as (
        insert into sag.community_reports (cluster_id, kind, title, summary, findings, rating, rating_explanation,
                                           full_content, membership_hash, embedding, prompt_tokens,
                                           completion_tokens, created_at)
        select f.id, f.kind, f.title, f.summary, f.findings, f.rating, f.rating_explanation, f.full_content,
               f.membership_hash, f.embedding, 0, 0, f.created_at
          from found f
        returning 1
    )
    select count(*)::integer into _result from copied;
    return _result;
end
$$;
comment on function sag.reuse_community_reports(bigint) is
    'Incremental reports: every community of run_id without a report gets a copy of the newest report '
    'written for the same membership (sag.membership_hash), from an earlier hierarchy or another level; '
    'returns how many were copied (their token counts are 0: nothing was spent).  Only the rest are written anew.';

create or replace function sag.community_digest(cluster_ids bigint[], max_events integer default 40)
returns table (cluster_id bigint, event_id bigint, title text, content text, key_hits integer)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
declare
    m_cluster bigint[];
    m_source bigint[];
    m_event bigint[];
    t_cluster bigint[];
    t_key bigint[];
    h_source bigint[];
    h_event bigint[];
    h_key bigint[];
    e_source bigint[];
    e_id bigint[];
    e_title text[];
    e_content text[];
begin
    -- The memberships and top keys (coordinator tables), then the events and their keys (per-source tables),
    -- each read on its own: on Citus the community tables stay on the coordinator and the events are on the
    -- workers holding their sources.
    select coalesce(array_agg(ce.cluster_id), '{}'), coalesce(array_agg(ce.source_id), '{}'),
           coalesce(array_agg(ce.event_id), '{}')
      into m_cluster, m_source, m_event
      from sag.cluster_events ce where ce.cluster_id = any (cluster_ids);
    select coalesce(array_agg(c.id), '{}'), coalesce(array_agg((t ->> 'id')::bigint), '{}') into t_cluster, t_key
      from sag.clusters c cross join lateral jsonb_array_elements(c.top_keys) t
     where c.id = any (cluster_ids);
    select coalesce(array_agg(ek.source_id), '{}'), coalesce(array_agg(ek.event_id), '{}'),
           coalesce(array_agg(ek.key_id), '{}')
      into h_source, h_event, h_key
      from sag.event_keys ek
     where ek.source_id = any (array(select distinct unnest(m_source))) and ek.event_id = any (m_event)
       and ek.key_id = any (t_key);
    select coalesce(array_agg(e.source_id), '{}'), coalesce(array_agg(e.id), '{}'), coalesce(array_agg(e.title), '{}'),
           coalesce(array_agg(e.content), '{}')
      into e_source, e_id, e_title, e_content
      from sag.events e
     where e.source_id = any (array(select distinct unnest(m_source))) and e.id = any (m_event);
    return query
    -- Per community its max_events most characteristic events: those holding most of its top keys first.
    select x.cluster_id, x.event_id, x.title, x.content, x.key_hits
      from (select m.cluster_id, e.id as event_id, e.title, e.content, h.hits as key_hits,
                   row_number() over (partition by m.cluster_id order by h.hits desc, e.id) as n
              from unnest(m_cluster, m_source, m_event) as m(cluster_id, source_id, event_id)
              join unnest(e_source, e_id, e_title, e_content) as e(source_id, id, title, content)
                on e.source_id = m.source_id and e.id = m.event_id
              cross join lateral (
                  select count(*)::integer as hits
                    from unnest(h_source, h_event, h_key) as ek(source_id, event_id, key_id)
                   where ek.source_id = e.source_id and ek.event_id = e.id
                     and ek.key_id in (select t.key_id from unnest(t_cluster, t_key) as t(cluster_id, key_id)
                                        where t.cluster_id = m.cluster_id)) h) x
     where x.n <= max_events
     order by x.cluster_id, x.n;
end
$$;
comment on function sag.community_digest(bigint[], integer) is
    'What a community report is written from: per community its max_events events holding most of the '
    'community''s top keys (ties: oldest event first), with their title and content.';

create or replace function sag.community_reports(
    source text default 'default',
    level integer default null,
    run_id bigint default null)
returns table (id bigint, level integer, ordinal integer, parent_id bigint, size integer, kind text, title text,
               summary text, rating float8, findings jsonb, full_content text)
language sql stable
set search_path = pg_catalog, sag, pg_temp
as $$
    select c.id, c.level, c.ordinal, c.parent_id, c.size, r.kind, r.title, r.summary, r.rating, r.findings,
           r.full_content
      from sag.clusters c
      join sag.community_reports r on r.cluster_id = c.id
     where c.run_id = sag_internal._hierarchy_run_or_raise(source, community_reports.run_id)
       and (community_reports.level is null or c.level = community_reports.level)
     order by c.level, c.ordinal
$$;
comment on function sag.community_reports(text, integer, bigint) is
    'The reports of a community hierarchy (default: the latest of the source), one level or all, coarsest '
    'level first, largest community first.  P0002 when the source has no hierarchy.  '
    'Example: select id, level, size, title, rating from sag.community_reports(''demo'', level => 0);';

create or replace function sag.community_report(cluster_id bigint)
returns jsonb
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return (
    select jsonb_build_object(
               'id', c.id, 'run_id', c.run_id, 'level', c.level, 'ordinal', c.ordinal, 'parent_id', c.parent_id,
               'size', c.size, 'top_keys', c.top_keys, 'membership_hash', c.membership_hash,
               'children', coalesce((select jsonb_agg(k.id order by k.ordinal) from sag.clusters k
                                      where k.parent_id = c.id), '[]'::jsonb),
               'report', (select jsonb_build_object('kind', r.kind, 'title', r.title, 'summary', r.summary,
                                                    'findings', r.findings, 'rating', r.rating,
                                                    'rating_explanation', r.rating_explanation,
                                                    'full_content', r.full_content,
                                                    'current', r.membership_hash = c.membership_hash,
                                                    'prompt_tokens', r.prompt_tokens,
                                                    'completion_tokens', r.completion_tokens)
                            from sag.community_reports r where r.cluster_id = c.id))
      from sag.clusters c
     where c.id = community_report.cluster_id);
end
$$;
comment on function sag.community_report(bigint) is
    'One community as JSON: level, parent, children, size, top keys and its report (NULL if none).  '
    'Example: select jsonb_pretty(sag.community_report(42));';

create or replace function sag.hierarchy_levels(run_id bigint)
returns table (level integer, communities integer, events integer, reports integer, llm_reports integer)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return query
    select c.level, count(*)::integer, sum(c.size)::integer, count(r.cluster_id)::integer,
           count(r.cluster_id) filter (where r.kind = 'llm')::integer
      from sag.clusters c
      left join sag.community_reports r on r.cluster_id = c.id
     where c.run_id = hierarchy_levels.run_id
     group by c.level
     order by c.level;
end
$$;
comment on function sag.hierarchy_levels(bigint) is
    'Per level of a hierarchy: communities, events, reports (and how many an LLM wrote).';

create or replace function sag.nearest_reports(
    query_embedding @extschema:vector@.vector,
    source text default 'default',
    k integer default 5,
    level integer default null,
    run_id bigint default null)
returns table (id bigint, level integer, title text, full_content text, rating float8, similarity float8)
language sql stable
set search_path = pg_catalog, sag, pg_temp
as $$
    -- Reports are few (one per community), so an exact scan; no index needed.
    select c.id, c.level, r.title, r.full_content, r.rating, 1 - (r.embedding operator(@extschema:vector@.<=>) query_embedding::@extschema:vector@.halfvec)
      from sag.clusters c
      join sag.community_reports r on r.cluster_id = c.id
     where c.run_id = sag_internal._hierarchy_run_or_raise(source, nearest_reports.run_id)
       and (nearest_reports.level is null or c.level = nearest_reports.level)
       and r.embedding is not null
     order by r.embedding operator(@extschema:vector@.<=>) query_embedding::@extschema:vector@.halfvec, c.id
     limit greatest(k, 0)
$$;
comment on function sag.nearest_reports(@extschema:vector@.vector, text, integer, integer, bigint) is
    'DRIFT''s primer: the k reports (of one level, or all) nearest to query_embedding (the embedded HyDE answer) '
    'by cosine similarity.';
