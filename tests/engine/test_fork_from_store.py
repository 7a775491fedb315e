"""A fork read from the store (`StoredParent`: what the TUI's fork dialog, its plan and its
run use) is the fork read from the recording in memory: the same context, plan, dry run and
recorded results at every turn of a varied run. It reads the fork turn and the calls its
history names, not the run: forking the last turn of a long run reads as much as of a
short one."""

from __future__ import annotations

import asyncio
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from tests.support.generated_runs import CountingStore, stored_home
from traces.store import TraceStore
from workbench.cli import main
from workbench.engine.mcp_server.handlers import Workbench
from workbench.engine.recording.fork.dry_run import dry_run
from workbench.engine.recording.fork.plan import (
    ForkRequest,
    ForkToolset,
    fork_context,
    mockable_call_ids,
    plan_fork,
)
from workbench.engine.recording.running.service import ModelSettings
from workbench.engine.recording.runs.load import read_recording_file
from workbench.engine.recording.runs.parent import StoredParent

VARIED = "5" * 32


def test_every_turn_forks_the_same_from_the_store_as_from_the_recording(tmp_path: Path) -> None:
    home = stored_home(tmp_path / "home", {VARIED: {"turns": 7}})
    recording = read_recording_file(home / "traces" / f"{VARIED}.jsonl")
    with TraceStore.for_home(home) as store:
        parent = StoredParent.load(CountingStore(store).session, VARIED[:8])  # a prefix will do
        assert (parent.run_id, parent.run_start) == (VARIED, recording.run_start)
        assert parent.model_turns == recording.model_turns == list(range(1, 8))
        assert parent.api == recording.api
        settings = ModelSettings()
        for turn in recording.model_turns:
            assert fork_context(parent, turn, settings) == fork_context(recording, turn, settings)
            mocks = {call_id: "mocked" for call_id in mockable_call_ids(recording.history(turn))}
            request = ForkRequest(
                turn=turn, system="Look harder.", tool_descriptions={"save_note": "Saves."}
            )
            request.mocks = mocks
            stored, recorded = plan_fork(parent, request), plan_fork(recording, request)
            assert stored.messages == recorded.messages and stored.specs == recorded.specs
            assert (stored.edits, stored.task, stored.system_prompt) == (
                recorded.edits,
                recorded.task,
                recorded.system_prompt,
            )
            assert stored.parent.request(turn) == recording.turns[turn].request
            assert dry_run(stored).to_json() == dry_run(recorded).to_json()
            # A screen's plan reads only the turns its lines name, and reads the same.
            assert dry_run(stored, whole_prefix=False).lines() == dry_run(recorded).lines()
            tools = ForkToolset(stored), ForkToolset(recorded)
            for name, path in [("read_file", f"file{n}.txt") for n in range(3)] + [
                ("save_note", "file1.txt"),
                ("read_file", "nowhere.txt"),
            ]:
                from_store, from_file = (t.recorded(name, {"path": path}) for t in tools)
                assert from_store == from_file
    # What the checks above went through: a retried call, results of the same call, a
    # mocked one, and calls never made.
    plan = plan_fork(recording, ForkRequest(turn=7))
    assert [p.model_calls for p in dry_run(plan).prefix] == [1, 2, 1, 1, 1, 1]
    assert ForkToolset(plan).recorded("read_file", {"path": "file1.txt"}) is not None
    assert ForkToolset(plan).recorded("read_file", {"path": "nowhere.txt"}) is None


def test_forking_the_last_turn_of_a_long_run_reads_that_turn_not_the_run(tmp_path: Path) -> None:
    lengths = {"1" * 32: 20, "4" * 32: 400}
    shape = {"reuse_ids": False, "rounds_kept": 3}
    home = stored_home(tmp_path / "home", {i: {"turns": n, **shape} for i, n in lengths.items()})
    read: dict[int, int] = {}
    with TraceStore.for_home(home) as store:
        for run_id, turns in lengths.items():
            counting = CountingStore(store)
            parent = StoredParent.load(counting.session, run_id)
            context = fork_context(parent, turns, ModelSettings())
            plan = plan_fork(parent, ForkRequest(turn=turns, mocks={f"call_{turns - 1}": "x"}))
            planned, shown = dry_run(plan), dry_run(plan, whole_prefix=False)
            read[turns] = counting.events_read
            # What the dialog shows: the history of the turn, the calls it holds, the plan.
            assert [c.call_id for c in context.calls] == [
                f"call_{n}" for n in range(turns - 3, turns)
            ]
            assert len(planned.prefix) == turns - 1
            assert f"… {turns - 1 - 6:,} turns more …" in planned.lines()[1]
            assert shown.lines() == planned.lines() and len(shown.prefix) == 6
            assert shown.to_json()["prefix_turns"] == turns - 1
    # The fork turn's request, the three calls its history holds, the run_start: the same
    # for a run of 400 turns as for one of 20.
    assert read[400] == read[20] <= 12


@pytest.mark.parametrize("front", ["cli", "mcp"])
def test_the_cli_and_mcp_fork_a_long_run_as_they_fork_a_short_one(
    tmp_path: Path, front: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`workbench fork` and the MCP server's fork_run read the parent from the store, by
    turn: the plan of the last turn of a run of 16,000 events takes about the memory it
    takes of a run of 64, and a list of the turns before it (1 MB here, where reading the
    whole run took 47 MB)."""
    lengths = {"2" * 32: 8, "3" * 32: 2000}
    shape = {"reuse_ids": False, "rounds_kept": 2}
    home = stored_home(tmp_path / "home", {i: {"turns": n, **shape} for i, n in lengths.items()})
    workbench = Workbench(home)

    def fork_plan(run_id: str, turn: int) -> Any:
        if front == "mcp":
            arguments = {"run": run_id[:10], "turn": turn, "dry_run": True}
            return asyncio.run(workbench.call("fork_run", arguments))
        capsys.readouterr()
        args = ["fork", run_id[:10], "--turn", str(turn), "--dry-run", "--home", str(home)]
        assert main(args) == 0, capsys.readouterr().err
        return capsys.readouterr().out.splitlines()

    peaks: dict[int, int] = {}
    for run_id, turns in lengths.items():
        fork_plan(run_id, turns)  # imports and caches, before the measured one
        tracemalloc.start()
        try:
            plan = fork_plan(run_id, turns)
            peaks[turns] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        if front == "mcp":
            assert plan["parent_run_id"] == run_id and plan["turn"] == turns
            assert plan["last_message"]["content"] == f"result of turn {turns - 1}"
        else:
            assert plan[0].startswith(f"dry run: fork of run {run_id[:12]} at turn {turns} ")
            assert f"turn {turns} is sent with 6 messages" in plan[2]
    assert peaks[2000] < 2 * peaks[8] + 2_000_000, peaks


@pytest.mark.parametrize("front", ["cli", "mcp"])
def test_the_tool_schemas_of_a_long_run_are_diffed_from_its_run_start_alone(
    tmp_path: Path, front: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`workbench diff --tools` and diff_runs of the tools read each run's run_start from
    the store: a run of 16,000 events against a short one takes what two short ones take."""
    short, other, long = "2" * 32, "4" * 32, "3" * 32
    shape = {"reuse_ids": False, "rounds_kept": 2}
    lengths = {short: 8, other: 8, long: 2000}
    home = stored_home(tmp_path / "home", {i: {"turns": n, **shape} for i, n in lengths.items()})
    workbench = Workbench(home)

    def diffed(run_a: str) -> Any:
        if front == "mcp":
            arguments = {"run_a": run_a[:10], "run_b": short[:10], "what": "tools"}
            return asyncio.run(workbench.call("diff_runs", arguments))
        capsys.readouterr()
        assert main(["diff", run_a[:10], short[:10], "--tools", "--home", str(home)]) == 0
        return capsys.readouterr().out.splitlines()

    peaks: dict[str, int] = {}
    for run_id in (other, long):
        diffed(run_id)  # imports and caches, before the measured one
        tracemalloc.start()
        try:
            answer = diffed(run_id)
            peaks[run_id] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        if front == "mcp":
            assert (answer["run_a"], answer["equal"], answer["tools"]["changed"]) == (
                run_id,
                True,
                [],
            )
        else:
            assert answer == [
                f"tool schemas: A {run_id[:12]} vs B {short[:12]}",
                "the tool schemas are the same",
            ]
    assert peaks[long] < 2 * peaks[other] + 1_000_000, peaks
