"""The team's shared store: a DuckLake (catalog in PostgreSQL, or a file for one machine;
data on S3 or in a folder) that workbenches push finished runs to and read with the
store's own queries. DuckDB's DuckLake, httpfs and postgres extensions come from the `lake`
extra's wheels (`connect.check_installed` says so when they are not there).

`choose` is how a command reads the lake instead of the home's store: the CLI's `--lake`
chooses it for the process, and `TraceStore.for_home` then opens the lake (`reading`)."""

from __future__ import annotations

from traces.store.lake.config import LakeConfig, LakeError

__all__ = ["LakeConfig", "LakeError", "choose", "chosen"]

# None: the home's own store; "": the home's lake.toml; else a `--lake` URL.
_chosen: str | None = None


def choose(lake: str | None) -> None:
    """Read the lake (`lake`: a URL, or "" for the home's lake.toml) instead of the home's
    store from now on in this process; None goes back to the home's store."""
    global _chosen
    _chosen = lake


def chosen() -> str | None:
    return _chosen
