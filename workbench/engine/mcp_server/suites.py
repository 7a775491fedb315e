"""run_suite: a regression suite in the home run as `workbench test` runs it
(`regress.session.run_suite_request`), on the model the server's environment names or on a
model script in the home. Samples are runs, so it needs `--allow-writes`; the suite and the
script must be files inside the home, and the suite's cases read the folder it is in."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from traces.user_files import names_a_file
from workbench.engine.mcp_server.tools import ToolError


def home_file(home: Path, ref: str, what: str) -> Path:
    """`ref` (relative to the home, or absolute) as a file inside the home, else ToolError."""
    inside = home.resolve()
    if "\x00" in ref:  # no file is named so; the system would refuse to look it up
        raise ToolError(f"no {what} file {ref!r} in the home ({home}): a NUL is in its name")
    path = (inside / ref).resolve() if not Path(ref).is_absolute() else Path(ref).resolve()
    if not path.is_relative_to(inside):
        raise ToolError(f"the {what} must be a file inside the home ({home}); {ref!r} is not")
    if not names_a_file(path):  # a name too long to look up is not a file either
        raise ToolError(f"no {what} file {ref!r} in the home ({home})")
    return path


async def run_suite(
    home: Path,
    *,
    suite: str,
    samples: int | None = None,
    baseline: str | None = None,
    script: str | None = None,
) -> dict[str, Any]:
    """Run the suite's cases; their pass rates, against `baseline` when named."""
    from traces.events import Limits
    from workbench.engine.recording.running.service import ModelSettings, SetupError, build_model
    from workbench.engine.regress.report import to_json
    from workbench.engine.regress.session import (
        SuiteRequest,
        open_results_store,
        run_suite_request,
    )
    from workbench.engine.regress.suite import SuiteError, load_suite

    path = home_file(home, suite, "suite")
    settings = ModelSettings.from_env()
    if script is not None:
        settings = ModelSettings(script=home_file(home, script, "model script"))
    try:
        loaded = load_suite(path)
        model = build_model(settings, Limits())
    except (SuiteError, SetupError) as exc:
        raise ToolError(str(exc)) from None
    request = SuiteRequest(
        suite=loaded,
        home=home,
        root=path.parent,
        samples=samples,
        baseline=baseline,
        secrets=[settings.api_key],
    )
    try:
        store = open_results_store(home)
    except SuiteError as exc:
        raise ToolError(str(exc)) from None
    try:
        outcome = await run_suite_request(request, model, store)
    except SuiteError as exc:
        raise ToolError(str(exc)) from None
    finally:
        store.close()
        close = getattr(model, "aclose", None)
        if close is not None:
            await close()
    result = outcome.result
    return {**to_json(result), "passed": result.exit_code == 0, "details": outcome.details}
