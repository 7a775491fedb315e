"""The one door from the TUI to the store and the engine.

Screens call these methods from thread workers only (`verify_replay`, a coroutine, from an
async one). Each is a direct call into `traces.store` or `workbench.engine`, whose errors
it turns into `NotAvailable` where the user has something to set up; the TUI adds no logic
of its own. Nothing here imports
Textual or a screen, so the door is typed and tested on its own (tests/tui/test_backend_*).

DuckDB lets one process at a time open the database, so the backend holds it only while it
is being used and lets go after a moment of idleness (`traces.store.held`): `workbench
runs`, `show` or `replay` in another terminal then work while the TUI stays open.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_core.agent import TextDelta
from traces.events import Event
from traces.home import traces_dir
from traces.origins import RUN_KINDS
from traces.run_names import is_safe_run_id
from traces.schema_diff import diff_tool_schemas
from traces.store import IngestReport, RunQuery, RunRow, TraceStore, UnknownRunError
from traces.store.held import IDLE_RELEASE_S, HeldStore
from workbench.engine.recording.fork import runner as fork_runner
from workbench.engine.recording.fork.plan import ForkContext, ForkRequest, fork_context
from workbench.engine.recording.fork.runner import CancelFork, ForkOptions, ForkOutcome
from workbench.engine.recording.replay.process import ReplayProgress, replay_in_process
from workbench.engine.recording.replay.verify import NotReplayable, ReplayOutcome
from workbench.engine.recording.running import service as run_service
from workbench.engine.recording.running.service import ModelSettings
from workbench.engine.recording.runs.load import Recording, load_recording
from workbench.engine.recording.runs.parent import StoredParent
from workbench.engine.recording.runs.window import TurnWindow
from workbench.engine.views.outline import Outline, first_failure, run_outline
from workbench.tui.schema_view import SchemaPair

if TYPE_CHECKING:  # loaded when first used: each belongs to one screen's task
    from traces.prices import Prices
    from traces.store.failures import FailureGroupRow
    from traces.store.regress import RegressTables
    from workbench.engine.analysis.compare import GroupComparison
    from workbench.engine.analysis.why import WhyReport
    from workbench.engine.diff.text_changes import Comparison
    from workbench.engine.recording.fork.dry_run import DryRun
    from workbench.engine.regress.stored import SuiteRun
    from workbench.engine.regress.suite import Case
    from workbench.engine.review.card import RunCard
    from workbench.engine.review.queue import QueueSpec, ReviewQueue
    from workbench.engine.views.export import ExportFormat, ExportProgress
    from workbench.engine.views.search import RunMatches, SearchHit
    from workbench.engine.views.sessions import SessionView
    from workbench.engine.views.stats import RunStats
    from workbench.engine.views.timeline import PricedTimeline

__all__ = [
    "AGENT_AND_FORK",
    "KIND_FILTERS",
    "Backend",
    "CancelFork",
    "Endpoint",
    "ForkContext",
    "ForkOutcome",
    "NotAvailable",
    "Outline",
    "RunFilter",
]


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
    # Regression samples are folded under their suite runs unless asked for (the kind
    # filter naming them asks).
    samples: bool = False
    signature: str | None = None  # the runs of one failure group (`workbench failures`)

    def query(self) -> RunQuery:
        return RunQuery.of(
            self.status,
            self.text,
            self.failed_only,
            KIND_FILTERS[self.kind] if self.kind else None,
            self.run_ids,
            samples=self.samples,
            signature=self.signature,
        )


class Backend:
    def __init__(
        self, home: Path, idle_release_s: float = IDLE_RELEASE_S, writes_off: str | None = None
    ) -> None:
        self.home = home
        # Why nothing the user does may write (a fork, an export), though the store can be
        # written (`workbench tui --read-only`, `workbench web` without --allow-writes): new
        # traces are still picked up, as every read command does.
        self.writes_off = writes_off
        self._held = HeldStore(self._open, idle_release_s)
        self._session = self._held.session
        self.released = self._held.released  # set while the database is not held
        # Why the home cannot be written, once its store was found read-only: it is then
        # browsed as it is, and what would write there is refused (`check_writable`).
        self.read_only: str | None = None
        # The run the fork dialog reads (its run_start and model turns), until the next
        # ingest: its context, each plan and the fork itself read it again.
        self._fork_parent: StoredParent | None = None
        self._fork_lock = threading.Lock()
        # Ingests that stored something, whoever asked for them (a fork stores its own run):
        # a list counted at an older value is out of date.
        self.stored_changes = 0

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

    def check_may_write(self, what: str) -> None:
        """Refuse `what`, something the user makes in the home (a fork, an export), in one
        line when writes are off or the home is read-only."""
        if self.writes_off is not None:
            raise NotAvailable(f"cannot {what}: {self.writes_off}")
        self.check_writable(what)

    def release(self) -> None:
        """Close the database now (it reopens on the next call)."""
        self._held.release()

    def ingest(self, progress: Callable[[str, float], None] | None = None) -> IngestReport:
        """Load new traces from the home folder (every read starts with this); `progress`
        hears how far a long load is (`traces.store.progress`)."""
        self._fork_parent = None  # the run may have grown
        with self._session() as store:
            if store.read_only:
                return IngestReport()  # new traces cannot be stored: browse what is there
            report = store.ingest_home(self.home, progress)
            if report.new_runs or report.new_events:
                self.stored_changes += 1
            return report

    # ------------------------------------------------------------------ runs

    def count_runs(self, where: RunFilter) -> tuple[int, int]:
        """The runs `where` lists, and the regression samples it folds away."""
        query = where.query()
        folding = query.folded_samples()
        with self._session() as store:
            folded = store.count_runs(where=folding) if folding is not None else 0
            return int(store.count_runs(where=query)), int(folded)

    def runs(self, where: RunFilter, offset: int, limit: int) -> list[RunRow]:
        with self._session() as store:
            return list(
                store.runs(
                    limit=limit,
                    offset=offset,
                    sort=where.sort,
                    descending=where.descending,
                    where=where.query(),
                )
            )

    def session(self, session: str) -> SessionView:
        """A session's totals and its runs in the order they ran."""
        from workbench.engine.views.sessions import session_view

        with self._session() as store:
            return session_view(store, session)

    def search(self, text: str, run_id: str | None = None, limit: int = 500) -> list[SearchHit]:
        """Where `text` occurs in runs' contents."""
        from workbench.engine.views.search import search

        with self._session() as store:
            return search(store, text, run_id=run_id, limit=limit)

    def search_run(self, text: str, run_id: str, offset: int = 0) -> RunMatches:
        """A page of the run's events that contain `text`, from the `offset`th on."""
        from workbench.engine.views.search import search_run

        with self._session() as store:
            return search_run(store, text, run_id, offset)

    def watch_traces(self, stop: threading.Event, on_change: Callable[[], object]) -> None:
        """Call `on_change` whenever trace files appear or grow, until `stop` is set.

        Runs in a thread worker; the operating system's file events wake it, nothing polls.
        """
        import watchfiles

        folder = traces_dir(self.home)
        folder.mkdir(parents=True, exist_ok=True)
        while not stop.is_set():
            # Each folder is watched on its own: a recursive watch walks every entry under
            # the traces while holding the interpreter (20 s of a frozen screen with
            # 1,000,000 runs), where finding the folders among them takes a scan.
            folders = _folders(folder)
            for changes in watchfiles.watch(
                *folders, stop_event=stop, debounce=200, yield_on_timeout=False, recursive=False
            ):
                if any(path.endswith(".jsonl") for _, path in changes):
                    on_change()
                if any(
                    kind == watchfiles.Change.added and os.path.isdir(path)
                    for kind, path in changes
                ):
                    on_change()  # a new folder may already hold traces
                    break  # ... and is watched from now on

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
        prices, problem = self._prices()  # the run screen shows a problem as a notice
        with self._session() as store:
            try:
                outline = run_outline(store, run_id, prices)
                return dataclasses.replace(outline, prices_problem=problem)
            except UnknownRunError:
                raise LookupError(
                    f"run {run_id} is not in the store; press g on the runs screen to reload"
                ) from None

    def first_failure(self, run_id: str) -> Event | None:
        """The first error, failed tool call or unparsable arguments; else a non-completed end."""
        with self._session() as store:
            return first_failure(store, run_id)

    def timeline(self, run_id: str, start: int = 0) -> PricedTimeline:
        """The engine's timeline of the run's turns from position `start` on (a window of
        `TIMELINE_TURNS`: only their events are read), priced from the home's prices."""
        from workbench.engine.views.timeline import stored_timeline

        with self._session() as store:
            return stored_timeline(store, run_id, self.home, start)

    def run_tokens(self, run_id: str) -> tuple[int, int]:
        """The whole run's input and output tokens (one aggregate query over its turns)."""
        from workbench.engine.views.outline import turn_summaries
        from workbench.engine.views.timeline import run_tokens

        with self._session() as store:
            return run_tokens(turn_summaries(store, run_id, None).values())

    def stats(self, days: int | None) -> tuple[RunStats, str | None]:
        """Runs, failures, tokens, cost and latency by day and by model (the engine's one
        aggregate query), and why `<home>/prices.toml` could not be read, if it could not
        (the figures then come without costs)."""
        from workbench.engine.views.stats import run_stats

        prices, problem = self._prices()
        with self._session() as store:
            return run_stats(store, prices, days=days), problem or None

    def _prices(self) -> tuple[Prices | None, str]:
        """`<home>/prices.toml`, or None and why it could not be read (figures then come
        without costs)."""
        from traces.prices import Prices, PricesError

        try:
            return Prices.load(self.home), ""
        except PricesError as exc:
            return None, str(exc)

    def failure_groups(self, days: int | None, limit: int) -> list[FailureGroupRow]:
        """The biggest failure groups (`workbench failures`) of the runs started in the last
        `days` (every run when None)."""
        since = datetime.now(UTC) - timedelta(days=days) if days else None
        with self._session() as store:
            return store.failure_groups(RunQuery(samples=False, since=since), 1, limit).groups

    # ------------------------------------------------------------------ review

    def open_review(self, spec: QueueSpec, author: str | None) -> ReviewQueue:
        """The review queue `spec` names, as the home has it now (annotations written
        since the last ingest count), its notes written by `author` (None: as `workbench
        note` decides it)."""
        from workbench.engine.review.notes import author_name
        from workbench.engine.review.queue import open_queue

        self.check_writable("review runs")  # the notes go into the home
        self.ingest()
        with self._session() as store:
            return open_queue(store, self.home, spec, author_name(author, self.home))

    def review_card(self, run_id: str) -> RunCard:
        """What the review screen shows of a run (`workbench.engine.review.card`)."""
        from workbench.engine.review.card import run_card

        with self._session() as store:
            return run_card(store, run_id)

    # ------------------------------------------------------------------ regressions

    def regressions(self, limit: int = 50) -> list[SuiteRun]:
        """Stored suite runs, newest first, each with its cases (`traces.store.regress`)."""
        from workbench.engine.regress.stored import stored_suite_runs

        with self._regress_tables() as tables:
            return stored_suite_runs(tables, limit)

    def regression_schema_diff(
        self, suite: str, baseline: str | None, suite_run_id: str
    ) -> SchemaPair:
        """The baseline's tool schemas against the suite run's."""
        from workbench.engine.regress.stored import NoBaselineError, baseline_tools

        with self._regress_tables() as tables:
            try:
                found = baseline_tools(tables, suite, baseline, suite_run_id)
            except NoBaselineError as exc:
                raise NotAvailable(str(exc)) from None
        label_b = f"suite run {suite_run_id[:8]}"
        return SchemaPair(
            f"baseline {found.baseline}", label_b, found.before, found.after, found.diff
        )

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
            source = self.run(run_id).source_path
            if source and Path(source).is_file():
                return load_recording(Path(source), self.home)
        return load_recording(run_id, self.home)

    def schema_diff(self, run_a: str, run_b: str) -> SchemaPair:
        """Both runs' tool schemas from the store and `traces.schema_diff` of them."""
        tools_a, tools_b = self.tool_schemas(run_a), self.tool_schemas(run_b)
        return SchemaPair(run_a, run_b, tools_a, tools_b, diff_tool_schemas(tools_a, tools_b))

    def export(
        self, run_id: str, fmt: ExportFormat, progress: ExportProgress | None = None
    ) -> Path:
        """Write the run as one document (`workbench.engine.views.export`) to <home>/exports/,
        read from the store a window of turns at a time; `progress(done, total)` hears how
        far it is (turns for Markdown, events for JSON)."""
        from workbench.engine.views.export import export_stored

        self.check_may_write("export the run")
        return export_stored(self._session, run_id, fmt, self.home, progress)

    def comparison(self, run_a: str, run_b: str, start: int = 0) -> tuple[Comparison, TurnWindow]:
        """The two chains, the texts that differ and the fork's edits, over the window of
        their turns from position `start` on (only those turns' events are read)."""
        from workbench.engine.diff.text_changes import compare_stored

        with self._session() as store:
            return compare_stored(store, run_a, run_b, start)

    def group_comparison(
        self, task_of: str | None, run_ids: tuple[str, ...] = ()
    ) -> tuple[str, GroupComparison]:
        """Every run of `task_of`'s task (or the runs `run_ids`) against the path their
        passing runs share (`workbench.engine.analysis.compare`), and what named them."""
        from workbench.engine.analysis.compare import compare_group
        from workbench.engine.analysis.groups import group_of

        with self._session() as store:
            group = group_of(store, runs=list(run_ids) or None, task=task_of)
            return group.named, compare_group(store, group.run_ids)

    def trace_file(self, run_id: str) -> Path:
        """The run's trace file, where the engine reads its recording (`load_recording`):
        the home's `traces/<run_id>.jsonl`, else the file the store ingested it from."""
        direct = traces_dir(self.home) / f"{run_id}.jsonl"
        if is_safe_run_id(run_id) and direct.is_file():
            return direct
        source = self.run(run_id).source_path
        return Path(source) if source else direct  # a file that is gone: the replay says so

    def default_suite(self) -> Path:
        """Where a case captured in the TUI goes unless the user names another suite: a
        suite in the home, which `workbench test` and mcp-serve's run_suite both run."""
        return self.home / "suites" / "captured.wbsuite.toml"

    def capture_case(self, run_id: str, turn: int, suite: Path) -> Case:
        """Append the case of the run's `turn` to `suite`, as `workbench capture-case RUN
        --turn N --suite FILE` does (`regress.capture.capture_turn`), the trace copied
        beside it; refused in one line when writes are off or the home is read-only."""
        from workbench.engine.regress.capture import Expect, capture_turn
        from workbench.engine.regress.context import RecordingError
        from workbench.engine.regress.suite import SuiteError

        self.check_may_write("capture a case")
        try:
            return capture_turn(self.trace_file(run_id), turn, suite, Expect())
        except (RecordingError, SuiteError, OSError) as exc:
            raise NotAvailable(str(exc)) from None

    async def verify_replay(
        self, run_id: str, on_progress: Callable[[ReplayProgress], object] | None = None
    ) -> ReplayOutcome:
        """The outcome of an offline replay, run to completion in a process of its own
        (`replay_process`): a long run's replay is seconds of CPU-bound Python, which in
        this process would freeze the screen. `on_progress` hears how far it is.

        A coroutine, for an async worker: cancelling it (leaving the screen, quitting)
        kills the process. A run the workbench agent did not drive raises `NotAvailable`
        with the engine's explanation; a recording it cannot use or a replay process that
        ends without an outcome, `ReplayProcessError` (one line).
        """
        import asyncio

        path = await asyncio.to_thread(self.trace_file, run_id)
        try:
            return await replay_in_process(path, on_progress)
        except NotReplayable as exc:
            raise NotAvailable(str(exc)) from None

    # ------------------------------------------------------------------ fork

    def fork_parent(self, run_id: str) -> StoredParent:
        """The run as a fork reads it: from the store, a turn or a call at a time, each
        read in a session of its own (a long run is never loaded whole)."""
        with self._fork_lock:  # the dialog asks for its context and its plan at once
            parent = self._fork_parent
            if parent is None or parent.run_id != run_id:
                parent = self._fork_parent = StoredParent.load(self._session, run_id)
            return parent

    def fork_context(self, run_id: str, turn: int, endpoint: Endpoint) -> ForkContext:
        """What the fork dialog pre-fills: the history the parent sent at `turn`, and the
        run's offline model when `endpoint` (what the dialog holds) chooses none."""
        return fork_context(self.fork_parent(run_id), turn, endpoint)

    def fork_plan(self, run_id: str, request: ForkRequest, endpoint: Endpoint) -> DryRun:
        """The fork's plan before it runs (`fork --dry-run`): the turns served from the log
        (of a long run, the first and last its line names), each tool's side-effect policy,
        whether it may fire live and the runner's notes. Writes nothing."""
        try:
            parent = self.fork_parent(run_id)
            setup = fork_runner.setup_fork(parent, request, ForkOptions(endpoint), self.home)
        except run_service.SetupError as exc:
            raise NotAvailable(str(exc)) from None
        return setup.dry_run(whole_prefix=False)

    def run_fork(
        self,
        run_id: str,
        request: ForkRequest,
        endpoint: Endpoint,
        on_item: Callable[[Event | TextDelta], object],
        cancel: CancelFork | None = None,
    ) -> ForkOutcome:
        """Run a fork to its end in this (worker) thread, recording it in the home folder
        (`fork_runner.run_fork`); every streamed item goes to `on_item` as it happens and
        `cancel()`, from any thread, stops it. Returns how it ended, with the runner's notes."""
        self.check_may_write("run a fork")
        try:
            outcome = fork_runner.run_fork(
                self.fork_parent(run_id), request, ForkOptions(endpoint), self.home, on_item, cancel
            )
        except run_service.SetupError as exc:
            raise NotAvailable(str(exc)) from None
        self.ingest()
        return outcome

    def why(
        self, run_id: str, endpoint: Endpoint, on_progress: Callable[[str], object]
    ) -> WhyReport:
        """Why the run failed (`workbench why`): its candidates, verified by forks with
        `endpoint` (else serve-model over the passing runs of its task) when the home can
        be written, each fork's start told to `on_progress`."""
        from traces.prices import Prices, PricesError
        from workbench.engine.analysis.why import WhyOptions, explain
        from workbench.engine.http.serve import served_model

        try:
            prices = Prices.load(self.home)
        except PricesError as exc:
            raise NotAvailable(str(exc)) from None
        options = WhyOptions(settings=endpoint, verify=self.read_only is None)
        with self._session() as store:
            report = explain(
                store,
                self.home,
                run_id,
                options,
                prices,
                serve=served_model,
                on_progress=on_progress,
            )
        self.ingest()
        return report


def _folders(root: Path) -> list[Path]:
    """`root` and every folder under it (symlinks not followed)."""
    found, pending = [root], [root]
    while pending:
        folder = pending.pop()
        # A folder's link count is 2 plus its subfolders on the file systems that count them
        # (1 where they do not): a folder of 1,000,000 traces and no subfolder is not read.
        if os.stat(folder).st_nlink == 2:
            continue
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    found.append(Path(entry.path))
                    pending.append(Path(entry.path))
    return found


# The model a fork talks to: the engine's model settings, under the TUI's name for them.
Endpoint = ModelSettings
