"""`workbench stats` as a real process (issue 25, item 11): runs, failures, tokens, cost
and latency by day and by model, as charts and as JSON, agreeing with `workbench runs`;
and a store of a million runs counted in SQL, never loaded into Python."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from tests.support.processes import workbench_at, workbench_peak
from tests.support.stats_home import OTHER_MODEL, spread_runs

_workbench = workbench_at


def _by(runs: list[dict[str, Any]], key: str) -> dict[str, dict[str, float]]:
    found: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for run in runs:
        group = run["started_at"][:10] if key == "day" else run["model"]
        found[group]["runs"] += 1
        found[group]["failures"] += run["status"] != "completed"
        found[group]["tokens"] += run["total_tokens"] or 0
        found[group]["cost"] += run["cost"] or 0
    return found


def test_stats_json_agrees_with_the_runs_by_day_and_by_model(tmp_path: Path) -> None:
    home = spread_runs(tmp_path / "home")
    listed = _workbench(home, "runs", "--json", "--limit", "1000")
    assert listed.returncode == 0, listed.stderr
    runs = json.loads(listed.stdout)
    result = _workbench(home, "stats", "--json")
    assert result.returncode == 0, result.stderr
    stats = json.loads(result.stdout)

    assert stats["total"]["runs"] == len(runs) == 8
    assert stats["total"]["failures"] == sum(r["status"] != "completed" for r in runs)
    assert stats["last_day"] == "2026-11-30" and stats["first_day"] == "2026-11-01"
    assert len(stats["by_day"]) == 30  # every day of the window, empty ones included
    days = {row["key"]: row for row in stats["by_day"]}
    for day, expected in _by(runs, "day").items():
        assert days[day]["runs"] == expected["runs"], day
        assert days[day]["failures"] == expected["failures"], day
        assert days[day]["tokens"] == expected["tokens"], day
        assert abs((days[day]["cost"] or 0) - expected["cost"]) < 1e-9, day
    assert days["2026-11-27"]["runs"] == 0 and days["2026-11-27"]["cost"] is None
    models = {row["key"]: row for row in stats["by_model"]}
    assert set(models) == {OTHER_MODEL, "gpt-4o-mini-2024-07-18"}
    for model, expected in _by(runs, "model").items():
        assert models[model]["runs"] == expected["runs"]
        assert abs((models[model]["cost"] or 0) - expected["cost"]) < 1e-9
    assert stats["by_model"][0]["key"] == "gpt-4o-mini-2024-07-18"  # most runs first
    durations = sorted(r["duration_ms"] for r in runs if r["duration_ms"] is not None)
    assert stats["total"]["p95_ms"] <= durations[-1]
    assert stats["total"]["p50_ms"] >= durations[0]

    week = json.loads(_workbench(home, "stats", "--json", "--days", "2").stdout)
    assert [row["key"] for row in week["by_day"]] == ["2026-11-29", "2026-11-30"]
    assert week["total"]["runs"] == sum(1 for r in runs if r["started_at"][:10] >= "2026-11-29")


def test_stats_draws_charts_in_the_terminal(tmp_path: Path) -> None:
    home = spread_runs(tmp_path / "home")
    result = _workbench(home, "stats", "--days", "3")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("runs from 2026-11-28 to 2026-11-30")
    assert "8 runs · 7 failed (88%)" in lines[1] and "$" in lines[1]
    sparks = {line.split("│")[0].strip(): line.split("│")[1] for line in lines if "│" in line}
    assert set(sparks) == {"runs", "failed", "tokens", "cost", "p95 latency"}
    assert all(len(spark) == 3 for spark in sparks.values())  # one column a day
    assert sparks["runs"][-1] == "█"  # the busiest day is the last
    day_rows = [line for line in lines if line.startswith("2026-11-")]
    assert len(day_rows) == 3
    assert all("█" in row or "▒" in row for row in day_rows)
    assert any(line.startswith(OTHER_MODEL) and "▒" in line for line in lines)


def test_stats_without_prices_and_its_usage_errors(tmp_path: Path) -> None:
    home = spread_runs(tmp_path / "home", priced=False)
    result = _workbench(home, "stats", "--json")
    stats = json.loads(result.stdout)
    assert stats["currency"] is None and stats["total"]["cost"] is None
    assert "cost" not in _workbench(home, "stats").stdout
    for argv, said in (
        (["stats", "--days", "0"], "--days"),
        (["stats", "--kind", "nonsense"], "unknown kind"),
    ):
        bad = _workbench(home, *argv)
        assert bad.returncode == 2 and said in bad.stderr and "Traceback" not in bad.stderr
    samples = json.loads(_workbench(home, "stats", "--json", "--kind", "sample").stdout)
    assert samples["total"]["runs"] == 0 and samples["kinds"] == ["regression_sample"]
    (home / "prices.toml").write_text("[models\n")
    bad = _workbench(home, "stats")
    assert bad.returncode == 2 and "prices.toml" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr


def test_a_million_runs_are_counted_in_sql_not_in_python(tmp_path: Path) -> None:
    from traces.store import TraceStore

    home = tmp_path / "home"
    (home / "traces").mkdir(parents=True)
    with TraceStore.for_home(home) as store:
        store.query(
            """
            INSERT INTO runs (run_id, started_at, model, status, total_tokens, duration_ms,
                origin)
            SELECT printf('%032x', i),
                TIMESTAMPTZ '2026-11-30 12:00:00+00' - to_days(CAST(i % 10 AS INTEGER)),
                CASE WHEN i % 4 = 0 THEN 'model-a' ELSE 'model-b' END,
                CASE WHEN i % 5 = 0 THEN 'error' ELSE 'completed' END,
                100, i % 1000, 'agent'
            FROM range(1000000) t(i)
            """
        )
    result, peak_kb = workbench_peak(home, tmp_path, "stats", "--json", timeout=300)
    assert result.returncode == 0, result.stderr
    stats = json.loads(result.stdout)
    assert stats["total"]["runs"] == 1_000_000 and stats["total"]["failures"] == 200_000
    assert stats["total"]["tokens"] == 100_000_000
    assert {r["key"]: r["runs"] for r in stats["by_model"]} == {
        "model-b": 750_000,
        "model-a": 250_000,
    }
    assert [r["runs"] for r in stats["by_day"][-10:]] == [100_000] * 10
    # A million rows in Python would take the process past a gigabyte; counting in DuckDB
    # keeps it near what the interpreter and DuckDB need to start.
    assert peak_kb < 600_000, f"workbench stats peaked at {peak_kb // 1024} MB"


def test_stats_of_a_new_home_lists_only_its_days_with_runs(tmp_path: Path) -> None:
    """The 30-day window starts at the home's first day with runs, and days without runs
    between two that have some are one line, not a row of zeros each (issue 42)."""
    home = spread_runs(tmp_path / "home")  # runs on 2026-11-28, 29 and 30
    lines = _workbench(home, "stats").stdout.splitlines()
    assert lines[0].startswith("runs from 2026-11-28 to 2026-11-30")
    day_rows = [line for line in lines if line.startswith("2026-")]
    assert [row.split()[0] for row in day_rows] == ["2026-11-28", "2026-11-29", "2026-11-30"]
    assert not any("without runs" in line for line in lines)

    # One more run, a week before the others: the quiet days between are one line.
    source = sorted((home / "traces").glob("*.jsonl"))[0]
    early = [json.loads(line) for line in source.read_text().splitlines()[:-1]]
    for event in early:
        event |= {"run_id": "e" * 32, "ts": "2026-11-20" + event["ts"][10:]}
    (home / "traces" / f"{'e' * 32}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in early))
    lines = _workbench(home, "stats").stdout.splitlines()
    day_rows = [line for line in lines if line.startswith("2026-")]
    assert len(day_rows) == 4 and all(row.split()[-5] != "0" for row in day_rows)
    [quiet] = [line for line in lines if "without runs" in line]
    assert quiet.strip().startswith("(") and "days without runs)" in quiet
