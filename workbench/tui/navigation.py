"""Where a screen asks to go: messages it posts, which bubble up to the App, the one place
that opens screens ("attributes down, messages up"). A screen never imports another screen
or the App to move on.

    self.post_message(OpenRun(run_id, jump_to_error=True))
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.message import Message
from textual.widget import Widget

if TYPE_CHECKING:
    from traces.store import RunQuery


class OpenRun(Message):
    """Open a run's decision chain, at its first failure when asked, or at `step`: (turn,
    seq) of an event, seq None for the run's end."""

    def __init__(
        self,
        run_id: str,
        *,
        jump_to_error: bool = False,
        step: tuple[int | None, int | None] | None = None,
    ) -> None:
        super().__init__()
        self.run_id = run_id
        self.jump_to_error = jump_to_error
        self.step = step


class OpenRunGroup(Message):
    """Compare N runs side by side: every run of `task_of`'s task, or the runs `run_ids`."""

    def __init__(self, *, task_of: str | None = None, run_ids: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.task_of = task_of
        self.run_ids = run_ids


class OpenReplay(Message):
    """Step through a run from event `seq`; `verify` re-executes it offline first."""

    def __init__(self, run_id: str, seq: int = 0, *, verify: bool = False) -> None:
        super().__init__()
        self.run_id = run_id
        self.seq = seq
        self.verify = verify


class OpenSchemaDiff(Message):
    """Compare two runs' tool schemas."""

    def __init__(self, run_a: str, run_b: str) -> None:
        super().__init__()
        self.run_a = run_a
        self.run_b = run_b


class OpenCompare(Message):
    """Compare two runs' decision chains side by side."""

    def __init__(self, run_a: str, run_b: str) -> None:
        super().__init__()
        self.run_a = run_a
        self.run_b = run_b


class OpenRegressions(Message):
    """Show the stored regression suite runs."""


class OpenOverview(Message):
    """Show runs, failures, tokens, cost and latency by day and by model."""


class OpenFailureGroup(Message):
    """List the runs of one failure group (`workbench failures`), by its signature."""

    def __init__(self, signature: str) -> None:
        super().__init__()
        self.signature = signature


class OpenTimeline(Message):
    """Show a run's timeline; `tokens`, the whole run's in and out, when known already."""

    def __init__(self, run_id: str, tokens: tuple[int, int] | None = None) -> None:
        super().__init__()
        self.run_id = run_id
        self.tokens = tokens


class OpenSession(Message):
    """Show a session's runs in order, with its totals."""

    def __init__(self, session: str) -> None:
        super().__init__()
        self.session = session


def open_session_of(screen: Widget, session: str | None) -> None:
    """Show the session a run is part of, or say that it is part of none."""
    if session is None:
        screen.notify(
            "This run is part of no session (`workbench run --session`, the proxy's "
            "X-Workbench-Session header or a coding agent's session make one)."
        )
        return
    screen.post_message(OpenSession(session))


class OpenFork(Message):
    """Open the fork dialog on a run at `turn`, with `mock_call`'s result to edit."""

    def __init__(self, run_id: str, turn: int, *, mock_call: str | None = None) -> None:
        super().__init__()
        self.run_id = run_id
        self.turn = turn
        self.mock_call = mock_call


class OpenReview(Message):
    """Review the runs `query` lists, one at a time; `name` says which in words (and is
    what the queue's position is remembered by)."""

    def __init__(self, query: RunQuery, name: str) -> None:
        super().__init__()
        self.query = query
        self.name = name
