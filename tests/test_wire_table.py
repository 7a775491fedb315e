"""The wire formats' one home (agent_core/wire/codecs.py), held by tests so it does not erode:
every format the traces know has a codec in the table, every codec reads back what it
writes, and no module outside agent_core/wire branches on a format's name (a new format is
a codec and a table entry, never a branch in ten files)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agent_core.wire.codecs import API_PATHS, CODECS, codec_for
from traces.events import MODEL_APIS, ModelApi

ROOT = Path(__file__).resolve().parents[1]

_NAME = r'"(?:chat|responses|anthropic)"'
# A comparison with a format's name, an `api` looked up in a list of them, or a table keyed
# by them. (OpenTelemetry's operation "chat" is no wire format.)
_BRANCH = re.compile(
    rf"[=!]=\s*{_NAME}|{_NAME}\s*[=!]=|\bapi\w*\s+(?:not\s+)?in\s*[(\[{{]|[{{,]\s*{_NAME}\s*:"
)


def test_every_format_the_traces_know_has_one_codec() -> None:
    assert set(CODECS) == set(MODEL_APIS)
    assert all(codec.api == api for api, codec in CODECS.items())
    paths = [path for codec in CODECS.values() for path in codec.paths]
    assert len(paths) == len(set(paths)) == len(API_PATHS)


def test_no_module_outside_the_wire_package_branches_on_a_format_name() -> None:
    wire = ROOT / "agent_core" / "wire"
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for package in ("agent_core", "workbench")
        for path in sorted((ROOT / package).rglob("*.py"))
        if wire not in path.parents
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if _BRANCH.search(line)
    ]
    assert found == [], "ask agent_core.wire.codecs.codec_for(api) instead:\n" + "\n".join(found)


ANSWER = {
    "role": "assistant",
    "content": "Looking.",
    "tool_calls": [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'},
        }
    ],
}


@pytest.mark.parametrize("api", MODEL_APIS)
def test_each_codec_reads_back_what_it_writes(api: ModelApi) -> None:
    codec = codec_for(api)
    usage = {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
    body = codec.whole_body(
        ANSWER, "tool_calls", usage, model="m", response_id=f"{codec.answer_id_prefix}_1"
    )
    whole = codec.answer_from_body(body)
    assembler = codec.assembler()
    text = "".join(assembler.add(event) for event in codec.stream_events(body))
    streamed = assembler.result()
    for read in (whole, streamed):
        assert read.message == ANSWER
        assert read.finish_reason == "tool_calls" and read.usage == usage
    assert text == "Looking." and assembler.answered
    loop = codec.whole_response(body)
    assert loop.content == "Looking." and [c.name for c in loop.tool_calls] == ["read_file"]
    # A request the codec writes reads back as the messages and tools it was written from.
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    request = codec.request_body("m", messages, [], {"temperature": 0}, stream=True)
    read_messages, read_tools, params = codec.request_parts(request)
    assert read_messages == messages and read_tools == [] and params["temperature"] == 0
