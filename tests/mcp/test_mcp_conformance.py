"""The official MCP conformance harness (@modelcontextprotocol/conformance, client mode) drives
`workbench mcp-conformance`: it starts its own server and appends the URL to our command."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.mcp.mcp_support import INSTALL_HINT, ROOT
from tests.support.processes import WORKBENCH

HARNESS = ROOT / "node_modules" / ".bin" / "conformance"


def _node_major(node: str) -> int:
    out = subprocess.run([node, "--version"], capture_output=True, text=True).stdout
    match = re.match(r"v(\d+)", out.strip())
    return int(match.group(1)) if match else 0


def _node22_dir() -> str:
    """A folder holding Node >= 22: the project's node-<os>-<arch> package, or the system's."""
    for candidate in sorted((ROOT / "node_modules").glob("node-*/bin/node")):
        if _node_major(str(candidate)) >= 22:
            return str(candidate.parent)
    system = shutil.which("node")
    if system and _node_major(system) >= 22:
        return str(Path(system).parent)
    pytest.skip(f"the conformance harness needs Node >= 22 ({INSTALL_HINT})")


@pytest.mark.parametrize("scenario", ["initialize", "tools_call", "sse-retry"])
def test_official_client_scenario_passes(scenario: str, tmp_path: Path) -> None:
    if not HARNESS.exists():
        pytest.skip(f"@modelcontextprotocol/conformance is not installed ({INSTALL_HINT})")
    env = {**os.environ, "PATH": f"{_node22_dir()}{os.pathsep}{os.environ.get('PATH', '')}"}
    result = subprocess.run(
        [
            str(HARNESS),
            "client",
            "--command",
            f"{WORKBENCH} mcp-conformance",
            "--scenario",
            scenario,
            "-o",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    assert "OVERALL: PASSED" in output and " 0 failed" in output, output[-3000:]
