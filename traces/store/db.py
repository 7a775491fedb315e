"""DuckDB's engine, as the store uses it.

`import duckdb` loads the package's relational API besides the engine and reads the
package's own version from its installed metadata: about 50 ms of CPU, on every command.
The store needs only the engine (connections and their errors), which DuckDB's wheels ship
as the extension module `_duckdb` and the package re-exports; with a DuckDB that has no
such module, the package is imported as usual. Type checkers see the package."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb
else:
    try:
        import _duckdb as duckdb
    except ImportError:  # an older DuckDB: the engine is not a module of its own
        import duckdb

__all__ = ["duckdb"]
