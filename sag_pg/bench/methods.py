"""The retrievers a benchmark compares, each a function ``(query, top_k) -> document uris in rank order``.

- ``sag``: ``SAG.search(question, source=..., top_n=top_k)``, fast mode (no LLM): the whole SAG retrieval,
  including embedding and tokenizing the question and opening its connection, as a user calls it;
- ``sag-seed``: the same with ``params=RetrievalParams(profile="seed")``: sag-algorithm's formulas as written,
  every addition of the default off (docs/retrieval.md, "The seed profile"), for comparison;
- ``bm25``: ``sag.bm25_chunks`` — BM25 (Lucene variant, k1 1.2, b 0.75) in SQL over the stored tokens;
- ``dense``: ``sag.dense_chunks`` — pgvector HNSW top-k over the chunk embeddings;
- ``hybrid``: ``sag.hybrid_chunks`` — reciprocal-rank fusion (k = 60) of the two in SQL;
- ``dataflow``: ``SAG.search(question, source=..., top_n=top_k, strategy="dataflow")``: DataFlow activation
  (sag_pg.dataflow), as a user calls it.

The baselines get the same query embedding (``embed_queries(embedder, [question])[0]``: with the model's query
prefix, as SAG; sent in binary) and tokens
(``search_tokens(question)``) as SAG computes, prepared before the clock starts.  A chunk maps to its
document's uri.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ..embedders.base import embed_queries
from ..errors import ConfigError
from ..search.retrieve import RetrievalParams
from ..text.tokenize import search_tokens

if TYPE_CHECKING:
    from ..client import SAG

__all__ = ["METHODS", "Method", "PreparedQuery", "open_methods", "parse_methods", "prepare_query"]

METHODS = ("sag", "sag-seed", "bm25", "dense", "hybrid", "dataflow")


@dataclass(frozen=True)
class PreparedQuery:
    question: str
    embedding: npt.NDArray[np.float32]
    tokens: list[str]


Method = Callable[[PreparedQuery, int], list[str]]

# Chunk hits -> document uris, in the function's own order (ordinality).
_URIS = """
select d.uri
  from {call} with ordinality as r(chunk_id, score, n)
  join sag.chunks c on c.id = r.chunk_id
  join sag.documents d on d.id = c.document_id
 order by r.n"""
_BM25 = _URIS.format(call="sag.bm25_chunks(%s::text[], %s::bigint[], top_k => %s)")
_DENSE = _URIS.format(call="sag.dense_chunks(%b, %s::bigint[], top_k => %s)")
_HYBRID = _URIS.format(call="sag.hybrid_chunks(%b, %s::text[], %s::bigint[], top_k => %s)")


def parse_methods(spec: str | Sequence[str]) -> list[str]:
    """``"sag,bm25"`` -> ``["sag", "bm25"]``; unknown names are a ConfigError."""
    names = [n.strip().lower() for n in (spec.split(",") if isinstance(spec, str) else spec) if n.strip()]
    unknown = [n for n in names if n not in METHODS]
    if unknown or not names:
        raise ConfigError(f"unknown method {', '.join(unknown) or '(none)'}: choose from {', '.join(METHODS)}")
    return list(dict.fromkeys(names))


def prepare_query(sag: SAG, question: str) -> PreparedQuery:
    return PreparedQuery(question, np.asarray(embed_queries(sag.embedder, [question])[0], dtype=np.float32),
                         search_tokens(question))


@contextmanager
def open_methods(sag: SAG, names: Sequence[str], *, source: str) -> Iterator[dict[str, Method]]:
    """The named methods over ``sag``'s database, restricted to ``source``; one connection for the baselines."""
    with sag.db.connect(autocommit=True) as conn:
        row = conn.execute("select sag.source_ids(%s)", [[source]]).fetchone()
        source_ids = list(row[0]) if row and row[0] else []

        def uris(query: str, args: list[object]) -> list[str]:
            return [r[0] for r in conn.execute(query, args).fetchall()]  # type: ignore[arg-type]

        def sag_method(q: PreparedQuery, top_k: int) -> list[str]:
            return [hit.document_uri for hit in sag.search(q.question, source=source, top_n=top_k).chunks]

        seed = RetrievalParams(profile="seed")

        def sag_seed_method(q: PreparedQuery, top_k: int) -> list[str]:
            return [hit.document_uri for hit in sag.search(q.question, source=source, top_n=top_k, params=seed).chunks]

        available: dict[str, Method] = {
            "sag": sag_method,
            "sag-seed": sag_seed_method,
            "bm25": lambda q, k: uris(_BM25, [q.tokens, source_ids, k]),
            "dense": lambda q, k: uris(_DENSE, [q.embedding, source_ids, k]),
            "hybrid": lambda q, k: uris(_HYBRID, [q.embedding, q.tokens, source_ids, k]),
            "dataflow": lambda q, k: [hit.document_uri for hit in
                                      sag.search(q.question, source=source, top_n=k, strategy="dataflow").chunks],
        }
        yield {name: available[name] for name in names}
