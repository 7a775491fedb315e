"""A folder nothing can write through, root included (the tests may run as root, whom file
permissions do not stop)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def read_only(folder: Path) -> Iterator[Path]:
    """`folder` seen read-only: a read-only bind mount of it when running as root, else the
    folder itself with the write permission taken from it and everything in it (given back
    after). Skips the test when root may not mount here."""
    if os.geteuid() != 0:
        modes = {path: path.stat().st_mode for path in [folder, *folder.rglob("*")]}
        for path, mode in modes.items():
            path.chmod(mode & ~0o222)
        try:
            yield folder
        finally:
            for path, mode in modes.items():
                path.chmod(mode)
        return
    mounted = folder.parent / f"{folder.name}-read-only"
    mounted.mkdir()
    bind = subprocess.run(["mount", "--bind", str(folder), str(mounted)], capture_output=True)
    if bind.returncode != 0:
        pytest.skip("running as root without permission to mount a read-only folder")
    try:
        remount = subprocess.run(
            ["mount", "-o", "remount,bind,ro", str(mounted)], capture_output=True
        )
        if remount.returncode != 0:
            pytest.skip("running as root without permission to remount a folder read-only")
        yield mounted
    finally:
        subprocess.run(["umount", str(mounted)], check=True)
