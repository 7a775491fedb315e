"""The layer rules (README.md, "Layout"; the contracts in pyproject.toml), checked two
ways: import-linter contracts, and a fresh interpreter per core module, and per module the
TUI's backend is made of, that must not load Textual."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _modules(package: str) -> list[str]:
    module = importlib.import_module(package)
    found = [package]
    for info in pkgutil.walk_packages(module.__path__, prefix=f"{package}."):
        found.append(info.name)
    return found


CORE_MODULES = [
    name
    for package in ("traces", "agent_core", "workbench.engine", "workbench.cli")
    for name in _modules(package)
]


@pytest.mark.parametrize("module", CORE_MODULES)
def test_core_module_never_loads_textual(module: str) -> None:
    code = (
        f"import sys, {module}\n"
        "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.'))\n"
        "assert not bad, bad[:3]\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]


# The TUI's door to the store and the engine, and the plain-Python modules it hands screens
# their data in: typed and tested without Textual or any screen.
TUI_PLAIN_MODULES = ["workbench.tui.backend", "workbench.tui.schema_view", "workbench.tui.render"]


@pytest.mark.parametrize("module", TUI_PLAIN_MODULES)
def test_tui_backend_loads_no_screen_and_no_textual(module: str) -> None:
    code = (
        f"import sys, {module}\n"
        "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.')\n"
        "    or m.endswith('_screen') or m.endswith('_screens')\n"
        "    or m in ('workbench.tui.app', 'workbench.tui.screens', 'workbench.tui.navigation'))\n"
        "assert not bad, bad[:5]\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]


def test_import_linter_contracts_hold() -> None:
    lint_imports = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run(
        [str(lint_imports), "--config", str(ROOT / "pyproject.toml")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "Contracts: 10 kept, 0 broken" in result.stdout
    assert "Recording's rooms point down only KEPT" in result.stdout
    assert "TUI and pytest plugin do not import the CLI KEPT" in result.stdout
    assert "No import cycles in traces and agent_core KEPT" in result.stdout
    assert "Engine wings stand on recording KEPT" in result.stdout
    assert "Engine wings are independent of each other KEPT" in result.stdout
    assert "OpenTelemetry only in workbench.engine.otel KEPT" in result.stdout
    assert "The mcp SDK in one client module and one server module KEPT" in result.stdout


def test_single_module_imports_the_openai_and_mcp_sdks() -> None:
    importers: dict[str, list[str]] = {"openai": [], "mcp": []}
    for path in (ROOT / "agent_core").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for sdk in importers:
            if f"\nimport {sdk}" in text or f"\nfrom {sdk}" in text or f"\nfrom {sdk}." in text:
                importers[sdk].append(str(path.relative_to(ROOT)))
    for sdk, files in importers.items():
        assert len(files) <= 1, f"{sdk} imported in {files}"
    # The server side of MCP (`workbench mcp-serve`) has its one module in the engine.
    servers = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "workbench").rglob("*.py")
        if any(
            f"\n{word} {sdk}" in path.read_text(encoding="utf-8")
            for word in ("import", "from")
            for sdk in ("mcp ", "mcp.", "mcp_types")
        )
    ]
    assert servers == ["workbench/engine/mcp_server/server.py"]
    for path in (ROOT / "traces").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "import openai" not in text and "from mcp" not in text


# The package, and the engine module `traces.store.db` imports on its own.
DUCKDB_MODULES = ("duckdb", "_duckdb")


def test_duckdb_is_imported_only_in_traces_store() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for package in ("traces", "agent_core", "workbench")
        for path in (ROOT / package).rglob("*.py")
        if any(f"import {name}" in path.read_text(encoding="utf-8") for name in DUCKDB_MODULES)
        and (ROOT / "traces" / "store") not in path.parents
    ]
    assert offenders == []


def test_runs_are_recorded_in_a_home_only_through_open_run_trace() -> None:
    # A writer built by hand can leave out the home's redaction patterns (it once did, for
    # imported OpenTelemetry runs); `traces.home.open_run_trace` always applies them.
    offenders = [
        str(path.relative_to(ROOT))
        for package in ("traces", "agent_core", "workbench")
        for path in (ROOT / package).rglob("*.py")
        if "JsonlWriter(" in path.read_text(encoding="utf-8")
        and path not in (ROOT / "traces" / "home.py", ROOT / "traces" / "writer.py")
    ]
    assert offenders == []
