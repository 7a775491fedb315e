"""`workbench judge` through the CLI on a real home: a scripted judge over 100 generated
runs within an exact cost cap, skipping what a rubric version judged, deterministic
samples, a judge answering garbage for one run (a real local OpenAI-compatible server),
and bad rubric files as one line."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.support.failing_runs import failing_run
from tests.support.in_process import wb
from tests.support.servers import text_chunks
from traces.home import traces_dir
from workbench.engine.http.model_server import ModelServer, Reply

RUBRIC = """
[rubric]
name = "helpful"
version = 1
target = "answer"
instructions = "Score how well the agent's final answer addresses its task."
max_output_tokens = 100

[scores]
helpful = "1: answers the task fully; 0: not at all"
"""
VERDICT = '{"helpful": 0.5, "reason": "half an answer"}'
START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def make_home(home: Path, runs: int) -> list[str]:
    ids = [f"run{n:03d}" + "0" * 26 for n in range(runs)]
    for n, run_id in enumerate(ids):
        failing_run(
            traces_dir(home),
            run_id,
            at=START + timedelta(minutes=n),
            status="completed",
            reason="done",
            before=(),
            tool=None,
        )
    return ids


def judge_json(home: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code, out, err = wb(home, capsys, "judge", str(home / "rubric.toml"), *argv, "--json")
    assert code in (0, 1), err
    report: dict[str, Any] = json.loads(out)
    return report | {"exit": code, "stderr": err}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / "traces").mkdir(parents=True)
    (home / "rubric.toml").write_text(RUBRIC, encoding="utf-8")
    # Each call bills exactly its output cap (100 tokens) at $100 per million: $0.01.
    usage = {"prompt_tokens": 0, "completion_tokens": 100, "total_tokens": 100}
    step = {"content": VERDICT, "usage": usage}
    (home / "judge.json").write_text(json.dumps({"name": "judge-m", "steps": [step]}))
    (home / "prices.toml").write_text('[models."judge-m"]\ninput = 0\noutput = 100\n')
    return home


def notes_by_judge(home: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    code, out, err = wb(
        home,
        capsys,
        "sql",
        "SELECT run_id, scores, text FROM annotations "
        "WHERE author = 'judge:helpful' ORDER BY run_id",
        "--json",
    )
    assert code == 0, err
    rows: list[dict[str, Any]] = json.loads(out)
    return rows


def test_a_judge_over_100_runs_stops_exactly_at_its_cost_cap(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = make_home(home, 100)
    script = ["--script", str(home / "judge.json")]
    first = judge_json(home, capsys, "--since", "2026-11-30", "--max-cost", "0.5", *script)
    assert first["exit"] == 1  # stopped by the cap: not everything asked for was judged
    assert first["judged"] == 50 and first["left"] == 50 and first["runs"] == 100
    assert first["spent"] == pytest.approx(0.5) and first["next_cost"] == pytest.approx(0.01)
    assert "would pass --max-cost 0.5" in first["stopped"]
    notes = notes_by_judge(home, capsys)
    assert [row["run_id"] for row in notes] == ids[:50]  # oldest first
    assert notes[0]["text"] == "half an answer"

    # Each verdict is a recorded run, linked from its annotation, that replays.
    verdict = first["verdicts"][0]
    code, out, _ = wb(home, capsys, "sql", "SELECT record FROM annotation_records", "--json")
    links = {json.loads(row["record"])["judge"]["run"] for row in json.loads(out)}
    assert verdict["judge_run"] in links and len(links) == 50
    assert (traces_dir(home) / f"{verdict['judge_run']}.jsonl").is_file()
    code, out, err = wb(home, capsys, "replay", verdict["judge_run"][:12])
    assert code == 0, out + err

    # Again, with room for all: the 50 judged are skipped, the judge runs are not judged.
    again = judge_json(home, capsys, "--since", "2026-11-30", "--max-cost", "5", *script)
    assert again["exit"] == 0 and again["judged"] == 50 and again["skipped"] == 50
    assert len(notes_by_judge(home, capsys)) == 100


def test_samples_are_the_same_for_a_seed(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_home(home, 40)
    ids = [f"run{n:03d}" for n in range(40)]
    flags = ["--script", str(home / "judge.json"), "--sample", "0.25"]
    one = judge_json(home, capsys, *ids, *flags, "--seed", "7")
    picked = {v["run_id"] for v in one["verdicts"]}
    assert 0 < len(picked) < 40
    # A second judge draws the same sample: everything in it was judged already.
    two = judge_json(home, capsys, *ids, *flags, "--seed", "7")
    assert two["runs"] == len(picked) and two["judged"] == 0 and two["skipped"] == len(picked)
    other = judge_json(home, capsys, *ids, *flags, "--seed", "8")
    assert {v["run_id"] for v in other["verdicts"]} != picked


def test_a_judge_answering_garbage_for_one_run_leaves_it_unjudged(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = make_home(home, 3)
    (home / "traces" / f"{ids[1]}.jsonl").write_text(
        (home / "traces" / f"{ids[1]}.jsonl").read_text().replace("read the units", "say garbage")
    )

    def answer(body: dict[str, Any]) -> Reply:
        asked = json.dumps(body["messages"])
        text = "I think it is fine!" if "say garbage" in asked else VERDICT
        return Reply(chunks=text_chunks(text))

    with ModelServer(answer, model="judge-m") as server:
        code, out, err = wb(
            home,
            capsys,
            "judge",
            str(home / "rubric.toml"),
            *ids,
            "--base-url",
            server.base_url,
            "--model",
            "judge-m",
            "--api-key",
            "sk-secret-judge",
        )
    assert code == 1, err
    lines = out.splitlines()
    assert f"not judged {ids[1][:12]}: no JSON object in the judge's answer" in out
    assert sum("helpful=0.5" in line for line in lines) == 2
    assert lines[-1].startswith("judged 2 item(s) of 2 of 3 run(s)")
    assert [row["run_id"] for row in notes_by_judge(home, capsys)] == [ids[0], ids[2]]
    assert not any("sk-secret-judge" in p.read_text() for p in traces_dir(home).iterdir())


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[rubric]\nname = 'x'\n", "instructions must say what to judge"),
        (RUBRIC.replace('target = "answer"', 'target = "vibes"'), "target must be one of"),
        (RUBRIC.replace("[scores]", "[scorez]"), "unknown section 'scorez'"),
        ("not toml [", "not valid TOML"),
    ],
)
def test_a_bad_rubric_is_one_line(
    home: Path, capsys: pytest.CaptureFixture[str], text: str, problem: str
) -> None:
    (home / "rubric.toml").write_text(text, encoding="utf-8")
    code, _, err = wb(home, capsys, "judge", str(home / "rubric.toml"), "--since", "1d")
    assert code == 2 and problem in err and err.count("\n") == 1


def test_a_cap_needs_the_judge_models_price(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_home(home, 1)
    (home / "prices.toml").unlink()
    script = ["--script", str(home / "judge.json")]
    code, _, err = wb(
        home,
        capsys,
        "judge",
        str(home / "rubric.toml"),
        "--since",
        "2026-11-30",
        "--max-cost",
        "1",
        *script,
    )
    assert code == 2 and "--max-cost needs a price for the judge model 'judge-m'" in err
    code, out, err = wb(
        home, capsys, "judge", str(home / "rubric.toml"), "--since", "2026-11-30", *script
    )
    assert code == 0 and "has no price" in err and "(cost unknown)" in out
