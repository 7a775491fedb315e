"""`workbench diff`: tool-schema diffs and decision chains aligned by turn."""

from __future__ import annotations

import json
import shutil
from typing import Any

from tests.engine.engine_support import THREE_TURNS, Project, SearchTools, cli, search_schema
from workbench.engine.diff.alignment import diff_chains
from workbench.engine.recording.runs.load import read_recording_file

NEW_DESCRIPTION = "Read one text file and return its numbered lines. Never use it for folders."


def other_arguments() -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = json.loads(json.dumps(THREE_TURNS))
    steps[1]["tool_calls"][1]["arguments"] = {"expression": "8080 * 3"}
    steps[2]["content"] = "The port is 8080; three times that is 24240."
    return steps


async def test_chain_diff_marks_the_first_divergent_turn(project: Project, capsys) -> None:
    path_a, a = await project.record(THREE_TURNS)
    path_b, b = await project.record(other_arguments())
    chain = diff_chains(read_recording_file(path_a), read_recording_file(path_b))
    assert not chain.is_equal and chain.first_divergence == 2
    rows = {row.turn: row for row in chain.rows}
    assert rows[1].same and not rows[2].same and rows[2].first_divergence
    assert rows[2].differences == ("arguments",)
    assert rows[3].differences == ("answer",) and not rows[3].first_divergence

    code = await cli("--home", str(project.home), "diff", a.run_id, b.run_id, "--chain")
    out = capsys.readouterr().out
    assert code == 1
    assert ">> turn 2: differs: arguments" in out
    assert '"8080 * 2"' in out and '"8080 * 3"' in out
    assert "first divergence at turn 2" in out

    code = await cli("--home", str(project.home), "diff", a.run_id, b.run_id, "--chain", "--json")
    report = json.loads(capsys.readouterr().out)
    assert code == 1 and report["chain"]["first_divergence_turn"] == 2
    assert [t["first_divergence"] for t in report["chain"]["turns"]] == [False, True, False]


async def test_same_chain_and_tools_exit_0(project: Project, capsys) -> None:
    path, run = await project.record(THREE_TURNS)
    copy = project.home / "copy.jsonl"
    shutil.copy(path, copy)
    code = await cli("--home", str(project.home), "diff", run.run_id, str(copy))
    out = capsys.readouterr().out
    assert code == 0, out
    assert "the decision chains are the same" in out


async def test_tool_diff_shows_a_changed_description_as_a_word_diff(
    project: Project, capsys
) -> None:
    _, a = await project.record(THREE_TURNS)
    _, b = await project.record(THREE_TURNS, tool_descriptions={"read_file": NEW_DESCRIPTION})
    code = await cli("--home", str(project.home), "diff", a.run_id, b.run_id, "--tools")
    out = capsys.readouterr().out
    assert code == 1
    assert "~ tool read_file" in out and "~ tool list_dir" not in out  # only the changed tool
    # The description as a word diff: removed words [-…-], inserted words {+…+}.
    description = next(line for line in out.splitlines() if "description:" in line)
    assert "{+" in description and "Never" in description and "[-" in description

    code = await cli("--home", str(project.home), "diff", a.run_id, b.run_id, "--tools", "--json")
    report = json.loads(capsys.readouterr().out)
    assert code == 1 and report["equal"] is False and "chain" not in report
    [change] = report["tools"]["changed"]
    assert change["name"] == "read_file"


async def test_diff_of_an_unknown_run_exits_2(project: Project, capsys) -> None:
    _, a = await project.record(THREE_TURNS)
    code = await cli("--home", str(project.home), "diff", a.run_id, "0ddba11")
    err = capsys.readouterr().err
    assert code == 2 and "0ddba11" in err and err.count("\n") == 1


async def test_fork_against_its_parent_inherits_the_turns_before_the_fork(
    project: Project,
) -> None:
    from agent_core.model.scripted import ScriptedModel
    from traces.home import traces_dir
    from traces.writer import JsonlWriter
    from workbench.engine.recording.fork.plan import ForkRequest, fork_agent, plan_fork

    path, _ = await project.record(THREE_TURNS)
    parent = read_recording_file(path)
    plan = plan_fork(parent, ForkRequest(turn=2))
    config = plan.config()
    writer = JsonlWriter(traces_dir(project.home), config.run_id)
    agent = fork_agent(
        plan,
        ScriptedModel(other_arguments()[1:]),
        live_toolsets=project.toolsets(),
        sinks=[writer],
        run_id=config.run_id,
    )
    assert (await agent.run()).status == "completed"
    chain = diff_chains(parent, read_recording_file(writer.path))
    assert [row.same for row in chain.rows] == [True, False, False]
    assert chain.first_divergence == 2


async def test_tool_diff_names_each_nested_change_by_its_path(project: Project, capsys) -> None:
    answer = [{"content": "Nothing to search."}]
    _, a = await project.record(answer, toolsets=[SearchTools(search_schema())])
    changed = search_schema(
        limit__type="string",
        limit__default=None,
        kinds__items={"type": "string", "enum": ["todo", "done"]},
        filters__required=[],
    )
    _, b = await project.record(answer, toolsets=[SearchTools(changed)])

    code = await cli("--home", str(project.home), "diff", a.run_id, b.run_id, "--tools")
    out = capsys.readouterr().out
    assert code == 1, out
    assert "identical" not in out and "the same" not in out
    assert "~ tool search" in out
    assert "filters.properties.limit.type: 'integer' -> 'string'" in out
    assert "filters.properties.limit.default: 10 -> null" in out
    assert "filters.properties.kinds.items.enum" in out
    assert "filters.properties.limit.required: true -> false" in out
    assert "query" not in out  # an unchanged parameter says nothing

    code = await cli("--home", str(project.home), "diff", a.run_id, b.run_id, "--tools", "--json")
    report = json.loads(capsys.readouterr().out)
    assert code == 1 and report["equal"] is False
    [change] = report["tools"]["changed"]
    paths = {
        (p["path"], p["kind"], json.dumps(p["before"]), json.dumps(p["after"]))
        for p in change["params"]
    }
    assert paths == {
        ("filters.properties.limit.type", "type", '"integer"', '"string"'),
        ("filters.properties.limit.default", "default", "10", "null"),
        ("filters.properties.kinds.items.enum", "enum", "null", '["todo", "done"]'),
        ("filters.properties.limit.required", "required", "true", "false"),
    }
    assert {p["name"] for p in change["params"]} == {"filters"}


async def test_a_turn_whose_text_beside_its_calls_differs_is_not_the_same(
    project: Project,
) -> None:
    # The same calls, but one side also said something: the turn differs in its text.
    said_more = [dict(step) for step in THREE_TURNS]
    said_more[0]["content"] = "Let me look around; the port is probably in a config file."
    path_a, _ = await project.record(THREE_TURNS)
    path_b, _ = await project.record(said_more)
    chain = diff_chains(read_recording_file(path_a), read_recording_file(path_b))
    rows = {row.turn: row for row in chain.rows}
    assert rows[1].differences == ("text",) and chain.first_divergence == 1
