"""Retries and timeouts against a real local server: statuses, Retry-After, drops, stalls,
the total deadline. Every attempt must show up as items. Backoffs are kept tiny."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from agent_core.model.base import (
    ERROR_TEXT_CHARS,
    AttemptFailed,
    AttemptStarted,
    Completed,
    ModelCall,
    ModelError,
    ModelTimeout,
    StreamItem,
)
from agent_core.model.openai_client import OpenAIChatModel
from agent_core.model.retry import RetryPolicy, parse_retry_after
from agent_core.wire.urls import public_url
from tests.support.servers import Sequence, text_chunks
from workbench.engine.http.model_server import ModelServer, Reply

FAST = RetryPolicy(initial_backoff_s=0.001, max_backoff_s=0.01, deadline_s=10)
OK = Reply(chunks=text_chunks("all good"))


def error(status: int, headers: dict[str, str] | None = None) -> Reply:
    body = {"error": {"message": f"status {status}", "type": "test"}}
    return Reply(status=status, body=body, headers=headers or {})


async def run(
    server: ModelServer, *, retry: RetryPolicy = FAST, timeout_s: float = 5.0, stream: bool = True
) -> tuple[list[StreamItem], ModelError | None]:
    model = OpenAIChatModel(server.base_url, "sk-test", "m", timeout_s=timeout_s, retry=retry)
    items: list[StreamItem] = []
    try:
        async for item in model.stream(
            ModelCall(messages=[{"role": "user", "content": "hi"}], stream=stream)
        ):
            items.append(item)
    except ModelError as exc:
        return items, exc
    finally:
        await model.aclose()
    return items, None


def failures(items: list[StreamItem]) -> list[AttemptFailed]:
    return [item for item in items if isinstance(item, AttemptFailed)]


def starts(items: list[StreamItem]) -> list[int]:
    return [item.attempt for item in items if isinstance(item, AttemptStarted)]


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503])
async def test_retriable_status_then_success(status: int) -> None:
    with ModelServer(Sequence(error(status), OK)) as server:
        items, exc = await run(server)
    assert exc is None
    assert starts(items) == [1, 2]
    [failed] = failures(items)
    assert (failed.attempt, failed.kind, failed.status_code) == (1, "status", status)
    assert failed.retriable and failed.will_retry
    done = items[-1]
    assert isinstance(done, Completed) and done.attempt == 2
    assert done.response.content == "all good"
    assert len(server.bodies) == 2


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
async def test_client_errors_are_not_retried(status: int) -> None:
    with ModelServer(Sequence(error(status), OK)) as server:
        items, exc = await run(server)
    assert isinstance(exc, ModelError) and exc.status_code == status
    assert f"status {status}" in str(exc)
    assert starts(items) == [1]
    [failed] = failures(items)
    assert not failed.retriable and not failed.will_retry
    assert len(server.bodies) == 1


@pytest.mark.parametrize("status", [409, 500, 503])
async def test_x_should_retry_false_stops_at_once(status: int) -> None:
    with ModelServer(Sequence(error(status, {"x-should-retry": "false"}), OK)) as server:
        items, exc = await run(server)
    assert isinstance(exc, ModelError) and exc.status_code == status
    assert starts(items) == [1] and len(server.bodies) == 1
    [failed] = failures(items)
    assert not failed.retriable and not failed.will_retry
    assert failed.message == (
        f"HTTP {status}: status {status} (not retried: the server sent x-should-retry: false)"
    )
    assert str(exc) == failed.message


async def test_x_should_retry_true_overrides_a_client_error() -> None:
    with ModelServer(Sequence(error(400, {"X-Should-Retry": "true"}), OK)) as server:
        items, exc = await run(server)
    assert exc is None and starts(items) == [1, 2]
    [failed] = failures(items)
    assert failed.retriable and failed.will_retry
    assert "(retrying in " in failed.message and "attempt 2 of 5)" in failed.message


async def test_client_error_says_why_it_is_not_retried() -> None:
    with ModelServer(Sequence(error(401))) as server:
        _, exc = await run(server)
    assert str(exc) == "HTTP 401: status 401 (not retried: HTTP 401 will not change on another try)"


async def test_a_long_error_body_is_kept_up_to_the_cap() -> None:
    # llama.cpp's server lists every failed field; the one that matters may come last.
    fields = [
        f"messages.{n}.ChatCompletionRequestUserMessage.content: Input should be a "
        "valid string [type=string_type, input_value=None, input_type=NoneType]"
        for n in range(7)
    ]
    message = "7 validation errors for ChatCompletionRequest\n" + "\n".join(fields)
    long_body = {"error": {"message": message + " CAUSE-AT-THE-END", "type": "internal"}}
    huge_body = {"error": {"message": "x" * 10_000}}
    with ModelServer(Sequence(Reply(status=400, body=long_body))) as server:
        _, exc = await run(server)
    assert len(message) > 300 and str(exc).startswith(f"HTTP 400: {message} CAUSE-AT-THE-END")
    with ModelServer(Sequence(Reply(status=400, body=huge_body))) as server:
        _, exc = await run(server)
    assert f"… [{10_000 - ERROR_TEXT_CHARS} more characters]" in str(exc)
    assert len(str(exc)) < ERROR_TEXT_CHARS + 200


async def test_a_body_without_a_message_is_shown_as_it_came() -> None:
    detail = {"detail": [{"loc": ["body", "messages", 1, "content"], "msg": "field required"}]}
    with ModelServer(Sequence(Reply(status=422, body=detail))) as server:
        _, exc = await run(server)
    assert '"msg": "field required"' in str(exc)


async def test_retry_after_seconds_is_honoured() -> None:
    with ModelServer(Sequence(error(429, {"Retry-After": "0.3"}), OK)) as server:
        started = time.monotonic()
        items, exc = await run(server)
        elapsed = time.monotonic() - started
    assert exc is None and starts(items) == [1, 2]
    # The policy's own backoff is ~1 ms, so only Retry-After explains the wait.
    assert elapsed >= 0.3


def test_retry_after_forms() -> None:
    assert parse_retry_after({"Retry-After": "2"}) == 2.0
    assert parse_retry_after({"retry-after-ms": "250"}) == 0.25
    future = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 28 <= (parse_retry_after({"Retry-After": future}) or 0) <= 30
    past = format_datetime(datetime.now(UTC) - timedelta(seconds=30), usegmt=True)
    assert parse_retry_after({"Retry-After": past}) == 0.0
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({}) is None


async def test_retry_after_beyond_the_limit_gives_up_at_once() -> None:
    policy = RetryPolicy(initial_backoff_s=0.001, max_retry_after_s=5)
    with ModelServer(Sequence(error(429, {"Retry-After": "120"}), OK)) as server:
        started = time.monotonic()
        items, exc = await run(server, retry=policy)
    assert time.monotonic() - started < 2
    assert isinstance(exc, ModelError) and exc.status_code == 429
    [failed] = failures(items)
    assert failed.retriable and not failed.will_retry


async def test_connection_drop_mid_stream_is_retried() -> None:
    dropped = Reply(chunks=text_chunks("never finished here"), drop_after=2)
    with ModelServer(Sequence(dropped, OK)) as server:
        items, exc = await run(server)
    assert exc is None and starts(items) == [1, 2]
    [failed] = failures(items)
    assert failed.kind == "connection" and failed.retriable and failed.will_retry
    # The chunks that did arrive on the failed attempt are still items.
    first_attempt_chunks = [
        i for i in items if getattr(i, "attempt", 0) == 1 and hasattr(i, "data")
    ]
    assert len(first_attempt_chunks) == 2
    done = items[-1]
    assert isinstance(done, Completed) and done.response.content == "all good"


async def test_connection_refused_gives_up_after_max_attempts() -> None:
    with ModelServer(Sequence(OK)) as server:
        base_url = server.base_url
    model = OpenAIChatModel(
        base_url, "sk-test", "m", retry=RetryPolicy(max_attempts=3, initial_backoff_s=0.001)
    )
    items: list[StreamItem] = []
    with pytest.raises(ModelError) as raised:
        async for item in model.stream(ModelCall(messages=[])):
            items.append(item)
    assert raised.value.kind == "connection"
    assert "gave up after 3 attempts" in str(raised.value)
    assert starts(items) == [1, 2, 3]
    assert [f.will_retry for f in failures(items)] == [True, True, False]


async def test_stall_hits_the_model_timeout() -> None:
    stalled = Reply(chunks=text_chunks("stuck after this"), stall_after=1)
    policy = RetryPolicy(max_attempts=2, initial_backoff_s=0.001)
    with ModelServer(Sequence(stalled)) as server:
        items, exc = await run(server, retry=policy, timeout_s=0.3)
    assert isinstance(exc, ModelTimeout)
    assert starts(items) == [1, 2]
    assert [f.kind for f in failures(items)] == ["timeout", "timeout"]


async def test_no_response_at_all_hits_the_model_timeout() -> None:
    policy = RetryPolicy(max_attempts=1)
    with ModelServer(Sequence(Reply(stall_after=0))) as server:
        items, exc = await run(server, retry=policy, timeout_s=0.3, stream=False)
    assert isinstance(exc, ModelTimeout)
    assert [f.kind for f in failures(items)] == ["timeout"]


async def test_total_deadline_bounds_retries() -> None:
    policy = RetryPolicy(
        max_attempts=1000, initial_backoff_s=0.05, multiplier=1.0, jitter=0, deadline_s=0.5
    )
    with ModelServer(Sequence(error(503))) as server:
        started = time.monotonic()
        items, exc = await run(server, retry=policy)
        elapsed = time.monotonic() - started
    # The deadline ends the retries either way: the next wait would pass it (the last 503
    # is the error) or it passes while an attempt is out (a timeout naming the deadline).
    assert isinstance(exc, ModelError)
    assert exc.status_code == 503 or "deadline" in str(exc), exc
    # Without the deadline the retries would go on for 50 s; the bound leaves room for a
    # machine busy with other work.
    assert elapsed < 5.0
    assert 2 <= len(starts(items)) < 1000
    assert failures(items)[-1].will_retry is False


async def test_total_deadline_cuts_a_slow_stream() -> None:
    slow = Reply(chunks=text_chunks("a b c d e f g h i j"), chunk_delay_s=0.2)
    policy = RetryPolicy(deadline_s=0.5)
    with ModelServer(Sequence(slow)) as server:
        started = time.monotonic()
        items, exc = await run(server, retry=policy, timeout_s=5)
    assert isinstance(exc, ModelTimeout)
    assert time.monotonic() - started < 1.5
    assert "deadline" in str(exc)
    assert failures(items)[-1].kind == "timeout"


async def test_mid_stream_server_error_event_is_a_retried_attempt() -> None:
    broken = Reply(
        chunks=[*text_chunks("half")[:2], {"error": {"message": "boom", "type": "server_error"}}]
    )
    with ModelServer(Sequence(broken, OK)) as server:
        items, exc = await run(server)
    assert exc is None and starts(items) == [1, 2]
    [failed] = failures(items)
    assert failed.kind == "stream_error" and failed.will_retry
    assert "boom" in failed.message


async def test_non_streaming_path_retries_too() -> None:
    completion = {
        "id": "x",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "fine"},
                "finish_reason": "stop",
            }
        ],
    }
    with ModelServer(Sequence(error(500), Reply(body=completion))) as server:
        items, exc = await run(server, stream=False)
    assert exc is None and starts(items) == [1, 2]
    done = items[-1]
    assert isinstance(done, Completed) and done.response.content == "fine"
    assert server.bodies[0]["stream"] is False and "stream_options" not in server.bodies[0]


def test_public_url_drops_credentials() -> None:
    assert public_url("https://user:pw@api.example.com:8443/v1?api-key=s3cret&x=1") == (
        "https://api.example.com:8443/v1?x=1"
    )
    assert public_url("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080/v1"
