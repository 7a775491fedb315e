"""Models that answer from a script or a function instead of a network endpoint.

They stream the same OpenAI-shaped chunk dicts a real endpoint would, through the same
assembler, so a scripted run yields exactly the item shapes (and, recorded, the events) of a
real one. `ScriptedModel` fails loudly on a call its script has no step for and can report
steps that were never used; `FunctionModel` computes each step from the call.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeAlias

from agent_core.model.base import (
    AttemptFailed,
    AttemptStarted,
    Completed,
    ModelCall,
    ModelError,
    ModelTimeout,
    RawChunk,
    StreamItem,
)
from agent_core.model.retry import retriable_status
from agent_core.model.script import (
    Script,
    ScriptExhaustedError,
    ScriptStep,
    load_script,
    step_chunks,
    step_completion,
    used_call_ids,
)
from agent_core.wire.chat_completions import StreamAssembler, chunk_from_completion

StepLike: TypeAlias = ScriptStep | dict[str, Any]
StepFunction: TypeAlias = Callable[[ModelCall], StepLike | Awaitable[StepLike]]


class _StepModel:
    """Streams one step per attempt; a retriable scripted error moves on to the next step
    as the next attempt, like the real client's retry would."""

    base_url: str | None = None

    def __init__(self, name: str, max_attempts: int) -> None:
        self.name = name
        self.max_attempts = max_attempts
        self.calls = 0

    async def _step_for(self, call: ModelCall) -> ScriptStep:
        raise NotImplementedError

    async def stream(self, call: ModelCall) -> AsyncIterator[StreamItem]:
        self.calls += 1
        call_number = self.calls
        attempt = 0
        while True:
            attempt += 1
            yield AttemptStarted(attempt)
            try:
                step = await self._step_for(call)
            except ScriptExhaustedError as exc:
                yield AttemptFailed(attempt, exc.kind, str(exc), retriable=False)
                raise
            started = time.monotonic()
            if step.delay_ms > 0:
                await asyncio.sleep(step.delay_ms / 1000.0)
            error = step.error
            if error is not None:
                kind = error.effective_kind()
                if kind == "timeout":
                    yield AttemptFailed(attempt, kind, error.message, retriable=False)
                    raise ModelTimeout(error.message)
                retriable = kind == "connection" or retriable_status(error.status)
                will_retry = retriable and attempt < self.max_attempts
                yield AttemptFailed(
                    attempt, kind, error.message, retriable, error.status, will_retry
                )
                if will_retry:
                    continue
                raise ModelError(kind, error.message, status_code=error.status)
            response_id = f"chatcmpl-{self.name}-{call_number}"
            assembler = StreamAssembler()
            ttft_ms: float | None = None
            # A forked conversation holds ids from another session: default ids avoid them.
            taken = used_call_ids(call.messages)
            if call.stream:
                chunks = step_chunks(
                    step,
                    model=self.name,
                    response_id=response_id,
                    call_number=call_number,
                    taken=taken,
                )
            else:
                chunks = [
                    step_completion(
                        step,
                        model=self.name,
                        response_id=response_id,
                        call_number=call_number,
                        taken=taken,
                    )
                ]
            for index, data in enumerate(chunks):
                text = assembler.add(data if call.stream else chunk_from_completion(data))
                elapsed_ms = (time.monotonic() - started) * 1000.0
                if ttft_ms is None and assembler.saw_output:
                    ttft_ms = elapsed_ms
                yield RawChunk(attempt, index, elapsed_ms, data, text)
            latency_ms = (time.monotonic() - started) * 1000.0
            yield Completed(attempt, assembler.result(), ttft_ms, latency_ms, len(chunks))
            return


class ScriptedModel(_StepModel):
    """Answers each call with the next matching step of a script.

    Raises `ScriptExhaustedError` (a `ModelError`) on a call with no step left;
    `assert_done()` raises if steps were never used.
    """

    def __init__(
        self, steps: Sequence[StepLike], name: str = "scripted", *, max_attempts: int = 3
    ) -> None:
        super().__init__(name, max_attempts)
        self.script = Script(steps)
        self._steps = list(steps)

    def fresh(self) -> ScriptedModel:
        """The same script from its first step: what a regression sample answers from, so
        each sample of a case meets the whole script (not what earlier samples left)."""
        return ScriptedModel(self._steps, self.name, max_attempts=self.max_attempts)

    @classmethod
    def from_file(cls, path: str | Path, *, name: str | None = None) -> ScriptedModel:
        """Load a JSON or TOML script (see docs/script-format.md); raises `ScriptError`."""
        steps, settings = load_script(path)
        return cls(list(steps), name=name or str(settings.get("name") or "scripted"))

    async def _step_for(self, call: ModelCall) -> ScriptStep:
        return self.script.next_step(call)

    @property
    def remaining(self) -> list[ScriptStep]:
        return self.script.remaining

    def assert_done(self) -> None:
        self.script.assert_done()


class FunctionModel(_StepModel):
    """Answers each call with the step `fn(call)` returns (sync or async)."""

    def __init__(self, fn: StepFunction, name: str = "function", *, max_attempts: int = 3) -> None:
        super().__init__(name, max_attempts)
        self.fn = fn

    async def _step_for(self, call: ModelCall) -> ScriptStep:
        result = self.fn(call)
        if inspect.isawaitable(result):
            result = await result
        return result if isinstance(result, ScriptStep) else ScriptStep.model_validate(result)
