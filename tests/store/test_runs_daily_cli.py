"""The daily commands on the demo's home, each through the CLI as a subprocess: what counts
as a failure, one word for a non-answer and one duration per run, a broken prices file,
`show --full`, colour, the parent column, search highlights and the runs filters."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.demo import demo_runs
from traces.events import RunEnd
from traces.home import traces_dir
from traces.tree import NOT_AN_ANSWER
from workbench.engine.recording.runs.load import read_recording_file

CLI = "import sys; from workbench.cli import main; sys.exit(main())"
EDIT = "list_dir=List a folder's files."  # takes the guidance out: the demo suite regresses


def workbench(
    home: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", CLI, "--home", str(home), *args]
    environ = {k: v for k, v in os.environ.items() if k != "NO_COLOR"} | (env or {})
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=environ)


def on_terminal(home: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """What the command prints when its stdout is a terminal (a pseudo-terminal)."""
    leader, follower = pty.openpty()
    environ = {k: v for k, v in os.environ.items() if k != "NO_COLOR"} | (env or {})
    command = [sys.executable, "-c", CLI, "--home", str(home), *args]
    with subprocess.Popen(command, stdout=follower, stderr=subprocess.PIPE, env=environ) as proc:
        os.close(follower)
        chunks: list[bytes] = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closes once the process has exited
                break
            if not chunk:
                break
            chunks.append(chunk)
        proc.wait(timeout=60)
    os.close(leader)
    assert proc.returncode == 0
    return b"".join(chunks).decode()


def listed(home: Path, *args: str) -> list[dict[str, Any]]:
    proc = workbench(home, "runs", "--json", "--limit", "500", *args)
    assert proc.returncode == 0, proc.stderr
    rows: list[dict[str, Any]] = json.loads(proc.stdout)
    return rows


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.fixture
def home(demo_copy: Path) -> Path:
    return demo_copy


# --- issue 25 item 2: failures that are failures ---------------------------------------


def test_failed_lists_runs_not_samples_and_never_a_sample_that_passed(home: Path) -> None:
    names = demo_runs(home)
    stopped = {names[n] for n in ("duplicate-call-loop", "token-budget", "model-timeout")}
    stopped.add(names["max-turns"])
    # The demo ran its suite once: nine samples, all passed, all ending max_turns by design.
    samples = listed(home, "--kind", "sample")
    assert len(samples) == 9 and {s["status"] for s in samples} == {"max_turns"}
    failed = listed(home, "--failed")
    assert {r["run_id"] for r in failed} == stopped
    assert listed(home, "--failed", "--kind", "sample") == []
    text = workbench(home, "runs", "--failed").stdout
    assert "sample" not in text and len(text.splitlines()) == 1 + len(stopped)

    # An edit that regresses: its three failing samples are failures where samples are asked.
    suite = str(home / "demo-suite.wbsuite.toml")
    proc = workbench(home, "test", suite, "--tool-description", EDIT)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    query = "select run_id from regress_samples where not passed"
    failing = {row["run_id"] for row in json.loads(workbench(home, "sql", query, "--json").stdout)}
    assert len(failing) == 3
    assert {r["run_id"] for r in listed(home, "--failed", "--kind", "sample")} == failing
    assert {r["run_id"] for r in listed(home, "--failed")} == stopped


# --- issue 42 item 2.3: samples folded under their suite run ---------------------------


def test_samples_are_folded_by_default_and_say_what_their_case_judged(home: Path) -> None:
    names = demo_runs(home)
    text = workbench(home, "runs").stdout.splitlines()
    assert len(text) == 1 + 6 + 1  # the header, the demo's six runs, the folded note
    assert not any("  sample  " in line for line in text)
    assert text[-1].startswith("9 regression sample(s) folded under their suite runs")
    assert "--samples lists them" in text[-1]
    assert {r["run_id"] for r in listed(home)} == set(names.values())

    every = listed(home, "--samples")
    assert len(every) == 15
    assert {r["judged"] for r in every if r["origin"] == "regression_sample"} == {"passed"}
    assert {r["judged"] for r in every if r["origin"] != "regression_sample"} == {None}
    shown = workbench(home, "runs", "--kind", "sample").stdout.splitlines()[1:]
    assert len(shown) == 9 and all(line.split()[1:3] == ["case", "passed"] for line in shown)

    # An edit that regresses: the failing samples say so, and --failed with --samples
    # lists them beside the stopped runs.
    suite = str(home / "demo-suite.wbsuite.toml")
    assert workbench(home, "test", suite, "--tool-description", EDIT).returncode == 1
    failing = [r for r in listed(home, "--samples", "--failed") if r["origin"] != "agent"]
    assert len(failing) == 3 and {r["judged"] for r in failing} == {"failed"}
    assert "18 regression sample(s) folded" in workbench(home, "runs").stdout


# --- item 8: one word, one duration, a broken prices file -------------------------------


def test_a_stopped_runs_last_text_has_one_name_in_show_and_both_exports(home: Path) -> None:
    loop = demo_runs(home)["duplicate-call-loop"]
    shown = workbench(home, "show", loop).stdout
    assert f"{NOT_AN_ANSWER}: Let me search again to be sure." in shown
    document = json.loads(workbench(home, "export", loop, "--format", "json").stdout)
    assert document["answer"] is None
    assert document["last_text"] == "Let me search again to be sure."
    markdown = workbench(home, "export", loop, "--format", "md").stdout
    assert "Last text (not an answer):" in markdown and "Final answer" not in markdown
    completed = demo_runs(home)["completed"]
    document = json.loads(workbench(home, "export", completed, "--format", "json").stdout)
    assert document["answer"].startswith("tiny-weather") and document["last_text"] is None
    # Search names it the same way.
    hits = json.loads(workbench(home, "search", "search again", "--json").stdout)
    assert {hit["where"] for hit in hits} == {"message", "last_text"}


def test_a_run_lasts_as_long_in_the_list_as_in_its_timeline(home: Path) -> None:
    for row in listed(home, "--kind", "agent"):
        proc = workbench(home, "show", row["run_id"], "--timeline", "--json")
        timeline = json.loads(proc.stdout)["timeline"]
        assert row["duration_ms"] == pytest.approx(timeline["end_ms"], abs=0.01), row["run_id"]
    # The loop's own total now counts from run_start as well: within a few milliseconds.
    path = next(traces_dir(home).glob("*.jsonl"))
    recording = read_recording_file(path)
    end = recording.events[-1]
    assert isinstance(end, RunEnd)
    span = (end.ts - recording.events[0].ts).total_seconds() * 1000
    assert abs(end.totals.duration_ms - span) < 5


def test_a_broken_prices_file_is_one_line_in_every_command(home: Path) -> None:
    (home / "prices.toml").write_text("[models.x\ninput = 1\n", encoding="utf-8")
    run_id = demo_runs(home)["completed"]
    for args in (("runs",), ("show", run_id), ("show", run_id, "--timeline")):
        line = one_error_line(workbench(home, *args))
        assert "prices.toml: not a readable TOML file" in line, args


# --- item 10: the CLI -------------------------------------------------------------------


def test_show_full_prints_the_whole_system_prompt_and_every_message(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = tmp_path / "project"
    root.mkdir()
    notes = "\n".join(f"line {n}: " + "the station logs the weather. " * 4 for n in range(40))
    (root / "notes.txt").write_text(notes, encoding="utf-8")
    system = "You are careful. " + " ".join(f"Rule {n}: check every fact." for n in range(60))
    script = tmp_path / "script.json"
    steps = [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
        {"content": "The notes are weather logs.\nForty lines of them."},
    ]
    script.write_text(json.dumps(steps), encoding="utf-8")
    run = ["run", "Summarise notes.txt", "--root", str(root), "--script", str(script)]
    proc = workbench(home, *run, "--system", system, "--json")
    assert proc.returncode == 0, proc.stderr
    run_id = json.loads(proc.stdout)["run_id"]

    short = workbench(home, "show", run_id).stdout
    assert system not in short and "line 39" not in short
    full = workbench(home, "show", run_id, "--full").stdout
    assert f"system prompt:\n    {system}\n" in full
    assert "      Summarise notes.txt\n" in full  # the user message, as sent
    for n in range(40):  # the whole tool result, line by line, as the model saw it
        assert f"{n + 1}: line {n}: the station" in full
    assert "      The notes are weather logs.\n      Forty lines of them.\n" in full
    assert "messages sent: 4 (2 new)" in full  # turn 2 resends turn 1's history
    assert "…" not in full


def test_message_content_in_parts_is_shown_as_its_text(tmp_path: Path) -> None:
    golden = Path(__file__).resolve().parents[1] / "fixtures" / "traces" / "v1"
    source = golden / "276a0272c8a551178d8bfedb26070002.jsonl"
    lines = [json.loads(line) for line in source.read_text().splitlines()]
    for event in lines:
        if event["type"] == "model_request" and event["turn"] == 1:
            last = event["messages"][-1]
            assert last["role"] == "user"
            last["content"] = [{"type": "text", "text": "Parts: "}, {"type": "text", "text": "hi"}]
    home = tmp_path / "home"
    traces_dir(home).mkdir(parents=True)
    (traces_dir(home) / source.name).write_text(
        "".join(json.dumps(event) + "\n" for event in lines), encoding="utf-8"
    )
    shown = workbench(home, "show", source.stem[:8]).stdout
    assert "last user: Parts: hi" in shown and "'type'" not in shown and '"type"' not in shown


def test_colour_on_a_terminal_only_and_never_when_asked_not_to(home: Path) -> None:
    coloured = on_terminal(home, "runs")
    assert "\x1b[32mcompleted" in coloured and "\x1b[33mmax_turns" in coloured
    assert "\x1b[" not in on_terminal(home, "runs", env={"NO_COLOR": "1"})
    assert "\x1b[" not in on_terminal(home, "--no-color", "runs")
    assert "\x1b[" not in on_terminal(home, "runs", "--no-color")
    assert "\x1b[" not in workbench(home, "runs").stdout  # piped
    run_id = demo_runs(home)["completed"]
    assert "\x1b[1m── turn 1\x1b[0m" in on_terminal(home, "show", run_id)
    assert "\x1b[" not in workbench(home, "show", run_id).stdout


def test_search_highlights_the_match_on_a_terminal(home: Path) -> None:
    shown = on_terminal(home, "search", "CALIBRATION", "--limit", "3")
    assert "mean of the \x1b[1;7mcalibration\x1b[0m temperatures" in shown
    piped = workbench(home, "search", "CALIBRATION", "--limit", "3").stdout
    assert "mean of the calibration temperatures" in piped and "\x1b[" not in piped


def test_runs_shows_each_forks_parent(home: Path) -> None:
    loop = demo_runs(home)["duplicate-call-loop"]
    proc = workbench(home, "fork", loop, "--turn", "2", "--quiet")
    assert proc.returncode == 0, proc.stderr
    lines = workbench(home, "runs", "--kind", "fork", "--kind", "agent").stdout.splitlines()
    assert lines[0].split()[:4] == ["RUN", "STATUS", "KIND", "PARENT"]
    [fork] = [line for line in lines if "  fork  " in line]
    assert fork.split()[3] == loop[:8]
    [parent] = [line for line in lines if line.startswith(loop[:12])]
    assert parent.split()[3] == "-"


def test_runs_filters_by_model_time_tokens_cost_latency_tool_and_error_kind(home: Path) -> None:
    names = demo_runs(home)

    def ids(*args: str) -> set[str]:
        return {row["run_id"] for row in listed(home, "--kind", "agent", *args)}

    everything = set(names.values())
    assert ids() == everything
    assert ids("--model", "scripted-demo") == everything and ids("--model", "gpt-4o") == set()
    assert ids("--since", "1h") == everything and ids("--until", "2001-01-01") == set()
    assert ids("--since", "2001-01-01T00:00+02:00", "--until", "2999-01-01") == everything
    assert ids("--min-tokens", "3000") == {names["tool-error-recovered"]}
    assert ids("--max-tokens", "0") == {names["model-timeout"]}
    assert names["completed"] in ids("--tool", "calculator")
    assert names["max-turns"] not in ids("--tool", "calculator")
    assert ids("--error-kind", "timeout") == {names["model-timeout"]}
    assert ids("--min-latency", "400") == {names["model-timeout"]}
    assert names["model-timeout"] not in ids("--max-latency", "400")
    # Cost from the run_end totals and <home>/prices.toml, in SQL.
    (home / "prices.toml").write_text(
        '[models."scripted-demo"]\ninput = 1000\noutput = 1000\n', encoding="utf-8"
    )
    assert ids("--min-cost", "3") == {names["tool-error-recovered"]}  # 3439 tokens: $3.44
    assert names["model-timeout"] in ids("--max-cost", "0")
    text = workbench(home, "runs", "--min-tokens", "99999").stdout
    assert text.strip() == "no runs match these filters"


def test_bad_filter_values_are_one_usage_line(home: Path) -> None:
    assert "not a time" in one_error_line(workbench(home, "runs", "--since", "yesterday"))
    assert "--since must be before --until" in one_error_line(
        workbench(home, "runs", "--since", "2026-02-01", "--until", "2026-01-01")
    )
    assert "need prices" in one_error_line(workbench(home, "runs", "--min-cost", "1"))
    assert "whole number" in one_error_line(workbench(home, "runs", "--min-tokens", "x"))
