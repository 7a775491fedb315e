"""Toolsets for regression samples: offer the real schemas, run almost nothing.

A case checks what the model decides, so a sample must never change the world. The guard
answers a call from the recording when one matches, runs it when the tool is read-only
(`read_file` and the other built-in file tools), and otherwise refuses it with a short,
model-readable result naming the tool.
"""

from __future__ import annotations

from typing import Any

from agent_core.tools.base import CallKey, ToolResult, Toolset, ToolSpec, call_key

REFUSED = (
    "not executed: {name} may change things, and a regression sample runs only read-only "
    "tools and calls it has a recorded result for"
)


class GuardedToolset:
    def __init__(
        self,
        inner: Toolset,
        *,
        specs: list[ToolSpec] | None = None,
        recorded: dict[CallKey, ToolResult] | None = None,
    ) -> None:
        self.inner = inner
        # A suite lists its tools' specs once: building them (JSON Schema generation) costs
        # more than the rest of a sample's bookkeeping.
        self._spec_list = specs if specs is not None else inner.specs()
        self._specs = {spec.name: spec for spec in self._spec_list}
        self.recorded = recorded or {}

    def specs(self) -> list[ToolSpec]:
        return list(self._spec_list)

    async def call(self, name: str, arguments: dict[str, Any], call_id: str) -> ToolResult:
        recorded = self.recorded.get(call_key(name, arguments))
        if recorded is not None:
            return recorded
        spec = self._specs.get(name)
        if spec is not None and spec.read_only:
            return await self.inner.call(name, arguments, call_id)
        return ToolResult(ok=False, text=REFUSED.format(name=name), error="refused")
