"""One file that replays runs on another machine: `workbench bundle RUN… -o FILE`.

    manifest = write_bundle([BundledTrace.at(trace_path)], home, Path("issue-123.wbundle"))

(`bundle_import` reads one and adds its runs to another home.)

A bundle is a tar archive in one xz stream (so the history each model request repeats, and
that a fork shares with its parent, is compressed once), holding:

- `manifest.json`: the bundle version, the workbench and schema versions, the runs asked
  for and the fork parents that came with them, each member's size and SHA-256, and what
  was redacted (the placeholders found, the home's patterns applied once more);
- `traces/<run>.jsonl`: each run's trace as recorded (its tool schemas and MCP frames are in
  it), redacted again with the home's patterns;
- `tools.json`: the tool schemas each run offered, for reading without the workbench;
- `scripts/<run>.<ext>`: the model script of an offline fork (`run_start.meta.fork_script`),
  when it is a file in the home: a trace can name any file (one imported names the
  sender's), and a bundle carries nothing from outside the home;
- `annotations.jsonl`: the annotations on those runs (`traces.annotations`; tombstones too,
  each with its author), redacted as the traces are, when they have any. Only a bundle
  that carries them is version 2; one without is version 1, which every reader opens.

Nothing else from the home goes in.
"""

from __future__ import annotations

import hashlib
import io
import json
import lzma
import re
import stat
import tarfile
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from traces.annotations import home_annotations
from traces.events import RunStart
from traces.home import home_redactor, traces_dir
from traces.redact import REDACTION_MARK, Redactor
from traces.run_names import is_safe_run_id, run_file_stem
from traces.user_files import names_a_file, read_bytes
from traces.versions import SCHEMA_VERSION
from workbench.engine.recording.runs.load import RecordingError, checked_events

BUNDLE_FORMAT = "workbench-bundle"
# 1 — traces, tool schemas, offline model scripts; 2 — and the runs' annotations.
BUNDLE_VERSION = 2
ANNOTATIONS = "annotations.jsonl"
SUFFIX = ".wbundle"
XZ_MAGIC = b"\xfd7zXZ\x00"
# Caps for reading: a bundle is an issue attachment, not an archive of a home.
MAX_MEMBERS = 4096
MAX_MEMBER_BYTES = 256 * 1024 * 1024
MAX_TOTAL_BYTES = 512 * 1024 * 1024
MAX_SCRIPT_BYTES = 4 * 1024 * 1024
TRACE_NAME = re.compile(r"traces/([A-Za-z0-9][A-Za-z0-9_.-]{0,127})\.jsonl")
SCRIPT_NAME = re.compile(r"scripts/([A-Za-z0-9][A-Za-z0-9_.-]{0,127})\.(json|toml)")
_PLACEHOLDER = re.compile(re.escape(REDACTION_MARK) + r"([A-Za-z0-9_-]{1,40})\]")
IMPORTED_SCRIPTS = "bundle-scripts"  # <home>/bundle-scripts/<run>.<ext>


class BundleError(Exception):
    """A bundle that cannot be written or read; one line saying why."""


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("agent-workbench")
    except PackageNotFoundError:
        return "unknown"


@dataclass
class BundledTrace:
    """A trace going into a bundle: its file and run_start (what finding its fork parent
    needs); the rest is read as the trace streams into the bundle."""

    path: Path
    run_start: RunStart

    @property
    def run_id(self) -> str:
        return self.run_start.run_id

    @classmethod
    def at(cls, path: Path) -> BundledTrace:
        """The trace at `path`, by its first run_start; `RecordingError` (one line) when
        it has none or cannot be read."""
        from traces.reader import iter_trace
        from traces.versions import NewerSchemaError

        if not names_a_file(path):
            raise RecordingError(f"no trace file at {path}")
        problems: list[str] = []
        try:
            start = next((e for e in iter_trace(path, problems) if isinstance(e, RunStart)), None)
        except NewerSchemaError as exc:
            raise RecordingError(f"{path.name}: {exc}; upgrade the workbench") from None
        except (OSError, ValueError) as exc:
            raise RecordingError(f"cannot read {path}: {exc}") from None
        if start is None:
            why = problems[0] if problems else "no run_start event"
            raise RecordingError(f"corrupt recording {path}: {why}")
        return cls(path, start)


def with_parents(traces: list[BundledTrace], home: Path) -> tuple[list[BundledTrace], list[str]]:
    """The traces and every fork parent they descend from that the home still has;
    (all of them, oldest ancestor first; parent ids that could not be found)."""
    by_id = {t.run_id: t for t in traces}
    order: dict[str, BundledTrace] = {}
    missing: list[str] = []

    def visit(trace: BundledTrace, depth: int) -> None:
        parent_id = trace.run_start.parent_run_id
        if parent_id and parent_id not in by_id and depth < 64:
            parent = _find(parent_id, home)
            if parent is None:
                missing.append(parent_id)
            else:
                by_id[parent_id] = parent
                visit(parent, depth + 1)
        order.setdefault(trace.run_id, trace)

    for trace in traces:
        visit(trace, 0)
    asked = {t.run_id for t in traces}
    parents = [t for run_id, t in order.items() if run_id not in asked]
    return [*parents, *[t for run_id, t in order.items() if run_id in asked]], missing


def _find(run_id: str, home: Path) -> BundledTrace | None:
    if not is_safe_run_id(run_id):
        return None
    path = traces_dir(home) / f"{run_id}.jsonl"
    try:
        return BundledTrace.at(path) if path.is_file() else None
    except RecordingError:
        return None


@dataclass
class _Member:
    """A trace's redacted text, written to a scratch file as it streams, and what the
    manifest says of it."""

    file: Path
    changed: bool = False  # by the home's patterns
    frames: int = 0  # MCP messages
    schemas: list[dict[str, Any]] = field(default_factory=list)


def _streamed(
    trace: BundledTrace, redactor: Redactor, scratch: Path, placeholders: Counter[str]
) -> _Member:
    """The trace checked as a recording is (a bad line before the last one, a seq out of
    order: `RecordingError`), its tool schemas and MCP frames counted from its events, and
    its lines redacted with the home's patterns once more, one line at a time."""
    from traces.events import McpMessage, ToolsChanged

    member = _Member(scratch / f"{run_file_stem(trace.run_id)}.jsonl")
    member.schemas = list(trace.run_start.tools)
    for event in checked_events(trace.path):
        if isinstance(event, McpMessage):
            member.frames += 1
        elif isinstance(event, ToolsChanged):
            member.schemas += [s for s in event.tools if s not in member.schemas]
    with trace.path.open("rb") as handle, member.file.open("wb") as out:
        for raw in handle:  # as written: one event a line, the last one perhaps cut off
            line = raw.decode("utf-8", "surrogateescape")
            redacted = redactor.text(line)
            member.changed |= redacted != line
            placeholders.update(_PLACEHOLDER.findall(redacted))
            out.write(redacted.encode("utf-8", "surrogateescape"))
    return member


@dataclass
class Manifest:
    runs: list[str]  # what was asked for
    parents: list[str]  # fork parents that came with them
    files: dict[str, dict[str, Any]]  # member -> size, sha256
    redacted: dict[str, Any]
    scripts: dict[str, str] = field(default_factory=dict)  # run id -> member
    missing_parents: list[str] = field(default_factory=list)
    # Runs whose model script is a file outside the home, which a bundle does not carry.
    scripts_left_out: list[str] = field(default_factory=list)
    bundle_version: int = BUNDLE_VERSION
    schema_version: int = SCHEMA_VERSION
    workbench_version: str = ""
    created: str = ""
    mcp_frames: dict[str, int] = field(default_factory=dict)
    annotations: int = 0  # records in `ANNOTATIONS` (tombstones too)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": BUNDLE_FORMAT,
            "bundle_version": self.bundle_version,
            "workbench_version": self.workbench_version,
            "schema_version": self.schema_version,
            "created": self.created,
            "runs": self.runs,
            "parents": self.parents,
            "missing_parents": self.missing_parents,
            "scripts": self.scripts,
            "scripts_left_out": self.scripts_left_out,
            "mcp_frames": self.mcp_frames,
            "annotations": self.annotations,
            "redacted": self.redacted,
            "files": self.files,
        }

    @classmethod
    def from_json(cls, data: Any) -> Manifest:
        if not isinstance(data, dict) or data.get("format") != BUNDLE_FORMAT:
            raise BundleError("manifest.json is not a workbench bundle manifest")
        version = data.get("bundle_version")
        if not isinstance(version, int) or version < 1:
            raise BundleError("manifest.json has no valid bundle_version")
        if version > BUNDLE_VERSION:
            raise BundleError(
                f"bundle version {version} is newer than this workbench reads "
                f"({BUNDLE_VERSION}); upgrade agent-workbench to open it"
            )
        try:
            return cls(
                runs=[str(r) for r in data["runs"]],
                parents=[str(r) for r in data.get("parents", [])],
                files={str(k): dict(v) for k, v in data["files"].items()},
                redacted=dict(data.get("redacted", {})),
                scripts={str(k): str(v) for k, v in data.get("scripts", {}).items()},
                missing_parents=[str(r) for r in data.get("missing_parents", [])],
                scripts_left_out=[str(r) for r in data.get("scripts_left_out", [])],
                bundle_version=version,
                schema_version=int(data.get("schema_version", SCHEMA_VERSION)),
                workbench_version=str(data.get("workbench_version", "")),
                created=str(data.get("created", "")),
                mcp_frames={str(k): int(v) for k, v in data.get("mcp_frames", {}).items()},
                annotations=int(data.get("annotations", 0)),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise BundleError(f"manifest.json is damaged ({type(exc).__name__})") from None


def write_bundle(traces: list[BundledTrace], home: Path, out: Path) -> Manifest:
    """Write the runs, their fork parents and their offline model scripts to `out`. Each
    trace streams through: redacted a line at a time into a scratch file, then into the
    archive, so a run of 200,000 events is bundled in bounded memory."""
    if not traces:
        raise BundleError("name at least one run to bundle")
    _check_target(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="bundle-", dir=out.parent) as folder:
            return _write(traces, home, out, Path(folder))
    except OSError as exc:
        raise BundleError(f"cannot write {out}: {exc.strerror or exc}") from None


def _check_target(out: Path) -> None:
    """`BundleError` unless `out` is a new file or a regular one: a bundle replaces what is
    there, and a device, a FIFO, a folder or a link is not its to replace."""
    try:
        mode = out.lstat().st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise BundleError(f"cannot write {out}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        raise BundleError(
            f"cannot write {out}: it is not a regular file (a folder, link, FIFO or device); "
            "name a new file"
        )


def _write(traces: list[BundledTrace], home: Path, out: Path, scratch: Path) -> Manifest:
    every, missing = with_parents(traces, home)
    redactor = home_redactor(home)
    placeholders: Counter[str] = Counter()
    scripts: dict[str, str] = {}
    left_out: list[str] = []
    files: dict[str, Path] = {}
    streamed: dict[str, _Member] = {}
    try:
        for trace in every:
            member = streamed[trace.run_id] = _streamed(trace, redactor, scratch, placeholders)
            stem = run_file_stem(trace.run_id)
            files[f"traces/{stem}.jsonl"] = member.file
            script = _script_of(trace.run_start, home, left_out)
            if script is not None:
                suffix = script.suffix if script.suffix == ".toml" else ".json"
                name = f"scripts/{stem}{suffix}"
                text = redactor.text(read_bytes(script, MAX_SCRIPT_BYTES).decode("utf-8"))
                files[name] = scratch / f"script-{len(files)}{suffix}"
                files[name].write_bytes(text.encode("utf-8"))
                scripts[trace.run_id] = name
    except RecordingError as exc:
        raise BundleError(str(exc)) from None
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise BundleError(f"cannot read a trace or script to bundle: {why or exc}") from None
    notes = _annotation_lines(home, list(streamed), redactor, placeholders)
    if notes:
        files[ANNOTATIONS] = scratch / ANNOTATIONS
        files[ANNOTATIONS].write_bytes("".join(notes).encode("utf-8"))
    tools = {run_id: member.schemas for run_id, member in streamed.items()}
    files["tools.json"] = scratch / "tools.json"
    files["tools.json"].write_bytes(json.dumps(tools, indent=1, ensure_ascii=False).encode("utf-8"))
    asked = {t.run_id for t in traces}
    manifest = Manifest(
        runs=[t.run_id for t in traces],
        parents=[t.run_id for t in every if t.run_id not in asked],
        files={name: _file_entry(path) for name, path in files.items()},
        redacted={
            "placeholders": dict(sorted(placeholders.items())),
            "home_patterns": len(redactor.patterns),
            "traces_changed_by_patterns": sum(m.changed for m in streamed.values()),
        },
        scripts=scripts,
        missing_parents=missing,
        scripts_left_out=left_out,
        workbench_version=_version(),
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        mcp_frames={run_id: member.frames for run_id, member in streamed.items()},
        annotations=len(notes),
        bundle_version=BUNDLE_VERSION if notes else 1,
    )
    _check_caps(manifest.files)
    data = json.dumps(manifest.to_json(), indent=1).encode("utf-8")
    size = len(data) + sum(entry["size"] for entry in manifest.files.values())
    partial = scratch / "bundle.partial"
    with (
        lzma.open(partial, "wb", format=lzma.FORMAT_XZ, filters=_filters(size)) as packed,
        tarfile.open(fileobj=packed, mode="w") as tar,
    ):
        _add(tar, "manifest.json", len(data), io.BytesIO(data))
        for name, path in sorted(files.items()):
            with path.open("rb") as body:
                _add(tar, name, path.stat().st_size, body)
    _check_target(out)  # as it is now, after the minutes a big bundle may take
    partial.replace(out)
    return manifest


def _annotation_lines(
    home: Path, run_ids: list[str], redactor: Redactor, placeholders: Counter[str]
) -> list[str]:
    """The annotations on the bundled runs, a line each, redacted with the home's patterns."""
    lines = []
    for record in home_annotations(home, set(run_ids)):
        line = redactor.text(record.model_dump_json(exclude_none=True))
        placeholders.update(_PLACEHOLDER.findall(line))
        lines.append(line + "\n")
    return lines


# The largest dictionary a bundle is written with. xz's encoder takes some eleven times its
# dictionary (preset 9's 64 MiB: 674 MB); 8 MiB keeps a bundle of any run near 100 MB, and
# the history each request repeats lies well within 8 MiB of its last copy.
MAX_DICTIONARY = 1 << 23


def _filters(size: int) -> list[dict[str, Any]]:
    """xz at its strongest preset, with a dictionary no larger than the archive (`size`
    bytes) and at most `MAX_DICTIONARY`: a bundle of a short run is written in a few MB,
    one of a run of any length in about a hundred. Any xz reader reads it."""
    dictionary = max(1 << 16, min(MAX_DICTIONARY, 1 << max(size - 1, 1).bit_length()))
    return [{"id": lzma.FILTER_LZMA2, "preset": 9, "dict_size": dictionary}]


def _check_caps(files: dict[str, dict[str, Any]]) -> None:
    """No bundle is written that `read_bundle` would refuse for its size."""
    for name, entry in files.items():
        if entry["size"] > MAX_MEMBER_BYTES:
            raise BundleError(
                f"{name} is {entry['size'] >> 20} MiB, over the {MAX_MEMBER_BYTES >> 20} MiB a "
                "bundle may hold of one file; bundle a shorter run, or share the trace itself"
            )
    total = sum(entry["size"] for entry in files.values())
    if total > MAX_TOTAL_BYTES:
        raise BundleError(
            f"the runs come to {total >> 20} MiB, over the {MAX_TOTAL_BYTES >> 20} MiB a bundle "
            "may hold; bundle fewer runs"
        )


def _file_entry(path: Path) -> dict[str, Any]:
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return {"size": size, "sha256": digest.hexdigest()}


def _add(tar: tarfile.TarFile, name: str, size: int, body: IO[bytes]) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = size, 0o644, 0
    tar.addfile(info, body)


def _script_of(run_start: RunStart, home: Path, left_out: list[str]) -> Path | None:
    """The model script a run names for its offline forks, when it is a file in `home`
    (through no link out of it); a run naming one elsewhere goes into `left_out`."""
    script = run_start.meta.get("fork_script")
    if not isinstance(script, str) or not script:
        return None
    try:
        path = Path(script).resolve()
        inside = path.is_relative_to(home.resolve())
    except (OSError, RuntimeError, ValueError):  # a loop of links, a NUL in the name
        path, inside = Path(script), False
    if not inside:
        left_out.append(run_start.run_id)
        return None
    if not names_a_file(path) or path.stat().st_size > MAX_SCRIPT_BYTES:
        return None
    return path
