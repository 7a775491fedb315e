"""Tool schemas of two runs side by side, changes highlighted (layout of the engine's diff)."""

from __future__ import annotations

from typing import Any

from rich.console import RenderableType

from workbench.tui.render import pretty_json


def render_schema_diff(diff: Any) -> RenderableType:
    to_json = getattr(diff, "to_json", None)
    return pretty_json(to_json() if callable(to_json) else repr(diff))
