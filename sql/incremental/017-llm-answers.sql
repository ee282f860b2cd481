-- The LLM's extraction answers, kept so that a document whose ingest failed half-way resumes instead of starting
-- over (issue #37 item 13: a 2.2 KB document took 72 min in 18 calls of a CPU model; one failed call threw all
-- of it away).  Keyed by a digest of the model, the call's purpose, the rendered prompt (the chunk's content and
-- the prompt template, so another prompt version is another key) and the answer's schema; not per source (the
-- same prompt gives the same answer whatever source it is for).
create table sag.llm_answers (
    key         text primary key,
    purpose     text not null,
    model       text not null,
    answer      jsonb not null,
    created_at  timestamptz not null default now()
);
comment on table sag.llm_answers is
    'LLM answers of extraction calls by sha256(model, purpose, prompt, schema): a retried ingest reuses them.';
