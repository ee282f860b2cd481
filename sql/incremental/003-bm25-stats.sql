-- sag-pg schema, version 3: BM25 corpus statistics kept up to date by ingestion, vectors stored inline.
-- Frozen once released.

-- BM25 needs N, the average chunk length and every query term's document frequency.  Counting them per
-- query reads every chunk (N, avgdl) and every posting of a common term (df): linear in the corpus.  These
-- tables hold them instead.  Chunk writes do not update them row by row (a per-document upsert of ~50
-- terms cost more than the rest of the document's storage): a statement trigger queues the inserted and
-- deleted chunks' lexemes in sag.term_stats_pending, sag.flush_term_stats() folds the queue in (ingestion
-- calls it at the end of each run), and readers add what is still queued, so the figures are exact at any
-- moment.  TRUNCATE bypasses the triggers: run sag.rebuild_term_stats() after it.

create table sag.term_stats (
    source_id  bigint not null references sag.sources(id) on delete cascade,
    term       text not null,                     -- a lexeme of sag.chunks.tsv
    -- Chunks of the source holding it; the flush deletes zeros.  No CHECK (df >= 0): the flush upserts
    -- signed deltas, and a CHECK is tested on the proposed row before ON CONFLICT turns it into an update.
    df         bigint not null,
    primary key (term, source_id)                 -- looked up by term, for one source or all
);
comment on table sag.term_stats is
    'Document frequency of every lexeme of sag.chunks.tsv per source, for BM25; exact together with '
    'sag.term_stats_pending (see sag.flush_term_stats).';

create table sag.corpus_stats (
    source_id    bigint primary key references sag.sources(id) on delete cascade,
    chunk_count  bigint not null,  -- no CHECK, as for term_stats.df
    token_total  bigint not null
);
comment on table sag.corpus_stats is
    'Chunks and tokens per source (BM25''s N and average length); exact together with sag.term_stats_pending.';

-- No foreign key: deleting a source queues its chunks' removal while the source row goes away; the flush
-- drops what belongs to no source any more.
create table sag.term_stats_pending (
    id           bigint generated always as identity primary key,
    source_id    bigint not null,
    sign         smallint not null check (sign in (-1, 1)),  -- +1 chunk inserted, -1 chunk deleted
    token_count  integer not null,
    tsv          tsvector not null
);
comment on table sag.term_stats_pending is
    'Chunk insertions (+1) and deletions (-1) not yet folded into sag.term_stats and sag.corpus_stats.';

create function sag._queue_inserted_chunks() returns trigger
language plpgsql
set search_path = sag, public, pg_catalog
as $$
begin
    insert into sag.term_stats_pending (source_id, sign, token_count, tsv)
    select n.source_id, 1, n.token_count, n.tsv from inserted_chunks n;
    return null;
end;
$$;

create function sag._queue_deleted_chunks() returns trigger
language plpgsql
set search_path = sag, public, pg_catalog
as $$
begin
    insert into sag.term_stats_pending (source_id, sign, token_count, tsv)
    select o.source_id, -1, o.token_count, o.tsv from deleted_chunks o;
    return null;
end;
$$;

create function sag._queue_updated_chunks() returns trigger
language plpgsql
set search_path = sag, public, pg_catalog
as $$
begin
    -- Only rows whose counted columns changed (a trigger with transition tables cannot name columns).
    insert into sag.term_stats_pending (source_id, sign, token_count, tsv)
    select x.source_id, x.sign, x.token_count, x.tsv
      from deleted_chunks o join inserted_chunks n on n.id = o.id
     cross join lateral (values (o.source_id, -1::smallint, o.token_count, o.tsv),
                                (n.source_id, 1::smallint, n.token_count, n.tsv)) x(source_id, sign, token_count, tsv)
     where (o.source_id, o.token_count, o.tsv) is distinct from (n.source_id, n.token_count, n.tsv);
    return null;
end;
$$;

-- Statement triggers with transition tables: one queue insert per statement (COPY and cascaded deletes
-- included), not one per row.
create trigger chunks_queue_term_stats_insert after insert on sag.chunks
    referencing new table as inserted_chunks for each statement execute function sag._queue_inserted_chunks();
create trigger chunks_queue_term_stats_delete after delete on sag.chunks
    referencing old table as deleted_chunks for each statement execute function sag._queue_deleted_chunks();
create trigger chunks_queue_term_stats_update after update on sag.chunks
    referencing old table as deleted_chunks new table as inserted_chunks
    for each statement execute function sag._queue_updated_chunks();

-- What is already stored.
insert into sag.term_stats (term, source_id, df)
select u.lexeme, c.source_id, count(*) from sag.chunks c, unnest(c.tsv) u group by 1, 2;
insert into sag.corpus_stats (source_id, chunk_count, token_total)
select c.source_id, count(*), sum(c.token_count) from sag.chunks c group by 1;

-- Vectors inline: 512 float4 (2 KB) just exceed the 2 KB TOAST threshold, so with the default EXTENDED
-- storage every embedding went to the TOAST table (often compressed: hash embeddings are sparse), costing an
-- extra insert on write and a fetch plus decompression on every read (HNSW builds, exact distances).  PLAIN
-- keeps them in the row uncompressed; it needs the row to fit a page, so above 1,500 dimensions (6 KB) MAIN
-- (inline while it fits, moved out as a last resort).  sag.set_vector_storage (sql/idempotent/000-admin.sql)
-- applies the same rule when sag.bind_embedder types the columns.  Rows written before stay as they are.
do $$
declare
    dim integer := (select atttypmod from pg_attribute where attrelid = 'sag.keys'::regclass and attname = 'embedding');
    mode text := case when dim between 1 and 1500 then 'plain' else 'main' end;
begin
    execute format('alter table sag.chunks alter column embedding set storage %s', mode);
    execute format('alter table sag.events alter column embedding set storage %s', mode);
    execute format('alter table sag.keys alter column embedding set storage %s', mode);
end $$;

-- Likewise chunks.tsv (about 800 bytes for a 100-token chunk), read for every chunk BM25 scores: in the row
-- it saves a TOAST fetch per scored chunk (about a quarter of BM25's time in tune_retrieval --bm25-synthetic).
alter table sag.chunks alter column tsv set storage main;
