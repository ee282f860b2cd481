"""Reading a stored hierarchy: its levels, its reports, one community (``sag-pg communities list|show``)."""

from __future__ import annotations

from typing import Any

from ..db import graphrag as store
from ..db.connection import Database
from ..errors import NotFoundError

__all__ = ["hierarchy_summary", "list_reports", "show_community"]


def hierarchy_summary(db: Database, source: str | None) -> dict[str, Any]:
    """The latest hierarchy of ``source``: run id and per level its communities and reports."""
    with db.connect(autocommit=True) as conn:
        run = store.hierarchy_run(conn, source)
        if run is None:
            raise NotFoundError(f"no community hierarchy for source {source or '(all sources)'} "
                                "(build one with: sag-pg communities build)")
        return {"run_id": run, "source": source, "levels": store.hierarchy_levels(conn, run)}


def list_reports(db: Database, source: str | None, level: int | None) -> list[dict[str, Any]]:
    """The reports of the latest hierarchy of ``source`` (one level or all)."""
    with db.connect(autocommit=True) as conn:
        return store.community_reports(conn, source, level)


def show_community(db: Database, cluster_id: int) -> dict[str, Any]:
    """One community with its report; NotFoundError when there is no such community."""
    with db.connect(autocommit=True) as conn:
        found = store.community_report(conn, cluster_id)
    if found is None:
        raise NotFoundError(f"no community {cluster_id}")
    return found
