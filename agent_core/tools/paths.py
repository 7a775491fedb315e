"""Confining file tools to one root folder.

Refused: `..` anywhere in the path, absolute paths outside the root, and paths that leave
the root through a symlink (a link inside the root pointing outside is refused too).

A path is not checked and then opened: it is opened one component at a time, each relative
to the descriptor of the folder before it and with `O_NOFOLLOW`, so the kernel never
follows a symlink on its own. A symlink met on the way is read and its target walked the
same way, from the folder it is in (or from the root, for an absolute target inside it).
What is opened is therefore inside the root whatever is renamed or swapped for a symlink
meanwhile; the tools then look at the open descriptor (`os.fstat`), never at the path again.
"""

from __future__ import annotations

import os
from collections import deque
from pathlib import Path, PurePath, PurePosixPath

from agent_core.tools.registry import ToolFailure

# As many symlinks as Linux follows in one path before it gives up (ELOOP).
MAX_SYMLINKS = 40


class Root:
    def __init__(self, folder: Path) -> None:
        self.path = folder.resolve()

    def parts(self, requested: str) -> tuple[str, ...]:
        """The components of `requested` below the root, or `ToolFailure` saying why it is
        refused (`..`, or an absolute path outside the root)."""
        text = (requested or ".").strip()
        if ".." in PurePath(text).parts:
            raise ToolFailure(f"path {text!r} uses '..'; give a path inside the root instead")
        path = Path(text)
        if not path.is_absolute():
            return path.parts
        if not path.is_relative_to(self.path):
            raise ToolFailure(f"path {text!r} is outside the root; use a relative path")
        return path.relative_to(self.path).parts

    def open(self, requested: str, *, folder: bool = False) -> int:
        """A descriptor of `requested` opened beneath the root (a folder's with `folder`),
        for the caller to close. `ToolFailure` when the path is refused or leads out of
        the root through a symlink; `OSError` as `os.open` raises it (no such file, not a
        folder, no permission). A FIFO or device is opened without blocking."""
        text = (requested or ".").strip()
        escape = ToolFailure(f"path {text!r} leaves the root through a symlink; refused")
        pending = deque(self.parts(requested))
        last_flags = os.O_RDONLY | os.O_NONBLOCK | (os.O_DIRECTORY if folder else 0)
        folders = [os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)]
        links = 0
        try:
            while pending:
                name = pending.popleft()
                if name in ("", ".", "/"):
                    continue
                if name == "..":  # only from a symlink's target: the user's are refused
                    if len(folders) == 1:
                        raise escape
                    os.close(folders.pop())
                    continue
                flags = last_flags if not pending else os.O_RDONLY | os.O_DIRECTORY
                try:
                    fd = os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folders[-1])
                except OSError:
                    target = _link_target(name, folders[-1])
                    if target is None:
                        raise
                    links += 1
                    if links > MAX_SYMLINKS:
                        raise ToolFailure(f"path {text!r} has too many symlinks; refused") from None
                    if target.is_absolute():
                        if not target.is_relative_to(self.path):
                            raise escape from None
                        for fd in folders[1:]:
                            os.close(fd)
                        del folders[1:]
                        target = target.relative_to(self.path)
                    pending.extendleft(reversed(target.parts))
                    continue
                if not pending:
                    return fd
                folders.append(fd)
            return os.dup(folders[-1])  # the root itself, or a folder a symlink led to
        finally:
            for fd in folders:
                os.close(fd)

    def relative(self, path: Path) -> str:
        relative = path.relative_to(self.path).as_posix()
        return relative or "."


def _link_target(name: str, folder_fd: int) -> PurePosixPath | None:
    """The target of the symlink `name` in the folder `folder_fd`; None if it is none."""
    try:
        return PurePosixPath(os.readlink(name, dir_fd=folder_fd))
    except OSError:
        return None
