"""A `workbench why` report as text (the CLI, the TUI) and as Markdown (for an issue)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workbench.engine.analysis.why import Cause, WhyReport

_MARK = {
    "fixes": "✔ verified",
    "sometimes": "~ partly",
    "no_effect": "✘ no effect",
    "needs_model": "? needs a model",
    "not_verified": "! not verified",
    "not_testable": "· evidence only",
}


def _head(report: WhyReport) -> list[str]:
    if not report.failed:
        return [f"run {report.run_id} completed: nothing to explain"]
    reason = f" ({report.reason})" if report.reason else ""
    passing = len(report.passing_runs)
    return [
        f"why run {report.run_id} ended {report.status}{reason}",
        f"compared with {passing} passing run{'s' if passing != 1 else ''} of its task; "
        f"forks continued with: {report.model}"
        + (f"; spent {report.spent:.4f}" if report.spent is not None else ""),
    ]


def report_lines(report: WhyReport) -> list[str]:
    lines = _head(report)
    if not report.failed:
        return lines
    if not report.causes:
        lines.append("no candidate cause in its events")
    for rank, cause in enumerate(report.causes, start=1):
        lines += ["", *_cause_lines(rank, cause)]
    forks = [run for cause in report.causes for run in cause.verification.forks]
    if forks:
        lines += ["", "the forks are runs of their own: `workbench show FORK` shows one"]
    return lines


def _cause_lines(rank: int, cause: Cause) -> list[str]:
    c, found = cause.candidate, cause.verification
    lines = [f"{rank}. {c.title}", f"   {_MARK[found.verdict]}: {found.summary()}"]
    if c.fix is not None:
        lines.append(f"   fix tried  fork at turn {c.fix.turn}: {c.fix.says}")
    for e in c.evidence:
        where = f"seq {e.seq}" + (f" turn {e.turn}" if e.turn is not None else "")
        call = f" {e.call_id}" if e.call_id else ""
        lines.append(f"   evidence   {e.run_id[:12]} {where}{call}: {e.what}")
    if found.forks:
        lines.append(f"   forks      {' '.join(run[:12] for run in found.forks)}")
    return lines


def report_markdown(report: WhyReport) -> str:
    head = _head(report)
    out = [f"## {head[0]}", ""]
    if not report.failed:
        return "\n".join(out)
    out += [head[1], ""]
    for rank, cause in enumerate(report.causes, start=1):
        c, found = cause.candidate, cause.verification
        out.append(f"{rank}. **{c.title}** — {_MARK[found.verdict]}: {found.summary()}")
        if c.fix is not None:
            out.append(f"   - fix tried: fork at turn {c.fix.turn}, {c.fix.says}")
        for e in c.evidence:
            turn = f", turn {e.turn}" if e.turn is not None else ""
            call = f", call `{e.call_id}`" if e.call_id else ""
            out.append(f"   - evidence: `{e.run_id}` seq {e.seq}{turn}{call}: {e.what}")
        if found.forks:
            out.append("   - forks: " + ", ".join(f"`{run}`" for run in found.forks))
    return "\n".join(out) + "\n"
