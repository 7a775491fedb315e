"""`workbench run` against the local OpenAI-compatible server, once per captured stream style.

The first answer is the capture re-aimed at `read_file` (tests/agent/fixture_styles.py keeps
every wire quirk and changes only the tool name and arguments); the second answer quotes the
tool results the run sent back. Text-only captures are served as they are and the run ends
on them; mid-stream error captures end in an error, or in a retry. What the trace must say
is written out by hand per capture below, from reading the capture.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.agent.fixture_styles import (
    ARGUMENTS,
    FILES,
    Answers,
    Line,
    as_read_file_calls,
    quote_tool_results,
    served_chunks,
)
from tests.support.servers import text_chunks
from tests.support.streams import load_stream, stream_files
from traces.events import Event, RunEnd
from traces.reader import read_trace
from workbench.cli import main
from workbench.engine.http.model_server import ModelServer, Reply

TASK = "What do my notes say?"
NOTES_RESULT = "1: Buy oat milk.\n2: Call the plumber on Friday."
TODO_RESULT = "1: Renew the passport."
FINAL_USAGE = {"prompt_tokens": 40, "completion_tokens": 9, "total_tokens": 49}


@dataclass(frozen=True)
class Style:
    ids: tuple[str, ...] = ()  # the call ids the run must use, in call order
    text: str | None = None  # the first answer's visible text
    finish: str | None = None
    usage: tuple[int, int, int] | None = None  # prompt, completion, total
    echo: dict[str, Any] = field(default_factory=dict)  # provider fields echoed on call 0
    data_prefix: str = "data: "
    stream_error: tuple[bool, int] | None = None  # retriable, chunks before the error


STYLES: dict[str, Style] = {
    # -- provider ids pass through, whatever the index does ---------------------------------
    "anthropic-openai-compat-tool-index-1-after-text": Style(
        ids=("toolu_sanitized",), text="Reading it.", finish="tool_calls"
    ),
    "copilot-claude-tool-call-first-chunk-no-arguments-key": Style(
        ids=("toolu_vrtx_01CvBi1d4qpKTG2PCuc9wDbZ",),
        finish="tool_calls",
        usage=(25716, 65, 25781),
    ),
    # Index 1 after text; the zero-argument call's one `arguments: ""` now carries the path.
    "copilot-claude-tool-index-starts-at-1-after-content": Style(
        ids=("toolu_vrtx_01DbFqUgk6aAtJ4nDBqzFWDF",),
        text="Now listing your Coder workspaces:",
        finish="tool_calls",
        usage=(25939, 58, 25997),
    ),
    "openai-reserialized-explicit-nulls-index-1": Style(ids=("call_jmYzksaRe2oms7Jp3Vuj3EyK",)),
    # -- no index at all: keyed by id, or the one call ---------------------------------------
    "gemini-openai-compat-no-index-thought-signature": Style(
        ids=("call_297140",), echo={"extra_content": {"google": {"thought_signature": "…"}}}
    ),
    "mistral-missing-index-and-type-whole-args-finish-in-same-chunk": Style(
        ids=("gSIMJiOkT",), finish="tool_calls", usage=(124, 22, 146)
    ),
    "openai-relay-missing-index": Style(ids=("call_UnVtKL0WOa8iFRgWgrvdf4JY",)),
    # -- ids or names repeated as "" (or a new chunk id each time) ---------------------------
    "qwen-dashscope-empty-string-id-repeated-trailing-empty-delta": Style(
        ids=("call_eee11723464a4b9eb8cee71d",), finish="tool_calls", usage=(295, 22, 317)
    ),
    "mistral-glm-empty-name-on-continuation": Style(
        ids=("chatcmpl-tool-9f149c74c42f265b",), finish="tool_calls", usage=(171, 14, 185)
    ),
    "litellm-oci-new-chunk-id-every-chunk-empty-name": Style(
        ids=("chatcmpl-tool-a165800d4d7789c7",)
    ),
    # -- openers without an arguments key, or two entries for one index in one delta ---------
    "vllm-hermes-opener-without-arguments-stop_reason-field": Style(
        ids=("chatcmpl-tool-ca99dda515524c6abe47d1ea22813507",), finish="tool_calls"
    ),
    "vllm-kimi-duplicate-index-entries-in-one-chunk": Style(ids=("functions.list_files:0",)),
    # -- arguments one token per chunk, or whole in one chunk --------------------------------
    "openai-role-and-tool-call-in-first-chunk": Style(
        ids=("call_c91SqDXlYFuETYv8mUHzz6pp",), finish="tool_calls", usage=(76, 24, 100)
    ),
    "groq-whole-arguments-one-chunk-usage-in-x_groq": Style(
        ids=("tk85n1k4m",), finish="tool_calls", usage=(210, 15, 225)
    ),
    # -- reasoning fields before the call ----------------------------------------------------
    "deepseek-reasoning-content-then-tool-call-usage-on-finish": Style(
        ids=("call_00_ioIn7yN9p1ZOMNpDLwd4MgAF",), finish="tool_calls", usage=(339, 83, 422)
    ),
    "groq-reasoning-field-then-whole-tool-call-fc-id": Style(
        ids=("fc_bfb39741-3748-4def-9886-a93fc9c64a90",), finish="tool_calls", usage=(304, 49, 353)
    ),
    # xAI's usage reports a total above prompt + completion (reasoning tokens); it is kept.
    "xai-reasoning-content-finish_reason-key-absent": Style(
        ids=("call_79382389",), finish="tool_calls", usage=(307, 26, 560)
    ),
    # -- no id anywhere (the capture starts mid-call): the deterministic generated id --------
    "llamacpp-partial-args-timings-verbose-final-chunk": Style(
        ids=("call_0",), finish="tool_calls"
    ),
    # -- two calls in one answer: each result goes back under its own id ---------------------
    "ollama-parallel-whole-args-role-repeated-finish-separate": Style(
        ids=("call_wteop8bt", "call_rk2xye1l"), finish="tool_calls"
    ),
    "openai-parallel-zero-arg-tools-obfuscation-field": Style(
        ids=("call_q2UyBRP7eXNTzAoR8lEhjc9Z", "call_b51ijcpFkDiTQG1bQzsrmtW5"),
        finish="tool_calls",
        usage=(364, 40, 404),
    ),
    "openai-two-sequential-tool-calls-usage-empty-choices-done": Style(
        ids=("call_JMW1whyEaYG438VE1OIflxA2", "call_DNYTawLBoN8fj3KN6qU9N1Ou"),
        finish="tool_calls",
        usage=(149, 60, 209),
    ),
    "synthetic-interleaved-parallel-tool-calls": Style(ids=("call_A", "call_B")),
    # -- text only: the run ends on the first answer -----------------------------------------
    "azure-first-chunk-empty-choices-prompt-filter-results": Style(
        text="Capital of Denmark.", finish="stop", usage=(15, 78, 93)
    ),
    "openrouter-keepalive-comments-finish-reason-twice": Style(
        text="I recommend naming your Python retry library `resilix`, as it conveys resilience "
        "and is modern and brandable.",
        finish="stop",
        usage=(888, 74, 962),
    ),
    "dashscope-deepseek-r1-data-colon-no-space-reasoning": Style(data_prefix="data:"),
    # Two final chunks and nothing else: no text, no call; the last finish_reason wins.
    "openai-finish-reason-stop-vs-tool_calls-gpt4o": Style(finish="tool_calls"),
    # -- an error event mid-stream -----------------------------------------------------------
    "groq-midstream-event-error-tool-use-failed-no-done": Style(stream_error=(False, 94)),
    "openai-midstream-error-event-no-done": Style(stream_error=(True, 4)),
}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    for name, text in FILES.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def run_args(server: ModelServer, root: Path, home: Path) -> list[str]:
    return [
        "run",
        TASK,
        "--base-url",
        server.base_url,
        "--model",
        "m",
        "--api-key",
        "sk-test-fixture-styles",
        "--root",
        str(root),
        "--home",
        str(home),
        "--model-timeout",
        "10",
    ]


def trace_events(home: Path) -> list[Event]:
    (path,) = sorted((home / "traces").glob("*.jsonl"))
    read = read_trace(path)
    assert read.problems == []
    return read.events


def of(events: list[Event], kind: str) -> list[Any]:
    return [event for event in events if event.type == kind]


def chunk_data(events: list[Event], turn: int, attempt: int = 1) -> list[dict[str, Any]]:
    chunks = [e for e in of(events, "model_chunk") if e.turn == turn and e.attempt == attempt]
    assert [chunk.index for chunk in chunks] == list(range(len(chunks)))
    return [chunk.data for chunk in chunks]


def usage_of(usage: dict[str, Any] | None) -> tuple[int, int, int] | None:
    if usage is None:
        return None
    return usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"]


def test_every_capture_has_a_style() -> None:
    assert sorted(path.stem for path in stream_files()) == sorted(STYLES)


def test_the_rewrite_changes_only_tool_names_and_arguments() -> None:
    """Every other byte of each capture is served as captured."""

    def without_call_text(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                key: (
                    {k: v for k, v in item.items() if k not in ("name", "arguments")}
                    if key == "function" and isinstance(item, dict)
                    else without_call_text(item)
                )
                for key, item in value.items()
            }
        if isinstance(value, list):
            return [without_call_text(item) for item in value]
        return value

    for path in stream_files():
        _, lines = load_stream(path)
        rewritten = as_read_file_calls(lines)
        assert json.dumps(without_call_text(rewritten)) == json.dumps(without_call_text(lines))
        assert [line for line in rewritten if isinstance(line, str)] == [
            line for line in lines if isinstance(line, str)
        ]


def test_the_rewrite_keeps_fragment_shapes() -> None:
    # Spot checks, read off the captures: "" ids and the trailing empty fragment stay (qwen);
    # two entries for index 0 stay in one delta (kimi); null names stay null (re-serialized).
    _, qwen = load_stream("qwen-dashscope-empty-string-id-repeated-trailing-empty-delta.jsonl")
    calls = [
        line["choices"][0]["delta"]["tool_calls"][0]
        for line in _payloads(as_read_file_calls(qwen))[:4]
    ]
    assert [call["id"] for call in calls] == ["call_eee11723464a4b9eb8cee71d", "", "", ""]
    assert [call["function"]["arguments"] for call in calls] == [
        "",
        '{"path": "n',
        'otes.txt"}',
        "",
    ]
    _, kimi = load_stream("vllm-kimi-duplicate-index-entries-in-one-chunk.jsonl")
    (entries,) = [
        line["choices"][0]["delta"]["tool_calls"] for line in _payloads(as_read_file_calls(kimi))
    ]
    assert entries == [
        {
            "index": 0,
            "id": "functions.list_files:0",
            "function": {"name": "read_file"},
            "type": "function",
        },
        {"index": 0, "function": {"arguments": '{"path": "notes.txt"}'}},
    ]
    _, nulls = load_stream("openai-reserialized-explicit-nulls-index-1.jsonl")
    functions = [
        line["choices"][0]["delta"]["tool_calls"][0]["function"]
        for line in _payloads(as_read_file_calls(nulls))
    ]
    assert functions == [
        {"arguments": "", "name": "read_file"},
        {"arguments": '{"path": "n', "name": None},
        {"arguments": 'otes.txt"}', "name": None},
    ]


def final_answer(call_count: int) -> str:
    return "From the files: " + " | ".join([NOTES_RESULT, TODO_RESULT][:call_count])


@pytest.mark.parametrize("path", stream_files(), ids=lambda path: path.stem)
def test_run_reads_a_file_in_the_capture_style(path: Path, root: Path, tmp_path: Path) -> None:
    style = STYLES[path.stem]
    _, lines = load_stream(path)
    if style.stream_error is not None:
        _check_stream_error(style, lines, root, tmp_path / "home")
        return
    first = as_read_file_calls(lines)
    home = tmp_path / "home"
    responder = Answers(
        Reply(chunks=first, data_prefix=style.data_prefix), quote_tool_results(FINAL_USAGE)
    )
    with ModelServer(responder) as server:
        code = main(run_args(server, root, home))
        bodies = server.bodies
    events = trace_events(home)
    end = events[-1]
    assert end.type == "run_end"
    assert (code, end.status) == (0, "completed"), end.reason

    requests = of(events, "model_request")
    responses = of(events, "model_response")
    assert chunk_data(events, turn=1) == served_chunks(first)
    first_response = responses[0]
    assert first_response.finish_reason == style.finish
    assert usage_of(first_response.usage) == style.usage
    assert first_response.message["content"] == (style.text or ("" if style.ids else None))

    if not style.ids:  # text only: the run ends on this answer
        assert len(bodies) == len(requests) == len(responses) == 1
        assert of(events, "tool_start") == []
        assert end.final_answer == style.text
        if style.usage is not None:
            totals = end.totals
            assert (totals.input_tokens, totals.output_tokens, totals.total_tokens) == style.usage
        return

    count = len(style.ids)
    results = [NOTES_RESULT, TODO_RESULT][:count]
    starts, ends = of(events, "tool_start"), of(events, "tool_end")
    assert [(s.call_id, s.name, s.arguments_raw, s.arguments, s.parse_error) for s in starts] == [
        (call_id, "read_file", ARGUMENTS[n], {"path": ["notes.txt", "todo.txt"][n]}, None)
        for n, call_id in enumerate(style.ids)
    ]
    assert all(start.source == "builtin" and start.turn == 1 for start in starts)
    assert [(e.call_id, e.name, e.ok, e.result) for e in ends] == [
        (call_id, "read_file", True, results[n]) for n, call_id in enumerate(style.ids)
    ]

    # The second request carries the assistant message as answered (`"content": ""` rather
    # than null when there was no text: llama.cpp's server rejects null) and one tool
    # message per call.
    assert len(bodies) == len(requests) == len(responses) == 2
    sent = requests[1].messages
    assistant = {
        "role": "assistant",
        "content": style.text or "",
        "tool_calls": [
            {
                **(style.echo if n == 0 else {}),
                "id": call_id,
                "type": "function",
                "function": {"name": "read_file", "arguments": ARGUMENTS[n]},
            }
            for n, call_id in enumerate(style.ids)
        ],
    }
    tool_messages = [
        {"role": "tool", "tool_call_id": call_id, "content": results[n]}
        for n, call_id in enumerate(style.ids)
    ]
    assert sent[-count - 1 :] == [assistant, *tool_messages]
    assert bodies[1]["messages"] == sent  # the trace holds exactly what went on the wire

    answer = final_answer(count)
    assert chunk_data(events, turn=2) == served_chunks(text_chunks(answer, usage=FINAL_USAGE))
    assert responses[1].message == {"role": "assistant", "content": answer}
    assert end.final_answer == answer
    assert (end.totals.turns, end.totals.tool_calls, end.totals.tool_errors) == (2, count, 0)
    if style.usage is not None:  # provider usage is the authoritative count
        prompt, completion, total = style.usage
        totals = end.totals
        assert (totals.input_tokens, totals.output_tokens, totals.total_tokens) == (
            prompt + 40,
            completion + 9,
            total + 49,
        )


def _check_stream_error(style: Style, lines: list[Any], root: Path, home: Path) -> None:
    assert style.stream_error is not None
    retriable, before_error = style.stream_error
    retry_answer = "Second try."
    responder = Answers(Reply(chunks=lines), Reply(chunks=text_chunks(retry_answer)))
    with ModelServer(responder) as server:
        code = main(run_args(server, root, home))
        bodies = server.bodies
    events = trace_events(home)
    end = events[-1]
    assert end.type == "run_end"
    assert len(chunk_data(events, turn=1, attempt=1)) == before_error
    assert chunk_data(events, turn=1, attempt=1) == served_chunks(lines)
    (error,) = of(events, "error")
    assert (error.where, error.kind, error.retriable, error.attempt) == (
        "model",
        "stream_error",
        retriable,
        1,
    )
    assert of(events, "tool_start") == []
    requests = of(events, "model_request")
    if not retriable:  # a 400-class error event: the run ends in error, nothing retried
        assert (code, end.status) == (3, "error")
        assert "Tool call validation failed" in end.reason
        assert len(bodies) == len(requests) == 1 and of(events, "model_response") == []
        return
    # A server error event: the same request is sent again and the retry's answer ends the run.
    assert (code, end.status, end.final_answer) == (0, "completed", retry_answer)
    assert [r.attempt for r in requests] == [1, 2]
    assert requests[1].messages == requests[0].messages and bodies[0] == bodies[1]
    (response,) = of(events, "model_response")
    assert (response.attempt, response.message["content"]) == (2, retry_answer)


def test_tool_call_ending_with_finish_reason_stop(root: Path, tmp_path: Path) -> None:
    """gpt-4o's final chunk says `stop` after a tool call (openai-finish-reason-stop-vs-
    tool_calls); the call still runs. The call chunk before it is built in the same envelope,
    since the capture kept only the final chunk."""
    _, (stop_chunk, _) = load_stream("openai-finish-reason-stop-vs-tool_calls-gpt4o.jsonl")
    assert isinstance(stop_chunk, dict)
    call_chunk = json.loads(json.dumps(stop_chunk))
    call_chunk["choices"][0]["finish_reason"] = None
    call_chunk["choices"][0]["delta"]["role"] = "assistant"
    call_chunk["choices"][0]["delta"]["tool_calls"] = [
        {
            "index": 0,
            "id": "call_stop_finish",
            "type": "function",
            "function": {"name": "read_file", "arguments": ARGUMENTS[0]},
        }
    ]
    home = tmp_path / "home"
    first = Reply(chunks=[call_chunk, stop_chunk, "data: [DONE]"])
    with ModelServer(Answers(first, quote_tool_results(FINAL_USAGE))) as server:
        assert main(run_args(server, root, home)) == 0
    events = trace_events(home)
    assert of(events, "model_response")[0].finish_reason == "stop"
    (start,) = of(events, "tool_start")
    assert (start.call_id, start.name, start.arguments) == (
        "call_stop_finish",
        "read_file",
        {"path": "notes.txt"},
    )
    end = events[-1]
    assert isinstance(end, RunEnd)
    assert end.status == "completed" and end.final_answer == final_answer(1)


def test_a_real_workbench_process_runs_a_quirky_capture(root: Path, tmp_path: Path) -> None:
    """The same through a real `workbench run` process, for the Qwen capture ("" ids)."""
    _, lines = load_stream("qwen-dashscope-empty-string-id-repeated-trailing-empty-delta.jsonl")
    home = tmp_path / "home"
    first = Reply(chunks=as_read_file_calls(lines))
    with ModelServer(Answers(first, quote_tool_results(FINAL_USAGE))) as server:
        result = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from workbench.cli import main; sys.exit(main())",
                *run_args(server, root, home),
                "--json",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert (summary["status"], summary["final_answer"]) == ("completed", final_answer(1))
    starts = of(trace_events(home), "tool_start")
    assert [s.call_id for s in starts] == ["call_eee11723464a4b9eb8cee71d"]


def _payloads(lines: list[Line]) -> list[dict[str, Any]]:
    """The data payloads of a capture's SSE lines (raw lines such as `[DONE]` left out)."""
    return [line for line in lines if isinstance(line, dict)]
