-- sag.embed_hash: the SQL twin of sag_pg.embedders.hashing.HashEmbedder ("hash-v1").  Re-applied on every upgrade.
--
-- Definition (identical in Python; tests/sql/test_embed_hash.py checks that both agree):
--  1. Fold ASCII only, A-Z -> a-z (translate), because lower() and Python's str.lower() disagree outside ASCII.
--  2. Tokens: maximal runs of [a-z], of [0-9] and of CJK ideographs [\u3400-\u4dbf\u4e00-\u9fff]; anything else
--     separates, and so does a letter/digit boundary ('302ai', '302.AI' -> '302', 'ai').
--  3. Features: a letter/digit token w not in sag_internal._embed_hash_stopwords() gives 'w:'||w (weight 1) and, if
--     length(w) >= 4, the length(w) trigrams of '#'||w||'#' as 't:'||tri (0.25 each); a CJK run gives each
--     character not in the stopword list as 'c:'||ch (0.5) and each adjacent pair as 'b:'||pair (1).
--  4. h = md5(feature) (UTF-8: the database encoding must be UTF8); bucket = first 8 hex digits as an unsigned
--     32-bit integer mod dimension; sign = +1 if the 9th hex digit is even, else -1; add sign * weight.
--  5. L2-normalize in double precision, round once to float4; no features -> the zero vector.
-- Weights are multiples of 1/4, so every sum is exact in double precision whatever the order of summation.

create or replace function sag_internal._embed_hash_stopwords()
returns text[]
language sql immutable parallel safe
set search_path = pg_catalog, sag, pg_temp
as $$
    -- Keep identical to sag_pg.embedders.hashing.STOPWORDS.
    select array[
        'a', 'about', 'above', 'after', 'again', 'against', 'all', 'also', 'am', 'an', 'and', 'any', 'are', 'as', 'at',
        'be', 'because', 'been', 'before', 'being', 'below', 'between', 'both', 'but', 'by',
        'can', 'could', 'did', 'do', 'does', 'doing', 'down', 'during', 'each', 'few', 'for', 'from', 'further',
        'had', 'has', 'have', 'having', 'he', 'her', 'here', 'hers', 'herself', 'him', 'himself', 'his', 'how',
        'i', 'if', 'in', 'into', 'is', 'it', 'its', 'itself', 'just', 'me', 'more', 'most', 'my', 'myself',
        'no', 'nor', 'not', 'now', 'of', 'off', 'on', 'once', 'only', 'or', 'other', 'our', 'ours', 'ourselves',
        'out', 'over', 'own',
        'same', 'she', 'should', 'so', 'some', 'such', 'than', 'that', 'the', 'their', 'theirs', 'them',
        'themselves', 'then', 'there', 'these', 'they',
        'this', 'those', 'through', 'to', 'too', 'under', 'until', 'up', 'very',
        'was', 'we', 'were', 'what', 'when', 'where', 'which', 'while', 'who', 'whom', 'whose', 'why', 'will', 'with',
        'would', 'you', 'your', 'yours', 'yourself', 's', 't',
        '的', '了', '是', '在', '和', '与', '及', '之', '其', '也', '而', '或', '着', '这', '那'
    ]::text[]
$$;
comment on function sag_internal._embed_hash_stopwords() is
    'Stopwords of the hash-v1 embedder (English function words and CJK function characters); '
    'must equal sag_pg.embedders.hashing.STOPWORDS.';

-- Linear in the text: every token is read once as a table of its characters (regexp_split_to_table), and its
-- trigrams and pairs come from lead() over them.  substr(token, i, n) walks a UTF-8 string from its start to
-- character i, so the trigrams and pairs taken with substr cost O(length^2) a token (issue #36: 200k characters
-- of Chinese took 261 s).
create or replace function sag_internal._embed_hash_features(content text)
returns table (feature text, weight double precision)
language sql immutable parallel safe strict
set search_path = pg_catalog, sag, pg_temp
as $$
    with tokens as (
        select t.m[1] as token, t.n
        from regexp_matches(
                 translate(content, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz'),
                 '[a-z]+|[0-9]+|[\u3400-\u4dbf\u4e00-\u9fff]+', 'g') with ordinality as t(m, n)
    ),
    words as (
        select token, n from tokens
        where token ~ '^[a-z0-9]' and token <> all (sag_internal._embed_hash_stopwords())
    ),
    word_chars as (  -- the characters of '#' || w || '#', in order, for the words of 4+ characters
        select w.n, c.ch, c.i
        from words w, regexp_split_to_table('#' || w.token || '#', '') with ordinality as c(ch, i)
        where length(w.token) >= 4
    ),
    trigrams as (
        select ch || lead(ch, 1) over run || lead(ch, 2) over run as tri
        from word_chars
        window run as (partition by n order by i)
    ),
    cjk_chars as (
        select c.ch, lead(c.ch) over (partition by t.n order by c.i) as next
        from tokens t, regexp_split_to_table(t.token, '') with ordinality as c(ch, i)
        where t.token !~ '^[a-z0-9]'
    )
    select 'w:' || token, 1.0::double precision from words
    union all
    select 't:' || tri, 0.25 from trigrams where length(tri) = 3
    union all
    select 'c:' || ch, 0.5 from cjk_chars where ch <> all (sag_internal._embed_hash_stopwords())
    union all
    select 'b:' || ch || next, 1.0 from cjk_chars where next is not null
$$;
comment on function sag_internal._embed_hash_features(text) is
    'The weighted features of a text under hash-v1 (steps 1-3 of sag.embed_hash), one row per occurrence.';

create or replace function sag.embed_hash(content text, dimension integer default 512)
returns @extschema:vector@.vector
language plpgsql immutable parallel safe strict
set search_path = pg_catalog, sag, pg_temp
as $$
begin
    -- plpgsql only for this check: pgvector's limit is 16000 dimensions.
    if dimension < 1 or dimension > 16000 then
        raise exception using errcode = '22023',
            message = format('sag.embed_hash: dimension must be between 1 and 16000, got %s', dimension);
    end if;
    return (
        with hashed as (
            select md5(f.feature) as h, f.weight from sag_internal._embed_hash_features(content) as f
        ),
        buckets as (
            -- bit(32)::bigint reads the 32 bits as unsigned (bit(32)::integer would be signed).
            select (('x' || substr(h, 1, 8))::bit(32)::bigint % dimension)::integer as bucket,
                   sum(case when substr(h, 9, 1) in ('0', '2', '4', '6', '8', 'a', 'c', 'e')
                            then weight else -weight end) as value
            from hashed
            group by 1
        ),
        norm as (
            select sqrt(coalesce(sum(value * value), 0)) as norm from buckets
        )
        select array_agg(case when norm.norm > 0 then coalesce(buckets.value, 0) / norm.norm else 0 end
                         order by slot)::real[]::@extschema:vector@.vector
        from generate_series(0, dimension - 1) as slot
        cross join norm
        left join buckets on buckets.bucket = slot
    );
end;
$$;
comment on function sag.embed_hash(text, integer) is
    'Embeds a text with the offline hash-v1 embedder, identical to sag_pg.embedders.hashing.HashEmbedder: '
    'ASCII-folded letter, digit and CJK tokens minus stopwords; words (1) and their #-padded trigrams (0.25) '
    'if 4+ letters; CJK characters (0.5) and adjacent pairs (1); md5 bucket = first 8 hex digits (unsigned) '
    'mod dimension, sign from the 9th digit''s parity; L2-normalized (zero vector for a text without features). '
    'Requires a UTF8 database. Raises 22023 unless 1 <= dimension <= 16000.';
