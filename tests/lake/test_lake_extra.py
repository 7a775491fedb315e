"""Without the `lake` extra (DuckDB's DuckLake, httpfs and postgres extension wheels for the
installed DuckDB), every lake command and `--lake` says what to install, in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.processes import workbench_at
from traces.store.lake.connect import missing_extensions


@pytest.mark.skipif(not missing_extensions(), reason="the lake extra is installed here")
@pytest.mark.parametrize(
    "argv",
    [
        ["runs", "--lake"],
        ["show", "--lake", "abc"],
        ["--lake=postgresql://db/lake?data=s3://b/p/", "runs"],
        ["push", "--all"],
        ["pull", "abc"],
        ["lake", "status"],
        ["lake", "compact"],
    ],
)
def test_the_lake_without_its_extra_says_what_to_install(wb_home: Path, argv: list[str]) -> None:
    done = workbench_at(wb_home, *argv)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "pip install 'agent-workbench[lake]'" in done.stderr
