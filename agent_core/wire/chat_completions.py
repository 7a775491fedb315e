"""Chat completions (`POST /v1/chat/completions`), read and written: the request body, the
one assembler that turns its chunks into an `AssembledResponse`, and a whole completion or
its stream written for servers that answer in this format.

Streaming and non-streaming answers both go through it: a non-streamed completion is first
turned into a single chunk-like dict by `chunk_from_completion`. It works on the raw JSON
dicts as received, so provider quirks are handled here once:

- tool-call fragments are keyed by `index`; without an index by `id`; with neither they
  continue the last call (or start the only one);
- `id: ""` and `name: ""` on continuation deltas are ignored, never overwrite a real value;
- two entries for the same index in one delta are merged, not appended;
- `arguments: null` counts as empty;
- empty `choices`, usage on its own chunk or only under `x_groq`, `reasoning` or
  `reasoning_content`, a `finish_reason` sent twice (the last one wins) or never.

Ids the provider supplies pass through untouched. Only when a call arrives with no id at all
is one generated (`call_<position>`, independent of the turn so replays match), and every
generated id is listed in `AssembledResponse.extra["generated_ids"]`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent_core.wire.answer import (
    AssembledResponse,
    EmptyAnswer,
    ProviderCall,
    ToolCallPart,
    WireAnswer,
    WireError,
)
from agent_core.wire.spans import WireSpan

# Keys of a tool-call delta entry that the assembler interprets itself; anything else the
# provider put on the entry (e.g. Gemini's `extra_content`) is kept and echoed back.
_CALL_KEYS = frozenset({"index", "id", "type", "function"})


class _CallBuilder:
    __slots__ = ("arguments", "extra", "id", "name")

    def __init__(self, call_id: str | None) -> None:
        self.id = call_id
        self.name = ""
        self.arguments: list[str] = []
        self.extra: dict[str, Any] = {}


class MalformedChunk(ValueError):
    """A chunk that is JSON but not shaped like a chat-completion chunk."""


class StreamAssembler:
    """Feed it every chunk dict in arrival order with `add`, then call `result`."""

    def __init__(self) -> None:
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._calls: list[_CallBuilder] = []
        self._by_index: dict[Any, _CallBuilder] = {}
        self._by_id: dict[str, _CallBuilder] = {}
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] | None = None
        self.chunks = 0
        self.saw_output = False  # any text, reasoning or tool-call data yet (for TTFT)
        self.saw_choice = False  # any chunk with a choice at all: else it was no answer

    def add(self, chunk: dict[str, Any]) -> str:
        """Fold one chunk in; return the visible text it added ("" when none).

        Raises `MalformedChunk` for JSON that is not shaped like a chunk (a string where an
        object belongs, say), so garbage from a server is a clear model error."""
        try:
            return self._add(chunk)
        except (AttributeError, TypeError) as exc:
            raise MalformedChunk(
                f"chunk {self.chunks} is not a chat-completion chunk: {exc}"
            ) from None

    def _add(self, chunk: dict[str, Any]) -> str:
        self.chunks += 1
        usage = chunk.get("usage")
        if usage:
            self.usage = usage
        elif self.usage is None:
            x_groq = chunk.get("x_groq")
            if x_groq and x_groq.get("usage"):
                self.usage = x_groq["usage"]
        choices = chunk.get("choices")
        if not choices:
            return ""
        choice = choices[0]
        self.saw_choice = True
        # Only the first choice is assembled (the agent never asks for n > 1).
        if len(choices) > 1 or choice.get("index", 0) != 0:
            for candidate in choices:
                if candidate.get("index", 0) == 0:
                    choice = candidate
                    break
            else:
                return ""
        finish = choice.get("finish_reason")
        if finish:
            self.finish_reason = finish
        delta = choice.get("delta")
        if not delta:
            return ""
        text = delta.get("content")
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if reasoning:
            self._reasoning.append(reasoning)
            self.saw_output = True
        tool_calls = delta.get("tool_calls")
        if tool_calls:
            self.saw_output = True
            for entry in tool_calls:
                if entry:
                    self._add_call_fragment(entry)
        if text:
            if not isinstance(text, str):
                raise TypeError(f"content is {type(text).__name__}, not text")
            self._text.append(text)
            self.saw_output = True
            return text
        return ""

    def _add_call_fragment(self, entry: dict[str, Any]) -> None:
        index = entry.get("index")
        call_id = entry.get("id") or None
        function = entry.get("function") or {}
        call = self._find_call(index, call_id, bool(function.get("name")))
        if call is None:
            call = _CallBuilder(call_id)
            self._calls.append(call)
            if index is not None:
                self._by_index[index] = call
        if call_id and call.id is None:
            call.id = call_id
        if call.id is not None:
            self._by_id.setdefault(call.id, call)
        name = function.get("name")
        if name and not call.name:
            call.name = name
        arguments = function.get("arguments")
        if arguments:
            call.arguments.append(arguments)
        if not _CALL_KEYS.issuperset(entry):
            for key, value in entry.items():
                if key not in _CALL_KEYS:
                    call.extra[key] = value

    def _find_call(self, index: Any, call_id: str | None, has_name: bool) -> _CallBuilder | None:
        if index is not None:
            call = self._by_index.get(index)
            # A different id with a new name at a known index is a new call: some providers
            # reuse index 0 for every call. A fragment with the same or no id continues it.
            if (
                call is not None
                and call_id is not None
                and call.id is not None
                and call_id != call.id
                and has_name
            ):
                return None
            return call
        if call_id is not None:
            return self._by_id.get(call_id)
        return self._calls[-1] if self._calls else None

    def result(self) -> AssembledResponse:
        parts: list[ToolCallPart] = []
        generated: list[str] = []
        for position, call in enumerate(self._calls):
            call_id = call.id
            if call_id is None:
                call_id = f"call_{position}"
                generated.append(call_id)
            parts.append(ToolCallPart(call_id, call.name, "".join(call.arguments), call.extra))
        extra: dict[str, Any] = {"generated_ids": generated} if generated else {}
        text = "".join(self._text)
        return AssembledResponse(
            content=text or None,
            tool_calls=parts,
            finish_reason=self.finish_reason,
            usage=self.usage,
            reasoning="".join(self._reasoning) or None,
            extra=extra,
        )


def is_completion(data: dict[str, Any]) -> bool:
    """Whether a recorded chunk is the one completion body of a non-streamed answer."""
    choices = data.get("choices")
    return isinstance(choices, list) and any(
        isinstance(c, dict) and "message" in c for c in choices
    )


def chunk_from_completion(body: dict[str, Any]) -> dict[str, Any]:
    """Turn a non-streamed chat completion into one chunk-shaped dict for the assembler."""
    try:
        return _chunk_from_completion(body)
    except (AttributeError, TypeError) as exc:
        raise MalformedChunk(f"the response is not a chat completion: {exc}") from None


def _chunk_from_completion(body: dict[str, Any]) -> dict[str, Any]:
    chunk = {key: value for key, value in body.items() if key != "choices"}
    choices = []
    for choice in body.get("choices") or []:
        message = dict(choice.get("message") or {})
        calls = message.get("tool_calls")
        if calls:
            message["tool_calls"] = [
                {**call, "index": position} if call.get("index") is None else call
                for position, call in enumerate(calls)
                if call
            ]
        choices.append(
            {
                "index": choice.get("index", 0),
                "delta": message,
                "finish_reason": choice.get("finish_reason"),
            }
        )
    chunk["choices"] = choices
    return chunk


def assemble(chunks: list[dict[str, Any]]) -> AssembledResponse:
    assembler = StreamAssembler()
    for chunk in chunks:
        assembler.add(chunk)
    return assembler.result()


class ChatAssembler:
    """The chat-completion assembler behind the codecs' assembler interface (`WireAssembler`).
    A chat stream says it is over with `data: [DONE]`, which the SSE decoder sees, not here;
    a chunk with a finish reason says the answer is whole (`answered`), though the usage may
    follow. A chunk not shaped like one is remembered (`malformed`) and ends the answer."""

    def __init__(self) -> None:
        self._inner = StreamAssembler()
        self.done = False
        self.error: str | None = None  # chat streams carry no error event of their own
        self.malformed: str | None = None

    @property
    def saw_output(self) -> bool:
        return self._inner.saw_output

    @property
    def answered(self) -> bool:
        return self._inner.finish_reason is not None

    def add(self, event: dict[str, Any]) -> str:
        try:
            return self._inner.add(event)
        except MalformedChunk as exc:
            self.malformed = self.malformed or str(exc)
            return ""

    def response(self) -> AssembledResponse:
        if self.malformed is not None:
            raise WireError(self.malformed)
        if not self._inner.saw_choice:
            # Worth another try: a server that answered with no choice at all said nothing.
            raise EmptyAnswer("no chunk of the answer carried a choice: not a chat completion")
        return self._inner.result()

    def result(self) -> WireAnswer:
        response = self.response()
        return WireAnswer(response.to_message(), response.finish_reason, response.usage, {})


def whole_assembler(body: dict[str, Any]) -> ChatAssembler:
    """A whole (non-streamed) completion fed to the assembler as the one chunk it is."""
    chat = ChatAssembler()
    try:
        chat.add(chunk_from_completion(body))
    except MalformedChunk as exc:
        raise WireError(str(exc)) from None
    return chat


def answer_from_body(body: dict[str, Any]) -> WireAnswer:
    """A whole completion (what a non-streamed call returns)."""
    answer = whole_assembler(body).result()
    return WireAnswer(answer.message, answer.finish_reason, answer.usage, body)


# Request keys that carry the conversation or the transport; the rest are parameters.
CONVERSATION_KEYS = frozenset({"model", "messages", "tools", "stream", "stream_options"})


def request_parts(body: dict[str, Any]) -> tuple[list[Any], list[Any], dict[str, Any]]:
    """A request's messages, tools and the rest of its parameters."""
    params = {k: v for k, v in body.items() if k not in CONVERSATION_KEYS}
    return list(body.get("messages") or []), list(body.get("tools") or []), params


def request_body(
    model: str,
    messages: list[Any],
    tools: list[Any],
    params: dict[str, Any],
    *,
    stream: bool,
    known: Sequence[WireSpan] = (),
) -> dict[str, Any]:
    """The chat-completion request: the messages are the body (so no other form of them is
    `known`); a stream asks for its usage."""
    body: dict[str, Any] = {"model": model, "messages": messages}
    if tools:
        body["tools"] = tools
    body.update(params)
    body["stream"] = stream
    if stream and "stream_options" not in body:
        body["stream_options"] = {"include_usage": True}
    return body


def whole_body(
    message: dict[str, Any],
    finish_reason: str | None,
    counts: dict[str, Any] | None,
    *,
    model: str,
    response_id: str,
) -> dict[str, Any]:
    """A whole completion answering with a chat-shape assistant message."""
    body: dict[str, Any] = {
        "id": response_id,
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
    }
    if counts is not None:
        body["usage"] = counts
    return body


def spans(body: dict[str, Any]) -> list[WireSpan]:
    """None: a chat request's messages are its body."""
    return []


def provider_calls(body: dict[str, Any]) -> list[ProviderCall]:
    """None: chat completions run no tool of the provider's."""
    return []


def stream_events(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The stream of a whole completion: one chunk with all of it."""
    try:
        chunk = chunk_from_completion(body)
    except MalformedChunk as exc:
        raise WireError(str(exc)) from None
    chunk["object"] = "chat.completion.chunk"
    return [chunk]
