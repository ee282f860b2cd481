"""Knowledge-graph import speed and tool latency on a synthetic Freebase-style KG.

    .venv/bin/python benchmarks/kg_speed.py                      # 1,000,000 triples
    .venv/bin/python benchmarks/kg_speed.py --triples 100000 --calls 200

Writes an N-Triples file (full Freebase IRIs, a tenth of the lines with ns: prefixes, names in English and
some in Chinese, CVT nodes with two entity edges and a date, one malformed line in 10,000), imports it with
``sag-pg kg import``'s code into a fresh database (``sag_bench_kg_<pid>`` on the configured server), then
times ``sag.kg_relations`` and ``sag.kg_triples`` (three of the entity's relations, a question) for random
entities.  Printed: triples/s of the import (parse + COPY + load, wall time), p50/p95 of both tools.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from sag_pg import Settings
from sag_pg.bench.database import temporary_database
from sag_pg.db.connection import Database, resolve_dsn
from sag_pg.kg.backends import PostgresKG
from sag_pg.kg.importer import import_rdf

NS = "http://rdf.freebase.com/ns/"
DOMAINS = ["people", "film", "music", "location", "organization", "sports", "book", "award", "education", "tv"]
WORDS = ["person", "place", "work", "event", "member", "team", "album", "country", "school", "series"]
PROPS = ["born_in", "spouse", "parents", "children", "nationality", "genre", "director", "producer", "author",
         "located_in", "founded_by", "member_of", "winner", "nominee", "teacher", "language", "sibling", "friend"]


def relation_vocabulary(rng: random.Random, size: int = 300) -> list[str]:
    names = {f"{rng.choice(DOMAINS)}.{rng.choice(WORDS)}.{rng.choice(PROPS)}" for _ in range(size * 3)}
    return sorted(names)[:size]


def write_kg(path: Path, triples: int, seed: int = 1) -> int:
    """A synthetic KG of about ``triples`` lines; returns the number of entities."""
    rng = random.Random(seed)
    relations = relation_vocabulary(rng)
    cvt_relations = [r for r in relations if r.startswith(("people.", "award."))] or relations[:10]
    entities = max(10, triples // 9)
    written = cvt = 0
    with path.open("w", encoding="utf-8") as out:
        out.write("@prefix ns: <http://rdf.freebase.com/ns/> .\n")
        for e in range(entities):
            if written >= triples:
                break
            subject = f"<{NS}m.e{e}>"
            lines = [f'{subject} <{NS}type.object.name> "Entity {e} {rng.choice(PROPS)}"@en .',
                     f"{subject} <{NS}type.object.type> <{NS}{rng.choice(DOMAINS)}.{rng.choice(WORDS)}> ."]
            if rng.random() < 0.2:
                lines.append(f'{subject} <{NS}type.object.name> "实体{e}"@zh .')
            for _ in range(rng.randint(3, 9)):
                lines.append(f"{subject} <{NS}{rng.choice(relations)}> <{NS}m.e{rng.randrange(entities)}> .")
            if rng.random() < 0.3:
                node = f"<{NS}m.cvt{cvt}>"
                cvt += 1
                lines.append(f"{subject} <{NS}{rng.choice(cvt_relations)}> {node} .")
                for _ in range(2):
                    lines.append(f"{node} <{NS}{rng.choice(cvt_relations)}> <{NS}m.e{rng.randrange(entities)}> .")
                lines.append(f'{node} <{NS}people.marriage.from> "19{rng.randrange(10, 99)}-01-01"'
                             f"^^<http://www.w3.org/2001/XMLSchema#date> .")
            for line in lines:
                if rng.random() < 0.1 and "^^" not in line:  # Freebase-style prefixed form
                    line = line.replace(f"<{NS}", "ns:").replace("> ", " ").replace("> .", " .")
                if rng.random() < 0.0001:
                    line = line[: len(line) // 2]  # malformed
                out.write(line + "\n")
                written += 1
    return entities


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--triples", type=int, default=1_000_000)
    parser.add_argument("--calls", type=int, default=200, help="tool calls timed (random entities)")
    args = parser.parse_args()
    server = resolve_dsn(Settings.from_env())
    with tempfile.TemporaryDirectory() as tmp, temporary_database(server, "kg") as dsn:
        path = Path(tmp) / "kg.nt"
        started = time.perf_counter()
        entities = write_kg(path, args.triples)
        print(f"wrote {path.stat().st_size / 1e6:.0f} MB, {entities:,} entities in "
              f"{time.perf_counter() - started:.1f} s")
        db = Database(dsn)
        try:
            report = import_rdf(db, [path], source="kg")
            print(f"import: {report.triples:,} triples ({report.bad_lines} bad lines) in {report.seconds:.1f} s = "
                  f"{report.triples_per_second:,.0f} triples/s; {report.keys:,} keys, {report.names:,} names, "
                  f"{report.relations:,} relations")
            kg = PostgresKG(db, source="kg")
            rng = random.Random(2)
            rel_ms: list[float] = []
            tri_ms: list[float] = []
            cvts = 0
            for _ in range(args.calls):
                entity = f"m.e{rng.randrange(entities)}"
                question = f"what is the {rng.choice(PROPS).replace('_', ' ')} of {entity}?"
                t0 = time.perf_counter()
                found = kg.relations(entity, question=question)
                rel_ms.append((time.perf_counter() - t0) * 1000)
                if not found:
                    continue
                t0 = time.perf_counter()
                result = kg.triples(entity, [r for r, _ in found[:3]], question=question)
                tri_ms.append((time.perf_counter() - t0) * 1000)
                cvts += bool(result["cvt_info"])
            print(f"get_relations: p50 {statistics.median(rel_ms):.1f} ms, p95 {percentile(rel_ms, 0.95):.1f} ms "
                  f"({len(rel_ms)} calls)")
            print(f"get_triples (3 relations): p50 {statistics.median(tri_ms):.1f} ms, "
                  f"p95 {percentile(tri_ms, 0.95):.1f} ms ({len(tri_ms)} calls, {cvts} flattened a CVT)")
        finally:
            db.close()


if __name__ == "__main__":
    main()
