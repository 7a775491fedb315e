"""The one door from the TUI to the store and the engine.

Screens call these methods from thread workers only. Each is a direct call into
`traces.store` or `workbench.engine`; the TUI adds no logic of its own. Engine features
that are not importable yet raise `NotAvailable`, which the app shows as a notification.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from traces.events import Event
from workbench.tui.render import event_is_failure


class NotAvailable(Exception):
    """An engine feature this build does not have; shown as one line, never a crash."""


@dataclass(frozen=True)
class RunFilter:
    text: str = ""
    status: str | None = None
    failed_only: bool = False

    def kwargs(self) -> dict[str, Any]:
        return {"text": self.text or None, "status": self.status, "failed_only": self.failed_only}


@dataclass(frozen=True)
class Outline:
    row: Any  # the store's RunRow
    start: Event | None
    end: Event | None
    turns: int
    events: int


def _engine(module: str, name: str) -> Any:
    try:
        found = importlib.import_module(f"workbench.engine.{module}")
    except ModuleNotFoundError as exc:
        raise NotAvailable(f"{module} is not available in this build yet") from exc
    function = getattr(found, name, None)
    if function is None:
        raise NotAvailable(f"engine {module}.{name} is not available in this build yet")
    return function


class Backend:
    def __init__(self, home: Path) -> None:
        self.home = home
        self._store: Any = None

    @property
    def store(self) -> Any:
        if self._store is None:
            from traces.store import TraceStore

            self._store = TraceStore.for_home(self.home)
        return self._store

    def ingest(self) -> Any:
        """Load new traces from the home folder (every read starts with this)."""
        return self.store.ingest_home(self.home)

    # ------------------------------------------------------------------ runs

    def count_runs(self, where: RunFilter) -> int:
        return int(self.store.count_runs(**where.kwargs()))

    def runs(self, where: RunFilter, offset: int, limit: int) -> list[Any]:
        return list(self.store.runs(**where.kwargs(), limit=limit, offset=offset))

    def run(self, run_id: str) -> Any:
        return self.store.run(run_id)

    # ------------------------------------------------------------------ events

    def count_events(self, run_id: str) -> int:
        return int(self.store.count_events(run_id))

    def events(
        self, run_id: str, offset: int = 0, limit: int = 200, types: list[str] | None = None
    ) -> list[Event]:
        return list(self.store.events(run_id, offset=offset, limit=limit, types=types))

    def event(self, run_id: str, seq: int) -> Event | None:
        found = self.events(run_id, offset=seq, limit=1)
        return found[0] if found else None

    def turn_events(self, run_id: str, turn: int, types: list[str]) -> list[Event]:
        """One turn's events of the given types, without reading the rest of the run.

        Events are in seq order and turns only grow with seq, so the turn's first event is
        found by bisecting on single-event pages; then pages are read until the turn ends.
        """

        def turn_at(index: int) -> float:
            found = self.events(run_id, index, 1, types)
            if not found:
                return float("inf")
            event = found[0]
            if event.turn is not None:
                return event.turn
            return 0 if event.type == "run_start" else float("inf")

        low, high = 0, self.count_events(run_id)
        while low < high:
            middle = (low + high) // 2
            if turn_at(middle) < turn:
                low = middle + 1
            else:
                high = middle
        collected: list[Event] = []
        page = 200
        while True:
            found = self.events(run_id, low, page, types)
            for event in found:
                if event.turn != turn:
                    return collected
                collected.append(event)
            if len(found) < page:
                return collected
            low += page

    def outline(self, run_id: str) -> Outline:
        """What a run screen shows before anything is expanded: header row, first and last event."""
        row = self.store.run(run_id)
        if row is None:
            raise LookupError(
                f"run {run_id} is not in the store; press g on the runs screen to reload"
            )
        total = self.count_events(run_id)
        first = self.events(run_id, 0, 1)
        tail = self.events(run_id, max(total - 3, 0), 3)
        end = tail[-1] if tail and tail[-1].type == "run_end" else None
        last_turn = max((e.turn for e in tail if e.turn is not None), default=0)
        turns = max(int(row.turns or 0), last_turn)
        return Outline(row, first[0] if first else None, end, turns, total)

    def first_failure(self, run_id: str) -> Event | None:
        """The first error, failed tool call or unparsable arguments; else a non-completed end."""
        types = ["error", "tool_start", "tool_end", "run_end"]
        offset, page = 0, 500
        while True:
            found = self.events(run_id, offset, page, types)
            for event in found:
                if event_is_failure(event):
                    return event
            if len(found) < page:
                return None
            offset += page

    def tool_schemas(self, run_id: str) -> Any:
        return self.store.tool_schemas(run_id)

    # ------------------------------------------------------------------ engine

    def recording(self, run_id: str) -> Any:
        return _engine("recording_io", "load_recording")(run_id, self.home)

    def schema_diff(self, run_a: str, run_b: str) -> Any:
        """Both runs' tool schemas from the store and `traces.schema_diff` of them."""
        from traces.schema_diff import diff_tool_schemas
        from workbench.tui.schema_view import SchemaPair

        tools_a, tools_b = self.tool_schemas(run_a), self.tool_schemas(run_b)
        return SchemaPair(run_a, run_b, tools_a, tools_b, diff_tool_schemas(tools_a, tools_b))

    def chain_diff(self, run_a: str, run_b: str) -> Any:
        """`workbench.engine.diff.ChainDiff`: the decision chains aligned by turn."""
        diff_chains = _engine("diff", "diff_chains")
        return diff_chains(self.recording(run_a), self.recording(run_b))

    def verify_replay(self, run_id: str) -> Any:
        """`workbench.engine.replay.ReplayOutcome` of an offline replay, run to completion.

        Called from a thread worker, so the replay gets its own event loop there.
        """
        replay_run = _engine("replay", "replay_run")
        recording = self.recording(run_id)
        return asyncio.run(replay_run(recording, pace="fast"))

    # ------------------------------------------------------------------ fork

    def fork_context(self, run_id: str, turn: int) -> ForkContext:
        """What the fork dialog pre-fills: the history the parent sent at `turn`."""
        recording = self.recording(run_id)
        turns = list(recording.model_turns)
        record = recording.turns.get(turn)
        request = record.request if record is not None else None
        messages = list(request.messages) if request is not None else []
        system = next((m.get("content") for m in messages if m.get("role") == "system"), None)
        users = [m.get("content") for m in messages if m.get("role") == "user"]
        mockable = set(_engine("fork", "mockable_call_ids")(messages))
        calls = [
            RecordedCall(
                n, start.call_id, start.name, start.arguments_raw, end.result if end else ""
            )
            for n, start, end in recording.tool_calls()
            if start.call_id in mockable
        ]
        tools = {
            str((t.get("function") or {}).get("name")): str(
                (t.get("function") or {}).get("description") or ""
            )
            for t in recording.run_start.tools
        }
        return ForkContext(
            run_id=recording.run_id,
            turn=turn,
            turns=turns,
            system=system if isinstance(system, str) else recording.run_start.system_prompt,
            user=users[-1] if users and isinstance(users[-1], str) else None,
            tools=tools,
            calls=calls,
        )

    def run_fork(
        self, run_id: str, request: Any, endpoint: Endpoint, on_item: Callable[[Any], None]
    ) -> Any:
        """Run a fork to its end in this (worker) thread, recording it in the home folder.

        `request` is a `workbench.engine.fork.ForkRequest`; every streamed item (trace events
        and text deltas) goes to `on_item` as it happens. Returns the agent's `RunResult`.
        """
        from traces.home import traces_dir
        from traces.redact import Redactor
        from traces.writer import JsonlWriter
        from workbench.cli.common import CliError
        from workbench.cli.model_flags import build_model

        plan = _engine("fork", "plan_fork")(self.recording(run_id), request)
        try:
            model = build_model(endpoint.namespace(), plan.parent.run_start.limits)
        except CliError as exc:
            raise NotAvailable(str(exc)) from None
        fork_agent = _engine("fork", "fork_agent")
        config = plan.config()
        writer = JsonlWriter(
            traces_dir(self.home), config.run_id, Redactor([endpoint.api_key or ""])
        )
        agent = fork_agent(plan, model, sinks=[writer], run_id=config.run_id)

        async def drive() -> None:
            async for item in agent.run_stream():
                on_item(item)

        try:
            asyncio.run(drive())
        finally:
            writer.close()
        self.ingest()
        return agent.result


@dataclass(frozen=True)
class RecordedCall:
    turn: int
    call_id: str
    name: str
    arguments: str
    result: str


@dataclass(frozen=True)
class ForkContext:
    run_id: str
    turn: int
    turns: list[int]
    system: str | None
    user: str | None
    tools: dict[str, str]
    calls: list[RecordedCall]


@dataclass(frozen=True)
class Endpoint:
    """The model a fork talks to, as `workbench.cli.model_flags` reads it from flags/env."""

    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None
    script: str | None = None

    def namespace(self) -> Any:
        import argparse
        from pathlib import Path

        return argparse.Namespace(
            base_url=self.base_url or None,
            model=self.model or None,
            api_key=self.api_key or None,
            script=Path(self.script) if self.script else None,
            no_stream=False,
        )

    @classmethod
    def from_settings(cls, args: Any) -> Endpoint:
        from workbench.cli.model_flags import model_settings

        found = model_settings(args)
        return cls(
            found.base_url, found.model, found.api_key, str(found.script) if found.script else None
        )
