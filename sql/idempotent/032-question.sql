-- The question side of a search, in SQL: its BM25 terms, the keys it names and its sources' synonyms.  Re-applied
-- on every upgrade.  sag.retrieve and sag.search call them, so psql and Python analyse a question the same way.
--
-- Chinese is not segmented with a dictionary of its own: a question's Han runs are segmented against the
-- index's own vocabulary (sag.term_stats, the lexemes the chunks were indexed with).  A word the index does
-- not hold cannot score in BM25 anyway, so the index's vocabulary is the only dictionary that matters; its
-- document frequencies play the part of jieba's word frequencies in jieba's own dynamic programme (the most
-- probable route), and the 2- and 3-character words inside a longer word are added as jieba's
-- cut_for_search does at ingestion.

-- Han ideographs (+ 〇 and 々), as sag_pg.text.tokenize._HAN.
create or replace function sag_internal._han_class()
returns text
language sql immutable parallel safe
set search_path = pg_catalog, pg_temp
as $$ select '\u3005\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f' $$;

-- The punctuation a folded name keeps, in its context (the kept text, as normalize_key's loop sees it).
create or replace function sag_internal._name_punctuation(kept text)
returns text
language sql immutable parallel safe
set search_path = pg_catalog, pg_temp
as $$
    select case when kept !~ '[+#%.]' then kept
                else pg_catalog.regexp_replace(pg_catalog.regexp_replace(pg_catalog.regexp_replace(
                         kept, '(?<![[:alpha:]+#])[+#]+', '', 'g'), '(?<![[:digit:]])%', '', 'g'),
                     '(?<![[:digit:]])\.', '', 'g') end
$$;

-- A name as key normalization folds it (sag_pg.text.normalize.normalize_key without synonyms, which ingestion
-- stored in keys.normalized): NFKC, case folded (lower case, and ß -> ss, ς -> σ, İ -> i̇ as Python's casefold),
-- Latin diacritics dropped, letters, digits and marks kept, and, as there, the punctuation that makes another
-- name: '.' between digits (3.5 is not 35, BA.5.2 is not BA52), '+' and '#' after a letter (C++ and C# are not
-- C), '%' after a digit.  Like normalize_key, the context is the kept text: "Dan + Shay" keeps its '+'.
-- (Without that punctuation 123 of the 27 k keys of rgb-zh, 14 of MuSiQue's 11 k, could not be named.)
-- Differs from it only where Python's Unicode tables do (Cherokee case, marks outside U+0300-U+036F).
create or replace function sag_internal._fold_word(word text)
returns text
language sql immutable parallel safe
set search_path = pg_catalog, pg_temp
as $$
    -- One expression (a FROM clause made every call slower): the common words first, each path the same result.
    select case when word ~ '^[A-Za-z0-9]*$' then pg_catalog.lower(word)
                when word ~ '^[\u3400-\u4dbf\u4e00-\u9fff]+$' then word  -- Han without compatibility forms
                when word ~ '^[\x01-\x7f]*$'
                then sag_internal._name_punctuation(pg_catalog.regexp_replace(pg_catalog.regexp_replace(
                         pg_catalog.lower(word), '\.(?![0-9])', '', 'g'), '[^a-z0-9+#.%]', '', 'g'))
                else sag_internal._name_punctuation(pg_catalog.regexp_replace(pg_catalog.regexp_replace(
                         pg_catalog.replace(
                             pg_catalog.normalize(
                                 pg_catalog.regexp_replace(
                                     pg_catalog.normalize(
                                         pg_catalog.translate(
                                             pg_catalog.replace(pg_catalog.lower(pg_catalog.replace(
                                                 pg_catalog.normalize(word, 'NFKC'), 'İ', pg_catalog.chr(57344))),
                                                 'ß', 'ss'),
                                             'ς', 'σ'),
                                         'NFD'),
                                     '([a-z])[\u0300-\u036f]+', '\1', 'g'),
                                 'NFC'),
                             -- İ folds to i + U+0307, whose mark no Latin letter's fold drops
                             pg_catalog.chr(57344), 'i' || pg_catalog.chr(775)),
                         '\.(?![[:digit:]])', '', 'g'),
                     '[^[:alnum:]\u0300-\u036f+#.%]', '', 'g')) end
$$;

-- A Han run cut into the index's words: jieba's most probable route with the index's document frequencies,
-- then the 2- and 3-character index words inside each longer word (cut_for_search).  A character the index
-- does not hold has frequency 1 in the route (as jieba treats characters missing from its dictionary), and a
-- run of them is one unknown word.
create or replace function sag_internal._segment_han(run text, source_ids bigint[] default null)
returns text[]
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
declare
    -- The run's characters, read once: substr(run, i, n) walks the UTF-8 string from its start to character i,
    -- which made this function quadratic in the run (issue #36: 25k characters took 89 s).  An array variable
    -- is held expanded, so chars[i] costs the same wherever i is.
    chars text[] := regexp_split_to_array(run, '');
    n integer := coalesce(array_length(chars, 1), 0);
    max_len constant integer := 12;       -- the longest word looked up (jieba's dictionary has few longer)
    df jsonb;
    log_total float8;
    best float8[];
    next_at integer[];
    score float8;
    freq float8;
    piece text;
    word text;
    pieces text[] := '{}';
    words text[] := '{}';
    i integer;
    j integer;
    a integer;
    unknown text[];
begin
    if n = 0 then
        return words;
    end if;
    -- The run's substrings of up to max_len characters, each built from the previous one.
    for i in 1..n loop
        piece := '';
        for j in i..least(n, i + max_len - 1) loop
            piece := piece || chars[j];
            pieces := pieces || piece;
        end loop;
    end loop;
    -- Looked up by the index's primary key, as an array: sag.retrieve runs with generic plans, and the generic
    -- plan of a join against the substrings read all of term_stats (5 ms).
    select coalesce(jsonb_object_agg(t.term, t.df), '{}') into df
      from (select ts.term, sum(ts.df)::float8 as df
              from sag.term_stats ts
             where ts.term = any (array(select distinct p from unnest(pieces) p))
               and (source_ids is null or ts.source_id = any (source_ids))
             group by ts.term
            having sum(ts.df) > 0) t;
    pieces := null;
    select ln(greatest(coalesce(sum(c.token_total), 0), 1)) into log_total
      from sag.corpus_stats c where source_ids is null or c.source_id = any (source_ids);

    best := array_fill(0::float8, array[n + 1]);
    next_at := array_fill(n + 1, array[n + 1]);
    for i in reverse n..1 loop
        best[i] := '-Infinity';
        piece := '';
        for j in i..least(n, i + max_len - 1) loop
            piece := piece || chars[j];
            freq := (df ->> piece)::float8;
            if freq is null then
                continue when j > i;
                freq := 1;
            end if;
            score := ln(freq) - log_total + best[j + 1];
            if score > best[i] then
                best[i] := score;
                next_at[i] := j + 1;
            end if;
        end loop;
    end loop;

    -- (No chars[i:j] below: slicing flattens the whole array, one copy of the run a slice.)
    i := 1;
    while i <= n loop
        word := '';
        for j in i..next_at[i] - 1 loop
            word := word || chars[j];
        end loop;
        i := next_at[i];
        -- Characters the index does not hold, one after another, make one unknown word (as jieba's HMM joins
        -- them): 登基 is one term no chunk holds, not two.  Gathered in an array and joined once, not grown a
        -- piece at a time (a copy of the word a piece).
        if not df ? word then
            unknown := array[word];
            while i <= n loop
                piece := '';
                for j in i..next_at[i] - 1 loop
                    piece := piece || chars[j];
                end loop;
                exit when df ? piece;
                unknown := unknown || piece;
                i := next_at[i];
            end loop;
            words := words || array_to_string(unknown, '');
            continue;
        end if;
        -- A word the index holds has at most max_len characters: substr inside it is cheap.
        for a in 1..(case when char_length(word) > 2 then char_length(word) - 1 else 0 end) loop
            piece := substr(word, a, 2);
            if df ? piece then words := words || piece; end if;
        end loop;
        for a in 1..(case when char_length(word) > 3 then char_length(word) - 2 else 0 end) loop
            piece := substr(word, a, 3);
            if df ? piece then words := words || piece; end if;
        end loop;
        words := words || word;
    end loop;
    return words;
end;
$$;

-- A word of letters and digits as a question's BM25 terms: the word, and when it mixes letters and digits
-- and the index holds its letter and digit runs written apart ("CVPR 2022" beside "CVPR2022", "MU 5735"),
-- those runs too (Elasticsearch's word_delimiter with preserve_original, asked of the index: no chunk
-- writes "C 919", so C919 stays one term).  Words longer than 100 characters are hashes or junk: none.
create or replace function sag_internal._word_terms(word text, source_ids bigint[] default null)
returns text[]
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    parts text;  -- the letter and digit runs, space-separated
begin
    if char_length(word) > 100 then
        return '{}';
    end if;
    if word !~ '[[:alpha:]]' or word !~ '[[:digit:]]' then
        return array[word];
    end if;
    parts := array_to_string(array(select m[1] from regexp_matches(word, '([[:alpha:]]+|[[:digit:]]+)', 'g') m), ' ');
    -- Among the first 200 chunks holding every part: where two common parts ("covid", "19") are never
    -- written apart, an unbounded search would recheck the positions of every chunk holding both.
    if exists (select 1
                 from (select c.tsv from sag.chunks c
                        where c.tsv @@ plainto_tsquery('simple'::regconfig, parts)
                          and (source_ids is null or c.source_id = any (source_ids))
                        limit 200) c
                where c.tsv @@ phraseto_tsquery('simple'::regconfig, parts)) then
        return array[word] || string_to_array(parts, ' ');
    end if;
    return array[word];
end;
$$;

-- The longest question sag.search and sag.expand_question take: sag_pg.limits.MAX_QUESTION_CHARS
-- (tests/test_question_limits.py checks both agree).  Every step of a search is linear in the question, but a
-- question of a whole document's size is not one, and a search's statement timeout would be spent on it.
create or replace function sag_internal._max_question_chars()
returns integer
language sql immutable parallel safe
set search_path = pg_catalog, pg_temp
as $$ select 4000 $$;

-- 22023 naming the caller when the question is longer than sag_internal._max_question_chars().
create or replace function sag_internal._check_question(query text, caller text)
returns void
language plpgsql immutable parallel safe
set search_path = pg_catalog, pg_temp
as $$
begin
    if char_length(query) > sag_internal._max_question_chars() then
        raise exception using errcode = '22023',
            message = format('%s: the question is %s characters long; the maximum is %s', caller,
                             char_length(query), sag_internal._max_question_chars()),
            hint = 'Ask a shorter question (sag_pg.limits.MAX_QUESTION_CHARS).';
    end if;
end;
$$;

create or replace function sag.query_terms(query text, source_ids bigint[] default null)
returns text[]
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
declare
    han text := sag_internal._han_class();
    run text;
    part record;
    term text;
    terms text[] := '{}';
begin
    -- Terms are appended one at a time (array_append works in place on a plpgsql variable; terms || array
    -- copies the whole array every time: quadratic in a long question's runs).
    for run in select m[1] from regexp_matches(lower(normalize(coalesce(query, ''), NFKC)), '([[:alnum:]]+)', 'g') m loop
        if run !~ ('[' || han || ']') then
            foreach term in array sag_internal._word_terms(run, source_ids) loop
                terms := terms || term;
            end loop;
            continue;
        end if;
        for part in select m[1] as han_run, m[2] as other
                      from regexp_matches(run, '([' || han || ']+)|([^' || han || ']+)', 'g') m loop
            foreach term in array case when part.other is not null
                                       then sag_internal._word_terms(part.other, source_ids)
                                       else sag_internal._segment_han(part.han_run, source_ids) end loop
                terms := terms || term;
            end loop;
        end loop;
    end loop;
    return terms;
end;
$$;

comment on function sag.query_terms(text, bigint[]) is
    'A question''s BM25 terms, as sag.chunks.tokens holds a text''s: NFKC, lower case, letter/digit runs; '
    'Chinese (Han) runs segmented against the index''s own vocabulary of the given sources (NULL = all): '
    'jieba''s most probable route with sag.term_stats document frequencies, plus the 2- and 3-character '
    'index words inside longer words (as cut_for_search).  Linear in the question (no maximum here: '
    'sag.search refuses a long question first, in sag.expand_question).  Example: '
    'select sag.query_terms(''北京冬奥会开幕时间'');';

-- A question's words as sag.named_keys and sag.expand_question see them: a Han character each, else a letter/digit
-- run, hyphenated runs and digits around a '.' joined (GPT-4.5, 3.11), with the '+' or '#' after a letter (Han
-- included) and the '%' after a digit that key names keep (C++, 50%, 线上+线下).  Folded and concatenated, the
-- words of a key's name give its normalized name, but for a '+' or '#' standing alone ("Dan + Shay", "#1").
-- A pattern for regexp_matches(..., 'g'): immutable, so a plan holds it as a constant (a set-returning function
-- of the words was not inlined: named_keys took 0.47 instead of 0.39 ms).
create or replace function sag_internal._word_pattern()
returns text
language sql immutable parallel safe
set search_path = pg_catalog, pg_temp
as $$
    select '([' || h.han || '][+#]*|(?:(?![' || h.han || '])[[:alnum:]])+'
           || '(?:(?:-|(?<=[[:digit:]])\.(?=[[:digit:]]))(?:(?![' || h.han || '])[[:alnum:]])+)*'
           || '(?:(?<=[[:alpha:]])[+#]+|(?<=[[:digit:]])%)?)'
      from (select sag_internal._han_class() as han) h
$$;

-- The keys a question names.  A span of the question names a key when its normalized text is the key's
-- normalized name:
--   * Latin and other cased scripts: runs of up to max_words words that start and end with a capitalised word
--     or a number, lower-case words only inside ("Flute Sonata in C major"); a single word must be
--     capitalised and two letters or more.  Capitals are how running text marks a name.
--   * Han: runs of 2 to 16 characters naming a person, organization or location key: Chinese has no
--     capitals, the key's type is the sign of a name.  A topic key is a name where its head says so: a project,
--     programme or ship (青岚计划, 白露工程, 破浪号: three characters or more ending in 计划, 项目, 工程 or 号,
--     the heads the extractor types as projects and ships); 计划 or 工作 alone are no name.
-- The longest spans win and take their words ("Nick Hexum" leaves no room for the key "Nick"); ties by
-- position.  A key with more than max_key_events events (a hub) is still returned, flagged: the caller decides.
create or replace function sag.named_keys(
    query text, source_ids bigint[] default null, max_words integer default 10,
    max_key_events integer default null)
returns table (key_id bigint, name text, first_word integer, last_word integer, hub boolean)
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
declare
    han text := sag_internal._han_class();
    span record;
    taken integer[] := '{}';
    accepted_first integer;
    accepted_last integer;
    s_first integer[];
    s_last integer[];
    s_han boolean[];
    s_normalized text[];
    s_text text[];
    m_id bigint[];
    m_text text[];
    m_first integer[];
    m_last integer[];
    m_hub boolean[];
begin
    if (max_words >= 1) is not true then
        raise exception using errcode = '22023',
                              message = format('sag.named_keys: max_words must be >= 1, got %s', max_words);
    end if;
    -- The spans and their keys are read into arrays first, then walked: a loop over a query is a cursor, and
    -- Citus loses a cursor's intermediate results over several workers (the keys of several sources).
    with words as (
            -- Each word folded once here: a word is in up to 16 spans (0.5 ms a Chinese question folded per span).
            select w.pos::integer as pos, w.m[1] as word, w.m[1] ~ ('^[' || han || ']') as is_han,
                   sag_internal._fold_word(w.m[1]) as folded
              from regexp_matches(normalize(coalesce(query, ''), NFKC), sag_internal._word_pattern(), 'g')
                   with ordinality as w(m, pos)
        ),
        spans as (
            select f.pos as first_word, l.pos as last_word, f.is_han,
                   (select string_agg(x.folded, '' order by x.pos)
                      from words x where x.pos between f.pos and l.pos) as normalized,
                   (select string_agg(x.word, case when f.is_han then '' else ' ' end order by x.pos)
                      from words x where x.pos between f.pos and l.pos) as text
              from words f
              join words l on l.pos >= f.pos and l.is_han = f.is_han
                          and l.pos - f.pos < case when f.is_han then 16 else max_words end
             where not exists (select 1 from words x where x.pos between f.pos and l.pos and x.is_han <> f.is_han)
               and (f.is_han and l.pos > f.pos
                    or not f.is_han and f.word ~ '^[[:upper:][:digit:]]' and l.word ~ '^[[:upper:][:digit:]]'
                       and (l.pos > f.pos or (f.word ~ '^[[:upper:]]' and char_length(f.word) >= 2)))
        )
    select coalesce(array_agg(s.first_word), '{}'), coalesce(array_agg(s.last_word), '{}'),
           coalesce(array_agg(s.is_han), '{}'), coalesce(array_agg(s.normalized), '{}'), coalesce(array_agg(s.text), '{}')
      into s_first, s_last, s_han, s_normalized, s_text
      from spans s;
    select coalesce(array_agg(k.id), '{}'), coalesce(array_agg(s.text), '{}'), coalesce(array_agg(s.first_word), '{}'),
           coalesce(array_agg(s.last_word), '{}'),
           coalesce(array_agg(max_key_events is not null and k.event_count > max_key_events), '{}')
      into m_id, m_text, m_first, m_last, m_hub
      from unnest(s_first, s_last, s_han, s_normalized, s_text) as s(first_word, last_word, is_han, normalized, text)
      join sag.keys k on k.normalized = s.normalized
     where k.value_string is not null
       and (source_ids is null or k.source_id = any (source_ids))
       and (not s.is_han or k.type in ('person', 'organization', 'location')
            or k.type = 'topic' and char_length(s.normalized) >= 3 and s.normalized ~ '(计划|项目|工程|号)$'
            -- A work the question quotes whole in 《》 is named: ingestion keyed it as a topic, the title itself
            or k.type = 'topic' and strpos(normalize(query, NFKC), '《' || s.text || '》') > 0);
    for span in
        select u.id, u.text, u.first_word, u.last_word, u.hub
          from unnest(m_id, m_text, m_first, m_last, m_hub) as u(id, text, first_word, last_word, hub)
         order by u.last_word - u.first_word desc, u.first_word, u.id
    loop
        -- Every key of an accepted span; a span whose words a longer (or earlier) one took names nothing.
        if span.first_word is distinct from accepted_first or span.last_word is distinct from accepted_last then
            continue when exists (select 1 from unnest(taken) t where t between span.first_word and span.last_word);
            taken := taken || array(select generate_series(span.first_word, span.last_word));
            accepted_first := span.first_word;
            accepted_last := span.last_word;
        end if;
        key_id := span.id;
        name := span.text;
        first_word := span.first_word;
        last_word := span.last_word;
        hub := span.hub;
        return next;
    end loop;
end;
$$;
comment on function sag.named_keys(text, bigint[], integer, integer) is
    'The string keys a question names (of the given sources, NULL = all): spans of up to max_words words that '
    'start and end with a capitalised word or a number (one word: capitalised, >= 2 letters), or Han runs of 2-16 '
    'characters naming a person, organization or location key (or a project/ship topic: 青岚计划, 破浪号, or a '
    'topic quoted whole in 《》), whose '
    'normalized text is a key''s normalized '
    'name; longest spans first, each word used once.  hub: more than max_key_events events (NULL = no limit).  '
    'sag.retrieve seeds stage 1 with them.  Example: select * from sag.named_keys(''Who married Marie Antoinette?'');';

-- A question naming an alias of its sources' synonym tables ({"BWR": "Brightwater Robotics"} in
-- sag.sources.config -> 'synonyms') gets the canonical name added: "Where is BWR based?" becomes "Where is BWR
-- based? (Brightwater Robotics)", so BM25, the embedding and sag.named_keys reach the canonical key (ingestion
-- stored the key under that name) and the text by either name.  An alias is named when its folded text
-- (sag_internal._fold_word, as key names are folded: case, width, accents and spacing dropped) is that of a run
-- of the question's whole words ("big-blue" and "Big Blue" name the alias "Big Blue"; "BWRX" does
-- not name "BWR"); an alias with characters outside ASCII (Chinese) anywhere in the question's folded text, as
-- such scripts do not separate words.  A canonical name the question already holds is not added again.
-- Several sources listing one alias: the source with the lowest id decides.  The names are added in the order
-- of their aliases in the question, shorter aliases first where they start together.
create or replace function sag_internal._expand_question(query text, source_ids bigint[] default null)
returns text
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
set plan_cache_mode = force_generic_plan  -- planned once a session (0.5 ms, as a language sql body at every call)
as $$
declare
    expanded text;
begin
    with aliases as (
        select distinct on (x.alias) x.alias, x.name
          from (select sag_internal._fold_word(syn.key) as alias, syn.value as name, s.id, syn.key
                  from sag.sources s,
                       jsonb_each_text(case when jsonb_typeof(s.config -> 'synonyms') = 'object'
                                            then s.config -> 'synonyms' else '{}' end) as syn
                 where source_ids is null or s.id = any (source_ids)) x
         where x.alias <> ''
         order by x.alias, x.id, x.key),
    -- Only the aliases somewhere in the question's folded text are looked for word by word: most questions
    -- name none, and then the question's words are never split.  (Without the kept punctuation, which the
    -- whole question and its words may keep differently: "Dan + Shay".)
    inside as (
        select a.* from aliases a
         where strpos((select pg_catalog.translate(sag_internal._fold_word(query), '+#%.', '')),
                      pg_catalog.translate(a.alias, '+#%.', '')) > 0),
    words as (  -- the question's words, each with its place in the question's folded text: `at` in characters,
                -- `byte_at` in bytes (a place in bytes is reached at once; substr(text, at) walks to it)
        select w.pos, w.folded,
               (sum(char_length(w.folded)) over (order by w.pos) - char_length(w.folded))::integer as at,
               (sum(octet_length(w.folded)) over (order by w.pos) - octet_length(w.folded))::integer as byte_at
          from (select v.pos, sag_internal._fold_word(v.m[1]) as folded
                  from regexp_matches(normalize(coalesce(query, ''), NFKC), sag_internal._word_pattern(), 'g')
                       with ordinality as v(m, pos)) w),
    folded as (select coalesce(string_agg(w.folded, '' order by w.pos), '') as text from words w),
    bytes as (select convert_to(q.text, 'UTF8') as b from folded q),
    -- An alias is named at a word f that it starts with, when a word l ends where the alias would, and the bytes
    -- between are the alias's: a hash join on the end, and one comparison at a byte offset a candidate (the
    -- former substr at character offsets, and a scan of the words for the end, made this quadratic in the
    -- question: issue #36, a 64 KB alias took 12.7 s).
    named as (
        select a.name, f.at, char_length(a.alias) as length
          from inside a
          join words f on f.folded <> '' and starts_with(a.alias, f.folded)
          join words l on l.at + char_length(l.folded) = f.at + char_length(a.alias)
          cross join bytes q
         where substring(q.b from f.byte_at + 1 for octet_length(a.alias)) = convert_to(a.alias, 'UTF8')
        union all
        select a.name, strpos(q.text, a.alias) - 1, char_length(a.alias)
          from inside a, folded q
         where a.alias ~ '[^\x01-\x7f]' and strpos(q.text, a.alias) > 0),
    added as (  -- each name looked for once in the question, not once per place it is named
        select g.name, g.place
          from (select n.name, min(array[n.at, n.length]) as place from named n group by n.name) g, folded q
         where strpos(q.text, sag_internal._fold_word(g.name)) = 0)
    select case when not exists (select 1 from inside) or not exists (select 1 from added) then query
                else query || ' (' || (select string_agg(a.name, '; ' order by a.place, a.name) from added a)
                     || ')'
           end into expanded;
    return expanded;
end;
$$;

create or replace function sag.expand_question(query text, source_ids bigint[] default null)
returns text
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
begin
    perform sag_internal._check_question(query, 'sag.expand_question');
    return sag_internal._expand_question(query, source_ids);
end;
$$;
comment on function sag.expand_question(text, bigint[]) is
    'The question with the canonical name of every alias it names appended, "Where is BWR based? (Brightwater '
    'Robotics)", from the synonym tables (sources.config -> ''synonyms'') of the given sources (NULL = all): an '
    'alias is named when its folded text is that of a run of whole words of the question (anywhere, for an '
    'alias outside ASCII such as Chinese); names the question already holds are left out.  sag.search and the '
    'Python client search the expanded question.  A question longer than sag_internal._max_question_chars() '
    '(4000) raises 22023.  Example: select sag.expand_question(''Where is BWR based?'');';
