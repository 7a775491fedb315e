"""What leaves the home through `workbench push` is redacted as a bundle of the same runs
is: a pattern the user adds to the home's `redact-patterns.txt` after recording scrubs the
runs' events, their run rows and their annotations on the way into the lake, so neither
the lake nor a home that pulls from it holds the text, and both hold the bundle's
placeholder where it was."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from tests.lake.test_lake_reads import cli, ok
from tests.support.demo import demo_run
from traces.home import REDACT_FILE
from traces.store import TraceStore
from traces.store.lake import push_redacted
from traces.store.lake.config import from_url

pytestmark = pytest.mark.lake

# The demo project's name stands for what a user scrubs late: a customer, an internal host.
SECRET = "tiny-weather"
PLACEHOLDER = "[REDACTED:pattern-1]"


def _bundled_lines(home: Path, run: str, out: Path) -> list[str]:
    ok(home, "bundle", run, "-o", str(out))
    with tarfile.open(out, "r:xz") as tar:
        member = tar.extractfile(f"traces/{run}.jsonl")
        assert member is not None
        return member.read().decode().splitlines()


def test_push_redacts_with_the_home_patterns_as_a_bundle_does(
    demo_home: Path, lake_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Pages of a few rows, so the runs' rows span many (a page is one read and one insert).
    monkeypatch.setattr(push_redacted, "PAGE_ROWS", 7)
    run = demo_run(demo_home, "completed")
    ok(demo_home, "note", run, "--text", f"{SECRET} answers well", "--label", SECRET)
    assert SECRET in (demo_home / "traces" / f"{run}.jsonl").read_text()
    # Added after recording, as docs/capture.md tells a user to: one regex a line.
    (demo_home / REDACT_FILE).write_text(f"# the project's name\n{SECRET}\n")
    bundled = _bundled_lines(demo_home, run, tmp_path / "run.wbundle")
    assert SECRET not in "".join(bundled) and PLACEHOLDER in "".join(bundled)

    ok(demo_home, "push", "--all", "--lake", lake_url)

    with TraceStore.over_lake(from_url(lake_url)) as lake:
        _, rows = lake.query(
            "SELECT event::VARCHAR, search_text FROM event_rows ORDER BY run_id, seq", {}
        )
        assert rows and not any(SECRET in str(row) for row in rows)
        _, mine = lake.query(
            "SELECT event::VARCHAR FROM events WHERE run_id = $run ORDER BY seq", {"run": run}
        )
        assert [line for (line,) in mine] == bundled
        _, runs = lake.query("SELECT * FROM runs", {})
        assert len(runs) == 15 and not any(SECRET in str(row) for row in runs)
        _, notes = lake.query("SELECT * FROM annotation_rows", {})
        assert notes and not any(SECRET in str(row) for row in notes)
        assert PLACEHOLDER in str(notes)
    # `search` on the lake reads its own text of each event: the placeholder, not the text.
    assert cli(demo_home, "search", SECRET, "--lake", lake_url, "--json")[:2] == (1, "[]\n")
    found = json.loads(ok(demo_home, "search", PLACEHOLDER, "--lake", lake_url, "--json"))
    assert run in {hit["run_id"] for hit in found}

    other = tmp_path / "laptop"
    (other / "traces").mkdir(parents=True)
    ok(other, "pull", run, "--lake", lake_url)
    pulled = (other / "traces" / f"{run}.jsonl").read_text()
    assert pulled.splitlines() == bundled
    shown = ok(other, "show", run, "--json")
    assert SECRET not in shown and PLACEHOLDER in shown
    assert not any(SECRET in p.read_text() for p in (other / "annotations").iterdir())


def test_a_home_without_patterns_pushes_its_rows_as_they_are(
    demo_home: Path, lake_url: str
) -> None:
    run = demo_run(demo_home, "completed")
    ok(demo_home, "push", run, "--lake", lake_url)
    with TraceStore.over_lake(from_url(lake_url)) as lake:
        _, mine = lake.query(
            "SELECT event::VARCHAR FROM events WHERE run_id = $run ORDER BY seq", {"run": run}
        )
    recorded = (demo_home / "traces" / f"{run}.jsonl").read_text().splitlines()
    assert [line for (line,) in mine] == recorded and SECRET in "".join(recorded)
