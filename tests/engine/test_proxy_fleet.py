"""Many streams at once through `workbench proxy`: each client gets its chunks as the
upstream sends them (recording never holds one back), and every run is recorded whole and
in order — also those whose client closed early."""

from __future__ import annotations

import asyncio
import json
import random
import time
from pathlib import Path
from typing import Any

import openai
from aiohttp import web

from tests.engine.capture_support import read_run, runs
from workbench.engine.http.capture import FORGET_EVERY, MAX_REMEMBERED_RUNS, CaptureBook
from workbench.engine.http.channel import RecordingChannel
from workbench.engine.http.proxy import RecordingProxy
from workbench.engine.http.server import HttpServer

STREAMS = 50
WORDS = 12  # chunks with text, after the first


class GatedUpstream:
    """Streams an answer to `q<N>`: its first chunk, then — once the test says client N
    has seen that chunk — the rest. A proxy that held the first chunk back (until the
    answer's end, or until it was recorded) would never let the client see it: the
    upstream then gives up after a while and answers `too late`, which fails the test."""

    def __init__(self) -> None:
        self.http = HttpServer(self._app)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._gates: dict[int, asyncio.Event] = {}
        self.sent_last: set[int] = set()

    async def _app(self) -> web.Application:
        self._loop = asyncio.get_running_loop()
        app = web.Application()
        app.router.add_post("/chat/completions", self._stream)
        return app

    def release(self, number: int) -> None:
        """Client `number` saw its first chunk (called from the test's thread)."""
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._gate(number).set)

    def _gate(self, number: int) -> asyncio.Event:
        return self._gates.setdefault(number, asyncio.Event())

    async def _stream(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        number = int(body["messages"][0]["content"][1:])
        answer = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await answer.prepare(request)
        await answer.write(_sse(number, {"role": "assistant", "content": f"{number}:"}))
        try:
            await asyncio.wait_for(self._gate(number).wait(), 30)
            words = [f" w{number}.{i}" for i in range(WORDS)]
        except TimeoutError:
            words = [" too late"]
        try:
            for word in words:
                await answer.write(_sse(number, {"content": word}))
            await answer.write(_sse(number, {}, "stop"))
            self.sent_last.add(number)
            await answer.write(b"data: [DONE]\n\n")
            await answer.write_eof()
        except ConnectionError:
            pass  # a client that closed early
        return answer


def _sse(number: int, delta: dict[str, Any], finish: str | None = None) -> bytes:
    chunk = {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(chunk)}\n\n".encode()


def _early(number: int) -> bool:
    return number % 5 == 0  # a fifth of the clients close after their first chunk


async def test_many_concurrent_streams_pass_unheld_and_are_all_recorded_exactly(
    tmp_path: Path,
) -> None:
    upstream = GatedUpstream()
    upstream.http.start()
    home = tmp_path / "home"
    received: dict[int, list[str]] = {}
    first_before_last: dict[int, bool] = {}
    try:
        with RecordingProxy(upstream.http.base_url.removesuffix("/v1"), home) as proxy:
            client = openai.AsyncOpenAI(base_url=proxy.base_url, api_key="sk-k", max_retries=0)

            async def one(number: int) -> None:
                stream = await client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": f"q{number}"}], stream=True
                )
                texts: list[str] = []
                async for chunk in stream:
                    if not texts:
                        # The upstream holds the rest of this answer until told: the first
                        # chunk got here before the upstream sent the last.
                        first_before_last[number] = number not in upstream.sent_last
                    texts.append(chunk.choices[0].delta.content or "")
                    if _early(number):
                        # Closed while the upstream still holds the rest: the proxy sees
                        # the client go away mid-answer.
                        await stream.close()
                        break
                    upstream.release(number)
                received[number] = texts

            await asyncio.gather(*(one(n) for n in range(STREAMS)))
            await client.close()
    finally:
        for number in range(STREAMS):
            upstream.release(number)  # the early ones' answers now go nowhere
        upstream.http.close()
    assert all(first_before_last.values()) and len(first_before_last) == STREAMS
    recorded = runs(home)
    assert len(recorded) == STREAMS
    by_number = {int(run[0]["task"][1:]): run for run in recorded}
    assert sorted(by_number) == list(range(STREAMS))
    for number, events in by_number.items():
        assert [e["seq"] for e in events] == list(range(len(events)))
        chunks = [e for e in events if e["type"] == "model_chunk"]
        assert [c["index"] for c in chunks] == list(range(len(chunks)))
        assert all(c["data"]["id"] == f"chatcmpl-{number}" for c in chunks)
        deltas = [c["data"]["choices"][0]["delta"].get("content") or "" for c in chunks]
        if _early(number):
            # Closed after its first chunk: what it saw is recorded, the run incomplete.
            assert [e["type"] for e in events][:3] == ["run_start", "model_request", "model_chunk"]
            assert deltas[0] == f"{number}:"
            assert "run_end" not in [e["type"] for e in events]
            continue
        text = f"{number}:" + "".join(f" w{number}.{i}" for i in range(WORDS))
        assert "".join(received[number]) == text
        assert deltas == received[number]  # every chunk, the finish chunk too, in order
        assert [e["type"] for e in events][-2:] == ["model_response", "run_end"]
        assert events[-2]["message"]["content"] == text
        assert events[-1]["status"] == "completed" and events[-1]["final_answer"] == text


def test_a_long_fleet_of_runs_is_remembered_up_to_a_bound(tmp_path: Path) -> None:
    """Ended runs are kept for follow-ups up to MAX_REMEMBERED_RUNS (looked over once
    FORGET_EVERY more runs are known, not at each new run, so a few more may wait to be
    forgotten): the newest follow up as before, the oldest are forgotten, and what the book
    holds stays bounded however many runs came."""

    def ask(n: int) -> list[dict[str, Any]]:
        return [{"role": "user", "content": f"question {n}"}]

    def answer(n: int) -> bytes:
        message = {"role": "assistant", "content": f"answer {n}"}
        return json.dumps({"choices": [{"index": 0, "message": message}]}).encode()

    book = CaptureBook(tmp_path, "http://upstream.invalid/v1", None)
    total = MAX_REMEMBERED_RUNS + 3 * FORGET_EVERY
    for n in range(total):
        exchange = book.begin({"model": "m", "messages": ask(n)}, {}, "", time.monotonic())
        assert exchange is not None
        exchange.completion(answer(n), time.monotonic())
        ended = [run for run in book.runs.values() if run.state in ("completed", "ended")]
        # (the one answering when the book last looked may end after it)
        assert len(ended) <= MAX_REMEMBERED_RUNS + FORGET_EVERY + 1
    assert len(book.runs) >= MAX_REMEMBERED_RUNS  # ...and no more were forgotten than that

    def follow_up(n: int) -> str:
        said = [*ask(n), {"role": "assistant", "content": f"answer {n}"}]
        body = {"model": "m", "messages": [*said, {"role": "user", "content": "and then?"}]}
        exchange = book.begin(body, {}, "", time.monotonic())
        assert exchange is not None
        exchange.completion(answer(-1), time.monotonic())
        return exchange.run.run_id

    newest = next(reversed(book.runs))
    recent, oldest = follow_up(total - 1), follow_up(0)
    assert book.problems == []
    book.close()
    # Remembered: the follow-up names the run it continues; forgotten: a run of its own.
    assert read_run(tmp_path, recent)[0]["parent_run_id"] == newest
    assert read_run(tmp_path, oldest)[0]["parent_run_id"] is None


def test_a_fleet_sending_the_same_conversation_follows_up_its_newest_run(tmp_path: Path) -> None:
    """Many clients send the same prompt and get the same answer: a follow-up of it
    continues the newest of those runs, and each run taken out of the index (answering
    again, or forgotten) leaves the others in it."""
    asked = [{"role": "user", "content": "the same question"}]
    said = [*asked, {"role": "assistant", "content": "the same answer"}]
    answer = json.dumps({"choices": [{"index": 0, "message": said[-1]}]}).encode()
    book = CaptureBook(tmp_path, "http://upstream.invalid/v1", None)
    made = []
    for _ in range(300):
        exchange = book.begin({"model": "m", "messages": asked}, {}, "", time.monotonic())
        assert exchange is not None
        exchange.completion(answer, time.monotonic())
        made.append(exchange.run.run_id)
    parents = []
    for _ in range(3):
        body = {"model": "m", "messages": [*said, {"role": "user", "content": "and then?"}]}
        exchange = book.begin(body, {}, "", time.monotonic())
        assert exchange is not None
        exchange.completion(answer, time.monotonic())
        parents.append(exchange.run.run_id)
    assert book.problems == []
    book.close()
    found = [read_run(tmp_path, run_id)[0]["parent_run_id"] for run_id in parents]
    assert found == made[-1:] * 3  # completed runs are followed up, and stay remembered


async def test_a_backlog_of_conversations_is_recorded_in_order_whatever_order_they_end_in(
    tmp_path: Path,
) -> None:
    """Many conversations at once, each turn a follow-up of the last, their answers ending
    in another order than they began, all sent to the recording process before it has
    recorded any (a backlog, as when recording falls behind a fleet): each follow-up is
    recorded after the answer it continues, so every conversation is one chain of runs,
    each the parent of the next."""
    chains, turns = 40, 12
    home = tmp_path / "home"
    channel = RecordingChannel(home, "http://upstream.invalid/v1", None)
    await channel.open()
    shuffled = random.Random(7)
    said: dict[int, list[dict[str, Any]]] = {c: [] for c in range(chains)}
    for turn in range(turns):
        keys = {}
        for c in shuffled.sample(range(chains), chains):
            said[c].append({"role": "user", "content": f"chain {c} turn {turn}"})
            raw = json.dumps({"model": "m", "stream": True, "messages": said[c]}).encode()
            keys[c] = channel.arrived("chat", raw, {}, "", time.monotonic())
            channel.went_up(keys[c], time.monotonic())
        for c in shuffled.sample(range(chains), chains):
            text = f"answer {c}.{turn}"
            for piece in (_sse(c, {"role": "assistant", "content": text}), b"data: [DONE]\n\n"):
                channel.piece(keys[c], time.monotonic(), piece)
            said[c].append({"role": "assistant", "content": text})
        for c in shuffled.sample(range(chains), chains):
            channel.over(keys[c], time.monotonic(), None, None, True)
    await channel.close()
    recorded = runs(home)
    assert len(recorded) == chains * turns
    by_id = {events[0]["run_id"]: events for events in recorded}
    for c in range(chains):
        ends = [
            events
            for events in recorded
            if events[1]["messages"][0]["content"] == f"chain {c} turn 0"
        ]
        first = [events for events in ends if events[0]["parent_run_id"] is None]
        assert len(first) == 1, f"chain {c}: {len(first)} runs without a parent"
        chain = first
        while children := [e for e in ends if e[0]["parent_run_id"] == chain[-1][0]["run_id"]]:
            assert len(children) == 1
            chain.append(children[0])
        assert len(chain) == turns and all(run[0]["run_id"] in by_id for run in chain)
        answers = [run[-2]["message"]["content"] for run in chain]
        assert answers == [f"answer {c}.{turn}" for turn in range(turns)]
