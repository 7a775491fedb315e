"""`workbench check RULES.toml`: thresholds over the store, for CI and cron.

    [[rule]]
    name = "search fails"         # unique; what the report and the webhook call it
    metric = "failure_rate"       # failure_rate | p95_latency_ms | cost_per_run
                                  # | label_count | new_failures
    window = "1d"                 # runs started this long ago or since (s, m, h, d, w)
    task = "search"               # optional: runs whose task contains this (any case)
    model = "gpt-4o"              # optional: runs whose model contains this
    label = "wrong-tool"          # label_count: the label counted
    above = 0.2                   # crossed when the figure is greater (new_failures: 0)

A `new_failures` rule counts failure signatures (`workbench failures`) whose first run
started after the rule's last check (the first check: within its window); when each rule
was last checked is kept in `<home>/check-state.json`. The figures come from SQL in the
store (`traces.store.checks`, `TraceStore.failure_groups`).
"""

from __future__ import annotations

import json
import re
import time
import tomllib
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from traces.store import RunQuery
from traces.store.checks import METRICS, metric_value
from traces.user_files import read_text

if TYPE_CHECKING:
    from traces.redact import Redactor
    from traces.store import TraceStore

NEW_FAILURES = "new_failures"
METRIC_NAMES = (*METRICS, NEW_FAILURES)
STATE_FILE = "check-state.json"
_KEYS = {"name", "metric", "window", "task", "model", "label", "above"}
_WINDOW = re.compile(r"^(\d+(?:\.\d+)?)\s*(s|m|h|d|w)$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


class RulesError(Exception):
    """A rules file that cannot be used; one line naming the file and the rule."""


@dataclass(frozen=True)
class Rule:
    name: str
    metric: str
    window: timedelta
    above: float
    task: str | None = None
    model: str | None = None
    label: str | None = None


@dataclass(frozen=True)
class Finding:
    rule: Rule
    value: float | None  # None: nothing to measure in the window
    counted: int  # runs (label_count: notes) the figure is over
    crossed: bool
    detail: list[str] = field(default_factory=list)  # new_failures: the new signatures

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule.name,
            "metric": self.rule.metric,
            "value": self.value,
            "above": self.rule.above,
            "counted": self.counted,
            "crossed": self.crossed,
            "window_s": self.rule.window.total_seconds(),
            **{k: v for k in ("task", "model", "label") if (v := getattr(self.rule, k))},
            **({"new": self.detail} if self.rule.metric == NEW_FAILURES else {}),
        }


def load_rules(path: Path) -> list[Rule]:
    try:
        data = tomllib.loads(read_text(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise RulesError(f"cannot read rules {path}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise RulesError(f"{path}: not valid TOML: {exc}") from None
    raw = data.get("rule")
    if set(data) - {"rule"} or not isinstance(raw, list) or not raw:
        raise RulesError(f"{path}: give one or more [[rule]] tables (and nothing else)")
    rules: list[Rule] = []
    for index, table in enumerate(raw, start=1):
        name = table.get("name") if isinstance(table, dict) else None
        where = f"{path} rule {name!r}" if isinstance(name, str) else f"{path} rule #{index}"
        rule = _rule(table, where)
        if any(r.name == rule.name for r in rules):
            raise RulesError(f"{where}: the name is used twice; names must be unique")
        rules.append(rule)
    return rules


def _rule(table: Any, where: str) -> Rule:
    if not isinstance(table, dict):
        raise RulesError(f"{where}: must be a table")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        allowed = ", ".join(sorted(_KEYS))
        raise RulesError(f"{where}: unknown key {unknown[0]!r}; allowed: {allowed}")
    name = table.get("name")
    if not isinstance(name, str) or not name.strip():
        raise RulesError(f"{where}: needs a name")
    metric = table.get("metric")
    if metric not in METRIC_NAMES:
        raise RulesError(f"{where}: metric must be one of {', '.join(METRIC_NAMES)}")
    window = _window(table.get("window", "1d"), where)
    above = table.get("above", 0 if metric == NEW_FAILURES else None)
    if isinstance(above, bool) or not isinstance(above, int | float):
        raise RulesError(f"{where}: needs above = NUMBER (the threshold)")
    texts = {key: table.get(key) for key in ("task", "model", "label")}
    for key, value in texts.items():
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise RulesError(f"{where}: {key} must be a non-empty string")
    if metric == "label_count" and texts["label"] is None:
        raise RulesError(f"{where}: a label_count rule needs label = NAME")
    return Rule(name.strip(), str(metric), window, float(above), **texts)


def _window(value: Any, where: str) -> timedelta:
    found = _WINDOW.match(value.strip().lower()) if isinstance(value, str) else None
    if found is None:
        raise RulesError(f"{where}: window must be an age such as 90m, 6h, 1d or 2w")
    return timedelta(seconds=float(found[1]) * _SECONDS[found[2]])


def evaluate(
    store: TraceStore,
    rules: list[Rule],
    home: Path,
    prices: dict[str, tuple[float, float]],
    now: datetime | None = None,
    *,
    remember: bool = True,
) -> list[Finding]:
    """Each rule's figure and whether it crossed its threshold; remembers when each
    `new_failures` rule was checked (`<home>/check-state.json`) unless `remember` is off
    (a look that writes nothing: the next check still counts from the last one)."""
    now = now or datetime.now(UTC)
    state_path = home / STATE_FILE
    try:
        state: dict[str, str] = json.loads(state_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        state = {}
    findings: list[Finding] = []
    for rule in rules:
        since = now - rule.window
        if rule.metric == NEW_FAILURES:
            last = state.get(rule.name)
            after = datetime.fromisoformat(last) if last else since
            query = RunQuery(
                samples=False,
                since=since if last is None else None,
                text=rule.task,
                model=rule.model,
            )
            groups = store.failure_groups(query, examples=1, limit=10_000).groups
            new = [
                f"{g.signature} {g.status}: {g.step}" + (f" {g.tool}" if g.tool else "")
                for g in groups
                if g.first_seen is not None and g.first_seen > after
            ]
            crossed = len(new) > rule.above
            findings.append(Finding(rule, float(len(new)), len(groups), crossed, new))
            state[rule.name] = now.isoformat()
            continue
        value, counted = metric_value(
            store,
            rule.metric,
            since,
            task=rule.task,
            model=rule.model,
            label=rule.label,
            prices=prices,
        )
        findings.append(Finding(rule, value, counted, value is not None and value > rule.above))
    if remember and any(rule.metric == NEW_FAILURES for rule in rules):
        state_path.write_text(json.dumps(state, indent=2) + "\n", encoding="utf-8")
    return findings


def summary(findings: list[Finding]) -> dict[str, Any]:
    """What `check --json` prints, the webhook receives and check_rules answers."""
    return {
        "crossed": sum(f.crossed for f in findings),
        "rules": len(findings),
        "findings": [f.to_json() for f in findings],
    }


def post_webhook(
    url: str,
    summary: dict[str, Any],
    redactor: Redactor,
    *,
    attempts: int = 3,
    backoff_s: float = 0.5,
    timeout_s: float = 5.0,
) -> str | None:
    """POST the summary (redacted) as JSON, retrying a failed attempt after `backoff_s`,
    doubled each time; None when delivered, else one line saying why not."""
    body = redactor.text(json.dumps(summary, ensure_ascii=False)).encode()
    request = urllib.request.Request(
        url, data=body, headers={"Content-Type": "application/json"}, method="POST"
    )
    why = ""
    for attempt in range(1, attempts + 1):
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as answer:
                if 200 <= answer.status < 300:
                    return None
                why = f"HTTP {answer.status}"
        except urllib.error.HTTPError as exc:
            why = f"HTTP {exc.code}"
            if exc.code < 500 and exc.code not in (408, 429):
                break  # the receiver refuses it: asking again would not change that
        except (urllib.error.URLError, OSError) as exc:
            why = str(getattr(exc, "reason", exc))
        if attempt < attempts:
            time.sleep(backoff_s * 2 ** (attempt - 1))
    return f"webhook {where_to(url)} not reached after {attempt} attempt(s): {why}"


def where_to(url: str) -> str:
    """A webhook's address without what may be secret (its path, query and user info)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or '?'}" + (f":{parts.port}" if parts.port else "")
