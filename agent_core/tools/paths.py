"""Confining file tools to one root folder.

Refused: `..` anywhere in the path, absolute paths outside the root, and paths that leave
the root through a symlink (checked on the fully resolved path, so a link inside the root
pointing outside is refused too).
"""

from __future__ import annotations

from pathlib import Path, PurePath

from agent_core.tools.registry import ToolFailure


class Root:
    def __init__(self, folder: Path) -> None:
        self.path = folder.resolve()

    def resolve(self, requested: str) -> Path:
        """The real path for `requested`, or `ToolFailure` saying why it is refused."""
        text = (requested or ".").strip()
        if ".." in PurePath(text).parts:
            raise ToolFailure(f"path {text!r} uses '..'; give a path inside the root instead")
        candidate = Path(text)
        if not candidate.is_absolute():
            candidate = self.path / candidate
        real = candidate.resolve()
        if not real.is_relative_to(self.path):
            if Path(text).is_absolute() and not candidate.is_relative_to(self.path):
                raise ToolFailure(f"path {text!r} is outside the root; use a relative path")
            raise ToolFailure(f"path {text!r} leaves the root through a symlink; refused")
        return real

    def relative(self, path: Path) -> str:
        relative = path.relative_to(self.path).as_posix()
        return relative or "."
