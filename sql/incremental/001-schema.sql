-- sag-pg schema, version 1.  Frozen once released: fix forward in a new file.
-- Embedding columns are created as plain `vector`; sag.bind_embedder() fixes their dimension
-- and builds the HNSW indexes once the database learns which embedder it serves.

create extension if not exists vector;
create extension if not exists pg_trgm;
create schema if not exists sag;

create table sag.settings (
    name        text primary key,
    value       jsonb not null,
    updated_at  timestamptz not null default now()
);
comment on table sag.settings is 'Database-wide settings: the bound embedder (name, dimension) and the SQL function hash.';

create table sag.sources (
    id          bigint generated always as identity primary key,
    name        text not null unique check (name <> ''),
    config      jsonb not null default '{}'::jsonb,
    created_at  timestamptz not null default now()
);
comment on table sag.sources is 'Tenants: every document, event and key belongs to exactly one source. '
    'config holds per-source settings: {"key_types": {"person": 1.0, ...}, "synonyms": {"alias": "canonical"}}.';

create table sag.documents (
    id                 bigint generated always as identity primary key,
    source_id          bigint not null references sag.sources(id) on delete cascade,
    uri                text not null,
    title              text not null default '',
    content            text not null,
    content_hash       text not null,
    summary            text not null default '',
    metadata           jsonb not null default '{}'::jsonb,
    prompt_tokens      integer not null default 0,
    completion_tokens  integer not null default 0,
    created_at         timestamptz not null default now(),
    updated_at         timestamptz not null default now(),
    unique (source_id, uri)
);

create table sag.chunks (
    id           bigint generated always as identity primary key,
    document_id  bigint not null references sag.documents(id) on delete cascade,
    source_id    bigint not null references sag.sources(id) on delete cascade,
    ordinal      integer not null,
    title        text not null default '',
    content      text not null,
    start_line   integer not null,
    end_line     integer not null,
    embedding    vector,
    -- Pre-segmented, lower-cased tokens separated by spaces (jieba for CJK): PostgreSQL's own
    -- parsers do not segment Chinese, so full-text search and BM25 work on these.
    tokens       text not null default '',
    token_count  integer not null default 0,
    tsv          tsvector generated always as (to_tsvector('simple'::regconfig, tokens)) stored,
    unique (document_id, ordinal)
);
create index chunks_source_idx on sag.chunks (source_id);
-- fastupdate off: a pending list grows during bulk loads and every search would scan it linearly.
create index chunks_tsv_idx on sag.chunks using gin (tsv) with (fastupdate = off);

create table sag.events (
    id           bigint generated always as identity primary key,
    chunk_id     bigint not null references sag.chunks(id) on delete cascade,
    document_id  bigint not null references sag.documents(id) on delete cascade,
    source_id    bigint not null references sag.sources(id) on delete cascade,
    ordinal      integer not null,
    title        text not null default '',
    content      text not null,
    event_time   timestamptz,
    embedding    vector,
    created_at   timestamptz not null default now()
);
create index events_chunk_idx on sag.events (chunk_id);
create index events_document_idx on sag.events (document_id);
create index events_source_idx on sag.events (source_id);

create table sag.keys (
    id            bigint generated always as identity primary key,
    source_id     bigint not null references sag.sources(id) on delete cascade,
    type          text not null check (type <> ''),
    name          text not null,
    normalized    text not null,
    value_string  text,
    value_number  double precision,
    value_bool    boolean,
    embedding     vector,
    event_count   integer not null default 0,
    created_at    timestamptz not null default now(),
    constraint keys_one_value check (num_nonnulls(value_string, value_number, value_bool) = 1),
    constraint keys_embedding_only_for_strings check (embedding is null or value_string is not null),
    constraint keys_one_per_meaning unique (source_id, type, normalized)
) with (fillfactor = 70);  -- room for HOT updates of event_count, which would otherwise touch the HNSW index
create index keys_source_normalized_idx on sag.keys (source_id, normalized);
-- The key's letter and digit runs, sorted: "302ai" and "ai302" share the signature "302 ai".
create function sag.key_signature(normalized text) returns text
language sql immutable parallel safe strict
return (select string_agg(m[1], ' ' order by m[1]) from regexp_matches(normalized, '([0-9]+|[^0-9]+)', 'g') m);
comment on function sag.key_signature(text) is
    'Order-free form of a normalized key: its digit and non-digit runs, sorted ("ai302" -> "302 ai").';
create index keys_signature_idx on sag.keys (source_id, type, sag.key_signature(normalized));
create index keys_normalized_trgm_idx on sag.keys using gin (normalized gin_trgm_ops) with (fastupdate = off);
create index keys_type_number_idx on sag.keys (source_id, type, value_number) where value_number is not null;

create table sag.event_keys (
    event_id  bigint not null references sag.events(id) on delete cascade,
    key_id    bigint not null references sag.keys(id) on delete cascade,
    count     integer not null default 1 check (count > 0),
    primary key (event_id, key_id)
);
create index event_keys_key_idx on sag.event_keys (key_id, event_id);

-- count(k, c) of the chunk weight formula: how often key k occurs in chunk c's events.
create table sag.chunk_keys (
    chunk_id  bigint not null references sag.chunks(id) on delete cascade,
    key_id    bigint not null references sag.keys(id) on delete cascade,
    count     integer not null check (count > 0),
    primary key (chunk_id, key_id)
);
create index chunk_keys_key_idx on sag.chunk_keys (key_id, chunk_id);
