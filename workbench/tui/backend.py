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
from typing import TYPE_CHECKING, Any

from agent_core.agent import RunResult, TextDelta
from traces.events import Event, RunEnd
from traces.home import traces_dir
from traces.origins import RUN_KINDS
from traces.run_names import run_file_stem
from traces.schema_diff import diff_tool_schemas
from traces.store import IngestReport, RunRow, TraceStore
from workbench.engine.recording import fork as fork_engine
from workbench.engine.recording import run_service
from workbench.engine.recording.fork import ForkRequest
from workbench.engine.recording.load import Recording, load_recording
from workbench.engine.recording.replay import NotReplayable, ReplayOutcome, replay_run
from workbench.engine.recording.run_service import ModelSettings
from workbench.tui.render import event_is_failure
from workbench.tui.schema_view import SchemaPair

if TYPE_CHECKING:  # the screens' own view types; those modules load with their screens
    from traces.store.regress import RegressTables
    from workbench.engine.diff.text_changes import Comparison
    from workbench.engine.views.search import SearchHit
    from workbench.tui.regress_screen import SuiteRun
    from workbench.tui.timeline_screen import TimelineView

# Seconds without a store call after which the database is let go for other processes.
IDLE_RELEASE_S = 1.0


class NotAvailable(Exception):
    """Something the user must set up first (a model endpoint, say); shown as a warning."""


# The kind filter's choices: each run_start.origin value, and the usual pair together.
AGENT_AND_FORK = "agent and fork"
KIND_FILTERS: dict[str, tuple[str, ...]] = {
    AGENT_AND_FORK: ("agent", "fork"),
    **{origin: (origin,) for origin in RUN_KINDS},
}


@dataclass(frozen=True)
class RunFilter:
    text: str = ""
    status: str | None = None
    failed_only: bool = False
    kind: str | None = None  # a key of KIND_FILTERS
    run_ids: tuple[str, ...] | None = None  # only these runs (what a content search found)
    sort: str | None = None  # a column of traces.store.sql.RUN_SORT_COLUMNS
    descending: bool = True

    def kwargs(self) -> dict[str, Any]:
        return {
            "text": self.text or None,
            "status": self.status,
            "failed_only": self.failed_only,
            "origins": KIND_FILTERS[self.kind] if self.kind else None,
            "run_ids": self.run_ids,
        }


@dataclass(frozen=True)
class Outline:
    row: RunRow
    start: Event | None
    end: Event | None
    turns: int  # how many turns the run has, numbered from first_turn
    events: int
    cost: str = ""  # what the run's tokens cost, when <home>/prices.toml prices its model
    first_turn: int = 1  # a fork's turns go on from its parent's: the first is the fork turn

    @property
    def last_turn(self) -> int:
        return self.first_turn + self.turns - 1


class Backend:
    def __init__(self, home: Path, idle_release_s: float = IDLE_RELEASE_S) -> None:
        self.home = home
        self.idle_release_s = idle_release_s
        self._store: TraceStore | None = None
        self._lock = threading.RLock()
        self._release: threading.Timer | None = None
        self.released = threading.Event()  # set while the database is not held
        self.released.set()
        # Why the home cannot be written, once its store was found read-only: it is then
        # browsed as it is, and what would write there is refused (`check_writable`).
        self.read_only: str | None = None

    @contextmanager
    def _session(self) -> Iterator[TraceStore]:
        """The open store, opened on demand; let go once no call has used it for a while."""
        with self._lock:
            if self._release is not None:
                self._release.cancel()
                self._release = None
            if self._store is None:
                self._store = self._open()
                self.released.clear()
            try:
                yield self._store
            finally:
                self._release = threading.Timer(self.idle_release_s, self.release)
                self._release.daemon = True
                self._release.start()

    def _open(self) -> TraceStore:
        if self.read_only is not None:  # found read-only once: no write attempt each time
            return TraceStore.for_home(self.home, read_only=True)
        store = TraceStore.for_reading(self.home)
        self.read_only = store.read_only_reason
        return store

    def open(self) -> None:
        """Open the store now (it is let go after a moment, as after any call); a store
        that cannot be opened at all raises `StoreError`."""
        with self._session():
            pass

    def check_writable(self, what: str) -> None:
        """Refuse `what` in one line when the home is read-only."""
        if self.read_only is not None:
            raise NotAvailable(f"cannot {what}: the home is read-only ({self.read_only})")

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

    def ingest(self, progress: Callable[[str, float], None] | None = None) -> IngestReport:
        """Load new traces from the home folder (every read starts with this); `progress`
        hears how far a long load is (`traces.store.progress`)."""
        with self._session() as store:
            if store.read_only:
                return IngestReport()  # new traces cannot be stored: browse what is there
            return store.ingest_home(self.home, progress)

    # ------------------------------------------------------------------ runs

    def count_runs(self, where: RunFilter) -> int:
        with self._session() as store:
            return int(store.count_runs(**where.kwargs()))

    def runs(self, where: RunFilter, offset: int, limit: int) -> list[RunRow]:
        with self._session() as store:
            return list(
                store.runs(
                    **where.kwargs(),
                    limit=limit,
                    offset=offset,
                    sort=where.sort,
                    descending=where.descending,
                )
            )

    def search(self, text: str, run_id: str | None = None, limit: int = 500) -> list[SearchHit]:
        """Where `text` occurs in runs' contents."""
        from workbench.engine.views.search import search

        with self._session() as store:
            return search(store, text, run_id=run_id, limit=limit)

    def watch_traces(self, stop: threading.Event, on_change: Callable[[], object]) -> None:
        """Call `on_change` whenever trace files appear or grow, until `stop` is set.

        Runs in a thread worker; the operating system's file events wake it, nothing polls.
        """
        import watchfiles

        folder = traces_dir(self.home)
        folder.mkdir(parents=True, exist_ok=True)
        for changes in watchfiles.watch(
            folder, stop_event=stop, debounce=200, yield_on_timeout=False
        ):
            if any(path.endswith(".jsonl") for _, path in changes):
                on_change()

    def run(self, run_id: str) -> RunRow:
        with self._session() as store:
            return store.run(run_id)

    # ------------------------------------------------------------------ events

    def count_events(self, run_id: str) -> int:
        with self._session() as store:
            return int(store.count_events(run_id))

    def events(
        self,
        run_id: str,
        offset: int = 0,
        limit: int | None = 200,
        types: list[str] | None = None,
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
        first_call = self.events(run_id, 0, 1, ["model_request"])
        first_turn = first_call[0].turn if first_call and first_call[0].turn else 1
        last_seen = max((e.turn for e in tail if e.turn is not None), default=0)
        last_turn = max(first_turn + int(row.turns or 0) - 1, last_seen)
        turns = max(last_turn - first_turn + 1, 0)
        cost = self._cost(row.model, end) if isinstance(end, RunEnd) else ""
        start = first[0] if first else None
        return Outline(row, start, end, turns, total, cost, first_turn=first_turn)

    def _cost(self, model: str | None, end: RunEnd) -> str:
        from workbench.engine.views.cost import Prices, PricesError

        try:
            prices = Prices.load(self.home)
        except PricesError:
            return ""  # the timeline names the problem with the file
        totals = end.totals
        return prices.format(prices.cost(model or "", totals.input_tokens, totals.output_tokens))

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

    def timeline(self, run_id: str) -> TimelineView:
        """The engine's timeline of the run and the home's prices."""
        from workbench.engine.views.cost import Prices, PricesError
        from workbench.engine.views.timeline import build_timeline
        from workbench.tui.timeline_screen import TimelineView

        types = ["run_start", "model_request", "model_response", "error", "tool_start"]
        events = self.events(run_id, 0, None, [*types, "tool_end", "run_end"])
        try:
            return TimelineView(build_timeline(events), Prices.load(self.home))
        except PricesError as exc:
            return TimelineView(build_timeline(events), Prices(), str(exc))

    # ------------------------------------------------------------------ regressions

    def regressions(self, limit: int = 50) -> list[SuiteRun]:
        """Stored suite runs, newest first, each with its cases (`traces.store.regress`)."""
        from workbench.tui.regress_screen import SuiteRun

        with self._regress_tables() as tables:
            if tables is None:
                return []
            return [
                SuiteRun(run, tables.cases(run["suite_run_id"])) for run in tables.runs(limit=limit)
            ]

    def regression_schema_diff(
        self, suite: str, baseline: str | None, suite_run_id: str
    ) -> SchemaPair:
        """The baseline's tool schemas against the suite run's."""
        with self._regress_tables() as tables:
            base = tables.load_baseline(suite, baseline) if tables is not None else None
            if tables is None or base is None:
                raise NotAvailable(
                    f"suite {suite} has no baseline to compare with; save one with "
                    "`workbench test --save-baseline`"
                )
            before = list(base["tool_schemas"])
            after = tables.run_tool_schemas(suite_run_id)
        label = f"baseline {base['name']}"
        diff = diff_tool_schemas(before, after)
        return SchemaPair(label, f"suite run {suite_run_id[:8]}", before, after, diff)

    @contextmanager
    def _regress_tables(self) -> Iterator[RegressTables | None]:
        """The regression tables on the backend's store (None: a read-only store has none)."""
        from traces.store.regress import RegressTables

        with self._session() as store:
            yield RegressTables.on_store(store)

    def tool_schemas(self, run_id: str) -> list[dict[str, Any]]:
        with self._session() as store:
            return store.tool_schemas(run_id)

    # ------------------------------------------------------------------ engine

    def recording(self, run_id: str) -> Recording:
        # The engine opens the store itself; in one process DuckDB shares the open file.
        if self.read_only is not None:  # it would open it to write: give it the trace file
            row = self.run(run_id)
            if row is not None and row.source_path and Path(row.source_path).is_file():
                return load_recording(Path(row.source_path), self.home)
        return load_recording(run_id, self.home)

    def schema_diff(self, run_a: str, run_b: str) -> SchemaPair:
        """Both runs' tool schemas from the store and `traces.schema_diff` of them."""
        tools_a, tools_b = self.tool_schemas(run_a), self.tool_schemas(run_b)
        return SchemaPair(run_a, run_b, tools_a, tools_b, diff_tool_schemas(tools_a, tools_b))

    def export(self, run_id: str, fmt: str) -> Path:
        """Write the run as one document (`workbench.engine.views.export`) to <home>/exports/."""
        from workbench.engine.views.export import export_run

        self.check_writable("export the run")
        text = export_run(self.events(run_id, 0, None), "md" if fmt == "md" else "json")
        folder = self.home / "exports"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{run_file_stem(run_id)}.{fmt}"  # the id is data, not a path
        path.write_text(text, encoding="utf-8")
        return path

    def comparison(self, run_a: str, run_b: str) -> Comparison:
        """The two chains, the texts that differ and the fork's edits."""
        from workbench.engine.diff.text_changes import compare_runs

        return compare_runs(self.recording(run_a), self.recording(run_b))

    def verify_replay(self, run_id: str) -> ReplayOutcome:
        """The outcome of an offline replay, run to completion.

        Called from a thread worker, so the replay gets its own event loop there. A run the
        workbench agent did not drive raises `NotAvailable` with the engine's explanation.
        """
        recording = self.recording(run_id)
        try:
            return asyncio.run(replay_run(recording, pace="fast"))
        except NotReplayable as exc:
            raise NotAvailable(str(exc)) from exc

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
            fork_script=fork_engine.offline_fork_script(recording.run_start),
        )

    def run_fork(
        self,
        run_id: str,
        request: ForkRequest,
        endpoint: Endpoint,
        on_item: Callable[[Event | TextDelta], object],
        cancel: CancelFork | None = None,
    ) -> RunResult | None:
        """Run a fork to its end in this (worker) thread, recording it in the home folder.

        Every streamed item (trace events and text deltas) goes to `on_item` as it happens.
        `cancel()`, from any thread, stops the run: it ends `cancelled` and its trace says
        so. Returns the agent's `RunResult`.
        """
        from agent_core.tools.builtin import builtin_tools

        self.check_writable("run a fork")
        plan = fork_engine.plan_fork(self.recording(run_id), request)
        try:
            model = run_service.build_model(endpoint, plan.parent.run_start.limits)
            # New read-only calls in the fork run live on the parent's tool folder, as
            # recorded (else the current folder, as `workbench fork` does by default).
            root = fork_engine.recorded_root(plan.parent.run_start) or Path(".")
            fork = run_service.prepare_fork(
                plan,
                model,
                self.home,
                live_toolsets=[builtin_tools(root)],
                secrets=[endpoint.api_key],
            )
        except run_service.SetupError as exc:
            raise NotAvailable(str(exc)) from None

        async def drive() -> RunResult | None:
            if cancel is not None:
                cancel.bind(asyncio.get_running_loop(), asyncio.current_task())
            return await run_service.drive(fork.agent, on_item)

        try:
            result = asyncio.run(drive())
        except asyncio.CancelledError:
            result = fork.agent.result  # cancelled: the run ended and says so
            if result is None:
                raise
        finally:
            fork.writer.close()
        self.ingest()
        return result


class CancelFork:
    """Stops a fork running in a worker thread, from the UI thread: its task is cancelled, so
    the agent records `run_end` with status `cancelled`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._target: tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]] | None = None
        self.requested = False

    def bind(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any] | None) -> None:
        with self._lock:
            if task is None:
                return
            self._target = (loop, task)
            if self.requested:
                loop.call_soon_threadsafe(task.cancel)

    def __call__(self) -> None:
        with self._lock:
            self.requested = True
            if self._target is not None:
                loop, task = self._target
                loop.call_soon_threadsafe(task.cancel)


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
    fork_script: Path | None = None  # a model script the run ships for its forks (the demo)


# The model a fork talks to: the engine's model settings, under the TUI's name for them.
Endpoint = ModelSettings
