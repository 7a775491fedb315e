"""Comparing a run with its fork by content: the texts, word diffs and the fork's edits."""

from __future__ import annotations

import json

import pytest

from tests.engine.engine_support import THREE_TURNS, Project, cli
from traces.home import traces_dir
from traces.store import TraceStore
from workbench.engine.diff.text_changes import (
    compare_runs,
    compare_stored_runs,
    marked,
    render_comparison,
)
from workbench.engine.recording.runs.load import read_recording_file

MOCK = "config.toml\nnotes.md"
FORK_ANSWERS = [
    {"content": "Only the config and the notes are here; the port is 8080, so 16160 doubled."},
]


async def _parent_and_fork(project: Project) -> tuple[str, str]:
    _, parent = await project.record(THREE_TURNS)
    script = project.home / "fork-script.json"
    script.write_text(json.dumps(FORK_ANSWERS), encoding="utf-8")
    code = await cli(
        "--home", str(project.home), "fork", parent.run_id, "--turn", "2",
        "--mock", f"call_list={MOCK}", "--user", "What port does config.toml name, doubled?",
        "--root", str(project.root), "--script", str(script), "--quiet",
    )  # fmt: skip
    assert code == 0
    [fork] = [p.stem for p in traces_dir(project.home).glob("*.jsonl") if p.stem != parent.run_id]
    return parent.run_id, fork


async def test_comparison_shows_texts_word_diffs_and_the_edits(project: Project) -> None:
    parent_id, fork_id = await _parent_and_fork(project)
    folder = traces_dir(project.home)
    parent = read_recording_file(folder / f"{parent_id}.jsonl")
    fork = read_recording_file(folder / f"{fork_id}.jsonl")
    comparison = compare_runs(parent, fork)
    # From the store a turn at a time (`workbench diff`), the fork's inherited turns too.
    with TraceStore.for_home(project.home) as store:
        store.ingest_home(project.home)
        assert compare_stored_runs(store, parent_id, fork_id, size=1) == comparison

    [edits] = comparison.forks
    assert (edits.fork, edits.parent_run_id, edits.turn) == ("B", parent_id, 2)
    assert [(e.kind, e.target) for e in edits.edits] == [
        ("user", None),
        ("mock_result", "call_list"),
    ]
    # Turn 1 is inherited with the mocked result, so it differs in its result text.
    [listing] = comparison.changes[1]
    assert listing.what == "list_dir result" and listing.b == MOCK
    assert listing.a is not None and "README.md" in listing.a
    # The fork answered at turn 2 where the parent called tools.
    turn_2 = {change.what: change for change in comparison.changes[2]}
    assert turn_2["answer"].a is None and turn_2["answer"].b == FORK_ANSWERS[0]["content"]
    assert turn_2["read_file result"].b is None

    lines = render_comparison(comparison)
    text = "\n".join(lines)
    assert f"B ({fork_id[:12]}) is a fork of {parent_id[:12]} at turn 2" in text
    assert "user message: What port does config.toml name, doubled?" in text
    assert "result of tool call call_list (mocked): config.toml notes.md" in text
    assert "turn 1, list_dir result:" in text and "B config.toml notes.md" in text
    assert "turn 2, answer, only in B: Only the config and the notes are here" in text
    assert "answer 0" not in text  # no digests in place of the texts
    as_json = comparison.to_json()
    assert as_json["forks"][0]["edits"][1]["value"] == MOCK
    assert as_json["changes"]["1"][0]["b"] == MOCK


def test_word_diff_marks_changes_and_cuts_long_unchanged_text() -> None:
    from workbench.engine.diff.text_changes import word_diff

    assert word_diff("same words\n", "same  words") == [("equal", "same  words")]
    before = "The port is 8080 " + "and the rest stays the same " * 10 + "until the end."
    after = "The port is 9090 " + "and the rest stays the same " * 10 + "until the finish."
    text = marked(word_diff(before, after), context=20)
    assert text.startswith("The port is [-8080-] {+9090+}")
    assert "…" in text and text.endswith("[-end.-] {+finish.+}")
    assert len(text) < len(before)


async def test_diff_chain_prints_the_content_and_the_edit(project: Project, capsys) -> None:
    parent_id, fork_id = await _parent_and_fork(project)
    capsys.readouterr()
    code = await cli("--home", str(project.home), "diff", parent_id, fork_id, "--chain")
    out = capsys.readouterr().out
    assert code == 1
    assert "it changed:" in out and "result of tool call call_list (mocked)" in out
    assert "answer: Only the config and the notes are here" in out
    assert "what differs:" in out and "diff [-" in out
    code = await cli("--home", str(project.home), "diff", parent_id, fork_id, "--chain", "--json")
    report = json.loads(capsys.readouterr().out)
    assert report["chain"]["forks"][0]["run_id"] == fork_id
    assert report["chain"]["changes"]["1"][0]["what"] == "list_dir result"


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("", "new text"),
        ("old text", ""),
        ("a b c", "a x c"),
        ("line one\nline two\n", "line one\nline 2\n"),
        ("  leading space", "leading  space  "),
        # A side of spacing only has no words: the other side is one span, as it is.
        (" \n\t", "\u3000 new  text\n"),
        ("\x85old\ttext ", "\u2028 "),
    ],
)
def test_word_diff_spans_rebuild_both_texts(before: str, after: str) -> None:
    from workbench.engine.diff.text_changes import word_diff

    spans = word_diff(before, after)
    assert "".join(t for op, t in spans if op != "delete") == after.lstrip()
    rebuilt = "".join(t for op, t in spans if op != "insert")
    assert rebuilt.split() == before.split()


def test_markdown_fences_outlast_backticks_in_the_text() -> None:
    from workbench.engine.views.export import fenced

    for text in ("plain", "a ``` fence", "````four````", "`"):
        fence, body, close = fenced(text)
        assert body == text and fence == close
        assert fence not in text and len(fence) >= 3
