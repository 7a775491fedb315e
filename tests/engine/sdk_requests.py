"""Request bodies checked against the anthropic and openai SDKs' own request types: the
TypedDicts their clients take (`MessageCreateParams`, `ResponseCreateParams`), each
content block or input item against the type its `type` names, keys and values alike."""

from __future__ import annotations

import typing
from functools import cache
from typing import Any

import pydantic
from anthropic.types import ContentBlockParam
from anthropic.types import message_create_params as anthropic_params
from anthropic.types.message_param import MessageParam
from openai.types.responses import (
    EasyInputMessageParam,
    ResponseInputItemParam,
    ResponseOutputMessageParam,
)
from openai.types.responses import response_create_params as responses_params


def _check(value: Any, typed: Any) -> None:
    """`value` is a `typed` TypedDict: its required keys, no others, each value valid."""
    assert isinstance(value, dict), value
    keys = set(value)
    missing = typed.__required_keys__ - keys
    unknown = keys - set(typed.__annotations__)
    assert not missing and not unknown, f"{typed.__name__}: missing {missing}, unknown {unknown}"
    pydantic.TypeAdapter(typed).validate_python(value)


@cache
def _by_type(union: Any) -> dict[str, Any]:
    """The TypedDicts of `union` by the value of their `type` key."""
    found: dict[str, Any] = {}
    for member in typing.get_args(union):
        hint = typing.get_type_hints(member).get("type")
        while typing.get_origin(hint) in (typing.Required, typing.NotRequired):
            hint = typing.get_args(hint)[0]
        for literal in typing.get_args(hint):
            found.setdefault(literal, member)
    return found


def _params(body: dict[str, Any], module: Any, name: str) -> Any:
    """The SDK's params type for a request that streams or not (`stream` is typed apart)."""
    return getattr(module, f"{name}{'Streaming' if body.get('stream') else 'NonStreaming'}")


def check_anthropic_request(body: dict[str, Any]) -> None:
    _check(body, _params(body, anthropic_params, "MessageCreateParams"))
    for message in body["messages"]:
        roles = {
            typing.get_args(typing.get_type_hints(typed)["role"])[0]: typed
            for typed in typing.get_args(MessageParam)
        }
        _check(message, roles[message["role"]])
        if isinstance(message["content"], list):
            for block in message["content"]:
                _check(block, _by_type(ContentBlockParam)[block["type"]])


def check_responses_request(body: dict[str, Any]) -> None:
    _check(body, _params(body, responses_params, "ResponseCreateParams"))
    for item in body["input"]:
        kind = item.get("type", "message")
        if kind == "message":  # an answer's message item has its id; a client's own has none
            _check(item, ResponseOutputMessageParam if "id" in item else EasyInputMessageParam)
        else:
            _check(item, _by_type(ResponseInputItemParam)[kind])
