"""The daily debugging journey of issue 14, through the real App with Pilot on a real store."""

from __future__ import annotations

import json
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, Select, Static, TextArea

from tests.support.read_only import read_only
from tests.tui.conftest import (
    COMPLETED,
    ERROR,
    GOLDEN,
    MAX_TURNS,
    notices,
    plain,
    run_shown,
    said,
    settle,
)
from workbench.engine.http.model_server import ModelServer, ScriptResponder
from workbench.tui import Endpoint, WorkbenchApp
from workbench.tui.diff_screens import ChainCompareScreen
from workbench.tui.document import Document
from workbench.tui.fork_screen import ForkScreen
from workbench.tui.paged_list import PagedList
from workbench.tui.replay_screen import ReplayScreen
from workbench.tui.run_screen import RunScreen
from workbench.tui.runs_screen import RunsScreen

SIZE = (160, 45)
TIMEOUT = "875829d45a0a53888d30260f316d29d9"


def _runs(app: WorkbenchApp) -> PagedList:
    return app.screen.query_one("#runs-list", PagedList)


async def _open(pilot, app: WorkbenchApp, run_id: str) -> RunScreen:
    await settle(pilot, lambda: _runs(app).total >= 8)
    app.open_run(run_id)
    return await run_shown(pilot)


def _row(app: WorkbenchApp, index: int) -> Any:
    row = _runs(app).row(index)
    assert row is not None
    return row


def _labels(screen: RunScreen) -> list[str]:
    return [str(node.label) for node in screen.chain_tree.root.children]


async def test_turn_labels_say_what_happened(home: Path) -> None:
    app = WorkbenchApp(home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, app, TIMEOUT)
        summary = plain(screen.query_one("#run-summary", Static))
        assert "2 turns" in summary and "1 tool call " in summary and "1 tool calls" not in summary

        await pilot.press("down", "down")  # turn 2: the model call that timed out
        assert "press enter to open" in plain(screen.query_one("#detail-body", Static))
        await pilot.press("enter")
        await settle(pilot, lambda: 2 in screen.chain_tree.turns_loaded)
        turn_two = _labels(screen)[2]
        assert "turn 2" in turn_two and "answer" not in turn_two.replace("no answer", "")
        assert "no answer: timeout" in turn_two
        detail = plain(screen.query_one("#detail-body", Static))
        assert "press enter" not in detail and "turn 2" in detail and "timeout" in detail

        await pilot.press("up", "enter")  # turn 1 made one tool call
        await settle(pilot, lambda: 1 in screen.chain_tree.turns_loaded)
        assert "1 tool call" in _labels(screen)[1] and "1 tool calls" not in _labels(screen)[1]


async def test_verify_opens_the_replay_at_the_divergence(home: Path) -> None:
    # The recording says list_dir returned something else than the model's next turn saw:
    # the replay diverges at turn 2's request, which carries the edited result.
    trace = home / "traces" / f"{MAX_TURNS}.jsonl"
    events = [json.loads(line) for line in (GOLDEN / trace.name).read_text().splitlines()]
    for event in events:
        if event["type"] == "tool_end" and event["call_id"] == "call_l1":
            event["result"] = "only_one_file.py"
    trace.write_text("".join(json.dumps(e) + "\n" for e in events))

    app = WorkbenchApp(home)
    async with app.run_test(size=SIZE) as pilot:
        await _open(pilot, app, MAX_TURNS)
        await pilot.press("v")
        await settle(
            pilot,
            lambda: (
                isinstance(app.screen, ReplayScreen)
                and "re-running" not in plain(app.screen.query_one("#replay-verify", Static))
                and app.screen.timeline.total > 0
            ),
        )
        replay = app.screen
        assert isinstance(replay, ReplayScreen)
        verdict = plain(replay.query_one("#replay-verify", Static))
        assert "diverged" in verdict
        seq = int(verdict.split(" at seq ")[1].split(",")[0])
        assert seq > 0 and replay.timeline.cursor == seq
        assert f"seq {seq} of" in plain(replay.query_one("#replay-position", Static))


# ---------------------------------------------------------------- fork dialog


async def _until(pilot, condition, tries: int = 500) -> None:
    """Wait for `condition` while a worker is still running (settle would wait for it)."""
    for _ in range(tries):
        await pilot.pause(0.02)
        if condition():
            return
    raise AssertionError("the app did not reach the expected state")


async def _fork_dialog(pilot, app: WorkbenchApp) -> ForkScreen:
    await settle(pilot, lambda: _runs(app).total >= 8)
    app.open_fork(ERROR, 2)
    await settle(
        pilot, lambda: isinstance(app.screen, ForkScreen) and app.screen.context is not None
    )
    assert isinstance(app.screen, ForkScreen)
    return app.screen


async def _edit(pilot, fork: ForkScreen, key: str, text: str) -> None:
    fork.query_one("#fork-edit", Select).value = key
    await settle(pilot, lambda: fork.edits.edit_key == key)
    fork.query_one("#fork-text", TextArea).text = text
    await settle(pilot, lambda: fork.draft.edits.get(key) == text)


async def _mock(pilot, fork: ForkScreen, call_id: str, text: str) -> None:
    fork.query_one("#fork-call", Select).value = call_id
    await settle(pilot, lambda: fork.edits.shown_call == call_id)
    fork.query_one("#fork-mock", TextArea).text = text
    await settle(pilot, lambda: fork.draft.mocks.get(call_id) == text)


async def test_one_fork_carries_several_edits_and_a_mock(home: Path) -> None:
    with ModelServer(ScriptResponder([{"content": "20"}])) as server:
        endpoint = Endpoint(base_url=server.base_url, model="scripted")
        app = WorkbenchApp(home, endpoint=endpoint)
        async with app.run_test(size=SIZE) as pilot:
            fork = await _fork_dialog(pilot, app)
            await _edit(pilot, fork, "system", "Answer with the number only.")
            await _edit(pilot, fork, "tool:calculator", "Evaluate arithmetic; send JSON.")
            await _mock(pilot, fork, "call_e1", "20")
            await _edit(pilot, fork, "system", "Answer with the number only!")  # back to one
            changes = plain(fork.query_one("#fork-changes", Static))
            assert "system prompt" in changes and "tool:calculator" in changes
            assert "result of call_e1" in changes
            await pilot.press("ctrl+r")
            await settle(pilot, lambda: isinstance(app.screen, ChainCompareScreen))
            compare = app.screen
            result = compare.query_one("#pair-result", Document)
            await settle(pilot, lambda: "aligning" not in plain(result))
            shown = plain(result, 200)
            # The comparison shows what the fork changed and the texts, not digests.
            assert "is a fork of ef47ea9f at turn 2; it changed:" in shown
            assert "system prompt: Answer with the number only!" in shown
            assert "result of tool call call_e1 (mocked): 20" in shown
            assert "turn 2 · answer" in shown and "B    20" in shown
            assert "diff ERROR: arguments are not valid JSON; send a JSON object 20" in shown
            # The fork's live output wraps at words in a narrow pane.
            output = fork.query_one("#fork-output-text", Static)
            assert _words_whole("the model answered without tool calls", _lines(output, 24))

    sent = server.bodies[0]
    assert sent["messages"][0] == {"role": "system", "content": "Answer with the number only!"}
    tool = next(m for m in sent["messages"] if m.get("role") == "tool")
    assert tool["content"] == "20"
    described = {t["function"]["name"]: t["function"]["description"] for t in sent["tools"]}
    assert described["calculator"] == "Evaluate arithmetic; send JSON."
    start = json.loads((home / "traces" / f"{fork.fork_run_id}.jsonl").read_text().split("\n")[0])
    assert sorted(e["kind"] for e in start["edits"]) == [
        "mock_result",
        "system",
        "tool_description",
    ]


async def test_the_fork_form_is_remembered_and_ctrl_c_asks_first(home: Path) -> None:
    app = WorkbenchApp(home, endpoint=Endpoint())
    async with app.run_test(size=SIZE) as pilot:
        fork = await _fork_dialog(pilot, app)
        await _mock(pilot, fork, "call_e1", "20")
        fork.query_one("#fork-model", Input).value = "my-model"
        await settle(pilot)

        await pilot.press("ctrl+r")  # no model yet: the form says what to fill in
        await settle(pilot, lambda: any("base URL" in m for m in said(app)))
        message = notices(app)[-1].message
        assert "base URL" in message and "--" not in message
        assert not fork.running

        await pilot.press("ctrl+c")  # a half-filled form: the first ctrl+c only warns
        await settle(pilot)
        assert app.is_running and app.screen is fork
        assert "ctrl+c again" in notices(app)[-1].message

        await pilot.press("escape")
        await settle(pilot, lambda: not isinstance(app.screen, ForkScreen))
        app.open_fork(ERROR, 2)
        await settle(
            pilot, lambda: isinstance(app.screen, ForkScreen) and app.screen.context is not None
        )
        again = app.screen
        assert isinstance(again, ForkScreen) and again is not fork
        assert again.draft.mocks == {"call_e1": "20"}
        # The remembered call is picked once the context is in; its result shows when the
        # pick's change lands (after the context, on a busy machine a frame or more later).
        await settle(pilot, lambda: again.query_one("#fork-mock", TextArea).display)
        assert again.query_one("#fork-mock", TextArea).text == "20"
        assert again.query_one("#fork-model", Input).value == "my-model"

        app._quit_armed = False
        await pilot.press("ctrl+c", "ctrl+c")  # asked, then confirmed
        await settle(pilot, lambda: not app.is_running)


async def test_a_running_fork_can_be_cancelled(home: Path) -> None:
    # The model takes a minute to answer: only a cancel ends this fork in time.
    with ModelServer(ScriptResponder([{"content": "late", "delay_ms": 60_000}])) as server:
        endpoint = Endpoint(base_url=server.base_url, model="scripted")
        app = WorkbenchApp(home, endpoint=endpoint)
        async with app.run_test(size=SIZE) as pilot:
            fork = await _fork_dialog(pilot, app)
            await pilot.press("ctrl+r")
            await _until(pilot, lambda: fork.running and len(server.bodies) == 1)
            await pilot.press("ctrl+x")
            await settle(pilot, lambda: not fork.running)
            assert isinstance(app.screen, ForkScreen)  # a cancelled fork compares nothing
            assert "ended: cancelled" in fork.output.text.plain
            trace = home / "traces" / f"{fork.fork_run_id}.jsonl"
            end = json.loads(trace.read_text().splitlines()[-1])
            assert end["type"] == "run_end" and end["status"] == "cancelled"


# ---------------------------------------------------------------- runs list


def _as_origin(trace: Path, origin: str, run_id: str) -> str:
    """A copy of a golden trace under a new run id, recorded as a run of kind `origin`."""
    lines = trace.read_text().splitlines()
    events = [json.loads(line) | {"run_id": run_id} for line in lines]
    events[0] |= {"schema_version": 2, "origin": origin}
    return "".join(json.dumps(e) + "\n" for e in events)


async def test_runs_list_kinds_sorting_and_new_runs_arriving(home: Path) -> None:
    samples = [f"5a3p1e{n:026d}" for n in range(3)]
    for run_id in samples:  # a suite run's failed samples
        text = _as_origin(GOLDEN / f"{ERROR}.jsonl", "regression_sample", run_id)
        (home / "traces" / f"{run_id}.jsonl").write_text(text)
    app = WorkbenchApp(home)
    async with app.run_test(size=SIZE) as pilot:
        runs = app.screen
        assert isinstance(runs, RunsScreen)
        # Samples are folded under their suite run: counted, not listed…
        await settle(pilot, lambda: _runs(app).total == 8 and _runs(app).row(7) is not None)
        assert {_row(app, i).origin for i in range(8)} == {"agent"}
        assert "3 suite samples folded" in plain(runs.query_one("#runs-count", Static))

        await pilot.press("f")  # failed samples are not in "failed only"…
        await settle(pilot, lambda: _runs(app).total == 7)
        runs.query_one("#filter-kind", Select).value = "agent and fork"
        await settle(pilot, lambda: _runs(app).total == 7)
        runs.query_one("#filter-kind", Select).value = "regression_sample"  # …unless asked
        await settle(pilot, lambda: _runs(app).total == 3 and _runs(app).row(2) is not None)
        assert "sample" in "".join(_runs(app).render_line(y).text for y in range(3))
        runs.query_one("#filter-kind", Select).clear()
        await pilot.press("f")
        await settle(pilot, lambda: _runs(app).total == 8)

        # Sort: s steps through the columns, S reverses; a header click sorts by its column.
        await pilot.press("s")
        await settle(pilot, lambda: runs.where.sort == "run_id" and _runs(app).row(7) is not None)
        ids = [_row(app, i).run_id for i in range(8)]
        assert ids == sorted(ids, reverse=True)
        await pilot.press("S")
        await settle(pilot, lambda: not runs.where.descending and _runs(app).row(0) is not None)
        assert _row(app, 0).run_id == min(ids)
        header = runs.query_one("#runs-header")
        tokens_x = str(header.render()).index("tokens")
        await pilot.click("#runs-header", offset=(tokens_x + 1, 0))
        await settle(pilot, lambda: runs.where.sort == "total_tokens")
        await settle(pilot, lambda: _runs(app).row(7) is not None)
        tokens = [_row(app, i).total_tokens for i in range(8)]
        assert tokens == sorted(tokens, reverse=True)
        assert "tokens▼" in str(header.render())

        # A run recorded while the list is open appears on its own.
        before = runs.ingests
        fresh = "f7e5h" + "0" * 27
        (home / "traces" / f"{fresh}.jsonl").write_text(
            _as_origin(GOLDEN / f"{COMPLETED}.jsonl", "fork", fresh)
        )
        await settle(pilot, lambda: runs.ingests > before and _runs(app).total == 9)


async def test_runs_list_at_100_columns_keeps_the_task_and_the_footer_keys(home: Path) -> None:
    from workbench.tui.run_rows import TASK_MIN_WIDTH, visible_columns

    app = WorkbenchApp(home)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, lambda: _runs(app).total == 8 and _runs(app).row(7) is not None)
        titles = [c.title for c in visible_columns(100)]
        assert "task" in titles and "time" not in titles and "parent" not in titles
        fixed = sum(c.width + 1 for c in visible_columns(100) if c.width)
        assert 100 - fixed >= TASK_MIN_WIDTH
        line = _runs(app).render_line(7).text
        assert "What is in README.md, and what" in line  # the task's room, less the scrollbar
        footer = " ".join(str(getattr(key, "key", "")) for key in app.screen.query("FooterKey"))
        assert "question_mark" in footer.split()[:3] and "q" in footer.split()[:3]


# ---------------------------------------------------------------- search, copy, export


def _at_seq(screen: RunScreen, seq: int) -> bool:
    node = screen.chain_tree.cursor_node
    return node is not None and node.data is not None and seq in node.data.seqs()


async def test_slash_in_a_run_jumps_between_matches(home: Path) -> None:
    app = WorkbenchApp(home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, app, COMPLETED)
        await pilot.press("slash", *"tokyo", "enter")
        await settle(pilot, lambda: len(screen.matches) == 5 and _at_seq(screen, 0))
        assert [hit.where for hit in screen.matches] == [
            "task",
            "tool_arguments",
            "tool_result",
            "message",
            "answer",
        ]
        await pilot.press("n")  # the call that asked for Tokyo's time, in turn 1
        await settle(pilot, lambda: _at_seq(screen, screen.matches[1].seq))
        assert screen.chain_tree.cursor_node.data.kind == "tool"  # type: ignore[union-attr]
        await pilot.press("n", "n")  # the model's message in turn 2
        await settle(pilot, lambda: _at_seq(screen, screen.matches[3].seq))
        await pilot.press("N", "N", "N")  # back to the task
        await settle(pilot, lambda: _at_seq(screen, 0) and screen.match_index == 0)
        await pilot.press("N")  # and around to the final answer
        await settle(pilot, lambda: _at_seq(screen, screen.matches[4].seq))
        await pilot.press("slash", "escape")  # escape closes the search box, not the run
        await settle(pilot)
        assert app.screen is screen and not screen.query_one("#run-search", Input).display


async def test_the_runs_search_box_finds_runs_by_content(home: Path) -> None:
    app = WorkbenchApp(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: _runs(app).total == 8)
        await pilot.press("ctrl+f", *"no such folder", "enter")  # a tool result's words
        await settle(pilot, lambda: _runs(app).total == 1 and _runs(app).row(0) is not None)
        assert _row(app, 0).run_id == MAX_TURNS
        assert "containing 'no such folder'" in plain(app.screen.query_one("#runs-count", Static))
        await pilot.press("escape")
        await settle(pilot, lambda: _runs(app).total == 8)


async def test_copy_the_selected_value_and_export_the_run(home: Path) -> None:
    app = WorkbenchApp(home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, app, ERROR)
        await pilot.press("y")  # on the start node: the task
        assert app.clipboard == "Compute (2 + 3) * 4."
        await pilot.press("e")  # the failed calculator call: its result
        await settle(pilot, lambda: _at_seq(screen, 10))
        await pilot.press("y")
        assert app.clipboard.startswith("ERROR: arguments are not valid JSON")
        await pilot.press("Y")
        assert app.clipboard == ERROR

        await pilot.press("x")
        exported = home / "exports" / f"{ERROR}.md"
        # The notice comes once the export is written.
        await settle(pilot, lambda: any(str(exported) in m for m in said(app)))
        markdown = exported.read_text()
        assert "Compute (2 + 3) * 4." in markdown and "calculator" in markdown


# ---------------------------------------------------------------- timeline


async def test_timeline_shows_calls_durations_tokens_and_cost(home: Path) -> None:
    from workbench.tui.timeline_screen import TimelineScreen

    (home / "prices.toml").write_text(
        '[models."gpt-4o-mini-2024-07-18"]\ninput = 0.15\noutput = 0.60\n'
    )
    # Turn 1's two tool calls overlapped: get_current_time started before read_file ended.
    trace = home / "traces" / f"{COMPLETED}.jsonl"
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    stamps = [event["ts"] for event in events]
    by_seq = {event["seq"]: event for event in events}
    order = [*range(17), 17, 19, 18, *range(20, len(events))]
    events = [by_seq[seq] | {"seq": n, "ts": stamps[n]} for n, seq in enumerate(order)]
    trace.write_text("".join(json.dumps(e) + "\n" for e in events))

    app = WorkbenchApp(home)
    async with app.run_test(size=SIZE) as pilot:
        run = await _open(pilot, app, COMPLETED)
        assert "1367 tokens ($0.0" in plain(run.query_one("#run-summary", Static))
        await pilot.press("t")
        await settle(
            pilot, lambda: isinstance(app.screen, TimelineScreen) and app.screen.view is not None
        )
        shown = str(app.screen.query_one("#timeline").render())
        assert "turn 1" in shown and "turn 2" in shown
        assert "read_file" in shown and "get_current_time" in shown and "model" in shown
        assert "█" in shown and " in / " in shown and "$0.0" in shown
        # Two tool calls of turn 1 ran side by side: the second sits on its own lane.
        assert "∥ get_current_time" in shown


# ---------------------------------------------------------------- regression results


def _tool(name: str, description: str) -> dict[str, Any]:
    parameters = {"type": "object", "properties": {"path": {"type": "string"}}}
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


def store_suite_results(home: Path) -> None:
    """Two stored runs of one suite through the store's own tables: the first saved as the
    baseline, the second after read_file's description was reworded."""
    from traces.store.regress import RegressTables

    before = [
        _tool("read_file", "Read a text file inside the project folder."),
        _tool("list_dir", "List a folder."),
    ]
    after = [
        _tool("read_file", "Fetch any document by its path."),
        _tool("list_dir", "List a folder."),
    ]
    case = {"samples": 4, "min_pass_rate": 0.75, "expected": "read_file(path='a.txt')"}
    tables = RegressTables.for_home(home)
    try:
        tables.save_run(
            {"suite_run_id": "suite-run-1", "suite": "files", "model": "m", "tool_schemas": before},
            [
                case | {"case_id": "reads", "passed": 4, "pass_rate": 1.0, "status": "pass"},
                case | {"case_id": "lists", "passed": 4, "pass_rate": 1.0, "status": "pass"},
            ],
            [],
        )
        tables.save_baseline("files", "v1", "suite-run-1")
        tables.save_run(
            {
                "suite_run_id": "suite-run-2",
                "suite": "files",
                "model": "m",
                "baseline": "v1",
                "tool_schemas": after,
            },
            [
                case
                | {
                    "case_id": "reads",
                    "passed": 1,
                    "pass_rate": 0.25,
                    "baseline_rate": 1.0,
                    "status": "regressed",
                    "chosen": "list_dir ×3, read_file ×1",
                },
                case
                | {
                    "case_id": "lists",
                    "passed": 4,
                    "pass_rate": 1.0,
                    "baseline_rate": 1.0,
                    "status": "pass",
                },
            ],
            [],
        )
    finally:
        tables.close()
    from traces.store import TraceStore

    with TraceStore.for_home(home) as store:  # fixed times, for the snapshot
        store.query("UPDATE regress_runs SET started = TIMESTAMP '2026-11-30 09:00:00'")
        store.query(
            "UPDATE regress_runs SET started = TIMESTAMP '2026-11-30 10:00:00' "
            "WHERE suite_run_id = 'suite-run-2'"
        )


@pytest.mark.parametrize("seen", ["writable", "read-only"])
async def test_regression_results_show_rates_and_the_description_diff(
    home: Path, seen: str
) -> None:
    """The same results from a home that cannot be written (`tests.support.read_only`)."""
    from textual.widgets import DataTable

    from traces.store import TraceStore
    from workbench.tui.regress_screen import RegressScreen

    store_suite_results(home)
    if seen == "read-only":  # the runs are in its store before it becomes read-only
        with TraceStore.for_home(home) as store:
            store.ingest_home(home)
    with read_only(home) if seen == "read-only" else nullcontext(home) as folder:
        app = WorkbenchApp(folder)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: _runs(app).total == 8)
            await pilot.press("R")
            await settle(pilot, lambda: isinstance(app.screen, RegressScreen) and app.screen.runs)
            screen = app.screen
            assert isinstance(screen, RegressScreen)
            runs = screen.query_one("#suite-runs", DataTable)
            assert runs.row_count == 2 and str(runs.get_row_at(0)[3]) == "1/2"
            cases = screen.query_one("#suite-cases", DataTable)
            await settle(pilot, lambda: cases.row_count == 2)
            row = cases.get_row_at(1)  # cases sort by id: lists, reads
            assert str(row[0]) == "reads" and row[1] == "25%" and row[2] == "100%"
            assert str(row[3]) == "regressed"
            await pilot.press("tab", "down")  # the regressed case
            body = screen.query_one("#case-body", Static)
            await settle(pilot, lambda: "tool changes" in plain(body))
            shown = plain(body)
            assert "reads" in shown and "regressed" in shown and "baseline 100%" in shown
            assert "read_file" in shown and "this case's tool" in shown
            assert "Fetch any document" in shown and "Read a text file" in shown
            assert "list_dir" not in shown.split("tool changes")[1]  # unchanged tools stay out


# ---------------------------------------------------------------- long text


def _lines(widget: Static, width: int) -> list[str]:
    return [line.rstrip() for line in plain(widget, width).splitlines()]


def _words_whole(text: str, lines: list[str]) -> bool:
    """Every word of `text` appears whole on some line: nothing was cut mid-word."""
    shown = {word for line in lines for word in line.split()}
    return all(word in shown for word in text.split())


async def test_long_text_wraps_at_words(home: Path) -> None:
    description = (
        "Evaluate an arithmetic expression exactly, with parentheses and the usual operators; "
        "send the expression as a JSON object whose expression field holds it verbatim."
    )
    trace = home / "traces" / f"{ERROR}.jsonl"
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    for tool in events[0]["tools"]:
        if tool["function"]["name"] == "calculator":
            tool["function"]["description"] = description
    trace.write_text("".join(json.dumps(e) + "\n" for e in events))

    app = WorkbenchApp(home)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await _open(pilot, app, ERROR)
        detail = screen.query_one("#detail-body", Static)
        await pilot.press("enter")  # the start node opens onto the tools it offered
        labels = [str(n.label) for n in screen.chain_tree.root.children[0].children]
        assert any("calculator" in label for label in labels)
        for _ in labels:
            await pilot.press("down")
            node = screen.chain_tree.cursor_node
            if node is not None and node.data is not None and "calculator" in str(node.label):
                break
        await settle(pilot, lambda: "parameters" in plain(detail))
        lines = _lines(detail, 40)
        assert _words_whole(description, lines)  # the whole description, wrapped at words
        assert '"type": "object",' in lines or any('"type": "object"' in ln for ln in lines)

        # In the tree, the end's long reason stops at a word, never at the pane's edge.
        from rich.style import Style

        tree = screen.chain_tree
        end = tree.root.children[-1]
        label = tree.render_label(end, Style(), Style()).plain
        assert label.endswith("…") and len(label) < tree.scrollable_content_region.width
        reason = "✖ end: error  model call failed: 401 Unauthorized (not retried)"
        assert reason.startswith(label[:-1].rstrip()) and reason[len(label[:-1].rstrip())] == " "

        await pilot.press("e")  # the failed call: its error text wraps at words too
        await settle(pilot, lambda: "parse error" in plain(detail))
        assert _words_whole(
            "ERROR: arguments are not valid JSON; send a JSON object", _lines(detail, 30)
        )


async def test_a_demo_run_forks_offline_with_the_model_it_ships(home: Path) -> None:
    # `workbench demo` records, with each run, the model script its forks answer from.
    script = home / "demo-fork-script.json"
    script.write_text(json.dumps({"name": "scripted-demo-fork", "steps": [{"content": "20"}]}))
    trace = home / "traces" / f"{ERROR}.jsonl"
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    events[0]["meta"] = {**events[0].get("meta", {}), "fork_script": str(script)}
    trace.write_text("".join(json.dumps(e) + "\n" for e in events))

    app = WorkbenchApp(home, endpoint=Endpoint())  # no endpoint, no network
    async with app.run_test(size=SIZE) as pilot:
        fork = await _fork_dialog(pilot, app)
        assert fork.query_one("#fork-script", Input).value == str(script)
        assert "offline scripted model" in fork.output.text.plain
        await _edit(pilot, fork, "user", "Compute (2 + 3) * 4 and answer with the number.")
        await pilot.press("ctrl+r")
        await settle(pilot, lambda: isinstance(app.screen, ChainCompareScreen))
        assert "ended: completed" in fork.output.text.plain
