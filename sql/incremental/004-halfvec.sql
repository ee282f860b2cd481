-- sag-pg schema, version 4: embeddings stored as half-precision vectors (pgvector's halfvec).  Frozen once
-- released.
--
-- Why: at 512 dimensions the float4 vectors were most of the bytes of the database (2 KB a key, an event, a
-- chunk: 7.5 GB of the keys and events heaps and 6.6 GB of HNSW indexes at 1 M events), so most of what a
-- bulk load writes (twice, with the WAL) and what a search reads past the shared buffers.  halfvec halves
-- them; cosine similarities move by less than 1e-4 (an embedding's components are far above float16's
-- resolution), below what separates neighbours that matter; and pgvector's HNSW indexes halfvec up to
-- 4,000 dimensions (vector: 2,000), so 3,072-dimension embeddings get an index.  Queries still pass
-- vector values: pgvector casts vector to halfvec implicitly.
--
-- A bound database (columns typed vector(n)) is rewritten here and its HNSW indexes rebuilt with the
-- halfvec operator class (this takes as long as building them did); an unbound one only changes the
-- untyped columns, sag.bind_embedder types them halfvec(n).
do $$
declare
    dim integer := (select atttypmod from pg_attribute where attrelid = 'sag.keys'::regclass and attname = 'embedding');
    target text := case when dim > 0 then format('halfvec(%s)', dim) else 'halfvec' end;
    tbl text;
begin
    if dim > 0 then
        -- Shown by `sag-pg db upgrade` (alembic/env.py prints notices that start with "sag-pg: "): on a big
        -- database this migration runs as long as the HNSW builds did.
        raise notice 'sag-pg: storing about % embeddings as halfvec(%) and rebuilding their HNSW indexes; this takes about as long as building them did',
            (select coalesce(sum(greatest(c.reltuples, 0)), 0)::bigint from pg_class c
              where c.oid in ('sag.chunks'::regclass, 'sag.events'::regclass, 'sag.keys'::regclass)), dim;
    end if;
    drop index if exists sag.chunks_embedding_hnsw, sag.events_embedding_hnsw, sag.keys_embedding_hnsw;
    foreach tbl in array array['chunks', 'events', 'keys'] loop
        execute format('alter table sag.%I alter column embedding type %s', tbl, target);
        -- ALTER TYPE resets the storage to the type's (EXTENDED); keep vectors in the row while one fits
        -- comfortably in a page (6 KB: 3,000 half-precision dimensions), as 003 did.
        execute format('alter table sag.%I alter column embedding set storage %s',
                       tbl, case when dim between 1 and 3000 then 'plain' else 'main' end);
        if dim between 1 and 4000 then
            execute format('create index %I on sag.%I using hnsw (embedding halfvec_cosine_ops)',
                           tbl || '_embedding_hnsw', tbl);
        end if;
    end loop;
end $$;
