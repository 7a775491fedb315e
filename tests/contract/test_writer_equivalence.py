"""The JSONL writer's fast roads (pydantic's own text, message texts reused across requests)
write exactly the bytes of the plain definition of a trace line:

    pydantic_core.to_json(redactor.value(event.model_dump(mode="json")), inf_nan_mode="null")

checked on a real long run and on many generated events full of things to redact. Chunks
are redacted as a stream first (`traces.redact.ChunkStream`): a secret split over several
chunks is redacted across them.
"""

from __future__ import annotations

import asyncio
import base64
import json
import random
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pydantic_core
import pytest

from agent_core.agent import Agent, AgentConfig
from agent_core.model.scripted import ScriptedModel
from agent_core.tools.builtin import builtin_tools
from traces.events import (
    EVENT_ADAPTER,
    EVENT_TYPES,
    Edit,
    Error,
    EventBase,
    HistoryTrimmed,
    Limits,
    McpMessage,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    RunEnd,
    RunStart,
    ToolEnd,
    ToolsChanged,
    ToolStart,
    Totals,
    ts_text,
)
from traces.redact import ChunkStream, Redactor
from traces.writer import JsonlWriter, MemorySink

SECRET = "sk-test-0123456789abcdef"


def reference_line(redactor: Redactor, event: EventBase) -> str:
    record = redactor.value(event.model_dump(mode="json"))
    return pydantic_core.to_json(record, inf_nan_mode="null").decode()


class ReferenceLines:
    """The reference lines of a run, event by event: each chunk with its data as the
    stream's redaction leaves it (a secret split over chunks is redacted across them)."""

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        self.stream: ChunkStream[EventBase] = ChunkStream(redactor)
        self.lines: list[str] = []

    def add(self, event: EventBase) -> None:
        if isinstance(event, ModelChunk):
            self._chunks(self.stream.push(event, event.data))
            return
        self._chunks(self.stream.flush())
        self.lines.append(reference_line(self.redactor, event))

    def done(self) -> list[str]:
        self._chunks(self.stream.flush())
        return self.lines

    def _chunks(self, chunks: list[tuple[EventBase, dict[str, Any]]]) -> None:
        for chunk, data in chunks:
            self.lines.append(
                reference_line(self.redactor, chunk.model_copy(update={"data": data}))
            )


def written_lines(path: Path) -> list[str]:
    # Not splitlines(): JSON keeps U+2028 and friends raw, and only "\n" ends a line.
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def test_a_long_real_run_is_written_exactly_as_the_reference(tmp_path: Path) -> None:
    turns = 40
    steps: list[dict[str, object]] = [
        {
            "content": f'Step {n}: ünïcode ✓ and a\nnew line, "quotes" and key {SECRET}.',
            "tool_calls": [{"name": "calculator", "arguments": {"expression": f"{n} * 3 + 1"}}],
        }
        for n in range(1, turns)
    ]
    steps.append({"content": "All steps done."})
    config = AgentConfig(
        task="Compute every step. Authorization: Bearer abcdefghijklmnop",
        limits=Limits(max_turns=turns + 1, token_budget=10**9, context_window=10**7),
    )
    redactor = Redactor([SECRET])
    memory = MemorySink()
    writer = JsonlWriter(tmp_path, config.run_id, redactor)
    root = Path(__file__).resolve().parents[2]
    agent = Agent(ScriptedModel(steps), [builtin_tools(root)], config, sinks=[memory, writer])

    async def drive() -> list[Any]:
        return [item async for item in agent.run_stream()]

    yielded = [item for item in asyncio.run(drive()) if isinstance(item, EventBase)]

    lines = written_lines(writer.path)
    assert yielded == memory.events
    assert len(lines) == len(memory.events) > 8 * turns
    reference = ReferenceLines(redactor)
    for event in memory.events:
        reference.add(event)
    assert lines == reference.done()
    assert SECRET not in "".join(lines) and "abcdefghijklmnop" not in "".join(lines)
    # The in-memory requests are what validation would have built from the same fields.
    requests = [e for e in memory.events if isinstance(e, ModelRequest)]
    assert len(requests) == turns
    for request in requests:
        rebuilt = ModelRequest(
            **{name: getattr(request, name) for name in ModelRequest.model_fields}
        )
        assert type(request) is ModelRequest and request == rebuilt
        assert EVENT_ADAPTER.validate_json(request.model_dump_json()) == request


# Strings that exercise every redaction rule and every serializer corner.
TRICKY = [
    "plain",
    "",
    SECRET,
    f"key={SECRET}!",
    f"line one\n{SECRET}",
    f"tab\t{SECRET}\ttab",
    "Bearer abcdefghijklmnop",
    "line\nBearer abcdefghijklmnop",
    "x\tbearer\tqrstuvwxyz123456",
    "Authorization: Bearer short",
    "ticket ACME-123456 and ACME-654321",
    'quote " backslash \\ slash / control \x00\x01\x1f del \x7f',
    "ünïcode ✓ 漢字 emoji 😀 \u2028 \u2029",
    "\\n is not a newline",
    "api_key",
    "1.5e-07 in text",
    "0.00001",
    "nab" + SECRET[3:],
]
AUTH_KEYS = ["Authorization", "api_key", "API-Key", "x-api-key", "proxy-authorization"]
SCALARS: list[Any] = [0, 1, -7, 2**70, True, False, None, 0.5, -0.0, 1e16, 1.5e-7, 4.5e-5, 1e-4]
# Values a JSON encoder refuses or writes otherwise than pydantic: the writer must notice.
ODD: list[Any] = [
    float("nan"),
    float("inf"),
    datetime(2026, 3, 1, 12, 0, tzinfo=UTC),
    b"bytes",
    {1, 2},
    ("a", "tuple"),
    {1: "int key"},
]


def random_value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth < 3 and roll < 0.2:
        return {random_key(rng): random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))}
    if depth < 3 and roll < 0.35:
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    if roll < 0.02:
        return rng.choice(ODD)
    if roll < 0.5:
        return rng.choice(SCALARS)
    return rng.choice(TRICKY) + rng.choice(["", " tail", "\n"])


def random_key(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.15:
        return rng.choice(AUTH_KEYS)
    if roll < 0.2:
        return rng.choice(TRICKY)
    return rng.choice(["role", "content", "name", "args", "headers", "ü-key", "n"])


def random_message(rng: random.Random) -> dict[str, Any]:
    role = rng.choice(["user", "assistant", "tool"])
    message: dict[str, Any] = {"role": role, "content": random_value(rng)}
    if role == "assistant" and rng.random() < 0.5:
        message["tool_calls"] = [
            {
                "id": f"call_{rng.randint(0, 99)}",
                "type": "function",
                "function": {
                    "name": "calculator",
                    "arguments": json.dumps(random_value(rng), default=repr),
                },
            }
        ]
    if rng.random() < 0.2:
        message[random_key(rng)] = random_value(rng)
    return message


def random_events(rng: random.Random, count: int) -> list[EventBase]:
    """A run's worth of events; requests grow a shared history the way the loop does:
    appended messages (the same dicts again), now and then a trim, a message edited in
    place, or a message replaced by an equal one with its keys in another order."""
    start = datetime(2026, 3, 1, tzinfo=UTC)
    history: list[dict[str, Any]] = [{"role": "system", "content": rng.choice(TRICKY)}]
    tools: list[dict[str, Any]] = [{"type": "function", "function": {"name": "t", "x": 1}}]
    events: list[EventBase] = []
    for seq in range(count):
        base: dict[str, Any] = {
            "run_id": "run-eq",
            "seq": seq,
            "ts": start + timedelta(microseconds=rng.randint(0, 10**9)),
            "turn": rng.choice([None, 1, 2, 17]),
        }
        if rng.random() < 0.1:  # an aware time in another zone is written in UTC
            base["ts"] = base["ts"].astimezone(timezone(timedelta(hours=5, minutes=30)))
        elif rng.random() < 0.1:  # a whole second still has its six digits
            base["ts"] = base["ts"].replace(microsecond=0)
        kind = rng.random()
        if kind < 0.45:
            history.extend(random_message(rng) for _ in range(rng.randint(0, 3)))
            change = rng.random()
            if change < 0.08 and len(history) > 3:
                history = history[:1] + history[len(history) // 2 :]
            elif change < 0.16:
                rng.choice(history)["content"] = random_value(rng)
            elif change < 0.22:
                victim = rng.randrange(len(history))
                history[victim] = dict(reversed(list(history[victim].items())))
            elif change < 0.28:
                message = rng.choice(history)
                message.setdefault("tool_calls", []).append({"id": "edited", "args": SECRET})
            elif change < 0.34:
                tools[0]["function"]["x"] = random_value(rng)
            elif change < 0.4:
                tools = [*tools, {"type": "function", "function": {random_key(rng): "y"}}][-3:]
            events.append(
                ModelRequest.model_construct(
                    **base,
                    attempt=rng.randint(1, 3),
                    messages=list(history),
                    tools=list(tools),
                    params={rng.choice(["temperature", "api_key", "extra"]): random_value(rng)},
                    stream=rng.random() < 0.5,
                    estimated_tokens=rng.randint(0, 10**6),
                )
            )
            # Edits after writing must show in the next request, not in this one's line.
            continue
        if kind < 0.6:
            data = {"choices": [{"delta": {"content": random_value(rng)}}], random_key(rng): 1}
            event: EventBase = ModelChunk(
                **base, index=rng.randint(0, 50), elapsed_ms=rng.choice(SCALARS[7:]), data=data
            )
        elif kind < 0.68:
            event = ModelResponse(
                **base, message=random_message(rng), usage={"total": rng.randint(0, 9)}
            )
        elif kind < 0.74:
            event = ToolStart(
                **base,
                call_id="c",
                name="n",
                arguments_raw=rng.choice(TRICKY),
                arguments={random_key(rng): random_value(rng)},
                source=rng.choice(["builtin", "mcp:fs"]),
                source_name=rng.choice([None, *TRICKY]),
                reasoning=rng.choice(TRICKY),
            )
        elif kind < 0.8:
            event = ToolEnd(
                **base,
                call_id="c",
                name="n",
                ok=rng.random() < 0.5,
                result=rng.choice(TRICKY),
                error=rng.choice([None, *TRICKY]),
                duration_ms=rng.choice([0.25, 3e-5, 1.5e-7, 12.0]),
                observed=rng.random() < 0.5,
            )
        elif kind < 0.85:
            event = McpMessage(
                **base,
                server="s",
                direction="recv",
                frame={"jsonrpc": "2.0", "result": random_value(rng)},
            )
        elif kind < 0.88:
            event = ToolsChanged(
                **base,
                source="mcp:fs",
                tools=list(tools),
                added=[rng.choice(TRICKY)],
                removed=[random_key(rng)],
                dropped=rng.choice([[], [SECRET]]),
            )
        elif kind < 0.91:
            event = HistoryTrimmed(
                **base,
                tokens_before=rng.randint(0, 10**6),
                tokens_after=rng.randint(0, 10**6),
                messages_before=9,
                messages_after=3,
                rounds_kept=1,
                rounds_dropped=2,
                summary=rng.choice([None, *TRICKY]),
            )
        elif kind < 0.95:
            event = RunStart(
                **base,
                task=rng.choice(TRICKY),
                model="m",
                params={"headers": random_value(rng)},
                tools=list(tools),
                tool_sources={"t": rng.choice(TRICKY)},
                tools_dropped=[rng.choice(TRICKY)],
                renamed_tools={"fs_read": rng.choice(TRICKY)},
                origin=rng.choice(["agent", "fork", "captured", "imported"]),
                client=rng.choice([None, *TRICKY]),
                edits=[Edit(kind="user", value=random_value(rng))],
                meta={random_key(rng): random_value(rng)},
            )
        elif kind < 0.98:
            event = Error(**base, where="model", kind="http", message=rng.choice(TRICKY))
        else:
            event = RunEnd(
                **base,
                status="completed",
                final_answer=rng.choice(TRICKY),
                totals=Totals(turns=3, duration_ms=rng.choice([0.25, 1.5e-7])),
            )
        if rng.random() < 0.1:  # as read back from a file (pydantic's own tzinfo, say)
            event = EVENT_ADAPTER.validate_json(event.model_dump_json())
        events.append(event)
    return events


REDACTORS = {
    "none": lambda: Redactor(),
    "secrets": lambda: Redactor([SECRET, "hunter2-password"]),
    "patterns": lambda: Redactor([SECRET], [r"ACME-\d{6}"]),
    "escaped secret": lambda: Redactor(['quote"secret']),
}


def test_generated_events_are_written_exactly_as_the_reference(tmp_path: Path) -> None:
    seen: set[type[EventBase]] = set()
    for name, make in REDACTORS.items():
        for seed in range(6):
            rng = random.Random(f"{name}-{seed}")
            redactor = make()
            writer = JsonlWriter(tmp_path, f"{name}-{seed}".replace(" ", "-"), redactor)
            reference = ReferenceLines(redactor)
            for event in random_events(rng, 120):
                seen.add(type(event))
                if isinstance(event, ModelChunk) and rng.random() < 0.5:
                    write_chunk(writer, event)  # the road the proxy's recording takes
                else:
                    writer.write(event)  # type: ignore[arg-type]
                # Taken now: a request's messages may be edited in place after it is written.
                reference.add(event)
            writer.close()
            assert written_lines(writer.path) == reference.done(), (name, seed)
    assert seen == set(EVENT_TYPES)  # every event type, the newest ones included


def write_chunk(writer: JsonlWriter, chunk: ModelChunk) -> None:
    writer.write_chunk(
        chunk.run_id,
        chunk.seq,
        chunk.ts,
        chunk.turn,
        chunk.attempt,
        chunk.index,
        chunk.elapsed_ms,
        chunk.data,
    )


def test_a_message_edited_in_place_is_written_as_it_is_now(tmp_path: Path) -> None:
    history: list[dict[str, Any]] = [{"role": "user", "content": "hi"}]
    stamp: dict[str, Any] = {"run_id": "r", "ts": datetime(2026, 3, 1, tzinfo=UTC), "turn": 1}
    writer = JsonlWriter(tmp_path, "r", Redactor([SECRET]))
    writer.write(ModelRequest(seq=0, messages=history, **stamp))
    history[0]["content"] = f"now with {SECRET}"
    history[0]["tool_calls"] = [{"function": {"arguments": "{}"}}]
    writer.write(ModelRequest.model_construct(seq=1, messages=list(history), **stamp))
    history[0]["tool_calls"][0]["function"]["arguments"] = '{"x": 1}'
    writer.write(ModelRequest.model_construct(seq=2, messages=list(history), **stamp))
    writer.close()

    first, second, third = (json.loads(line)["messages"][0] for line in written_lines(writer.path))
    assert first == {"role": "user", "content": "hi"}
    assert second["content"] == "now with [REDACTED:api_key]"
    assert third["tool_calls"][0]["function"]["arguments"] == '{"x": 1}'


def test_times_are_written_in_utc_with_microseconds_whatever_came_before() -> None:
    rng = random.Random(7)
    start = datetime(2026, 3, 1, 23, 59, 58, tzinfo=UTC)
    zones = [UTC, timezone(timedelta(hours=-7)), timezone(timedelta(hours=5, minutes=30))]
    for _ in range(2000):
        ts = (start + timedelta(microseconds=rng.randint(0, 3 * 10**6))).astimezone(
            rng.choice(zones)
        )
        if rng.random() < 0.1:
            ts = ts.replace(microsecond=0)
        expected = ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        assert ts_text(ts) == expected


# Secrets that show in a chunk's fields before its data (where the writer reads only the
# data's text when nothing to redact can occur there): in the run id, as its base64 form,
# in a time, as the type's value and as a key.
ENVELOPE_SECRETS = {
    "run id": ("run-sk-envelope-0123", "sk-envelope-0123"),
    "base64 in run id": ("run-" + base64.b64encode(b"sk-b64-secret-9").decode(), "sk-b64-secret-9"),
    "time": ("run-t", "2026-03-01T12"),
    "type": ("run-type", "model_chunk"),
    "key": ("run-key", "elapsed_ms"),
    "none there": ("run-data", "sk-only-in-data-77"),
}


@pytest.mark.parametrize("case", ENVELOPE_SECRETS)
def test_a_secret_in_a_chunks_fields_before_its_data_is_redacted_there(
    tmp_path: Path, case: str
) -> None:
    run_id, secret = ENVELOPE_SECRETS[case]
    texts = ["Hello ", "there, ", f"the key is {secret}.", " Done"]
    answer: list[tuple[dict[str, Any], str | None]] = [
        ({"choices": [{"index": 0, "delta": {"content": text}}]}, None) for text in texts
    ]
    lines = _written_answer(tmp_path, Redactor([secret]), run_id, answer)
    assert not any(secret in line for line in lines)
    assert "[REDACTED:api_key]" in lines[2]


def test_a_secret_in_the_start_of_a_chunks_data_is_redacted_after_clean_ones(
    tmp_path: Path,
) -> None:
    """The start of a chat chunk's data (id, object, model) is read once while it stays
    the same; a chunk whose start differs, or a secret added since, is read again."""
    steps: list[tuple[str, str, str | None]] = [  # (model, content, secret added before)
        ("gpt-x", "Hello", None),
        ("gpt-x", "there", None),
        (f"gpt-{SECRET}", "a key in the model's name", None),
        ("gpt-x", "again clean", None),
        ("gpt-x", "the model's name is now a secret", "gpt-x"),
        ("gpt-x", f"and the key {SECRET} too", None),
    ]
    answer: list[tuple[dict[str, Any], str | None]] = []
    for model, content, added in steps:
        data = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0}
        data |= {"model": model, "choices": [{"index": 0, "delta": {"content": content}}]}
        answer.append((data, added))
    lines = _written_answer(tmp_path, Redactor([SECRET]), "r", answer)
    assert not any(SECRET in line for line in lines)
    assert not any('"model":"gpt-x"' in line for line in lines[4:])


def _written_answer(
    folder: Path, redactor: Redactor, run_id: str, answer: list[tuple[dict[str, Any], str | None]]
) -> list[str]:
    """The lines written for an answer's chunks (each chunk's data, and a secret to add to
    the redactor before it), checked against the reference, a millisecond apart."""
    writer = JsonlWriter(folder, run_id, redactor)
    reference = ReferenceLines(redactor)
    start = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    for index, (data, added) in enumerate(answer):
        if added is not None:
            redactor.add_secret(added)
        chunk = ModelChunk(
            run_id=run_id,
            seq=index,
            ts=start + timedelta(milliseconds=index),
            turn=1,
            index=index,
            elapsed_ms=0.5 * index,
            data=data,
        )
        writer.write(chunk)  # type: ignore[arg-type]
        reference.add(chunk)
    writer.close()
    lines = written_lines(writer.path)
    assert lines == reference.done()
    return lines
