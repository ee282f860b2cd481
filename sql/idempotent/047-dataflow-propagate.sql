-- DataFlow activation, part 3: clue activation spreading over shared entities, breadth first (seed §6
-- multi_hop_recall, §1.3 step 3).  Re-applied on every upgrade.
--
-- Hop 0 is the seed events with their activations.  Hop h + 1, from the events first reached at hop h (the
-- frontier):
--   * candidates of a frontier event P: the events sharing one of P's non-hub keys (event_count <=
--     max_key_events), never visited (no event is reached twice: cycles are impossible); the candidate_limit
--     with most shared types, then the most specific shared keys (Σ sag_internal._dataflow_specificity; their count
--     without corpus_events), are scored;
--   * multi-dimension match of P against each (sag.dataflow_pair_relevance of P's keys against the
--     candidate's, names weighted by specificity when corpus_events is given): score = ratio_share
--     match_ratio + (1 - ratio_share) relevance;
--   * kept when relevance >= threshold, then the breadth best by score per P (seed breadth_per_hop);
--   * activation(C) = activation(P) · decay · score(P, C); a candidate reached from several frontier events
--     keeps its best parent (the seed gives it to whichever parent is expanded first: here the result does
--     not depend on an order);
--   * the max_frontier most activated new events form the next frontier (the seed's frontier grows as
--     breadth^hop; this bounds the work per hop);
--   * stops after depth hops or when a hop reaches nothing new.
drop function if exists sag.dataflow_propagate(bigint[], float8[], bigint[], jsonb, integer, integer, float8, float8,
                                               integer, integer, integer, float8, float8);
create or replace function sag.dataflow_propagate(
    seed_event_ids bigint[], seed_activations float8[], source_ids bigint[] default null,
    type_weights jsonb default null, depth integer default 3, breadth integer default 5,
    threshold float8 default 0.5, decay float8 default 0.8, max_frontier integer default 10,
    candidate_limit integer default 10, max_key_events integer default null,
    vector_share float8 default 0.4, ratio_share float8 default 0.4, corpus_events bigint default null,
    similarity_floor float8 default 0)
returns table (event_id bigint, hop integer, activation float8, parent_id bigint, relevance float8,
               match_ratio float8, score float8)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
declare
    hub integer := coalesce(max_key_events, (select c.hub_events from sag.calibration(source_ids) c limit 1));
    weights jsonb := coalesce(type_weights, sag.dataflow_type_weights(source_ids));
    srcs bigint[] := coalesce(source_ids, array(select s.id from sag.sources s order by s.id));
    visited bigint[];
    f_ids bigint[];
    f_act float8[];
    p_left bigint[];
    p_right bigint[];
    m_owner bigint[];
    m_key bigint[];
    h integer;
    n_ids bigint[];
    n_act float8[];
    n_parent bigint[];
    n_rel float8[];
    n_ratio float8[];
    n_score float8[];
begin
    if (depth >= 0) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.dataflow_propagate: depth must be >= 0, got %s', depth);
    end if;
    if (breadth >= 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.dataflow_propagate: breadth must be >= 1, got %s', breadth);
    end if;
    if (decay > 0 and decay <= 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.dataflow_propagate: decay must be in (0, 1], got %s', decay);
    end if;
    if (cardinality(coalesce(seed_event_ids, '{}')) = cardinality(coalesce(seed_activations, '{}'))) is not true then
        raise exception using errcode = '22023',
                              message = 'sag.dataflow_propagate: seed_event_ids and seed_activations must have the same length';
    end if;
    -- Hop 0: the seeds (a repeated id keeps its largest activation).
    select array_agg(s.id order by s.act desc, s.id), array_agg(s.act order by s.act desc, s.id)
      into f_ids, f_act
      from (select u.id, max(u.act) as act from unnest(seed_event_ids, seed_activations) as u(id, act)
             group by u.id) s;
    if f_ids is null then
        return;
    end if;
    visited := f_ids;
    return query select u.id, 0, u.act, null::bigint, null::float8, null::float8, null::float8
                   from unnest(f_ids, f_act) as u(id, act);

    for h in 1..depth loop
        -- Candidates of the frontier, best first per parent.
        select array_agg(c.parent), array_agg(c.child) into p_left, p_right
          from (select x.parent, x.child,
                       row_number() over (partition by x.parent order by x.types desc, x.keys desc, x.child) as rn
                  from (select ek.event_id as parent, other.event_id as child,
                               count(distinct k0.type) as types, sum(sag_internal._dataflow_specificity(k.event_count, corpus_events)) as keys
                          from sag.event_keys ek
                          join sag.keys k0 on k0.source_id = any (srcs) and k0.source_id = ek.source_id and k0.id = ek.key_id
                          -- the same name under any type (sag_internal._dataflow_entity)
                          join sag.keys k on k.source_id = any (srcs) and k.source_id = k0.source_id
                                         and k.normalized = k0.normalized and k.event_count <= hub
                          join sag.event_keys other on other.source_id = any (srcs) and other.source_id = k.source_id
                                                   and other.key_id = k.id
                          join sag.events e on e.source_id = any (srcs) and e.source_id = other.source_id
                                           and e.id = other.event_id

                         where ek.source_id = any (srcs) and ek.event_id = any (f_ids)
                           and other.event_id <> all (visited)
                         group by ek.event_id, other.event_id) x) c
         where c.rn <= candidate_limit;
        exit when p_left is null;
        select array_agg(ek.event_id), array_agg(ek.key_id) into m_owner, m_key
          from sag.event_keys ek
         where ek.source_id = any (srcs) and ek.event_id = any (f_ids || p_right);

        -- Score, keep, and pick each new event's best parent (in SQL: the frontier is small).
        select array_agg(n.child order by n.activation desc, n.child), array_agg(n.activation order by n.activation desc, n.child),
               array_agg(n.parent order by n.activation desc, n.child), array_agg(n.relevance order by n.activation desc, n.child),
               array_agg(n.match_ratio order by n.activation desc, n.child), array_agg(n.score order by n.activation desc, n.child)
          into n_ids, n_act, n_parent, n_rel, n_ratio, n_score
          from (select c.*
                  from (select distinct on (k.child) k.*
                          from (select b.*, fa.act * decay * b.score as activation
                                  from (select s.*, row_number() over (partition by s.parent
                                                                       order by s.score desc, s.child) as rn
                                          from (select r.left_id as parent, r.right_id as child, r.relevance,
                                                       r.match_ratio,
                                                       ratio_share * r.match_ratio + (1 - ratio_share) * r.relevance
                                                           as score
                                                  from sag.dataflow_pair_relevance(p_left, p_right, m_owner, m_key,
                                                                                   weights, vector_share, corpus_events,
                                                                                   similarity_floor, srcs) r
                                                 where r.relevance >= threshold) s) b
                                  join unnest(f_ids, f_act) as fa(id, act) on fa.id = b.parent
                                 where b.rn <= breadth) k
                         order by k.child, k.activation desc, k.parent) c
                 order by c.activation desc, c.child
                 limit max_frontier) n;
        exit when n_ids is null;
        return query select u.id, h, u.act, u.parent, u.rel, u.ratio, u.score
                       from unnest(n_ids, n_act, n_parent, n_rel, n_ratio, n_score)
                            as u(id, act, parent, rel, ratio, score);
        visited := visited || n_ids;
        f_ids := n_ids;
        f_act := n_act;
    end loop;
end;
$$;
comment on function sag.dataflow_propagate(bigint[], float8[], bigint[], jsonb, integer, integer, float8, float8,
                                           integer, integer, integer, float8, float8, bigint, float8) is
    'DataFlow clue propagation (seed §6, breadth first): from the seed events (hop 0, with their activations), '
    'each hop matches the frontier''s events against the unvisited events sharing a non-hub key with them '
    '(candidate_limit per event, by shared types, then the specificity of the shared keys), keeps those with relevance >= threshold, the '
    'breadth best by score (ratio_share match_ratio + (1 - ratio_share) relevance; sag.dataflow_pair_relevance '
    'with corpus_events and similarity_floor) per parent, activation = '
    'parent activation * decay * score (best parent wins), the max_frontier most activated as the next '
    'frontier; at most depth hops; no event is reached twice.  Returns every reached event with its hop, '
    'activation, parent and the match figures.';
