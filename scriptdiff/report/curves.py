"""The curves as the pages show them: the html page's chart data (drawn by the page's own
script as inline SVG, no plotting library) and the markdown section.

`chart_data(res)` is plain JSON: per compared series its aligned points (at most
budget.CHART_POINTS, thinned so that every extreme survives: each bucket keeps its first
point and the points where GPU, NPU or the relative error are lowest and highest), the
events to mark (NaN/inf, skipped, overflow, spikes: each side's, from the counts the
verdict used), the divergence, the first N points the first-step verdict judges, and
whether a log axis suits it.
"""
from __future__ import annotations

import os

from .. import budget
from .values import md_cell as _cell
from .values import safe
from ..ruleset.secrets import redact_text
from .values import md_code as _code
from ..curves.metrics import _r
from ..curves.plot import chosen, events, first_span, log_axis
from ..curves.series import is_downstream
from ..curves.verdict import Result


def _num(v):
    """A value for JSON: 6 significant digits; NaN and infinities as None (marked as events)."""
    v = float(v)
    if v != v or v in (float("inf"), float("-inf")):
        return None
    return int(v) if v.is_integer() and abs(v) < 2 ** 53 else float(f"{v:.6g}")


def thinned(x, g, n, rel, limit: int = budget.CHART_POINTS):
    """Indices of the points kept: all of them up to `limit`, else per bucket the first and the
    lowest and highest of GPU, NPU and the relative error (so no spike is thinned away)."""
    import numpy as np

    m = len(x)
    if m <= limit:
        return np.arange(m)
    per = int(np.ceil(m / (limit / 7)))  # at most 7 points per bucket
    nb = int(np.ceil(m / per))
    pad = nb * per - m
    keep = [np.arange(0, m, per)]
    for v in (g, n, rel):
        w = np.concatenate([np.where(np.isfinite(v), v, np.nan), np.full(pad, np.nan)]).reshape(nb, per)
        ok = np.isfinite(w).any(axis=1)
        lo = np.nanargmin(np.where(np.isfinite(w), w, np.inf), axis=1)
        hi = np.nanargmax(np.where(np.isfinite(w), w, -np.inf), axis=1)
        base = np.arange(nb) * per
        keep += [(base + lo)[ok], (base + hi)[ok]]
        bad = ~np.isfinite(v)  # a non-finite point is kept (it is marked)
        keep.append(np.nonzero(bad)[0][:budget.CHART_NONFINITE])
    idx = np.unique(np.concatenate(keep))
    return idx[idx < m]


def chart_data(res: Result) -> dict:
    import numpy as np

    s = res.settings
    unit = "step" if res.axis is None or res.axis.name == "step" else res.axis.name
    first = chosen(res)
    names = first + sorted(k for k, st in res.series.items() if k not in first and st.compared)
    series = []
    for name in names:
        st = res.series[name]
        if st.x is None or not len(st.x):
            continue
        ok = np.isfinite(st.g) & np.isfinite(st.n)
        rel = np.full(len(st.x), np.nan)
        if st.rel is not None:
            rel[ok] = st.rel
        idx = thinned(st.x, st.g, st.n, rel)
        ev = events(res, name, st)
        series.append({
            "name": safe(redact_text(name)), "x": [_num(v) for v in st.x[idx]], "g": [_num(v) for v in st.g[idx]],
            "n": [_num(v) for v in st.n[idx]], "r": [_num(v) for v in rel[idx]],
            "points": int(len(st.x)), "shown": int(len(idx)), "log": log_axis(st.g, st.n),
            "div": _r(st.divergence), "first": _r(st.x[min(s.first, len(st.x)) - 1]),
            "warm": _r(st.x[first_span(res, st) - 1]), "mre": st.mre_all, "mre_first": st.mre_first,
            "beyond": st.beyond(s.rtol), "primary": name == res.primary, "downstream": is_downstream(name),
            "note": safe(redact_text(st.note)),
            "events": {side: {k: [_r(v) for v in xs] for k, xs in kinds.items()} for side, kinds in ev.items()},
        })
    return {"verdict": res.verdict, "evidence": [safe(redact_text(e)) for e in res.evidence], "unit": unit,
            "axis": safe(res.axis.reason) if res.axis else "", "rtol": s.rtol, "first": s.first, "series": series,
            "counts": {side: c.anomalies() for side, c in res.counts.items()},
            "one_sided": {k: [safe(redact_text(x)) for x in v] for k, v in res.one_sided.items()},
            "not_compared": [safe(redact_text(x)) for x in res.not_compared]}


def markdown_section(res: Result | None, plot: str | None = None) -> str:
    """The curves section of a markdown report: verdict, evidence, series table, the plot
    (its path as the markdown file sees it: the caller makes it relative)."""
    if res is None:
        return ""
    return redact_text(_markdown_section(res, plot))  # series names are the logs' own (tags, headers)


def _markdown_section(res: Result, plot: str | None) -> str:
    out = ["#### process data: training curves", "", f"**Verdict: {res.verdict}** ({_cell(res.axis.reason) if res.axis else ''})",
           ""]
    out += [f"- {_cell(e)}" for e in res.evidence]
    out += ["", "| Series | Points | First N | Whole run | Worst window | Max (at) | First beyond | Diverges |",
            "|---|---|---|---|---|---|---|---|"]
    for name, st in sorted(res.series.items(), key=lambda kv: (kv[0] != res.primary, kv[0])):
        if not st.compared:
            continue
        out.append(f"| {_code(name)} | {st.compared} | {100 * st.mre_first:.2f}% | {100 * st.mre_all:.2f}% | "
                   f"{100 * st.worst_window[2]:.2f}% | {100 * st.max_rel[1]:.2f}% ({_r(st.max_rel[0])}) | "
                   f"{_dash(_r(st.first_beyond))} | {_dash(_r(st.divergence))} |")
    out.append("")
    if plot:
        out += [f"![training curves: GPU vs NPU]({plot})", ""]
    return "\n".join(out) + "\n"


def relative_to(plot: str, document: str | None) -> str:
    """The plot's path as a markdown document at `document` (None: standard output, read from
    the working directory) links it: relative, with forward slashes, so that the document and
    the picture can move together (a PR comment, a CI artifact)."""
    base = os.path.dirname(os.path.abspath(document)) if document else os.getcwd()
    try:
        rel = os.path.relpath(os.path.abspath(plot), base)
    except ValueError:  # another drive: no relative path exists
        return plot.replace(os.sep, "/")
    return rel.replace(os.sep, "/")


def _dash(v) -> str:
    return "-" if v is None else str(v)
