"""The ReAct loop: build messages → call the model → parse → run tools → check for the end.

`run_loop(agent)` is an async generator of every trace event and `TextDelta`, in the order
they happen; the CLI printer, the JSONL sink and the TUI all consume this one stream. Each
turn is finished and recorded here, and every way a run can end goes through `_finish`,
which writes `run_end` and sets `agent.result`.

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
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

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
    ModelError,
    ModelTimeout,
    StreamItem,
)
from agent_core.model.recording import RecordingModel
from agent_core.tokens import estimate_message, estimate_prompt, estimate_tools
from agent_core.tools.base import ToolResult
from agent_core.tools.runner import (
    PendingCall,
    ToolBox,
    ToolConfigError,
    call_key,
    execute,
    record_end,
    record_start,
)
from traces.events import (
    Error,
    Event,
    HistoryTrimmed,
    RunEnd,
    RunStart,
    RunStatus,
    TimeoutLayer,
    Totals,
)

if TYPE_CHECKING:
    from agent_core.agent import Agent, TextDelta


@dataclass(frozen=True)
class End:
    status: RunStatus
    reason: str
    timeout_layer: TimeoutLayer | None = None
    final_answer: str | None = None


class HookedModel:
    """The agent's model with its hooks applied; `hooks[0]` is the outermost wrapper."""

    def __init__(self, model: ChatModel, hooks: list[Callable[..., Any]]) -> None:
        self.model = model
        self.hooks = hooks
        self.name = model.name
        self.base_url = model.base_url

    def stream(self, call: ModelCall) -> AsyncIterator[StreamItem]:
        chain: Callable[[ModelCall], AsyncIterator[StreamItem]] = self.model.stream
        for hook in reversed(self.hooks):
            chain = _bind(hook, chain)
        return chain(call)


def _bind(
    hook: Callable[..., AsyncIterator[StreamItem]],
    inner: Callable[[ModelCall], AsyncIterator[StreamItem]],
) -> Callable[[ModelCall], AsyncIterator[StreamItem]]:
    return lambda call: hook(call, inner)


def public_base_url(url: str | None) -> str | None:
    """The base URL without user:password or query secrets."""
    if not url:
        return url
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class LoopRun:
    """The state of one run; `events()` drives it."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.config = agent.config
        self.limits = agent.config.limits
        self.recorder = agent.recorder
        self.model = RecordingModel(HookedModel(agent.model, agent.hooks.model), self.recorder)
        self.messages: list[dict[str, Any]] = []
        self.end: End | None = None
        self.turns = self.model_calls = self.tool_calls = self.tool_errors = 0
        self.input_tokens = self.output_tokens = self.spent_tokens = 0
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
            self._finish(End("cancelled", "the run was cancelled (Ctrl-C or task cancel)"))
            raise
        except KeyboardInterrupt:
            self._finish(End("cancelled", "interrupted by the user (Ctrl-C)"))
            raise
        except GeneratorExit:
            self._finish(End("cancelled", "the caller stopped reading the run's events"))
            raise
        except Exception as exc:  # a bug in the loop: still end the trace properly
            self.recorder.emit(Error, where="run", kind="internal", message=_line(exc))
            self._finish(End("error", f"internal error: {_line(exc)}"))
        for item in self.recorder.drain():
            yield item

    async def _turns(self) -> AsyncGenerator[Event | TextDelta, None]:
        clock = asyncio.get_running_loop().time
        self.run_deadline = clock() + self.limits.run_timeout_s
        config = self.config
        try:
            toolbox = ToolBox(self.agent.toolsets, config.tool_descriptions, config.offer_reasoning)
        except ToolConfigError as exc:
            self._record_start([], {}, [])
            self.recorder.emit(Error, where="run", kind="config", message=str(exc))
            self._finish(End("error", str(exc)))
            return
        if config.initial_messages is not None:
            self.messages = [sendable(message) for message in config.initial_messages]
        else:
            if config.system_prompt:
                self.messages.append(system_message(config.system_prompt))
            self.messages.append(user_message(config.task))
        offered = toolbox.offer(self._query(), self.limits.max_tools)
        schemas = [toolbox.schema(spec) for spec in offered]
        offered_names = [spec.name for spec in offered]
        self._record_start(
            schemas,
            {spec.name: spec.source for spec in offered},
            [spec.name for spec in offered if spec.read_only],
        )
        for item in self.recorder.drain():
            yield item
        tool_tokens = estimate_tools(schemas)
        previous_keys: list[tuple[str, str]] | None = None
        turn = config.start_turn
        while self.end is None:
            if turn > self.limits.max_turns:
                self._finish(End("max_turns", f"reached max_turns={self.limits.max_turns}"))
                break
            self.recorder.turn = turn
            estimate = self._prepare_request(tool_tokens)
            if self.end is None:
                self.turns += 1
                params = _request_params(config.params, self._called_a_tool())
                call = ModelCall(list(self.messages), schemas, params, config.stream)
                completed: list[Completed] = []
                async with aclosing(self._call_model(call, estimate, completed)) as items:
                    async for item in items:
                        yield item
            if self.end is not None:
                break
            response = completed[0].response
            message = response.to_message()
            self.messages.append(message)
            if response.content:
                self.last_text = response.content
            if not response.tool_calls:
                self._finish(
                    End(
                        "completed", "the model answered without tool calls", None, response.content
                    )
                )
                break
            if self.spent_tokens > self.limits.token_budget:
                self._finish(self._over_budget(self.spent_tokens))
                break
            calls = [
                toolbox.prepare(part.id, part.name, part.arguments, set(offered_names))
                for part in response.tool_calls
            ]
            keys = sorted(call_key(call) for call in calls)
            if keys == previous_keys:
                self._finish(
                    End(
                        "duplicate_tool_calls",
                        f"turn {turn} repeated turn {turn - 1}'s tool calls with the same "
                        "arguments; not running them again",
                    )
                )
                break
            previous_keys = keys
            results: list[ToolResult] = []
            async with aclosing(self._run_tools(calls, turn, offered_names, results)) as items:
                async for item in items:
                    yield item
            if self.end is not None:
                break
            if all(call.return_direct for call in calls) and all(r.ok for r in results):
                answer = "\n\n".join(result.text for result in results)
                self._finish(End("completed", "return-direct tool answered", None, answer))
                break
            turn += 1
        self.recorder.turn = None

    # -- one turn's steps -------------------------------------------------------------

    def _prepare_request(self, tool_tokens: int) -> int:
        """Check the history, trim it if needed and check the budget; the prompt estimate."""
        try:
            check_messages(self.messages)
        except MessageInvariantError as exc:
            self.recorder.emit(Error, where="history", kind="message_invariant", message=str(exc))
            self._finish(End("error", f"message history is malformed: {exc}"))
            return 0
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
        if self.spent_tokens + estimate > self.limits.token_budget:
            self._finish(self._over_budget(self.spent_tokens + estimate, before_request=True))
        return estimate

    async def _call_model(
        self, call: ModelCall, estimate: int, completed: list[Completed]
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
                    completed.append(item)
        except TimeoutError:
            self._timeout(layer, "model call")
        except ModelTimeout as exc:
            self._finish(End("timeout", f"the model call timed out: {_line(exc)}", "model"))
        except ModelError as exc:
            # The server's own words name the cause, often late in a long validation error.
            detail = _line(exc, ERROR_TEXT_CHARS + 200)
            self._finish(End("error", f"model call failed: {detail}"))
        finally:
            await stream.aclose()  # type: ignore[attr-defined]
        for queued in self.recorder.drain():
            yield queued
        if self.end is None and not completed:
            self._finish(End("error", "the model stream ended without a response"))
        if completed:
            self._count_usage(completed[-1], estimate)

    async def _run_tools(
        self, calls: list[PendingCall], turn: int, offered: list[str], results: list[ToolResult]
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
                    self._record_result(call, done, results)
                    for item in self.recorder.drain():
                        yield item
                    if self.end is not None:
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
            self._record_result(call, done, results)
            for item in self.recorder.drain():
                yield item
            if self.end is not None:
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
    ) -> None:
        if done is None:
            result = ToolResult(False, "Error: the run's time limit was reached", "timeout")
            duration = 0.0
        else:
            result, duration = done
        record_end(self.recorder, call, result, duration)
        self.tool_calls += 1
        self.tool_errors += 0 if result.ok else 1
        self.messages.append(tool_message(call.call_id, result.text))
        results.append(result)
        if done is None:
            self._timeout("run", f"tool {call.name}")
        elif result.meta.get("timeout"):
            self._timeout("tool", f"tool {call.name}")

    # -- bookkeeping ------------------------------------------------------------------

    def _query(self) -> str:
        latest = next(
            (m.get("content") for m in reversed(self.messages) if m.get("role") == "user"), None
        )
        return f"{self.config.task}\n{latest if isinstance(latest, str) else ''}"

    def _called_a_tool(self) -> bool:
        return self.tool_calls > 0 or any(
            message.get("role") == "assistant" and message.get("tool_calls")
            for message in self.messages
        )

    def _count_usage(self, completed: Completed, estimate: int) -> None:
        self.model_calls += 1
        usage = completed.response.usage or {}
        answer = estimate_message(completed.response.to_message())
        prompt = _int(usage.get("prompt_tokens"), estimate)
        output = _int(usage.get("completion_tokens"), answer)
        self.input_tokens += prompt
        self.output_tokens += output
        self.spent_tokens += _int(usage.get("total_tokens"), prompt + output)

    def _over_budget(self, tokens: int, before_request: bool = False) -> End:
        when = "the next request would bring the run to" if before_request else "the run used"
        return End(
            "token_budget",
            f"{when} {tokens} tokens, over the budget of {self.limits.token_budget}",
        )

    def _timeout(self, layer: TimeoutLayer, what: str) -> None:
        limit = {
            "model": self.limits.model_timeout_s,
            "tool": self.limits.tool_timeout_s,
            "run": self.limits.run_timeout_s,
        }[layer]
        message = f"{what} hit the {layer} time limit of {limit:g} s"
        if layer != "tool":  # a tool's timeout is already in its tool_end
            where = "model" if layer == "model" else "run"
            self.recorder.emit(Error, where=where, kind="timeout", message=message)
        self._finish(End("timeout", message, layer))

    def _record_start(
        self, schemas: list[dict[str, Any]], sources: dict[str, str], read_only: list[str]
    ) -> None:
        config = self.config
        meta = dict(config.meta)
        meta.setdefault("offer_reasoning", config.offer_reasoning)
        meta.setdefault("read_only_tools", read_only)
        self.recorder.emit(
            RunStart,
            turn=None,
            task=config.task,
            system_prompt=config.system_prompt,
            model=self.agent.model.name,
            base_url=public_base_url(self.agent.model.base_url),
            params=dict(config.params),
            limits=self.limits,
            tools=schemas,
            tool_sources=sources,
            parent_run_id=config.parent_run_id,
            fork_turn=config.fork_turn,
            edits=list(config.edits),
            meta=meta,
            origin=config.origin,
        )

    def _finish(self, end: End) -> None:
        """Write run_end once and set the agent's result; later ends are ignored."""
        if self.agent.result is not None:
            return
        self.end = end
        from agent_core.agent import RunResult

        final = end.final_answer if end.status == "completed" else self.last_text
        totals = Totals(
            turns=self.turns,
            model_calls=self.model_calls,
            tool_calls=self.tool_calls,
            tool_errors=self.tool_errors,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            total_tokens=self.spent_tokens,
            duration_ms=round((time.perf_counter() - self.started) * 1000, 3),
        )
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


def run_loop(agent: Agent) -> AsyncIterator[Event | TextDelta]:
    return LoopRun(agent).events()


def _request_params(params: dict[str, Any], called_a_tool: bool) -> dict[str, Any]:
    choice = params.get("tool_choice")
    if called_a_tool and choice is not None and choice not in ("auto", "none"):
        return {key: value for key, value in params.items() if key != "tool_choice"}
    return dict(params)


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _line(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:limit]
