"""`workbench export RUN --format html`: one self-contained page with the run's summary,
the decision chain as `<details>` (turns, their tool calls with arguments and results,
each call on a timeline bar), how it ended, its annotations and its tool schemas; nothing
it would load from anywhere; every text of the trace escaped (a tool result that closes
a script and opens another stays text); redacted as the other formats are. Rendered in
a real browser: tests/web/test_export_page.py."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.support.demo import demo_run, record_demo
from tests.support.processes import workbench_at
from traces.home import REDACT_ENV, traces_dir

XSS_RESULT = "</pre></details></script><script>alert('result')</script>"
XSS_TASK = "<img src=x onerror=\"alert('task')\"> & </title><script>alert('title')</script>"
XSS_TOOL = "read_file\"><script>alert('name')</script>"


def exported(home: Path, run: str, fmt: str = "html") -> str:
    done = workbench_at(home, "export", run, "--format", fmt)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_page_holds_the_chain_calls_timeline_notes_and_schemas(
    demo_home: Path, tmp_path: Path
) -> None:
    home = shutil.copytree(demo_home, tmp_path / "home")
    run = demo_run(home, "tool-error-recovered")
    noted = workbench_at(
        home, "note", f"{run}:1", "--label", "wrong-file", "--text", "read <units> first",
        "--author", "ann", "--score", "helpful=0.5",
    )  # fmt: skip
    assert noted.returncode == 0, noted.stderr
    page = exported(home, run)
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert f"<h1>Run <code>{run}</code></h1>" in page
    assert page.count('<details class="turn"') == 4  # the chain: a turn each
    assert '<details class="turn" open><summary>Turn 1 · <b class="bad">tool_error</b>' in page
    # A tool call with its arguments and result, escaped.
    assert "tool <code>read_file</code> <code class=muted>call_s1_0</code>" in page
    assert "&quot;path&quot;: &quot;src/unit.py&quot;" in page
    assert "Error: no file &#x27;src/unit.py&#x27;; use list_dir to see what exists" in page
    # The timeline: every turn placed on the run's bar, each call on its own.
    assert page.count('<span class="track">') > 4 and "<h4>Timeline</h4>" in page
    assert re.search(r'<span class="tool failed" style="left:[\d.]+%;width:[\d.]+%">', page)
    # The end, the annotation, the tool schemas.
    assert '<h2>End</h2>\n<p><b class="ok">completed</b>' in page
    assert "<h2>Annotations</h2>" in page
    assert (
        "<li><b>turn 1</b> (ann): <code>wrong-file</code> · helpful=0.5 — read &lt;units&gt; first"
        in page
    )
    assert "<summary>Tool schemas (4)</summary>" in page
    assert "<code>list_dir</code> <span class=muted>List the files and folders" in page
    # Nothing to load from anywhere, and a policy that forbids it all the same.
    assert not re.search(r"\b(src|href|srcset|action)\s*=", page)
    assert "url(" not in page and "@import" not in page
    assert "default-src 'none'" in page


def test_text_from_the_trace_is_escaped_everywhere(demo_home: Path, tmp_path: Path) -> None:
    """A task, a tool name and a tool result made to break out of the page stay text:
    the only script is the page's own."""
    home = tmp_path / "home"
    run = demo_run(demo_home, "tool-error-recovered")
    trace = traces_dir(home) / f"{run}.jsonl"
    trace.parent.mkdir(parents=True)
    lines = []
    for line in (traces_dir(demo_home) / f"{run}.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event["type"] == "run_start":
            event["task"] = XSS_TASK
        if event["type"] in ("tool_start", "tool_end") and event["turn"] == 1:
            event["name"] = XSS_TOOL
        if event["type"] == "tool_end":
            event["result"] = XSS_RESULT
        lines.append(json.dumps(event))
    trace.write_text("\n".join(lines) + "\n")
    page = exported(home, run)
    assert page.count("<script") == 1 and page.count("</script>") == 1
    assert "onerror=" not in page.replace("onerror=&quot;", "")
    assert "&lt;/script&gt;&lt;script&gt;alert(&#x27;result&#x27;)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=&quot;alert(&#x27;task&#x27;)&quot;&gt; &amp; " in page
    assert "read_file&quot;&gt;&lt;script&gt;" in page


def test_the_page_is_redacted_as_the_other_formats_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Traces are redacted when written: a pattern the home had then is a placeholder in
    every export alike."""
    monkeypatch.setenv(REDACT_ENV, "Fahrenheit")
    home = record_demo(tmp_path / "home")
    run = demo_run(home, "tool-error-recovered")
    for fmt in ("md", "json", "html"):
        text = exported(home, run, fmt)
        assert "Fahrenheit" not in text and "[REDACTED:pattern-1]" in text, fmt
