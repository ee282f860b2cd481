"""Cluster titles (sag-algorithm §4.3 "LLM 生成标题") and top keys.

The top keys of a cluster are its most characteristic keys: score(k) = Σ IDF(k) over the cluster's events
that hold k (so a key held by many of the cluster's events and by few others ranks first).  Offline, the
title is the names of the top three keys (``"曹操 · 官渡 · 袁绍"``); with an LLM, the ``cluster_title``
prompt gets the most connected events and the top keys, and the top-keys title is the fallback when the
LLM fails.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import prompts
from ..errors import LLMError
from ..llm import LLM

__all__ = ["TITLE_SCHEMA", "TopKey", "llm_title", "offline_title", "top_keys"]

log = logging.getLogger(__name__)

TITLE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["title"],
    "properties": {"title": {"type": "string", "minLength": 1}},
}
TITLE_SEPARATOR = " · "
MAX_TITLE_CHARS = 120


@dataclass(frozen=True)
class TopKey:
    key_id: int
    type: str
    name: str
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.key_id, "type": self.type, "name": self.name, "score": self.score}


def top_keys(
    labels: npt.ArrayLike,
    link_events: npt.ArrayLike,
    link_keys: npt.ArrayLike,
    idf: Mapping[int, float],
    *,
    event_ids: npt.ArrayLike,
    n: int = 5,
) -> list[list[tuple[int, float]]]:
    """For each cluster ``0..C-1``: its ``n`` best ``(key_id, score)``, score = Σ IDF over its events.

    ``event_ids`` (ascending) and ``labels`` give each chosen event's cluster; ``link_events`` /
    ``link_keys`` are the (event, key) links of the chosen events.  Keys scoring 0 are left out; ties go
    to the smaller key id.
    """
    ids = np.asarray(event_ids, dtype=np.int64)
    lab = np.asarray(labels, dtype=np.int64)
    count = int(lab.max()) + 1 if lab.size else 0
    result: list[list[tuple[int, float]]] = [[] for _ in range(count)]
    ev = np.asarray(link_events, dtype=np.int64)
    ky = np.asarray(link_keys, dtype=np.int64)
    if ev.size == 0 or count == 0:
        return result
    cluster_of = lab[np.searchsorted(ids, ev)]
    key_ids = np.array(sorted(idf), dtype=np.int64)
    key_pos = np.searchsorted(key_ids, ky)
    weights = np.array([idf[int(k)] for k in key_ids], dtype=np.float64)[key_pos]
    k = np.int64(key_ids.size)
    codes = cluster_of * k + key_pos
    unique, inverse = np.unique(codes, return_inverse=True)
    scores = np.bincount(inverse, weights=weights, minlength=unique.size)
    clusters = unique // k
    keys = key_ids[unique % k]
    order = np.lexsort((keys, -scores, clusters))  # by cluster, best score first, then key id
    for i in order:
        if scores[i] <= 0:
            continue
        bucket = result[int(clusters[i])]
        if len(bucket) < n:
            bucket.append((int(keys[i]), float(scores[i])))
    return result


def offline_title(keys: Sequence[TopKey], fallback: str = "") -> str:
    """The names of the three best keys, or ``fallback`` (an event's title) when the cluster has none."""
    names: list[str] = []
    for key in keys:
        if key.name not in names:
            names.append(key.name)
        if len(names) == 3:
            break
    title = TITLE_SEPARATOR.join(names) if names else fallback.strip()
    return title[:MAX_TITLE_CHARS]


def render_prompt(events: Sequence[str], keys: Sequence[TopKey], *, size: int,
                  prompts_dir: Path | None = None) -> str:
    return prompts.render(
        "cluster_title",
        prompts_dir=prompts_dir,
        size=size,
        events=prompts.bullets(" ".join(e.split()) for e in events),
        keys=prompts.bullets(f"{k.type}: {k.name}" for k in keys),
    )


def llm_title(llm: LLM, events: Sequence[str], keys: Sequence[TopKey], *, size: int,
              prompts_dir: Path | None = None) -> str | None:
    """The LLM's title for a cluster, or None (logged) when the LLM fails or answers an empty title."""
    prompt = render_prompt(events, keys, size=size, prompts_dir=prompts_dir)
    try:
        answer = llm.complete_json(prompt, schema=TITLE_SCHEMA, purpose="cluster_title")
    except LLMError as exc:
        log.warning("cluster title: the LLM failed (%s); using the top keys", exc)
        return None
    title = " ".join(str(answer.get("title", "")).split()).strip().strip("\"'“”「」").rstrip("。.")
    return title[:MAX_TITLE_CHARS] or None
