"""Tools defined once: a function plus a pydantic model for its arguments.

The model gives both the JSON Schema offered to the LLM and the validation of each call, so
the two can never disagree. A `ToolRegistry` is a `Toolset`:

    tools = ToolRegistry()

    class AddArgs(BaseModel):
        a: float
        b: float

    @tools.tool(AddArgs, description="Add two numbers. ...", read_only=True)
    def add(args: AddArgs) -> str:
        return str(args.a + args.b)

Handlers may be sync (run in a worker thread so a slow one can time out; the threads are
reused from call to call, so what a handler keeps per thread lives on to a later call) or
async. A handler signals a failure the model should read by raising `ToolFailure`; any
other exception becomes a one-line error result too, never a stack trace. A sync handler
that works in a loop calls `check_cancelled()` in it, so it stops once its call has timed
out.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import os
import queue
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from agent_core.tools.base import ToolResult, ToolSpec
from traces.text import one_line

# How much of a failing tool's error text goes back to the model, on one line.
ERROR_CHARS = 300

Handler = Callable[[Any], Any] | Callable[[Any], Awaitable[Any]]


class ToolFailure(Exception):
    """Raised by a handler for a failure the model can act on; the message is the result."""


class ToolCancelled(Exception):
    """Raised in a sync handler's thread by `check_cancelled` once its call timed out."""


_CANCELLED: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar(
    "tool_cancelled", default=None
)


def check_cancelled() -> None:
    """Stop a sync handler whose call was given up on (its timeout passed)."""
    cancelled = _CANCELLED.get()
    if cancelled is not None and cancelled.is_set():
        raise ToolCancelled


async def run_in_thread(handler: Callable[[Any], Any], args: Any, name: str) -> Any:
    """`handler(args)` in a worker thread (`_WORKERS`). When the caller stops waiting (the
    tool's timeout), the handler is told through `check_cancelled`, and a thread stuck in a
    call that never checks does not keep the process alive at exit (a pool thread of
    `asyncio.to_thread` would: the loop waits for its executor when it closes)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    cancelled = threading.Event()

    def settle(value: Any, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    def work() -> Callable[[], object]:
        _CANCELLED.set(cancelled)
        value, error = None, None
        try:
            value = handler(args)
        except BaseException as exc:  # handed to the awaiting coroutine
            error = exc
        return functools.partial(loop.call_soon_threadsafe, settle, value, error)

    _WORKERS.run(work, name)
    try:
        return await future
    finally:
        cancelled.set()


# A call for a worker: the tool's name and the work, which returns how to hand its result over.
_Job = tuple[str, Callable[[], Callable[[], object]]]


class _Workers:
    """Daemon threads that run sync handlers, one call at a time each, and wait for the
    next call once done. A thread started per call cost a run about 0.3 ms a tool call, and
    its exit ran on into the next steps of the loop, taking the GIL each time the loop let
    go of it (at every trace write). A thread still busy with a call given up on (its
    handler never checks) is simply not reused. At most MAX_IDLE wait; more end."""

    MAX_IDLE = 8

    def __init__(self) -> None:
        self._idle: list[queue.SimpleQueue[_Job]] = []
        self._lock = threading.Lock()

    def run(self, work: Callable[[], Callable[[], object]], name: str) -> None:
        """`work()` on an idle thread, or on a new one (named for the tool), then what it
        returns: handing the result over, once the thread is back among the idle ones."""
        with self._lock:
            jobs = self._idle.pop() if self._idle else None
        if jobs is None:
            jobs = queue.SimpleQueue()
            threading.Thread(target=self._serve, args=(jobs,), daemon=True).start()
        jobs.put((name, work))

    def _serve(self, jobs: queue.SimpleQueue[_Job]) -> None:
        while True:
            name, work = jobs.get()
            threading.current_thread().name = f"tool-{name}"
            # Each call in a context of its own, as in a thread of its own.
            hand_over = contextvars.Context().run(work)
            with self._lock:
                stay = len(self._idle) < self.MAX_IDLE
                if stay:  # idle before the caller hears back: its next call can take it
                    self._idle.append(jobs)
            try:
                hand_over()
            except RuntimeError:  # the loop closed: nobody is waiting
                pass
            except BaseException:
                with self._lock:
                    if jobs in self._idle:
                        self._idle.remove(jobs)  # no call may wait on a thread that ended
                raise
            if not stay:
                return

    def forget(self) -> None:
        """After a fork: the child has none of the parent's threads."""
        self._idle = []
        self._lock = threading.Lock()


_WORKERS = _Workers()
os.register_at_fork(after_in_child=_WORKERS.forget)


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    args_model: type[BaseModel]
    handler: Handler
    read_only: bool = False
    return_direct: bool = False

    def spec(self, source: str) -> ToolSpec:
        return ToolSpec(
            name=self.name,
            description=self.description,
            parameters=schema_for(self.args_model),
            read_only=self.read_only,
            return_direct=self.return_direct,
            source=source,
        )


def schema_for(args_model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON Schema in the plain shape chat APIs accept (no titles)."""
    schema: dict[str, Any] = _strip_titles(args_model.model_json_schema())
    return schema


def _strip_titles(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            key: _strip_titles(item)
            for key, item in value.items()
            if not (key == "title" and isinstance(item, str))
        }
    if isinstance(value, list):
        return [_strip_titles(item) for item in value]
    return value


def validation_message(exc: ValidationError) -> str:
    """One line per bad field, the way a model can fix its call."""
    parts = []
    for error in exc.errors()[:5]:
        where = ".".join(str(item) for item in error.get("loc", ())) or "arguments"
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    return "; ".join(parts)


class ToolRegistry:
    """A named set of tools; implements the `Toolset` protocol."""

    def __init__(self, source: str = "user") -> None:
        self.source = source
        self._tools: dict[str, Tool] = {}

    def add(self, tool: Tool) -> Tool:
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is already registered")
        self._tools[tool.name] = tool
        return tool

    def tool(
        self,
        args_model: type[BaseModel],
        *,
        name: str | None = None,
        description: str | None = None,
        read_only: bool = False,
        return_direct: bool = False,
    ) -> Callable[[Handler], Handler]:
        """Decorator: register `fn(args) -> str` under its own name (or `name`)."""

        def register(fn: Handler) -> Handler:
            text = description or inspect.getdoc(fn) or ""
            self.add(
                Tool(
                    name=name or fn.__name__,
                    description=text.strip(),
                    args_model=args_model,
                    handler=fn,
                    read_only=read_only,
                    return_direct=return_direct,
                )
            )
            return fn

        return register

    @property
    def tools(self) -> list[Tool]:
        return list(self._tools.values())

    def specs(self) -> list[ToolSpec]:
        return [tool.spec(self.source) for tool in self._tools.values()]

    async def call(self, name: str, arguments: dict[str, Any], call_id: str) -> ToolResult:
        tool = self._tools.get(name)
        if tool is None:
            known = ", ".join(self._tools) or "none"
            return ToolResult(
                False, f"Error: unknown tool {name!r}. Tools: {known}.", "unknown_tool"
            )
        try:
            args = tool.args_model.model_validate(arguments)
        except ValidationError as exc:
            message = validation_message(exc)
            return ToolResult(
                False, f"Error: invalid arguments for {name}: {message}", "bad_arguments"
            )
        try:
            if inspect.iscoroutinefunction(tool.handler):
                value = await tool.handler(args)
            else:
                value = await run_in_thread(tool.handler, args, name)
        except ToolFailure as exc:
            return ToolResult(False, f"Error: {one_line(str(exc), ERROR_CHARS)}", "tool_failure")
        except Exception as exc:
            detail = one_line(f"{type(exc).__name__}: {exc}", ERROR_CHARS)
            return ToolResult(False, f"Error: {name} failed: {detail}", "exception")
        return ToolResult(True, value if isinstance(value, str) else str(value))
