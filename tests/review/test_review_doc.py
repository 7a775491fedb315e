"""docs/review.md's loop on the demo, run as the page writes it: review the failed runs,
label one, turn the label into cases, run the suite, judge the rest, check. The commands,
the rubric, the rules and the judge's script are read from the page; only the run ids
(the demo's differ each time) and the webhook's address (a real local receiver) change."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from tests.review.test_check_cli import Receiver
from tests.support.demo import demo_run
from workbench.cli import main

DOC = Path(__file__).resolve().parents[2] / "docs" / "review.md"
# The ids the page shows, of its own demo home: (the scenario, as a 12-character id).
PAGE_RUNS = {"max-turns": "7907580e842e", "completed": "8279234c8b6d"}


def _section(text: str, heading: str) -> str:
    return text.split(f"\n## {heading}", 1)[1].split("\n## ", 1)[0]


def _block(section: str, kind: str) -> str:
    found = re.search(rf"```{kind}\n(.*?)\n```", section, flags=re.S)
    assert found is not None, f"no {kind} block"
    return found.group(1) + "\n"


def test_the_loop_on_the_demo_runs_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    page = DOC.read_text(encoding="utf-8")
    loop = _section(page, "The loop on the demo")
    (tmp_path / "helpful.toml").write_text(_block(_section(page, "Judges"), "toml"))
    (tmp_path / "rules.toml").write_text(_block(_section(page, "Checks"), "toml"))
    script = re.search(r"`(\{\"name\": \"scripted-judge\".*?\})`", loop)
    assert script is not None
    json.loads(script.group(1))  # the page's script is JSON
    (tmp_path / "judge-script.json").write_text(script.group(1))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("WORKBENCH_HOME", raising=False)
    monkeypatch.setenv("WORKBENCH_AUTHOR", "alice")

    console = _block(loop, "console")
    commands: list[tuple[str, list[str]]] = []  # each command and the lines it prints
    for line in console.splitlines():
        if line.startswith("$ "):
            commands.append((line[2:].split("  #")[0].strip(), []))
        else:
            commands[-1][1].append(line)
    assert [c.split()[1] for c, _ in commands] == [
        "demo", "runs", "review", "note", "note", "capture-case", "test", "judge", "check",
    ]  # fmt: skip
    ran: dict[str, int] = {}
    with Receiver([]) as receiver:
        for command, printed in commands:
            name = command.split()[1]
            if name == "review":
                continue  # it needs a terminal: tests/review/test_review_cli.py drives it
            for scenario, page_id in PAGE_RUNS.items():
                real = demo_run(tmp_path / ".workbench", scenario) if name != "demo" else ""
                command = command.replace(page_id[:8], real[:8])
                printed = [
                    p.replace(page_id, real[:12]).replace(page_id[:8], real[:8]) for p in printed
                ]
            command = command.replace("http://127.0.0.1:8080/hook", receiver.url)
            capsys.readouterr()
            code = main(shlex.split(command)[1:])
            out, err = capsys.readouterr()
            assert "Traceback" not in err, command
            ran[name] = code
            if printed:
                assert out.splitlines() == printed, command
            assert code in ((0, 1) if name in ("check",) else (0,)), f"{command}: {out}{err}"
    assert ran["check"] == 1  # most of the demo's runs fail, as the page says
    [summary] = receiver.bodies
    assert summary["crossed"] >= 1 and summary["rules"] == 3
    assert (tmp_path / "walk.wbsuite.toml").is_file()
