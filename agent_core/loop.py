"""The ReAct loop: build messages → call the model → parse → run tools → check for the end.

`run_loop(agent)` is an async generator of every trace event and `TextDelta`, in the order
they happen; the CLI printer, the JSONL sink and the TUI all consume this one stream. Each
turn is finished and recorded here. Each step returns the end it reached (or None to go
on); the first end decided is the run's, and `events()` finishes the run in one place:
it writes `run_end` and sets `agent.result`, also when the run is cancelled or breaks.

Timeouts are deadlines on the event loop's clock, applied around each await and never
across a `yield`, so a slow consumer cannot be charged for the model's time and a
cancellation always lands inside the loop. Nothing else the clock says changes a decision:
given the same model answers and tool results, a run makes the same requests (replay
depends on it).

Token budget: the run's cumulative tokens — provider-reported `total_tokens` for each call
that reports usage, else our estimate of its prompt plus its answer. It is checked before
each request (adding the new prompt's estimate, so an over-budget request is never sent)
and after each answer (tool calls in an answer that crossed the budget are not run).

A `tool_choice` param that forces a call ("required", or one named function) is sent until
the model has called a tool, then left out, as openai-agents' `reset_tool_choice` does:
sent on every turn it would force a call forever. "auto" and "none" are always sent.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from agent_core.history import needs_trim, trim_history
from agent_core.messages import (
    MessageInvariantError,
    check_messages,
    sendable,
    system_message,
    tool_message,
    user_message,
)
from agent_core.model.base import (
    ERROR_TEXT_CHARS,
    ChatModel,
    Completed,
    ModelCall,
    ModelCallStopped,
    ModelError,
    ModelHook,
    ModelStream,
    ModelTimeout,
    StreamItem,
    TextDelta,
)
from agent_core.model.recording import RecordingModel
from agent_core.run_types import RunHost, RunResult
from agent_core.tokens import estimate_message, estimate_prompt, estimate_tools, usage_counts
from agent_core.tools.base import CallKey, ToolResult, call_key, tool_versions
from agent_core.tools.runner import (
    Offer,
    PendingCall,
    ToolBox,
    ToolConfigError,
    execute,
    record_end,
    record_start,
)
from agent_core.wire.answer import AssembledResponse
from agent_core.wire.urls import public_base_url
from traces.events import (
    Error,
    Event,
    HistoryTrimmed,
    RunEnd,
    RunStart,
    RunStatus,
    TimeoutLayer,
    ToolsChanged,
)
from traces.text import one_line
from traces.totals import RunningTotals


@dataclass(frozen=True)
class End:
    status: RunStatus
    reason: str
    timeout_layer: TimeoutLayer | None = None
    final_answer: str | None = None


@dataclass
class ModelOutcome:
    """What a streamed model call came to: its answer, or the end of the run."""

    completed: Completed | None = None
    end: End | None = None


@dataclass
class ToolsOutcome:
    """What a turn's tool calls came to: their results, and the end of the run if one ended it."""

    results: list[ToolResult] = field(default_factory=list)
    end: End | None = None


class HookedModel:
    """The agent's model with its hooks applied; `hooks[0]` is the outermost wrapper."""

    def __init__(self, model: ChatModel, hooks: list[ModelHook]) -> None:
        self.model = model
        self.hooks = hooks
        self.name = model.name
        self.base_url = model.base_url
        # A client of another wire format than chat (what the recording says of each call).
        self.api = getattr(model, "api", "chat")
        self.wire_body = getattr(model, "wire_body", None)

    def stream(self, call: ModelCall) -> AsyncIterator[StreamItem]:
        chain: ModelStream = self.model.stream
        for hook in reversed(self.hooks):
            chain = _bind(hook, chain)
        return chain(call)


def _bind(hook: ModelHook, inner: ModelStream) -> ModelStream:
    return lambda call: hook(call, inner)


class LoopRun:
    """The state of one run; `events()` drives it."""

    def __init__(self, agent: RunHost) -> None:
        self.agent = agent
        self.config = agent.config
        self.limits = agent.config.limits
        self.recorder = agent.recorder
        self.model = RecordingModel(HookedModel(agent.model, agent.hooks.model), self.recorder)
        self.messages: list[dict[str, Any]] = []
        # The history's own wire form where known: sent as it was (thinking, reasoning).
        self.wire = list(agent.config.initial_wire)
        self.end: End | None = None
        self.counted = RunningTotals()
        self.last_text: str | None = None
        self.started = time.perf_counter()
        self.run_deadline = 0.0

    # -- the stream -------------------------------------------------------------------

    async def events(self) -> AsyncGenerator[Event | TextDelta, None]:
        try:
            async with aclosing(self._turns()) as turns:
                async for item in turns:
                    yield item
        except asyncio.CancelledError:
            self._end_with(End("cancelled", "the run was cancelled (Ctrl-C or task cancel)"))
            raise
        except KeyboardInterrupt:
            self._end_with(End("cancelled", "interrupted by the user (Ctrl-C)"))
            raise
        except GeneratorExit:
            self._end_with(End("cancelled", "the caller stopped reading the run's events"))
            raise
        except Exception as exc:  # a bug in the loop: still end the trace properly
            self.recorder.emit(Error, where="run", kind="internal", message=_line(exc))
            self._end_with(End("error", f"internal error: {_line(exc)}"))
        finally:
            # The one place a run finishes, whichever way it ended.
            self._finish(self.end or End("error", "internal error: the loop ended without an end"))
        for item in self.recorder.drain():
            yield item

    def _end_with(self, end: End | None) -> End | None:
        """Keep `end` as the run's end unless one was decided first; the run's end."""
        if self.end is None:
            self.end = end
        return self.end

    async def _turns(self) -> AsyncGenerator[Event | TextDelta, None]:
        """Run turn after turn until a step decides the run's end (`self.end`)."""
        clock = asyncio.get_running_loop().time
        self.run_deadline = clock() + self.limits.run_timeout_s
        config = self.config
        try:
            toolbox = self._toolbox()
        except ToolConfigError as exc:
            self._record_start(None)
            self.recorder.emit(Error, where="run", kind="config", message=str(exc))
            self._end_with(End("error", str(exc)))
            return
        if config.initial_messages is not None:
            self.messages = [sendable(message) for message in config.initial_messages]
        else:
            if config.system_prompt:
                self.messages.append(system_message(config.system_prompt))
            self.messages.append(user_message(config.task))
        offer = toolbox.offer(self._query(), self.limits.max_tools, _named_tool(config.params))
        self._record_start(offer)
        for item in self.recorder.drain():
            yield item
        tool_tokens = estimate_tools(offer.schemas)
        versions = tool_versions(self.agent.toolsets)
        previous_keys: list[CallKey] | None = None
        turn = config.start_turn
        while True:
            if turn > self.limits.max_turns:
                self._end_with(End("max_turns", f"reached max_turns={self.limits.max_turns}"))
                break
            self.recorder.turn = turn
            if tool_versions(self.agent.toolsets) != versions:
                offer, versions = self._tools_changed(offer, versions)
                tool_tokens = estimate_tools(offer.schemas)
            estimate = self._prepare_request(tool_tokens)
            if isinstance(estimate, End):
                self._end_with(estimate)
                break
            self.counted.turns += 1
            params = _request_params(config.params, self._called_a_tool())
            call = ModelCall(
                list(self.messages), offer.schemas, params, config.stream, tuple(self.wire)
            )
            answer = ModelOutcome()
            try:
                async with aclosing(self._call_model(call, estimate, answer)) as items:
                    async for item in items:
                        yield item
            finally:
                self._end_with(answer.end)
            if self.end is not None or answer.completed is None:
                break
            response = answer.completed.response
            self.messages.append(response.to_message())
            if response.wire is not None:
                self.wire.append(response.wire)
            if response.content:
                self.last_text = response.content
            calls = [
                offer.prepare(part.id, part.name, part.arguments) for part in response.tool_calls
            ]
            keys = sorted(call_key(call.name, call.arguments, call.arguments_raw) for call in calls)
            if self._end_with(self._after_answer(response, turn, keys, previous_keys)):
                break
            previous_keys = keys
            done = ToolsOutcome()
            try:
                async with aclosing(self._run_tools(calls, turn, offer.names, done)) as items:
                    async for item in items:
                        yield item
            finally:
                self._end_with(done.end)
            if self.end is not None:
                break
            if all(call.return_direct for call in calls) and all(r.ok for r in done.results):
                answer_text = "\n\n".join(result.text for result in done.results)
                self._end_with(End("completed", "return-direct tool answered", None, answer_text))
                break
            turn += 1
        self.recorder.turn = None

    # -- one turn's steps -------------------------------------------------------------

    def _toolbox(self) -> ToolBox:
        config = self.config
        return ToolBox(self.agent.toolsets, config.tool_descriptions, config.offer_reasoning)

    def _tools_changed(
        self, offer: Offer, versions: dict[str, int]
    ) -> tuple[Offer, dict[str, int]]:
        """A toolset's tools changed (MCP list_changed): offer the new set from this turn."""
        now = tool_versions(self.agent.toolsets)
        try:
            toolbox = self._toolbox()
        except ToolConfigError as exc:  # e.g. a new tool clashes; keep what worked
            message = f"the changed tools cannot be offered ({exc}); keeping the previous set"
            self.recorder.emit(Error, where="run", kind="config", message=message)
            return offer, now
        new = toolbox.offer(self._query(), self.limits.max_tools, _named_tool(self.config.params))
        before = {spec.name: spec.source for spec in offer.toolbox.specs}
        after = {spec.name: spec.source for spec in toolbox.specs}
        changed = [source for source, version in now.items() if versions.get(source) != version]
        for source in changed:
            self.recorder.emit(
                ToolsChanged,
                source=source,
                tools=new.schemas,
                added=[n for n, s in after.items() if s == source and n not in before],
                removed=[n for n, s in before.items() if s == source and n not in after],
                dropped=new.dropped,
            )
        return new, now

    def _prepare_request(self, tool_tokens: int) -> int | End:
        """Check the history, trim it if needed and check the budget: the prompt estimate,
        or the end of the run when the history is malformed or the budget would be spent."""
        try:
            check_messages(self.messages)
        except MessageInvariantError as exc:
            self.recorder.emit(Error, where="history", kind="message_invariant", message=str(exc))
            return End("error", f"message history is malformed: {exc}")
        estimate = estimate_prompt(self.messages, []) + tool_tokens
        if needs_trim(estimate, self.limits.context_window):
            trim = trim_history(self.messages, self.limits.keep_rounds, tool_tokens)
            if trim is not None:
                self.recorder.emit(
                    HistoryTrimmed,
                    tokens_before=trim.tokens_before,
                    tokens_after=trim.tokens_after,
                    messages_before=len(self.messages),
                    messages_after=len(trim.messages),
                    rounds_kept=trim.rounds_kept,
                    rounds_dropped=trim.rounds_dropped,
                    summary=trim.summary,
                )
                self.messages = trim.messages
                estimate = trim.tokens_after
        spent = self.counted.total_tokens
        if spent + estimate > self.limits.token_budget:
            return self._over_budget(spent + estimate, before_request=True)
        return estimate

    def _after_answer(
        self,
        response: AssembledResponse,
        turn: int,
        keys: list[CallKey],
        previous_keys: list[CallKey] | None,
    ) -> End | None:
        """The end an answer brings: no tool calls, the budget spent, or the same calls as
        the turn before; None when its tool calls should run."""
        if not response.tool_calls:
            return End("completed", "the model answered without tool calls", None, response.content)
        if self.counted.total_tokens > self.limits.token_budget:
            return self._over_budget(self.counted.total_tokens)
        if keys == previous_keys:
            return End(
                "duplicate_tool_calls",
                f"turn {turn} repeated turn {turn - 1}'s tool calls with the same "
                "arguments; not running them again",
            )
        return None

    async def _call_model(
        self, call: ModelCall, estimate: int, outcome: ModelOutcome
    ) -> AsyncGenerator[Event | TextDelta, None]:
        clock = asyncio.get_running_loop().time
        model_deadline = clock() + self.limits.model_timeout_s
        layer: TimeoutLayer = "model" if model_deadline <= self.run_deadline else "run"
        deadline = min(model_deadline, self.run_deadline)
        stream = self.model.stream(call, estimated_tokens=estimate)
        try:
            while True:
                try:
                    async with asyncio.timeout_at(deadline):
                        item = await anext(stream)
                except StopAsyncIteration:
                    break
                for queued in self.recorder.drain():
                    yield queued
                if isinstance(item, Completed):
                    outcome.completed = item
        except TimeoutError:
            outcome.end = self._timeout(layer, "model call")
        except ModelTimeout as exc:
            outcome.end = End("timeout", f"the model call timed out: {_line(exc)}", "model")
        except ModelCallStopped as exc:
            outcome.end = End("error", _line(exc, ERROR_TEXT_CHARS + 200))
        except ModelError as exc:
            # The server's own words name the cause, often late in a long validation error.
            detail = _line(exc, ERROR_TEXT_CHARS + 200)
            outcome.end = End("error", f"model call failed: {detail}")
        finally:
            await stream.aclose()  # type: ignore[attr-defined]
        for queued in self.recorder.drain():
            yield queued
        if outcome.end is None and outcome.completed is None:
            outcome.end = End("error", "the model stream ended without a response")
        if outcome.completed is not None:
            self._count_usage(outcome.completed, estimate)

    async def _run_tools(
        self, calls: list[PendingCall], turn: int, offered: list[str], outcome: ToolsOutcome
    ) -> AsyncGenerator[Event | TextDelta, None]:
        hooks = self.agent.hooks.tool
        limits = self.limits

        def start(call: PendingCall) -> Awaitable[tuple[ToolResult, float]]:
            return execute(
                call, turn, hooks, limits.tool_timeout_s, limits.max_result_chars, offered
            )

        if len(calls) > 1 and all(call.read_only for call in calls):
            for call in calls:
                record_start(self.recorder, call)
            for item in self.recorder.drain():
                yield item
            tasks = [asyncio.ensure_future(start(call)) for call in calls]
            try:
                for call, task in zip(calls, tasks, strict=True):
                    done = await self._await_tool(task)
                    outcome.end = self._record_result(call, done, outcome.results)
                    for item in self.recorder.drain():
                        yield item
                    if outcome.end is not None:
                        return
            finally:
                for task in tasks:
                    task.cancel()
            return
        for call in calls:
            record_start(self.recorder, call)
            for item in self.recorder.drain():
                yield item
            done = await self._await_tool(asyncio.ensure_future(start(call)))
            outcome.end = self._record_result(call, done, outcome.results)
            for item in self.recorder.drain():
                yield item
            if outcome.end is not None:
                return

    async def _await_tool(
        self, task: asyncio.Future[tuple[ToolResult, float]]
    ) -> tuple[ToolResult, float] | None:
        """The result, or None when the whole run's deadline passed first."""
        try:
            async with asyncio.timeout_at(self.run_deadline):
                return await task
        except TimeoutError:
            return None

    def _record_result(
        self,
        call: PendingCall,
        done: tuple[ToolResult, float] | None,
        results: list[ToolResult],
    ) -> End | None:
        """Record a tool call's end; the end of the run if its time limit stopped it."""
        if done is None:
            result = ToolResult(False, "Error: the run's time limit was reached", "timeout")
            duration = 0.0
        else:
            result, duration = done
        record_end(self.recorder, call, result, duration)
        self.counted.add_tool_call(result.ok)
        self.messages.append(tool_message(call.call_id, result.text))
        results.append(result)
        if done is None:
            return self._timeout("run", f"tool {call.name}")
        if result.meta.get("timeout"):
            return self._timeout("tool", f"tool {call.name}")
        return None

    # -- bookkeeping ------------------------------------------------------------------

    def _query(self) -> str:
        latest = next(
            (m.get("content") for m in reversed(self.messages) if m.get("role") == "user"), None
        )
        return f"{self.config.task}\n{latest if isinstance(latest, str) else ''}"

    def _called_a_tool(self) -> bool:
        return self.counted.tool_calls > 0 or any(
            message.get("role") == "assistant" and message.get("tool_calls")
            for message in self.messages
        )

    def _count_usage(self, completed: Completed, estimate: int) -> None:
        answer = estimate_message(completed.response.to_message())
        self.counted.add_model_call(*usage_counts(completed.response.usage, estimate, answer))

    def _over_budget(self, tokens: int, before_request: bool = False) -> End:
        when = "the next request would bring the run to" if before_request else "the run used"
        return End(
            "token_budget",
            f"{when} {tokens} tokens, over the budget of {self.limits.token_budget}",
        )

    def _timeout(self, layer: TimeoutLayer, what: str) -> End:
        """The end of a run stopped by a time limit, its error recorded."""
        limit = {
            "model": self.limits.model_timeout_s,
            "tool": self.limits.tool_timeout_s,
            "run": self.limits.run_timeout_s,
        }[layer]
        message = f"{what} hit the {layer} time limit of {limit:g} s"
        if layer != "tool":  # a tool's timeout is already in its tool_end
            where = "model" if layer == "model" else "run"
            self.recorder.emit(Error, where=where, kind="timeout", message=message)
        return End("timeout", message, layer)

    def _record_start(self, offer: Offer | None) -> None:
        config = self.config
        specs = offer.specs if offer else []
        meta = dict(config.meta)
        meta.setdefault("offer_reasoning", config.offer_reasoning)
        meta.setdefault("read_only_tools", [spec.name for spec in specs if spec.read_only])
        # The run's duration counts from its run_start, as the trace's clock does
        # (`traces.tree.run_duration_ms`), not from setting up its tools before it.
        self.started = time.perf_counter()
        self.recorder.emit(
            RunStart,
            turn=None,
            task=config.task,
            system_prompt=config.system_prompt,
            model=self.agent.model.name,
            base_url=public_base_url(self.agent.model.base_url),
            params=dict(config.params),
            limits=self.limits,
            tools=offer.schemas if offer else [],
            tool_sources={spec.name: spec.source for spec in specs},
            tools_dropped=offer.dropped if offer else [],
            renamed_tools=offer.renamed if offer else {},
            parent_run_id=config.parent_run_id,
            fork_turn=config.fork_turn,
            edits=list(config.edits),
            meta=meta,
            origin=config.origin,
        )

    def _finish(self, end: End) -> None:
        """Write run_end and set the agent's result (`events()` calls it once)."""
        final = end.final_answer if end.status == "completed" else self.last_text
        totals = self.counted.totals(round((time.perf_counter() - self.started) * 1000, 3))
        self.recorder.emit(
            RunEnd,
            turn=None,
            status=end.status,
            reason=end.reason,
            timeout_layer=end.timeout_layer,
            final_answer=final,
            totals=totals,
        )
        self.recorder.close()
        self.agent.result = RunResult(
            run_id=self.config.run_id,
            status=end.status,
            final_answer=final,
            reason=end.reason,
            timeout_layer=end.timeout_layer,
            totals=totals,
            messages=list(self.messages),
        )


def run_loop(agent: RunHost) -> AsyncIterator[Event | TextDelta]:
    return LoopRun(agent).events()


def _request_params(params: dict[str, Any], called_a_tool: bool) -> dict[str, Any]:
    choice = params.get("tool_choice")
    if called_a_tool and choice is not None and choice not in ("auto", "none"):
        return {key: value for key, value in params.items() if key != "tool_choice"}
    return dict(params)


def _named_tool(params: dict[str, Any]) -> str | None:
    """The tool a `tool_choice` param names, if it names one."""
    choice = params.get("tool_choice")
    function = choice.get("function") if isinstance(choice, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    return name if isinstance(name, str) else None


def _line(exc: BaseException, limit: int = 300) -> str:
    return one_line(str(exc), limit) or type(exc).__name__
