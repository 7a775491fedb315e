"""`workbench why RUN` as a real process (issue 38, part 3), on generated runs whose cause is
known (`tests/support/why_runs.py`): mocking the failed call with the passing run's result
flips the outcome, and the decoy (the tool description the failing run was offered) does
not; with no model configured, serve-model over the passing run verifies what it can."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.processes import workbench_at
from tests.support.why_runs import WhyHome, why_home
from traces.store import TraceStore


def _why(known: WhyHome, *argv: str) -> dict[str, Any]:
    done = workbench_at(known.home, "why", known.failing[:10], "--json", *argv)
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def _by_kind(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {cause["kind"]: cause for cause in report["causes"]}


def test_the_cause_flips_the_outcome_and_the_decoy_does_not(tmp_path: Path) -> None:
    known = why_home(tmp_path)
    report = _why(known, "--script", str(known.script), "--samples", "2")

    causes = _by_kind(report)
    cause, decoy = causes["first_error"], causes["tool_changed"]
    assert cause["verification"]["verdict"] == "fixes"
    assert cause["verification"]["summary"] == (
        "fixed in 2 of 2 samples; the failing signature gone in 2 of 2"
    )
    assert cause["fix"]["mocks"] == {"call_s1_0": "1: units: 3 (alpha, beta, gamma)"}
    assert next((e["seq"], e["turn"], e["call_id"]) for e in cause["evidence"]) == (
        8,
        1,
        "call_s1_0",
    )
    assert decoy["verification"]["verdict"] == "no_effect"
    assert decoy["verification"]["summary"].startswith("fixed in 0 of 2 samples")
    # Ranked: what flipped the outcome first, the decoy last.
    assert report["causes"][0]["verification"]["verdict"] == "fixes"
    assert report["causes"][-1]["kind"] == "tool_changed"
    assert {"repeated_call", "limit_hit", "left_passing_path"} <= causes.keys()
    # The forks are ordinary runs, linked to the failed one.
    with TraceStore.for_reading(known.home) as store:
        forks = store.runs(run_ids=report["forks"])
    assert len(forks) == 4 and {f.parent_run_id for f in forks} == {known.failing}


def test_with_no_model_serve_model_over_the_passing_run_verifies_the_mock(
    tmp_path: Path,
) -> None:
    known = why_home(tmp_path, decoy=False)
    report = _why(known, "--samples", "2")

    assert report["model"] == "serve-model over 1 passing run(s)"
    first = _by_kind(report)["first_error"]["verification"]
    assert (first["verdict"], first["fixed"], first["signature_gone"]) == ("fixes", 2, 2)
    assert report["passing_runs"] == [known.passing]


def test_a_fix_no_passing_run_recorded_needs_a_model_never_verified(tmp_path: Path) -> None:
    # The failing run was offered another description: no fixed request is one a passing
    # run sent, so serve-model answers none of them.
    report = _why(why_home(tmp_path), "--samples", "1")

    causes = _by_kind(report)
    for kind in ("first_error", "tool_changed"):
        found = causes[kind]["verification"]
        assert found["verdict"] == "needs_model", found
        assert "no passing run recorded the fixed request" in found["note"]


def test_a_model_failing_mid_verification_is_named_in_the_report(tmp_path: Path) -> None:
    known = why_home(tmp_path, decoy=False)
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps([{"error": {"status": 400, "message": "the model crashed"}}]))
    report = _why(known, "--script", str(broken), "--samples", "2")

    found = _by_kind(report)["first_error"]["verification"]
    assert found["verdict"] == "not_verified"
    assert "the model failed mid-verification" in found["note"]
    assert "the model crashed" in found["note"]


def test_max_cost_stops_live_forks_before_any_call(tmp_path: Path) -> None:
    known = why_home(tmp_path, decoy=False)
    (known.home / "prices.toml").write_text('[models."big"]\ninput = 100.0\noutput = 100.0\n')
    # Nothing listens there: a call would fail, so a verdict other than the cap's shows one.
    argv = ["--model", "big", "--base-url", "http://127.0.0.1:9/v1", "--max-cost", "0.001"]
    report = _why(known, *argv)

    found = _by_kind(report)["first_error"]["verification"]
    assert found["verdict"] == "not_verified" and found["forks"] == []
    assert "would pass --max-cost 0.001" in found["note"]
    assert report["spent"] == 0


def test_text_markdown_and_bad_input(tmp_path: Path) -> None:
    known = why_home(tmp_path, decoy=False)
    text = workbench_at(known.home, "why", known.failing[:10], "--samples", "1")
    assert text.returncode == 0, text.stderr
    assert "1. " in text.stdout and "✔ verified: fixed in 1 of 1 sample;" in text.stdout
    markdown = workbench_at(known.home, "why", known.failing[:10], "--markdown", "--samples", "1")
    assert markdown.stdout.startswith(f"## why run {known.failing} ended duplicate_tool_calls")

    passing = workbench_at(known.home, "why", known.passing)
    assert passing.returncode == 0
    assert passing.stdout.strip() == f"run {known.passing} completed: nothing to explain"

    unknown = workbench_at(known.home, "why", "nosuchrun")
    assert unknown.returncode != 0 and "Traceback" not in unknown.stderr
    assert unknown.stderr.strip() == (
        "workbench: no run id starts with 'nosuchrun'; `workbench runs` lists them"
    )
