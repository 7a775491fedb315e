"""mcp-serve and annotations (issue 39, part 1): `annotate_run` writes as `workbench note`
does, only on a server started with --allow-writes, and `show_run` lists a run's
annotations, a note on a turn or a call included; removing one is a tombstone."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.test_mcp_serve import call, demo_home, demo_runs, refused, served  # noqa: F401
from traces.annotations import author_file


@pytest.fixture
def home(demo_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:  # noqa: F811
    copy = tmp_path / "home"
    shutil.copytree(demo_home, copy)
    monkeypatch.setenv("WORKBENCH_AUTHOR", "agent-007")  # the server inherits it
    return copy


async def test_annotate_run_is_refused_on_a_read_only_server(home: Path) -> None:
    async with served(home) as session:
        run_id = (await demo_runs(session))["max_turns"]["run_id"]
        reason = await refused(session, "annotate_run", run=run_id, labels=["loop"])
        assert "read-only" in reason and "--allow-writes" in reason
        shown = await call(session, "show_run", run=run_id)
        assert shown["annotations"] == []
    assert not author_file(home, "agent-007").exists()


async def test_annotate_run_writes_notes_that_show_run_lists(home: Path) -> None:
    async with served(home, "--allow-writes") as session:
        runs = await demo_runs(session)
        run_id = runs["duplicate_tool_calls"]["run_id"]
        on_run = await call(
            session, "annotate_run", run=run_id[:8], labels=["loop"], scores={"helpful": 0}
        )
        assert (on_run["run_id"], on_run["author"], on_run["labels"]) == (
            run_id, "agent-007", ["loop"],
        )  # fmt: skip
        assert on_run["scores"] == {"helpful": 0.0}
        on_call = await call(
            session, "annotate_run", run=run_id, turn=1, call_id="call_s1_0",
            text="the same call twice", author="claude",
        )  # fmt: skip
        shown = await call(session, "show_run", run=run_id)
        assert [(n["id"], n["turn"], n["call_id"], n["author"]) for n in shown["annotations"]] == [
            (on_run["id"], None, None, "agent-007"),
            (on_call["id"], 1, "call_s1_0", "claude"),
        ]
        wrongs: list[tuple[dict[str, Any], str]] = [
            ({"turn": 9, "labels": ["x"]}, "has no turn 9"),
            ({"turn": 1, "call_id": "nope", "labels": ["x"]}, "has no tool call 'nope'"),
            ({"call_id": "call_s1_0", "labels": ["x"]}, "a call_id needs the turn"),
            ({}, "a note needs at least one"),
            ({"scores": {"helpful": "high"}}, "must be a number"),
            ({"remove": "20260101000000-deadbeef"}, "has no annotation"),
        ]
        for wrong, said in wrongs:
            assert said in await refused(session, "annotate_run", run=run_id, **wrong)
        removed = await call(session, "annotate_run", run=run_id, remove=on_run["id"])
        assert removed["type"] == "remove" and removed["removes"] == on_run["id"]
        shown = await call(session, "show_run", run=run_id)
        assert [n["id"] for n in shown["annotations"]] == [on_call["id"]]
    lines = author_file(home, "agent-007").read_text().splitlines()
    assert [json.loads(line)["type"] for line in lines] == ["note", "remove"]
