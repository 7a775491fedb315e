"""Toolsets for regression samples: offer the real schemas, run almost nothing.

A case checks what the model decides, so a sample must never change the world. Each tool's
side-effect policy (`recording.fork.tool_policy`: the suite's `[tool_policy]`, `--tool-policy`,
`<home>/tool-policy.toml`, else what the tool declares) decides its calls: by default a call
is answered from the recording when one matches, runs when the tool is read-only (`read_file`
and the other built-in file tools), and is otherwise refused with a short, model-readable
result naming the tool.
"""

from __future__ import annotations

from typing import Any

from agent_core.tools.base import CallKey, ToolResult, Toolset, ToolSpec, call_key
from workbench.engine.recording.fork.tool_policy import ToolPolicy, apply, decide_all, record


class GuardedToolset:
    def __init__(
        self,
        inner: Toolset,
        *,
        specs: list[ToolSpec] | None = None,
        recorded: dict[CallKey, ToolResult] | None = None,
        policy: ToolPolicy | None = None,
    ) -> None:
        self.inner = inner
        # A suite lists its tools' specs once: building them (JSON Schema generation) costs
        # more than the rest of a sample's bookkeeping.
        self._spec_list = specs if specs is not None else inner.specs()
        self._specs = {spec.name: spec for spec in self._spec_list}
        self.recorded = recorded or {}
        self._policy = policy or ToolPolicy()
        self.decisions = decide_all(
            self._policy, {spec.name: spec.read_only for spec in self._spec_list}
        )
        self.policy_record = record(self.decisions)  # kept in the sample's run_start

    def specs(self) -> list[ToolSpec]:
        return list(self._spec_list)

    async def call(self, name: str, arguments: dict[str, Any], call_id: str) -> ToolResult:
        decision = self.decisions.get(name) or self._policy.decide(name, read_only=False)

        async def run_live() -> ToolResult:
            return await self.inner.call(name, arguments, call_id)

        recorded = self.recorded.get(call_key(name, arguments))
        return await apply(decision, recorded, run_live, "regression sample")
