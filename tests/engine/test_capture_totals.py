"""What a captured run's `run_end` counts, as the agent loop counts it: every model call
(a failed attempt too), the tool calls the client ran (a call it sent no result for is a
failed one), the provider's usage where an answer carries it. Driven through the
`CaptureBook` the recording process sorts exchanges with, as the fleet tests do."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tests.engine.capture_support import read_run
from workbench.engine.http.capture import CaptureBook, Exchange

TASK = [{"role": "user", "content": "Read a.txt and b.txt."}]
CALLS = [
    {"id": f"call_{name}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    for name in ("a", "b")
]
ASKING = {"role": "assistant", "content": None, "tool_calls": CALLS}
USAGE = {"prompt_tokens": 30, "completion_tokens": 5, "total_tokens": 35}


def answer(message: dict[str, Any], usage: dict[str, Any] | None = None) -> bytes:
    body: dict[str, Any] = {"choices": [{"index": 0, "message": message}]}
    if usage is not None:
        body["usage"] = usage
    return json.dumps(body).encode()


def test_a_captured_run_counts_failed_attempts_and_missing_results(tmp_path: Path) -> None:
    book = CaptureBook(tmp_path, "http://upstream.invalid/v1", None)

    def ask(messages: list[dict[str, Any]]) -> Exchange:
        exchange = book.begin({"model": "m", "messages": messages}, {}, "", time.monotonic())
        assert exchange is not None
        return exchange

    failing = ask(TASK)
    failing.failed(500, "HTTP 500: overloaded", time.monotonic())
    ask(TASK).completion(answer(ASKING, USAGE), time.monotonic())  # the retry
    # The client sends back the result of one call of the two.
    result = {"role": "tool", "tool_call_id": "call_a", "content": "A"}
    last = ask([*TASK, ASKING, result])
    last.completion(answer({"role": "assistant", "content": "Done."}, USAGE), time.monotonic())
    assert book.problems == []
    book.close()
    events = read_run(tmp_path)
    totals = events[-1]["totals"]
    assert events[-1]["status"] == "completed"
    assert {key: value for key, value in totals.items() if key != "duration_ms"} == {
        "turns": 2,
        "model_calls": 3,
        "tool_calls": 2,
        "tool_errors": 1,
        "input_tokens": 60,
        "output_tokens": 10,
        "total_tokens": 70,
    }
