"""Every captured stream, served by the local HTTP server to the real openai SDK through
`OpenAIChatModel`: the assembled text, tool calls, finish reason and usage must match what
reading the capture says. The expected values are written out by hand, per file."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from agent_core.model.base import (
    AttemptFailed,
    AttemptStarted,
    Completed,
    ModelCall,
    ModelError,
    RawChunk,
    StreamItem,
)
from agent_core.model.openai_client import OpenAIChatModel
from agent_core.model.retry import RetryPolicy
from tests.support.streams import stream_files, stream_reply
from workbench.engine.http.model_server import ModelServer


@dataclass(frozen=True)
class Expect:
    text: str | None = None
    calls: list[tuple[str, str, str]] = field(default_factory=list)  # id, name, arguments
    finish: str | None = None
    usage: tuple[int, int, int] | None = None  # prompt, completion, total
    reasoning: str | None = None  # expected prefix of the assembled reasoning
    generated_ids: list[str] = field(default_factory=list)
    call_extra: dict[str, object] = field(default_factory=dict)  # echoed fields of call 0
    data_prefix: str = "data: "
    stream_error: tuple[bool, int] | None = None  # (retriable, chunks before the error)


EXPECTED: dict[str, Expect] = {
    "anthropic-openai-compat-tool-index-1-after-text": Expect(
        text="Reading it.",
        calls=[("toolu_sanitized", "read_file", '{"path": "a.txt"}')],
        finish="tool_calls",
    ),
    "azure-first-chunk-empty-choices-prompt-filter-results": Expect(
        text="Capital of Denmark.", finish="stop", usage=(15, 78, 93)
    ),
    "copilot-claude-tool-call-first-chunk-no-arguments-key": Expect(
        calls=[
            (
                "toolu_vrtx_01CvBi1d4qpKTG2PCuc9wDbZ",
                "bmcp_coder_coder_list_workspaces",
                '{"owner": "me"}',
            )
        ],
        finish="tool_calls",
        usage=(25716, 65, 25781),
    ),
    "copilot-claude-tool-index-starts-at-1-after-content": Expect(
        text="Now listing your Coder workspaces:",
        calls=[("toolu_vrtx_01DbFqUgk6aAtJ4nDBqzFWDF", "bmcp_coder_coder_list_workspaces", "")],
        finish="tool_calls",
        usage=(25939, 58, 25997),
    ),
    "dashscope-deepseek-r1-data-colon-no-space-reasoning": Expect(
        reasoning="Okay, the user", data_prefix="data:"
    ),
    "deepseek-reasoning-content-then-tool-call-usage-on-finish": Expect(
        calls=[("call_00_ioIn7yN9p1ZOMNpDLwd4MgAF", "weather", '{"location": "San Francisco"}')],
        finish="tool_calls",
        usage=(339, 83, 422),
        reasoning="The user is asking for the weather in San Francisco.",
    ),
    "gemini-openai-compat-no-index-thought-signature": Expect(
        calls=[
            (
                "call_297140",
                "read",
                '{"offset":1,"limit":100,"path":"/app/skills/agent-runtime/stage-design/SKILL.md"}',
            )
        ],
        call_extra={"extra_content": {"google": {"thought_signature": "…"}}},
    ),
    "groq-midstream-event-error-tool-use-failed-no-done": Expect(stream_error=(False, 94)),
    "groq-reasoning-field-then-whole-tool-call-fc-id": Expect(
        calls=[
            (
                "fc_bfb39741-3748-4def-9886-a93fc9c64a90",
                "get_something_by_name",
                '{"name":"example"}',
            )
        ],
        finish="tool_calls",
        usage=(304, 49, 353),
        reasoning='We need to call the function with correct parameter "name".',
    ),
    "groq-whole-arguments-one-chunk-usage-in-x_groq": Expect(
        calls=[("tk85n1k4m", "weather", "{}")], finish="tool_calls", usage=(210, 15, 225)
    ),
    "litellm-oci-new-chunk-id-every-chunk-empty-name": Expect(
        calls=[("chatcmpl-tool-a165800d4d7789c7", "get_weather", '{"city": "Paris"}')]
    ),
    # The capture starts mid-call: no id or name ever arrived, so the id is generated.
    "llamacpp-partial-args-timings-verbose-final-chunk": Expect(
        calls=[("call_0", "", '.nvim"}')], finish="tool_calls", generated_ids=["call_0"]
    ),
    "mistral-glm-empty-name-on-continuation": Expect(
        calls=[
            (
                "chatcmpl-tool-9f149c74c42f265b",
                "webSearchTool",
                '{"query": "current Berlin weather"}',
            )
        ],
        finish="tool_calls",
        usage=(171, 14, 185),
    ),
    "mistral-missing-index-and-type-whole-args-finish-in-same-chunk": Expect(
        calls=[("gSIMJiOkT", "weather", '{"location": "San Francisco"}')],
        finish="tool_calls",
        usage=(124, 22, 146),
    ),
    "ollama-parallel-whole-args-role-repeated-finish-separate": Expect(
        calls=[
            ("call_wteop8bt", "run_command", '{"command":"ls"}'),
            ("call_rk2xye1l", "run_command", '{"command":"ls -l"}'),
        ],
        finish="tool_calls",
    ),
    # Two final chunks quoted one after the other; the last finish_reason wins.
    "openai-finish-reason-stop-vs-tool_calls-gpt4o": Expect(finish="tool_calls"),
    "openai-midstream-error-event-no-done": Expect(stream_error=(True, 4)),
    "openai-parallel-zero-arg-tools-obfuscation-field": Expect(
        calls=[
            ("call_q2UyBRP7eXNTzAoR8lEhjc9Z", "get_country", "{}"),
            ("call_b51ijcpFkDiTQG1bQzsrmtW5", "get_product_name", "{}"),
        ],
        finish="tool_calls",
        usage=(364, 40, 404),
    ),
    "openai-relay-missing-index": Expect(
        calls=[("call_UnVtKL0WOa8iFRgWgrvdf4JY", "squareRoot", "")]
    ),
    "openai-reserialized-explicit-nulls-index-1": Expect(
        calls=[("call_jmYzksaRe2oms7Jp3Vuj3EyK", "get_current_weather", '{"locatio')]
    ),
    "openai-role-and-tool-call-in-first-chunk": Expect(
        calls=[
            (
                "call_c91SqDXlYFuETYv8mUHzz6pp",
                "GetWeatherArgs",
                '{"city":"Edinburgh","country":"UK","units":"c"}',
            )
        ],
        finish="tool_calls",
        usage=(76, 24, 100),
    ),
    "openai-two-sequential-tool-calls-usage-empty-choices-done": Expect(
        calls=[
            (
                "call_JMW1whyEaYG438VE1OIflxA2",
                "GetWeatherArgs",
                '{"city": "Edinburgh", "country": "GB", "units": "c"}',
            ),
            (
                "call_DNYTawLBoN8fj3KN6qU9N1Ou",
                "get_stock_price",
                '{"ticker": "AAPL", "exchange": "NASDAQ"}',
            ),
        ],
        finish="tool_calls",
        usage=(149, 60, 209),
    ),
    "openrouter-keepalive-comments-finish-reason-twice": Expect(
        text="I recommend naming your Python retry library `resilix`, as it conveys resilience "
        "and is modern and brandable.",
        finish="stop",
        usage=(888, 74, 962),
    ),
    "qwen-dashscope-empty-string-id-repeated-trailing-empty-delta": Expect(
        calls=[("call_eee11723464a4b9eb8cee71d", "weather", '{"location": "San Francisco"}')],
        finish="tool_calls",
        usage=(295, 22, 317),
    ),
    "synthetic-interleaved-parallel-tool-calls": Expect(
        calls=[
            ("call_A", "tool_a", '{"target":"A_ONLY"}'),
            ("call_B", "tool_b", '{"target":"B_ONLY"}'),
        ]
    ),
    "vllm-hermes-opener-without-arguments-stop_reason-field": Expect(
        calls=[
            (
                "chatcmpl-tool-ca99dda515524c6abe47d1ea22813507",
                "run_command",
                '{"command": "ls"}',
            )
        ],
        finish="tool_calls",
    ),
    "vllm-kimi-duplicate-index-entries-in-one-chunk": Expect(
        calls=[("functions.list_files:0", "list_files", ' {"')]
    ),
    "xai-reasoning-content-finish_reason-key-absent": Expect(
        calls=[("call_79382389", "weather", '{"location":"San Francisco"}')],
        finish="tool_calls",
        usage=(307, 26, 560),
        reasoning="First, the user is asking about the weather in San Francisco.",
    ),
}


def test_every_capture_has_expectations() -> None:
    assert sorted(path.stem for path in stream_files()) == sorted(EXPECTED)


async def _collect(model: OpenAIChatModel) -> tuple[list[StreamItem], Exception | None]:
    items: list[StreamItem] = []
    call = ModelCall(messages=[{"role": "user", "content": "go"}])
    try:
        async for item in model.stream(call):
            items.append(item)
    except ModelError as exc:
        return items, exc
    return items, None


@pytest.mark.parametrize("path", stream_files(), ids=lambda path: path.stem)
async def test_capture_through_sdk(path) -> None:
    expect = EXPECTED[path.stem]
    reply = stream_reply(path, data_prefix=expect.data_prefix)
    with ModelServer(lambda body: reply) as server:
        model = OpenAIChatModel(
            server.base_url, "sk-test", "m", timeout_s=5, retry=RetryPolicy(max_attempts=1)
        )
        items, error = await _collect(model)
        await model.aclose()
    assert isinstance(items[0], AttemptStarted)
    chunks = [item for item in items if isinstance(item, RawChunk)]
    assert [chunk.index for chunk in chunks] == list(range(len(chunks)))
    assert all(isinstance(chunk.data, dict) for chunk in chunks)

    if expect.stream_error is not None:
        retriable, chunk_count = expect.stream_error
        assert isinstance(error, ModelError) and error.kind == "stream_error"
        failed = items[-1]
        assert isinstance(failed, AttemptFailed)
        assert (failed.kind, failed.retriable, failed.will_retry) == (
            "stream_error",
            retriable,
            False,
        )
        assert len(chunks) == chunk_count
        return

    assert error is None
    done = items[-1]
    assert isinstance(done, Completed)
    response = done.response
    assert response.content == expect.text
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == expect.calls
    assert response.finish_reason == expect.finish
    if expect.usage is None:
        assert response.usage is None
    else:
        assert response.usage is not None
        got = (
            response.usage["prompt_tokens"],
            response.usage["completion_tokens"],
            response.usage["total_tokens"],
        )
        assert got == expect.usage
    if expect.reasoning is None:
        assert response.reasoning is None
    else:
        assert response.reasoning is not None and response.reasoning.startswith(expect.reasoning)
    assert response.extra.get("generated_ids", []) == expect.generated_ids
    if expect.call_extra:
        assert response.tool_calls[0].extra == expect.call_extra
        echoed = response.to_message()["tool_calls"][0]
        assert all(echoed[key] == value for key, value in expect.call_extra.items())
    # Visible text deltas add up to the assembled text.
    assert "".join(chunk.text_delta for chunk in chunks) == (expect.text or "")
    assert done.chunks == len(chunks)
