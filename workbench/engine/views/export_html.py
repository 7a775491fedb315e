"""A run as one self-contained HTML page (`workbench export RUN --format html`), to attach
to an issue or a PR: the run's summary, task and tool schemas, the decision chain as a
tree of `<details>` (a turn, its tool calls with their arguments and results, its calls
on a timeline bar), how it ended, and its annotations.

The page asks for nothing: no font, script, style or image from anywhere, and its
Content-Security-Policy forbids every request (`default-src 'none'`) and every script but
its own (by hash), so even text that slipped past the escaping could not run or call out.
Every text of the trace is escaped (`html.escape`); none is placed inside a script or a
style. It is written in three parts, as the Markdown export is, so that a stored run is
written a window of turns at a time (`export.write_stored`): `html_head`, `html_turn` for
each turn, `html_tail`.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Sequence
from html import escape
from typing import Any

from traces.annotations import annotation_target
from traces.text import short_ms
from traces.tree import RunChain, ToolCallNode, TurnNode, answer_label
from workbench.engine.views.timeline import Span, TurnTimeline

# Longer texts are cut (a page of megabytes is no attachment); JSON keeps everything.
HTML_TEXT_LIMIT = 20_000

_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em auto; max-width: 75em;
  padding: 0 1em; color: #1f2328; background: #fff; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
h4 { margin: .6em 0 .2em; font-size: .9em; color: #59636e; }
code, pre { font: 12.5px/1.4 ui-monospace, monospace; }
pre { background: #f6f8fa; padding: .6em; overflow: auto; white-space: pre-wrap;
  word-break: break-word; margin: .2em 0; max-height: 40em; }
table.summary td { padding: .1em 1em .1em 0; vertical-align: top; }
details { margin: .25em 0; } summary { cursor: pointer; }
details.turn { border: 1px solid #d1d9e0; border-radius: 6px; padding: .3em .6em; }
details.tool { border-left: 3px solid #d1d9e0; padding-left: .6em; }
.body { padding: .2em 0 .4em 1em; }
.muted { color: #59636e; }
.ok { color: #1a7f37; } .bad { color: #cf222e; } .other { color: #9a6700; }
.track { display: inline-block; position: relative; width: 12em; height: .7em;
  background: #eef1f4; vertical-align: middle; margin-left: .5em; }
.track > span { position: absolute; top: 0; bottom: 0; min-width: 1px; background: #0969da; }
.track > span.failed { background: #cf222e; } .track > span.tool { background: #8250df; }
.spans td { padding: 0 .8em 0 0; white-space: nowrap; }
.spans .track { width: 30em; }
"""
_SCRIPT = (
    "for (const b of document.querySelectorAll('button[data-open]')) "
    "b.addEventListener('click', () => { for (const d of document.querySelectorAll("
    "'details')) d.open = b.dataset.open === '1'; });"
)
_SCRIPT_HASH = base64.b64encode(hashlib.sha256(_SCRIPT.encode()).digest()).decode()
# No request of any kind; the one script is ours; styles are inline.
CONTENT_POLICY = (
    f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{_SCRIPT_HASH}'; "
    "base-uri 'none'; form-action 'none'"
)


def html_head(chain: RunChain, duration_ms: float) -> list[str]:
    """The page up to its first turn: summary, task, system prompt, fork edits, tools."""
    start, end = chain.start, chain.end
    lines = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_POLICY}">',
        '<meta name="referrer" content="no-referrer">',
        f"<title>Run {_e(chain.run_id)}</title>",
        f"<style>{_STYLE}</style>",
        "</head><body>",
        f"<h1>Run <code>{_e(chain.run_id)}</code></h1>",
    ]
    rows = [("status", _status(chain.status))]
    if start is not None:
        rows += [("model", _e(start.model)), ("tools offered", str(len(start.tools)))]
        if start.parent_run_id:
            fork = f"<code>{_e(start.parent_run_id)}</code> at turn {_e(str(start.fork_turn))}"
            rows.append(("fork of", fork))
    if end is not None:
        totals = end.totals
        rows += [
            ("turns", str(totals.turns)),
            ("tokens", f"{totals.input_tokens} in / {totals.output_tokens} out"),
        ]
    rows.append(("duration", short_ms(duration_ms)))
    lines.append('<table class="summary">')
    lines += [f"<tr><td class=muted>{key}</td><td>{value}</td></tr>" for key, value in rows]
    lines.append("</table>")
    if start is not None:
        lines += ["<h2>Task</h2>", _pre(start.task)]
        if start.system_prompt:
            lines += ["<details><summary>System prompt</summary>", _pre(start.system_prompt)]
            lines.append("</details>")
        for edit in start.edits:
            target = f" <code>{_e(edit.target)}</code>" if edit.target else ""
            value = edit.value if isinstance(edit.value, str) else json.dumps(edit.value)
            lines += [f"<h4>Fork edit: {_e(edit.kind)}{target}</h4>", _pre(value)]
        lines += _tool_schemas(start.tools)
    lines += [
        "<h2>Decision chain</h2>",
        '<p><button type="button" data-open="1">open all</button> '
        '<button type="button" data-open="0">close all</button></p>',
    ]
    return lines


def html_turn(turn: TurnNode, figures: TurnTimeline | None, duration_ms: float) -> list[str]:
    """One turn as a `<details>`: its summary line with its place on the run's timeline,
    then what the model said, each tool call (a `<details>` of its own), what was asked
    for and not run, its errors and its calls on the timeline."""
    status = turn.status
    summary = [f"Turn {turn.turn}", _status(status)]
    if figures is not None:
        summary.append(
            f"<span class=muted>{figures.input_tokens} in / {figures.output_tokens} out "
            f"tokens, {short_ms(figures.duration_ms)}</span>"
        )
    names = ", ".join(_e(tool.name) for tool in turn.tool_calls)
    if names:
        summary.append(f"<span class=muted>→ {names}</span>")
    where = _track([(figures.start_ms, figures.end_ms, "")], duration_ms) if figures else ""
    opened = " open" if status in ("error", "tool_error") else ""
    lines = [f'<details class="turn"{opened}><summary>{" · ".join(summary)}{where}</summary>']
    lines.append('<div class="body">')
    for call in turn.model_calls:
        if call.error is not None:
            error = call.error
            lines.append(
                f"<p class=bad>model attempt {call.attempt} failed: "
                f"{_e(error.kind)}: {_e(error.message)}</p>"
            )
    response = turn.response
    content = response.message.get("content") if response is not None else None
    if isinstance(content, str) and content:
        lines += ["<h4>Assistant</h4>", _pre(content)]
    for tool in turn.tool_calls:
        lines += _tool_call(tool)
    for asked in turn.calls_not_run:
        function = asked.get("function") or {}
        lines += [
            f"<details class=tool><summary>tool <code>{_e(str(function.get('name', '?')))}"
            f"</code> <code class=muted>{_e(str(asked.get('id', '?')))}</code> · "
            "<span class=other>not run</span></summary>",
            "<h4>Arguments</h4>",
            _pre(str(function.get("arguments") or "")),
            "</details>",
        ]
    for error in turn.errors:
        lines.append(
            f"<p class=bad>error ({_e(error.where)}): {_e(error.kind)}: {_e(error.message)}</p>"
        )
    if figures is not None and figures.spans:
        lines += _spans(figures.spans, duration_ms)
    lines += ["</div>", "</details>"]
    return lines


def html_tail(chain: RunChain, notes: Sequence[dict[str, Any]]) -> list[str]:
    """How the run ended, its annotations (`workbench note`; none: no section), the end."""
    end = chain.end
    lines = ["<h2>End</h2>"]
    if end is None:
        lines.append(
            f"<p>{_status('incomplete')}: the trace has no run_end (the run was killed or "
            "is running)</p>"
        )
    else:
        layer = f" ({_e(end.timeout_layer)})" if end.timeout_layer else ""
        reason = f": {_e(end.reason)}" if end.reason else ""
        lines.append(f"<p>{_status(end.status)}{layer}{reason}</p>")
        if end.final_answer:
            label = answer_label(end.status)
            lines += [f"<h4>{_e(label[0].upper() + label[1:])}</h4>", _pre(end.final_answer)]
    if notes:
        lines += ["<h2>Annotations</h2>", "<ul>"]
        for note in notes:
            where = annotation_target(note["turn"], note["call_id"])
            what = [f"<code>{_e(label)}</code>" for label in note["labels"]]
            what += [f"{_e(name)}={value:g}" for name, value in note["scores"].items()]
            text = f" — {_e(note['text'])}" if note["text"] else ""
            lines.append(
                f"<li><b>{_e(where)}</b> ({_e(note['author'])}): "
                f"{' · '.join(what) or '(note)'}{text}</li>"
            )
        lines.append("</ul>")
    lines += [f"<script>{_SCRIPT}</script>", "</body></html>"]
    return lines


def _e(text: str | None) -> str:
    return escape(text or "", quote=True)


def _pre(text: str) -> str:
    if len(text) > HTML_TEXT_LIMIT:
        cut = len(text) - HTML_TEXT_LIMIT
        text = text[:HTML_TEXT_LIMIT] + f"\n… ({cut} more characters)"
    return f"<pre>{_e(text)}</pre>"


def _status(status: str) -> str:
    kind = "ok" if status in ("ok", "completed") else "other" if status == "running" else "bad"
    return f'<b class="{kind}">{_e(status)}</b>'


def _track(spans: Sequence[tuple[float, float, str]], total_ms: float) -> str:
    """A bar of the run's length with each (start, end, class) span placed on it."""
    total = max(total_ms, 1.0)
    parts = []
    for start, end, kind in spans:
        left = min(max(start / total, 0.0), 1.0) * 100
        width = min(max((end - start) / total, 0.0), 1.0 - left / 100) * 100
        style = f"left:{left:.2f}%;width:{width:.2f}%"
        parts.append(f'<span class="{kind}" style="{style}"></span>')
    return f'<span class="track">{"".join(parts)}</span>'


def _spans(spans: Sequence[Span], duration_ms: float) -> list[str]:
    lines = ["<h4>Timeline</h4>", '<table class="spans">']
    for span in spans:
        kind = span.kind + ("" if span.ok else " failed")
        mark = "" if span.ok else " <span class=bad>✗</span>"
        lines.append(
            f"<tr><td>{'∥ ' * bool(span.lane)}{_e(span.label)}{mark}</td>"
            f"<td>{_track([(span.start_ms, span.end_ms, kind)], duration_ms)}</td>"
            f"<td class=muted>{short_ms(span.duration_ms)}</td></tr>"
        )
    lines.append("</table>")
    return lines


def _tool_call(tool: ToolCallNode) -> list[str]:
    end = tool.end
    outcome = tool.outcome
    status = (
        _status(tool.status)
        if outcome in ("ok", "error", "running")
        else (f"{_status(tool.status)} <span class=other>{_e(outcome)}</span>")
    )
    if end is not None and end.error:
        status += f" <span class=bad>{_e(end.error)}</span>"
    took = f" · {short_ms(end.duration_ms)}" if end is not None else ""
    arguments = tool.start.arguments
    shown = (
        json.dumps(arguments, indent=2, ensure_ascii=False)
        if arguments is not None
        else tool.start.arguments_raw
    )
    opened = " open" if tool.status == "error" else ""
    lines = [
        f"<details class=tool{opened}><summary>tool <code>{_e(tool.name)}</code> "
        f"<code class=muted>{_e(tool.call_id)}</code> · {status}{took}</summary>",
        "<h4>Arguments</h4>",
        _pre(shown),
    ]
    if end is not None:
        lines += ["<h4>Result</h4>", _pre(end.result)]
    lines.append("</details>")
    return lines


def _tool_schemas(tools: Sequence[dict[str, Any]]) -> list[str]:
    """The tools offered, each a `<details>` of its description and JSON schema."""
    if not tools:
        return []
    lines = [f"<details><summary>Tool schemas ({len(tools)})</summary>"]
    for tool in tools:
        function = tool.get("function") if isinstance(tool.get("function"), dict) else tool
        assert isinstance(function, dict)
        name = str(function.get("name", "?"))
        description = str(function.get("description") or "")
        lines += [
            f"<details class=tool><summary><code>{_e(name)}</code> "
            f"<span class=muted>{_e(description.splitlines()[0] if description else '')}"
            "</span></summary>",
            _pre(json.dumps(tool, indent=2, ensure_ascii=False)),
            "</details>",
        ]
    lines.append("</details>")
    return lines
