"""Forks of captured runs whose tools are not JSON functions (a Responses freeform tool such
as Codex's `apply_patch`, an Anthropic server tool such as `web_search`): the fork offers
each wire tool exactly as the run's client did, under its own name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.engine.capture_support import read_run
from tests.engine.test_proxy_tool_kinds import (
    APPLY_PATCH,
    _patch_turns,
    _search,
    patch_agent,
    search_agent,
)
from tests.engine.wire_support import OPENAI_KEY
from workbench.cli import main
from workbench.engine.http.model_server import ModelServer, ScriptResponder
from workbench.engine.http.proxy import RecordingProxy
from workbench.engine.recording.fork.plan import ForkRequest, plan_fork
from workbench.engine.recording.runs.load import load_recording

WEB_SEARCH = {"type": "web_search_20250305", "name": "web_search", "max_uses": 1}


def _captured_patch_run(home: Path) -> str:
    with (
        ModelServer(ScriptResponder([]), wire_responders={"responses": _patch_turns}) as upstream,
        RecordingProxy(upstream.base_url, home) as proxy,
    ):
        assert patch_agent(proxy.base_url, stream=True) == "Patched."
    return str(read_run(home)[0]["run_id"])


def _captured_search_run(home: Path) -> str:
    with (
        ModelServer(ScriptResponder([]), wire_responders={"anthropic": _search}) as upstream,
        RecordingProxy(upstream.base_url, home, anthropic_upstream=upstream.base_url[:-3]) as proxy,
    ):
        search_agent(proxy.base_url[:-3], stream=True)
    return str(read_run(home)[0]["run_id"])


@pytest.mark.parametrize(
    ("capture", "tool", "suffix"),
    [(_captured_patch_run, APPLY_PATCH, "/v1"), (_captured_search_run, WEB_SEARCH, "")],
    ids=["responses-custom", "anthropic-server-tool"],
)
def test_a_fork_offers_a_wire_tool_as_the_client_sent_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], capture: Any, tool: Any, suffix: str
) -> None:
    home = tmp_path / "home"
    run_id = capture(home)
    plan = plan_fork(load_recording(run_id, home), ForkRequest(turn=1))
    assert [spec.name for spec in plan.specs] == [tool["name"]]
    with ModelServer(ScriptResponder([{"content": "Forked."}])) as server:
        base_url = server.base_url.removesuffix("/v1") + suffix
        code = main([
            "fork", run_id, "--turn", "1", "--base-url", base_url, "--model", "m",
            "--api-key", OPENAI_KEY, "--home", str(home),
        ])  # fmt: skip
        sent = server.bodies
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert "Forked." in printed.out
    assert [body["tools"] for body in sent] == [[tool]]  # unchanged, not an empty-named function


def test_a_wire_tool_keeps_its_name_in_the_fork_dialog_and_refuses_a_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from workbench.engine.recording.fork.plan import fork_context
    from workbench.engine.recording.running.service import ModelSettings

    home = tmp_path / "home"
    run_id = _captured_patch_run(home)
    context = fork_context(load_recording(run_id, home), 1, ModelSettings())
    assert context.tools == {"apply_patch": APPLY_PATCH["description"]}
    code = main([
        "fork", run_id, "--turn", "1", "--tool-schema", 'apply_patch={"type": "object"}',
        "--dry-run", "--home", str(home),
    ])  # fmt: skip
    err = capsys.readouterr().err
    assert code != 0 and "not a JSON function" in err and "Traceback" not in err
