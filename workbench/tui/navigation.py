"""Where a screen asks to go: messages it posts, which bubble up to the App, the one place
that opens screens ("attributes down, messages up"). A screen never imports another screen
or the App to move on.

    self.post_message(OpenRun(run_id, jump_to_error=True))
"""

from __future__ import annotations

from textual.message import Message


class OpenRun(Message):
    """Open a run's decision chain, at its first failure when asked."""

    def __init__(self, run_id: str, *, jump_to_error: bool = False) -> None:
        super().__init__()
        self.run_id = run_id
        self.jump_to_error = jump_to_error


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


class OpenFork(Message):
    """Open the fork dialog on a run at `turn`, with `mock_call`'s result to edit."""

    def __init__(self, run_id: str, turn: int, *, mock_call: str | None = None) -> None:
        super().__init__()
        self.run_id = run_id
        self.turn = turn
        self.mock_call = mock_call
