"""Invariants every stored database must satisfy, whatever happened to the process that wrote it."""

from __future__ import annotations

import psycopg

CHECKS = {
    "document without chunks": "select count(*) from sag.documents d "
    "where not exists (select 1 from sag.chunks c where c.document_id = d.id)",
    "chunk of another source than its document": "select count(*) from sag.chunks c "
    "join sag.documents d on d.id = c.document_id where c.source_id <> d.source_id",
    "event of another document than its chunk": "select count(*) from sag.events e "
    "join sag.chunks c on c.id = e.chunk_id where c.document_id <> e.document_id",
    "key with a wrong event_count": "select count(*) from sag.keys k "
    "where k.event_count <> (select count(*) from sag.event_keys ek where ek.key_id = k.id)",
    # An entity added by a call (sag.add_entity) is pinned: it may have no event.
    "key with no event": "select count(*) from sag.keys k "
    "where not k.pinned and not exists (select 1 from sag.event_keys ek where ek.key_id = k.id)",
    # A co-occurrence relation's evidence: the events linked to both of its keys (not stored; migration 0021).
    "co-occurrence relation whose evidence is not its events": "select count(*) from sag.relations r "
    "where r.origin = 'cooccurrence' and (r.evidence_count <> (select count(*) from sag.event_keys a "
    "join sag.event_keys b on b.source_id = a.source_id and b.event_id = a.event_id and b.key_id = r.tail_key_id "
    "where a.source_id = r.source_id and a.key_id = r.head_key_id) or r.evidence_count < 1 "
    "or exists (select 1 from sag.relation_events re where re.source_id = r.source_id and re.relation_id = r.id))",
    "entity keys sharing an event with no relation": "select count(*) from sag.event_keys a "
    "join sag.event_keys b on b.source_id = a.source_id and b.event_id = a.event_id and b.key_id > a.key_id "
    "join sag.keys h on h.source_id = a.source_id and h.id = a.key_id "
    "join sag.keys t on t.source_id = b.source_id and t.id = b.key_id "
    "where h.type not in ('action', 'time') and t.type not in ('action', 'time') and not exists ("
    "select 1 from sag.relations r where r.source_id = a.source_id and r.head_key_id = a.key_id "
    "and r.relation_type = 'related_to' and r.tail_key_id = b.key_id)",
    "relation between keys of another source": "select count(*) from sag.relations r "
    "join sag.keys h on h.id = r.head_key_id join sag.keys t on t.id = r.tail_key_id "
    "where h.source_id <> r.source_id or t.source_id <> r.source_id",
    "chunk_keys out of step with event_keys": """
        select count(*) from (
            select e.chunk_id, ek.key_id, sum(ek.count) as n from sag.event_keys ek
            join sag.events e on e.id = ek.event_id group by 1, 2) expected
        full join sag.chunk_keys ck on ck.chunk_id = expected.chunk_id and ck.key_id = expected.key_id
        where ck.count is distinct from expected.n""",
    "event linked to a key of another source": "select count(*) from sag.event_keys ek "
    "join sag.events e on e.id = ek.event_id join sag.keys k on k.id = ek.key_id where e.source_id <> k.source_id",
    # BM25 statistics (sag.term_stats + sag.corpus_stats, plus the queue) against a recount of the chunks.
    "BM25 term statistics out of step": """
        select count(*) from (
            select u.lexeme as term, c.source_id, count(*) as df from sag.chunks c, unnest(c.tsv) u group by 1, 2
        ) expected
        full join (
            select s.term, s.source_id, sum(s.df) as df
              from (select ts.term, ts.source_id, ts.df from sag.term_stats ts
                    union all
                    select u.lexeme, p.source_id, p.sign from sag.term_stats_pending p, unnest(p.tsv) u
                     where exists (select 1 from sag.sources s where s.id = p.source_id)) s
             group by 1, 2 having sum(s.df) <> 0
        ) actual on actual.term = expected.term and actual.source_id = expected.source_id
        where actual.df is distinct from expected.df""",
    "BM25 corpus statistics out of step": """
        select count(*) from (
            select c.source_id, count(*) as n, sum(c.token_count) as tokens from sag.chunks c group by 1
        ) expected
        full join (
            select s.source_id, sum(s.n) as n, sum(s.tokens) as tokens
              from (select cs.source_id, cs.chunk_count as n, cs.token_total as tokens from sag.corpus_stats cs
                    union all
                    select p.source_id, p.sign, p.sign * p.token_count from sag.term_stats_pending p
                     where exists (select 1 from sag.sources s where s.id = p.source_id)) s
             group by 1 having sum(s.n) <> 0 or sum(s.tokens) <> 0
        ) actual on actual.source_id = expected.source_id
        where (actual.n, actual.tokens) is distinct from (expected.n, expected.tokens)""",
}


def violations(conn: psycopg.Connection) -> dict[str, int]:
    found = {}
    for name, sql in CHECKS.items():
        row = conn.execute(sql).fetchone()
        if row and row[0]:
            found[name] = row[0]
    return found
