"""Responders for the local model server that tests script request by request."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import openai

from agent_core.wire import chat_completions
from workbench.engine.http.model_server import ModelServer, Reply, Responder
from workbench.engine.http.proxy import RecordingProxy


class Sequence:
    """Answers request N with reply N; the last reply repeats once the list runs out."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.calls = 0
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            reply = self.replies[min(self.calls, len(self.replies) - 1)]
            self.calls += 1
        return reply


def text_chunks(text: str, *, usage: dict[str, Any] | None = None) -> list[dict[str, Any] | str]:
    """A minimal well-formed stream answering `text`."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-test",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    chunks: list[dict[str, Any] | str] = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": piece}) for piece in re.findall(r"\S+\s*|\s+", text)]
    chunks.append(chunk({}, "stop"))
    if usage is not None:
        chunks.append({"id": "chatcmpl-test", "choices": [], "usage": usage})
    chunks.append("data: [DONE]")
    return chunks


def completion(
    message: dict[str, Any], finish: str, usage: tuple[int, int], *, model: str
) -> Reply:
    """A whole chat completion of `model` answering `message`, billed `usage` (prompt and
    completion tokens)."""
    counts = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}
    answer_id = "chatcmpl-1"
    body = chat_completions.whole_body(message, finish, counts, model=model, response_id=answer_id)
    return Reply(body=body)


async def open_streams_at_once(base_url: str, streams: int) -> int:
    """Open `streams` chat completion streams to `base_url` and hold each open after its
    first chunk until every one has its first chunk; how many got their first chunk. The
    server's streams should stall after their first chunk (`Reply(stall_after=1)`)."""
    first_chunks = 0
    all_open = asyncio.Event()
    client = openai.AsyncOpenAI(base_url=base_url, api_key="k", max_retries=0)

    async def one(number: int) -> None:
        nonlocal first_chunks
        stream = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": f"q{number}"}], stream=True
        )
        await anext(aiter(stream))
        first_chunks += 1
        if first_chunks == streams:
            all_open.set()
        await all_open.wait()
        await stream.close()

    await asyncio.wait_for(asyncio.gather(*(one(n) for n in range(streams))), 600)
    await client.close()
    return first_chunks


def hang_up_after_first_chunk(client: openai.OpenAI) -> None:
    """Ask for a streamed answer, read its first chunk and close the stream: a client that
    goes away mid-answer."""
    stream = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "count"}], stream=True
    )
    next(iter(stream))
    stream.close()


@contextmanager
def recording_proxy(
    responder: Responder, home: Path
) -> Iterator[tuple[ModelServer, RecordingProxy]]:
    """A local model server answering with `responder`, and `workbench proxy` in front of
    it recording into `home`."""
    with ModelServer(responder) as upstream, RecordingProxy(upstream.base_url, home) as proxy:
        yield upstream, proxy
