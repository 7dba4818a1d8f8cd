"""`scriptdiff hparams` output: the side-by-side table (text) or the contract plus "table" (JSON)."""
from __future__ import annotations

import io

from ..compare import equal
from ..model import jsonable
from . import render as render_report
from .values import json_report, json_side, json_text, safe, shown


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


def render(report, fmt: str = "text", color: bool = False, show_masked: bool = False, full_values: bool = False,
           **opts) -> str:
    if fmt == "json":
        doc = json_report(report.to_json(), full_values)
        doc["table"] = [row_json(k, g, n, full_values) for k, g, n in report.table]
        return json_text(doc)
    if fmt != "text":
        return render_report(report, fmt, color=color, show_masked=show_masked, full_values=full_values, **opts)
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    import shutil

    buf = io.StringIO()
    width = opts.get("width") or (shutil.get_terminal_size((160, 24)).columns if color else 240)
    console = Console(file=buf, force_terminal=bool(color), no_color=not color, width=width,
                      highlight=False, soft_wrap=False)
    console.print(Text(f"scriptdiff hparams: GPU {safe(report.gpu)}  vs  NPU {safe(report.npu)}", style="bold"))
    for e in (report.errors if opts.get("list_errors", True) else ()):  # else printed on stderr
        label, style = ("note", "cyan") if e.level == "note" else ("error", "red")
        console.print(Text(f"{label}: {safe(e.path)}: {safe(e.message)}", style=style))
    flagged = {f.key: f for f in report.findings}
    table = Table(show_lines=False, pad_edge=False)
    for col in ("", "key", "GPU", "GPU origin", "NPU", "NPU origin"):
        table.add_column(col, overflow="fold")
    for key, g, n in report.table:
        f = flagged.get(key)
        mark = ""
        style = ""
        if f is not None:
            mark = {"error": "E", "warning": "W", "info": "i"}.get(f.severity, "?") + " " + f.rule
            style = {"error": "red", "warning": "yellow", "info": "cyan"}.get(f.severity, "")
        elif g is not None and n is not None and not equal(g.value, n.value):
            mark = "~"
        table.add_row(mark, safe(key), shown(g.value if g else None, full_values), safe(origin(g)),
                      shown(n.value if n else None, full_values), safe(origin(n)), style=style)
    console.print(table)
    counts = {s: sum(1 for f in report.findings if f.severity == s) for s in ("error", "warning", "info")}
    console.print(f"{len(report.table)} keys; {counts['error']} error(s), {counts['warning']} warning(s), "
                  f"{counts['info']} info; {len(report.masked)} expected substitution(s) masked")
    return buf.getvalue()
