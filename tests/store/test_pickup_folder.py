"""What the quick look (`TraceStore.ingest_home`) makes of a traces folder that changes
between looks: files added, removed and put back, renamed, empty, names that are not files
yet, new subfolders, a name that cannot be looked at, a store from before the names were
kept; and the same under random sequences of such changes (Hypothesis): every run is read
once, from the first file seen holding it, and each problem is reported once."""

from __future__ import annotations

import os
import re
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.generated_runs import small_run
from traces.home import traces_dir
from traces.store import TraceStore

EVENTS_PER_RUN = 8  # write_run's two turns


def events_by_run(store: TraceStore) -> dict[str, int]:
    _, rows = store.query("SELECT run_id, count(*) FROM events GROUP BY run_id")
    return dict(rows)


@pytest.fixture(params=[1, 100], ids=["1-run", "100-runs"])
def home(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A home with one run, or with enough that a few new names are looked up in the store
    without rewriting the names kept."""
    home = tmp_path / "home"
    for number in range(request.param):
        small_run(traces_dir(home), f"filler-{number:03}")
    return home


def test_a_file_removed_and_put_back_is_not_read_again(home: Path) -> None:
    folder = traces_dir(home)
    path = small_run(folder, "run-a")
    with TraceStore.for_home(home) as store:
        store.ingest_home(home)
        kept = path.read_bytes()
        path.unlink()
        small_run(folder, "run-b")
        assert store.ingest_home(home).new_runs == 1
        path.write_bytes(kept)
        again = store.ingest_home(home)
        assert (again.files, again.problems) == (0, [])
        assert events_by_run(store)["run-a"] == EVENTS_PER_RUN


def test_a_renamed_file_is_reported_once_and_its_run_kept(home: Path) -> None:
    folder = traces_dir(home)
    path = small_run(folder, "run-a")
    with TraceStore.for_home(home) as store:
        store.ingest_home(home)
        renamed = path.rename(folder / "renamed.jsonl")
        report = store.ingest_home(home)
        assert report.problems == [
            f"{renamed}:1: run run-a is already ingested from {path}; skipped"
        ]
        assert store.ingest_home(home).problems == []
        assert events_by_run(store)["run-a"] == EVENTS_PER_RUN


def test_names_that_were_not_files_are_looked_at_again(home: Path, tmp_path: Path) -> None:
    folder = traces_dir(home)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (folder / "late.jsonl").symlink_to(elsewhere / "late.jsonl")  # nothing there yet
    (folder / "was-a-folder.jsonl").mkdir()
    with TraceStore.for_home(home) as store:
        assert store.ingest_home(home).problems == []
        small_run(elsewhere, "late")
        (folder / "was-a-folder.jsonl").rmdir()
        small_run(folder, "was-a-folder")
        # Both now name files; the folder changed (a name went and came), so it is listed.
        report = store.ingest_home(home)
        assert (report.new_runs, report.problems) == (2, [])
        assert {"late", "was-a-folder"} <= set(events_by_run(store))


def test_an_empty_file_is_reported_once_and_read_once_written(tmp_path: Path) -> None:
    home = tmp_path / "home"
    folder = traces_dir(home)
    empty = folder / "empty.jsonl"
    folder.mkdir(parents=True)
    empty.touch()
    with TraceStore.for_home(home) as store:
        assert store.ingest_home(home).problems == [f"{empty}: empty trace, no events to ingest"]
        small_run(folder, "run-b")
        assert store.ingest_home(home).problems == []
        empty.write_bytes(small_run(tmp_path / "t", "run-c").read_bytes())
        assert store.ingest_home(home).new_runs == 1  # a file with no run yet is open


def test_new_subfolders_at_any_depth_are_found(tmp_path: Path) -> None:
    home = tmp_path / "home"
    folder = traces_dir(home)
    small_run(folder, "run-a")
    outside = tmp_path / "outside"
    small_run(outside, "run-linked")
    with TraceStore.for_home(home) as store:
        store.ingest_home(home)
        small_run(folder / "one" / "two", "run-deep")
        (folder / "linked").symlink_to(outside, target_is_directory=True)
        report = store.ingest_home(home)
        assert (report.new_runs, report.problems) == (2, [])
        assert store.run("run-deep").source_path == str(folder / "one" / "two" / "run-deep.jsonl")


def test_a_listing_that_could_not_look_at_a_name_is_not_trusted_next_time(tmp_path: Path) -> None:
    home = tmp_path / "home"
    folder = traces_dir(home)
    small_run(folder, "run-a")
    knot = folder / "knot"
    knot.symlink_to(knot)  # cannot be looked into, even by root
    past = time.time_ns() - 60 * 10**9
    os.utime(folder, ns=(past, past))  # settled: changed a minute ago
    with TraceStore.for_home(home) as store:
        for _ in range(2):  # listed again, and said again, every time
            [problem] = store.ingest_home(home).problems
            assert problem.startswith(f"{knot}: cannot read (") and problem.endswith("; skipped")
        assert store.count_runs() == 1


def test_a_store_from_before_the_names_were_kept_reads_only_what_is_new(home: Path) -> None:
    folder = traces_dir(home)
    with TraceStore.for_home(home) as store:
        store.ingest_home(home)
        # As an older workbench left it: no table of names, another schema text.
        store.query("DROP TABLE listings")
        store.query("UPDATE store_meta SET value = 'older' WHERE key = 'schema_text'")
    small_run(folder, "run-new")
    with TraceStore.for_home(home) as store:
        report = store.ingest_home(home)
        assert (report.files, report.new_runs, report.problems) == (1, 1, [])
        small_run(folder, "run-newer")
        assert store.ingest_home(home).new_runs == 1
        assert set(events_by_run(store).values()) == {EVENTS_PER_RUN}


# --- random sequences of changes ----------------------------------------------------------

PLACES = ["", "sub", os.path.join("sub", "deeper")]
ALLOWED_PROBLEM = re.compile(
    r".*(: empty trace, no events to ingest|:1: run \S+ is already ingested from \S+; skipped)$"
)

# Changes, each followed by a look or not.
changes = st.lists(
    st.tuples(
        st.one_of(
            st.tuples(st.sampled_from(["add", "empty", "folder"]), st.sampled_from(PLACES)),
            st.tuples(
                st.sampled_from(["remove", "restore", "rename", "unfold"]), st.integers(0, 20)
            ),
            st.tuples(st.just("settle"), st.just(0)),
        ),
        st.booleans(),
    ),
    max_size=12,
)


class Folder:
    """A traces folder changed step by step, and what every look must have found."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.root.mkdir(parents=True)
        self.scratch = root.parent / "scratch"
        self.present: dict[Path, str | None] = {}  # file -> its run (None: empty)
        self.removed: dict[Path, tuple[str | None, bytes]] = {}
        self.folders: list[Path] = []  # folders named like traces
        self.seen: set[str] = set()  # runs of the files present at some look
        self.count = 0

    def change(self, kind: str, arg: str | int) -> None:
        self.count += 1
        place = self.root / str(arg)
        if kind == "add":
            made = small_run(self.scratch, f"run-{self.count}")
            place.mkdir(parents=True, exist_ok=True)
            self.present[made.rename(place / made.name)] = f"run-{self.count}"
        elif kind == "empty":
            place.mkdir(parents=True, exist_ok=True)
            (place / f"empty-{self.count}.jsonl").touch()
            self.present[place / f"empty-{self.count}.jsonl"] = None
        elif kind == "folder":
            (place / f"folder-{self.count}.jsonl").mkdir(parents=True)
            self.folders.append(place / f"folder-{self.count}.jsonl")
        elif kind == "unfold" and self.folders:  # the folder's name now names a file
            path = self.folders.pop(int(arg) % len(self.folders))
            path.rmdir()
            made = small_run(self.scratch, f"run-{self.count}")
            self.present[made.rename(path)] = f"run-{self.count}"
        elif kind == "remove" and self.present:
            path = sorted(self.present)[int(arg) % len(self.present)]
            self.removed[path] = (self.present.pop(path), path.read_bytes())
            path.unlink()
        elif kind == "restore" and self.removed:
            path = sorted(self.removed)[int(arg) % len(self.removed)]
            run, data = self.removed.pop(path)
            path.write_bytes(data)
            self.present[path] = run
        elif kind == "rename" and self.present:
            path = sorted(self.present)[int(arg) % len(self.present)]
            self.present[path.rename(path.with_name(f"renamed-{self.count}.jsonl"))] = (
                self.present.pop(path)
            )
        elif kind == "settle":  # as if the last change was a minute ago
            past = time.time_ns() - 60 * 10**9
            for folder in [self.root, *(p for p in self.root.rglob("*") if p.is_dir())]:
                os.utime(folder, ns=(past, past))

    def look(self, store: TraceStore, reported: list[str]) -> None:
        report = store.ingest_home(self.root.parent)
        self.seen |= {run for run in self.present.values() if run is not None}
        for problem in report.problems:
            assert ALLOWED_PROBLEM.match(problem), problem
            assert problem not in reported, f"reported again: {problem}"
            reported.append(problem)
        found = events_by_run(store)
        assert set(found) == self.seen
        assert set(found.values()) <= {EVENTS_PER_RUN}  # no run read twice


@settings(
    max_examples=int(os.environ.get("WORKBENCH_FUZZ_EXAMPLES", "60")),
    derandomize="WORKBENCH_FUZZ_EXAMPLES" not in os.environ,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(steps=changes)
def test_every_run_is_read_once_whatever_the_folder_goes_through(
    steps: list[tuple[tuple[str, str | int], bool]],
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        folder = Folder(Path(scratch) / "home" / "traces")
        reported: list[str] = []
        with TraceStore.open(":memory:") as store:
            for (kind, arg), look in steps:
                folder.change(kind, arg)
                if look:
                    folder.look(store, reported)
            folder.look(store, reported)
