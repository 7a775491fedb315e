"""Field-level comparison of a recorded event with its replayed counterpart.

Two runs of the same decisions never agree on wall-clock facts (timestamps, latencies,
durations) or on identity (run id), and a replayed tool result is flagged `replayed`; those
fields are left out. Everything else must be equal, down to each chunk's payload, except
that an assistant tool-call message without text may say so with a null, absent or empty
`content` (older recordings sent null; the loop now sends ""), and that a `model_request`'s
messages, tools and parameters are compared as the same request at the `exact` level
(`same_request`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from traces.events import EventBase, ModelRequest, ModelResponse
from traces.redact import REDACTION_MARK
from workbench.engine.recording.replay.same_request import one_text_form, request_view

# Event fields that legitimately differ between a recording and its replay. `seq` is left
# out because events are compared by position once transport-only events are set aside.
IGNORED_FIELDS: frozenset[str] = frozenset(
    {"run_id", "seq", "ts", "elapsed_ms", "latency_ms", "ttft_ms", "duration_ms", "replayed"}
)
# Events that only exist because a real transport ran (MCP frames, MCP-level errors);
# a replay serves MCP results from the recording without starting a server.
TRANSPORT_ONLY_TYPES: frozenset[str] = frozenset({"mcp_message"})


@dataclass(frozen=True)
class FieldDiff:
    """One differing field: a dotted path (list items as [i]) and both values."""

    path: str
    recorded: Any
    replayed: Any
    absent: Literal["recorded", "replayed"] | None = None  # which side lacks the field

    def to_json(self) -> dict[str, Any]:
        data = {"path": self.path, "recorded": self.recorded, "replayed": self.replayed}
        if self.absent:
            data["absent"] = self.absent
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FieldDiff:
        """The diff `to_json` wrote (its values as JSON has them)."""
        absent = data.get("absent")
        return cls(
            str(data["path"]),
            data.get("recorded"),
            data.get("replayed"),
            absent if absent in ("recorded", "replayed") else None,
        )

    def render(self, width: int = 160) -> str:
        left = "<absent>" if self.absent == "recorded" else describe(self.recorded, width)
        right = "<absent>" if self.absent == "replayed" else describe(self.replayed, width)
        return f"{self.path}: recorded {left} | replayed {right}"


_MISSING: Any = type("_Missing", (), {"__repr__": lambda self: "<absent>"})()


def is_transport_only(event: EventBase) -> bool:
    kind = getattr(event, "type", "")
    mcp_error = kind == "error" and getattr(event, "where", "") == "mcp"
    return kind in TRANSPORT_ONLY_TYPES or mcp_error


def comparable(event: EventBase) -> dict[str, Any]:
    """The event as plain JSON without the fields a replay may change."""
    data = event.model_dump(exclude=set(IGNORED_FIELDS))
    totals = data.get("totals")
    if isinstance(totals, dict):
        data["totals"] = {k: v for k, v in totals.items() if k != "duration_ms"}
    return data


def holds_redactions(events: Iterable[EventBase]) -> bool:
    """Whether a redaction placeholder stands for a secret in what the model was sent or
    what it answered: the token estimates of those texts were made on the secret."""
    for event in events:
        if isinstance(event, ModelRequest):
            text = json.dumps(event.messages)
        elif isinstance(event, ModelResponse):
            text = json.dumps(event.message)
        else:
            continue
        if REDACTION_MARK in text:
            return True
    return False


# Token estimates a recording made on text a placeholder now stands for.
_ESTIMATES = ("estimated_tokens",)
_ESTIMATED_TOTALS = ("input_tokens", "output_tokens", "total_tokens")


def diff_events(
    recorded: EventBase, replayed: EventBase, *, estimates: bool = True
) -> list[FieldDiff]:
    """Every field that differs, in document order; empty when the events match.

    Without `estimates`, token estimates are left out: a recording that holds redactions
    (see `holds_redactions`) estimated the secret, the replay can only estimate its
    placeholder; one written in an older schema version was estimated by an older
    workbench's estimator. An estimate is not a decision: what it decided (a history
    trimmed, a budget stopped) shows in the events themselves."""
    left, right = comparable(recorded), comparable(replayed)
    if not estimates:
        for side in (left, right):
            for key in _ESTIMATES:
                side.pop(key, None)
            if isinstance(side.get("totals"), dict):
                for key in _ESTIMATED_TOTALS:
                    side["totals"].pop(key, None)
    if isinstance(left.get("meta"), dict) and isinstance(right.get("meta"), dict):
        # run_start.meta: the loop adds bookkeeping keys an older recording may not have.
        right["meta"] = {k: v for k, v in right["meta"].items() if k in left["meta"]}
    # Plain equality first: it runs in C, and nearly every replayed event matches.
    if left == right:
        return []
    return diff_values(_as_compared(left), _as_compared(right))


def _as_compared(data: dict[str, Any]) -> dict[str, Any]:
    if data.get("type") == "model_request":
        parts = (data.get("messages") or [], data.get("tools") or [], data.get("params") or {})
        data = {**data, **request_view("exact", *parts)}
    compared: dict[str, Any] = _one_text_form(data)
    return compared


def _one_text_form(value: Any) -> Any:
    if isinstance(value, dict):
        return one_text_form({k: _one_text_form(v) for k, v in value.items()})
    if isinstance(value, list):
        return [_one_text_form(v) for v in value]
    return value


def diff_values(recorded: Any, replayed: Any, path: str = "", limit: int = 50) -> list[FieldDiff]:
    """Where two plain values differ, field by field, as they are: read both sides at one
    level of `same_request` first to compare them as requests."""
    found: list[FieldDiff] = []
    _walk(recorded, replayed, path, found, limit)
    return found


def _walk(a: Any, b: Any, path: str, out: list[FieldDiff], limit: int) -> None:
    if len(out) >= limit:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in list(a) + [k for k in b if k not in a]:
            sub = f"{path}.{key}" if path else str(key)
            _walk(a.get(key, _MISSING), b.get(key, _MISSING), sub, out, limit)
        return
    if isinstance(a, list) and isinstance(b, list):
        for i in range(max(len(a), len(b))):
            left = a[i] if i < len(a) else _MISSING
            right = b[i] if i < len(b) else _MISSING
            _walk(left, right, f"{path}[{i}]", out, limit)
        return
    # JSON equality, except that true is not 1.
    if a != b or isinstance(a, bool) != isinstance(b, bool):
        absent: Literal["recorded", "replayed"] | None = None
        if a is _MISSING:
            absent = "recorded"
        elif b is _MISSING:
            absent = "replayed"
        out.append(FieldDiff(path or "(value)", _plain(a), _plain(b), absent))


def _plain(value: Any) -> Any:
    return None if value is _MISSING else value


def describe(value: Any, width: int = 160) -> str:
    """A one-line rendering of a value for the text report."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= width else text[: width - 1] + "…"
