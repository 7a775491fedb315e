"""The one door from the TUI to the store and the engine.

Screens call these methods from thread workers only. Each is a direct call into
`traces.store` or `workbench.engine`; the TUI adds no logic of its own.

DuckDB lets one process at a time open the database, so the backend holds it only while it
is being used and lets go after a moment of idleness: `workbench runs`, `show` or `replay`
in another terminal then work while the TUI stays open.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from traces.events import Event
from traces.schema_diff import diff_tool_schemas
from traces.store import TraceStore
from workbench.engine import fork as fork_engine
from workbench.engine.diff import diff_chains
from workbench.engine.recording_io import load_recording
from workbench.engine.replay import replay_run
from workbench.tui.render import event_is_failure

# Seconds without a store call after which the database is let go for other processes.
IDLE_RELEASE_S = 1.0


class NotAvailable(Exception):
    """Something the user must set up first (a model endpoint, say); shown as a warning."""


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


class Backend:
    def __init__(self, home: Path, idle_release_s: float = IDLE_RELEASE_S) -> None:
        self.home = home
        self.idle_release_s = idle_release_s
        self._store: TraceStore | None = None
        self._lock = threading.RLock()
        self._release: threading.Timer | None = None
        self.released = threading.Event()  # set while the database is not held
        self.released.set()

    @contextmanager
    def _session(self) -> Iterator[TraceStore]:
        """The open store, opened on demand; let go once no call has used it for a while."""
        with self._lock:
            if self._release is not None:
                self._release.cancel()
                self._release = None
            if self._store is None:
                self._store = TraceStore.for_home(self.home)
                self.released.clear()
            try:
                yield self._store
            finally:
                self._release = threading.Timer(self.idle_release_s, self.release)
                self._release.daemon = True
                self._release.start()

    def release(self) -> None:
        """Close the database now (it reopens on the next call)."""
        with self._lock:
            if self._release is not None:
                self._release.cancel()
                self._release = None
            if self._store is not None:
                self._store.close()
                self._store = None
            self.released.set()

    def ingest(self) -> Any:
        """Load new traces from the home folder (every read starts with this)."""
        with self._session() as store:
            return store.ingest_home(self.home)

    # ------------------------------------------------------------------ runs

    def count_runs(self, where: RunFilter) -> int:
        with self._session() as store:
            return int(store.count_runs(**where.kwargs()))

    def runs(self, where: RunFilter, offset: int, limit: int) -> list[Any]:
        with self._session() as store:
            return list(store.runs(**where.kwargs(), limit=limit, offset=offset))

    def run(self, run_id: str) -> Any:
        with self._session() as store:
            return store.run(run_id)

    # ------------------------------------------------------------------ events

    def count_events(self, run_id: str) -> int:
        with self._session() as store:
            return int(store.count_events(run_id))

    def events(
        self, run_id: str, offset: int = 0, limit: int = 200, types: list[str] | None = None
    ) -> list[Event]:
        with self._session() as store:
            return list(store.events(run_id, offset=offset, limit=limit, types=types))

    def event(self, run_id: str, seq: int) -> Event | None:
        found = self.events(run_id, offset=seq, limit=1)
        return found[0] if found else None

    def turn_events(self, run_id: str, turn: int, types: list[str]) -> list[Event]:
        """One turn's events of the given types, without reading the rest of the run."""
        with self._session() as store:
            return list(store.events(run_id, types=types, turn=turn))

    def outline(self, run_id: str) -> Outline:
        """What a run screen shows before anything is expanded: header row, first and last event."""
        row = self.run(run_id)
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
        with self._session() as store:
            return store.tool_schemas(run_id)

    # ------------------------------------------------------------------ engine

    def recording(self, run_id: str) -> Any:
        # The engine opens the store itself; in one process DuckDB shares the open file.
        return load_recording(run_id, self.home)

    def schema_diff(self, run_a: str, run_b: str) -> Any:
        """Both runs' tool schemas from the store and `traces.schema_diff` of them."""
        from workbench.tui.schema_view import SchemaPair

        tools_a, tools_b = self.tool_schemas(run_a), self.tool_schemas(run_b)
        return SchemaPair(run_a, run_b, tools_a, tools_b, diff_tool_schemas(tools_a, tools_b))

    def chain_diff(self, run_a: str, run_b: str) -> Any:
        """`workbench.engine.diff.ChainDiff`: the decision chains aligned by turn."""
        return diff_chains(self.recording(run_a), self.recording(run_b))

    def verify_replay(self, run_id: str) -> Any:
        """`workbench.engine.replay.ReplayOutcome` of an offline replay, run to completion.

        Called from a thread worker, so the replay gets its own event loop there.
        """
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
        mockable = set(fork_engine.mockable_call_ids(messages))
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
        self, run_id: str, request: Any, endpoint: Endpoint, on_item: Callable[[Any], object]
    ) -> Any:
        """Run a fork to its end in this (worker) thread, recording it in the home folder.

        `request` is a `workbench.engine.fork.ForkRequest`; every streamed item (trace events
        and text deltas) goes to `on_item` as it happens. Returns the agent's `RunResult`.
        """
        from agent_core.tools.builtin import builtin_tools
        from traces.home import home_redactor, traces_dir
        from traces.writer import JsonlWriter
        from workbench.cli.common import CliError
        from workbench.cli.model_flags import build_model

        plan = fork_engine.plan_fork(self.recording(run_id), request)
        try:
            model = build_model(endpoint.namespace(), plan.parent.run_start.limits)
        except CliError as exc:
            raise NotAvailable(str(exc)) from None
        config = plan.config()
        writer = JsonlWriter(
            traces_dir(self.home), config.run_id, home_redactor(self.home, [endpoint.api_key])
        )
        # New read-only calls in the fork run live on the parent's tool folder, as recorded
        # (else the current folder, as `workbench fork` does by default).
        recorded_root = Path(str(plan.parent.run_start.meta.get("root") or "."))
        root = recorded_root if recorded_root.is_dir() else Path(".")
        agent = fork_engine.fork_agent(
            plan,
            model,
            live_toolsets=[builtin_tools(root)],
            sinks=[writer],
            run_id=config.run_id,
        )

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
