"""mcp-serve's `explain_failure` (issue 38, part 3) on runs whose cause is known: with
writes allowed it forks and the cause flips the outcome; read-only, the candidates only."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.mcp.test_mcp_serve import call, refused, served
from tests.support.why_runs import WhyHome, why_home


@pytest.fixture
def known(tmp_path: Path) -> WhyHome:
    return why_home(tmp_path, decoy=False)  # made outside the test's event loop


async def test_explain_failure_verifies_with_writes_and_lists_candidates_without(
    known: WhyHome,
) -> None:
    async with served(known.home) as session:
        listed = await call(session, "explain_failure", run=known.failing[:10])
        assert listed["writes_allowed"] is False and listed["forks"] == []
        assert "read-only" in listed["note"]
        kinds = [cause["kind"] for cause in listed["causes"]]
        assert "first_error" in kinds and "limit_hit" in kinds
        assert "no run id starts with" in await refused(session, "explain_failure", run="zzzz")

    async with served(known.home, "--allow-writes") as session:
        report = await call(session, "explain_failure", run=known.failing, samples=2)
    first = report["causes"][0]
    assert first["verification"]["verdict"] == "fixes"
    assert first["verification"]["summary"].startswith("fixed in 2 of 2 samples")
    assert first["evidence"][0]["call_id"] == "call_s1_0"
    assert len(report["forks"]) >= 2
