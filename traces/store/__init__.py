"""The DuckDB trace store: the only place in the project that imports DuckDB."""

from traces.store.opening import (
    AmbiguousRunError,
    QueryError,
    StoreCorruptError,
    StoreError,
    StoreLockedError,
    StoreReadOnlyError,
    UnknownRunError,
)
from traces.store.run_filter import RunQuery
from traces.store.run_row import RunRow
from traces.store.scan import IngestReport
from traces.store.sessions import SessionRow
from traces.store.store import TraceStore

__all__ = [
    "AmbiguousRunError",
    "IngestReport",
    "QueryError",
    "RunQuery",
    "RunRow",
    "SessionRow",
    "StoreCorruptError",
    "StoreError",
    "StoreLockedError",
    "StoreReadOnlyError",
    "TraceStore",
    "UnknownRunError",
]
