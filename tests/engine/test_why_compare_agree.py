"""`workbench why` and `workbench compare` say one thing of where a failing run left the
passing runs' path: why's `left_passing_path` cause is compare's departure
(`compare.left_path`), read here from both commands' `--json` as real processes on
generated runs whose departures are known (tests/support/failing_runs). Why counts a call's
result text in its steps (a result unlike the passing runs' is one a mock can test);
compare, over thousands of runs whose results come from the world, does not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.failing_runs import (
    KNOWN_GROUP,
    LIST,
    PASSING,
    Call,
    Script,
    runs_of_one_task,
)
from tests.support.processes import workbench_at
from traces.store import TraceStore
from workbench.engine.analysis.compare import left_path

# A step compare names that no `why` candidate stands for: the first error's and the
# limit's candidates say those.
NOT_A_DEPARTURE_CAUSE = ("error", "limit", "stopped")


def _home(tmp_path: Path, scripts: list[tuple[str, int, Script]]) -> Path:
    home = tmp_path / "home"
    (home / "traces").mkdir(parents=True)
    runs_of_one_task(home / "traces", scripts)
    return home


def _json(home: Path, *argv: str, code: int) -> dict[str, Any]:
    done = workbench_at(home, *argv, "--json")
    assert done.returncode == code, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def _left_path_cause(home: Path, run_id: str) -> dict[str, Any] | None:
    report = _json(home, "why", run_id, "--samples", "1", code=0)
    causes = [c for c in report["causes"] if c["kind"] == "left_passing_path"]
    assert len(causes) <= 1
    return causes[0] if causes else None


def test_why_names_the_step_compare_names_for_each_failing_run(tmp_path: Path) -> None:
    home = _home(tmp_path, KNOWN_GROUP)
    compared = _json(home, "compare", "--task", "pass-0", "--examples", "20", code=1)
    variant_of = {run: v for v in compared["variants"] for run in v["run_ids"]}
    # One failing run of each variant that has failing runs.
    failing = ["searchfail-0", "args-0", "broken-0", "dup-0", "late-0", "merr-0"]

    for run_id in failing:
        departure = variant_of[run_id]["departure"]
        cause = _left_path_cause(home, run_id)
        if departure["how"] in NOT_A_DEPARTURE_CAUSE:
            assert cause is None, (run_id, cause)
            continue
        assert cause is not None, run_id
        # The variant's step is its first run's; the runs of one script share their seqs.
        evidence = cause["evidence"][0]
        step = departure["step"]
        assert (evidence["seq"], evidence["turn"]) == (step["seq"], step["turn"]), run_id
        says = cause["title"].split(": ", 1)[1]
        assert says in variant_of[run_id]["says"], (run_id, says)
    hows = {variant_of[run]["departure"]["how"] for run in failing}
    assert hows == {"other_tool", "other_arguments", "tool_error", "not_run", "limit", "error"}


# The file read as it was before the change: read_file goes as the path's went, with
# another text, and the run goes on to its limit.
STALE = Script(
    (LIST, Call("read_file", {"path": "units.txt"}, result="metre second")),
    status="max_turns",
    reason="reached max_turns=3",
)


def test_why_counts_a_results_text_where_compare_does_not(tmp_path: Path) -> None:
    home = _home(tmp_path, [("pass", 2, PASSING), ("stale", 1, STALE)])

    compared = _json(home, "compare", "--task", "pass-0", code=1)
    (variant,) = compared["variants"]
    assert (variant["departure"]["position"], variant["departure"]["how"]) == (2, "limit")
    cause = _left_path_cause(home, "stale-0")
    assert cause is not None
    assert cause["title"] == (
        "left the passing runs' path at turn 2: got another result from `read_file` than "
        "the passing runs"
    )
    evidence = cause["evidence"][0]
    assert (evidence["turn"], evidence["call_id"]) == (2, "call_stale-0_2")
    # One function says both, with and without the result's text in a step's key.
    with TraceStore.for_home(home) as store:
        store.ingest_home(home)
        counted = left_path(store, "stale-0", results=True).departure
        uncounted = left_path(store, "stale-0").departure
    assert counted is not None and uncounted is not None
    assert (counted.position, counted.how) == (1, "other_result")
    assert [d.what for d in counted.diffs] == ["result"]
    assert (uncounted.position, uncounted.how) == (2, "limit")
