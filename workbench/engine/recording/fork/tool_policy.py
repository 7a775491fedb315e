"""What a re-run (a fork, a regression sample) does with each tool call: the side-effect
policy, one per tool.

    policy = ToolPolicy.layered(cli=[parse_rule("write_*=deny")], home=load_home_rules(home))
    decision = policy.decide("write_file", read_only=False)   # deny, from --tool-policy

Four policies:
- `recorded`: the parent's result for the same call (same name and arguments); a call the
  recording has no result for is refused.
- `mock`: a given result, nothing runs.
- `live`: runs for real; a call the parent already made with the same arguments still gets
  its recorded result, so nothing fires twice.
- `deny`: refused; the model reads that it was, and the trace records it.

Defaults follow what each tool declares: a read-only tool (the built-ins, a user tool
registered `read_only=True`, an MCP tool with `readOnlyHint: true` and no
`destructiveHint: true`) is `live`; any other is `recorded`, so a write the recording has no
result for is refused. Rules come, first match winning, from `--tool-policy` (exact names
before globs), `--allow-side-effects` (`*=live`), a suite's `[tool_policy]`, then
`<home>/tool-policy.toml`. A fork records each tool's decision in its run_start
(`meta.tool_policy`); each call's outcome is in its tool_end (`replayed`, `mocked`, or the
error `denied` / `side_effects_refused`), which `call_outcome` reads back.
"""

from __future__ import annotations

import fnmatch
import tomllib
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from agent_core.tools.base import ToolResult

if TYPE_CHECKING:
    from traces.events import ToolEnd

Policy = Literal["recorded", "mock", "live", "deny"]
POLICIES: tuple[str, ...] = get_args(Policy)
# What became of one call under its policy.
Outcome = Literal["recorded", "mocked", "live", "denied", "refused", "failed"]

HOME_FILE = "tool-policy.toml"
DENIED = "denied"
REFUSED = "side_effects_refused"
MOCK_TEXT = "mocked: {name} was not run (tool policy mock)"
META_KEY = "tool_policy"


class PolicyError(ValueError):
    """A policy rule that cannot be read; one line saying what to write instead."""


@dataclass(frozen=True)
class PolicyRule:
    pattern: str  # a tool name or a glob (`write_*`, `mcp_fs__*`)
    policy: Policy
    origin: str  # where it was set: --tool-policy, --allow-side-effects, a file
    mock: str | None = None  # the result of a `mock` policy

    @property
    def is_glob(self) -> bool:
        return any(ch in self.pattern for ch in "*?[")

    def matches(self, name: str) -> bool:
        return fnmatch.fnmatchcase(name, self.pattern) if self.is_glob else name == self.pattern

    @property
    def shown(self) -> str:
        mock = f":{self.mock}" if self.mock is not None else ""
        return f"{self.origin} {self.pattern}={self.policy}{mock}"


@dataclass(frozen=True)
class Decision:
    """The policy one tool gets, and why."""

    tool: str
    policy: Policy
    why: str
    mock: str | None = None

    @property
    def fires_live(self) -> bool:
        """Whether a call the recording has no result for runs for real."""
        return self.policy == "live"

    def to_json(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"policy": self.policy, "why": self.why}
        if self.mock is not None:
            shown["mock"] = self.mock
        return shown


def _policy(value: str, where: str) -> Policy:
    if value not in POLICIES:
        raise PolicyError(f"{where}: unknown policy {value!r}; use one of {', '.join(POLICIES)}")
    return value  # type: ignore[return-value]


def parse_rule(text: str, origin: str = "--tool-policy") -> PolicyRule:
    """`NAME=POLICY`, or `NAME=mock:TEXT` for a mock with its result; NAME may be a glob."""
    name, sep, value = text.partition("=")
    name, value = name.strip(), value.strip()
    if not sep or not name or not value:
        raise PolicyError(
            f"{origin} takes NAME=recorded|mock|live|deny (NAME may be a glob), got {text!r}"
        )
    policy_text, colon, mock = value.partition(":")
    policy = _policy(policy_text, f"{origin} {name}")
    if colon and policy != "mock":
        raise PolicyError(f"{origin} {name}: only mock takes a result (mock:TEXT)")
    return PolicyRule(name, policy, origin, mock if colon else None)


def rules_from_table(table: Mapping[str, Any], origin: str) -> list[PolicyRule]:
    """`name = "policy"` (or `"mock:TEXT"`, or `{ policy = "mock", result = "…" }`) pairs."""
    rules = []
    for name, value in table.items():
        if isinstance(value, Mapping):
            unknown = sorted(set(value) - {"policy", "result"})
            if unknown:
                raise PolicyError(
                    f"{origin} {name}: unknown key {unknown[0]!r}; allowed: policy, result"
                )
            policy = _policy(str(value.get("policy", "")), f"{origin} {name}")
            result = value.get("result")
            if result is not None and (policy != "mock" or not isinstance(result, str)):
                raise PolicyError(f"{origin} {name}: result is the text of a mock policy")
            rules.append(PolicyRule(str(name), policy, origin, result))
        elif isinstance(value, str):
            rules.append(parse_rule(f"{name}={value}", origin))
        else:
            raise PolicyError(f'{origin} {name}: expected a policy, e.g. {name} = "deny"')
    return rules


def load_home_rules(home: Path) -> list[PolicyRule]:
    """The rules of `<home>/tool-policy.toml` (none when it does not exist): `name = policy`
    pairs at the top level or in a `[tool_policy]` table."""
    path = home / HOME_FILE
    if not path.is_file():
        return []
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise PolicyError(f"{path}: {exc}") from None
    table = data.get("tool_policy", data)
    if not isinstance(table, dict):
        raise PolicyError(f"{path}: [tool_policy] must be a table of name = policy")
    return rules_from_table(table, str(path))


@dataclass(frozen=True)
class ToolPolicy:
    """Rules in the order they apply: the first that matches a tool decides."""

    rules: tuple[PolicyRule, ...] = ()

    @classmethod
    def layered(
        cls,
        *,
        cli: Iterable[PolicyRule] = (),
        allow_side_effects: bool = False,
        suite: Iterable[PolicyRule] = (),
        home: Iterable[PolicyRule] = (),
    ) -> ToolPolicy:
        cli = list(cli)
        ordered = [r for r in cli if not r.is_glob] + [r for r in reversed(cli) if r.is_glob]
        if allow_side_effects:
            ordered.append(PolicyRule("*", "live", "--allow-side-effects"))
        for layer in (list(suite), list(home)):
            ordered += [r for r in layer if not r.is_glob] + [r for r in layer if r.is_glob]
        return cls(tuple(ordered))

    def with_rules(self, rules: Iterable[PolicyRule]) -> ToolPolicy:
        """These rules first (a caller's own), then the ones already here."""
        return ToolPolicy((*ToolPolicy.layered(cli=rules).rules, *self.rules))

    def decide(self, name: str, *, read_only: bool, client: bool = False) -> Decision:
        for rule in self.rules:
            if rule.matches(name):
                policy = rule.policy
                if client and policy == "live":  # the recorded client ran it: nothing here can
                    return Decision(name, "recorded", f"{rule.shown}, but the client ran it")
                mock = (rule.mock or MOCK_TEXT.format(name=name)) if policy == "mock" else None
                return Decision(name, policy, rule.shown, mock)
        if client:
            return Decision(name, "recorded", "the recorded client ran it (default)")
        if read_only:
            return Decision(name, "live", "read-only (default)")
        return Decision(name, "recorded", "may change things (default)")


def decide_all(
    policy: ToolPolicy, read_only: Mapping[str, bool], client: Iterable[str] = ()
) -> dict[str, Decision]:
    clients = set(client)
    return {
        name: policy.decide(name, read_only=flag, client=name in clients)
        for name, flag in read_only.items()
    }


def record(decisions: Mapping[str, Decision]) -> dict[str, dict[str, Any]]:
    """What a re-run's run_start keeps of its decisions (`meta.tool_policy`)."""
    return {name: decision.to_json() for name, decision in decisions.items()}


def refusal(decision: Decision, what: str) -> ToolResult:
    """The result the model reads for a call its policy does not let run."""
    name = decision.tool
    if decision.policy == "deny":
        text = f"refused: the tool policy denies {name} in the {what} ({decision.why})"
        return ToolResult(ok=False, text=text, error=DENIED)
    text = (
        f"refused: {name} may change things and the recording has no result for this call "
        f"(tool policy {decision.policy}: {decision.why}), so the {what} does not run it "
        "unless side effects are allowed"
    )
    return ToolResult(ok=False, text=text, error=REFUSED)


async def apply(
    decision: Decision,
    recorded: ToolResult | None,
    run_live: Callable[[], Awaitable[ToolResult]],
    what: str,
) -> ToolResult:
    """One call under its policy: `recorded` is the parent's result for the same call (or a
    mock edit of it), `run_live` runs it for real."""
    if decision.policy == "deny":
        return refusal(decision, what)
    if decision.policy == "mock":
        return ToolResult(ok=True, text=decision.mock or "", mocked=True)
    if recorded is not None:
        return recorded
    if decision.policy == "live":
        return await run_live()
    return refusal(decision, what)


def call_outcome(end: ToolEnd | None) -> Outcome | None:
    """What became of a recorded call, read back from its tool_end."""
    if end is None:
        return None
    if end.error == DENIED:
        return "denied"
    if end.error in (REFUSED, "refused", "not_recorded"):
        return "refused"
    if end.mocked:
        return "mocked"
    if end.replayed:
        return "recorded"
    return "live" if end.ok else "failed"


def recorded_decisions(meta: Mapping[str, Any]) -> dict[str, str]:
    """Tool name -> the policy a re-run's run_start recorded for it (none before policies)."""
    table = meta.get(META_KEY)
    if not isinstance(table, Mapping):
        return {}
    return {
        str(name): str(value.get("policy"))
        for name, value in table.items()
        if isinstance(value, Mapping) and value.get("policy") in POLICIES
    }


def call_label(policy: str | None, end: ToolEnd | None) -> str | None:
    """`policy live → live`, for show, the tree and the comparison; None outside re-runs."""
    if policy is None:
        return None
    outcome = call_outcome(end)
    return f"policy {policy} → {outcome}" if outcome else f"policy {policy}"
