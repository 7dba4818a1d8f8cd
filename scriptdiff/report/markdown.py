"""Markdown for a pull-request comment: verdicts, then one table per check.

Text from the inputs (names, values, paths, messages) is never markup: in plain text each
character GitHub-flavoured Markdown could read as markup (HTML tags, links and images,
emphasis, code, entities, table pipes) is backslash-escaped, so `<img onerror=...>` or a remote image
`![](http://...)` in a value is shown as written, never rendered; in a code span the fence is
longer than any run of backticks inside it. Control characters are escaped first
(report.values.safe); a line break in plain text becomes <br>, in a code span `\\n`: every
row of a table stays one line of the output."""
from __future__ import annotations

from .. import budget
from ..model import Severity
from .curves import markdown_section, relative_to
from ..ruleset.registry import check_order
from .values import clip, record_line, safe, shown
from .values import md_cell as _cell
from .values import md_code as _code
from ..ruleset.fidelity import said as masked_said

VERDICT_ICON = {"pass": "✅", "differences": "❌", "not checked": "⚪"}

def _where(side) -> str:
    if side is None:
        return "(absent)"
    if side.path is None:
        return _cell(side.source or "-")
    loc = side.path + (f":{side.line}" if side.line else "")
    if not side.line and side.source in ("default", "derived"):
        loc += f" ({side.source})"
    return _cell(loc)


def _value(f, side, full: bool) -> str:
    return record_line(f.check, side.value) or shown(side.value, full)


def render(report, show_masked: bool = False, full_values: bool = False, out_path: str | None = None,
           **_options) -> str:
    report.sorted()
    out = [f"### scriptdiff: {Severity.tally(report.findings)}",
           "", f"GPU {_code(report.gpu)} vs NPU {_code(report.npu)}; "
               f"{masked_said(report.masked)}"
               + (f"; {report.details['baseline_suppressed']} suppressed by the baseline"
                  if report.details.get("baseline_suppressed") else "") + ".", ""]
    if report.verdicts:
        out += ["| Check | Verdict | Why |", "|---|---|---|"]
        for check in sorted(report.verdicts, key=check_order):
            verdict, reason = report.verdicts[check]
            out.append(f"| {check} | {VERDICT_ICON.get(verdict, '')} {verdict} | {_cell(reason)} |")
        out.append("")
    by_check: dict[str, list] = {}
    for f in report.findings:
        by_check.setdefault(f.check, []).append(f)
    head = ["| Severity | Rule | Key | GPU | NPU | What |", "|---|---|---|---|---|---|"]
    for check in sorted(by_check, key=check_order):
        out += [f"#### {check}", ""]
        rows = {True: [], False: []}  # rows that cannot change numerics (info) are folded away
        for f in by_check[check]:
            g = "(absent)" if f.gpu is None else f"{_code(_value(f, f.gpu, full_values))} at {_where(f.gpu)}"
            n = "(absent)" if f.npu is None else f"{_code(_value(f, f.npu, full_values))} at {_where(f.npu)}"
            sev = Severity(f.severity)
            rows[not sev.loud].append(f"| {sev.markdown} | {f.rule} | {_code(f.key)} | "
                                              f"{g} | {n} | {_cell(clip(f.message, 2 * budget.SHOWN_CHARS, full_values))} |")
        if rows[False]:
            out += head + rows[False] + [""]
        if rows[True]:
            out += [f"<details><summary>{len(rows[True])} info finding(s) (cannot change numerics)</summary>", "",
                    *head, *rows[True], "", "</details>", ""]
    if not report.findings:
        out += ["No differences that can change numerics.", ""]
    for title, level in (("input errors", "error"), ("notes", "note")):
        entries = [e for e in report.errors if e.level == level]
        if entries:
            out += [f"#### {title}", ""]
            out += [f"- {_code(e.path)}: {_cell(e.message)}" for e in entries]
            out.append("")
    if show_masked and report.masked:
        out += ["<details><summary>masked substitutions</summary>", ""]
        for m in report.masked:
            g = f"{m.gpu.path}:{m.gpu.line} {m.gpu.source}" if m.gpu else "(absent)"
            n = f"{m.npu.path}:{m.npu.line} {m.npu.source}" if m.npu else "(absent)"
            out.append(f"- {m.rule} {_code(clip(g, budget.SHOWN_SOURCE, full_values))} → "
                       f"{_code(clip(n, budget.SHOWN_SOURCE, full_values))}")
        out += ["", "</details>", ""]
    res = report.details.get("curves")
    if res is not None:  # `curves`, `check` with logs: the verdict, the series and the plot
        plot = report.details.get("curves_plot")
        out.append(markdown_section(res, relative_to(plot, out_path) if plot else None))
    return "\n".join(out)
