"""`sag-pg bench-scale --sources N`: the synthetic corpus split over sources, each with its own documents, chunks,
events, links and key universe, bulk-loaded on one node; one-source searches stay in their source."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import psycopg
import pytest
from click.testing import CliRunner
from pgvector.psycopg import register_vector

from sag_pg.bench.scale import load, measure, question_events, sourced_questions
from sag_pg.bench.spool import _batch_payloads, _key_payloads
from sag_pg.bench.synth import SynthConfig, key_counts, structures
from sag_pg.search.retrieve import retrieve
from tests.integrity import violations


def test_one_source_corpus_is_byte_for_byte_the_one_before_sources() -> None:
    # The digest of the COPY payloads (batches, then the first key part) that the loader wrote before
    # --sources existed (commit 0bfb491's sag_pg/bench/spool.py, same config): --sources 1 changes nothing.
    config = SynthConfig(events=3000, dim=8, batch_chunks=200)
    digest = hashlib.sha256()
    for s in structures(config):
        digest.update(b"".join(_batch_payloads(config, s).values()))
    ids, counts = key_counts(config)
    digest.update(b"".join(_key_payloads(config, ids, counts, 0, config.slices[0]).values()))
    assert digest.hexdigest() == "07eae8b7b0f394de7d81b1288f50f8258db0e5182e716c57e542525e31b05a08"


def test_sources_split_the_events_evenly_with_their_own_ids() -> None:
    config = SynthConfig(events=2000, dim=8, batch_chunks=60, sources=3)
    # 2000 = 3 * 666 + 2: the first two sources get one more.
    assert [(p.source_id, p.events, p.event_start) for p in config.slices] == [(1, 667, 1), (2, 667, 668),
                                                                              (3, 666, 1335)]
    # Key universes of max(1000, 20 * events) keys, one after another.
    assert [(p.key_start, p.universe) for p in config.slices] == [(0, 13340), (13340, 13340), (26680, 13320)]
    for part in config.slices:
        batches = list(structures(config, part))
        events = np.concatenate([s.event_ids for s in batches])
        assert (events == np.arange(part.event_start, part.event_start + part.events)).all()
        keys = np.concatenate([s.link_key for s in batches])
        assert keys.min() > part.key_start and keys.max() <= part.key_start + part.universe
        chunks = np.concatenate([s.chunk_ids for s in batches])
        assert chunks.min() == part.event_start and chunks.max() < part.event_start + part.events
    with pytest.raises(ValueError, match="sources"):
        SynthConfig(events=5, sources=6)


def test_questions_ask_the_sources_in_turn() -> None:
    config = SynthConfig(events=2000, dim=8, sources=3)
    sources, events = question_events(config, np.random.default_rng(1), 7)
    assert sources == [1, 2, 3, 1, 2, 3, 1]
    bounds = {1: (1, 667), 2: (668, 1334), 3: (1335, 2000)}
    assert all(bounds[s][0] <= e <= bounds[s][1] for s, e in zip(sources, events))


def test_multi_source_load_keeps_every_row_in_its_source(db_dsn: str, tmp_path: Path) -> None:
    config = SynthConfig(events=2000, dim=8, batch_chunks=60, sources=3)
    result = load(db_dsn, config, lambda *a: None, workers=2, spool_dir=tmp_path)
    assert result.sources == 3 and result.events == 2000
    with psycopg.connect(db_dsn) as conn:
        register_vector(conn)
        assert violations(conn) == {}
        assert conn.execute("select id, name from sag.sources order by id").fetchall() == [
            (1, "synthetic-1"), (2, "synthetic-2"), (3, "synthetic-3")]
        per_source = conn.execute(
            "select s.id, (select count(*) from sag.events e where e.source_id = s.id),"
            " (select count(*) from sag.documents d where d.source_id = s.id),"
            " (select count(*) from sag.chunks c where c.source_id = s.id),"
            " (select count(*) from sag.keys k where k.source_id = s.id),"
            " (select count(*) from sag.event_keys ek where ek.source_id = s.id),"
            " (select count(*) from sag.chunk_keys ck where ck.source_id = s.id)"
            " from sag.sources s order by s.id").fetchall()
        assert [r[1] for r in per_source] == [667, 667, 666]
        assert all(min(r[2:]) > 0 and r[2] == r[3] for r in per_source), per_source
        # Every link names its own source's event, chunk and key (matched by id alone, then by source).
        crossing = {
            "event_keys -> events": "select count(*) from sag.event_keys x join sag.events e on e.id = x.event_id"
                                    " where e.source_id <> x.source_id",
            "event_keys -> keys": "select count(*) from sag.event_keys x join sag.keys k on k.id = x.key_id"
                                  " where k.source_id <> x.source_id",
            "chunk_keys -> chunks": "select count(*) from sag.chunk_keys x join sag.chunks c on c.id = x.chunk_id"
                                    " where c.source_id <> x.source_id",
            "chunk_keys -> keys": "select count(*) from sag.chunk_keys x join sag.keys k on k.id = x.key_id"
                                  " where k.source_id <> x.source_id",
            "events -> chunks": "select count(*) from sag.events e join sag.chunks c on c.id = e.chunk_id"
                                " where c.source_id <> e.source_id",
            "relations -> keys": "select count(*) from sag.relations r join sag.keys h on h.id = r.head_key_id"
                                 " where h.source_id <> r.source_id",
        }
        assert {name: conn.execute(q).fetchone()[0] for name, q in crossing.items()} == dict.fromkeys(crossing, 0)
        # Ids are unique across sources, as one node's sequences give them.
        for table in ("events", "chunks", "documents", "keys"):
            assert conn.execute(f"select count(*) = count(distinct id) from sag.{table}").fetchone() == (True,)
        # Every source has a key universe of its own over one vocabulary: names recur across sources.
        shared = conn.execute("select count(*) from (select normalized from sag.keys group by normalized"
                              " having count(distinct source_id) = 3) s").fetchone()[0]
        assert shared > 50
        # The co-occurrence graph links keys of one source only, and every source has some.
        assert conn.execute("select count(distinct source_id) from sag.relations").fetchone() == (3,)

        # A one-source search returns that source's chunks only.
        asked = sourced_questions(conn, config, 6)
        assert [s for _, _, s in asked] == [1, 2, 3, 1, 2, 3]
        conn.commit()
        conn.autocommit = True
        for vector, tokens, source in asked:
            found = retrieve(conn, " ".join(tokens), vector, source_ids=[source], top_n=10)
            ids = [hit.chunk_id for hit in found.chunks]
            assert ids, tokens
            owners = conn.execute("select distinct source_id from sag.chunks where id = any(%s)", [ids]).fetchall()
            assert owners == [(source,)]
    measure(db_dsn, config, result, queries=3, warmup=1, progress=lambda *a: None)
    assert result.queries == 3 and result.search_p50_ms > 0 and result.hnsw_p50_ms > 0
    assert result.node_bytes == {}  # one node: no per-node sizes
    assert result.to_dict()["bytes_per_event"] == round(result.db_size_bytes / 2000)


def test_bench_scale_cli_sources(db_dsn: str) -> None:
    from sag_pg.cli import cli

    result = CliRunner().invoke(cli, ["--dsn", db_dsn, "bench-scale", "--events", "600", "--sources", "2",
                                      "--dim", "8", "--queries", "2", "--json"])
    assert result.exit_code == 0, result.output
    run = json.loads(result.stdout)["runs"][0]
    assert run["events"] == 600 and run["sources"] == 2 and run["queries"] == 2 and run["citus_workers"] == 0
