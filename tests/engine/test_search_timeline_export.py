"""The engine's read-side helpers on real recorded runs: search (DuckDB), the timeline,
export and prices."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.engine.engine_support import THREE_TURNS, Project
from traces.home import traces_dir
from traces.prices import Prices, PricesError
from traces.reader import read_trace
from traces.store import TraceStore
from workbench.engine.views.export import export_run
from workbench.engine.views.search import search
from workbench.engine.views.timeline import build_timeline, render_timeline


def _store(project: Project) -> TraceStore:
    store = TraceStore.open(project.home / "store.duckdb")
    store.ingest([traces_dir(project.home)])
    return store


async def test_search_finds_each_kind_of_text_with_run_turn_and_snippet(
    project: Project,
) -> None:
    _, run = await project.record(THREE_TURNS)
    _, other = await project.record([{"content": "Nothing to look up."}], task="Say hello.")
    with _store(project) as store:
        result_hits = search(store, "PORT = 8080")  # any case, inside config.toml's text
        arguments = search(store, "8080 * 2")
        answers = search(store, "16160")
        tasks = search(store, "say HELLO")
        said = search(store, "look around")
        scoped = search(store, "8080", run_id=other.run_id)
        nothing = search(store, "no such words anywhere")
        blank = search(store, "  ")

    [hit] = result_hits
    assert (hit.run_id, hit.turn, hit.where) == (run.run_id, 2, "tool_result")
    assert "port = 8080" in hit.snippet and "\n" not in hit.snippet
    assert {(h.where, h.turn) for h in arguments} == {("tool_arguments", 2)}
    assert {h.where for h in answers} == {"tool_result", "message", "answer"}  # calculator too
    assert [(h.run_id, h.where, h.turn) for h in tasks] == [(other.run_id, "task", None)]
    assert [h.where for h in said] == ["message"]
    assert scoped == [] and nothing == [] and blank == []


async def test_search_snippets_are_cut_around_the_match(project: Project) -> None:
    long_text = "alpha " * 50 + "needle" + " omega" * 50
    await project.record([{"content": long_text}], task="Find the needle.")
    with _store(project) as store:
        hits = search(store, "NEEDLE", limit=10)
        limited = search(store, "e", limit=1)
    message = next(h for h in hits if h.where == "message")
    assert message.snippet.startswith("…") and message.snippet.endswith("…")
    assert "needle" in message.snippet and len(message.snippet) < 120
    assert len(limited) == 1


async def test_timeline_puts_parallel_calls_side_by_side_with_tokens_per_turn(
    project: Project,
) -> None:
    path, run = await project.record(THREE_TURNS)
    events = list(read_trace(path).events)
    timeline = build_timeline(events)

    assert [turn.turn for turn in timeline.turns] == [1, 2, 3]
    first, second, third = timeline.turns
    assert [(s.kind, s.label, s.lane) for s in first.spans] == [
        ("model", "model", 0),
        ("tool", "list_dir", 0),
    ]
    assert (first.input_tokens, first.output_tokens) == (120, 12)  # the provider's usage
    # Turn 2's read-only calls ran together: one of them sits on a lane of its own.
    tools = [s for s in second.spans if s.kind == "tool"]
    assert sorted(s.label for s in tools) == ["calculator", "read_file"]
    assert sorted(s.lane for s in tools) == [0, 1]
    for turn in timeline.turns:
        assert 0 <= turn.start_ms <= turn.end_ms <= timeline.end_ms
        for span in turn.spans:
            assert turn.start_ms <= span.start_ms <= span.end_ms <= turn.end_ms
            assert span.ok
    assert [s.kind for s in third.spans] == ["model"]
    # The turns add up to what the run counted (usage where given, else estimates).
    assert timeline.input_tokens == run.totals.input_tokens
    assert timeline.output_tokens == run.totals.output_tokens

    lines = render_timeline(timeline, width=80, cost=lambda i, o: f", cost {i + o}")
    assert lines[0].startswith(f"timeline of run {run.run_id[:12]}")
    assert "turn 1" in lines[1] and "120 in / 12 out tokens, cost 132" in lines[1]
    assert any("list_dir" in line and "█" in line for line in lines)


async def test_timeline_marks_a_failed_tool_call(project: Project) -> None:
    path, _ = await project.record(
        [
            {"tool_calls": [{"id": "c1", "name": "read_file", "arguments": {"path": "nope"}}]},
            {"content": "No such file."},
        ]
    )
    timeline = build_timeline(list(read_trace(path).events))
    [tool] = [s for s in timeline.turns[0].spans if s.kind == "tool"]
    assert tool.label == "read_file" and not tool.ok
    assert build_timeline([]).turns == []


async def test_export_json_is_one_document_with_every_event(project: Project) -> None:
    path, run = await project.record(THREE_TURNS)
    events = list(read_trace(path).events)
    document = json.loads(export_run(events, "json"))
    assert document["run_id"] == run.run_id and document["status"] == "completed"
    assert document["answer"] == "The port is 8080; twice that is 16160."
    assert document["last_text"] is None
    assert [e["seq"] for e in document["events"]] == list(range(len(events)))
    assert document["totals"]["turns"] == 3


async def test_export_markdown_reads_as_an_issue_report(project: Project) -> None:
    steps = json.loads(json.dumps(THREE_TURNS))
    steps[2]["content"] = "Done. Here is code:\n```\nport = 8080\n```"
    path, run = await project.record(steps)
    text = export_run(list(read_trace(path).events), "md")
    assert text.startswith(f"# Run `{run.run_id}`")
    assert "## Task" in text and "> What does config.toml say" in text
    assert "## Turn 1" in text and "## Turn 2" in text and "## Turn 3" in text
    assert "**Tool `read_file`** (`call_read`, ok)" in text
    assert "**completed**" in text
    # The answer's own code fence does not end the export's blocks early.
    assert text.count("```") % 2 == 0 or "````" in text
    assert "> Done. Here is code:" in text


def test_prices_from_the_home_folder(tmp_path: Path) -> None:
    assert Prices.load(tmp_path).cost("gpt-x", 1000, 1000) is None  # no file: no prices
    (tmp_path / "prices.toml").write_text(
        '[models."gpt-x"]\ninput = 2.0\noutput = 8.0\n', encoding="utf-8"
    )
    prices = Prices.load(tmp_path)
    assert prices.cost("gpt-x", 1_000_000, 500_000) == pytest.approx(6.0)
    assert prices.cost("other", 10, 10) is None
    assert prices.format(prices.cost("gpt-x", 1000, 0)) == "$0.0020"
    assert prices.format(None) == ""


@pytest.mark.parametrize(
    "text",
    ['[models."gpt-x"]\ninput = "cheap"\noutput = 1\n', "models = [", "models = 3\n"],
)
def test_bad_prices_are_one_line_naming_the_file(tmp_path: Path, text: str) -> None:
    (tmp_path / "prices.toml").write_text(text, encoding="utf-8")
    with pytest.raises(PricesError, match=r"prices\.toml"):
        Prices.load(tmp_path)
