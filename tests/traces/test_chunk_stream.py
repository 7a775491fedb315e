"""The stream-wide redaction of model chunks, over any way of splitting a text: the chunks
come out in order, their deltas read as the redacted whole text, and the caller's chunk
data is never changed (a chunk with nothing to redact comes out as the very same data)."""

from __future__ import annotations

import copy
from itertools import pairwise
from typing import Any

import pydantic_core
from hypothesis import example, given
from hypothesis import strategies as st

from traces.redact import ChunkStream, Redactor

SECRET = "sk-abc-sk"  # starts again inside itself, so partial matches overlap; a start: "s"


def chunk(text: str) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {"content": text}}]}


# Texts near the secret: its pieces, its characters and a little else.
pieces = st.lists(st.sampled_from([SECRET, "sk", "sk-", "-a", "abc", "s", "k", "-", "x y"]))


@given(pieces, st.lists(st.integers(min_value=0, max_value=40)))
def test_chunks_read_as_the_redacted_text_whatever_the_split(
    parts: list[str], cuts: list[int]
) -> None:
    text = "".join(parts)
    bounds = sorted({0, len(text), *(cut for cut in cuts if cut < len(text))})
    texts = [text[start:end] for start, end in pairwise(bounds)]
    redactor = Redactor([SECRET])
    stream: ChunkStream[int] = ChunkStream(redactor)
    datas = [chunk(piece) for piece in texts]
    originals = copy.deepcopy(datas)
    out: list[tuple[int, dict[str, Any]]] = []
    for number, data in enumerate(datas):
        out += stream.push(number, data)
    out += stream.flush()
    assert [number for number, _ in out] == list(range(len(texts)))
    written = "".join(data["choices"][0]["delta"]["content"] for _, data in out)
    assert written == redactor.text(text)
    assert datas == originals
    if SECRET not in text:  # nothing to redact: no copies
        assert all(data is datas[number] for number, data in out)


def tool_chunk(text: str, finish: str = "stop") -> dict[str, Any]:
    call = {"index": 0, "id": finish, "function": {"name": finish, "arguments": text}}
    return {"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": finish}]}


# Values of keys other than the text's: ending with starts of the secret, or holding it.
other_values = st.sampled_from(["stop", "tool_calls", "s", "sk-", f"x {SECRET}", 'a"sk'])


@example(["abc"], [], True, "tool_calls")
@given(pieces, st.lists(st.integers(min_value=0, max_value=40)), st.booleans(), other_values)
def test_a_chunk_whose_text_shows_no_secret_goes_through_as_push_would_pass_it(
    parts: list[str], cuts: list[int], calls: bool, finish: str
) -> None:
    """The writer's shortcut: when `passes` says a chunk's JSON text shows neither a secret
    nor the start of one at the end of a string of its text, `push` would have handed back
    that very chunk at once, holding nothing. Strings of other keys (a finish reason
    `tool_calls` when the key starts with `s`) do not keep a chunk from passing."""
    text = "".join(parts)
    bounds = sorted({0, len(text), *(cut for cut in cuts if cut < len(text))})
    redactor = Redactor([SECRET])
    stream: ChunkStream[int] = ChunkStream(redactor)
    passed = 0
    for number, (start, end) in enumerate(pairwise(bounds)):
        data = tool_chunk(text[start:end], finish) if calls else chunk(text[start:end])
        line = pydantic_core.to_json({"run_id": "r", "seq": number, "data": data}).decode()
        if stream.passes(line):
            passed += 1
            assert stream.push(number, data) == [(number, data)]
            assert not stream.holding
        else:
            stream.push(number, data)
    # Nothing near a secret in the text: every chunk goes through (unless another value is
    # written with an escape, where the quick look cannot tell which string it is in).
    if SECRET[0] not in text and (not calls or '"' not in finish):
        assert passed == len(bounds) - 1


def test_a_secret_added_mid_stream_is_redacted_across_chunks_from_then_on() -> None:
    redactor = Redactor(["sk-first-key"])
    stream: ChunkStream[int] = ChunkStream(redactor)
    assert stream.push(0, chunk("no key yet, sk-new")) == [(0, chunk("no key yet, sk-new"))]
    redactor.add_secret("sk-newer-key")  # a client switched keys mid-run, say
    split = [chunk("the key is sk-ne"), chunk("wer-key, done")]
    line = pydantic_core.to_json(split[0]).decode()
    assert not stream.passes(line)
    out = stream.push(1, split[0]) + stream.push(2, split[1]) + stream.flush()
    text = "".join(data["choices"][0]["delta"]["content"] for _, data in out)
    assert [number for number, _ in out] == [1, 2]
    assert text == "the key is [REDACTED:api_key], done"


# A proxied client's secrets: its header's value and the token inside it.
TOKEN = "sk-abc-sk5e5e"
HEADER_SECRETS = [f"Bearer {TOKEN}", TOKEN]
header_pieces = st.lists(
    st.sampled_from(
        [*HEADER_SECRETS, "Bearer ", "Bear", "sk-", "sk-abc", "5e", "s", "B", '"', "x y"]
    )
)


@given(header_pieces, st.sampled_from([",", "}", "]", ":", " "]))
def test_a_chunk_passes_unless_it_shows_a_secret_or_a_string_closing_on_a_start_of_one(
    parts: list[str], after: str
) -> None:
    """`passes`, against what it is said to do: with secrets inside one another (a header
    and its token), a chunk passes exactly when its JSON text holds no secret and no string
    closing (`"` then `,`, `}` or `]`) right after a start of one."""
    text = "".join(parts)
    line = f'{{"data":{{"content":"{text}"{after}}}}}'
    starts = {secret[:size] for secret in HEADER_SECRETS for size in range(1, len(secret))}
    shows = any(secret in line for secret in HEADER_SECRETS) or any(
        f'{start}"{close}' in line for start in starts for close in ",}]"
    )
    stream: ChunkStream[int] = ChunkStream(Redactor(HEADER_SECRETS))
    assert stream.passes(line) is not shows


def test_a_long_secret_is_looked_for_as_any_other() -> None:
    """A token of a thousand characters (a JWT, say): its starts still hold a chunk back
    and the whole of it is still redacted across chunks."""
    token = "eyJ" + "ab5e" * 300
    redactor = Redactor([token])
    stream: ChunkStream[int] = ChunkStream(redactor)
    assert stream.passes(pydantic_core.to_json(chunk("a reply")).decode())
    for start in (token[:3], token[:100], token[:-1]):
        assert not stream.passes(pydantic_core.to_json(chunk(f"then {start}")).decode())
    assert not stream.passes(pydantic_core.to_json(chunk(f"{token[:700]} more")).decode())
    out = stream.push(0, chunk(f"key {token[:500]}")) + stream.push(1, chunk(token[500:]))
    text = "".join(data["choices"][0]["delta"]["content"] for _, data in out + stream.flush())
    assert text == "key [REDACTED:api_key]"
