"""Live terminal output for an agent run: streamed text, one line per tool start and end,
and a closing line with the run id and status. Before the first turn: a warning naming the
tools left out (over max_tools) and a note on tools renamed to resolve a name clash."""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from agent_core.agent import RunResult, TextDelta
from agent_core.model.base import ERROR_TEXT_CHARS
from traces.events import Error, HistoryTrimmed, RunStart, ToolEnd, ToolsChanged, ToolStart
from traces.text import one_line
from workbench.cli.common import counted

PREVIEW_CHARS = 100


def _preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    return one_line(text, limit)


class RunPrinter:
    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self._mid_line = False

    def _line(self, text: str) -> None:
        if self._mid_line:
            self.out.write("\n")
            self._mid_line = False
        self.out.write(text + "\n")
        self.out.flush()

    def item(self, item: Any) -> None:
        if isinstance(item, RunStart):
            self._offered(item.renamed_tools, item.tools_dropped, item.limits.max_tools)
        elif isinstance(item, ToolsChanged):
            change = [f"+{name}" for name in item.added] + [f"-{name}" for name in item.removed]
            self._line(
                f"  ⟳ tools of {item.source} changed ({' '.join(change) or 'descriptions'}); "
                f"{len(item.tools)} offered from this turn"
            )
            self._offered({}, item.dropped, len(item.tools))
        elif isinstance(item, TextDelta):
            self.out.write(item.text)
            self.out.flush()
            self._mid_line = not item.text.endswith("\n")
        elif isinstance(item, ToolStart):
            arguments = (
                json.dumps(item.arguments, ensure_ascii=False)
                if item.arguments is not None
                else item.arguments_raw
            )
            self._line(f"  → {item.name} {_preview(arguments)}")
        elif isinstance(item, ToolEnd):
            state = "ok" if item.ok else "error"
            note = " (truncated)" if item.truncated else ""
            self._line(
                f"  ← {item.name} {state} {item.duration_ms:.0f} ms{note}: {_preview(item.result)}"
            )
        elif isinstance(item, HistoryTrimmed):
            self._line(
                f"  ✂ history trimmed: {item.rounds_dropped} rounds folded, "
                f"~{item.tokens_before} → ~{item.tokens_after} tokens"
            )
        elif isinstance(item, Error):
            # A model error is shown whole (up to the cap): the server's text names the cause,
            # and the client's message ends with what it decided (retrying, or why not).
            limit = ERROR_TEXT_CHARS + 300 if item.where == "model" else PREVIEW_CHARS
            self._line(f"  ! {item.where} {item.kind}: {_preview(item.message, limit)}")

    def _offered(self, renamed: dict[str, str], dropped: list[str], max_tools: int) -> None:
        if renamed:
            names = ", ".join(f"{name} (its own name: {own})" for name, own in renamed.items())
            self._line(f"  note: renamed to avoid a name clash: {names}")
        if dropped:
            self._line(
                f"  warning: {counted(len(dropped), 'tool')} not offered "
                f"(at most {max_tools} per request; raise it with --max-tools): "
                + ", ".join(dropped)
            )

    def summary(
        self, result: RunResult, trace: str, cost: str = "", *, cut: str | None = None
    ) -> None:
        """The run's end in one line; `cost` (e.g. `$0.0123`) follows the tokens. A run
        whose trace was `cut` (why: a full disk) shows as incomplete, as its trace reads."""
        totals = result.totals
        layer = f" ({result.timeout_layer})" if result.timeout_layer else ""
        priced = f" ({cost})" if cost else ""
        status, reason = (
            (f"{result.status}{layer}", result.reason)
            if cut is None
            else ("incomplete", f"its trace could not be written whole ({cut})")
        )
        self._line(
            f"run {result.run_id}: {status} — {reason} · "
            f"{counted(totals.turns, 'turn')}, {counted(totals.tool_calls, 'tool call')}, "
            f"{counted(totals.total_tokens, 'token')}{priced} · trace {trace}"
        )
