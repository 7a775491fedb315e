"""What a fork would do, before it does anything: the dry run of `workbench fork --dry-run`
and of the TUI's fork dialog.

    dry = dry_run(plan, live_toolsets=[builtin_tools(root)])
    for line in dry.lines(): print(line)

The turns before the fork turn are served from the log (no model call, no tool call); the
fork turn's history is sent with the edits applied; each tool gets its side-effect policy,
and the plan says whether a new call to it would fire live. Nothing is run or written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent_core.tools.base import Toolset
from workbench.engine.recording.fork.plan import ForkPlan, ForkToolset
from workbench.engine.recording.runs.parent import PrefixTurn

# A longer prefix is named on its line by its first and last few turns (the JSON lists all).
PREFIX_NAMED = 3


@dataclass(frozen=True)
class PlannedTool:
    name: str
    source: str
    policy: str
    why: str
    fires_live: bool  # would a call the recording has no result for run for real
    recorded_results: int  # calls of this tool the parent recorded a result for
    available_live: bool  # a live toolset has it here (else a live call is `unavailable`)

    @property
    def effect(self) -> str:
        if self.policy == "deny":
            return "refused"
        if self.policy == "mock":
            return "mocked"
        if self.fires_live:
            return "new calls fire live" if self.available_live else "new calls unavailable"
        return "recorded only"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "source": self.source,
            "policy": self.policy,
            "why": self.why,
            "fires_live": self.fires_live and self.available_live,
            "recorded_results": self.recorded_results,
            "available_live": self.available_live,
            "effect": self.effect,
        }


@dataclass(frozen=True)
class DryRun:
    parent_run_id: str
    turn: int
    prefix: list[PrefixTurn]  # every turn before the fork turn, or its first and last few
    messages: int  # in the history sent at the fork turn
    edits: list[str]
    tools: list[PlannedTool]
    model: str | None = None
    notes: list[str] = field(default_factory=list)
    prefix_turns: int | None = None  # how many turns come before it: None, as many as prefix

    @property
    def served_turns(self) -> int:
        """How many turns are served from the log."""
        return len(self.prefix) if self.prefix_turns is None else self.prefix_turns

    @property
    def fires_live(self) -> list[str]:
        return [t.name for t in self.tools if t.fires_live and t.available_live]

    def to_json(self) -> dict[str, Any]:
        return {
            "dry_run": True,
            "parent_run_id": self.parent_run_id,
            "fork_turn": self.turn,
            "model": self.model,
            "prefix": [
                {"turn": p.turn, "model_calls": p.model_calls, "tool_calls": p.tool_calls}
                for p in self.prefix
            ],
            "messages": self.messages,
            "edits": self.edits,
            "tools": [tool.to_json() for tool in self.tools],
            "fires_live": self.fires_live,
            "notes": self.notes,
        } | ({"prefix_turns": self.served_turns} if self.served_turns > len(self.prefix) else {})

    def lines(self) -> list[str]:
        out = [
            f"dry run: fork of run {self.parent_run_id[:12]} at turn {self.turn} "
            "(nothing run, nothing written)"
        ]
        if self.prefix:
            named = [_prefix_turn(p) for p in self.prefix]
            if self.served_turns > 3 * PREFIX_NAMED:
                left = self.served_turns - 2 * PREFIX_NAMED
                named[PREFIX_NAMED:-PREFIX_NAMED] = [f"… {left:,} turns more …"]
            out.append(f"  served from the log, not run again: turn {', '.join(named)}")
        else:
            out.append("  served from the log: nothing (the fork starts at the first turn)")
        edits = f"; edits: {', '.join(self.edits)}" if self.edits else "; no edits"
        out.append(f"  turn {self.turn} is sent with {self.messages} messages{edits}")
        if self.model:
            out.append(f"  model: {self.model}")
        if self.tools:
            width = max(len(t.name) for t in self.tools)
            out.append(f"  {'tool':<{width}}  {'policy':<8}  {'new calls':<22}  why")
            for t in self.tools:
                recorded = f"; {t.recorded_results} recorded" if t.recorded_results else ""
                out.append(f"  {t.name:<{width}}  {t.policy:<8}  {t.effect:<22}  {t.why}{recorded}")
        live = ", ".join(self.fires_live) or "none"
        out.append(f"  tools that may fire live: {live}")
        out += [f"  note: {note}" for note in self.notes]
        return out


def _prefix_turn(turn: PrefixTurn) -> str:
    calls = f"{turn.model_calls} model call{'s' if turn.model_calls != 1 else ''}"
    tools = f"; {', '.join(turn.tool_calls)}" if turn.tool_calls else ""
    return f"{turn.turn} ({calls}{tools})"


def _edit_label(kind: str, target: str | None) -> str:
    return f"{kind} {target}" if target else kind


def dry_run(
    plan: ForkPlan,
    *,
    live_toolsets: list[Toolset] | None = None,
    model: str | None = None,
    notes: list[str] | None = None,
    whole_prefix: bool = True,
) -> DryRun:
    """The plan of a fork: its toolset is built as the real fork's would be, never called.
    Not `whole_prefix`: of a long prefix only the turns its lines name are read (a screen's
    plan of a fork late in a long run; `prefix_turns` counts them all)."""
    parent = plan.parent
    toolset = ForkToolset(plan, live_toolsets)
    prefix, served = parent.turns_before(plan.turn, None if whole_prefix else PREFIX_NAMED)
    counts = parent.result_counts()
    live_names = toolset.live_names()
    tools = [
        PlannedTool(
            name=spec.name,
            source=spec.source,
            policy=decision.policy,
            why=decision.why,
            fires_live=decision.fires_live,
            recorded_results=counts.get(spec.name, 0),
            available_live=spec.name in live_names,
        )
        for spec in toolset.specs()
        if (decision := toolset.decisions.get(spec.name)) is not None
    ]
    return DryRun(
        parent_run_id=parent.run_id,
        turn=plan.turn,
        prefix=prefix,
        messages=len(plan.messages),
        edits=[_edit_label(edit.kind, edit.target) for edit in plan.edits],
        tools=tools,
        model=model,
        notes=list(notes or []),
        prefix_turns=None if served == len(prefix) else served,
    )
