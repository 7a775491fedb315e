"""The DuckDB trace store: the only place in the project that imports DuckDB."""

from traces.store.run_filter import RunQuery
from traces.store.scan import IngestReport
from traces.store.store import (
    AmbiguousRunError,
    QueryError,
    RunRow,
    StoreCorruptError,
    StoreError,
    StoreLockedError,
    StoreReadOnlyError,
    TraceStore,
    UnknownRunError,
)

__all__ = [
    "AmbiguousRunError",
    "IngestReport",
    "QueryError",
    "RunQuery",
    "RunRow",
    "StoreCorruptError",
    "StoreError",
    "StoreLockedError",
    "StoreReadOnlyError",
    "TraceStore",
    "UnknownRunError",
]
