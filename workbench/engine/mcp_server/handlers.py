"""The answers to the server's tool calls, from the engine functions the CLI commands use:
the store's runs list and search, the decision chain (`traces.tree`), the chain and schema
diffs, replay, fork and the tool lint.

Everything is read from the home's store and trace folder, by run id: nothing a client
sends names a file. The store is held open while calls come and let go once they pause
(`traces.store.held`: DuckDB lets one process write a file at a time, and the CLI and the
TUI share it), and calls take turns at it; each looks for new traces first, the quick look
every command takes. Texts leave redacted with the home's configured patterns, as every
export does.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from traces.home import NoHomeError, RedactionConfigError, existing_home, traces_dir
from traces.run_names import is_safe_run_id
from traces.store.held import IDLE_RELEASE_S, HeldStore
from workbench.engine.mcp_server.arguments import checked_arguments
from workbench.engine.mcp_server.bounds import bounded
from workbench.engine.mcp_server.tools import TOOLS_BY_NAME, ToolError
from workbench.engine.views.tool_calls import tool_call_json, tool_name

T = TypeVar("T")

READ_ONLY_SUITE = (
    "run_suite records each sample as a run, and this server is read-only: start it with "
    "`workbench mcp-serve --allow-writes`"
)

if TYPE_CHECKING:
    from traces.store import RunRow, TraceStore
    from traces.tree import ToolCallNode, TurnNode
    from workbench.engine.recording.replay.streamed import ReplaySource
    from workbench.engine.recording.runs.parent import ParentRun

READ_ONLY_NOTE = (
    "annotate_run writes to the home's annotation files, and this server is read-only: "
    "start it with `workbench mcp-serve --allow-writes`"
)
READ_ONLY_JUDGE = (
    "judge_runs records each judge call as a run and its scores as annotations, and this "
    "server is read-only: start it with `workbench mcp-serve --allow-writes`"
)
READ_ONLY_FORK = (
    "fork_run writes a new run, and this server is read-only: start it with "
    "`workbench mcp-serve --allow-writes`, or pass dry_run true to see the plan"
)


class Workbench:
    """The tools over one home. `allow_writes` lets fork_run record new runs."""

    def __init__(
        self, home: Path, *, allow_writes: bool = False, idle_release_s: float = IDLE_RELEASE_S
    ) -> None:
        self.home = home
        self.allow_writes = allow_writes
        self._held = HeldStore(self._open_store, idle_release_s)
        self.store_released = self._held.released  # set while the database is not held
        self._running = 0
        self._running_lock = threading.Lock()

    def _open_store(self) -> TraceStore:
        from traces.store import TraceStore

        return TraceStore.for_reading(existing_home(self.home))

    def close(self) -> None:
        """Let go of the store now."""
        self._held.release()

    @property
    def running(self) -> int:
        """How many calls are at work in a thread now."""
        with self._running_lock:
            return self._running

    async def _off_loop(self, work: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """`work` in a thread, so the loop keeps reading the client (its next calls, its
        closing stdin), counted in `running` while it runs: a thread cannot be cancelled."""

        def counted() -> T:
            with self._running_lock:
                self._running += 1
            try:
                return work(*args, **kwargs)
            finally:
                with self._running_lock:
                    self._running -= 1

        return await asyncio.to_thread(counted)

    async def call(self, name: str, arguments: dict[str, Any] | None) -> dict[str, Any]:
        """The answer to one call, bounded and redacted; `ToolError` for one it refuses."""
        tool = TOOLS_BY_NAME.get(name)
        if tool is None:
            raise ToolError(f"no tool {name!r}; tools: {', '.join(TOOLS_BY_NAME)}")
        args = checked_arguments(tool, arguments)
        if name == "replay_run":
            answer = await self.replay_run(**args)
        elif name == "fork_run":
            answer = await self.fork_run(**args)
        elif name == "run_suite":
            answer = await self.run_suite(**args)
        elif name == "judge_runs":
            answer = await self.judge_runs(**args)
        else:
            answer = await self._off_loop(getattr(self, name), **args)
        return bounded(self._redacted(answer))

    def _redacted(self, answer: dict[str, Any]) -> dict[str, Any]:
        """Traces are redacted when written; patterns configured since apply on the way out."""
        from traces.home import home_redactor, redaction_patterns

        try:
            if not redaction_patterns(self.home):
                return answer
            value: dict[str, Any] = home_redactor(self.home).value(answer)
        except RedactionConfigError as exc:
            raise ToolError(str(exc)) from None
        return value

    # --- the store ------------------------------------------------------------------------

    @contextmanager
    def _store(self) -> Iterator[TraceStore]:
        """The home's store with new traces ingested; its failures as one-line tool errors."""
        from traces.store import AmbiguousRunError, StoreError, UnknownRunError

        try:
            with self._held.session() as store:
                if not store.read_only:
                    store.ingest_home(self.home)
                yield store
        except (NoHomeError, StoreError) as exc:
            raise ToolError(str(exc)) from None
        except (UnknownRunError, AmbiguousRunError) as exc:
            raise ToolError(str(exc.args[0]).replace("`workbench runs`", "list_runs")) from None

    @contextmanager
    def _stored(self) -> Iterator[TraceStore]:
        """The home's store for one read of a run it holds (a fork's parent): no ingest."""
        from traces.store import StoreError

        try:
            with self._held.session() as store:
                yield store
        except (NoHomeError, StoreError) as exc:
            raise ToolError(str(exc)) from None

    @staticmethod
    def _run_id(store: TraceStore, ref: str) -> str:
        if not is_safe_run_id(ref.strip()):
            raise ToolError(f"{ref!r} is not a run id; list_runs shows the runs")
        return store.resolve_run(ref)

    def _recording(self, ref: str) -> ReplaySource:
        """A run as a replay reads it: its trace file in the home, streamed, else its events
        as the home's store holds them (a run ingested from elsewhere), a page at a time."""
        from workbench.engine.recording.replay.stored import stored_source
        from workbench.engine.recording.replay.streamed import streamed_source
        from workbench.engine.recording.runs.load import RecordingError

        with self._store() as store:
            run_id = self._run_id(store, ref)
        path = traces_dir(self.home) / f"{run_id}.jsonl"
        try:
            if is_safe_run_id(run_id) and path.is_file():
                return streamed_source(path)
            return stored_source(self._stored, run_id)
        except RecordingError as exc:
            raise ToolError(str(exc)) from None

    def _stored_run(self, ref: str) -> ParentRun:
        """A run read from the store as it is asked, a turn or a call at a time (a fork's
        parent, the tool schemas of a diff), so that forking a run of 200,000 events never
        loads the whole run."""
        from workbench.engine.recording.runs.load import RecordingError
        from workbench.engine.recording.runs.parent import StoredParent

        with self._store() as store:
            run_id = self._run_id(store, ref)
        try:
            return StoredParent.load(self._stored, run_id)
        except RecordingError as exc:
            raise ToolError(str(exc)) from None

    # --- reading --------------------------------------------------------------------------

    def list_runs(
        self,
        *,
        status: str | None = None,
        failed: bool = False,
        samples: bool = False,
        kind: str | None = None,
        model: str | None = None,
        text: str | None = None,
        session: str | None = None,
        signature: str | None = None,
        limit: int,
        offset: int,
    ) -> dict[str, Any]:
        from traces.store import RunQuery

        kinds = [kind] if kind else None
        where = RunQuery.of(
            status, text, failed, kinds, samples=samples, model=model or None, signature=signature
        )
        folding = where.folded_samples()
        with self._store() as store:
            if session:  # its runs in the order they ran, the first first
                where = replace(where, session=store.resolve_session(session))
                found = store.runs(
                    limit=limit, offset=offset, where=where, sort="started_at", descending=False
                )
            else:
                found = store.runs(limit=limit, offset=offset, where=where)
            total = store.count_runs(where=where)
            folded = store.count_runs(where=folding) if folding is not None else 0
        shown = offset + len(found)
        return {
            "total": total,
            "samples_folded": folded,
            "offset": offset,
            "runs": [_run_json(row) for row in found],
            "next_offset": shown if shown < total else None,
        }

    def list_failures(
        self, *, limit: int, examples: int, since_days: int | None = None
    ) -> dict[str, Any]:
        from datetime import UTC, datetime, timedelta

        from workbench.engine.analysis.failures import failure_report

        since = None if since_days is None else datetime.now(UTC) - timedelta(days=since_days)
        with self._store() as store:
            return failure_report(store, since, examples=examples, limit=limit).to_json()

    def explain_failure(self, *, run: str, samples: int) -> dict[str, Any]:
        """`workbench why RUN --json`, with the model the server's environment names (else
        serve-model over the passing runs of its task); only the candidates when this
        server may not write (the forks are new runs)."""
        from traces.prices import Prices, PricesError
        from workbench.engine.analysis.why import WhyOptions, explain
        from workbench.engine.http.serve import ServeError, served_model
        from workbench.engine.recording.running.service import ModelSettings, SetupError
        from workbench.engine.recording.runs.load import RecordingError

        options = WhyOptions(samples, ModelSettings.from_env(), verify=self.allow_writes)
        with self._store() as store:
            run_id = self._run_id(store, run)
            try:
                report = explain(
                    store, self.home, run_id, options, Prices.load(self.home), serve=served_model
                )
            except (RecordingError, SetupError, ServeError, PricesError) as exc:
                raise ToolError(str(exc)) from None
        note = (
            None
            if self.allow_writes
            else (
                "candidates only: verifying them forks new runs, and this server is read-only "
                "(`workbench mcp-serve --allow-writes` verifies them)"
            )
        )
        return report.to_json() | {"writes_allowed": self.allow_writes, "note": note}

    def show_run(
        self,
        *,
        run: str,
        turn_from: int,
        turns: int,
        events_from: int | None = None,
        events: int,
    ) -> dict[str, Any]:
        from traces.tree import answer_fields, build_chain

        with self._store() as store:
            run_id = self._run_id(store, run)
            row = store.run(run_id)
            if events_from is not None:
                page = store.events(run_id, offset=events_from, limit=events)
                count = store.count_events(run_id)
                shown = events_from + len(page)
                return {
                    "run_id": run_id,
                    "events_total": count,
                    "events": [event.model_dump(mode="json") for event in page],
                    "next_events_from": shown if shown < count else None,
                }
            numbers = store.turn_numbers(run_id)
            if numbers and turn_from > numbers[-1]:
                raise ToolError(
                    f"run {run_id[:12]} has turns {numbers[0]} to {numbers[-1]}; "
                    f"turn_from {turn_from} is past its last"
                )
            chosen = [n for n in numbers if n >= turn_from][:turns]
            outside = store.events(run_id, types=["run_start", "run_end"])
            inside = [event for n in chosen for event in store.events(run_id, turn=n)]
            notes = store.annotations(run_id)  # on the run, its turns and calls, all of them
        chain = build_chain(sorted([*outside, *inside], key=lambda event: event.seq))
        later = [n for n in numbers if chosen and n > chosen[-1]]
        end = chain.end
        return {
            "run": _run_json(row),
            "annotations": notes,
            "system_prompt": chain.start.system_prompt if chain.start else None,
            "tools_offered": [tool_name(t) for t in chain.start.tools] if chain.start else [],
            "turns_total": len(numbers),
            "turns": [_turn_json(turn) for turn in chain.turns],
            "next_turn": later[0] if later else None,
            "stopped": None
            if end is None
            else {
                "status": end.status,
                "reason": end.reason,
                "timeout_layer": end.timeout_layer,
                **answer_fields(end.status, end.final_answer),
                "totals": end.totals.model_dump(mode="json"),
            },
        }

    def search_runs(
        self, *, text: str, run: str | None = None, limit: int, offset: int
    ) -> dict[str, Any]:
        from workbench.engine.views.search import search

        with self._store() as store:
            run_id = self._run_id(store, run) if run else None
            hits = search(store, text, run_id=run_id, limit=offset + limit + 1)
        page = hits[offset : offset + limit]
        more = len(hits) > offset + limit
        return {
            "offset": offset,
            "matches": [hit.to_json() for hit in page],
            "next_offset": offset + limit if more else None,
        }

    def diff_runs(self, *, run_a: str, run_b: str, what: str) -> dict[str, Any]:
        from workbench.engine.diff.alignment import diff_tools
        from workbench.engine.diff.text_changes import compare_stored_runs

        # From the store: the tool schemas from each run_start, the chains a window of
        # turns at a time.
        a, b = self._stored_run(run_a), self._stored_run(run_b)
        answer: dict[str, Any] = {"run_a": a.run_id, "run_b": b.run_id}
        equal = True
        if what in ("both", "tools"):
            tools = diff_tools(a, b)
            equal &= tools.is_empty
            answer["tools"] = tools.to_json()
        if what in ("both", "chain"):
            with self._stored() as store:
                comparison = compare_stored_runs(store, a.run_id, b.run_id)
            equal &= comparison.diff.is_equal
            answer["chain"] = comparison.to_json()
        answer["equal"] = equal
        return answer

    def compare_runs(
        self,
        *,
        runs: list[str] | None = None,
        task: str | None = None,
        case: str | None = None,
        label: str | None = None,
        run_name: str | None = None,
        variants: int,
        examples: int,
    ) -> dict[str, Any]:
        from workbench.engine.analysis.compare import compare_group
        from workbench.engine.analysis.groups import GroupError, group_of

        if sum(bool(way) for way in (runs, task, case, label, run_name)) != 1:
            raise ToolError("compare_runs takes one of runs, task, case, label or run_name")
        for ref in [*(runs or []), *([task] if task else [])]:
            if not is_safe_run_id(ref.strip()):
                raise ToolError(f"{ref!r} is not a run id; list_runs shows the runs")
        with self._store() as store:
            try:
                group = group_of(store, runs=runs, task=task, case=case, label=label, name=run_name)
                comparison = compare_group(store, group.run_ids, shown=variants)
            except GroupError as exc:
                raise ToolError(str(exc).replace("`workbench runs`", "list_runs")) from None
        answer = {"group": group.named} | comparison.to_json(examples)
        if comparison.tasks > 1:
            answer["note"] = (
                f"these runs are of {comparison.tasks} different tasks; compared anyway"
            )
        return answer

    def lint_tools(
        self, *, run: str | None = None, tools: list[Any] | None = None, max_tools: int
    ) -> dict[str, Any]:
        from workbench.engine.regress.lint_tools import lint_tools

        if (run is None) == (tools is None):
            raise ToolError("lint_tools takes either run or tools (not both, not neither)")
        if tools is None:
            assert run is not None
            with self._store() as store:
                schemas = store.tool_schemas(self._run_id(store, run))
        else:
            schemas = tools
        findings = lint_tools(schemas, max_tools=max_tools)
        return {
            "tools": len(schemas),
            "errors": sum(f.severity == "error" for f in findings),
            "warnings": sum(f.severity == "warning" for f in findings),
            "findings": [f.to_dict() for f in findings],
        }

    # --- replay and fork ------------------------------------------------------------------

    async def replay_run(self, *, run: str) -> dict[str, Any]:
        from workbench.engine.recording.replay.verify import (
            NotReplayable,
            check_replayable,
            replay_run,
        )

        recording = await self._off_loop(self._recording, run)
        try:
            check_replayable(recording)
        except NotReplayable as exc:
            raise ToolError(str(exc)) from None
        outcome = await replay_run(recording, pace="fast")
        return outcome.to_json()

    async def fork_run(
        self,
        *,
        run: str,
        turn: int,
        system: str | None = None,
        user: str | None = None,
        tool_descriptions: dict[str, str] | None = None,
        tool_schemas: dict[str, dict[str, Any]] | None = None,
        mocks: dict[str, str] | None = None,
        allow_side_effects: bool,
        dry_run: bool,
    ) -> dict[str, Any]:
        from workbench.engine.mcp_server import forking
        from workbench.engine.recording.fork.plan import ForkRequest

        if not dry_run and not self.allow_writes:
            raise ToolError(READ_ONLY_FORK)
        request = ForkRequest(
            turn=turn,
            system=system,
            user=user,
            tool_descriptions=tool_descriptions or {},
            tool_schemas=tool_schemas or {},
            mocks=mocks or {},
            allow_side_effects=allow_side_effects,
        )
        parent = await self._off_loop(self._stored_run, run)
        # The tool policy of <home>/tool-policy.toml applies, as it does to `workbench fork`.
        fork = await self._off_loop(forking.setup, parent, request, self.home)
        if dry_run:
            plan = await self._off_loop(forking.plan_json, fork)
            return plan | {"writes_allowed": self.allow_writes}
        return await forking.run_fork(fork, self.home)

    def annotate_run(self, *, run: str, **note: Any) -> dict[str, Any]:
        from workbench.engine.mcp_server.review import annotate

        if not self.allow_writes:
            raise ToolError(READ_ONLY_NOTE)
        with self._store() as store:
            return annotate(self.home, store, self._run_id(store, run), **note)

    def check_rules(self, *, rules: str) -> dict[str, Any]:
        from workbench.engine.mcp_server.review import check_rules

        with self._store() as store:
            return check_rules(self.home, store, rules=rules)

    async def judge_runs(self, **ask: Any) -> dict[str, Any]:
        from workbench.engine.mcp_server.review import judge_runs

        if not self.allow_writes:
            raise ToolError(READ_ONLY_JUDGE)
        return await judge_runs(self.home, self._store, self._off_loop, **ask)

    async def run_suite(
        self,
        *,
        suite: str,
        samples: int | None = None,
        baseline: str | None = None,
        script: str | None = None,
    ) -> dict[str, Any]:
        from workbench.engine.mcp_server.suites import run_suite

        if not self.allow_writes:
            raise ToolError(READ_ONLY_SUITE)
        return await run_suite(
            self.home, suite=suite, samples=samples, baseline=baseline, script=script
        )


def _run_json(row: RunRow) -> dict[str, Any]:
    from traces.tree import answer_fields

    return {
        "run_id": row.run_id,
        "status": row.status,
        "reason": row.reason or None,
        "kind": row.origin,
        "case": row.judged,  # a regression sample's verdict: passed, failed or error
        "model": row.model,
        "task": row.task,
        "started_at": row.started_at.isoformat() if row.started_at else None,
        "turns": row.turns,
        "tool_calls": row.tool_calls,
        "tool_errors": row.tool_errors,
        "total_tokens": row.total_tokens,
        "duration_ms": row.duration_ms,
        "parent_run_id": row.parent_run_id,
        "fork_turn": row.fork_turn,
        "session": row.session,  # the conversation or agent session it is part of
        **answer_fields(row.status, row.final_answer),
    }


def _tool_json(call: ToolCallNode) -> dict[str, Any]:
    # One field of arguments: the parsed ones, else the raw text the model sent.
    arguments = call.arguments if call.arguments is not None else call.start.arguments_raw
    return tool_call_json(call, {"arguments": arguments})


def _turn_json(turn: TurnNode) -> dict[str, Any]:
    response = turn.response
    message = response.message if response is not None else None
    return {
        "turn": turn.turn,
        "status": turn.status,
        "model_said": message.get("content") if isinstance(message, dict) else None,
        "reasoning": message.get("reasoning") if isinstance(message, dict) else None,
        "finish_reason": response.finish_reason if response else None,
        "attempts": len(turn.model_calls),
        "tool_calls": [_tool_json(call) for call in turn.tool_calls],
        "calls_not_run": turn.calls_not_run,
        "errors": [
            f"{e.where}: {e.kind}: {e.message}"
            for e in {e.seq: e for e in [*turn.errors, *turn.model_errors]}.values()
        ],
    }
