"""Terminal output (rich): findings grouped by check, severity coloured, both sides shown.

Everything taken from the inputs (paths, keys, values, source lines, messages) passes
through report.values: control characters escaped, long values cut (`--full-values`: not)."""
from __future__ import annotations

import io

from .. import budget
from ..model import Severity, Side
from ..ruleset.registry import check_order
from .values import clip, record_rows, safe, shown
from ..ruleset.fidelity import said as masked_said



def _block(value) -> list[str] | None:
    """The lines of a multi-line text value (a hunk's removed or added lines), else None."""
    if isinstance(value, str) and "\n" in value.rstrip("\n"):
        return value.rstrip("\n").split("\n")
    return None


def _loc(side) -> str:
    if side is None:
        return "(absent)"
    if side.path is None:
        return (side.source or "-") + (f" ({side.via})" if side.via else "")
    where = side.path + (f":{side.line}" if side.line else "")
    if side.line is None and side.source in ("default", "derived"):
        where += f" ({side.source}{', ' + side.via if side.via else ''})"
    elif side.via:
        where += f" (via {side.via})"
    return where


def _sides(f) -> list[tuple[str, object]]:
    """The labelled sides a finding shows: GPU and NPU, or, for one side's claim against its own
    run (checks/evidence.py), that side's claim and then what its run reported."""
    ev = f.extra.get("run_says")
    if not ev:
        return [("GPU", f.gpu), ("NPU", f.npu)]
    run = Side(value=ev["value"], path=ev["path"], line=ev["line"], source=ev["source"])
    return [(ev["side"].upper(), f.gpu if ev["side"] == "gpu" else f.npu), (f"{ev['side'].upper()} run", run)]


def _say(console, line, hang: int = 4, lead: str | None = None) -> None:
    """Print `line` (a rich Text). On a terminal narrower than the line, its continuation wraps
    under an indentation (`hang` columns, or `lead`: a quoted source line's gutter `     | `)
    instead of at column 0; in a file or a pipe lines are never broken (soft wrap)."""
    from rich.text import Text

    width = console.width
    if console.soft_wrap or line.cell_len <= width:
        console.print(line)
        return
    pad = lead if lead is not None else " " * hang
    first = line.wrap(console, width)[0]
    first.rstrip()
    rest = line[len(first.plain):]
    rest = rest[len(rest.plain) - len(rest.plain.lstrip()):]
    console.print(first)
    for part in rest.wrap(console, max(8, width - len(pad))):
        part.rstrip()
        console.print(Text(pad, style=line.style) + part)


def render(report, show_masked: bool = False, color: bool | None = None, width: int | None = None,
           full_values: bool = False, list_errors: bool = True, quiet: bool = False, terminal: bool = False,
           **_options) -> str:
    from rich.console import Console
    from rich.markup import escape
    from rich.text import Text

    buf = io.StringIO()
    import shutil

    # on a terminal (coloured or not: NO_COLOR, --color never), fit its width; in a file or pipe,
    # never break lines (grep-friendly)
    wrap = bool(color or terminal)
    width = width or (shutil.get_terminal_size((110, 24)).columns if wrap else 10_000)
    console = Console(file=buf, force_terminal=bool(color), no_color=not color, width=width,
                      highlight=False, soft_wrap=not wrap)
    report.sorted()
    if quiet:  # --quiet: the summary only (each check's verdict, the counts, what was read)
        for check in sorted(report.verdicts, key=check_order):
            verdict, reason = report.verdicts[check]
            console.print(Text(safe(f"{check}: {verdict} ({reason})")))
        _summary(console, report, show_masked, quiet=True)
        return buf.getvalue()
    console.print(Text(f"scriptdiff: GPU {safe(report.gpu)}  vs  NPU {safe(report.npu)}", style="bold"))
    for line in report.overview:  # a continuation hangs under the line's own indentation
        text = safe(line)
        _say(console, Text(text), hang=len(text) - len(text.lstrip()) + 2)
    for e in (report.errors if list_errors else ()):  # else the command printed them on stderr
        label, style = ("note", "cyan") if e.level == "note" else ("error", "red")
        console.print(Text(f"{label}: {safe(e.path)}: {clip(e.message, 2 * budget.SHOWN_CHARS, full_values)}", style=style))
    by_check: dict[str, list] = {}
    for f in report.findings:
        by_check.setdefault(f.check, []).append(f)
    for check in sorted(set(by_check) | set(report.verdicts), key=check_order):
        items = by_check.get(check, [])
        head = f"\n== {check} "
        reason = None
        if check in report.verdicts:
            verdict, reason = report.verdicts[check]
            head += f"[{verdict}] "
        console.print(Text(head + "=" * max(0, 60 - len(head)), style="bold"))
        if reason:  # on its own line: reasons are long and must not wrap into the rule
            console.print(Text(f"   {safe(reason)}", style="dim"))
        for f in items:
            line = Text()
            line.append(f"{f.severity:<7} ", style=Severity(f.severity).style)
            line.append(f"{f.rule} ", style="bold")
            line.append(safe(f.key), style="bold magenta")
            line.append(f"  {clip(f.message, 2 * budget.SHOWN_CHARS, full_values)}")
            _say(console, line, hang=8)
            said = (f.extra.get("reaches") or {}).get("said") if f.extra else None
            if said:  # where a code difference goes (lang/python/relevance.py)
                _say(console, Text(f"    reaches {clip(said, 2 * budget.SHOWN_CHARS, full_values)}", style="dim"), hang=8)
            rows = record_rows(f.check, [s.value if s is not None else None for s in (f.gpu, f.npu)])
            if rows is not None:  # a data file or a tensor: a short table of its fields
                widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
                cells = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
                console.print(Text(f"         {cells[0]}".rstrip(), style="dim"))
            for i, (label, side) in enumerate(_sides(f)):
                if rows is not None:
                    where = f"  at {escape(safe(_loc(side)))}" if side is not None else ""
                    console.print(f"    {label}: {escape(cells[i + 1])}{where}")
                    continue
                block = _block(side.value) if side is not None else None
                if block is not None:  # under the finding, indented: never inside the value column
                    console.print(f"    {label}: {len(block)} lines  at {escape(safe(_loc(side)))}")
                    cut = block if full_values else block[:budget.SHOWN_BLOCK_LINES]
                    for text in cut:
                        console.print(Text(f"          | {clip(text.rstrip(), budget.SHOWN_SOURCE, full_values)}", style="dim"))
                    if len(cut) < len(block):
                        console.print(Text(f"          | … ({len(block) - len(cut)} more lines)", style="dim"))
                    continue
                val = shown(side.value, full_values) if side is not None else "(absent)"
                _say(console, Text(f"    {label}: {val}  at {safe(_loc(side))}"), hang=9)
                if side is not None and side.line and side.source and side.source not in ("default", "derived"):
                    source = clip(side.source.rstrip(), budget.SHOWN_SOURCE, full_values)
                    _say(console, Text(f"      {side.line:>5} | {source}", style="dim"), lead=" " * 12 + "| ")
    if show_masked and report.masked:
        console.print(Text(f"\n== masked substitutions ({len(report.masked)}) " + "=" * 20, style="bold"))
        for m in report.masked:
            g = f"{m.gpu.path}:{m.gpu.line} {m.gpu.source}" if m.gpu else "(absent)"
            n = f"{m.npu.path}:{m.npu.line} {m.npu.source}" if m.npu else "(absent)"
            console.print(f"  {m.rule}  {escape(clip(g, budget.SHOWN_SOURCE, full_values))}  ->  "
                          f"{escape(clip(n, budget.SHOWN_SOURCE, full_values))}  {escape('[' + (m.fidelity or 'exact') + ']')}")
    _summary(console, report, show_masked)
    return buf.getvalue()


def _summary(console, report, show_masked: bool, quiet: bool = False) -> None:
    """The closing lines: counts by severity, masked substitutions, errors and notes, then
    what was read."""
    from rich.text import Text

    counts = Severity.counts(report.findings)
    notes = sum(1 for e in report.errors if e.level == "note")
    errors = len(report.errors) - notes
    suppressed = report.details.get("baseline_suppressed", 0)
    summary = (("" if quiet else "\n")
               + f"{Severity.tally(report.findings)}; {masked_said(report.masked)}"
               + ("" if show_masked or quiet or not report.masked else " (--show-masked lists them)")
               + (f"; {errors} input error(s)" if errors else "")
               + (f"; {notes} note(s)" if notes else "")
               + (f"; {suppressed} suppressed by the baseline" if suppressed else ""))
    style = next((s.style for s, n in counts.items() if n and s.loud), "green")  # the worst loud one's
    console.print(Text(summary, style=style))
    account = report.account_line()
    if account:
        console.print(Text(safe(account), style="dim"))
    for line in report.evidence_lines():  # what each run's log said of its scripts' settings
        console.print(Text(safe(line), style="dim"))
