-- Keys that name the same entity under two names (issue 33 item 3): "北溟大学" and "Beiming University", "沈墨"
-- and "Shen Mo".  One row per direction, so a key's aliases are one index probe.  origin: 'derived' (a chunk
-- writes one name with the other in parentheses, sag.derive_key_aliases; chunk_id is that chunk) or 'file'
-- (given by the user, sag-pg source S --aliases FILE).  rejected: undone by the user; derivation leaves it out
-- from then on and retrieval ignores it.  Per source, like every table whose rows belong to a source: source_id
-- first in the primary key, composite foreign keys to the keys.
create table sag.key_aliases (
    source_id     bigint not null,
    key_id        bigint not null,
    alias_key_id  bigint not null,
    origin        text not null check (origin in ('derived', 'file')),
    chunk_id      bigint,
    rejected      boolean not null default false,
    created_at    timestamptz not null default now(),
    primary key (source_id, key_id, alias_key_id),
    check (key_id <> alias_key_id),
    foreign key (source_id, key_id) references sag.keys (source_id, id) on delete cascade,
    foreign key (source_id, alias_key_id) references sag.keys (source_id, id) on delete cascade
);
create index key_aliases_alias_idx on sag.key_aliases (source_id, alias_key_id);
comment on table sag.key_aliases is
    'Keys naming the same entity (another script, a translation, an abbreviation), both directions; origin '
    'derived (a chunk writes "name (other name)") or file; rejected = undone by the user.  sag.retrieve treats a '
    'named key''s aliases as named too.';
