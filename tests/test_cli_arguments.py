"""Every command's number flags share the same types: a bad value is one usage line and
exit 2, before anything runs. Every argument error is one line naming the command."""

from __future__ import annotations

import pytest

from workbench.cli import main


def usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """What `workbench ARGV` says on stderr, having exited 2 before anything ran."""
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1, err
    return err


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["runs", "--limit", "0"], "--limit: must be greater than 0"),
        (["run", "task", "--max-turns", "-1"], "--max-turns: must be greater than 0"),
        (["replay", "r", "--speed", "0"], "--speed: must be greater than 0"),
        (["serve-model", "--script", "s.toml", "--port", "70000"], "--port: must be at most"),
        (["mcp", "list", "--timeout", "-5"], "--timeout: must be greater than 0"),
        (["lint-tools", "x.json", "--max-tools", "0"], "--max-tools: must be greater than 0"),
    ],
)
def test_a_bad_number_is_one_usage_line(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert says in usage_error(argv, capsys)


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["runs", "--bogus"], "workbench runs: unrecognized arguments: --bogus"),
        (["mcp", "list", "--bogus", "x"], "workbench mcp list: unrecognized arguments: --bogus x"),
        (["show"], "workbench show: one of the arguments RUN --session is required"),
        (["runs", "--status", "done"], "workbench runs: argument --status: invalid choice: 'done'"),
        (["--bogus"], "workbench: unrecognized arguments: --bogus"),
    ],
)
def test_an_argument_error_is_one_line_naming_the_command(
    argv: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    err = usage_error(argv, capsys)
    command = line.split(":")[0]
    assert err.startswith(line) and err.endswith(f"; see `{command} --help`\n"), err


def test_an_unknown_command_points_at_the_command_list(capsys: pytest.CaptureFixture[str]) -> None:
    err = usage_error(["bogus"], capsys)
    assert err.startswith("workbench: argument COMMAND: invalid choice: 'bogus' (choose from ")
    assert err.endswith("; see `workbench --help`\n")


@pytest.mark.parametrize(
    ("argv", "meant"),
    [
        (["shwo", "x"], "show"),
        (["runs", "--faild"], "--failed"),
        (["runs", "--statsu=error"], "--status"),
        (["runs", "--status", "complted"], "completed"),
        (["mcp", "lsit"], "list"),
    ],
)
def test_a_typo_gets_the_nearest_command_or_flag(
    argv: list[str], meant: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert f" (did you mean {meant}?); see `" in usage_error(argv, capsys)


def test_nothing_close_gets_no_guess(capsys: pytest.CaptureFixture[str]) -> None:
    assert "did you mean" not in usage_error(["runs", "--zzzz"], capsys)
    assert "did you mean" not in usage_error(["zzzz"], capsys)


def test_help_is_argparse_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["runs", "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: workbench runs [-h]") and "--failed" in out


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        # `--api-k` would have been taken for `--api-key`, `--js` for `--json`.
        (["run", "task", "--api-k", "x"], "workbench run: unrecognized arguments: --api-k x"),
        (["runs", "--js"], "workbench runs: unrecognized arguments: --js"),
        (["mcp", "list", "--tim", "5"], "workbench mcp list: unrecognized arguments: --tim 5"),
    ],
)
def test_a_flag_is_never_guessed_from_its_beginning(
    argv: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert usage_error(argv, capsys).startswith(line)


def test_no_parser_takes_abbreviations() -> None:
    import argparse

    from workbench.cli import build_parser

    parsers = [build_parser()]
    for parser in parsers:
        assert parser.allow_abbrev is False, parser.prog
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                parsers.extend(action.choices.values())
    assert len(parsers) > 20
