"""Loading a user's toolset from `package.module:attribute`.

The attribute may be a `Toolset` (for example a `ToolRegistry`) or a function with no
arguments that returns one.
"""

from __future__ import annotations

import importlib
from typing import Any

from agent_core.tools.base import Toolset


class ToolLoadError(ValueError):
    pass


def load_toolset(reference: str) -> Toolset:
    module_name, _, attribute = reference.partition(":")
    if not module_name or not attribute:
        raise ToolLoadError(f"--tools {reference!r}: expected package.module:attribute")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ToolLoadError(f"--tools {reference!r}: cannot import {module_name}: {exc}") from None
    except Exception as exc:
        raise ToolLoadError(
            f"--tools {reference!r}: importing {module_name} failed: {type(exc).__name__}: {exc}"
        ) from None
    value: Any = getattr(module, attribute, None)
    if value is None:
        raise ToolLoadError(f"--tools {reference!r}: {module_name} has no attribute {attribute}")
    if not isinstance(value, Toolset) and callable(value):
        value = value()
    if not isinstance(value, Toolset):
        raise ToolLoadError(
            f"--tools {reference!r}: {attribute} is not a toolset (needs specs() and call())"
        )
    return value
