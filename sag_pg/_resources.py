"""Locate the SQL and alembic files, installed (inside the wheel) or in a source checkout."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def _find(name: str) -> Path:
    packaged = Path(str(resources.files("sag_pg"))) / "_data" / name
    if packaged.is_dir():
        return packaged
    # Editable installs and source checkouts: the top-level folder next to the package.
    checkout = Path(__file__).resolve().parent.parent / name
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"sag-pg cannot find its {name!r} folder (looked in {packaged} and {checkout})")


def sql_dir() -> Path:
    return _find("sql")


def alembic_dir() -> Path:
    return _find("alembic")


def incremental_sql(filename: str) -> str:
    return (sql_dir() / "incremental" / filename).read_text(encoding="utf-8")


def idempotent_sql_files() -> list[Path]:
    return sorted((sql_dir() / "idempotent").glob("*.sql"))
