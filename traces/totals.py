"""The running totals of a run: summed while it goes, written once as `run_end.totals`.

Every writer of runs counts with this one type: the agent loop, the MCP sessions, the
OpenTelemetry import and the proxy's capture."""

from __future__ import annotations

from dataclasses import dataclass

from traces.events import Totals


@dataclass
class RunningTotals:
    turns: int = 0
    model_calls: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0

    def add_model_call(
        self, input_tokens: int = 0, output_tokens: int = 0, total_tokens: int | None = None
    ) -> None:
        """One model call and its usage; the total is the two added unless given."""
        self.model_calls += 1
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        self.total_tokens += input_tokens + output_tokens if total_tokens is None else total_tokens

    def add_tool_call(self, ok: bool) -> None:
        self.add_tool_calls(1, 0 if ok else 1)

    def add_tool_calls(self, count: int, failed: int = 0) -> None:
        """`count` tool calls at once (a client's results read together), `failed` of them
        failed."""
        self.tool_calls += count
        self.tool_errors += failed

    def totals(self, duration_ms: float) -> Totals:
        """The totals as `run_end` carries them, for a run that took `duration_ms`."""
        return Totals(
            turns=self.turns,
            model_calls=self.model_calls,
            tool_calls=self.tool_calls,
            tool_errors=self.tool_errors,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            total_tokens=self.total_tokens,
            duration_ms=duration_ms,
        )
