"""A run as one document: JSON (the run's summary and every event, for scripts) or
Markdown (the task, each turn's text, tool calls and results, and the end, to paste in an
issue).

    text = export_run(store.events(run_id), "md")
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, TypeAlias, assert_never

from traces.events import SCHEMA_VERSION, Event
from traces.run_names import run_file_stem
from traces.tree import RunChain, ToolCallNode, TurnNode, answer_label, build_chain
from workbench.engine.views.timeline import Timeline, TurnTimeline, build_timeline, format_ms

ExportFormat: TypeAlias = Literal["json", "md"]
EXPORT_FORMATS: tuple[ExportFormat, ...] = ("json", "md")
# Longer texts are cut in Markdown (which people read); JSON keeps everything.
MD_TEXT_LIMIT = 4_000


class ExportError(Exception):
    """Nothing to export; one line."""


def export_run(events: Sequence[Event], fmt: ExportFormat) -> str:
    if not events:
        raise ExportError("the run has no events to export")
    chain = build_chain(events)
    if fmt == "json":
        return _json_document(chain, events)
    if fmt == "md":
        return "\n".join(_markdown(chain, build_timeline(events))) + "\n"
    assert_never(fmt)


def export_to_home(events: Sequence[Event], run_id: str, fmt: ExportFormat, home: Path) -> Path:
    """Write the run's document to `<home>/exports/<name>.<fmt>`, the name made from the
    run id (`run_file_stem`: an id is data, never a path part); returns its path."""
    text = export_run(events, fmt)
    folder = home / "exports"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{run_file_stem(run_id)}.{fmt}"
    path.write_text(text, encoding="utf-8")
    return path


def _json_document(chain: RunChain, events: Sequence[Event]) -> str:
    start, end = chain.start, chain.end
    document: dict[str, Any] = {
        "export": "agent-workbench run",
        "schema_version": start.schema_version if start is not None else SCHEMA_VERSION,
        "run_id": chain.run_id,
        "status": chain.status,
        "task": start.task if start is not None else None,
        "model": start.model if start is not None else None,
        "parent_run_id": start.parent_run_id if start is not None else None,
        # run_end's `final_answer` is an answer only when the run completed; a stopped
        # run's is its last text (`answer_label`). The events keep the field as it is.
        "answer": end.final_answer if end is not None and end.status == "completed" else None,
        "last_text": end.final_answer if end is not None and end.status != "completed" else None,
        "totals": end.totals.model_dump(mode="json") if end is not None else None,
        "events": [event.model_dump(mode="json") for event in sorted(events, key=_seq)],
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _seq(event: Event) -> int:
    return event.seq


def _clip(text: str, limit: int = MD_TEXT_LIMIT) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… ({len(text) - limit} more characters)"


def fenced(text: str, language: str = "") -> list[str]:
    """A code block whose fence is longer than any run of backticks inside `text`."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + language, text, fence]


def _quote(text: str) -> list[str]:
    return [f"> {line}" if line else ">" for line in _clip(text).splitlines()] or [">"]


def _markdown(chain: RunChain, timeline: Timeline) -> list[str]:
    start, end = chain.start, chain.end
    lines = [f"# Run `{chain.run_id}`", ""]
    rows = [("status", chain.status)]
    if start is not None:
        rows += [("model", start.model), ("tools offered", str(len(start.tools)))]
        if start.parent_run_id:
            rows.append(("fork of", f"`{start.parent_run_id}` at turn {start.fork_turn}"))
    if end is not None:
        totals = end.totals
        rows += [
            ("turns", str(totals.turns)),
            ("tokens", f"{totals.input_tokens} in / {totals.output_tokens} out"),
            ("duration", format_ms(timeline.end_ms)),
        ]
    lines += ["| | |", "|---|---|", *(f"| {key} | {value} |" for key, value in rows), ""]
    if start is not None:
        lines += ["## Task", "", *_quote(start.task), ""]
        if start.system_prompt:
            lines += ["<details><summary>System prompt</summary>", ""]
            lines += [*fenced(_clip(start.system_prompt)), "", "</details>", ""]
        for edit in start.edits:
            target = f" `{edit.target}`" if edit.target else ""
            value = edit.value if isinstance(edit.value, str) else json.dumps(edit.value)
            lines += [f"- fork edit: {edit.kind}{target}", "", *fenced(_clip(value)), ""]
    figures = {turn.turn: turn for turn in timeline.turns}
    for turn in chain.turns:
        lines += _markdown_turn(turn, figures.get(turn.turn))
    lines += ["## End", ""]
    if end is None:
        lines.append("**incomplete**: the trace has no run_end (the run was killed or is running)")
        return lines
    layer = f" ({end.timeout_layer})" if end.timeout_layer else ""
    lines.append(f"**{end.status}**{layer}: {end.reason}" if end.reason else f"**{end.status}**")
    if end.final_answer:
        label = answer_label(end.status)
        lines += ["", f"{label[0].upper()}{label[1:]}:", "", *_quote(end.final_answer)]
    return lines


def _markdown_turn(turn: TurnNode, figures: TurnTimeline | None) -> list[str]:
    heading = f"## Turn {turn.turn}"
    if figures is not None:
        heading += (
            f" · {figures.input_tokens} in / {figures.output_tokens} out tokens, "
            f"{format_ms(figures.duration_ms)}"
        )
    lines = [heading, ""]
    for call in turn.model_calls:
        if call.error is not None:
            lines += [
                f"- model attempt {call.attempt} failed: {call.error.kind}: {call.error.message}",
                "",
            ]
    response = turn.response
    content = response.message.get("content") if response is not None else None
    if isinstance(content, str) and content:
        lines += ["**Assistant:**", "", *_quote(content), ""]
    for tool in turn.tool_calls:
        lines += _markdown_tool(tool)
    for asked in turn.calls_not_run:
        function = asked.get("function") or {}
        arguments = str(function.get("arguments") or "")
        lines += [f"**Tool `{function.get('name', '?')}`** (`{asked.get('id', '?')}`, not run)"]
        lines += ["", *fenced(_clip(arguments)), ""]
    for error in turn.errors:
        lines += [f"- error ({error.where}): {error.kind}: {error.message}", ""]
    return lines


def _markdown_tool(tool: ToolCallNode) -> list[str]:
    end = tool.end
    if end is None:
        status = "no result"
    else:
        flags = [
            flag
            for flag, on in (
                ("observed", end.observed),  # the client ran it (a captured run)
                ("mocked", end.mocked),
                ("replayed", end.replayed),
            )
            if on
        ]
        status = ("ok" if end.ok else f"error: {end.error or 'failed'}") + "".join(
            f", {flag}" for flag in flags
        )
    arguments = tool.start.arguments
    shown = (
        json.dumps(arguments, indent=2, ensure_ascii=False)
        if arguments is not None
        else tool.start.arguments_raw
    )
    lines = [f"**Tool `{tool.name}`** (`{tool.call_id}`, {status})", ""]
    lines += [*fenced(_clip(shown), "json" if arguments is not None else ""), ""]
    if end is not None:
        lines += ["Result:", "", *fenced(_clip(end.result)), ""]
    return lines
