"""The house rule on module size (../shared/STYLE.md: a module is read in one sitting): no
product module of traces, agent_core or workbench passes MAX_LINES lines."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 600
PRODUCT = ("traces", "agent_core", "workbench")


def test_no_product_module_passes_the_limit() -> None:
    sizes = {
        path.relative_to(ROOT).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for package in PRODUCT
        for path in (ROOT / package).rglob("*.py")
    }
    assert len(sizes) > 100  # the walk found the product
    over = {name: lines for name, lines in sizes.items() if lines > MAX_LINES}
    assert over == {}, f"split these modules (over {MAX_LINES} lines): {over}"
