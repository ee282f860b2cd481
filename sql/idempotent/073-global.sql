-- GraphRAG global search (issue 19, seed "Global Search"): the map phase's batches of community reports and
-- the reduce phase's choice of rated points, both within a token budget (sag.estimate_tokens).
-- Re-applied on every upgrade.

-- The level: GraphRAG's default community_level 2, or the deepest level when the hierarchy has fewer.  Each
-- stored level is a partition of all the events (a community not split again is carried down, sag_pg/graphrag/
-- hierarchy.py), so level L holds each event's deepest community at a level <= L: GraphRAG's selection
-- (read_indexer_reports without dynamic community selection).
create or replace function sag_internal._default_level(run bigint, level integer default null)
returns integer
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return (
    select coalesce(level, (select least(2, max(c.level)) from sag.clusters c where c.run_id = run), 0));
end
$$;

create or replace function sag.community_level(source text default 'default', level integer default null,
                                               run_id bigint default null)
returns integer
language sql stable
set search_path = pg_catalog, sag, pg_temp
as $$
    select sag_internal._default_level(sag_internal._hierarchy_run_or_raise(source, run_id), level)
$$;
comment on function sag.community_level(text, integer, bigint) is
    'The community level global search and DRIFT read: level when given, else GraphRAG''s default 2, or the '
    'deepest level of the hierarchy when it has fewer.  P0002 without a hierarchy.  Example: select '
    'sag.community_level(''demo'');';

drop function if exists sag.report_batches(text, integer, integer, bigint, float8);
create or replace function sag.report_batches(
    source text default 'default',
    level integer default null,
    max_tokens integer default 8000,
    run_id bigint default null,
    min_rating float8 default 0,
    shuffle boolean default true,
    seed integer default 86)
returns table (batch integer, report_ids bigint[], context text, tokens integer)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    run bigint := sag_internal._hierarchy_run_or_raise(source, run_id);
    lvl integer := sag_internal._default_level(run, level);
    header constant text := E'-----Reports-----\nid|title|occurrence weight|content|rank';
    room integer;
    rec record;
    line text;
    cost integer;
    ids bigint[] := '{}';
    lines text[] := '{}';
    used integer;
    b integer := 0;
    m_cluster bigint[];
    m_source bigint[];
    m_event bigint[];
    e_source bigint[];
    e_id bigint[];
    e_chunk bigint[];
begin
    if (max_tokens >= 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.report_batches: max_tokens must be >= 1, got %s', max_tokens);
    end if;
    room := max_tokens - sag.estimate_tokens(header);
    if (room >= 2) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.report_batches: max_tokens %s leaves no room under the table header',
                                                      max_tokens);
    end if;
    used := 0;
    -- The communities' events (coordinator tables), then their chunks (on Citus the events are on the workers
    -- holding their sources): read apart, then joined here.
    select coalesce(array_agg(ce.cluster_id), '{}'), coalesce(array_agg(ce.source_id), '{}'),
           coalesce(array_agg(ce.event_id), '{}')
      into m_cluster, m_source, m_event
      from sag.cluster_events ce join sag.clusters c on c.id = ce.cluster_id
     where c.run_id = run and c.level = lvl;
    select coalesce(array_agg(e.source_id), '{}'), coalesce(array_agg(e.id), '{}'), coalesce(array_agg(e.chunk_id), '{}')
      into e_source, e_id, e_chunk
      from sag.events e
     where e.source_id = any (array(select distinct unnest(m_source))) and e.id = any (m_event);
    for rec in
        -- occurrence weight: the community's chunks (text units), over the most any community of the level has.
        with units as (
            select m.cluster_id, count(distinct e.chunk) as units
              from unnest(m_cluster, m_source, m_event) as m(cluster_id, source_id, event_id)
              join unnest(e_source, e_id, e_chunk) as e(source_id, id, chunk)
                on e.source_id = m.source_id and e.id = m.event_id
             group by m.cluster_id
        ),
        reports as (
            select c.id, r.title, r.full_content, r.rating, coalesce(u.units, 0) as units
              from sag.clusters c join sag.community_reports r on r.cluster_id = c.id
              left join units u on u.cluster_id = c.id
             where c.run_id = run and c.level = lvl and r.rating >= min_rating
        )
        -- shuffle (GraphRAG's shuffle_data with random_state 86): a seeded permutation of the reports, so that
        -- no batch holds only the best rated and the map calls do not see the reports in rank order; without
        -- it, best rated first.
        select r.id, r.title, r.full_content, r.rating,
               coalesce(round(r.units::numeric / nullif(max(r.units) over (), 0), 4), 0) as weight
          from reports r
         order by case when shuffle then md5(seed::text || '/' || r.id::text) end, r.rating desc, r.units desc, r.id
    loop
        line := concat_ws('|', rec.id, sag_internal._cell(rec.title), rec.weight, sag_internal._cell(rec.full_content), rec.rating);
        cost := sag.estimate_tokens(line) + 1;
        while cost > room loop
            -- A report longer than a whole batch is cut to fit (its content shortened, never the budget broken).
            rec.full_content := left(rec.full_content,
                                     greatest(0, floor(length(rec.full_content) * room::float8 / cost)::integer - 4));
            line := concat_ws('|', rec.id, sag_internal._cell(rec.title), rec.weight, sag_internal._cell(rec.full_content), rec.rating);
            cost := sag.estimate_tokens(line) + 1;
            exit when rec.full_content = '';
        end loop;
        if cost > room then
            continue;  -- not even its id and title fit: left out
        end if;
        if used + cost > room and cardinality(lines) > 0 then
            batch := b; report_ids := ids; context := header || E'\n' || array_to_string(lines, E'\n');
            tokens := sag.estimate_tokens(context);
            return next;
            b := b + 1; ids := '{}'; lines := '{}'; used := 0;
        end if;
        ids := ids || rec.id;
        lines := lines || line;
        used := used + cost;
    end loop;
    if cardinality(lines) > 0 then
        batch := b; report_ids := ids; context := header || E'\n' || array_to_string(lines, E'\n');
        tokens := sag.estimate_tokens(context);
        return next;
    end if;
end;
$$;
comment on function sag.report_batches(text, integer, integer, bigint, float8, boolean, integer) is
    'Global search, map phase: the reports of one level (NULL: GraphRAG''s default 2, or the deepest level when '
    'there are fewer) of the latest hierarchy (or run_id), in a permutation seeded by seed (GraphRAG''s '
    'shuffle_data, random_state 86; shuffle false: best rated first), packed greedily into batches whose -----Reports----- table (id|title|occurrence weight|content|rank) has at '
    'most max_tokens tokens (sag.estimate_tokens); a report longer than a batch is shortened to fit.  '
    'Example: select batch, report_ids, tokens from sag.report_batches(''demo'', 0, 2000);';

create or replace function sag.reduce_points(points jsonb, max_tokens integer default 8000)
returns jsonb
language sql immutable
set search_path = pg_catalog, sag, pg_temp
as $$
    with given as (
        select (p->>'analyst')::integer as analyst, (p->>'score')::float8 as score,
               coalesce(p->>'description', p->>'answer', '') as answer, o
          from jsonb_array_elements(coalesce(points, '[]'::jsonb)) with ordinality as t(p, o)
    ),
    rated as (  -- GraphRAG drops the points rated 0 (nothing to say), then sorts by score
        select g.*, format(E'----Analyst %s----\nImportance Score: %s\n%s', g.analyst + 1, g.score, g.answer) as text
          from given g where g.score > 0
    ),
    running as (
        select r.*, sum(sag.estimate_tokens(r.text) + 2) over (order by r.score desc, r.analyst, r.o) as used
          from rated r
    ),
    kept as (select * from running where used <= max_tokens)
    select jsonb_build_object(
        'points', coalesce((select jsonb_agg(jsonb_build_object('analyst', k.analyst, 'score', k.score, 'answer', k.answer)
                                             order by k.score desc, k.analyst, k.o) from kept k), '[]'::jsonb),
        'text', coalesce((select string_agg(k.text, E'\n\n' order by k.score desc, k.analyst, k.o) from kept k), ''),
        'tokens', coalesce((select max(k.used) from kept k), 0),
        'dropped_zero', (select count(*) from given g where not g.score > 0),
        'dropped_budget', (select count(*) from running r where r.used > max_tokens))
$$;
comment on function sag.reduce_points(jsonb, integer) is
    'Global search, reduce phase: of the map answers'' points [{"analyst", "score", "description"}] drop those '
    'scored 0, sort by score (best first), and keep the best while the ----Analyst n---- text stays within '
    'max_tokens (each point costs sag.estimate_tokens of its text + 2 for the blank line).  Returns '
    '{"points", "text", "tokens", "dropped_zero", "dropped_budget"}.';
