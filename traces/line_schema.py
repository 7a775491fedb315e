"""The event models' validation schema as plain data, for `traces.line_check`.

`traces.line_check` checks trace lines without importing pydantic or the event models: it
loads `line_schema.json`, which this module derives from `EVENT_ADAPTER.core_schema`. The
models stay the definition; the file is a copy of their validation schema kept as data:

- each model's class becomes its name (the check makes a plain class of that name, so an
  error still reads "… or instance of Limits");
- what only serializing or JSON Schema use (`serialization`, `metadata`) is dropped;
- a `default_factory` becomes the plain default it makes (defaults are never validated);
- a validator known to normalize a value without ever refusing one (`EventBase._ts_utc`)
  is replaced by the schema it wraps; any other Python validator cannot be kept as data,
  so deriving refuses it.

The file names the `pydantic_core` version it was derived under; under any other (another
pydantic, which may derive another schema from the same models) the check uses the models
themselves: correct, but the pick-up loads them again. After changing the models or
upgrading pydantic, regenerate the file (a test fails until then):

    .venv/bin/python -m traces.line_schema
"""

from __future__ import annotations

import json
from typing import Any

import pydantic_core
from pydantic import TypeAdapter
from pydantic_core import to_jsonable_python

from traces.events import EVENT_ADAPTER
from traces.line_check import SCHEMA_FILE

# Validators that change a value but never refuse one: the check keeps only what they wrap.
NEVER_REFUSE = frozenset({"EventBase._ts_utc"})
_FUNCTION_SCHEMAS = frozenset(
    {"function-after", "function-before", "function-wrap", "function-plain"}
)
_DROPPED = frozenset({"serialization", "metadata"})


def derive(adapter: TypeAdapter[Any] = EVENT_ADAPTER) -> dict[str, Any]:
    """The validation schema of one trace line (of `adapter`'s type), as JSON-ready data;
    raises `ValueError` naming what cannot be kept as data."""
    schema: dict[str, Any] = _plain(adapter.core_schema, "")
    return schema


def render() -> str:
    """The text of `line_schema.json` for the current models: their schema, and the
    version of `pydantic_core` it was derived under."""
    stored = {"pydantic_core": pydantic_core.__version__, "schema": derive()}
    return json.dumps(stored, indent=1) + "\n"


def _plain(node: Any, where: str) -> Any:
    if isinstance(node, dict):
        if isinstance(node.get("type"), str):  # a schema (not a map of fields or choices)
            return _plain_schema(node, where)
        return {key: _plain(value, _at(where, key)) for key, value in node.items()}
    if isinstance(node, list | tuple):
        return [_plain(item, f"{where}[{index}]") for index, item in enumerate(node)]
    if node is None or isinstance(node, str | int | float | bool):
        return node
    raise ValueError(f"{where or 'schema'}: {node!r} cannot be kept as data")


def _at(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _plain_schema(node: dict[str, Any], where: str) -> Any:
    if node["type"] in _FUNCTION_SCHEMAS:
        function = node["function"]["function"]
        name = getattr(function, "__qualname__", repr(function))
        if node["type"] != "function-after" or name not in NEVER_REFUSE:
            raise ValueError(
                f"{where}: validator {name} cannot be kept as data; if it never refuses a "
                "value, add it to traces.line_schema.NEVER_REFUSE"
            )
        return _plain(node["schema"], where)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROPPED or key == "default_factory_takes_data":
            continue
        if key == "cls" and node["type"] == "model":
            out[key] = value.__name__
        elif key in ("ref", "schema_ref"):
            out[key] = value.split(":")[0]  # `module.Class:<id>`: the id changes every run
        elif key == "default_factory":
            if node.get("default_factory_takes_data"):
                raise ValueError(f"{where}: a default_factory that takes data is not data")
            out["default"] = to_jsonable_python(value())
        else:
            out[key] = _plain(value, _at(where, key))
    return out


def main() -> None:
    SCHEMA_FILE.write_text(render(), encoding="utf-8")
    print(f"wrote {SCHEMA_FILE}")


if __name__ == "__main__":
    main()
