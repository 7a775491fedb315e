"""Commands load only what they use: building the parser (every `--help`) and listing runs
never import the TUI, the model SDK, MCP or the HTTP stack. Each check runs the real
`workbench` entry point in a fresh interpreter and looks at what it imported.

Speed itself is measured by `bench/startup.py`, not here.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import get_args

import pytest

from traces.events import EVENT_TYPES, Limits, RunOrigin
from traces.origins import RUN_KINDS
from traces.store import TraceStore
from traces.store.ingest_sql import ENVELOPE, REQUIRED
from workbench.cli.model_flags import LIMIT_DEFAULTS

GOLDEN_V2 = Path(__file__).parent / "fixtures" / "traces" / "v2"

# Runs `workbench ARGS...`, then prints which of the named packages it imported.
_PROBE = """
import json, sys
from workbench.cli import main
watched = json.loads(sys.argv[1])
try:
    main(sys.argv[2:])
except SystemExit:
    pass
loaded = sorted({name for name in sys.modules for w in watched
                 if name == w or name.startswith(w + ".")})
sys.stderr.write("LOADED " + json.dumps(loaded) + "\\n")
"""

NEVER = ["textual", "openai", "mcp", "aiohttp"]
# Building the parser needs neither the store, the event models, the agent nor asyncio
# (`workbench.engine.recording.running.service`, shared by the front ends, keeps its imports
# light too).
NOT_FOR_HELP = [
    *NEVER,
    "duckdb",
    "pydantic",
    "agent_core",
    "asyncio",
    "workbench.engine.recording.fork.plan",
]


def _imported(argv: list[str], watched: list[str], home: Path | None = None) -> list[str]:
    command = [sys.executable, "-c", _PROBE, json.dumps(watched), *argv]
    if home is not None:
        command[4:4] = ["--home", str(home)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    line = [ln for ln in done.stderr.splitlines() if ln.startswith("LOADED ")]
    assert line, done.stderr
    result: list[str] = json.loads(line[-1].removeprefix("LOADED "))
    return result


@pytest.mark.parametrize(
    "argv",
    [["--help"], ["runs", "--help"], ["run", "--help"], ["test", "--help"], ["mcp", "--help"]],
)
def test_help_builds_the_parser_without_heavy_imports(argv: list[str]) -> None:
    assert _imported(argv, NOT_FOR_HELP) == []


def test_listing_runs_loads_no_tui_model_sdk_mcp_or_http(wb_home: Path, golden_dir: Path) -> None:
    for trace in golden_dir.glob("*.jsonl"):
        shutil.copy(trace, wb_home / "traces" / trace.name)
    assert _imported(["runs"], NEVER, wb_home) == []  # ingests the new traces
    # Nothing new, the common case: the store is read, no event models are loaded.
    assert _imported(["runs"], [*NEVER, "pydantic"], wb_home) == []
    assert _imported(["runs", "--json"], [*NEVER, "pydantic"], wb_home) == []


@pytest.mark.skipif(
    importlib.util.find_spec("_duckdb") is None,
    reason="this DuckDB has no engine module of its own (older than 1.4): the package is used",
)
def test_commands_load_duckdbs_engine_not_its_package(wb_home: Path, golden_dir: Path) -> None:
    """`import duckdb` costs about 50 ms more than the engine the store uses."""
    for trace in golden_dir.glob("*.jsonl"):
        shutil.copy(trace, wb_home / "traces" / trace.name)
    for argv in (["runs"], ["runs"], ["sql", "SELECT count(*) FROM runs"]):
        assert _imported(argv, ["duckdb"], wb_home) == []
    assert "_duckdb" in _imported(["runs"], ["_duckdb"], wb_home)


def test_picking_up_new_runs_loads_no_event_models(wb_home: Path, golden_dir: Path) -> None:
    # Both paths of ingest: v1 traces are migrated line by line (the careful path), the v2
    # trace goes in bulk, and a damaged copy gets its bad line reported.
    traces = wb_home / "traces"
    for trace in [*golden_dir.glob("*.jsonl"), *GOLDEN_V2.glob("*.jsonl")]:
        shutil.copy(trace, traces / trace.name)
    damaged = (GOLDEN_V2 / "5a0e2c7d9b8f4e21a3c6d0f1e2b4a6c8.jsonl").read_text().splitlines()
    damaged = [line.replace("5a0e2c7d", "damaged0") for line in damaged]
    damaged[1] = damaged[1].replace('"seq":', '"zz_unknown": 1, "seq":', 1)
    (traces / "damaged0.jsonl").write_text("\n".join(damaged) + "\n")
    models = ["traces.events", "traces.reader", "pydantic"]
    assert _imported(["runs", "--json"], [*NEVER, *models], wb_home) == []
    with TraceStore.for_home(wb_home, read_only=True) as store:
        assert store.count_runs() == len(list(traces.glob("*.jsonl")))
        _, rows = store.query("SELECT problem FROM event_rows WHERE problem IS NOT NULL")
    assert rows == [("unknown field 'zz_unknown'",)]


def test_figures_kept_apart_from_the_models_match_them() -> None:
    defaults = Limits()
    assert {name: getattr(defaults, name) for name in LIMIT_DEFAULTS} == LIMIT_DEFAULTS
    assert get_args(RunOrigin) == RUN_KINDS
    required = {
        cls.model_fields["type"].default: [
            name
            for name, info in cls.model_fields.items()
            if info.is_required() and name not in ENVELOPE
        ]
        for cls in EVENT_TYPES
    }
    assert required == REQUIRED
