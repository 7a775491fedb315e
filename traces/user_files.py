"""Reading a file a user names (a flag's FILE, a suite, a script, a trace path): regular
files only, and within a size bound. And writing one whole (`written_whole`).

A FIFO would block the command and a device (/dev/zero, /dev/urandom) would never end or
fill memory; both are refused before anything is read. The file is opened non-blocking and
checked on the open descriptor, so the check is about what is then read. Refusals are an
`OSError` whose `strerror` (and `str`) is the reason alone, so every `except OSError` that
says "cannot read PATH: {exc.strerror}" says it in one line.
"""

from __future__ import annotations

import errno
import os
import stat
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, BinaryIO

# Settings, scripts, suites, prompts and tool schemas are small; this is far above any.
MAX_FILE_BYTES = 64 * 1024 * 1024


class UnreadableFileError(OSError):
    """A named file that is not read: not a regular file, too big, or not UTF-8 text."""

    def __str__(self) -> str:
        return str(self.strerror)


def names_a_file(path: Path | str) -> bool:
    """Whether `path` is a regular file (symlinks followed), False for a name the system
    cannot look up at all (longer than a file name may be, say), where `Path.is_file`
    raises."""
    try:
        return Path(path).is_file()
    except (OSError, ValueError):
        return False


def open_regular(path: Path | str) -> BinaryIO:
    """`path` opened for reading in binary, if it is a regular file (symlinks followed)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            what = "a folder" if stat.S_ISDIR(mode) else "a FIFO, device or socket"
            raise UnreadableFileError(
                errno.EISDIR if stat.S_ISDIR(mode) else errno.EINVAL,
                f"not a regular file ({what})",
                str(path),
            )
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: Path | str, limit: int = MAX_FILE_BYTES) -> bytes:
    """The whole of a regular file of at most `limit` bytes."""
    with open_regular(path) as handle:
        _check_size(handle, path, limit)
        data = handle.read(limit + 1)
    if len(data) > limit:  # it grew since
        raise _too_big(path, limit)
    return data


def check_file(path: Path | str, limit: int = MAX_FILE_BYTES) -> None:
    """Refuse `path` as `read_bytes` would, reading nothing: for a reader that opens the
    file itself."""
    with open_regular(path) as handle:
        _check_size(handle, path, limit)


def _check_size(handle: BinaryIO, path: Path | str, limit: int) -> None:
    if os.fstat(handle.fileno()).st_size > limit:
        raise _too_big(path, limit)


def _too_big(path: Path | str, limit: int) -> UnreadableFileError:
    return UnreadableFileError(
        errno.EFBIG, f"larger than {_size(limit)} (the most read from a file given here)", str(path)
    )


def read_text(path: Path | str, limit: int = MAX_FILE_BYTES) -> str:
    """A regular file of at most `limit` bytes, as UTF-8 text with its line ends made
    `\n` (as `Path.read_text` makes them)."""
    data = read_bytes(path, limit)
    try:
        return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError as exc:
        raise UnreadableFileError(
            errno.EILSEQ, f"not UTF-8 text (byte {exc.start} cannot be read)", str(path)
        ) from None


def _size(limit: int) -> str:
    megabytes = limit / (1024 * 1024)
    return f"{megabytes:g} MB" if megabytes >= 1 else f"{limit} bytes"


@contextmanager
def written_whole(path: Path) -> Iterator[IO[str]]:
    """`path`, written under a name of its own and put in place whole: a failed or a
    concurrent writer never leaves half a file under the name."""
    partial = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.part")
    try:
        with partial.open("x", encoding="utf-8") as out:
            yield out
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
