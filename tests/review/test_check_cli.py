"""`workbench check` through the CLI on generated runs: thresholds crossed and exit codes,
failure signatures new since the last check, a webhook to a real local HTTP receiver
(retried, redacted, a dead one is one line), and bad rules as one line naming the rule."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.support.failing_runs import failing_run
from traces.home import traces_dir
from workbench.cli import main

SECRET = "sk-check-secret-4242"
RULES = f"""
[[rule]]
name = "units fail"
metric = "failure_rate"
task = "read the units"
window = "1d"
above = 0.5

[[rule]]
name = "slow"
metric = "p95_latency_ms"
above = 600000

[[rule]]
name = "new failures"
metric = "new_failures"

[[rule]]
name = "secret task"
metric = "failure_rate"
task = "{SECRET}"
above = 0.99
"""


class Receiver:
    """A local HTTP server that answers `statuses` in turn (then 200) and keeps bodies."""

    def __init__(self, statuses: list[int]) -> None:
        self.statuses = statuses
        self.bodies: list[dict[str, Any]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                if status == 200:
                    receiver.bodies.append(json.loads(body))
                self.send_response(status)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook?token=t0ken"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    home = tmp_path / "home"
    now = datetime.now(UTC)
    for n in range(4):  # 3 of 4 runs of the task fail, all the same way
        failing_run(
            traces_dir(home),
            f"units{n}" + "0" * 26,
            at=now - timedelta(hours=2, minutes=n),
            status="completed" if n == 0 else "max_turns",
        )
    (home / "rules.toml").write_text(RULES, encoding="utf-8")
    yield home


def check(home: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["--home", str(home), "check", str(home / "rules.toml"), *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_rules_crossed_new_failures_and_a_webhook(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Receiver([503, 503]) as receiver:  # two failures, then delivered
        code, out, err = check(home, capsys, "--json", "--webhook", receiver.url)
    assert code == 1 and err == ""
    summary = json.loads(out)
    by_rule = {f["rule"]: f for f in summary["findings"]}
    assert (
        by_rule["units fail"]["value"] == pytest.approx(0.75) and by_rule["units fail"]["crossed"]
    )
    assert not by_rule["slow"]["crossed"]
    assert by_rule["new failures"]["value"] == 1 and by_rule["new failures"]["crossed"]
    assert receiver.bodies and receiver.bodies[0]["crossed"] == summary["crossed"] == 2
    assert SECRET not in json.dumps(receiver.bodies) and SECRET in out  # redacted on the wire

    # Since the last check nothing new failed: that rule is quiet now.
    code, out, _ = check(home, capsys)
    assert code == 1 and "ok       new failures: new_failures 0" in out
    failing_run(
        traces_dir(home), "other" + "0" * 27, at=datetime.now(UTC), error="Error: disk full"
    )
    code, out, _ = check(home, capsys)
    assert "CROSSED  new failures: new_failures 1" in out and "new: " in out

    # A dead receiver is one line; the exit code still says what the rules found.
    with Receiver([]) as gone:
        dead = gone.url
    code, out, err = check(home, capsys, "--webhook", dead)
    assert code == 1 and err.count("\n") == 1 and "not reached after 3 attempt(s)" in err
    assert "t0ken" not in err


def test_nothing_crossed_is_exit_0(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (home / "rules.toml").write_text(
        '[[rule]]\nname = "calm"\nmetric = "failure_rate"\nabove = 0.9\n', encoding="utf-8"
    )
    code, out, _ = check(home, capsys)
    assert code == 0 and out.endswith("0 of 1 rule(s) crossed\n")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('[[rule]]\nname = "x"\nmetric = "vibes"\nabove = 1\n', "rule 'x': metric must be one of"),
        ('[[rule]]\nname = "x"\nmetric = "failure_rate"\n', "rule 'x': needs above = NUMBER"),
        ('[[rule]]\nname = "x"\nmetric = "label_count"\nabove = 1\n', "rule 'x': a label_count"),
        (
            '[[rule]]\nname = "x"\nmetric = "p95_latency_ms"\nabove = 1\nwindow = "soon"\n',
            "rule 'x': window must be an age",
        ),
        ("[[rule]]\nmetric = 'p95_latency_ms'\nabove = 1\n", "rule #1: needs a name"),
        ("nope = [", "not valid TOML"),
    ],
)
def test_a_bad_rules_file_is_one_line_naming_the_rule(
    home: Path, capsys: pytest.CaptureFixture[str], text: str, problem: str
) -> None:
    (home / "rules.toml").write_text(text, encoding="utf-8")
    code, _, err = check(home, capsys)
    assert code == 2 and problem in err and err.count("\n") == 1
