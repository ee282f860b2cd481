"""How a search result is shown (issue #37 item 8): the same for `sag-pg search` and the HTTP API's /search.

Padding (chunks nothing relates to the question) is left out and counted; a chunk placed above chunks that score
more says why.
"""

from __future__ import annotations

from typing import Any

# A chunk is padding when nothing relates it to the question: no evidence of its own (W_init 0; PageRank then
# gives every such chunk the same share, 0.25 each of four when nothing matched) or a score that prints as
# 0.0000, unless it is a direct match (its own words and vector found it).  Issue #37 item 8: padding filled the
# list up to --top-n.
_VISIBLE = 0.00005


def relevant(hit: Any) -> bool:
    return hit.direct_match or (hit.weight_init > 0 and hit.score >= _VISIBLE)


def placements(hits: list[Any]) -> list[str]:
    """Why each chunk has its place: "score" when no chunk below it scores more; else why it was placed above
    higher scores: "direct match" (one of the question's best chunks by its own evidence, kept among the first
    three) or "coverage" (sag.cover_question: it holds question terms the chunks above it lack)."""
    out: list[str] = []
    best_below = float("-inf")
    for hit in reversed(hits):
        out.append("score" if hit.score >= best_below else "direct match" if hit.direct_match else "coverage")
        best_below = max(best_below, hit.score)
    return out[::-1]


PLACED_LEGEND = ("↑ placed above chunks that score more: coverage = it holds question terms the chunks above it "
                 "lack (sag.cover_question); direct match = one of the question's best chunks by its own words and "
                 "vector, kept among the first three")


def result_json(result: Any) -> dict[str, Any]:
    """`search --json`: the relevant chunks only (the count left out and why), each with why it has its place."""
    shown = [hit for hit in result.chunks if relevant(hit)]
    data = result.to_dict()
    data["chunks"] = []
    for hit, placed in zip(shown, placements(shown), strict=True):
        data["chunks"].append({**hit.to_dict(), "placed_by": placed})
    data["omitted"] = {"chunks": len(result.chunks) - len(shown),
                       "reason": "no evidence relating them to the question (W_init 0 or a score below 0.00005)"}
    rewrite = getattr(result, "rewrite", None)
    if rewrite is not None:
        data["rewrite"] = rewrite.to_dict()
    return data
