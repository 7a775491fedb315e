"""mcp-serve and review (issue 39, parts 4 and 5): `check_rules` answers what `workbench
check --json` prints and writes nothing; `judge_runs` scores runs as `workbench judge`
does (the scores are annotations show_run lists), only on a server started with
--allow-writes, skipping what the rubric's version judged and keeping its cost cap."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.mcp.test_mcp_serve import call, demo_home, demo_runs, refused, served  # noqa: F401
from tests.review.test_judge_cli import RUBRIC, VERDICT

RULES = """
[[rule]]
name = "failing"
metric = "failure_rate"
above = 0.5

[[rule]]
name = "new failures"
metric = "new_failures"

[[rule]]
name = "walk labels"
metric = "label_count"
label = "walk"
above = 0
"""


@pytest.fixture
def home(demo_home: Path, tmp_path: Path) -> Path:  # noqa: F811
    copy = tmp_path / "home"
    shutil.copytree(demo_home, copy)
    (copy / "rules.toml").write_text(RULES, encoding="utf-8")
    (copy / "helpful.toml").write_text(RUBRIC, encoding="utf-8")
    # Each judge call bills its whole output cap (100 tokens) at $100 per million: $0.01.
    usage = {"prompt_tokens": 0, "completion_tokens": 100, "total_tokens": 100}
    script = {"name": "judge-m", "steps": [{"content": VERDICT, "usage": usage}]}
    (copy / "judge.json").write_text(json.dumps(script), encoding="utf-8")
    (copy / "prices.toml").write_text('[models."judge-m"]\ninput = 0\noutput = 100\n')
    return copy


async def test_check_rules_says_what_crossed_and_writes_nothing(home: Path, tmp_path: Path) -> None:
    async with served(home) as session:  # read-only
        answer = await call(session, "check_rules", rules="rules.toml")
        found = {f["rule"]: f for f in answer["findings"]}
        assert answer["rules"] == 3 and answer["crossed"] == 2
        # The demo's six runs: four of them did not complete.
        assert found["failing"]["crossed"] and found["failing"]["value"] == pytest.approx(4 / 6)
        assert found["new failures"]["crossed"] and len(found["new failures"]["new"]) >= 2
        assert not found["walk labels"]["crossed"] and found["walk labels"]["value"] == 0
        # A look, not a check: the new signatures are new again next time.
        again = await call(session, "check_rules", rules="rules.toml")
        assert again == answer
        (home / "bad.toml").write_text('[[rule]]\nname = "x"\nmetric = "nope"\n')
        assert "rule 'x': metric must be one of" in await refused(
            session, "check_rules", rules="bad.toml"
        )
        (tmp_path / "outside.toml").write_text(RULES)
        assert "inside the home" in await refused(
            session, "check_rules", rules=str(tmp_path / "outside.toml")
        )
    assert not (home / "check-state.json").exists()


async def test_judge_runs_writes_scores_only_with_writes_allowed(home: Path) -> None:
    async with served(home) as session:
        reason = await refused(session, "judge_runs", rubric="helpful.toml", since_days=1)
        assert "read-only" in reason and "--allow-writes" in reason
    async with served(home, "--allow-writes") as session:
        runs = await demo_runs(session)
        walk, done = runs["max_turns"]["run_id"], runs["completed"]["run_id"]
        report = await call(
            session, "judge_runs", rubric="helpful.toml", runs=[walk[:8], done],
            script="judge.json",
        )  # fmt: skip
        assert (report["judged"], report["not_judged"], report["skipped"]) == (2, 0, 0)
        assert report["spent"] == pytest.approx(0.02) and report["note"] is None
        assert {v["run_id"] for v in report["verdicts"]} == {walk, done}
        shown = await call(session, "show_run", run=walk)
        [note] = shown["annotations"]
        assert (note["author"], note["scores"]) == ("judge:helpful", {"helpful": 0.5})
        assert note["text"] == "half an answer"

        # Judged again: what this rubric version judged is skipped; the cap holds exactly.
        every = await call(
            session, "judge_runs", rubric="helpful.toml", since_days=1, script="judge.json",
            max_cost=0.025,
        )  # fmt: skip
        assert every["skipped"] == 2 and every["judged"] == 2
        assert every["spent"] == pytest.approx(0.02) and every["left"] == 2
        assert every["stopped"] and "0.025" in every["stopped"]

        wrongs: list[tuple[dict[str, object], str]] = [
            ({"runs": [walk]} | {"since_days": 1}, "one of runs or since_days"),
            ({"runs": [walk], "sample": 1.5}, "sample must be a share"),
            ({"runs": [walk], "rubric": "nope.toml"}, "no rubric file"),
            ({"runs": [walk], "script": "../judge.json"}, "inside the home"),
        ]
        for wrong, said in wrongs:
            arguments: dict[str, object] = {"rubric": "helpful.toml", "script": "judge.json"}
            arguments |= wrong
            assert said in await refused(session, "judge_runs", **arguments)
    (home / "prices.toml").unlink()
    async with served(home, "--allow-writes") as session:
        reason = await refused(
            session, "judge_runs", rubric="helpful.toml", since_days=1, script="judge.json",
            max_cost=1.0,
        )  # fmt: skip
        assert reason.startswith("max_cost needs a price for the judge model 'judge-m'")
