"""pytest plugin: regression suite files collected as tests, one test per case.

Files named `*.wbsuite.toml` under the paths pytest collects become test files; each
`[[case]]` is a test item. The whole suite runs once (samples concurrently) when its first
case runs; every case then reports its own pass or failure, with the tool-schema diff
against the newest baseline in the failure text. The model comes from `--wb-base-url`,
`--wb-model`, `--wb-api-key` or the usual OPENAI_BASE_URL / WORKBENCH_MODEL /
OPENAI_API_KEY. Registered through the `pytest11` entry point, so an installed workbench
extends every pytest run; heavy imports wait until a suite file is actually collected.

The `workbench_replay` fixture serves recorded runs (captures of your own agent, say) as an
OpenAI-compatible endpoint for the test, like `workbench serve-model --replay`, and stops it
after the test:

    def test_agent_offline(workbench_replay):
        base_url = workbench_replay("3fa2c1", name="nightly")  # runs, and/or a run name
        agent = make_agent(base_url=base_url, api_key="unused")
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from workbench.number_args import positive_int

SUITE_SUFFIX = ".wbsuite.toml"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("workbench", "tool-description regression suites (*.wbsuite.toml)")
    group.addoption("--wb-base-url", help="OpenAI-compatible endpoint (env OPENAI_BASE_URL)")
    group.addoption("--wb-model", help="model name (env WORKBENCH_MODEL)")
    group.addoption("--wb-api-key", help="API key (env OPENAI_API_KEY)")
    group.addoption("--wb-samples", type=positive_int, help="runs per case (overrides the suites)")
    group.addoption("--wb-concurrency", type=positive_int, default=4, help="samples at once (4)")
    group.addoption("--wb-baseline", help="also fail cases whose pass rate fell below NAME's")
    group.addoption("--wb-save-baseline", help="store each suite's results as baseline NAME")
    group.addoption("--wb-home", help="workbench folder (default $WORKBENCH_HOME, ./.workbench)")
    group.addoption("--wb-root", default=".", help="root folder for the builtin tools")
    group.addoption(
        "--wb-tool-description",
        action="append",
        metavar="NAME=TEXT|@FILE",
        help="offer this description for tool NAME instead (repeatable)",
    )


@pytest.fixture
def workbench_replay(pytestconfig: pytest.Config) -> Iterator[Callable[..., str]]:
    """Start a replay server: `workbench_replay(*runs, name=None, home=None, match="meaning")`
    returns its base URL (ending in /v1). The home folder defaults to `--wb-home`, else
    $WORKBENCH_HOME, else ./.workbench."""
    from traces.home import home_dir
    from workbench.engine.http.serve import ServeError, replay_server

    servers: list[Any] = []

    def start(
        *runs: str | Path,
        name: str | None = None,
        home: str | Path | None = None,
        match: str = "meaning",
    ) -> str:
        folder = home_dir(home or pytestconfig.getoption("wb_home"))
        try:
            server = replay_server(
                list(runs), folder, name=name, mode="exact" if match == "exact" else "meaning"
            )
        except ServeError as exc:
            pytest.fail(f"workbench_replay: {exc}", pytrace=False)
        servers.append(server)
        return str(server.base_url)

    yield start
    for server in servers:
        server.close()


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.name.endswith(SUITE_SUFFIX):
        return SuiteFile.from_parent(parent, path=file_path)
    return None


class SuiteProblem(Exception):
    """The suite could not run (exit code 2 for `workbench test`): shown as one line."""


class CaseFailed(Exception):
    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


class SuiteFile(pytest.File):
    _outcome: Any = None
    _problem: BaseException | None = None

    def collect(self) -> Any:
        from workbench.engine.regress.suite import SuiteError, load_suite

        try:
            self.suite = load_suite(self.path)
        except SuiteError as exc:
            raise self.CollectError(str(exc)) from None
        for case in self.suite.cases:
            yield CaseItem.from_parent(self, name=case.id, case_id=case.id)

    def outcome(self) -> Any:
        """Run the suite once; every case item reads its result from here."""
        if self._outcome is None and self._problem is None:
            try:
                self._outcome = asyncio.run(self._run())
            except Exception as exc:  # kept, so later cases report it instead of re-running
                self._problem = exc
        if self._problem is not None:
            raise self._problem
        return self._outcome

    async def _run(self) -> Any:
        from traces.home import home_dir
        from workbench.engine.recording.running.service import (
            ModelSettings,
            SetupError,
            build_model,
            parse_tool_descriptions,
        )
        from workbench.engine.regress.session import (
            SuiteRequest,
            open_results_store,
            run_suite_request,
        )
        from workbench.engine.regress.suite import SuiteError

        option = self.config.getoption
        settings = ModelSettings.from_env(
            base_url=option("wb_base_url"), model=option("wb_model"), api_key=option("wb_api_key")
        )
        home = home_dir(option("wb_home"))
        try:
            model = build_model(settings)
            request = SuiteRequest(
                suite=self.suite,
                home=home,
                root=Path(option("wb_root")),
                samples=option("wb_samples"),
                concurrency=max(1, option("wb_concurrency")),
                tool_descriptions=parse_tool_descriptions(option("wb_tool_description")),
                baseline=option("wb_baseline"),
                save_baseline=option("wb_save_baseline"),
                secrets=[option("wb_api_key")],
            )
        except SetupError as exc:
            raise SuiteProblem(str(exc)) from None
        try:
            store = open_results_store(home)
        except SuiteError as exc:
            raise SuiteProblem(str(exc)) from None
        try:
            return await run_suite_request(request, model, store)
        except SuiteError as exc:
            raise SuiteProblem(str(exc)) from None
        finally:
            store.close()
            close = getattr(model, "aclose", None)
            if close is not None:
                await close()


class CaseItem(pytest.Item):
    def __init__(self, *, case_id: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case_id = case_id

    def runtest(self) -> None:
        parent = self.parent
        assert isinstance(parent, SuiteFile)
        outcome = parent.outcome()
        case = next(c for c in outcome.result.cases if c.case.id == self.case_id)
        if case.status != "pass":
            raise CaseFailed(outcome.details.get(self.case_id, [case.status]))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, CaseFailed | SuiteProblem):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.path.name}::{self.case_id}"
