"""The pure render functions, without an App: events, run rows, the chain and schema views."""

from __future__ import annotations

from rich.console import Console

from tests.tui.conftest import ERROR, GOLDEN
from traces.reader import read_trace
from traces.schema_diff import diff_tool_schemas
from workbench.engine.diff.text_changes import TextChange
from workbench.engine.views.outline import event_is_failure
from workbench.tui.chain_view import find_node, turn_children
from workbench.tui.render import event_line, render_event
from workbench.tui.schema_view import SchemaPair, render_schema_diff


def text(renderable: object, width: int = 120) -> str:
    console = Console(width=width, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(renderable)
    return console.export_text()


def _events() -> list:
    return read_trace(GOLDEN / f"{ERROR}.jsonl").events


def test_every_golden_event_renders_and_fits_one_timeline_line() -> None:
    for trace in GOLDEN.glob("*.jsonl"):
        for event in read_trace(trace).events:
            assert text(render_event(event)).strip()
            assert event_line(event, 80).cell_len == 80


def test_a_model_request_shows_every_message_with_its_role() -> None:
    request = next(e for e in _events() if e.type == "model_request" and e.turn == 2)
    shown = text(render_event(request))
    for message in request.messages:
        assert message["role"] in shown
    assert "call_e1" in shown  # the assistant's tool call id, exactly as sent


def test_turn_children_group_a_model_call_and_its_failed_tool() -> None:
    events = [e for e in _events() if e.turn == 1 and e.type not in ("model_chunk", "mcp_message")]
    nodes = turn_children(events)
    assert [n.kind for n in nodes] == ["model_call", "tool"]
    call, tool = nodes
    assert [c.kind for c in call.children] == ["request", "response", "chunks"]
    assert call.children[2].count == 6
    assert tool.failed
    first_failure = next(e for e in events if event_is_failure(e))
    assert find_node(nodes, first_failure.seq) is tool


def test_schema_diff_marks_added_removed_and_changed_tools() -> None:
    def tool(name: str, description: str, props: dict) -> dict:
        parameters = {"type": "object", "properties": props}
        return {
            "type": "function",
            "function": {"name": name, "description": description, "parameters": parameters},
        }

    a = [tool("read_file", "Read a file.", {"path": {"type": "string"}}), tool("old", "x", {})]
    b = [
        tool("read_file", "Read a text file.", {"path": {"type": "integer"}}),
        tool("new", "y", {}),
    ]
    shown = text(render_schema_diff(SchemaPair("a" * 32, "b" * 32, a, b, diff_tool_schemas(a, b))))
    assert "1 added, 1 removed, 1 changed" in shown
    assert "+ new" in shown and "- old" in shown and "~ read_file" in shown
    assert "path (type)" in shown


def test_a_tools_changed_event_names_what_changed_and_what_is_offered() -> None:
    from datetime import UTC, datetime

    from traces.events import ToolsChanged

    tool = {"type": "function", "function": {"name": "list_directory", "description": "List."}}
    event = ToolsChanged(
        run_id="r",
        seq=3,
        ts=datetime.now(UTC),
        turn=1,
        source="mcp:fs",
        tools=[tool],
        added=["list_directory"],
        removed=["old_tool"],
    )
    shown = text(render_event(event))
    assert "mcp:fs" in shown and "list_directory" in shown and "old_tool" in shown
    assert "+list_directory -old_tool" in event_line(event, 120).plain


def test_a_divergence_outside_a_turn_says_so_instead_of_none() -> None:
    from workbench.engine.recording.replay.verify import Divergence, ReplayOutcome
    from workbench.tui.replay_screen import render_outcome

    divergence = Divergence(None, "run_end", 9, "the recording has no more events")
    outcome = ReplayOutcome("r" * 32, "diverged", 8, 9, 2, 0.1, divergence)
    shown = text(render_outcome(outcome))
    assert "outside a turn" in shown and "None" not in shown


def test_the_kind_filter_and_column_name_the_kinds_runs_kind_takes() -> None:
    from traces.origins import RUN_KINDS, kind_label
    from workbench.cli.read_cmds import run_kind
    from workbench.tui.backend import KIND_FILTERS

    assert {o for origins in KIND_FILTERS.values() for o in origins} == set(RUN_KINDS)
    assert all(run_kind(k) == k for k in KIND_FILTERS if k in RUN_KINDS)
    assert all(run_kind(kind_label(origin)) == origin for origin in RUN_KINDS)


def test_what_differs_keeps_every_line_of_a_long_text_under_its_first() -> None:
    from workbench.engine.diff.text_changes import compare_runs, word_diff
    from workbench.engine.recording.runs.load import read_recording_file
    from workbench.tui.diff_screens import render_comparison

    run = read_recording_file(GOLDEN / f"{ERROR}.jsonl")
    comparison = compare_runs(run, run)
    a, b = "first line\nsecond line\nthird", "first line\nsecond line, changed\nthird"
    comparison.changes = {1: [TextChange("answer", a, b, word_diff(a, b))]}
    lines = text(render_comparison(comparison)).splitlines()
    start = lines.index(next(line for line in lines if line.strip().startswith("A ")))
    column = lines[start].index("first line")
    assert column > 4
    for line in lines[start + 1 : start + 3]:  # A's second and third lines
        assert line[:column].strip() == "" and line[column:].startswith(("second", "third"))
    b_line = next(line for line in lines if line.strip().startswith("B "))
    assert b_line.index("first line") == column
