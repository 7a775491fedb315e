"""What a suite run looks like to people and to CI: the case table, failure details with
the tool-schema diff, JSON, JUnit XML, and the rows the store keeps. Pure functions.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from traces.schema_diff import ToolSchemaDiff, diff_tool_schemas, render_text
from workbench.engine.regress.runner import CaseResult, SampleResult, SuiteResult

MARKS = {"pass": "ok", "fail": "FAIL", "regressed": "REGR", "error": "ERR"}


def _rate(case: CaseResult) -> str:
    passed = sum(s.passed for s in case.samples)
    text = f"{passed}/{len(case.samples)} {case.pass_rate:.0%}"
    if case.baseline_rate is not None:
        text += f" (was {case.baseline_rate:.0%})"
    return text


def table(result: SuiteResult) -> list[str]:
    rows = [("", "case", "pass rate", "chosen", "expected")]
    for case in result.cases:
        rows.append(
            (
                MARKS[case.status],
                case.case.id,
                _rate(case),
                case.chosen_summary(),
                case.case.expected_text(),
            )
        )
    widths = [min(max(len(row[i]) for row in rows), 48) for i in range(4)]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row[:4], widths, strict=True))
        + "  "
        + row[4]
        for row in rows
    ]


def summary_line(result: SuiteResult) -> str:
    counts = {status: 0 for status in MARKS}
    for case in result.cases:
        counts[case.status] += 1
    samples = sum(len(c.samples) for c in result.cases)
    parts = [f"{counts['pass']} passed"]
    parts += [
        f"{counts[s]} {word}"
        for s, word in (("fail", "failed"), ("regressed", "regressed"), ("error", "errored"))
        if counts[s]
    ]
    against = f", against baseline {result.baseline.name!r}" if result.baseline else ""
    return (
        f"suite {result.suite.name}: {', '.join(parts)} of {len(result.cases)} case(s), "
        f"{samples} sample(s) in {result.duration_s:.1f}s{against}"
    )


def failure_details(
    result: SuiteResult, base_schemas: list[dict[str, Any]] | None, base_label: str | None
) -> dict[str, list[str]]:
    """For each failing or regressed case: why, which traces, and what changed in the
    schemas of the tools it involves since `base_schemas` (the baseline's)."""
    return {
        case.case.id: case_details(case, result, base_schemas, base_label)
        for case in result.cases
        if case.status != "pass"
    }


def case_details(
    case: CaseResult,
    result: SuiteResult,
    base_schemas: list[dict[str, Any]] | None,
    base_label: str | None,
) -> list[str]:
    lines = [
        f"{MARKS[case.status]} {case.case.id}: {_rate(case)}, needs "
        f"{case.case.min_pass_rate:.0%}; expected {case.case.expected_text()}"
    ]
    reasons = sorted({s.reason for s in case.samples if not s.passed})
    lines.extend(f"  - {reason}" for reason in reasons)
    failed = [s.run_id for s in case.samples if not s.passed] or [case.samples[0].run_id]
    more = " …" if len(failed) > 3 else ""
    lines.append(f"  traces: {', '.join(failed[:3])}{more}")
    lines.extend(schema_changes(case, base_schemas, result.tool_schemas, base_label))
    return lines


def schema_changes(
    case: CaseResult,
    base_schemas: list[dict[str, Any]] | None,
    schemas: list[dict[str, Any]],
    base_label: str | None,
) -> list[str]:
    if base_schemas is None:
        return ["  no baseline to compare tool schemas with (save one with --save-baseline)"]
    involved = case.tools_involved()
    diff = diff_tool_schemas(base_schemas, schemas)
    relevant = ToolSchemaDiff(
        added=[name for name in diff.added if name in involved],
        removed=[name for name in diff.removed if name in involved],
        changed=[change for change in diff.changed if change.name in involved],
    )
    if relevant.is_empty:
        others = sorted({*diff.added, *diff.removed, *(c.name for c in diff.changed)})
        line = f"  no change to {', '.join(sorted(involved)) or 'its tools'} since {base_label}"
        return [line + (f"; changed: {', '.join(others)}" if others else "")]
    rendered = render_text(relevant).splitlines()
    return [f"  tool schema changes since {base_label}:", *("    " + line for line in rendered)]


def to_json(result: SuiteResult) -> dict[str, Any]:
    return {
        "suite": result.suite.name,
        "suite_run_id": result.suite_run_id,
        "model": result.model,
        "exit_code": result.exit_code,
        "duration_s": round(result.duration_s, 3),
        "baseline": result.baseline.name if result.baseline else None,
        "tool_descriptions": result.tool_descriptions,
        "cases": [
            {
                **case_row(case),
                "samples": [sample_row(s) for s in case.samples],
            }
            for case in result.cases
        ],
    }


def case_row(case: CaseResult) -> dict[str, Any]:
    return {
        "case_id": case.case.id,
        "samples": len(case.samples),
        "passed": sum(s.passed for s in case.samples),
        "pass_rate": case.pass_rate,
        "min_pass_rate": case.case.min_pass_rate,
        "baseline_rate": case.baseline_rate,
        "status": case.status,
        "expected": case.case.expected_text(),
        "chosen": case.chosen_summary(),
    }


def sample_row(sample: SampleResult) -> dict[str, Any]:
    """A sample as the JSON report and the store's regress_samples rows have it."""
    return {
        "sample": sample.sample,
        "run_id": sample.run_id,
        "passed": sample.passed,
        "chosen": sample.chosen,
        "reason": sample.reason,
        "status": sample.status,
        "error": sample.error,
    }


def store_rows(
    result: SuiteResult,
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """The suite run, case and sample rows for `traces.store.regress.RegressTables.save_run`."""
    run = {
        "suite_run_id": result.suite_run_id,
        "suite": result.suite.name,
        "suite_path": str(result.suite.path),
        "model": result.model,
        "baseline": result.baseline.name if result.baseline else None,
        "exit_code": result.exit_code,
        "duration_s": result.duration_s,
        "tool_schemas": result.tool_schemas,
        "tool_descriptions": result.tool_descriptions,
    }
    samples = [
        {"case_id": s.case_id, **sample_row(s)} for case in result.cases for s in case.samples
    ]
    return run, [case_row(case) for case in result.cases], samples


def to_junit(result: SuiteResult, details: dict[str, list[str]] | None = None) -> str:
    """JUnit XML: one testsuite, one testcase per case, a failure element when it failed."""
    failures = sum(1 for c in result.cases if c.status in ("fail", "regressed"))
    errors = sum(1 for c in result.cases if c.status == "error")
    suite = ET.Element(
        "testsuite",
        name=result.suite.name,
        tests=str(len(result.cases)),
        failures=str(failures),
        errors=str(errors),
        skipped="0",
        time=f"{result.duration_s:.3f}",
    )
    properties = ET.SubElement(suite, "properties")
    ET.SubElement(properties, "property", name="model", value=result.model)
    ET.SubElement(properties, "property", name="suite_run_id", value=result.suite_run_id)
    for case in result.cases:
        element = ET.SubElement(
            suite, "testcase", classname=f"workbench.{result.suite.name}", name=case.case.id
        )
        element.set("time", "0")
        if case.status == "pass":
            continue
        tag = "error" if case.status == "error" else "failure"
        message = f"{case.status}: pass rate {_rate(case)}, expected {case.case.expected_text()}"
        body = ET.SubElement(element, tag, message=message, type=case.status)
        body.text = "\n".join((details or {}).get(case.case.id, [])) or message
    ET.indent(suite)
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"
    )
