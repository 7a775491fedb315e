"""Generated runs, the one builder of them for the tests (each writes a trace as the workbench's
own writer does, through `recording`): runs for reading from the store by turn and by call
(forks, exports), with what pairing and counting are made of; long runs of many turns (the
store's paging, the TUI's windowed screens); runs that fail in known ways (`workbench
failures`); small runs for ingest; a run with one huge line; and a store that counts what it
hands back."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from traces.events import (
    Error,
    EventBase,
    McpMessage,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    RunEnd,
    RunStart,
    ToolEnd,
    ToolStart,
    Totals,
)
from traces.recorder import Recorder
from traces.redact import Redactor
from traces.store import TraceStore
from traces.writer import JsonlWriter


@contextmanager
def recording(folder: Path, run_id: str, redactor: Redactor | None = None) -> Iterator[Recorder]:
    """A recorder writing `<folder>/<run_id>.jsonl`, closed at the end of the block."""
    rec = Recorder(run_id, [JsonlWriter(folder, run_id, redactor)])
    try:
        yield rec
    finally:
        rec.close()


def trace_path(folder: Path, run_id: str) -> Path:
    return folder / f"{run_id}.jsonl"


def tool_call(call_id: str, name: str, arguments: str = "{}") -> dict[str, Any]:
    """One tool call of an assistant message, in chat completions' shape."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name} does its thing",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
    for name in ("read_file", "save_note")
]


def varied_run(
    folder: Path,
    run_id: str,
    turns: int,
    *,
    ended: bool = True,
    killed: bool = False,
    reuse_ids: bool = True,
    rounds_kept: int | None = None,
) -> None:
    """A run of `turns` turns, each a streamed model call asking for one tool call and its
    result, and a last turn that answers. Turn 2's call is retried (an error, then a second
    attempt); each call reads one of three files, so the same call is made again; turn 3's
    arguments do not parse; turn 4's tool is an MCP server's, with its frames. `reuse_ids`:
    every call has the id `call_0` (as some providers do), else `call_<turn>`; `rounds_kept`:
    each request sends the system and user message and only that many rounds before it (a
    trimmed history). Not `ended`: no run_end; `killed`: the last turn stops mid-stream (a
    request and chunks, nothing after)."""
    with recording(folder, run_id) as rec:
        rec.emit(
            RunStart,
            turn=None,
            task="look around",
            system_prompt="You look around.",
            model="gpt-4o-mini",
            tools=TOOLS,
            meta={"read_only_tools": ["read_file"]},
        )
        history: list[dict[str, Any]] = [
            {"role": "system", "content": "You look around."},
            {"role": "user", "content": "look around"},
        ]
        for turn in range(1, turns + 1):
            rec.turn = turn
            attempt = 1
            sent = history
            if rounds_kept is not None:
                rounds = history[2:]
                sent = history[:2] + rounds[max(0, len(rounds) - 2 * rounds_kept) :]
            if turn == 2:
                rec.emit(ModelRequest, messages=list(sent), tools=TOOLS, estimated_tokens=turn)
                rec.emit(Error, where="model", kind="rate_limit", message="slow down", attempt=1)
                attempt = 2
            rec.emit(
                ModelRequest,
                attempt=attempt,
                messages=list(sent),
                tools=TOOLS,
                estimated_tokens=10 * turn,
            )
            for index in range(3):
                delta = {"choices": [{"index": 0, "delta": {"content": f"part {index} "}}]}
                rec.emit(ModelChunk, attempt=attempt, index=index, elapsed_ms=index, data=delta)
            if killed and turn == turns:
                break
            if turn == turns:
                answer = {"role": "assistant", "content": f"done after {turns} turns"}
                rec.emit(ModelResponse, attempt=attempt, message=answer, usage={"prompt_tokens": 5})
                break
            name = "save_note" if turn == 4 else "read_file"
            arguments: dict[str, Any] | None = {"path": f"file{turn % 3}.txt"}
            raw = f'{{"path": "file{turn % 3}.txt"}}'
            if turn == 3:
                arguments, raw = None, '{"path": '
            call_id = "call_0" if reuse_ids else f"call_{turn}"
            call = tool_call(call_id, name, raw)
            message = {"role": "assistant", "content": f"turn {turn}", "tool_calls": [call]}
            rec.emit(
                ModelResponse,
                attempt=attempt,
                message=message,
                usage={"prompt_tokens": turn, "completion_tokens": 2 * turn},
            )
            source = "mcp:notes" if turn == 4 else "builtin"
            rec.emit(
                ToolStart,
                call_id=call_id,
                name=name,
                arguments_raw=raw,
                arguments=arguments,
                parse_error="unexpected end" if arguments is None else None,
                source=source,
            )
            if turn == 4:
                rec.emit(McpMessage, server="notes", direction="send", frame={"id": turn})
                rec.emit(McpMessage, server="notes", direction="recv", frame={"id": turn})
            result = f"result of turn {turn}"
            rec.emit(
                ToolEnd,
                call_id=call_id,
                name=name,
                ok=arguments is not None,
                result=result,
                error=None if arguments is not None else "bad_arguments",
                duration_ms=1.5,
            )
            history += [message, {"role": "tool", "tool_call_id": call_id, "content": result}]
        if ended and not killed:
            rec.emit(RunEnd, turn=None, status="completed", totals=Totals(turns=turns))


LONG = "7" * 32
TURNS = 130  # more than a window of turns (`TURN_WINDOW`, 100)


def long_run(
    folder: Path,
    turns: int,
    ended: bool = True,
    run_id: str = LONG,
    result: Callable[[int], str] = lambda turn: "ok",
    failing_turn: int | None = None,
    *,
    counted: bool = False,
    model: str = "gpt-4o-mini",
) -> Path:
    """A run of `turns` turns of four events each: a model call that answers "Step n Said"
    and asks for one tool call (`tool_of_turn_n`) answered `result(turn)`, the call of
    `failing_turn` failing; turn n's call was billed n prompt and 2n completion tokens. Not
    `ended`: the trace stops after its last turn, without a run_end. `counted`: the run_end
    carries every total (calls, tokens), not just the turns. Returns the trace."""
    with recording(folder, run_id) as rec:
        rec.emit(RunStart, turn=None, task="a long task", model=model)
        for turn in range(1, turns + 1):
            rec.turn = turn
            rec.emit(ModelRequest, messages=[{"role": "user", "content": f"step {turn}"}])
            call = tool_call(f"c{turn}", "f")
            message = {"role": "assistant", "content": f"Step {turn} Said", "tool_calls": [call]}
            usage = {"prompt_tokens": turn, "completion_tokens": 2 * turn}
            rec.emit(ModelResponse, message=message, usage=usage)
            name = f"tool_of_turn_{turn}"
            rec.emit(ToolStart, call_id=f"c{turn}", name=name, arguments_raw="{}")
            ok = turn != failing_turn
            text = result(turn) if ok else ""
            rec.emit(ToolEnd, call_id=f"c{turn}", name=name, ok=ok, result=text)
        if ended:
            totals = Totals(turns=turns)
            if counted:
                tokens_in, tokens_out = turns * (turns + 1) // 2, turns * (turns + 1)
                totals = Totals(
                    turns=turns,
                    model_calls=turns,
                    tool_calls=turns,
                    input_tokens=tokens_in,
                    output_tokens=tokens_out,
                    total_tokens=tokens_in + tokens_out,
                )
            rec.emit(RunEnd, turn=None, status="completed", totals=totals)
    return trace_path(folder, run_id)


def stored_home(home: Path, runs: dict[str, dict[str, Any]]) -> Path:
    """`home` with a `varied_run` per run id in its traces folder (the keywords of each,
    `turns` among them, the run's shape), ingested into its store."""
    folder = home / "traces"
    folder.mkdir(parents=True)
    for run_id, shape in runs.items():
        varied_run(folder, run_id, **shape)
    with TraceStore.for_home(home) as store:
        store.ingest_home(home)
    return home


def small_run(folder: Path, run_id: str, turns: int = 2, end: bool = True, **start: Any) -> Path:
    """A run of `turns` turns of a request and one `calc` call each (the odd turns' calls
    ok, the even ones' failing), ended `completed` unless not `end`; `start` adds to its
    run_start (meta, model, ...)."""
    with recording(folder, run_id) as rec:
        rec.emit(RunStart, turn=None, **{"task": f"task of {run_id}", "model": "m", **start})
        for turn in range(1, turns + 1):
            rec.turn = turn
            rec.emit(ModelRequest, messages=[{"role": "user", "content": "hi"}])
            rec.emit(ToolStart, call_id=f"c{turn}", name="calc", arguments_raw="{}")
            rec.emit(ToolEnd, call_id=f"c{turn}", name="calc", ok=turn % 2 == 1, result="r")
        if end:
            rec.emit(RunEnd, turn=None, status="completed")
    return trace_path(folder, run_id)


def run_with_big_result(folder: Path, run_id: str, size: int) -> Path:
    """A completed four-event run whose tool result is `size` bytes: one line that long."""
    with recording(folder, run_id) as rec:
        rec.emit(RunStart, turn=None, task="read a big file", model="m")
        rec.turn = 1
        rec.emit(ToolStart, call_id="c1", name="read_file", arguments_raw="{}")
        result = "0123456789abcdef" * (size // 16)
        rec.emit(ToolEnd, call_id="c1", name="read_file", ok=True, result=result)
        rec.emit(RunEnd, turn=None, status="completed")
    return trace_path(folder, run_id)


class CountingStore:
    """A store that counts the typed events its reads hand back (and nothing else changes)."""

    def __init__(self, store: TraceStore) -> None:
        self.store = store
        self.events_read = 0

    def __getattr__(self, name: str) -> Any:
        found = getattr(self.store, name)
        if not callable(found):
            return found

        def counted(*args: Any, **kwargs: Any) -> Any:
            result = found(*args, **kwargs)
            if isinstance(result, list):
                self.events_read += sum(isinstance(item, EventBase) for item in result)
            return result

        return counted

    @contextmanager
    def session(self) -> Iterator[TraceStore]:
        """What `StoredParent` and `export_stored` open the store with."""
        yield cast(TraceStore, self)
