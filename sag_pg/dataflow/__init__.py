"""DataFlow activation, the second retrieval strategy (../shared/seeds/dataflow-activation.md).

The math is SQL (``sag.dataflow_search`` and the functions it calls, sql/idempotent/045-049); Python extracts
the question's entities (:mod:`.entities`) and builds the result (:mod:`.search`).
"""

from .search import DataflowParams, DataflowResult, dataflow_search

__all__ = ["DataflowParams", "DataflowResult", "dataflow_search"]
