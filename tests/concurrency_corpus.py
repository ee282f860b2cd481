"""Corpora for the concurrency and crash tests: the same people, places and topics over and over, with places that
are a location in one document and a topic (the document's title) in another, so concurrent ingests write the
same keys, and the same names under two types, at the same time."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

PEOPLE = ["Ada Lovelace", "Alan Turing", "Grace Hopper", "John von Neumann", "Claude Shannon", "Barbara Liskov",
          "Edsger Dijkstra", "Donald Knuth"]
PLACES = ["London", "Princeton", "Cambridge", "Zurich", "Boston", "Eindhoven", "Stanford", "Oxford"]
TOPICS = ["Analytical Engine", "Turing Machine", "Information Theory", "Structured Programming"]


def document(i: int, prefix: str = "doc") -> dict[str, str]:
    a, b = PEOPLE[i % 8], PEOPLE[(i * 3 + 1) % 8]
    place, other, topic = PLACES[(i * 5) % 8], PLACES[(i * 7 + 2) % 8], TOPICS[i % 4]
    return {
        "id": f"{prefix}-{i}",
        "title": other if i % 2 else topic,  # "Cambridge" the topic here, "in Cambridge" the location elsewhere
        "text": (f"{a} met {b} in {place} in {1900 + i % 50}. They discussed the {topic} at length. "
                 f"{other} hosted the meeting. Later {b} wrote about {a} from {other}."),
    }


def write_corpus(path: Path, start: int, stop: int, prefix: str = "doc") -> Path:
    with path.open("w") as out:
        for i in range(start, stop):
            out.write(json.dumps(document(i, prefix)) + "\n")
    return path


def cli_env(dsn: str, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAG_")}
    return dict(env, SAG_DATABASE_URL=dsn, SAG_HOME=str(home))


def ingest_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "sag_pg", "ingest", "--quiet", "--json", *args]
