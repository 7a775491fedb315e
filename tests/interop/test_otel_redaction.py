"""Imported OpenTelemetry runs get the home's redaction, as every run written there does.

A home with a configured pattern takes spans holding a matching string, through
`ingest-otel` and through a running `workbench collect`; neither the trace file nor
`workbench show` may hold the string.
"""

from __future__ import annotations

import json
import signal
import urllib.request
from pathlib import Path

import pytest

from tests.support.processes import workbench_process
from workbench.cli import main

pytest.importorskip("opentelemetry.sdk", reason="needs the otel extra")

FIXTURES = Path(__file__).parent / "fixtures"
SECRET = "acct-7Q2ZX9K4"
PATTERN = r"acct-[0-9A-Z]{8}"


def _document_with_secret() -> bytes:
    """The GenAI fixture with the secret in the task the user asked and in the root span."""
    text = (FIXTURES / "genai-agent.json").read_text(encoding="utf-8")
    assert "How many lines does notes.txt have?" in text and '"stringValue": "demo"' in text
    text = text.replace(
        "How many lines does notes.txt have?", f"How many lines does notes.txt have? {SECRET}"
    ).replace('"stringValue": "demo"', f'"stringValue": "{SECRET}"')
    return text.encode()


def _configure(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "redact-patterns.txt").write_text(f"# account numbers\n{PATTERN}\n", encoding="utf-8")


def _assert_redacted(home: Path, run_id: str, capsys: pytest.CaptureFixture[str]) -> None:
    trace = (home / "traces" / f"{run_id}.jsonl").read_text(encoding="utf-8")
    assert SECRET not in trace
    assert "[REDACTED:pattern-1]" in trace  # the task is there, its secret replaced
    capsys.readouterr()
    assert main(["--home", str(home), "show", run_id]) == 0
    assert SECRET not in capsys.readouterr().out
    assert main(["--home", str(home), "show", run_id, "--json"]) == 0
    shown = capsys.readouterr().out
    assert SECRET not in shown and "How many lines does notes.txt have?" in shown


def test_ingest_otel_applies_the_homes_redaction_patterns(
    wb_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _configure(wb_home)
    source = tmp_path / "spans.json"
    source.write_bytes(_document_with_secret())
    assert main(["ingest-otel", str(source), "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)
    assert run["written"]
    _assert_redacted(wb_home, run["run_id"], capsys)


def test_ingest_otel_with_a_bad_pattern_is_one_line(
    wb_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (wb_home / "redact-patterns.txt").write_text("acct-(\n", encoding="utf-8")
    assert main(["ingest-otel", str(FIXTURES / "genai-agent.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "redact-patterns.txt:1: not a valid regular expression" in err
    assert list((wb_home / "traces").iterdir()) == []


def test_collect_applies_the_homes_redaction_patterns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "collected"
    _configure(home)
    process = workbench_process("--home", str(home), "collect", "--port", "0")
    try:
        assert process.stdout is not None
        endpoint = process.stdout.readline().split(" on ")[1].split(" into ")[0]
        request = urllib.request.Request(
            endpoint, data=_document_with_secret(), headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status == 200
        imported = process.stdout.readline()
        assert imported.startswith("imported run "), imported
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 0 and "Traceback" not in err, err
    assert "stopped; 1 run(s)" in out
    (path,) = (home / "traces").glob("*.jsonl")
    _assert_redacted(home, path.stem, capsys)
