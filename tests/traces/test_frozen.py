"""Read-only history values: they read as the dicts and lists they were made from, refuse
every change in place, and their copies are ordinary editable values."""

from __future__ import annotations

import copy
import json
import pickle
from collections.abc import Callable
from typing import Any

import pydantic_core
import pytest

from traces.frozen import FrozenDict, FrozenList, freeze, frozen, thaw

MESSAGE: dict[str, Any] = {
    "role": "assistant",
    "content": "",
    "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
    ],
    "n": [1, 2.5, None, True, [[]]],
}

DICT_CHANGES: list[Callable[[Any], Any]] = [
    lambda d: d.__setitem__("role", "user"),
    lambda d: d.__delitem__("role"),
    lambda d: d.__ior__({"x": 1}),
    lambda d: d.clear(),
    lambda d: d.pop("role"),
    lambda d: d.popitem(),
    lambda d: d.setdefault("x", 1),
    lambda d: d.update(x=1),
]
LIST_CHANGES: list[Callable[[Any], Any]] = [
    lambda items: items.__setitem__(0, 1),
    lambda items: items.__delitem__(0),
    lambda items: items.__iadd__([1]),
    lambda items: items.__imul__(2),
    lambda items: items.append(1),
    lambda items: items.extend([1]),
    lambda items: items.insert(0, 1),
    lambda items: items.pop(),
    lambda items: items.remove(1),
    lambda items: items.clear(),
    lambda items: items.sort(),
    lambda items: items.reverse(),
]


def test_a_frozen_value_reads_as_the_plain_one() -> None:
    value = freeze(MESSAGE)
    assert frozen(value) and frozen(value["tool_calls"]) and frozen(value["n"][4][0])
    assert value == MESSAGE and isinstance(value, dict) and isinstance(value["n"], list)
    assert json.dumps(value) == json.dumps(MESSAGE)
    assert pydantic_core.to_json(value) == pydantic_core.to_json(MESSAGE)
    assert freeze(value) is value
    assert not frozen(MESSAGE) and not frozen("text")


@pytest.mark.parametrize("change", DICT_CHANGES)
def test_every_change_to_a_frozen_dict_is_refused_in_one_line(
    change: Callable[[Any], Any],
) -> None:
    value = freeze(MESSAGE)
    with pytest.raises(TypeError) as refused:
        change(value)
    assert "read-only" in str(refused.value) and "\n" not in str(refused.value)
    assert value == MESSAGE


@pytest.mark.parametrize("change", LIST_CHANGES)
def test_every_change_to_a_frozen_list_is_refused(change: Callable[[Any], Any]) -> None:
    value = freeze(MESSAGE)
    with pytest.raises(TypeError, match="read-only"):
        change(value["n"])
    assert value == MESSAGE


def test_copies_are_plain_and_editable() -> None:
    value = freeze(MESSAGE)
    for made in (thaw(value), copy.deepcopy(value), pickle.loads(pickle.dumps(value))):
        assert made == MESSAGE and not frozen(made) and not frozen(made["tool_calls"][0])
        made["tool_calls"][0]["function"]["name"] = "g"
        made["n"].append(3)
    shallow = copy.copy(value)
    assert type(shallow) is dict and shallow == MESSAGE
    shallow["role"] = "user"
    assert type(copy.copy(value["n"])) is list
    assert value == MESSAGE


def test_frozen_values_are_made_only_by_freeze() -> None:
    assert type(freeze({"a": [{}]})) is FrozenDict
    assert type(freeze([{"a": 1}])) is FrozenList
    inside = freeze(({"a": 1}, {frozenset({"b"})}))
    assert inside == ({"a": 1}, {frozenset({"b"})}) and frozen(inside[0])
    assert type(inside[1]) is frozenset
    assert type(thaw(inside)[0]) is dict
