-- The question's direct matches and the entity chain, the helpers sag.retrieve (034-search.sql) calls after
-- stage 3 in the default profile (the seed profile has none of them): the best chunks by s, the pages about the
-- keys the question names, the bridges from its best passage, and the Han topic keys that are names.
-- Re-applied on every upgrade.  (Split from 034-search.sql, 2026-11-28.)

-- The candidates travel as arrays between sag.retrieve's steps (jsonb built and taken apart again cost ~1 ms a
-- search): the helpers that read the chunks jsonb are replaced by array ones.
drop function if exists sag_internal._direct_matches(jsonb, float8);
-- (the source ids, for Citus to route each lookup to the worker holding the source)
drop function if exists sag_internal._pages_about(bigint[]);
drop function if exists sag_internal._named_matches(bigint[], bigint[], float8[], bigint[]);
drop function if exists sag_internal._bridge_match(bigint[], bigint[], float8[], bigint, bigint[], float8[], bigint[]);
drop function if exists sag_internal._second_bridge(bigint[], bigint[], float8[], bigint, bigint[], float8[], bigint[], bigint);
drop function if exists sag_internal._named_matches(jsonb, bigint[]);
drop function if exists sag_internal._bridge_match(jsonb, bigint, bigint[], float8[], bigint[]);
drop function if exists sag_internal._second_bridge(jsonb, bigint, bigint[], float8[], bigint[], bigint);
-- The question's direct matches: the chunks of highest s (its own BM25 + cosine evidence, stage 3) from distinct
-- documents, one per independent witness in s: BM25 always, the cosine too when it does not only repeat the
-- words (lexical redundancy r < 0.5; the hash embedder's r is 1).  The final order keeps them among the first
-- places (sag.spread_documents, pinned): on a single-hop question the key evidence of a news story's many
-- retellings could push the passage both BM25 and a semantic cosine put first down to 6th-30th.
create or replace function sag_internal._direct_matches(chunk_ids bigint[], document_ids bigint[], s float8[],
                                                        lexical_redundancy float8)
returns bigint[]
language sql immutable
set search_path = pg_catalog, pg_temp
as $$
    select coalesce(array_agg(b.chunk_id order by b.s desc, b.chunk_id), '{}')
      from (select x.chunk_id, x.s
              from (select distinct on (u.document_id) u.document_id, u.chunk_id, u.s
                      from unnest(chunk_ids, document_ids, s) as u(chunk_id, document_id, s)
                     where u.s > 0
                     order by u.document_id, u.s desc, u.chunk_id) x
             order by x.s desc, x.chunk_id
             limit 1 + round(1 - coalesce(lexical_redundancy, 1))::integer) b
$$;

-- The pages about keys: documents of the key's source titled with its name (the title folded as key names
-- are, sag_internal._fold_word).  An encyclopedia's page is about its title's entity; other pages only mention
-- it.  Looked up by an expression index, one probe a key: folding every candidate's title cost 0.4 ms a
-- question.  Untitled documents are left out of the index: sag.retrieve plans generically, and against 7,337
-- untitled news documents (rgb-zh) the generic plan folded every title, 12-20 ms.  (The index holds
-- _fold_word's results: were its body ever changed, reindex it.)
create index if not exists documents_titled_key_idx on sag.documents (source_id, sag_internal._fold_word(title))
 where title <> '';

create or replace function sag_internal._pages_about(key_ids bigint[], source_ids bigint[] default null)
returns table (key_id bigint, document_id bigint)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
-- A probe of the index a key, never a scan that folds every title.
set enable_seqscan = off
as $$
#variable_conflict use_column
begin
    return query
    select k.id, d.id
      from sag.keys k
      join sag.documents d
        on d.source_id = k.source_id and d.title <> '' and sag_internal._fold_word(d.title) = k.normalized
     where (source_ids is null or k.source_id = any (source_ids))
       and k.id = any (coalesce(key_ids, '{}')) and k.normalized <> '';
end
$$;

-- The chunk of each key the question names, best first: the page about it (a document titled with its name)
-- when a candidate is one, else the heaviest (weight_init) holding it.  Every entity a question asks about
-- leads to one of its passages near the top, as the named-key floor leads activation to it.
create or replace function sag_internal._named_matches(chunk_ids bigint[], document_ids bigint[],
                                                       weights float8[], key_ids bigint[], source_ids bigint[])
returns bigint[]
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
declare
    page_keys bigint[];
    page_documents bigint[];
begin
    if cardinality(key_ids) = 0 then
        return '{}';
    end if;
    select coalesce(array_agg(p.key_id), '{}'), coalesce(array_agg(p.document_id), '{}') into page_keys, page_documents
      from sag_internal._pages_about(key_ids, source_ids) p;
    return (
    select coalesce(array_agg(b.chunk_id order by b.w desc, b.chunk_id), '{}')
      from (select distinct h.chunk_id, h.w
              from (select distinct on (ck.key_id) c.chunk_id, c.w
                      from unnest(chunk_ids, document_ids, weights) as c(chunk_id, document_id, w)
                      join sag.chunk_keys ck
                        on ck.source_id = any (source_ids) and ck.chunk_id = c.chunk_id and ck.key_id = any (key_ids)
                      left join unnest(page_keys, page_documents) p(key_id, document_id)
                        on p.key_id = ck.key_id and p.document_id = c.document_id
                     order by ck.key_id, p.document_id is not null desc, c.w desc, c.chunk_id) h) b);
end
$$;

-- The question's bridge: from its best passage (the first direct match), a key of key-final that passage
-- holds and the question does not name, and that key's chunk in another document.  The page about a key (a
-- document titled with its name: "Philadelphia Eagles", not "1946 NFL season", which mentions it) comes first:
-- the strongest such key with a page about it among the candidates, its page; else the strongest key, its
-- heaviest chunk (weight_init).  A two-hop question names the first entity; its passage names the second
-- (the bridge), whose own page holds the answer but shares few of the question's words ("The soundtrack from
-- the film Natural Born Killers was produced by a man born in what year?": the soundtrack's page names Trent
-- Reznor, whose page was not in the top 10 behind pages of other songs from the film).  NULL when there is
-- none.
create or replace function sag_internal._bridge_match(chunk_ids bigint[], document_ids bigint[], weights float8[],
                                                      anchor bigint, key_ids bigint[], key_weights float8[],
                                                      named bigint[], source_ids bigint[])
returns bigint
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
declare
    anchor_keys bigint[];
    anchor_document bigint;
    followed_ids bigint[];
    followed_weights float8[];
    page_keys bigint[];
    page_documents bigint[];
    h_key bigint[];
    h_chunk bigint[];
begin
    if anchor is null then
        return null;
    end if;
    -- From the anchor's few keys to their chunks (by key), not from every candidate's keys to the anchor's.
    anchor_keys := array(select a.key_id from sag.chunk_keys a where a.source_id = any (source_ids) and a.chunk_id = anchor);
    anchor_document := (select a.document_id from sag.chunks a where a.source_id = any (source_ids) and a.id = anchor);
    select coalesce(array_agg(f.key_id order by f.key_id), '{}'), coalesce(array_agg(f.weight order by f.key_id), '{}')
      into followed_ids, followed_weights
      from (select u.key_id, max(u.weight) as weight
              from unnest(key_ids, key_weights) as u(key_id, weight)
             where u.key_id = any (anchor_keys) and u.key_id <> all (coalesce(named, '{}'))
             group by u.key_id) f;
    if cardinality(followed_ids) = 0 then
        return null;
    end if;
    select coalesce(array_agg(p.key_id), '{}'), coalesce(array_agg(p.document_id), '{}') into page_keys, page_documents
      from sag_internal._pages_about(followed_ids, source_ids) p;
    select coalesce(array_agg(ck.key_id), '{}'), coalesce(array_agg(ck.chunk_id), '{}') into h_key, h_chunk
      from sag.chunk_keys ck
     where ck.source_id = any (source_ids) and ck.key_id = any (followed_ids) and ck.chunk_id = any (chunk_ids);
    return (
    select x.chunk_id
      from (select h.chunk_id, h.w, k.key_id, k.weight, p.document_id is not null as about
              from unnest(followed_ids, followed_weights) k(key_id, weight)
              join unnest(h_key, h_chunk) ck(key_id, chunk_id) on ck.key_id = k.key_id
              join unnest(chunk_ids, document_ids, weights) as h(chunk_id, document_id, w)
                on h.chunk_id = ck.chunk_id and h.document_id <> anchor_document
              left join unnest(page_keys, page_documents) p(key_id, document_id)
                on p.key_id = k.key_id and p.document_id = h.document_id) x
     order by bool_or(x.about) over (partition by x.key_id) desc, x.weight desc, x.key_id, x.about desc, x.w desc,
              x.chunk_id
     limit 1);
end
$$;

-- The question's second bridge: the page about another key of its best passage.  Of the passage's key-final
-- keys that the question does not name, the strongest with a candidate page about it (a document titled with
-- its name) outside the passage's document and the first bridge's; that page.  A passage often names two
-- entities the question may lead through ("... directed by X, starring Y"); the first bridge takes one.  Pages
-- only, not a chunk that merely mentions the key; NULL when there is none.
create or replace function sag_internal._second_bridge(chunk_ids bigint[], document_ids bigint[],
                                                       weights float8[], anchor bigint, key_ids bigint[],
                                                       key_weights float8[], named bigint[], first_bridge bigint,
                                                       source_ids bigint[])
returns bigint
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
declare
    anchor_keys bigint[];
    skipped_documents bigint[];
    page_keys bigint[];
    page_documents bigint[];
    h_key bigint[];
    h_chunk bigint[];
begin
    if anchor is null then
        return null;
    end if;
    anchor_keys := array(select a.key_id from sag.chunk_keys a
                          where a.source_id = any (source_ids) and a.chunk_id = anchor
                            and a.key_id <> all (coalesce(named, '{}')));
    if cardinality(anchor_keys) = 0 then
        return null;
    end if;
    skipped_documents := array(select a.document_id from sag.chunks a
                                where a.source_id = any (source_ids) and a.id in (anchor, first_bridge));
    select coalesce(array_agg(p.key_id), '{}'), coalesce(array_agg(p.document_id), '{}') into page_keys, page_documents
      from sag_internal._pages_about(anchor_keys, source_ids) p;
    select coalesce(array_agg(ck.key_id), '{}'), coalesce(array_agg(ck.chunk_id), '{}') into h_key, h_chunk
      from sag.chunk_keys ck
     where ck.source_id = any (source_ids) and ck.key_id = any (anchor_keys) and ck.chunk_id = any (chunk_ids);
    return (
    select h.chunk_id
      from unnest(chunk_ids, document_ids, weights) as h(chunk_id, document_id, w)
      join unnest(h_key, h_chunk) ck(key_id, chunk_id) on ck.chunk_id = h.chunk_id
      join (select u.key_id, max(u.weight) as weight
              from unnest(key_ids, key_weights) as u(key_id, weight) group by u.key_id) k on k.key_id = ck.key_id
      join unnest(page_keys, page_documents) p(key_id, document_id)
        on p.key_id = k.key_id and p.document_id = h.document_id
     where h.document_id <> all (skipped_documents)
     order by k.weight desc, k.key_id, h.w desc, h.chunk_id
     limit 1);
end
$$;

-- The Han topic keys a question names.  sag.named_keys takes a Han span as a name only when its key is a
-- person, organization or location (Chinese has no capitals); a project or a ship (青岚计划, 海燕号) is a topic key
-- and was never named, so "青岚计划的主持人毕业于哪所大学" started from the passage sharing most of its words
-- (a university's page saying many engineers graduated there) instead of the project's.  A topic key is taken as
-- a name on the corpus' own evidence that it is one: a document is about it (titled with its name,
-- sag_internal._pages_about), or it is linked to a key of another name (sag.key_aliases: the same entity
-- written in two scripts).  Han spans of 2-16 characters, as sag.named_keys; a hub is left out (a generic
-- word); a span inside a longer named one is not taken.
create or replace function sag_internal._named_topics(query text, source_ids bigint[], max_key_events integer,
                                                      taken bigint[] default '{}')
returns bigint[]
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
declare
    srcs bigint[] := coalesce(source_ids, array(select x.id from sag.sources x));
    spans text[];
    spelled bigint[];
    spelled_names text[];
    spelled_sources bigint[];
    named_ids bigint[];
    taken_names text[];
begin
    -- Han spans of the question (no table read: planned apart from the key lookups, as every step below, so
    -- each statement reads one table by source, as Citus routes it to the worker holding that source).
    select coalesce(array_agg(distinct substr(r.run, i, n)), '{}') into spans
      from (select x.m[1] as run
              from regexp_matches(normalize(coalesce(query, ''), NFKC), '[' || sag_internal._han_class() || ']{2,}',
                                  'g') as x(m)) r
     cross join lateral generate_series(1, char_length(r.run) - 1) as i
     cross join lateral generate_series(2, least(16, char_length(r.run) - i + 1)) as n;
    if cardinality(spans) = 0 then
        return '{}';
    end if;
    -- The topic keys spelled in the question (one index probe a span) ...
    select coalesce(array_agg(k.id), '{}'), coalesce(array_agg(k.normalized), '{}'), coalesce(array_agg(k.source_id), '{}')
      into spelled, spelled_names, spelled_sources
      from sag.keys k
     where k.source_id = any (srcs) and k.normalized = any (spans)
       and k.type = 'topic' and k.value_string is not null
       and (max_key_events is null or k.event_count <= max_key_events)
       and k.id <> all (coalesce(taken, '{}'));
    if cardinality(spelled) = 0 then
        return '{}';
    end if;
    -- ... then the evidence that one is a name, for those few only: a page about it or a link to a key of
    -- another name.
    named_ids := array(select p.key_id from sag_internal._pages_about(spelled, srcs) p);
    named_ids := named_ids || array(select a.key_id from sag.key_aliases a
                                     where a.source_id = any (srcs) and a.key_id = any (spelled) and not a.rejected);
    select coalesce(array_agg(t.normalized), '{}') into taken_names
      from sag.keys t where t.source_id = any (srcs) and t.id = any (coalesce(taken, '{}'));
    return (
    -- (in the order of their sources, then ids: within a source ids follow the ingest on one node and on Citus)
    with found as (
        select f.id, f.normalized, f.source_id
          from unnest(spelled, spelled_names, spelled_sources) f(id, normalized, source_id) where f.id = any (named_ids))
    select coalesce(array_agg(f.id order by f.source_id, f.id), '{}')
      from found f
     where not exists (select 1 from found g where g.normalized <> f.normalized and strpos(g.normalized, f.normalized) > 0)
       and not exists (select 1 from unnest(taken_names) t(normalized)
                        where t.normalized <> f.normalized and strpos(t.normalized, f.normalized) > 0));
end
$$;
