"""Run ids as file names: a run id read from a file or typed by a user is data, and becomes
a path part only when it is safe as it is, else a safe stem of it."""

from __future__ import annotations

import re

__all__ = ["is_safe_run_id", "run_file_stem"]


# What a run id may look like to become a file name as it is: the workbench's own ids are
# hex, imported ones hex or a few word characters; anything else (a '/', '..', a glob
# character) is data that must not become a path part.
_SAFE_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


def is_safe_run_id(run_id: str) -> bool:
    """Whether `run_id` can name a file as it is: letters, digits, `_ . -`, no leading
    dot, no `..`, at most 128 characters."""
    return _SAFE_RUN_ID.fullmatch(run_id) is not None and ".." not in run_id


def run_file_stem(run_id: str) -> str:
    """A file name (without suffix) for a run: the id itself when it is safe, else its safe
    characters and a hash of the whole id, so two hostile ids never share a name."""
    if is_safe_run_id(run_id):
        return run_id
    import hashlib

    kept = re.sub(r"[^A-Za-z0-9_-]+", "_", run_id).strip("_")[:64] or "run"
    return f"{kept}-{hashlib.sha256(run_id.encode('utf-8', 'replace')).hexdigest()[:12]}"
