"""The one module that speaks to MCP servers through the official `mcp` SDK.

`connect()` starts a stdio server (or reaches a streamable HTTP one), runs the initialize
handshake and yields an `McpConnection`. Every JSON-RPC frame in both directions passes a tap
placed between the transport's memory streams and the `ClientSession`, so the caller sees the
frames exactly as they cross the wire (parsed, with unset fields left out), including lines a
server wrote to stdout that are not JSON-RPC at all.

Nothing here knows about traces or tools; callers pass `on_frame` and convert the plain dicts
this module returns. Failures come out as `McpStartError` (the server never became usable) or
`McpCallError` (one request failed: JSON-RPC error, timeout, connection lost, bad result).
The servers' settings, those errors and the bookkeeping of a server's processes need no SDK
and live in `agent_core.mcp_servers`.
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, Literal, TypeAlias

import anyio
import anyio.abc
import httpx2
import mcp_types as types
from mcp.client.session import ClientRequestContext, ClientSession, IncomingMessage
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from agent_core.mcp_servers import (
    DEFAULT_START_TIMEOUT_S,
    HttpServerConfig,
    McpCallError,
    McpStartError,
    ServerConfig,
    StderrLog,
    StdioServerConfig,
    child_pids,
    exception_leaves,
    group_alive,
    os_reason,
    session_leader,
    sole_leaf,
    stderr_summary,
    tail_on_one_line,
)

log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_START_TIMEOUT_S",
    "FrameDirection",
    "FrameObserver",
    "HttpServerConfig",
    "McpCallError",
    "McpConnection",
    "McpStartError",
    "ServerConfig",
    "StdioServerConfig",
    "connect",
]

FrameDirection: TypeAlias = Literal["send", "recv"]
FrameObserver: TypeAlias = Callable[[FrameDirection, dict[str, Any]], None]

CLIENT_INFO = types.Implementation(name="agent-workbench", version="0.1.0")
MAX_TOOL_PAGES = 100  # a server whose cursor never ends must not hang the start
# Where in an unreadable line to look for the id of the request it answers.
_ANSWER_HEAD_CHARS = 500
_ANSWER_ID = re.compile(r'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')


class _QuietParseErrors(logging.Filter):
    """The SDK logs a traceback for every stdout line that is not JSON-RPC; the tap records
    each such line as a frame and `McpConnection` logs one line per server instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Failed to parse JSONRPC message")


logging.getLogger("mcp.client.stdio").addFilter(_QuietParseErrors())
REFRESH_TIMEOUT_S = 30.0  # a re-listing after list_changed that takes longer is given up
HTTP_TIMEOUT_S = 30.0
HTTP_READ_S = 300.0


def _dump(message: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = message.model_dump(by_alias=True, mode="json", exclude_unset=True)
    return dumped


def _answer_to_unreadable(exc: Exception) -> SessionMessage | None:
    """An error answer standing in for a line that answers a request but cannot be read (a
    result nested too deeply for the SDK's parser, say), so the call fails at once with
    the reason instead of waiting for its timeout."""
    if not isinstance(exc, ValidationError) or not exc.errors():
        return None
    first = exc.errors()[0]
    line = first.get("input")
    if not isinstance(line, str | bytes):
        return None
    head = (line.decode("utf-8", "replace") if isinstance(line, bytes) else line)[
        :_ANSWER_HEAD_CHARS
    ]
    match = _ANSWER_ID.search(head)
    if match is None or '"method"' in head or not ('"result"' in head or '"error"' in head):
        return None
    request_id = json.loads(match.group(1))
    reason = str(first.get("msg", "unreadable")).removeprefix("Invalid JSON: ")
    error = types.ErrorData(
        code=types.PARSE_ERROR, message=f"the server's answer could not be read: {reason}"
    )
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


def _unparsed_frame(exc: Exception) -> dict[str, Any]:
    """What a transport delivered instead of a JSON-RPC message, kept for the trace."""
    if isinstance(exc, ValidationError) and exc.errors():
        first = exc.errors()[0]
        return {"_unparsed": first.get("input"), "_error": first.get("msg", str(exc))}
    return {"_transport_error": f"{type(exc).__name__}: {exc}"}


class _TapReceive:
    """Read side of the transport, reporting each inbound frame before the session sees it."""

    def __init__(
        self,
        inner: Any,
        observe: Callable[[SessionMessage | Exception], None],
        on_end: Callable[[], None],
    ) -> None:
        self._inner = inner
        self._observe = observe
        self._on_end = on_end

    @property
    def last_context(self) -> Any:  # the dispatcher restores the sender's contextvars from it
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        try:
            item: SessionMessage | Exception = await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._on_end()
            raise
        self._observe(item)
        if isinstance(item, Exception):
            return _answer_to_unreadable(item) or item
        return item

    def __aiter__(self) -> _TapReceive:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _TapReceive:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class _TapSend:
    """Write side of the transport, reporting each outbound frame as it is handed over."""

    def __init__(self, inner: Any, observe: Callable[[SessionMessage], None]) -> None:
        self._inner = inner
        self._observe = observe

    async def send(self, item: SessionMessage) -> None:
        self._observe(item)
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _TapSend:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def _accept_with_defaults(schema: dict[str, Any]) -> dict[str, Any]:
    properties = schema.get("properties") or {}
    return {key: spec["default"] for key, spec in properties.items() if "default" in spec}


async def _elicit_defaults(
    context: ClientRequestContext, params: types.ElicitRequestParams
) -> types.ElicitResult | types.ErrorData:
    """Accept a form elicitation with the schema's defaults (the conformance driver's user)."""
    if isinstance(params, types.ElicitRequestFormParams):
        return types.ElicitResult(
            action="accept", content=_accept_with_defaults(params.requested_schema)
        )
    return types.ElicitResult(action="decline")


class McpConnection:
    """A live, initialized session with one server."""

    def __init__(self, config: ServerConfig, on_frame: FrameObserver) -> None:
        self.config = config
        self.name = config.name
        self.server_info: dict[str, Any] = {}
        self.tools: list[dict[str, Any]] = []  # as listed on the wire (camelCase keys)
        self.tools_version = 0  # bumped on every completed listing
        # list_changed notifications seen, and the re-listings they caused that have ended
        # (done or failed): a caller can wait until the server's latest list is known.
        self.refreshes_wanted = 0
        self.refreshes_done = 0
        self._refreshed = anyio.Event()
        self.closed = False  # the transport ended (server exited or dropped us)
        self.last_bad_output: str | None = None
        self._warned_bad_output = False
        self.server_pid: int | None = None  # a stdio server's process (and group) id
        self.failure: str | None = None  # why the transport failed under a live session
        self._on_frame = on_frame
        self._session: ClientSession | None = None
        self._stderr: StderrLog | None = None
        self._list_lock = anyio.Lock()
        self._tools_listed = anyio.Event()
        self._stop = anyio.Event()

    # -- frames ---------------------------------------------------------------------------
    def _sent(self, item: SessionMessage) -> None:
        self._emit("send", _dump(item.message))

    def _received(self, item: SessionMessage | Exception) -> None:
        if isinstance(item, Exception):
            frame = _unparsed_frame(item)
            bad = frame.get("_unparsed", frame.get("_transport_error"))
            self.last_bad_output = str(bad)[:200]
            if not self._warned_bad_output:
                self._warned_bad_output = True
                log.warning(
                    "MCP server %r writes output that is not JSON-RPC (kept in the trace as "
                    "mcp_message frames), first: %r",
                    self.name,
                    self.last_bad_output[:120],
                )
            self._emit("recv", frame)
        else:
            frame = _dump(item.message)
            if frame.get("method") == "notifications/tools/list_changed":
                # Counted here, as the frame arrives: a tool result that follows it on the
                # wire can then wait for the re-listing it causes.
                self.refreshes_wanted += 1
            self._emit("recv", frame)

    def _emit(self, direction: FrameDirection, frame: dict[str, Any]) -> None:
        try:
            self._on_frame(direction, frame)
        except Exception:  # a failing observer must not break the session
            log.exception("MCP frame observer failed")

    def _ended(self) -> None:
        self.closed = True

    def wrap_streams(self, read: Any, write: Any) -> tuple[_TapReceive, _TapSend]:
        return _TapReceive(read, self._received, self._ended), _TapSend(write, self._sent)

    # -- requests -------------------------------------------------------------------------
    @property
    def session(self) -> ClientSession:
        assert self._session is not None, "connection not started"
        return self._session

    def stderr_tail(self) -> str:
        return self._stderr.tail() if self._stderr else ""

    async def list_tools(self) -> list[dict[str, Any]]:
        """Fetch every page of tools/list and keep the result in `self.tools`."""
        async with self._list_lock:
            tools: dict[str, dict[str, Any]] = {}
            cursor: str | None = None
            cursors: set[str] = set()
            for _ in range(MAX_TOOL_PAGES):
                params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
                try:
                    result = await self.session.list_tools(params=params)
                except MCPError as exc:
                    raise self._call_error(exc, "tools/list", 0) from None
                except ValidationError as exc:
                    message = f"invalid tools/list result: {tail_on_one_line(str(exc), 200)}"
                    raise McpCallError("protocol", message) from None
                for tool in result.tools:
                    # A tool listed twice (a repeated page) is one tool: the first listing.
                    tools.setdefault(tool.name, _dump(tool))
                cursor = result.next_cursor
                if not cursor or cursor in cursors:
                    break
                cursors.add(cursor)
            else:
                log.warning(
                    "MCP server %r still had more tools after %d pages; using the first %d",
                    self.name,
                    MAX_TOOL_PAGES,
                    len(tools),
                )
            self.tools = list(tools.values())
            self.tools_version += 1
            listed, self._tools_listed = self._tools_listed, anyio.Event()
            listed.set()
            return self.tools

    async def call_tool(
        self, name: str, arguments: dict[str, Any], timeout_s: float
    ) -> dict[str, Any]:
        """Run tools/call; returns the raw result (`content`, `structuredContent`, `isError`)."""
        if self.closed:
            raise McpCallError("closed", self._closed_message("is not running"))
        try:
            # The SDK's own timeout sends notifications/cancelled; the outer bound also covers
            # a write that blocks because the server stopped reading its stdin.
            with anyio.fail_after(timeout_s + 2.0):
                result = await self.session.call_tool(
                    name, arguments, read_timeout_seconds=timeout_s, progress_callback=_ignore
                )
        except TimeoutError:
            raise McpCallError("timeout", self._timeout_message(name, timeout_s)) from None
        except MCPError as exc:
            raise self._call_error(exc, name, timeout_s) from None
        except (RuntimeError, ValidationError) as exc:  # result failing the SDK's checks
            raise McpCallError("protocol", f"invalid result from tool '{name}': {exc}") from None
        return _dump(result)

    def _call_error(self, exc: MCPError, name: str, timeout_s: float) -> McpCallError:
        if exc.code == types.REQUEST_TIMEOUT:
            return McpCallError("timeout", self._timeout_message(name, timeout_s), exc.code)
        # -32000 is also a generic server error code; only the SDK's own closure is a crash.
        lost = self.closed or exc.message == "Connection closed"
        if exc.code == types.CONNECTION_CLOSED and lost:
            return McpCallError("closed", self._closed_message("closed the connection"), exc.code)
        return McpCallError("rpc_error", f"{exc.message} (JSON-RPC error {exc.code})", exc.code)

    def _timeout_message(self, name: str, timeout_s: float) -> str:
        message = f"tool '{name}' on MCP server '{self.name}' timed out after {timeout_s:g}s"
        if self.last_bad_output:
            message += f"; the server wrote non-JSON-RPC output: {self.last_bad_output!r}"
        return message

    def _closed_message(self, what: str) -> str:
        message = f"MCP server '{self.name}' {what} (it may have crashed)"
        if self.failure:
            message += f"; {self.failure}"
        stderr = self.stderr_tail()
        if stderr.strip():
            message += f"; stderr: {stderr_summary(stderr, 200)}"
        return message

    async def wait_tools_version(self, version: int) -> None:
        """Wait until the tool list has been fetched `version` times (1 is the first listing)."""
        while self.tools_version < version:
            await self._tools_listed.wait()

    async def tools_settled(self) -> None:
        """Wait until every list_changed seen so far has been followed by a re-listing."""
        while self.refreshes_done < self.refreshes_wanted:
            await self._refreshed.wait()

    async def _handle(self, message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            try:
                with anyio.fail_after(REFRESH_TIMEOUT_S):
                    await self.list_tools()
            except (McpCallError, TimeoutError) as exc:  # the previous list stays in use
                log.warning("refreshing tools of MCP server %r failed: %r", self.name, exc)
            finally:
                self.refreshes_done += 1
                refreshed, self._refreshed = self._refreshed, anyio.Event()
                refreshed.set()


async def _ignore(progress: float, total: float | None, message: str | None) -> None:
    """Asking for progress makes servers send notifications/progress, which the tap records."""


@asynccontextmanager
async def connect(
    config: ServerConfig,
    on_frame: FrameObserver,
    *,
    startup_timeout_s: float = DEFAULT_START_TIMEOUT_S,
    accept_elicitation: bool = False,
) -> AsyncIterator[McpConnection]:
    """Start or reach one server, initialize it and list its tools.

    The transport and session live in a task of their own, so a transport that dies (an HTTP
    server going away) closes this connection instead of cancelling the caller, and requests
    can be made from any task. On exit the session ends and a stdio server is stopped (stdin
    closed, then SIGTERM and SIGKILL to its process group): no child outlives the block.
    """
    connection = McpConnection(config, on_frame)
    try:
        async with anyio.create_task_group() as group:
            await group.start(_serve, connection, startup_timeout_s, accept_elicitation)
            try:
                yield connection
            finally:
                connection._stop.set()
    except BaseExceptionGroup as wrapped:
        # anyio wraps even a lone exception from the block; hand callers the real one.
        sole = sole_leaf(wrapped)
        if sole is None:
            raise
        raise sole from sole.__cause__


async def _serve(
    connection: McpConnection,
    startup_timeout_s: float,
    accept_elicitation: bool,
    *,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    config = connection.config
    started = False
    try:
        async with AsyncExitStack() as stack:
            read, write = await _open_transport(config, connection, stack)
            tap_read, tap_write = connection.wrap_streams(read, write)
            session = ClientSession(
                tap_read,
                tap_write,
                client_info=CLIENT_INFO,
                message_handler=connection._handle,
                elicitation_callback=_elicit_defaults if accept_elicitation else None,
            )
            await stack.enter_async_context(session)
            connection._session = session
            await _handshake(connection, startup_timeout_s)
            started = True
            task_status.started()
            await connection._stop.wait()
    except Exception as exc:
        leaves = exception_leaves(exc)
        if started:
            # The transport failed under a live session; pending calls already got
            # "connection closed", later ones are refused.
            connection.closed = True
            connection.failure = f"{type(leaves[0]).__name__}: {leaves[0]}"
            log.warning("MCP server %r connection failed: %s", config.name, connection.failure)
            return
        for leaf in leaves:
            if isinstance(leaf, McpStartError):
                raise leaf from None
        raise _start_error(connection, leaves[0]) from None


def _start_error(connection: McpConnection, exc: BaseException) -> McpStartError:
    config = connection.config
    if isinstance(exc, OSError) and isinstance(config, StdioServerConfig):
        reason = os_reason(exc)
    elif isinstance(config, HttpServerConfig):
        reason = f"cannot reach {config.url}: {exc or type(exc).__name__}"
    else:
        reason = f"{type(exc).__name__}: {exc}"
    return McpStartError(config.name, config.describe(), reason, _tail(connection))


async def _open_transport(
    config: ServerConfig, connection: McpConnection, stack: AsyncExitStack
) -> tuple[Any, Any]:
    if isinstance(config, StdioServerConfig):
        stderr = StderrLog()
        stack.callback(stderr.close)
        connection._stderr = stderr
        params = StdioServerParameters(
            command=config.command,
            args=config.args,
            env=config.env or None,
            cwd=config.cwd,
            # Invalid UTF-8 on stdout becomes a line that is not JSON-RPC (recorded as a
            # frame), not a decoding error that ends the session.
            encoding_error_handler="replace",
        )
        before = child_pids()
        # Registered before the transport, so it runs after the SDK has stopped the server:
        # whatever the server started in its process group goes with it.
        stack.push_async_callback(_end_process_group, connection)
        streams = await stack.enter_async_context(stdio_client(params, errlog=stderr.file))
        connection.server_pid = session_leader(child_pids() - before)
        return streams
    # Our own client (the SDK's transport takes one for headers): its timeouts are the SDK's
    # defaults, 30 s for connecting and writing and 300 s to read, as a response stream may
    # stay open that long between events.
    client = httpx2.AsyncClient(
        headers=config.headers or None, timeout=httpx2.Timeout(HTTP_TIMEOUT_S, read=HTTP_READ_S)
    )
    await stack.enter_async_context(client)
    return await stack.enter_async_context(streamable_http_client(config.url, http_client=client))


async def _handshake(connection: McpConnection, startup_timeout_s: float) -> None:
    config = connection.config
    try:
        with anyio.fail_after(startup_timeout_s):
            result = await connection.session.initialize()
            connection.server_info = _dump(result)
            await connection.list_tools()
    except TimeoutError:
        reason = f"no answer to initialize/tools/list within {startup_timeout_s:g}s"
        raise McpStartError(config.name, config.describe(), reason, _tail(connection)) from None
    except (MCPError, McpCallError) as exc:
        code = exc.code
        if code == types.CONNECTION_CLOSED and (connection.closed or "closed" in str(exc)):
            reason = "it exited or closed the connection during the handshake"
        else:
            reason = f"{exc} (JSON-RPC error {code})"
        raise McpStartError(config.name, config.describe(), reason, _tail(connection)) from None
    except (RuntimeError, ValidationError) as exc:
        reason = f"invalid handshake: {tail_on_one_line(str(exc), 200)}"
        raise McpStartError(config.name, config.describe(), reason, _tail(connection)) from None


def _tail(connection: McpConnection) -> str:
    return connection.stderr_tail() or (connection.last_bad_output or "")


async def _end_process_group(connection: McpConnection) -> None:
    """SIGTERM, then SIGKILL, to what is left of the server's process group (a child it
    started, such as a `sleep`, outlives the server otherwise)."""
    group = connection.server_pid
    if group is None:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(group, sig)
        except (ProcessLookupError, PermissionError):
            return
        with anyio.move_on_after(1.0):
            # Polled: nothing signals when another process's group becomes empty.
            while group_alive(group):  # noqa: ASYNC110
                await anyio.sleep(0.02)
        if not group_alive(group):
            return
