"""`serve-model` against damaged and hostile requests, and many clients at once.

Every bad request gets an HTTP answer with one clear line (never a traceback on the server's
stderr, never a dropped connection), the server keeps no request bodies, and it holds 200
concurrent streams with none refused.
"""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.engine.test_serve_model import serve
from tests.support.processes import WAIT_S
from tests.support.servers import open_streams_at_once, text_chunks
from workbench.engine.http.model_server import ModelServer, Reply, ScriptResponder


async def exchange(base_url: str, head: str, body: bytes = b"") -> tuple[int, bytes]:
    """Send one raw HTTP request; the status and the body of the answer."""
    host, port = base_url.split("//")[1].split("/")[0].split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(head.replace("\n", "\r\n").encode() + b"\r\n" + body)
    await writer.drain()
    answer = await reader.read()  # `Connection: close`: the server ends the answer with EOF
    writer.close()
    status_line, _, rest = answer.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2]


def post_head(length: str) -> str:
    return (
        "POST /v1/chat/completions HTTP/1.1\nHost: localhost\nConnection: close\n"
        f"Content-Type: application/json\nContent-Length: {length}\n"
    )


BAD_BODIES = {
    "invalid utf-8": (b'{"messages": "\xff\xfe"}', "not valid UTF-8"),
    "100,000-deep": (b"[" * 100_000 + b"]" * 100_000, "nests too deeply"),
    "deep object": (b'{"messages":' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nests too deeply"),
    "not json": (b"{'messages': []}", "not valid JSON"),
    "not an object": (b"[1, 2]", "not a JSON object"),
}


@pytest.mark.parametrize("case", sorted(BAD_BODIES))
async def test_bad_bodies_get_400_with_one_line(case: str) -> None:
    body, reason = BAD_BODIES[case]
    with ModelServer(ScriptResponder([{"content": "ok"}] * 2)) as server:
        status, answer = await exchange(server.base_url, post_head(str(len(body))), body)
        assert status == 400
        message = json.loads(answer)["error"]["message"]
        assert reason in message and "\n" not in message
        # The server is still there and answers the next good request.
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        reply = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}]
        )
        await client.close()
    assert reply.choices[0].message.content == "ok"


@pytest.mark.parametrize("length", ["abc", "-5", "12abc"])
async def test_a_bad_content_length_gets_400(length: str) -> None:
    with ModelServer(ScriptResponder([])) as server:
        status, _ = await exchange(server.base_url, post_head(length), b"{}")
        assert server.bodies == []
    assert status == 400


async def test_a_body_over_the_limit_gets_413_and_is_not_kept(tmp_path: Path) -> None:
    big = json.dumps({"messages": [{"role": "user", "content": "x" * 5000}]}).encode()
    with ModelServer(ScriptResponder([]), max_request_bytes=4096) as server:
        status, answer = await exchange(server.base_url, post_head(str(len(big))), big)
        # A client that does not say the length up front is cut off at the limit too.
        chunked = post_head("0").replace("Content-Length: 0", "Transfer-Encoding: chunked")
        framed = b"%x\r\n%s\r\n0\r\n\r\n" % (len(big), big)
        status_chunked, answer_chunked = await exchange(server.base_url, chunked, framed)
        assert server.bodies == []
    for got, text in ((status, answer), (status_chunked, answer_chunked)):
        assert got == 413
        error = json.loads(text)["error"]
        assert error["type"] == "request_too_large" and "limit of 4096 bytes" in error["message"]


async def test_serve_model_keeps_no_request_bodies() -> None:
    with ModelServer(ScriptResponder([{"content": "a"}]), keep_requests=False) as server:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "q"}])
        await client.close()
        assert server.requests == []


async def test_holds_200_concurrent_streams_none_refused() -> None:
    # Each stream sends its first chunk and then holds the connection open until the server
    # stops, so all 200 are open on the server at the same moment once every first chunk is in.
    reply = Reply(chunks=text_chunks("one two"), stall_after=1)
    streams = 200
    with ModelServer(lambda body: reply, keep_requests=False) as server:
        assert await open_streams_at_once(server.base_url, streams) == streams


def test_the_cli_answers_bad_requests_without_a_traceback(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"content": "Hi."}]}))
    deep = b"[" * 100_000 + b"]" * 100_000
    with serve("--script", str(script), "--max-request-mb", "1") as base_url:

        async def probe() -> list[int]:
            big = b'{"messages": "' + b"x" * (2 * 1024 * 1024) + b'"}'
            return [
                (await exchange(base_url, post_head(str(len(body))), body))[0]
                for body in (b'{"a": "\xff"}', deep, big)
            ] + [(await exchange(base_url, post_head("-1"), b""))[0]]

        assert asyncio.run(probe()) == [400, 400, 413, 400]
    # `serve` asserts the server exits 0 with no traceback on its stderr.


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a":"\\ud800"}',  # a lone surrogate: Python's reader takes it
        b'{"a":' + b"[" * 300 + b"]" * 300 + b"}",  # deeper than the fast reader goes
        b'{"a":NaN,"b":1e400,"c":12345678901234567890123,"a":2}',
        b"\xef\xbb\xbf{}",
        b'{"a":"\xff"}',
        b'{"a":1} x',
        b"[1]",
    ],
)
def test_request_bodies_are_read_alike_by_both_readers(raw: bytes) -> None:
    """The servers read a body with pydantic's fast reader and, where it refuses one, with
    Python's as before: every body gets Python's verdict (the same value, or the same
    one-line refusal)."""
    from workbench.engine.http.server import RequestProblem, parse_json_object

    try:
        expected: object = json.loads(raw.decode("utf-8"))
    except ValueError:  # (a UnicodeDecodeError too)
        expected = "refused"
    if not isinstance(expected, dict):
        expected = "refused"
    try:
        found: object = parse_json_object(raw)
    except RequestProblem:
        found = "refused"
    assert json.dumps(found, sort_keys=True) == json.dumps(expected, sort_keys=True)


def test_a_responder_that_takes_long_holds_up_no_other_request() -> None:
    # serve-model's mismatch reads every recorded request of its runs again: in the
    # server's event loop, no other client was answered (not even /v1/models) meanwhile.
    entered, models_answered = threading.Event(), threading.Event()

    def slow(body: dict[str, Any]) -> Reply:
        entered.set()
        assert models_answered.wait(WAIT_S), "/v1/models waited for the responder"
        return Reply(chunks=text_chunks("done"))

    with ModelServer(slow) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        answers: list[str] = []
        asking = threading.Thread(
            target=lambda: answers.append(
                client.chat.completions.create(
                    model="scripted", messages=[{"role": "user", "content": "hi"}]
                )
                .choices[0]
                .message.content
                or ""
            )
        )
        asking.start()
        assert entered.wait(WAIT_S)
        assert [model.id for model in client.models.list()] == ["scripted"]
        models_answered.set()
        asking.join()
    assert answers == ["done"]
