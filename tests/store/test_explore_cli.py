"""The daily debugging commands on the demo's runs: `show` (call ids, calls that never ran,
tokens and cost), `show --timeline`, `search` and `export`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.demo import demo_run
from workbench.cli import main


@pytest.fixture
def home(demo_copy: Path) -> Path:
    return demo_copy


def test_show_names_call_ids_and_the_refused_repeat_without_calling_it_an_answer(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    run_id = demo_run(home, "duplicate-call-loop")
    assert main(["--home", str(home), "show", run_id[:10]]) == 0
    out = capsys.readouterr().out
    assert "tool search_files [ok, " in out and ", builtin] call_s1_0 {" in out
    # Turn 2 asked for the same search again; the loop refused it, and show says so.
    refused = "tool search_files [refused: it repeats the previous turn's call; the run stopped]"
    assert f"{refused} call_s2_0 " in out
    assert "\nanswer:" not in out
    assert "last text (not an answer): Let me search again to be sure." in out
    assert "--mock CALL_ID=TEXT` (a call made before turn N): call_s1_0" in out
    assert "2 turns, 2 model calls, 1 tool call (0 failed)" in out
    assert main(["--home", str(home), "show", run_id, "--json"]) == 0
    turns = json.loads(capsys.readouterr().out)["chain"]["turns"]
    assert [c["id"] for c in turns[1]["calls_not_run"]] == ["call_s2_0"]

    completed = demo_run(home, "completed")
    assert main(["--home", str(home), "show", completed]) == 0
    assert "\nanswer: tiny-weather is a small weather-station logger" in capsys.readouterr().out


def test_tokens_per_turn_and_run_with_cost_when_priced(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    run_id = demo_run(home, "completed")
    assert main(["--home", str(home), "show", run_id]) == 0
    out = capsys.readouterr().out
    assert "── turn 1 [ok] · " in out and " out tokens\n" in out and "$" not in out
    (home / "prices.toml").write_text(
        '[models."scripted-demo"]\ninput = 1_000_000\noutput = 0\n', encoding="utf-8"
    )  # a dollar per input token: easy figures to check
    assert main(["--home", str(home), "show", run_id, "--json"]) == 0
    tokens = json.loads(capsys.readouterr().out)["tokens"]
    first = tokens["turns"][0]
    assert first["cost"] == pytest.approx(first["input_tokens"])
    assert tokens["cost"] == pytest.approx(sum(t["input_tokens"] for t in tokens["turns"]))
    assert main(["--home", str(home), "show", run_id]) == 0
    out = capsys.readouterr().out
    assert f"── turn 1 [ok] · {first['input_tokens']} in / {first['output_tokens']} out " in out
    assert f"tokens, ${first['cost']:.2f}" in out
    assert f"${tokens['cost']:.2f}, " in out.split("totals:")[1]

    (home / "prices.toml").write_text("[models.x]\ninput = 'free'\n", encoding="utf-8")
    assert main(["--home", str(home), "show", run_id]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "prices.toml" in err


def test_show_timeline_draws_each_turn(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    run_id = demo_run(home, "completed")
    assert main(["--home", str(home), "show", run_id, "--timeline"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith(f"timeline of run {run_id[:12]}")
    assert [line.split()[1] for line in lines if line.startswith("turn ")] == ["1", "2", "3"]
    # Turn 1 read the folder and the README side by side (both read-only).
    assert any("∥ read_file" in line for line in lines)
    assert main(["--home", str(home), "show", run_id, "--timeline", "--json"]) == 0
    timeline = json.loads(capsys.readouterr().out)["timeline"]
    lanes = [s["lane"] for s in timeline["turns"][0]["spans"] if s["kind"] == "tool"]
    assert sorted(lanes) == [0, 1]


def test_search_lists_run_turn_and_snippet(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    run_id = demo_run(home, "duplicate-call-loop")
    assert main(["--home", str(home), "search", "storm SEASON"]) == 0
    out = capsys.readouterr().out
    assert f"{run_id[:12]}  turn 1    tool_result" in out
    assert "… the station off the roof before the storm season. " in out  # whole words
    assert main(["--home", str(home), "search", "no file", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    recovered = demo_run(home, "tool-error-recovered")
    assert {"run_id": recovered, "turn": 1, "where": "tool_result"}.items() <= hits[0].items()
    assert main(["--home", str(home), "search", "nothing like this"]) == 1
    assert "no run mentions" in capsys.readouterr().out
    assert main(["--home", str(home), "search", "nothing like this", "--json"]) == 1
    assert json.loads(capsys.readouterr().out) == []


def test_export_markdown_and_json(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    run_id = demo_run(home, "tool-error-recovered")
    assert main(["--home", str(home), "export", run_id[:8], "--format", "md"]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"# Run `{run_id}`") and "## Turn 4" in text
    assert "no file 'src/unit.py'" in text and "**completed**" in text
    target = tmp_path / "run.json"
    assert main(["--home", str(home), "export", run_id, "--format", "json", "-o", str(target)]) == 0
    assert "wrote run" in capsys.readouterr().err
    document = json.loads(target.read_text(encoding="utf-8"))
    assert document["run_id"] == run_id and document["events"][0]["type"] == "run_start"
    loop = demo_run(home, "duplicate-call-loop")
    assert main(["--home", str(home), "export", loop]) == 0
    text = capsys.readouterr().out
    assert "## Turn 2 · " in text and " out tokens, " in text
    assert "**Tool `search_files`** (`call_s2_0`, not run)" in text
    assert "Last text (not an answer):" in text and "Final answer:" not in text
    assert main(["--home", str(home), "export", "ffffffff"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_runs_list_costs_when_priced(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["--home", str(home), "runs"]) == 0
    assert "COST" not in capsys.readouterr().out
    (home / "prices.toml").write_text(
        'currency = "€"\n[models."scripted-demo"]\ninput = 1_000_000\noutput = 1_000_000\n',
        encoding="utf-8",
    )
    assert main(["--home", str(home), "runs", "--json"]) == 0
    runs = json.loads(capsys.readouterr().out)
    assert all(r["cost"] == r["input_tokens"] + r["output_tokens"] for r in runs)
    assert main(["--home", str(home), "runs"]) == 0
    out = capsys.readouterr().out
    assert "COST" in out.splitlines()[0]
    first = runs[0]
    assert f"€{first['cost']:.2f}" in out


def test_a_run_summary_prices_its_tokens(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "prices.toml").write_text(
        '[models."scripted"]\ninput = 1_000_000\noutput = 0\n', encoding="utf-8"
    )
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"content": "hi"}]), encoding="utf-8")
    run = ["--home", str(home), "run", "Say hi.", "--script", str(script), "--root", str(tmp_path)]
    assert main(run) == 0
    [summary] = [line for line in capsys.readouterr().out.splitlines() if line.startswith("run ")]
    assert "tokens ($" in summary


def test_runs_filter_by_kind(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    loop = demo_run(home, "duplicate-call-loop")
    assert main(["--home", str(home), "fork", loop, "--turn", "2", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["--home", str(home), "runs", "--kind", "fork", "--json"]) == 0
    forks = json.loads(capsys.readouterr().out)
    assert [(r["origin"], r["parent_run_id"]) for r in forks] == [("fork", loop)]
    assert main(["--home", str(home), "runs", "--kind", "agent", "--failed", "--json"]) == 0
    failed = json.loads(capsys.readouterr().out)
    assert len(failed) == 4 and {r["origin"] for r in failed} == {"agent"}
    assert main(["--home", str(home), "runs", "--kind", "fork", "--kind", "agent"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "KIND" in out[0] and len(out) == 1 + 7
    assert sum("  fork  " in line for line in out) == 1
    assert main(["--home", str(home), "runs", "--kind", "mcp_session"]) == 0
    assert "no runs" in capsys.readouterr().out
    # The labels the lists show name the same kinds.
    assert main(["--home", str(home), "runs", "--kind", "run", "--failed", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == failed
    assert main(["--home", str(home), "runs", "--kind", "mcp"]) == 0
    assert "no runs" in capsys.readouterr().out
    with pytest.raises(SystemExit) as usage:
        main(["--home", str(home), "runs", "--kind", "samples"])
    assert usage.value.code == 2
    assert "unknown kind 'samples'; one of agent, fork" in capsys.readouterr().err


def test_search_finds_a_tool_by_its_name_and_says_what_it_searched(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["--home", str(home), "search", "CALCULATOR", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    completed = demo_run(home, "completed")
    assert {"run_id": completed, "where": "tool_name", "snippet": "calculator"}.items() <= next(
        hit for hit in hits if hit["run_id"] == completed
    ).items()
    assert main(["--home", str(home), "search", "nothing like this"]) == 1
    said = capsys.readouterr().out
    assert "no run mentions 'nothing like this'" in said
    assert "searched tasks, messages, tool names, arguments and results" in said
