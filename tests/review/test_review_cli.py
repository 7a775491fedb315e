"""`workbench review` through the CLI: a bad labels file and an unknown failure group are one
line each, a queue with nothing left says so, output that is no terminal is refused in one
line; and in a real terminal (a pty) the command opens the review screen, where one key
labels the run shown, on the default queue and on a failure group's."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest

from tests.review.test_queue import START, make_runs
from tests.support.failing_runs import failing_run
from traces.annotations import author_file
from traces.home import traces_dir
from workbench.cli import main
from workbench.engine.review.labels import labels_file


def wb(home: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["--home", str(home), *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_review_off_a_terminal_and_its_mistakes_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_runs(tmp_path, failed=3, completed=1)
    code, out, err = wb(tmp_path, capsys, "review")
    assert code == 2 and out == ""
    assert err.strip() == (
        "workbench: workbench review needs a terminal (its output is not one); 3 run(s) to "
        "review: `workbench runs` with the same filters lists them"
    )
    labels_file(tmp_path).write_text('[keys]\ns = "slow"\n')
    code, _, err = wb(tmp_path, capsys, "review")
    assert code == 2 and len(err.splitlines()) == 1
    assert "labels.toml: key 's' is the review screen's skip key; choose another" in err
    labels_file(tmp_path).unlink()
    code, _, err = wb(tmp_path, capsys, "review", "--signature", "0badc0de")
    assert code == 2 and len(err.splitlines()) == 1
    assert "no failure group has the signature '0badc0de'; `workbench failures` lists them" in err
    code, out, _ = wb(tmp_path, capsys, "review", "--status", "completed", "--unreviewed")
    assert code == 2  # one completed run, unreviewed: a terminal is needed for it
    code, out, err = wb(tmp_path, capsys, "review", "--status", "cancelled")
    assert (code, err) == (0, "")
    assert (
        out.strip()
        == "nothing to review (review --status cancelled): 0 of 0 reviewed · end of the queue"
    )


class Terminal:
    """`workbench` in a pseudo-terminal: what it drew so far, and keys to type."""

    def __init__(self, home: Path, *argv: str) -> None:
        self.fd_parent, child = pty.openpty()
        env = {**os.environ, "TERM": "xterm-256color", "WORKBENCH_AUTHOR": "alice"}
        env.pop("NO_COLOR", None)
        command = [str(Path(sys.executable).with_name("workbench")), "--home", str(home), *argv]
        self.process = subprocess.Popen(
            command, stdin=child, stdout=child, stderr=child, env=env, close_fds=True
        )
        os.close(child)
        self.seen = b""

    def wait_for(self, text: str, deadline_s: float = 60.0) -> None:
        end = time.monotonic() + deadline_s
        while text.encode() not in self.seen:
            left = end - time.monotonic()
            assert left > 0, f"{text!r} never showed; the terminal had: {self.seen[-2000:]!r}"
            ready, _, _ = select.select([self.fd_parent], [], [], left)
            if ready:
                try:
                    self.seen += os.read(self.fd_parent, 65536)
                except OSError:  # the child closed the terminal
                    break
        assert text.encode() in self.seen, f"{text!r} never showed"

    def press(self, keys: str) -> None:
        os.write(self.fd_parent, keys.encode())

    def close(self) -> int:
        """Its exit code, once it quits; killed (the test failing) when it does not."""
        try:
            return self.process.wait(timeout=60)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            os.close(self.fd_parent)

    def __enter__(self) -> Terminal:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process.poll() is None:  # a wait that failed: nothing is left running
            self.process.kill()
            self.process.wait()
            os.close(self.fd_parent)


def labels_written(home: Path) -> list[tuple[str, list[str]]]:
    lines = author_file(home, "alice").read_text().splitlines()
    return [(record["run_id"], record["labels"]) for record in map(json.loads, lines)]


def test_review_in_a_terminal_labels_the_failed_runs(tmp_path: Path) -> None:
    ids = make_runs(tmp_path, failed=2, completed=1)
    with Terminal(tmp_path, "review") as terminal:
        terminal.wait_for("0 of 2 reviewed")
        terminal.press("l")
        terminal.wait_for("1 of 2 reviewed")
        terminal.press("q")
        assert terminal.close() == 0
    assert labels_written(tmp_path) == [(ids[0], ["loop"])]


def test_review_of_a_failure_group_by_its_signature(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_runs(tmp_path, failed=3)  # read_file fails: one group
    for n in range(2):  # the model call fails: another
        at = START + timedelta(hours=1, minutes=n)
        failing_run(traces_dir(tmp_path), f"model{n}", at=at, tool=None, model_error="502")
    code, out, _ = wb(tmp_path, capsys, "failures", "--json")
    assert code == 0
    group = next(g for g in json.loads(out)["groups"] if g["runs"] == 2)
    with Terminal(tmp_path, "review", "--signature", group["signature"]) as terminal:
        terminal.wait_for("0 of 2 reviewed")
        terminal.press("b")
        terminal.wait_for("1 of 2 reviewed")
        terminal.press("q")
        assert terminal.close() == 0
    assert labels_written(tmp_path) == [("model0", ["bad"])]
