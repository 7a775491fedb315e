"""`workbench mcp-serve` as a coding agent meets it: started as a subprocess and driven by
the official `mcp` client, over stdio and streamable HTTP, on a demo home and on homes of
thousands of runs and of one long run."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.support.big_traces import long_agent_run, small_run_lines
from tests.support.failing_runs import (
    KNOWN_GROUP,
    KNOWN_VARIANTS,
    runs_of_one_task,
    variants_of,
)
from workbench.engine.mcp_server.tools import TOOLS
from workbench.engine.regress.lint_tools import lint_tools

TOOL_NAMES = [
    "list_runs",
    "list_failures",
    "explain_failure",
    "show_run",
    "search_runs",
    "diff_runs",
    "compare_runs",
    "replay_run",
    "fork_run",
    "run_suite",
    "annotate_run",
    "check_rules",
    "judge_runs",
    "lint_tools",
]
# The server offers a coding agent six more tools than the lint's default of 8 for an
# agent's own tools per request: list_failures, explain_failure and compare_runs (issue 38)
# and annotate_run, check_rules and judge_runs (issue 39) joined the eight. A lead's call
# to keep.
SERVED_TOOLS = 14
WORKBENCH = [sys.executable, "-c", "import sys; from workbench.cli import main; sys.exit(main())"]


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "WORKBENCH_HOME"}


# The demo's six runs, listed by default, and the nine samples of the suite it runs once,
# folded under their suite run unless asked for.
DEMO_RUNS = 6
DEMO_SAMPLES = 9


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("mcp-serve") / "home"
    done = subprocess.run(
        [*WORKBENCH, "demo", "--no-tui", "--home", str(home)],
        capture_output=True,
        text=True,
        env=_env(),
    )
    assert done.returncode == 0, done.stderr
    return home


@asynccontextmanager
async def served(home: Path, *flags: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=WORKBENCH[0],
        args=[*WORKBENCH[1:], "mcp-serve", "--home", str(home), *flags],
        env=_env(),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def call(session: ClientSession, name: str, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool(name, arguments)
    text = result.content[0].text  # type: ignore[union-attr]
    assert not result.is_error, text
    answer: dict[str, Any] = json.loads(text)
    return answer


async def refused(session: ClientSession, name: str, **arguments: Any) -> str:
    result = await session.call_tool(name, arguments)
    assert result.is_error, result
    text: str = result.content[0].text  # type: ignore[union-attr]
    assert "\n" not in text and "Traceback" not in text
    return text


async def demo_runs(session: ClientSession) -> dict[str, dict[str, Any]]:
    """The demo's runs by status (the completed ones by task)."""
    runs = (await call(session, "list_runs", kind="agent", limit=100))["runs"]
    by = {run["status"]: run for run in runs}
    by |= {run["task"]: run for run in runs}
    return by


def test_the_tool_descriptions_pass_lint_tools() -> None:
    findings = lint_tools([tool.schema() for tool in TOOLS], max_tools=SERVED_TOOLS)
    assert [finding.line() for finding in findings] == []


async def test_every_tool_answers_over_stdio(demo_home: Path) -> None:
    async with served(demo_home) as session:
        listed = (await session.list_tools()).tools
        assert [tool.name for tool in listed] == TOOL_NAMES
        schemas = [tool.model_dump(by_alias=True, exclude_none=True) for tool in listed]
        # What the client sees passes the lint too.
        assert lint_tools(schemas, max_tools=SERVED_TOOLS) == []

        runs = await call(session, "list_runs", limit=2)
        assert runs["total"] == DEMO_RUNS and len(runs["runs"]) == 2 and runs["next_offset"] == 2
        assert runs["samples_folded"] == DEMO_SAMPLES
        assert {r["kind"] for r in runs["runs"]} == {"agent"} and runs["runs"][0]["case"] is None
        every = await call(session, "list_runs", samples=True, limit=100)
        assert every["total"] == DEMO_RUNS + DEMO_SAMPLES and every["samples_folded"] == 0
        judged = [r["case"] for r in every["runs"] if r["kind"] == "regression_sample"]
        assert judged == ["passed"] * DEMO_SAMPLES  # they stop at max_turns, as designed
        failed = await call(session, "list_runs", failed=True)
        assert failed["total"] == 4
        assert {r["status"] for r in failed["runs"]} == {
            "max_turns",
            "timeout",
            "token_budget",
            "duplicate_tool_calls",
        }
        by = await demo_runs(session)
        assert (await call(session, "list_runs", status="timeout"))["total"] == 1
        assert (await call(session, "list_runs", kind="fork"))["total"] == 0
        assert (await call(session, "list_runs", model="SCRIPTED"))["total"] == DEMO_RUNS
        assert (await call(session, "list_runs", model="nothing-like-it"))["total"] == 0
        assert (await call(session, "list_runs", text="TODO"))["total"] == 1

        looping = by["duplicate_tool_calls"]["run_id"]
        chain = await call(session, "show_run", run=looping[:8])
        assert chain["run"]["run_id"] == looping
        assert chain["stopped"]["status"] == "duplicate_tool_calls"
        # What a stopped run said last is not its answer, here as in `show` and the TUI.
        said = "Let me search again to be sure."
        for summary in (chain["stopped"], chain["run"]):
            assert summary["answer"] is None and summary["last_text"] == said
            assert "final_answer" not in summary
        done = (await call(session, "show_run", run=by["completed"]["run_id"]))["run"]
        assert done["answer"] and done["last_text"] is None
        assert chain["turns"][0]["tool_calls"][0]["name"] == "search_files"
        assert chain["turns"][0]["tool_calls"][0]["arguments"] == {"query": "TODO"}
        events = await call(session, "show_run", run=looping, events_from=0, events=3)
        assert [e["seq"] for e in events["events"]] == [0, 1, 2]
        assert events["events"][0]["type"] == "run_start" and events["next_events_from"] == 3

        hits = await call(session, "search_runs", text="todo", limit=1)
        assert hits["matches"][0]["run_id"] == looping and hits["next_offset"] == 1
        rest = await call(session, "search_runs", text="todo", run=looping, offset=1)
        assert all(hit["run_id"] == looping for hit in rest["matches"])

        completed = [
            r["run_id"] for r in (await call(session, "list_runs", status="completed"))["runs"]
        ]
        same = await call(session, "diff_runs", run_a=completed[0], run_b=completed[0])
        assert same["equal"] is True and same["chain"]["equal"] is True
        other = await call(
            session, "diff_runs", run_a=completed[0], run_b=completed[1], what="chain"
        )
        assert other["equal"] is False and "tools" not in other

        replay = await call(session, "replay_run", run=completed[0])
        assert replay["status"] == "identical" and replay["divergence"] is None

        plan = await call(
            session, "fork_run", run=completed[0], turn=1, dry_run=True, system="Be brief."
        )
        assert plan["dry_run"] is True and plan["edits"][0]["kind"] == "system"
        assert "read_file" in plan["tools_offered"] and plan["writes_allowed"] is False

        lint = await call(session, "lint_tools", run=completed[0])
        assert lint["tools"] == 4 and lint["errors"] == 0
        bad = {"name": "x", "description": "", "parameters": {"type": "object"}}
        linted = await call(session, "lint_tools", tools=[bad])
        assert linted["errors"] >= 1 and linted["findings"][0]["code"] == "no-description"


async def test_list_failures_groups_the_demo_failing_runs(demo_home: Path) -> None:
    async with served(demo_home) as session:
        report = await call(session, "list_failures", limit=2, examples=1)
        assert report["failed_runs"] == 4 and report["total_groups"] == 4
        assert len(report["groups"]) == 2 and len(report["groups"][0]["examples"]) == 1
        every = await call(session, "list_failures", since_days=7)
        assert sorted(g["status"] for g in every["groups"]) == [
            "duplicate_tool_calls",
            "max_turns",
            "timeout",
            "token_budget",
        ]
        assert "from 1 to 20" in await refused(session, "list_failures", examples=50)
        # A group's runs, by its signature, through list_runs.
        group = report["groups"][0]
        runs = await call(session, "list_runs", signature=group["signature"])
        assert [r["run_id"] for r in runs["runs"]] == [group["first_run"]]


async def test_compare_runs_finds_the_known_variants_of_a_task(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "traces").mkdir(parents=True)
    runs_of_one_task(home / "traces", KNOWN_GROUP)
    async with served(home) as session:
        report = await call(session, "compare_runs", task="pass-0", examples=20)
        assert (report["runs"], report["passed"], report["tasks"]) == (21, 11, 1)
        found = variants_of(report)
        assert sorted(found, key=str) == sorted(KNOWN_VARIANTS, key=str)
        assert report["truncated"] is False
        few = await call(session, "compare_runs", runs=["pass-0", "args-0"], variants=1)
        assert few["variants"][0]["departure"]["how"] == "other_arguments"
        assert "one of runs, task" in await refused(session, "compare_runs")
        assert "no run id starts with 'nope'" in await refused(
            session, "compare_runs", runs=["nope"]
        )
        assert "no run is labelled" in await refused(session, "compare_runs", label="flaky")


async def test_compare_runs_compares_a_demo_suite_case_samples(demo_home: Path) -> None:
    async with served(demo_home) as session:
        report = await call(session, "compare_runs", case="demo-suite:walk-into-src")
        assert report["runs"] == 3 and report["passed"] == 3
        assert report["group"] == "the samples of case walk-into-src of suite demo-suite"
        assert report["path"][0]["tool"] == "list_dir" and report["variants"] == []


async def test_bad_input_is_a_tool_error_and_the_server_keeps_serving(demo_home: Path) -> None:
    async with served(demo_home) as session:
        assert "no run id starts with 'ffff0000'" in await refused(
            session, "show_run", run="ffff0000"
        )
        assert "must be one of" in await refused(session, "list_runs", status="lost")
        assert "must be an integer" in await refused(session, "list_runs", limit="ten")
        assert "from 1 to 100" in await refused(session, "list_runs", limit=1000)
        assert "no argument 'path'" in await refused(session, "show_run", run="a", path="/etc")
        assert "needs the argument 'run'" in await refused(session, "replay_run")
        assert "no tool 'rm_rf'" in await refused(session, "rm_rf")
        assert "either run or tools" in await refused(session, "lint_tools")
        looping = (await demo_runs(session))["duplicate_tool_calls"]["run_id"]
        assert "past its last" in await refused(session, "show_run", run=looping, turn_from=9)
        runs = await demo_runs(session)
        first = runs["completed"]["run_id"]
        assert "outside run" in await refused(session, "fork_run", run=first, turn=99, dry_run=True)
        # Nothing a client sends is a path: not a trace file, not a file outside the home.
        outside = demo_home.parent / "elsewhere.jsonl"
        outside.write_bytes(small_run_lines("elsewhere"))
        for ref in (str(outside), "../elsewhere.jsonl", "/etc/passwd", "..", "*"):
            assert "is not a run id" in await refused(session, "replay_run", run=ref)
        assert (await call(session, "list_runs"))["total"] == DEMO_RUNS  # still serving


async def test_fork_run_is_refused_on_a_read_only_server(demo_home: Path) -> None:
    before = sorted((demo_home / "traces").iterdir())
    async with served(demo_home) as session:
        run = (await demo_runs(session))["completed"]["run_id"]
        reason = await refused(session, "fork_run", run=run, turn=1, system="Be brief.")
        assert "read-only" in reason and "--allow-writes" in reason and "dry_run" in reason
        assert (await call(session, "fork_run", run=run, turn=1, dry_run=True))["dry_run"]
    assert sorted((demo_home / "traces").iterdir()) == before


async def test_fork_run_with_allow_writes_records_a_linked_run(
    demo_home: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    shutil.copytree(demo_home, home)
    async with served(home, "--allow-writes") as session:
        parent = (await demo_runs(session))["completed"]["run_id"]
        fork = await call(session, "fork_run", run=parent, turn=1, system="Be brief.")
        assert fork["parent_run_id"] == parent and fork["fork_turn"] == 1
        assert fork["status"] == "completed" and fork["trace_whole"] is True
        assert (home / "traces" / f"{fork['run_id']}.jsonl").is_file()
        forks = await call(session, "list_runs", kind="fork")
        assert [r["run_id"] for r in forks["runs"]] == [fork["run_id"]]
        assert forks["runs"][0]["parent_run_id"] == parent
        diff = await call(session, "diff_runs", run_a=parent, run_b=fork["run_id"])
        assert diff["chain"]["forks"], diff


SUITE = (
    '[suite]\nname = "readme"\nsamples = 1\ntools = "builtin"\n\n'
    '[[case]]\nid = "read-readme"\ntask = "Read README.md."\n'
    'expect_tool = "read_file"\nexpect_args = { path = "README.md" }\n'
)
READS_README = [
    {"tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}]},
    {"content": "It says hello."},
]


async def test_run_suite_runs_a_suite_of_the_home_offline_when_writes_are_allowed(
    demo_home: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    shutil.copytree(demo_home, home)
    (home / "README.md").write_text("# hello\n", encoding="utf-8")
    (home / "readme.wbsuite.toml").write_text(SUITE, encoding="utf-8")
    (home / "reads-readme.json").write_text(json.dumps(READS_README), encoding="utf-8")
    (tmp_path / "outside.wbsuite.toml").write_text(SUITE, encoding="utf-8")
    async with served(home) as session:
        reason = await refused(session, "run_suite", suite="readme.wbsuite.toml")
        assert "read-only" in reason and "--allow-writes" in reason
    async with served(home, "--allow-writes") as session:
        result = await call(
            session, "run_suite", suite="readme.wbsuite.toml", script="reads-readme.json"
        )
        assert result["passed"] is True, result
        [case] = result["cases"]
        assert case["case_id"] == "read-readme" and case["pass_rate"] == 1.0
        samples = await call(session, "list_runs", kind="regression_sample")
        assert samples["total"] == 1 + 9  # beside the 9 of the demo suite
        for outside in ("../outside.wbsuite.toml", str(tmp_path / "outside.wbsuite.toml")):
            reason = await refused(session, "run_suite", suite=outside)
            assert "inside the home" in reason
        assert "no suite file" in await refused(session, "run_suite", suite="nope.toml")


async def test_list_runs_pages_through_thousands_of_runs(tmp_path: Path) -> None:
    home = tmp_path / "home"
    traces = home / "traces"
    traces.mkdir(parents=True)
    for number in range(10_000):
        run_id = f"{number:032x}"
        lines = small_run_lines(run_id)
        if number % 1000 == 0:
            lines = lines.replace(b'"model":"m"', b'"model":"gpt-other"')
        (traces / f"{run_id}.jsonl").write_bytes(lines)
    async with served(home) as session:
        seen: list[str] = []
        offset: int | None = 0
        while offset is not None:
            page = await call(session, "list_runs", limit=100, offset=offset)
            assert page["total"] == 10_000 and len(page["runs"]) == 100
            seen += [run["run_id"] for run in page["runs"]]
            offset = page["next_offset"]
        assert len(seen) == len(set(seen)) == 10_000
        other = await call(session, "list_runs", model="gpt-other", limit=100)
        assert other["total"] == 10 and other["next_offset"] is None
        hits = await call(session, "search_runs", text="t", limit=100)
        assert len(hits["matches"]) == 100 and hits["next_offset"] == 100


async def test_show_run_pages_a_long_run_and_marks_what_it_cut(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "traces").mkdir(parents=True)
    await asyncio.to_thread(long_agent_run, home / "traces", "a" * 32, 25, 480)
    async with served(home) as session:
        first = await call(session, "show_run", run="aaaa", turns=10)
        assert first["turns_total"] == 25 and [t["turn"] for t in first["turns"]] == [*range(1, 11)]
        assert first["next_turn"] == 11 and first["stopped"]["status"] == "completed"
        # Each turn says ~480 words: cut, with a marker in the text and in `truncated`.
        said = first["turns"][0]["model_said"]
        assert said.endswith("more characters]") and len(said) < 2100
        assert any("turns[0].model_said" in cut for cut in first["truncated"])
        last = await call(session, "show_run", run="aaaa", turn_from=21, turns=10)
        assert [t["turn"] for t in last["turns"]] == [*range(21, 26)]
        assert last["next_turn"] is None and last["stopped"]["status"] == "completed"
        events = await call(session, "show_run", run="aaaa", events_from=0, events=100)
        assert len(events["events"]) == 100 and events["next_events_from"] == 100
        total = events["events_total"]
        # The last requests resend a history of ~25 long answers: cut to fit a context.
        late = await call(session, "show_run", run="aaaa", events_from=total - 40, events=40)
        assert any(e["type"] == "model_request" for e in late["events"])
        assert late["truncated"] and len(json.dumps(late)) <= 60_000
        tail = await call(session, "show_run", run="aaaa", events_from=total - 1)
        assert tail["events"][0]["type"] == "run_end" and tail["next_events_from"] is None


async def test_texts_leave_redacted_with_the_homes_patterns(
    demo_home: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    shutil.copytree(demo_home, home)
    (home / "redact-patterns.txt").write_text("calibration\n", encoding="utf-8")
    async with served(home) as session:
        runs = await call(session, "list_runs")
        assert "calibration" not in json.dumps(runs)
        assert "[REDACTED:" in json.dumps(runs)


def test_streamable_http_on_a_free_port(demo_home: Path) -> None:
    process = subprocess.Popen(
        [*WORKBENCH, "mcp-serve", "--port", "0", "--home", str(demo_home)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()  # the server says where it listens once it does
        assert line.startswith("serving MCP at http://127.0.0.1:"), line
        url = line.split()[3]
        assert url.endswith("/mcp")
        threading.Thread(target=process.stderr.read, daemon=True).start()

        async def session() -> tuple[list[str], dict[str, Any], str]:
            async with (
                streamable_http_client(url) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                names = [tool.name for tool in (await client.list_tools()).tools]
                runs = await call(client, "list_runs", limit=1)
                return names, runs, await refused(client, "show_run", run="nope")

        import anyio

        names, runs, error = anyio.run(session)
        assert names == TOOL_NAMES and runs["total"] == DEMO_RUNS and "nope" in error
    finally:
        process.terminate()
        process.wait(10)


def test_host_without_port_is_one_line_and_exit_2(demo_home: Path) -> None:
    done = subprocess.run(
        [*WORKBENCH, "mcp-serve", "--host", "0.0.0.0", "--home", str(demo_home)],
        capture_output=True,
        text=True,
        env=_env(),
    )
    assert done.returncode == 2
    assert (
        done.stderr.strip()
        == "workbench: --host is the address of the HTTP server: give --port too"
    )


def test_a_home_that_does_not_exist_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = subprocess.run(
        [*WORKBENCH, "mcp-serve", "--home", str(tmp_path / "nowhere")],
        capture_output=True,
        text=True,
        env=_env(),
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("workbench: no workbench home at ")
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "nowhere").exists()


async def test_list_runs_lists_a_sessions_runs_in_order(tmp_path: Path) -> None:
    from tests.support.generated_runs import small_run
    from traces.events import SESSION_META

    folder = tmp_path / "home" / "traces"
    small_run(folder, "1" * 32, meta={SESSION_META: "chat-7"})
    small_run(folder, "2" * 32, end=False, meta={SESSION_META: "chat-7"})
    small_run(folder, "3" * 32)
    async with served(tmp_path / "home") as client:
        # (`session` is the helpers' own first argument: the tool is called directly.)
        answer = await client.call_tool("list_runs", {"session": "chat"})  # a prefix will do
        listed = json.loads(answer.content[0].text)  # type: ignore[union-attr]
        assert [run["run_id"] for run in listed["runs"]] == ["1" * 32, "2" * 32]
        assert {run["session"] for run in listed["runs"]} == {"chat-7"}
        unknown = await client.call_tool("list_runs", {"session": "nope"})
        assert unknown.is_error and "no session 'nope'" in unknown.content[0].text  # type: ignore[union-attr]
