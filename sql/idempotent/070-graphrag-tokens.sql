-- GraphRAG context budgets (issue 19): a token estimate and the packing of table rows into a budget.
-- Re-applied on every upgrade.
--
-- Tokens are estimated, not counted with a model's tokenizer (none is installed, and the embedder may be any):
-- every CJK character is one token and every other run of non-space characters one token per 4 characters
-- (rounded up), the usual rule of thumb for BPE tokenizers on English.  It over-counts long English words,
-- so a budget measured with it is kept by the real tokenizer too.

create or replace function sag.estimate_tokens(content text)
returns integer
language sql immutable parallel safe strict
set search_path = pg_catalog, sag, pg_temp
return regexp_count(content, '[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]'
                             || '|[^\s\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]{1,4}');
comment on function sag.estimate_tokens(text) is
    'Estimated tokens of a text, as GraphRAG budgets count them: one per CJK character, one per 4 other '
    'non-space characters of a word (rounded up).  Example: select sag.estimate_tokens(''Ada met 巴贝奇'') -- 5';

-- One table cell: newlines and the column delimiter would break the table, so both become spaces.
create or replace function sag_internal._cell(value text)
returns text
language sql immutable parallel safe
set search_path = pg_catalog, sag, pg_temp
return regexp_replace(coalesce(value, ''), '[\r\n|]+', ' ', 'g');

create or replace function sag.pack_rows(rows text[], budget integer)
returns integer
language sql immutable parallel safe
set search_path = pg_catalog, sag, pg_temp
as $$
    -- Each row costs its tokens plus one for its line break.
    select count(*)::integer
      from (select sum(sag.estimate_tokens(r.row) + 1) over (order by r.n) as used
              from unnest(rows) with ordinality as r(row, n)) x
     where x.used <= budget
$$;
comment on function sag.pack_rows(text[], integer) is
    'How many of rows (in order) fit in budget tokens: the longest prefix whose sum of '
    'sag.estimate_tokens(row) + 1 (the line break) is <= budget.  Example: select sag.pack_rows(array[''a b'', ''c''], 3) -- 1';

create or replace function sag_internal._table_text(name text, header text, rows text[])
returns text
language sql immutable parallel safe
set search_path = pg_catalog, sag, pg_temp
as $$
    select case when coalesce(cardinality(rows), 0) = 0 then ''
                else '-----' || name || '-----' || E'\n' || header || E'\n' || array_to_string(rows, E'\n') end
$$;

-- What a table costs before its first row: its -----name----- line and its header, with their line breaks.
create or replace function sag_internal._table_overhead(name text, header text)
returns integer
language sql immutable parallel safe
set search_path = pg_catalog, sag, pg_temp
return sag.estimate_tokens('-----' || name || '-----') + sag.estimate_tokens(header) + 2;
