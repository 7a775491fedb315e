"""Verify replay in a process of its own: the same outcome as in this one, its progress as it
goes, one line when it cannot give one, and the process gone whenever its caller lets go."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.engine.engine_support import THREE_TURNS, Project
from tests.support.generated_runs import long_run
from workbench.engine.recording.replay.process import (
    ReplayProcess,
    ReplayProcessError,
    ReplayProgress,
    replay_in_process,
)
from workbench.engine.recording.replay.verify import NotReplayable, ReplayOutcome, replay_run
from workbench.engine.recording.runs.load import read_recording_file

# Long enough that the process is still reading it when a test lets go (reading alone
# takes a second or more), written once for the module.
LONG_TURNS = 8000


@pytest.fixture(scope="module")
def long_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("long")
    long_run(folder, LONG_TURNS)
    (path,) = folder.glob("*.jsonl")
    return path


def _same(outcome: ReplayOutcome, expected: ReplayOutcome) -> None:
    ours, theirs = outcome.to_json(), expected.to_json()
    ours.pop("wall_s"), theirs.pop("wall_s")
    assert ours == theirs


async def test_an_identical_replay_has_the_outcome_it_has_here(project: Project) -> None:
    path, _ = await project.record(THREE_TURNS)
    progress: list[ReplayProgress] = []
    outcome = await replay_in_process(path, progress.append)
    expected = await replay_run(read_recording_file(path))
    assert outcome.status == "identical"
    _same(outcome, expected)
    # It said how far it read, to the whole file, before it replayed.
    reading = [p for p in progress if p.stage == "reading"]
    assert reading and reading[-1].done == reading[-1].total == path.stat().st_size
    stages = [p.stage for p in progress]
    assert stages == sorted(stages)  # "reading" before "replaying"


async def test_a_divergence_comes_back_with_its_field_diffs(project: Project) -> None:
    path, _ = await project.record(THREE_TURNS)
    events = [json.loads(line) for line in path.read_text().splitlines()]
    end = next(e for e in events if e["type"] == "tool_end")
    end["result"] = "something else"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))

    outcome = await replay_in_process(path)
    expected = await replay_run(read_recording_file(path))
    assert outcome.status == "diverged" and outcome.exit_code == 1
    assert outcome.divergence is not None and outcome.divergence.diffs
    _same(outcome, expected)


async def test_a_run_the_agent_did_not_drive_is_refused_in_one_line(project: Project) -> None:
    path, _ = await project.record(THREE_TURNS)
    events = [json.loads(line) for line in path.read_text().splitlines()]
    events[0] |= {"origin": "imported", "client": "another tool"}
    path.write_text("".join(json.dumps(e) + "\n" for e in events))

    with pytest.raises(NotReplayable) as refused:
        await replay_in_process(path)
    assert "imported from another tool" in str(refused.value)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("damage", ["missing", "corrupt"])
async def test_an_unusable_recording_is_one_line(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "run.jsonl"
    if damage == "corrupt":
        path.write_text('{"not": "an event"}\n{"seq": 1}\n')
    with pytest.raises(ReplayProcessError) as failed:
        await replay_in_process(path)
    message = str(failed.value)
    assert "\n" not in message and "Traceback" not in message
    assert ("no trace file" if damage == "missing" else "corrupt recording") in message


async def test_leaving_the_block_kills_the_process(long_trace: Path) -> None:
    async with ReplayProcess(long_trace) as child:
        async for report in child.reports():
            assert isinstance(report, ReplayProgress) and report.stage == "reading"
            break  # it is reading the long trace: it still runs
        pid = child.pid
        assert pid is not None
    assert child.returncode == -signal.SIGKILL
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # waited for: no such process any more


async def test_a_process_that_dies_is_one_line(long_trace: Path) -> None:
    async with ReplayProcess(long_trace) as child:
        reports = child.reports()
        await anext(reports)  # it runs
        assert child.pid is not None
        os.kill(child.pid, signal.SIGKILL)  # as the out-of-memory killer would
        with pytest.raises(ReplayProcessError) as failed:
            async for _ in reports:
                pass
    assert str(failed.value).startswith("the replay process ended (killed by SIGKILL)")
    assert "\n" not in str(failed.value)


def test_the_process_ends_itself_when_its_caller_lets_go(long_trace: Path) -> None:
    # However the caller ends (even killed, with no chance to kill its child), the pipe to
    # the child's stdin closes, and the child stops.
    child = subprocess.Popen(
        [sys.executable, "-m", "workbench.engine.recording.replay.process", str(long_trace)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert child.stdin is not None and child.stdout is not None
    assert "read" in json.loads(child.stdout.readline())  # it is reading the long trace
    child.stdin.close()
    assert child.wait(timeout=60) == 3
    child.stdout.close()
