"""Exceptions raised by sag-pg.

Every error the library raises on purpose derives from :class:`SagError`::

    SagError
    ├── ConfigError          settings, DSNs, embedder/LLM specs that cannot work
    ├── DatabaseError        the server cannot be reached or started
    │   └── SchemaVersionError   the database schema is older/newer than the code
    ├── EmbedderMismatchError    the database was built with another embedder
    ├── InputError           a document, file or JSONL line that cannot be ingested
    ├── ExtractionError      events/keys could not be extracted from a document
    ├── LLMError             an LLM endpoint failed after retries or answered nonsense
    └── QueryError           a request is refused: bad parameters, a disallowed ``sql`` restriction
        └── NotFoundError    it names a source or document that does not exist

The CLI turns these into one-line messages and exit code 1 (usage errors: 2); the library lets them
propagate.  The SQL functions raise SQLSTATE 22023 (invalid parameter) and P0002 (not found) for the
same mistakes; :func:`error_for_sqlstate` gives their Python counterparts.
"""

from __future__ import annotations


class SagError(Exception):
    """Base class of every error raised by sag-pg on purpose."""


class ConfigError(SagError):
    """A setting cannot work as given."""


class DatabaseError(SagError):
    """The database cannot be reached, started or used."""


class SchemaVersionError(DatabaseError):
    """The database schema does not match this version of sag-pg."""


class EmbedderMismatchError(SagError):
    """The database was created with a different embedder (name or dimension)."""


class InputError(SagError):
    """An input document cannot be ingested; the message names the input."""


class ExtractionError(SagError):
    """Events or keys could not be extracted."""


class LLMError(SagError):
    """An LLM call failed after retries, or its answer could not be used."""


class QueryError(SagError):
    """A request was refused (bad parameters or a disallowed restriction)."""


class NotFoundError(QueryError):
    """A request names a source or document that does not exist."""


def error_for_sqlstate(sqlstate: str | None, message: str) -> SagError | None:
    """The SagError for a database error that sag's SQL functions raise on purpose, or None.

    ``22023`` (invalid_parameter_value) becomes :class:`QueryError`, ``P0002`` (no_data_found)
    :class:`NotFoundError`; any other SQLSTATE is not the user's doing and gets None.
    """
    kind = {"22023": QueryError, "P0002": NotFoundError}.get(sqlstate or "")
    return kind(message) if kind is not None else None


def user_error(exc: BaseException) -> SagError | None:
    """``exc`` as the SagError a user should see: itself if it is one; a database error that sag's SQL raised
    on purpose (an unknown source, an invalid parameter) as its SagError, with the server's hint; else None
    (a bug, to be shown as such).  The CLI and the MCP server both turn errors into messages with it."""
    if isinstance(exc, SagError):
        return exc
    diag = getattr(exc, "diag", None)  # psycopg.Error, without importing psycopg here
    if diag is None or not hasattr(exc, "sqlstate"):
        return None
    message = diag.message_primary or str(exc).strip()
    if exc.sqlstate == "0A000" and message.startswith(_CITUS_UNPLANNED):
        return DatabaseError(f"Citus cannot plan a statement of this command on the distributed schema ({message}): "
                             "every sag command is meant to run there, so this is a bug to report, with the "
                             "command (README: Scale-out on Citus)")
    if diag.message_hint:
        message += f" ({diag.message_hint.rstrip('.')})"
    return error_for_sqlstate(exc.sqlstate, message)


# What Citus says of a query it cannot plan over distributed tables (sqlstate 0A000).
_CITUS_UNPLANNED = ("complex joins are only supported", "could not create distributed plan",
                    "cannot perform a lateral outer join", "cannot push down", "correlated subqueries are not")
