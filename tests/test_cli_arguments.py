"""Every command's number flags share the same types: a bad value is one usage line and
exit 2, before anything runs."""

from __future__ import annotations

import pytest

from workbench.cli import main


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
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err
