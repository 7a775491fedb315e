"""Read-only JSON values: what a run's history is made of once a message is in it.

Every request event carries the run's whole history, and the JSONL writer keeps each
message's serialized text from one request to the next. A message that can be edited in
place has to be compared with a copy of itself at every request before its text is reused
(for a long run, most of what writing its requests costs); a frozen one cannot change, so
its text always holds. The agent loop freezes each message as it enters the history, and
the tool schemas it offers.

`FrozenDict` and `FrozenList` are a dict and a list for everything that reads them
(equality, iteration, `isinstance`, JSON, pydantic) and refuse every change in place; a
copy (`dict(message)`, `copy.copy`, `copy.deepcopy`) is an ordinary, editable value. Build
them with `freeze`, which freezes all the way down.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NoReturn, SupportsIndex

_REFUSAL = (
    "a message in a run's history is read-only: change a copy instead "
    "(dict(message), or copy.deepcopy(message) for a nested one)"
)


def _refuse(*_: Any, **__: Any) -> NoReturn:
    raise TypeError(_REFUSAL)


class FrozenDict(dict[str, Any]):
    """A dict that refuses changes; made by `freeze`."""

    __slots__ = ()

    def __setitem__(self, key: str, value: Any) -> None:
        _refuse()

    def __delitem__(self, key: str) -> None:
        _refuse()

    def __ior__(self, other: Any) -> FrozenDict:  # type: ignore[misc,override]
        _refuse()

    def clear(self) -> None:
        _refuse()

    def pop(self, *args: Any) -> Any:
        _refuse()

    def popitem(self) -> tuple[str, Any]:
        _refuse()

    def setdefault(self, *args: Any) -> Any:
        _refuse()

    def update(self, *args: Any, **kwargs: Any) -> None:
        _refuse()

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return {key: thaw(item) for key, item in self.items()}

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (thaw(self),))


class FrozenList(list[Any]):
    """A list that refuses changes; made by `freeze`."""

    __slots__ = ()

    def __setitem__(self, index: Any, value: Any) -> None:
        _refuse()

    def __delitem__(self, index: Any) -> None:
        _refuse()

    def __iadd__(self, other: Iterable[Any]) -> FrozenList:  # type: ignore[misc,override]
        _refuse()

    def __imul__(self, count: SupportsIndex) -> FrozenList:
        _refuse()

    def append(self, value: Any) -> None:
        _refuse()

    def extend(self, values: Iterable[Any]) -> None:
        _refuse()

    def insert(self, index: SupportsIndex, value: Any) -> None:
        _refuse()

    def pop(self, index: SupportsIndex = -1) -> Any:
        _refuse()

    def remove(self, value: Any) -> None:
        _refuse()

    def clear(self) -> None:
        _refuse()

    def sort(self, *args: Any, **kwargs: Any) -> None:
        _refuse()

    def reverse(self) -> None:
        _refuse()

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return [thaw(item) for item in self]

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (thaw(self),))


def freeze(value: Any) -> Any:
    """`value` with every dict and list in it made read-only, and tuples and sets of them
    (a frozen value is returned as it is). Strings and numbers are immutable already;
    anything else a JSON value does not hold is left as it is."""
    kind = type(value)
    if kind is FrozenDict or kind is FrozenList:
        return value
    if isinstance(value, dict):
        return FrozenDict({key: freeze(item) for key, item in value.items()})
    if isinstance(value, list):
        return FrozenList([freeze(item) for item in value])
    if isinstance(value, tuple):
        return tuple(freeze(item) for item in value)
    if isinstance(value, set):
        return frozenset(freeze(item) for item in value)
    return value


def frozen(value: Any) -> bool:
    """Whether `value` is one `freeze` made (so neither it nor anything in it can change)."""
    kind = type(value)
    return kind is FrozenDict or kind is FrozenList


def thaw(value: Any) -> Any:
    """An editable deep copy of a JSON-like value (frozen or not)."""
    if isinstance(value, dict):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, list):
        return [thaw(item) for item in value]
    if isinstance(value, tuple):
        return tuple(thaw(item) for item in value)
    return value
