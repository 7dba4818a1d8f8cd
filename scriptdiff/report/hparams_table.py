"""`scriptdiff hparams` output: the side-by-side table (text) or the contract plus "table" (JSON)."""
from __future__ import annotations

import io

from ..run.compare import equal
from ..model import Severity, jsonable
from ..ruleset.secrets import withhold_report
from . import render as render_report
from .markdown import _cell, _code
from .values import json_report, json_side, json_text, safe, shown
from ..ruleset.fidelity import said as masked_said

PIPE_WIDTH = 100  # the table's width when stdout is not a terminal


def origin(f) -> str:
    """How a value was obtained: at file:line (via $X), default, derived, unresolved."""
    if f is None:
        return "not set"
    if f.origin == "default":
        text = f"default ({f.via})" if f.via and f.via != "not set" else "default"
        if f.value is None:
            text = "not set"
        return text + (f"; {f.note}" if f.note else "")
    if f.origin == "derived":
        return f"derived: {f.via}" if f.via else "derived"
    # the header names each side's files; the basename keeps the table readable
    name = (f.path or "").replace("\\", "/").rsplit("/", 1)[-1]
    where = f"{name}:{f.line}" if f.line else name
    text = f"at {where}"
    if f.via:
        text += f" via {f.via}"
    if f.meta.get("unresolved"):
        text += " (unresolved: " + ", ".join("$" + u.lstrip("$") for u in f.meta["unresolved"]) + ")"
    return text


def row_json(key, g, n, full: bool = False) -> dict:
    def side(f):
        if f is None:
            return None
        d = {"value": jsonable(f.value), "origin": f.origin, "path": f.path,
             "line": f.line if f.origin == "explicit" else None, "source": f.side().source, "via": f.via}
        if f.note:
            d["note"] = f.note
        if f.meta.get("unresolved"):
            d["unresolved"] = list(f.meta["unresolved"])
        return d

    gv = g.value if g is not None else None
    nv = n.value if n is not None else None
    same = (gv is None and nv is None) or (gv is not None and nv is not None and equal(gv, nv))
    return {"key": key, "equal": same, "derived": bool((g and g.derived) or (n and n.derived)),
            "gpu": json_side(side(g), full), "npu": json_side(side(n), full)}


def _short(text: str) -> str:
    """An origin as the narrow text column shows it: "train.sh:25 via $LR", without "at "; a
    derived value by its formula alone (its inputs are rows of the table themselves)."""
    if text.startswith("derived: ") and " with " in text:
        return text.split(" with ", 1)[0]
    return text[3:] if text.startswith("at ") else text


def _mark(f) -> str:
    return Severity(f.severity).mark + " " + f.rule


def _summary(report) -> str:
    return (f"{len(report.table)} keys; {Severity.tally(report.findings)}; "
            f"{masked_said(report.masked)}")


def render_markdown(report, full_values: bool = False, list_errors: bool = True) -> str:
    """The same table as GitHub-flavoured markdown (`hparams -f markdown`)."""
    out = [f"## scriptdiff hparams: GPU {_cell(report.gpu)} vs NPU {_cell(report.npu)}", ""]
    for e in (report.errors if list_errors else ()):
        out.append(f"- {'note' if e.level == 'note' else 'error'}: {_cell(e.path)}: {_cell(e.message)}")
    if list_errors and report.errors:
        out.append("")
    flagged = {f.key: f for f in report.findings}
    out += ["| | key | GPU | GPU origin | NPU | NPU origin |", "|---|---|---|---|---|---|"]
    for key, g, n in report.table:
        f = flagged.get(key)
        mark = _mark(f) if f is not None else (
            "~" if g is not None and n is not None and not equal(g.value, n.value) else "")
        cells = (mark, _code(key), _cell(shown(g.value if g else None, full_values)), _cell(origin(g)),
                 _cell(shown(n.value if n else None, full_values)), _cell(origin(n)))
        out.append("| " + " | ".join(cells) + " |")
    out += ["", _summary(report), ""]
    return "\n".join(out)


def render(report, fmt: str = "text", color: bool = False, show_masked: bool = False, full_values: bool = False,
           **opts) -> str:
    withhold_report(report)  # as report.render does for every writer
    if fmt == "json":
        doc = json_report(report.to_json(), full_values)
        doc["table"] = [row_json(k, g, n, full_values) for k, g, n in report.table]
        return json_text(doc)
    if fmt == "markdown":
        return render_markdown(report, full_values, opts.get("list_errors", True))
    if fmt != "text":
        return render_report(report, fmt, color=color, show_masked=show_masked, full_values=full_values, **opts)
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    import shutil

    buf = io.StringIO()
    flagged = {f.key: f for f in report.findings}
    table = Table(show_lines=False, pad_edge=False)
    rows = []
    for key, g, n in report.table:
        f = flagged.get(key)
        mark = ""
        style = ""
        if f is not None:
            mark = _mark(f)
            style = Severity(f.severity).table_style
        elif g is not None and n is not None and not equal(g.value, n.value):
            mark = "~"
        rows.append(((mark, safe(key), shown(g.value if g else None, full_values), safe(_short(origin(g))),
                      shown(n.value if n else None, full_values), safe(_short(origin(n)))), style))
    # the origin (location) columns take the wrapping: the mark, key and values keep their width
    # up to a cap, so a narrow terminal or a pipe (100 columns) does not fold keys
    cols = ("", "key", "GPU", "GPU origin", "NPU", "NPU origin")
    longest = [max([len(c)] + [len(r[i]) for r, _ in rows]) for i, c in enumerate(cols)]
    # a cell wraps between words, not inside one: no column narrower than its longest word where
    # the terminal is wide enough for that
    word = [max([len(c)] + [len(w) for r, _ in rows for w in r[i].split()]) for i, c in enumerate(cols)]
    # a terminal's width (coloured or not), else 100 columns
    terminal = opts.get("width") or color or opts.get("terminal")
    width = opts.get("width") or (shutil.get_terminal_size((PIPE_WIDTH, 24)).columns if terminal else PIPE_WIDTH)
    caps = (8, 30, 20, 0, 20, 0)
    for drop in ((), (3, 5), tuple(range(len(cols)))):  # too narrow for every word whole: the origins
        kept = [0 if i in drop else w for i, w in enumerate(word)]  # fold first, then every cell
        if sum(kept) + 3 * len(cols) + 1 + 2 * 14 * (3 in drop) <= width or len(drop) == len(cols):
            word = kept
            break
    console = Console(file=buf, force_terminal=bool(color), no_color=not color, width=width,
                      highlight=False, soft_wrap=False)
    console.print(Text(f"scriptdiff hparams: GPU {safe(report.gpu)}  vs  NPU {safe(report.npu)}", style="bold"))
    for e in (report.errors if opts.get("list_errors", True) else ()):  # else printed on stderr
        label, style = ("note", "cyan") if e.level == "note" else ("error", "red")
        console.print(Text(f"{label}: {safe(e.path)}: {safe(e.message)}", style=style))
    fixed = [max(min(n, cap), w) for n, cap, w in zip(longest, caps, word)]
    # 7 borders, 1 space either side of every cell but the outer two. The origin columns take
    # the rest; when they would get less than a quarter of the width each, the values fold first
    # (down to 10), then the origins (down to 14), then the key (down to 8)
    keep = max(14, width // 4)
    over = sum(fixed) + 7 + 10 + 2 * keep - width
    for i in (2, 4, "origin", 1):
        if over <= 0:
            break
        if i == "origin":
            cut = min((over + 1) // 2, keep - max(14, word[3], word[5]))
            keep -= cut
            over -= 2 * cut
        else:
            cut = min(over, max(0, fixed[i] - max(word[i], 8 if i == 1 else 10)))
            fixed[i] -= cut
            over -= cut
    room = max(12, (width - sum(fixed) - 7 - 10) // 2)
    for i, col in enumerate(cols):
        if col.endswith("origin"):
            table.add_column(col, overflow="fold", width=max(word[i], min(longest[i], room)))
        else:
            table.add_column(col, overflow="fold", min_width=fixed[i], max_width=max(fixed[i], 1))
    for cells, style in rows:
        table.add_row(*cells, style=style)
    console.print(table)
    console.print(_summary(report))
    return buf.getvalue()
