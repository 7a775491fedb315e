"""A run as one document: JSON (the run's summary and every event, for scripts),
Markdown (the task, each turn's text, tool calls and results, and the end, to paste in an
issue) or one self-contained HTML page (`export_html`: the decision chain as a tree, to
attach to an issue or a PR).

    text = export_run(recording.events, "md")
    path = export_stored(open_store, run_id, "md", home, progress)  # a window at a time
    write_stored(open_store, run_id, "json", sys.stdout)  # the same, to any text stream

`export_stored` and `write_stored` write the same document from the store, reading a window
of turns (JSON: a page of events) at a time, so a run of 200,000 events is written in
bounded memory, with its progress told as it goes.
"""

from __future__ import annotations

import io
import itertools
import json
import re
import textwrap
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, Literal, TypeAlias, assert_never

from traces.annotations import annotation_target
from traces.events import EVENT_TYPES, SCHEMA_VERSION, Event
from traces.reader import validate_line
from traces.run_names import run_file_stem
from traces.store.pretty import pretty_page
from traces.text import short_ms
from traces.tree import (
    RunChain,
    ToolCallNode,
    TurnNode,
    answer_fields,
    answer_label,
    build_chain,
)
from traces.user_files import written_whole
from workbench.engine.recording.runs.parent import OpenStore
from workbench.engine.recording.runs.window import TurnWindow
from workbench.engine.views.export_html import html_head, html_tail, html_turn
from workbench.engine.views.timeline import Timeline, TurnTimeline, build_timeline

ExportFormat: TypeAlias = Literal["json", "md", "html"]
EXPORT_FORMATS: tuple[ExportFormat, ...] = ("json", "md", "html")
# Longer texts are cut in Markdown (which people read); JSON keeps everything.
MD_TEXT_LIMIT = 4_000


# How much of a stored run `export_stored` reads at a time: turns (Markdown, HTML), events
# (JSON).
EXPORT_TURNS = 500
EXPORT_EVENTS = 20_000
# What a Markdown or HTML export reads of a stored run: every event but the raw chunks, which it
# does not show (the answer they make is in model_response), and the model requests
# without what they sent (also not shown). A turn's time is then that of its other
# events, as it is for every run the workbench writes: a chunk comes between the request
# and the answer (or the end) of its attempt.
MARKDOWN_TYPES = [
    kind for cls in EVENT_TYPES if (kind := cls.model_fields["type"].default) != "model_chunk"
]
# How far an export is: (done, of) turns for Markdown and HTML, events for JSON.
ExportProgress: TypeAlias = Callable[[int, int], object]


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
    if fmt == "html":
        timeline = build_timeline(events)
        figures = {turn.turn: turn for turn in timeline.turns}
        lines = html_head(chain, timeline.end_ms)
        for turn in chain.turns:
            lines += html_turn(turn, figures.get(turn.turn), timeline.end_ms)
        return "\n".join(lines + html_tail(chain, [])) + "\n"
    assert_never(fmt)


def export_to_home(events: Sequence[Event], run_id: str, fmt: ExportFormat, home: Path) -> Path:
    """Write the run's document to `<home>/exports/<name>.<fmt>`, the name made from the
    run id (`run_file_stem`: an id is data, never a path part); returns its path."""
    text = export_run(events, fmt)
    path = _export_path(home, run_id, fmt)
    with written_whole(path) as out:
        out.write(text)
    return path


def export_stored(
    open_store: OpenStore,
    run_id: str,
    fmt: ExportFormat,
    home: Path,
    progress: ExportProgress | None = None,
) -> Path:
    """`export_to_home` of a stored run, read a window at a time (`write_stored`)."""
    path = _export_path(home, run_id, fmt)
    with written_whole(path) as out:
        write_stored(open_store, run_id, fmt, out, progress)
    return path


def write_stored(
    open_store: OpenStore,
    run_id: str,
    fmt: ExportFormat,
    out: IO[str],
    progress: ExportProgress | None = None,
) -> None:
    """The document `export_run` makes of a stored run, written to `out` as it is read, a
    window at a time (`EXPORT_TURNS` turns, `EXPORT_EVENTS` events), each in a session of
    `open_store` of its own; `progress` hears how far it is before the first and after
    each. `ExportError` before anything is written when the run has no events."""
    with open_store() as store:
        total = store.count_events(run_id)
        own = store.events(run_id, types=["run_start", "run_end"])
        first = store.events(run_id, limit=1)  # where the timeline's offsets count from
        span = store.time_span(run_id)
        turns = tuple(store.turn_numbers(run_id))
        notes = store.annotations(run_id)
    if not total:
        raise ExportError("the run has no events to export")
    if progress is not None:
        progress(0, total if fmt == "json" else len(turns))
    chain = build_chain(own)
    chain.run_id = run_id
    if fmt == "json":
        # Only when there are some: a run without is the document `export_run` makes.
        document = _json_head(chain) | ({"annotations": notes} if notes else {})
        _write_json(out, document, _event_pages(open_store, run_id, total, progress))
        return
    duration = (span[1] - span[0]).total_seconds() * 1000.0 if span else 0.0
    origin = [event for event in first if event.turn is None]
    stored = _stored_turns(open_store, run_id, turns, origin, duration, progress)
    if fmt == "md":
        turn_lines = (line for turn, figures in stored for line in _markdown_turn(turn, figures))
        head, end = _markdown_head(chain, duration), _markdown_end(chain)
        _write_lines(out, itertools.chain(head, turn_lines, end, _markdown_notes(notes)))
    elif fmt == "html":
        turn_lines = (
            line for turn, figures in stored for line in html_turn(turn, figures, duration)
        )
        head, tail = html_head(chain, duration), html_tail(chain, notes)
        _write_lines(out, itertools.chain(head, turn_lines, tail))
    else:
        assert_never(fmt)


def _export_path(home: Path, run_id: str, fmt: ExportFormat) -> Path:
    folder = home / "exports"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{run_file_stem(run_id)}.{fmt}"


def _write_lines(out: IO[str], lines: Iterable[str]) -> None:
    for line in lines:
        out.write(line + "\n")


def _event_pages(
    open_store: OpenStore, run_id: str, total: int, progress: ExportProgress | None
) -> Iterable[str]:
    """The run's events as `_write_json` writes them, a page of `EXPORT_EVENTS` at a time:
    each run of events DuckDB formats (`traces.store.pretty`) as one text, re-indented
    here; an event it cannot format read into its model and written as `export_run` does."""
    after, done = (-1, -1), 0
    while True:
        with open_store() as store:
            page = pretty_page(store, run_id, after, EXPORT_EVENTS)
        if not page:
            return
        formatted: list[str] = []
        for _seq, _row, pretty, raw in page:
            if pretty is not None:
                formatted.append(pretty)
                continue
            if formatted:
                yield _reindented("\n" + ",\n".join(formatted))
                formatted = []
            yield _event_item(validate_line(raw or ""))
        if formatted:
            yield _reindented("\n" + ",\n".join(formatted))
        after, done = page[-1][:2], done + len(page)
        if progress is not None:
            progress(min(done, total), total)


def _reindented(text: str) -> str:
    """DuckDB's indented events (4 spaces a level, each line after a newline) as Python's
    `indent=2` inside the document's list (4 more): str.replace a level at a time, as a
    per-line pass in Python costs more than DuckDB's formatting. No raw control character
    is in JSON text, so \x01 marks the levels counted so far."""
    marked = text.replace("\n    ", "\n\x01")
    while "\x01    " in marked:
        marked = marked.replace("\x01    ", "\x01\x01")
    return marked.replace("\x01", "  ").replace("\n", "\n    ")


def _stored_turns(
    open_store: OpenStore,
    run_id: str,
    turns: tuple[int, ...],
    origin: list[Event],
    duration: float,
    progress: ExportProgress | None,
) -> Iterator[tuple[TurnNode, TurnTimeline | None]]:
    """Every turn of a stored run and its timeline figures, read a window of turns at a
    time; `origin` (the run's first event, outside any turn) puts each window's offsets
    where the whole run's are."""
    window: TurnWindow | None = TurnWindow(turns, 0, EXPORT_TURNS)
    done = 0
    while window is not None and window.shown is not None:
        with open_store() as store:
            events = store.events(run_id, types=MARKDOWN_TYPES, turns=window.shown, sent=False)
        timeline = build_timeline(origin + events, end_ms=duration)
        figures = {turn.turn: turn for turn in timeline.turns}
        for turn in build_chain(events).turns:
            yield turn, figures.get(turn.turn)
        done += len(turns[window.start : window.start + window.size])
        if progress is not None:
            progress(done, len(turns))
        step = window.moved(1)
        window = TurnWindow(turns, step, EXPORT_TURNS) if step is not None else None


def _json_head(chain: RunChain) -> dict[str, Any]:
    start, end = chain.start, chain.end
    return {
        "export": "agent-workbench run",
        "schema_version": start.schema_version if start is not None else SCHEMA_VERSION,
        "run_id": chain.run_id,
        "status": chain.status,
        "task": start.task if start is not None else None,
        "model": start.model if start is not None else None,
        "parent_run_id": start.parent_run_id if start is not None else None,
        **answer_fields(end.status if end else None, end.final_answer if end else None),
        "totals": end.totals.model_dump(mode="json") if end is not None else None,
    }


def _json_document(chain: RunChain, events: Sequence[Event]) -> str:
    out = io.StringIO()
    _write_json(out, _json_head(chain), map(_event_item, sorted(events, key=_seq)))
    return out.getvalue()


def _event_item(event: Event) -> str:
    """One event as the document's list holds it: on a new line, indented by 2 under 4."""
    item = json.dumps(event.model_dump(mode="json"), indent=2, ensure_ascii=False)
    return "\n" + textwrap.indent(item, "    ")


def _write_json(out: IO[str], head: dict[str, Any], items: Iterable[str]) -> None:
    """The JSON document (`head` with its `events`, indented by 2), a text of one or more
    events at a time (`_event_item`'s, separated by commas): the text `json.dumps` of the
    whole document would write, character for character."""
    text = json.dumps({**head, "events": []}, indent=2, ensure_ascii=False)
    out.write(text.removesuffix("[]\n}") + "[")
    written = False
    for item in items:
        out.write(("," if written else "") + item)
        written = True
    out.write("\n  ]\n}\n" if written else "]\n}\n")


def _markdown_notes(notes: Sequence[dict[str, Any]]) -> list[str]:
    """The run's annotations (`workbench note`), one bullet each; nothing when it has none."""
    if not notes:
        return []
    lines = ["", "## Annotations", ""]
    for note in notes:
        where = annotation_target(note["turn"], note["call_id"])
        what = [f"`{label}`" for label in note["labels"]]
        what += [f"{name}={value:g}" for name, value in note["scores"].items()]
        text = f" — {note['text']}" if note["text"] else ""
        lines.append(f"- **{where}** ({note['author']}): {' · '.join(what) or '(note)'}{text}")
    return lines


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
    lines = _markdown_head(chain, timeline.end_ms)
    figures = {turn.turn: turn for turn in timeline.turns}
    for turn in chain.turns:
        lines += _markdown_turn(turn, figures.get(turn.turn))
    return lines + _markdown_end(chain)


def _markdown_head(chain: RunChain, duration_ms: float) -> list[str]:
    """The run's summary, task, system prompt and fork edits."""
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
            ("duration", short_ms(duration_ms)),
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
    return lines


def _markdown_end(chain: RunChain) -> list[str]:
    end = chain.end
    lines = ["## End", ""]
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
            f"{short_ms(figures.duration_ms)}"
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
