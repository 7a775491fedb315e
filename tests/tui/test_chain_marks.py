"""The decision-chain tree at a glance (issue 25, item 5): a refused call is in the tree and
its turn is not checked green; every turn shows its status, time, tokens and cost before it
is opened, every call once it is; refused, mocked, replayed and observed calls each have a
mark of their own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from textual.widgets import Static

from tests.tui.conftest import GOLDEN, MAX_TURNS, golden_usage, plain, settle
from traces.store import TraceStore
from traces.tree import TOOL_CALL_OUTCOMES
from workbench.tui import WorkbenchApp
from workbench.tui.render import TOOL_MARKS, TURN_MARKS
from workbench.tui.run_screen import RunScreen

SIZE = (160, 45)
PRICES = '[models."gpt-4o-mini-2024-07-18"]\ninput = 0.15\noutput = 0.60\n'


def test_every_tool_call_outcome_has_a_mark_of_its_own() -> None:
    assert set(TOOL_MARKS) == set(TOOL_CALL_OUTCOMES)
    icons = [icon for icon, _, _ in TOOL_MARKS.values()]
    assert len(set(icons)) == len(icons), "two outcomes share a mark"


async def _open(pilot, app: WorkbenchApp, run_id: str) -> RunScreen:
    await settle(pilot, lambda: app.screen.query("#runs-list"))
    app.open_run(run_id)
    await settle(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.outline)
    assert isinstance(app.screen, RunScreen)
    return app.screen


def _turn_labels(screen: RunScreen) -> dict[int, str]:
    return {
        node.data.turn: str(node.label)
        for node in screen.chain_tree.root.children
        if node.data is not None and node.data.kind == "turn" and node.data.turn is not None
    }


async def _open_turn(pilot, screen: RunScreen, turn: int) -> list[Any]:
    node = screen.chain_tree.turn_node(turn)
    assert node is not None
    node.expand()
    await settle(pilot, lambda: turn in screen.chain_tree.turns_loaded)
    return list(node.children)


async def test_a_refused_call_is_in_the_tree_and_its_turn_is_not_green(demo_copy: Path) -> None:
    with TraceStore.for_home(demo_copy) as store:
        run = next(r for r in store.runs() if r.status == "duplicate_tool_calls")
    app = WorkbenchApp(demo_copy)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, app, run.run_id)
        labels = _turn_labels(screen)
        last = max(labels)
        refused_mark = TOOL_MARKS["not_run"][0]
        # Before the turn is opened: marked as refused, never with the green check.
        assert labels[last].startswith(refused_mark), labels[last]
        assert "1 not run" in labels[last]
        children = await _open_turn(pilot, screen, last)
        refused = [n for n in children if n.data is not None and n.data.kind == "not_run"]
        assert len(refused) == 1
        assert str(refused[0].label).startswith(f"{refused_mark} search_files(")
        assert "not run" in str(refused[0].label)
        label = _turn_labels(screen)[last]  # opened: still not checked
        assert label.startswith(refused_mark) and TURN_MARKS["ok"][0] not in label
        screen.chain_tree.move_cursor(refused[0])
        await settle(pilot)
        detail = plain(screen.query_one("#detail-body", Static))
        assert "never ran" in detail and "TODO" in detail


async def test_every_turn_shows_status_time_tokens_and_cost_unopened(home: Path) -> None:
    (home / "prices.toml").write_text(PRICES)
    usage = golden_usage(MAX_TURNS)
    app = WorkbenchApp(home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, app, MAX_TURNS)
        labels = _turn_labels(screen)
        assert set(labels) == set(usage)
        marks = {icon for icon, _ in TURN_MARKS.values()}
        for turn, label in labels.items():
            assert label[0] in marks, label
            assert f"{usage[turn]['total_tokens']} tok" in label, label
            assert "$0.0001" in label and "ms" in label, label
        assert labels[4].startswith(TURN_MARKS["error"][0])  # its list_dir call failed
        assert labels[1].startswith(TURN_MARKS["ok"][0])
        # Opened, the turn keeps its figures and its calls show their own.
        children = await _open_turn(pilot, screen, 1)
        assert f"{usage[1]['total_tokens']} tok" in _turn_labels(screen)[1]
        call = next(n for n in children if n.data.kind == "model_call")
        assert f"{usage[1]['total_tokens']} tok" in str(call.label)
        assert "$0.0001" in str(call.label) and str(call.label).startswith("✔")
        tool = next(n for n in children if n.data.kind == "tool")
        assert str(tool.label).startswith(TOOL_MARKS["ok"][0]) and "ms" in str(tool.label)


async def test_mocked_replayed_and_observed_calls_have_marks_of_their_own(home: Path) -> None:
    trace = home / "traces" / f"{MAX_TURNS}.jsonl"
    flags = {"call_l1": "mocked", "call_l2": "replayed", "call_l3": "observed"}
    events = [json.loads(line) for line in (GOLDEN / trace.name).read_text().splitlines()]
    for event in events:
        if event["type"] == "tool_end" and event["call_id"] in flags:
            event[flags[event["call_id"]]] = True
    trace.write_text("".join(json.dumps(e) + "\n" for e in events))
    app = WorkbenchApp(home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, app, MAX_TURNS)
        seen = {}
        for turn, outcome in ((1, "mocked"), (2, "replayed"), (3, "observed"), (4, "error")):
            children = await _open_turn(pilot, screen, turn)
            tool = next(n for n in children if n.data.kind == "tool")
            seen[outcome] = str(tool.label)
        for outcome, label in seen.items():
            icon, _, word = TOOL_MARKS[outcome]  # type: ignore[index]
            assert label.startswith(f"{icon} list_dir("), (outcome, label)
            assert word in label, (outcome, label)
