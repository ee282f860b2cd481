"""sag-pg: SQL-Augmented Generation — attribute-driven multi-hop retrieval inside PostgreSQL.

    from sag_pg import SAG
    sag = SAG()                       # embedded PostgreSQL, offline defaults
    sag.ingest_text("...", uri="doc-1")
    result = sag.search("question")
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .config import Settings
from .errors import (
    ConfigError,
    DatabaseError,
    EmbedderMismatchError,
    ExtractionError,
    InputError,
    LLMError,
    NotFoundError,
    QueryError,
    SagError,
    SchemaVersionError,
)

if TYPE_CHECKING:
    from .client import SAG

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # The client pulls in psycopg, pgvector and numpy: `sag-pg --version` and `--help` import this package
    # but never need it, so it is imported on first use of ``sag_pg.SAG``.
    if name == "SAG":
        from .client import SAG

        return SAG
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
__all__ = [
    "SAG",
    "Settings",
    "SagError",
    "ConfigError",
    "DatabaseError",
    "SchemaVersionError",
    "EmbedderMismatchError",
    "InputError",
    "ExtractionError",
    "LLMError",
    "QueryError",
    "NotFoundError",
    "__version__",
]
