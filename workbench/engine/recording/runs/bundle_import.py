"""Reading a bundle (`workbench.engine.recording.runs.bundle` writes them) and adding its runs
to a home: `workbench import bundle FILE`, and a bundle opened directly.

    report = import_bundle(Path("issue-123.wbundle"), home)

A bundle is hostile input. Only regular members with the names a bundle has are read;
every size is checked against the caps before anything of it is read, the extended
headers (pax, GNU long names) that `tarfile` would read whole included; the xz stream must
end whole; every digest is checked; and nothing is extracted by `tarfile` itself. What a
bundle's runs say of this machine is not believed either: an imported run names no folder
for its tools to read and no model script but the copy the import makes (`as_imported`).
A bundle that fails any check is a `BundleError` with one line.
"""

from __future__ import annotations

import contextlib
import filecmp
import hashlib
import io
import json
import lzma
import re
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, cast

from traces.annotations import Note, Removal, add_annotations, read_annotation
from traces.events import RunStart
from traces.home import traces_dir
from traces.run_names import is_safe_run_id, run_file_stem
from traces.user_files import names_a_file
from traces.versions import SCHEMA_VERSION
from workbench.engine.recording.runs.bundle import (
    ANNOTATIONS,
    IMPORTED_SCRIPTS,
    MAX_MEMBER_BYTES,
    MAX_MEMBERS,
    MAX_TOTAL_BYTES,
    SCRIPT_NAME,
    TRACE_NAME,
    XZ_MAGIC,
    BundleError,
    Manifest,
)
from workbench.engine.recording.runs.load import RecordingError, checked_events

# The headers before one member: a pax header of a long name is a few hundred bytes.
MAX_HEADER_BYTES = 64 * 1024
# After the archive's end: tar pads its last record with zeros (at most 10 KiB).
MAX_TAIL_BYTES = 64 * 1024
# What `run_start.meta` says of an imported run (`as_imported`): that it came from a bundle,
# so a fork asks which folder its tools read.
BUNDLED = "bundled"


@dataclass
class Bundle:
    """A bundle checked, its members unpacked into a scratch folder (`read_bundle`)."""

    path: Path
    manifest: Manifest
    traces: dict[str, Path]  # file stem -> the trace as the bundle holds it
    scripts: dict[str, tuple[str, Path]]  # run id -> (suffix, the script)
    annotations: list[Note | Removal] = field(default_factory=list)  # on its runs, checked


class _Headers:
    """The unpacked archive as `tarfile` reads it, with the reads of each member's headers
    bounded: `tarfile` reads an extended header whole, as big as the header says (1 GiB in
    a bundle of 150 KB), before anything could check its size. While `bounded()`, a read
    past `MAX_HEADER_BYTES` is refused before it is made."""

    def __init__(self, raw: lzma.LZMAFile) -> None:
        self.raw = raw
        self.left: int | None = None

    def read(self, size: int = -1) -> bytes:
        if self.left is not None:
            if size < 0 or size > self.left:
                shown = f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"
                raise BundleError(
                    f"an extended header says it holds {shown}, over the "
                    f"{MAX_HEADER_BYTES >> 10} KiB a bundle's headers may (a zip bomb?)"
                )
            self.left -= size
        return self.raw.read(size)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self.raw.seek(offset, whence)

    def tell(self) -> int:
        return self.raw.tell()

    @contextlib.contextmanager
    def bounded(self) -> Iterator[None]:
        self.left = MAX_HEADER_BYTES
        try:
            yield
        finally:
            self.left = None

    def archive(self) -> tarfile.TarFile:
        """The archive read from here, its first member's headers read (bounded)."""
        with self.bounded():
            return tarfile.TarFile(fileobj=cast("IO[bytes]", self))

    def check_end(self) -> None:
        """The xz stream goes on to its end, checked, with little after the archive: a
        bundle cut short anywhere, in its last percent too, is refused."""
        tail = 0
        while chunk := self.raw.read(1 << 14):
            tail += len(chunk)
            if tail > MAX_TAIL_BYTES:
                raise BundleError("data goes on after the end of the archive")


def _checked_name(member: tarfile.TarInfo) -> str:
    name = member.name
    if member.issym() or member.islnk():
        raise BundleError(f"member {name!r} is a link; a bundle holds regular files only")
    if not member.isfile():
        raise BundleError(f"member {name!r} is not a regular file")
    pure = PurePosixPath(name)
    if name.startswith(("/", "\\")) or pure.is_absolute() or re.match(r"^[A-Za-z]:", name):
        raise BundleError(f"member {name!r} has an absolute path")
    if ".." in pure.parts or "\\" in name:
        raise BundleError(f"member {name!r} points outside the bundle")
    if name not in ("manifest.json", "tools.json", ANNOTATIONS) and not (
        TRACE_NAME.fullmatch(name) or SCRIPT_NAME.fullmatch(name)
    ):
        raise BundleError(f"member {name!r} is not part of a workbench bundle")
    return name


# How much of a member is unpacked at a time: a trace of any length goes through in pieces.
CHUNK_BYTES = 1 << 16


@dataclass
class _Unpacked:
    """A member written to the scratch folder, and its SHA-256."""

    file: Path
    sha256: str


def _members(path: Path, scratch: Path) -> dict[str, _Unpacked]:
    """Every member of the bundle at `path`, each checked before any of it is read, then
    written to a file of `scratch` a piece at a time."""
    members: dict[str, _Unpacked] = {}
    total = 0
    try:
        with lzma.open(path) as raw:
            source = _Headers(raw)
            with source.archive() as tar:
                while True:
                    with source.bounded():
                        member = tar.next()
                    if member is None:
                        break
                    name = _checked_name(member)
                    if name in members:
                        raise BundleError(f"member {name!r} appears twice")
                    if len(members) >= MAX_MEMBERS:
                        raise BundleError(f"more than {MAX_MEMBERS} members")
                    total += member.size
                    if member.size > MAX_MEMBER_BYTES or total > MAX_TOTAL_BYTES:
                        raise BundleError(
                            f"member {name!r} would unpack past the {MAX_TOTAL_BYTES >> 20} "
                            "MiB a bundle may hold (a zip bomb?)"
                        )
                    target = scratch / f"member-{len(members)}"
                    members[name] = _unpack(tar, member, target)
            source.check_end()
    except (tarfile.TarError, lzma.LZMAError, EOFError, OSError) as exc:
        raise BundleError(f"{path} is truncated or damaged ({exc})") from None
    return members


def _unpack(tar: tarfile.TarFile, member: tarfile.TarInfo, target: Path) -> _Unpacked:
    digest = hashlib.sha256()
    left = member.size
    extracted = tar.extractfile(member)
    try:
        out = target.open("wb")
    except OSError as exc:  # the scratch folder's failure, not the bundle's
        raise BundleError(f"cannot unpack into {target.parent}: {exc.strerror or exc}") from None
    with out:
        while left and extracted is not None and (piece := extracted.read(min(left, CHUNK_BYTES))):
            digest.update(piece)
            try:
                out.write(piece)
            except OSError as exc:
                why = exc.strerror or exc
                raise BundleError(f"cannot unpack into {target.parent}: {why}") from None
            left -= len(piece)
    if left:
        raise BundleError(f"member {member.name!r} is cut short")
    return _Unpacked(target, digest.hexdigest())


def read_bundle(path: Path, scratch: Path) -> Bundle:
    """Check the bundle at `path`, its members unpacked into the folder `scratch` (which
    the caller removes); nothing else is written."""
    if not names_a_file(path):
        raise BundleError(f"no bundle file at {path}")
    with path.open("rb") as handle:
        if handle.read(len(XZ_MAGIC)) != XZ_MAGIC:
            raise BundleError(f"{path} is not a workbench bundle (expected an xz-compressed tar)")
    members = _members(path, scratch)
    if "manifest.json" not in members:
        raise BundleError(f"{path} has no manifest.json; it is not a workbench bundle")
    try:
        manifest = Manifest.from_json(json.loads(members.pop("manifest.json").file.read_bytes()))
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise BundleError("manifest.json is not valid JSON") from None
    if manifest.schema_version > SCHEMA_VERSION:
        raise BundleError(
            f"the bundle's traces are schema_version {manifest.schema_version}, newer than "
            f"this workbench reads ({SCHEMA_VERSION}); upgrade agent-workbench to open it"
        )
    if set(manifest.files) != set(members):
        extra = sorted(set(members) ^ set(manifest.files))
        raise BundleError(f"member {extra[0]!r} is missing or not in the manifest")
    for name, unpacked in members.items():
        if unpacked.sha256 != manifest.files[name].get("sha256"):
            raise BundleError(f"member {name!r} does not match its digest in the manifest")
    traces = {
        match.group(1): unpacked.file
        for name, unpacked in members.items()
        if (match := TRACE_NAME.fullmatch(name))
    }
    scripts: dict[str, tuple[str, Path]] = {}
    for run_id, name in manifest.scripts.items():
        match = SCRIPT_NAME.fullmatch(name)
        if match is None or name not in members or not is_safe_run_id(run_id):
            raise BundleError(f"the manifest names a script {name!r} the bundle does not hold")
        scripts[run_id] = (f".{match.group(2)}", members[name].file)
    for run_id in [*manifest.runs, *manifest.parents]:
        if run_file_stem(run_id) not in traces:
            raise BundleError(f"the manifest names run {run_id!r}, whose trace is not in it")
    notes = members.get(ANNOTATIONS)
    run_ids = {*manifest.runs, *manifest.parents}
    return Bundle(path, manifest, traces, scripts, _annotations(notes, run_ids) if notes else [])


def _annotations(unpacked: _Unpacked, run_ids: set[str]) -> list[Note | Removal]:
    """The bundle's annotations, each line read against the contract and on one of the
    bundle's own runs (a bundle annotates nothing else in the home it goes into)."""
    found = []
    with unpacked.file.open("rb") as lines:
        for number, line in enumerate(lines, start=1):
            try:
                record = read_annotation(line.rstrip(b"\r\n"))
            except ValueError as exc:
                why = " ".join(str(exc).split())[:200]
                raise BundleError(f"{ANNOTATIONS} line {number}: {why}") from None
            if record.run_id not in run_ids:
                raise BundleError(
                    f"{ANNOTATIONS} line {number} is on run {record.run_id!r}, which the "
                    "bundle does not hold"
                )
            found.append(record)
    return found


@dataclass
class ImportReport:
    added: list[str]
    already: list[str]  # the same trace was in the home already
    runs: list[str]  # the runs the bundle was made for
    parents: list[str]
    annotations: int = 0  # annotation records added (those already in the home are not)
    authors: list[str] = field(default_factory=list)  # whose they are


def import_bundle(path: Path, home: Path) -> ImportReport:
    """Add a bundle's runs to `home` (traces/ and the offline model scripts); checks every
    trace reads before anything is written, and never replaces a different trace, nor the
    model script of a run imported before. Each trace goes through a line at a time, so a
    bundle of a run of any length is imported in bounded memory."""
    home.mkdir(parents=True, exist_ok=True)
    # Unpacked and checked in the home, not elsewhere: each trace is then moved into place.
    with tempfile.TemporaryDirectory(prefix=".bundle-check-", dir=home) as folder:
        scratch = Path(folder)
        bundle = read_bundle(path, scratch)
        return _imported(bundle, home, scratch)


def _imported(bundle: Bundle, home: Path, scratch: Path) -> ImportReport:
    folder = traces_dir(home)
    scripts = {run_file_stem(run_id): script for run_id, script in bundle.scripts.items()}
    checked: dict[str, Path] = {}
    for stem, raw in bundle.traces.items():
        script = scripts.get(stem)
        copy = home / IMPORTED_SCRIPTS / f"{stem}{script[0]}" if script else None
        check = checked[stem] = scratch / f"{stem}.jsonl"
        _copy_imported(raw, check, copy, stem)
        raw.unlink()
        run_id = _checked_run_id(check, stem)
        if run_file_stem(run_id) != stem:
            raise BundleError(f"trace {stem} holds run {run_id!r}, not {stem}")
    already = [stem for stem in checked if _already(folder / f"{stem}.jsonl", checked[stem], home)]
    added = [stem for stem in checked if stem not in already]
    # A run already here keeps the model script it came with; only new runs bring theirs.
    for stem in added:
        if stem in scripts:
            suffix, body = scripts[stem]
            _move(body, home / IMPORTED_SCRIPTS / f"{stem}{suffix}")
    for stem in added:
        _move(checked[stem], folder / f"{stem}.jsonl")
    # Each author's records go to that author's file, as they wrote them: one import twice,
    # or a record the home has already, adds nothing.
    new = add_annotations(home, bundle.annotations)
    authors = sorted({record.author for record in new})
    return ImportReport(
        added, already, bundle.manifest.runs, bundle.manifest.parents, len(new), authors
    )


def _copy_imported(raw: Path, out: Path, script: Path | None, stem: str) -> None:
    """The trace at `raw` written to `out` as a home keeps it (`imported_line`), a line at a
    time: UTF-8 is checked line by line, as no line break lies inside a character."""
    with raw.open("rb") as lines, out.open("wb") as copy:
        for line in lines:
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError:
                raise BundleError(f"trace {stem} is not UTF-8 text") from None
            copy.write(imported_line(text, script).encode("utf-8"))


def _checked_run_id(check: Path, stem: str) -> str:
    """The run of the trace at `check`, read through as a replay reads it, never held."""
    start: RunStart | None = None
    try:
        for event in checked_events(check):
            if start is None and isinstance(event, RunStart):
                start = event
    except RecordingError as exc:
        raise BundleError(f"trace {stem}: {exc}") from None
    if start is None:
        why = f"no run_start event in {check}; this is not a complete trace header"
        raise BundleError(f"trace {stem}: {why}")
    return start.run_id


def _already(target: Path, check: Path, home: Path) -> bool:
    if not target.exists():
        return False
    if not filecmp.cmp(target, check, shallow=False):
        raise BundleError(
            f"run {target.stem} is already in {home} with a different trace; import into "
            "another home (--home)"
        )
    return True


def _move(source: Path, target: Path) -> None:
    """`source`, of the scratch folder in the home, put in place in one step."""
    target.parent.mkdir(parents=True, exist_ok=True)
    source.replace(target)


def imported_line(line: str, script: Path | None) -> str:
    """A line of a trace as a home keeps it, a run_start's `meta` changed so that a fork
    never follows what the bundle says of this machine: marked as come from a bundle (a
    fork then asks which folder its tools read), naming no folder (`root`), and no model
    script (`fork_script`) but `script`, the copy the import makes of the bundle's own."""
    try:
        event = json.loads(line)
    except (ValueError, RecursionError):
        return line  # a damaged line: the reader says so when the trace is checked
    if not isinstance(event, dict) or event.get("type") != "run_start":
        return line
    given = event.get("meta")
    meta = {
        key: value
        for key, value in (given.items() if isinstance(given, dict) else ())
        if key not in ("root", "fork_script")
    }
    meta[BUNDLED] = True
    if script is not None:
        meta["fork_script"] = str(script.resolve())
    event["meta"] = meta
    end = "\n" if line.endswith("\n") else ""
    # In ASCII, which holds a lone surrogate too (a `\ud800` escape of the bundle's).
    return json.dumps(event, separators=(",", ":")) + end


@contextlib.contextmanager
def opened_bundle(path: Path) -> Iterator[tuple[Path, ImportReport]]:
    """A throwaway home holding the bundle's runs, for opening a bundle directly (show,
    replay, diff, the TUI); removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="workbench-bundle-") as folder:
        home = Path(folder) / "home"
        home.mkdir()
        yield home, import_bundle(path, home)
