-- Retrieval stage 2 (sag-algorithm §2.3), the multi-hop loop: from stage 1's keys to key-final.  Re-applied on
-- every upgrade.  The conventions of 030-retrieval-keys.sql hold here too; sag_internal._activate (reverse
-- activation and pruning) is shared with stage 1 and defined there.

-- Signatures that gained parameters: drop the old ones, or calls would be ambiguous between two overloads.
drop function if exists sag.expand_keys(@extschema:vector@.vector, bigint[], float8[], integer[], bigint[], integer, float8, integer,
                                        integer, integer);
drop function if exists sag.expand_keys(@extschema:vector@.vector, bigint[], float8[], integer[], bigint[], integer, float8, integer,
                                        integer, integer, bigint[]);
drop function if exists sag.expand_keys(@extschema:vector@.vector, bigint[], float8[], integer[], bigint[], integer, float8, integer,
                                        integer, integer, bigint[], bigint[], float8);
drop function if exists sag.expand_keys(@extschema:vector@.vector, bigint[], float8[], integer[], bigint[], integer, float8, integer,
                                        integer, integer, bigint[], bigint[], float8, bigint, float8);
drop function if exists sag.expand_keys(@extschema:vector@.vector, bigint[], float8[], integer[], bigint[], integer, float8, integer,
                                        integer, integer, bigint[], bigint[], float8, bigint);
drop function if exists sag.expand_keys(@extschema:vector@.vector, bigint[], float8[], integer[], bigint[], integer, float8, integer,
                                        integer, integer, bigint[], bigint[], float8, bigint, float8, boolean);  -- gained profile

create or replace function sag.expand_keys(
    query_embedding @extschema:vector@.vector,
    key_ids bigint[],
    key_weights float8[],
    key_steps integer[],
    source_ids bigint[] default null,
    max_step integer default 3,
    threshold float8 default 0.1,
    top_n integer default 20,
    min_new_keys integer default 1,
    max_key_events integer default 20,
    event_filter bigint[] default null,
    floor_key_ids bigint[] default null,
    floor_share float8 default 0,
    corpus_events bigint default null,
    similarity_floor float8 default 0,
    soft_hubs boolean default false,
    profile text default 'default')
returns table (key_id bigint, weight float8, step integer)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
set plan_cache_mode = force_generic_plan
as $$
declare
    qh @extschema:vector@.halfvec := query_embedding::@extschema:vector@.halfvec;  -- the columns' type, cast once (not per row)
    acc_ids bigint[];      -- accumulated key-final: first step, largest weight
    acc_w float8[];
    acc_steps integer[];
    f_ids bigint[];        -- the previous hop's pruned key set F
    f_w float8[];
    ev_ids bigint[];
    ev_w float8[];
    new_keys integer;
    hop integer;
    -- The sources (all when source_ids is NULL): every table read names them, so that on Citus each statement
    -- runs on the workers holding them.
    srcs bigint[] := coalesce(source_ids, array(select x.id from sag.sources x order by x.id));
    w_sources bigint[];
    w_events bigint[];
    w_ek float8[];
    floored bigint[] := '{}';
begin
    if (query_embedding is not null) is not true then
        raise exception using errcode = '22023', message = 'sag.expand_keys: query_embedding must not be NULL';
    end if;
    if (similarity_floor >= 0 and similarity_floor < 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.expand_keys: similarity_floor must be in [0, 1), got %s',
                                               similarity_floor);
    end if;
    if (cardinality(coalesce(key_ids, '{}')) = cardinality(coalesce(key_weights, '{}'))
        and cardinality(coalesce(key_ids, '{}')) = cardinality(coalesce(key_steps, '{}'))) is not true then
        raise exception using errcode = '22023',
                              message = 'sag.expand_keys: key_ids, key_weights and key_steps must have the same length';
    end if;
    if (max_step >= 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.expand_keys: max_step must be >= 1, got %s', max_step);
    end if;
    if (threshold >= 0 and threshold <= 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.expand_keys: threshold must be in [0, 1] (relative to the strongest key), got %s',
                                                      threshold);
    end if;
    if (top_n >= 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.expand_keys: top_n must be >= 1, got %s', top_n);
    end if;
    if (min_new_keys >= 0) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.expand_keys: min_new_keys must be >= 0, got %s', min_new_keys);
    end if;
    if (max_key_events >= 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.expand_keys: max_key_events must be >= 1, got %s',
                                               max_key_events);
    end if;
    if (not exists (select 1 from unnest(key_steps) s where s is null or s < 1)) is not true then
        raise exception using errcode = '22023', message = 'sag.expand_keys: key_steps must be >= 1';
    end if;
    if (floor_share >= 0 and floor_share <= 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.expand_keys: floor_share must be in [0, 1], got %s', floor_share);
    end if;
    if (profile in ('default', 'seed')) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.expand_keys: profile must be ''default'' or ''seed'', got %s',
                                               coalesce(profile, 'NULL'));
    end if;
    if profile = 'seed' then
        -- sag-algorithm §2.3 as written: W(k) the plain sum of W_e-jump (no key weight, no soft hubs), not
        -- normalized; no floor for named keys.
        floor_share := 0;
        corpus_events := null;
        soft_hubs := false;
    end if;

    -- The input keys (in the sources), duplicates merged.
    select array_agg(x.key_id order by x.key_id), array_agg(x.w order by x.key_id), array_agg(x.step order by x.key_id)
      into acc_ids, acc_w, acc_steps
      from (select u.key_id, max(u.w) as w, min(u.step) as step
              from unnest(key_ids, key_weights, key_steps) as u(key_id, w, step)
              join sag.keys k on k.source_id = any (srcs) and k.id = u.key_id
             group by u.key_id) x;
    f_ids := acc_ids;
    f_w := acc_w;
    hop := coalesce((select max(s) from unnest(acc_steps) s), 1);

    while f_ids is not null and hop < max_step loop
        hop := hop + 1;
        -- Events of F (hubs not expanded; only allowed events), each weighted W_e-jump = W_event-key-2 *
        -- cosine with the ORIGINAL query, computed exactly (no index): W_event-key-2(e) = sum of W(k) over k in
        -- F and e.
        -- (two statements: the events' W_event-key-2 by source, then their cosines by (source, id))
        select coalesce(array_agg(ev.source_id), '{}'), coalesce(array_agg(ev.event_id), '{}'),
               coalesce(array_agg(ev.w_ek), '{}')
          into w_sources, w_events, w_ek
          from (select ek.source_id, ek.event_id, sum(f.w) as w_ek
                  from unnest(f_ids, f_w) as f(key_id, w)
                  join sag.keys k on k.source_id = any (srcs) and k.id = f.key_id
                  join sag.event_keys ek on ek.source_id = any (srcs) and ek.source_id = k.source_id and ek.key_id = k.id
                 where k.event_count <= max_key_events and f.w > 0
                 group by ek.source_id, ek.event_id) ev;
        select array_agg(x.event_id), array_agg(x.w) into ev_ids, ev_w
          from (select ev.event_id,
                       ev.w_ek * greatest(0, (1 - coalesce(nullif(e.embedding operator(@extschema:vector@.<=>) qh, 'NaN'), 1) - similarity_floor) / (1 - similarity_floor)) as w
                  from unnest(w_sources, w_events, w_ek) as ev(source_id, event_id, w_ek)
                  join sag.events e on e.source_id = any (srcs) and e.source_id = ev.source_id and e.id = ev.event_id
                 where (event_filter is null or e.id = any (event_filter))) x;

        -- Reverse activation over all keys of those events, pruned and L1-normalized: F'.
        select array_agg(a.key_id order by a.weight desc, a.key_id), array_agg(a.weight order by a.weight desc, a.key_id)
          into f_ids, f_w
          from sag_internal._activate(ev_ids, ev_w, srcs, threshold, top_n, max_key_events, corpus_events, soft_hubs,
                                      seed => profile = 'seed') a;
        exit when f_ids is null;

        select count(*) into new_keys from unnest(f_ids) k where k <> all (acc_ids);
        -- Merge: a key keeps its first step and its largest weight.
        select array_agg(m.key_id order by m.key_id), array_agg(m.w order by m.key_id),
               array_agg(m.step order by m.key_id)
          into acc_ids, acc_w, acc_steps
          from (select u.key_id, max(u.w) as w, min(u.step) as step
                  from (select * from unnest(acc_ids, acc_w, acc_steps) as a(key_id, w, step)
                        union all
                        select f.key_id, f.w, hop from unnest(f_ids, f_w) as f(key_id, w)) u
                 group by u.key_id) m;
        exit when new_keys < min_new_keys;
    end loop;

    -- The floor: a key the question names keeps at least floor_share * the strongest weight (activation
    -- sums over events, so an entity with few events would otherwise weigh little beside the one the best
    -- passage is about: "Pterocarya or Cotula?").  A named key that activation pruned away comes back at
    -- the floor, as a step-1 key ("Are Watertown International Airport and Alexandria International Airport
    -- in the same state?": the passages about Alexandria outweighed every Watertown event, and the
    -- Watertown page fell to rank 8); a named hub does not (it would lift every passage it is in).
    -- Ordered by the weight before the floor.
    if floor_share > 0 then
        floored := array(select k.id from sag.keys k
                          where k.source_id = any (srcs)
                            and k.id = any (floor_key_ids) and k.id <> all (coalesce(acc_ids, '{}'))
                            and (max_key_events is null or k.event_count <= max_key_events));
    end if;
    return query
    with acc as (select * from unnest(acc_ids, acc_w, acc_steps) as a(key_id, w, step)),
    top as (select max(a.w) as w from acc a)
    select x.key_id, x.weight, x.step
      from (select a.key_id,
                   case when floor_share > 0 and a.key_id = any (floor_key_ids)
                        then greatest(a.w, floor_share * t.w) else a.w end as weight,
                   a.step, a.w as before
              from acc a cross join top t
            union all
            select k.id, floor_share * t.w, 1, 0
              from unnest(floored) as k(id) cross join top t
             where floor_share > 0 and t.w > 0) x
     order by x.before desc, x.step, x.key_id;
end;
$$;
comment on function sag.expand_keys(@extschema:vector@.vector, bigint[], float8[], integer[], bigint[], integer, float8, integer, integer,
                                    integer, bigint[], bigint[], float8, bigint, float8, boolean, text) is
    'Stage 2, the multi-hop loop (sag-algorithm §2.3).  From the previous hop''s key set F (first: the input '
    'keys): events of F (SQL join; hubs with more than max_key_events events not expanded; only event_filter '
    'events when given); their exact cosine with the original query; W_event-key-2(e) = sum of W(k) over k in F '
    'and e; W_e-jump = W_event-key-2 * cosine; W(k) = sum of W_e-jump over those events containing k, for all '
    'their keys; kept if >= threshold * max, top_n, L1-normalized -> F''.  New keys get step = the hop number '
    '(the input keys'' largest step + 1, +2, ...).  Stops after hop max_step or when fewer than min_new_keys new '
    'keys arrived.  Returns the accumulated key-final, input keys included: each key with its first step and its '
    'largest weight, ordered by weight; a key of floor_key_ids weighs at least floor_share * the largest weight '
    '(the keys named in the question, sag.named_keys), and one that activation pruned away (not a hub) is added '
    'at that weight with step 1.  The cosine is taken above similarity_floor as in '
    'sag.activate_keys; soft_hubs as there.  profile ''seed'': sag-algorithm §2.3 as written (W(k) = sum of '
    'W_e-jump, no key weight, not normalized, no floor: floor_share, corpus_events and soft_hubs are ignored).';
