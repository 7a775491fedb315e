"""What a fork dialog holds and shows as text: the draft of the user's changes, the choices
of what to edit and which call to mock, the changes and the plan as lines (no Textual here,
so each is testable alone)."""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.text import Text

from workbench.engine.recording.fork.dry_run import DryRun
from workbench.engine.recording.fork.plan import ForkContext
from workbench.tui.render import one_line


@dataclass
class ForkDraft:
    """What the user changed in a fork dialog: edit key → text, call id → mocked result."""

    turn: int
    edits: dict[str, str] = field(default_factory=dict)  # "system", "user", "tool:NAME"
    mocks: dict[str, str] = field(default_factory=dict)

    def is_empty(self) -> bool:
        return not self.edits and not self.mocks


def edit_options(context: ForkContext) -> list[tuple[Text, str]]:
    # Text, not str: a Select reads a string prompt as markup, and tool names are the run's.
    options = [("system prompt", "system")]
    if context.user is not None:
        options.append(("last user message", "user"))
    options += [(f"tool description: {name}", f"tool:{name}") for name in context.tools]
    return [(Text(prompt), key) for prompt, key in options]


def recorded_text(context: ForkContext, key: str) -> str:
    """The text an edit key has in the parent, as sent at the fork turn."""
    if key == "system":
        return context.system or ""
    if key == "user":
        return context.user or ""
    return context.tools.get(key.removeprefix("tool:"), "")


def call_options(context: ForkContext) -> list[tuple[Text, str]]:
    return [
        (
            Text(
                f"turn {c.turn} · {c.name}({one_line(c.arguments, 30)}) → {one_line(c.result, 30)}"
            ),
            c.call_id,
        )
        for c in context.calls
    ]


def plan_text(plan: DryRun) -> Text:
    """The fork's plan (`fork --dry-run`) as the dialog shows it before anything runs:
    the lines of the dry run, each tool on a line of its own narrow enough for the form."""
    head = [line.strip() for line in plan.lines()[1:]]
    text = Text()
    text.append("plan: ", style="bold")
    text.append("\n".join(head[:2]) + "\n")
    styles = {"refused": "red", "mocked": "magenta", "recorded only": "cyan"}
    for tool in plan.tools:
        effect = tool.effect
        text.append(f"  {tool.name} ", style="bold")
        text.append(f"{tool.policy} · {effect}", style=styles.get(effect, "yellow"))
        text.append(f"  {tool.why}\n", style="dim")
    live = ", ".join(plan.fires_live) or "none"
    text.append(f"tools that may fire live: {live}", style="yellow" if plan.fires_live else "")
    for note in plan.notes:  # what the fork runner chose for the user, as every front end says
        text.append(f"\nnote: {note}", style="yellow")
    return text


def turns_text(turns: list[int]) -> str:
    """The turns a fork can start at, as a line can hold them (a long run has thousands)."""
    if len(turns) <= 12:
        return str(turns)
    return f"its {len(turns):,} model turns, {turns[0]} to {turns[-1]}"


def changes_text(draft: ForkDraft) -> Text:
    if draft.is_empty():
        return Text("no changes yet: the fork re-runs the turn as recorded", style="dim")
    names = [
        "system prompt" if key == "system" else "last user message" if key == "user" else key
        for key in draft.edits
    ]
    names += [f"result of {call_id}" for call_id in draft.mocks]
    return Text.assemble(("changes: ", "bold"), (" · ".join(names), "yellow"))
