"""The built-in tools: read_file, list_dir, search_files and calculator.

File tools see only the folder given as root. Descriptions say when to use a tool, when
not to, and what it fails on, because that text is all the model knows about it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

import regex
from pydantic import BaseModel, Field

from agent_core.tools.calculator import evaluate, format_number
from agent_core.tools.paths import Root
from agent_core.tools.registry import ToolFailure, ToolRegistry, check_cancelled

MAX_READ_BYTES = 1_000_000
# The longest one regular expression may work on one line before search_files gives up.
REGEX_LINE_TIMEOUT_S = 1.0
MAX_LIST_ENTRIES = 500
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv"})


class ReadFileArgs(BaseModel):
    path: str = Field(description="file path relative to the root, e.g. 'docs/notes.md'")
    start_line: int = Field(default=1, ge=1, description="first line to return (1-based)")
    max_lines: int = Field(default=400, ge=1, le=5_000, description="how many lines at most")


class ListDirArgs(BaseModel):
    path: str = Field(default=".", description="folder relative to the root; '.' is the root")


class SearchFilesArgs(BaseModel):
    query: str = Field(min_length=1, description="text to find (case-insensitive)")
    path: str = Field(default=".", description="folder to search in, relative to the root")
    regex: bool = Field(default=False, description="treat query as a Python regular expression")
    glob: str = Field(default="*", description="only files whose name matches, e.g. '*.py'")
    max_results: int = Field(
        default=50, ge=1, le=500, description="stop after this many matching lines"
    )


class CalculatorArgs(BaseModel):
    expression: str = Field(description="arithmetic such as '(17.5 * 4) / 3' or 'sqrt(2) ** 3'")


def builtin_tools(root: Path) -> ToolRegistry:
    """A toolset with the four built-ins, file tools confined to `root`."""
    confined = Root(root)
    tools = ToolRegistry(source="builtin")

    @tools.tool(
        ReadFileArgs,
        read_only=True,
        description=(
            "Read a text file inside the project folder and return its lines, numbered. "
            "Use it when you know which file holds the answer (find it first with list_dir "
            "or search_files). Do not use it for folders or to search many files. Fails on "
            "paths outside the project folder, missing files, folders and binary files; "
            "large files are cut, so page with start_line."
        ),
    )
    def read_file(args: ReadFileArgs) -> str:
        try:
            fd = confined.open(args.path)
        except (FileNotFoundError, NotADirectoryError):
            raise ToolFailure(f"no file {args.path!r}; use list_dir to see what exists") from None
        except OSError as exc:
            raise ToolFailure(f"cannot read {args.path!r} ({exc.strerror or exc})") from None
        try:
            if stat.S_ISDIR(os.fstat(fd).st_mode):
                raise ToolFailure(f"{args.path!r} is a folder; use list_dir for folders")
            data = read_head(fd)
        except NotARegularFile:
            raise ToolFailure(
                f"{args.path!r} is not a regular file (a device, pipe or socket); only text "
                "files can be read"
            ) from None
        finally:
            os.close(fd)
        if b"\0" in data[:8192]:
            raise ToolFailure(f"{args.path!r} is a binary file; only text files can be read")
        lines = data.decode("utf-8", errors="replace").splitlines()
        if not lines:
            return f"{args.path} is empty"
        first = args.start_line - 1
        if first >= len(lines):
            raise ToolFailure(f"{args.path!r} has only {len(lines)} lines")
        chosen = lines[first : first + args.max_lines]
        body = "\n".join(f"{first + n + 1}: {line}" for n, line in enumerate(chosen))
        rest = len(lines) - first - len(chosen)
        if rest > 0:
            body += f"\n[{rest} more lines; call again with start_line={first + len(chosen) + 1}]"
        return body

    @tools.tool(
        ListDirArgs,
        read_only=True,
        description=(
            "List the files and folders directly inside a folder of the project (folders end "
            "with '/', files show their size in bytes). Use it to find out what exists before "
            "reading. Do not use it to look inside files. Fails on paths outside the project "
            "folder and on paths that are not folders."
        ),
    )
    def list_dir(args: ListDirArgs) -> str:
        parts = confined.parts(args.path)
        entries = _entries(confined, args.path)
        lines = []
        for entry in entries[:MAX_LIST_ENTRIES]:
            lines.append(_listed(confined, parts, entry))
        if len(entries) > MAX_LIST_ENTRIES:
            lines.append(f"[{len(entries) - MAX_LIST_ENTRIES} more entries not shown]")
        shown = PurePosixPath(*parts).as_posix() if parts else "."
        return "\n".join(lines) if lines else f"{shown} is empty"

    @tools.tool(
        SearchFilesArgs,
        read_only=True,
        description=(
            "Search the text files under a folder of the project for a word or phrase and "
            "return matching lines as 'path:line: text'. Use it when you do not know which "
            "file mentions something. Do not use it to read a whole file (use read_file). "
            "Fails on paths outside the project folder and on invalid regular expressions."
        ),
    )
    def search_files(args: SearchFilesArgs) -> str:
        base = confined.parts(args.path)
        _entries(confined, args.path)  # a folder, beneath the root: else one line why not
        try:
            pattern = regex.compile(args.query if args.regex else regex.escape(args.query), regex.I)
        except regex.error as exc:
            raise ToolFailure(f"invalid regular expression: {exc}") from None
        hits: list[str] = []
        for parts in _walk(confined, base):
            check_cancelled()
            file = PurePosixPath(*parts)
            if not file.match(args.glob):
                continue
            try:  # opened beneath the root: a symlink out of it is never read
                fd = confined.open(file.as_posix())
            except (ToolFailure, OSError):
                continue
            try:
                data = read_head(fd)
            except (OSError, NotARegularFile):
                continue
            finally:
                os.close(fd)
            if b"\0" in data[:8192]:
                continue
            for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
                check_cancelled()
                try:
                    # Bounded: a pattern that backtracks catastrophically would otherwise
                    # hold a thread (and the process) long after the tool timed out.
                    found = pattern.search(line, timeout=REGEX_LINE_TIMEOUT_S, concurrent=True)
                except TimeoutError:
                    raise ToolFailure(
                        f"the regular expression takes too long on "
                        f"{file}:{number} (nested repetition?); simplify it"
                    ) from None
                if found:
                    hits.append(f"{file}:{number}: {line.strip()[:200]}")
                    if len(hits) >= args.max_results:
                        return "\n".join(hits) + "\n[more matches not shown; narrow the query]"
        return "\n".join(hits) if hits else f"no matches for {args.query!r}"

    @tools.tool(
        CalculatorArgs,
        read_only=True,
        description=(
            "Evaluate an arithmetic expression exactly: numbers, + - * / // % **, "
            "parentheses, sqrt, log, exp, abs, round, min, max, floor, ceil, pi, e. Use it "
            "for any calculation instead of doing arithmetic in your head. Do not use it for "
            "code, units or variables. Fails on anything that is not arithmetic, division by "
            "zero and results too large to compute."
        ),
    )
    def calculator(args: CalculatorArgs) -> str:
        return format_number(evaluate(args.expression))

    return tools


class NotARegularFile(Exception):
    pass


def read_head(fd: int, limit: int = MAX_READ_BYTES) -> bytes:
    """At most `limit` bytes from the start of the regular file open on `fd`. A FIFO,
    device or socket is refused before anything is read from it (a FIFO would block, a
    device never end): the check is on the open descriptor, so nothing can be swapped in
    between."""
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        raise NotARegularFile(str(fd))
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


BUILTIN_NAMES = ("read_file", "list_dir", "search_files", "calculator")


def chosen_builtins(root: Path, names: Collection[str]) -> ToolRegistry:
    """Only the built-ins in `names` (e.g. to leave room for an MCP server's file tools).

    Raises `ValueError` naming any name that is not a built-in."""
    unknown = [name for name in names if name not in BUILTIN_NAMES]
    if unknown:
        raise ValueError(
            f"no built-in tool named {', '.join(unknown)} (built-ins: {', '.join(BUILTIN_NAMES)})"
        )
    chosen = ToolRegistry(source="builtin")
    for tool in builtin_tools(root).tools:
        if tool.name in names:
            chosen.add(tool)
    return chosen


@dataclass(frozen=True)
class _Entry:
    name: str
    kind: Literal["folder", "file", "symlink", "other"]  # as the folder lists it: no links followed
    size: int


def _entries(confined: Root, requested: str) -> list[_Entry]:
    """The entries of a folder opened beneath the root, by name; `ToolFailure` when
    `requested` is not a folder there."""
    try:
        fd = confined.open(requested, folder=True)
    except (FileNotFoundError, NotADirectoryError):
        raise ToolFailure(f"{requested!r} is not a folder") from None
    except OSError as exc:
        raise ToolFailure(f"cannot list {requested!r} ({exc.strerror or exc})") from None
    entries: list[_Entry] = []
    try:
        with os.scandir(fd) as listing:  # the entries' stat calls need the listing open
            for entry in listing:
                if entry.is_symlink():
                    entries.append(_Entry(entry.name, "symlink", 0))
                elif entry.is_dir(follow_symlinks=False):
                    entries.append(_Entry(entry.name, "folder", 0))
                else:
                    size = entry.stat(follow_symlinks=False).st_size
                    regular = entry.is_file(follow_symlinks=False)
                    entries.append(_Entry(entry.name, "file" if regular else "other", size))
    except OSError:
        pass  # an entry removed meanwhile ends the listing with what was seen
    finally:
        os.close(fd)
    return sorted(entries, key=lambda entry: entry.name)


def _listed(confined: Root, parts: tuple[str, ...], entry: _Entry) -> str:
    """One line of list_dir: `name/` for a folder, `name  SIZE` for anything else. A
    symlink is shown as what it leads to inside the root, never as what it leads to
    outside (opened beneath the root, as the tools would read it)."""
    if entry.kind == "folder":
        return f"{entry.name}/"
    if entry.kind != "symlink":
        return f"{entry.name}  {entry.size}"
    try:
        fd = confined.open(PurePosixPath(*parts, entry.name).as_posix())
    except ToolFailure:
        return f"{entry.name}  (a symlink out of the root)"
    except OSError:
        return f"{entry.name}  0"  # a broken link
    try:
        info = os.fstat(fd)
    finally:
        os.close(fd)
    return f"{entry.name}/" if stat.S_ISDIR(info.st_mode) else f"{entry.name}  {info.st_size}"


def _walk(confined: Root, base: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Files under the folder `base` (path parts below the root) in a stable order, each as
    its path parts (symlinks too: reading opens them beneath the root); VCS and cache
    folders and symlinked folders are not walked."""
    try:
        entries = _entries(confined, PurePosixPath(*base).as_posix() if base else ".")
    except ToolFailure:
        return []  # swapped or removed while walking
    found: list[tuple[str, ...]] = []
    for entry in entries:
        if entry.kind == "folder":
            if entry.name not in SKIP_DIRS:
                found.extend(_walk(confined, (*base, entry.name)))
        elif entry.kind in ("file", "symlink"):
            found.append((*base, entry.name))
    return found
