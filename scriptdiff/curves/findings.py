"""A curves comparison as Findings of check `process` (rules/curves.yaml), and as text lines.

One finding carries each kind of mismatch that holds (the verdict and those `also` holding,
each under its kind's rule, the evidence in `extra`); a learning-rate schedule that differs and
any other logged series beyond the tolerance get a finding each.
An `equal` verdict gives no finding: the overview says it, with its evidence.
"""
from __future__ import annotations

from ..run.finding import finding
from ..model import Finding, Side
from .metrics import AT, SeriesStats, _r
from .readers import line_text
from .series import is_downstream
from .verdict import ANOMALY, DOWNSTREAM, FIRST, LONG, NOT_COMPARED, Result, floor_said

CHECK = "process"
RULE_OF = {FIRST: "curves-first-step-differs", LONG: "curves-long-term-differs",
           ANOMALY: "curves-anomalies-more-often", DOWNSTREAM: "curves-downstream-differs",
           NOT_COMPARED: "curves-not-comparable"}


def _pct(x: float) -> str:
    return f"{100 * x:.2f}%"


def _reader(run, path: str | None, name: str | None) -> str:
    return next((r.reader for r in run.recognised if r.path == path and (name is None or name in r.metrics)),
                next((r.reader for r in run.recognised if r.path == path), ""))


def _where(res: Result, side: str, name: str | None) -> tuple[str | None, str]:
    """The file a series was read from (its first point's) and the reader that read it."""
    run = res.gpu if side == "gpu" else res.npu
    t = run.tracks.get(name) if name else None
    if t is not None and t.first_line:
        path = t.first_line[0]
        return path, _reader(run, path, name)
    rec = run.recognised[0] if run.recognised else None
    return (rec.path if rec else run.label), (rec.reader if rec else "")


def _step(res: Result, side: str, x) -> float | None:
    """The step of `side` at axis point x (the axis may be consumed samples or tokens)."""
    import numpy as np

    if x is None:
        return None
    if res.axis is None or res.axis.track is None:
        return float(x)
    run = res.gpu if side == "gpu" else res.npu
    t = run.tracks.get(res.axis.track)
    if t is None:
        return float(x)
    s, v = t.arrays()
    ok = np.isfinite(v)
    return float(round(float(np.interp(x, v[ok], s[ok])))) if ok.any() else float(x)


def _place(res: Result, side: str, step, evaluation: bool = False) -> tuple[str, int | None, int | None] | None:
    """(file, line, byte offset) of the record of `step` on `side` (an evaluation's record
    for an evaluation metric), or None."""
    if step is None:
        return None
    got = (res.gpu if side == "gpu" else res.npu).lines.where(step, evaluation)
    return None if got is None else got[:3]


def _side(res: Result, side: str, name: str | None, value, x=None) -> Side:
    """One side of a finding: the value, and where it was read: the log line of the step at
    axis point x (its text as the excerpt, the reader as `via`), else the series' file."""
    run = res.gpu if side == "gpu" else res.npu
    at = _place(res, side, _step(res, side, x), bool(name) and is_downstream(name))
    if at is not None:
        path, line, offset = at
        reader = _reader(run, path, name)
        if line:
            return Side(value=value, path=path, line=line, source=line_text(run, path, line, offset) or reader,
                        via=reader or None)
        return Side(value=value, path=path, line=None, source=reader)
    path, reader = _where(res, side, name)
    return Side(value=value, path=path, line=None, source=reader)


def cited(res: Result, side: str, steps, count: int | None = None, unit: str = "step",
          evaluation: bool = False) -> str:
    """"steps 300, 800, 1300 (npu/train.log:301, 801, 1301)": the first steps of an event
    (axis points on the step axis, else converted), their log lines, and how many more."""
    steps = [x for x in steps if x is not None]
    if not steps:
        return ""
    count = len(steps) if count is None else max(count, len(steps))
    places = []
    for x in steps:
        at = _place(res, side, _step(res, side, x), evaluation)
        places.append((at[0], at[1]) if at is not None else (None, None))
    files = (res.gpu if side == "gpu" else res.npu).lines.files
    lines, last = [], None
    for path, line in places:
        if path is None:
            continue
        base = path.replace("\\", "/").rsplit("/", 1)[-1]
        if sum(1 for f in files if f.replace("\\", "/").rsplit("/", 1)[-1] == base) == 1:
            path = base  # the side's files are named in the report: the base name is enough
        bit = str(line) if line else ""
        if path != last:
            bit = f"{path}:{bit}" if bit else path
            last = path
        elif not bit:
            continue
        lines.append(bit)
    more = f" and {count - len(steps)} more" if count > len(steps) else ""
    what = f"{unit}s" if count > 1 else unit
    return f"{what} {', '.join(str(_r(x)) for x in steps)}{more}" + (f" ({', '.join(lines)})" if lines else "")


def _at(st: SeriesStats, x):
    """(gpu, npu) values of a series at axis point x."""
    import numpy as np

    if x is None or st.x is None or len(st.x) == 0:
        return None, None
    i = int(np.searchsorted(st.x, x))
    i = min(i, len(st.x) - 1)
    return _r(st.g[i]), _r(st.n[i])


def _beyond(st: SeriesStats, rtol: float, first: int | None = None) -> tuple[list, int]:
    """The first few axis points where a series is beyond the tolerance, and how many (over
    its first `first` compared points, else the whole run)."""
    import numpy as np

    if st.rel is None or st.x is None:
        return [], 0
    ok = np.isfinite(st.g) & np.isfinite(st.n)
    xs, rel = st.x[ok], st.rel
    if first is not None:
        xs, rel = xs[:first], rel[:first]
    over = np.nonzero(rel > rtol)[0]
    return [float(xs[i]) for i in over[:AT]], int(len(over))


def _make(res: Result, rule_name: str, key_name: str, gval, nval, message: str, extra: dict, x=None) -> Finding:
    return finding(rule_name, key=f"curve:{key_name}",
                   gpu=_side(res, "gpu", key_name, gval, x), npu=_side(res, "npu", key_name, nval, x),
                   message=message, extra=extra)


def findings(res: Result) -> list[Finding]:
    out: list[Finding] = []
    s = res.settings
    unit = "step" if res.axis is None or res.axis.name == "step" else res.axis.name
    loss = res.loss
    extra = {"verdict": res.verdict, "evidence": list(res.evidence),
             "axis": res.axis.name if res.axis else None}
    if res.also:
        extra["also"] = list(res.also)
    holds = [res.verdict, *res.also]
    if res.verdict == NOT_COMPARED:
        g = ", ".join(sorted(k for k, t in res.gpu.tracks.items() if t.points)[:8]) or "nothing"
        n = ", ".join(sorted(k for k, t in res.npu.tracks.items() if t.points)[:8]) or "nothing"
        out.append(_make(res, RULE_OF[NOT_COMPARED], res.primary or "loss", g, n,
                         f"no loss series both sides logged: the curves were not compared "
                         f"(GPU logs {g}; NPU logs {n})", extra))
        return out
    if FIRST in holds:
        x, g, n = loss.first_values
        k = min(s.first, loss.compared)
        steps, count = _beyond(loss, s.tol(loss.name), k)
        out.append(_make(res, RULE_OF[FIRST], loss.name, _r(g), _r(n),
                         f"first-step difference: {loss.name} differs from the first steps: mean relative error "
                         f"{_pct(loss.mre_first)} over the first {k} points ({_tolerance(s, loss)}); at {unit} "
                         f"{_r(x)} GPU {g:.6g}, NPU {n:.6g}; beyond the tolerance at {count} of "
                         f"the first {k} points: {cited(res, 'npu', steps, count, unit)}", extra, x))
    if ANOMALY in holds:
        gc, nc = res.counts["gpu"].anomalies(), res.counts["npu"].anomalies()
        worse = [k for k in nc if nc[k] > gc[k]]
        gv = ", ".join(f"{k} {gc[k]}" for k in gc)
        nv = ", ".join(f"{k} {nc[k]}" for k in nc)
        parts = []
        for k in worse:
            where = cited(res, "npu", res.counts["npu"].steps_of(k), nc[k], unit)
            gw = cited(res, "gpu", res.counts["gpu"].steps_of(k), gc[k], unit)
            parts.append(f"{k} {gc[k]} vs {nc[k]}: NPU at {where or 'steps not logged'}"
                         + (f", GPU at {gw}" if gw else ""))
        first = res.counts["npu"].steps_of(worse[0])
        x = first[0] if first else None
        out.append(_make(res, RULE_OF[ANOMALY], loss.name, gv, nv,
                         f"overflow, NaN or spikes: the NPU run has more {', '.join(worse)} than the GPU run "
                         f"({'; '.join(parts)})", extra, x))
    if LONG in holds:
        x = loss.divergence if loss.divergence is not None else loss.worst_window[0]
        g, n = _at(loss, x)
        a, b, m = loss.worst_window
        steps, count = _beyond(loss, s.tol(loss.name))
        first = (f"first persistent divergence at {unit} {_r(loss.divergence)}"
                 if loss.divergence is not None
                 else f"no single point of divergence; worst window at {unit} {_r(a)}")
        out.append(_make(res, RULE_OF[LONG], loss.name, g, n,
                         f"long-term difference: {loss.name} matches early (first {min(s.first, loss.compared)} "
                         f"points: {_pct(loss.mre_first)}) and drifts later: {first}; mean relative error "
                         f"{_pct(loss.mre_all)} over the run, {_pct(m)} over {unit}s {_r(a)}-{_r(b)}, largest "
                         f"{_pct(loss.max_rel[1])} at {unit} {_r(loss.max_rel[0])}; beyond the tolerance"
                         f"{_floored(s, loss)} at {count} of {loss.compared} points: "
                         f"{cited(res, 'npu', steps, count, unit)}", extra, x))
    if DOWNSTREAM in holds:
        for d in res.downstream():
            if not (d.compared and d.beyond(s.tol(d.name))):
                continue
            x, g, n = d.last_values
            steps, count = _beyond(d, s.tol(d.name))
            out.append(_make(res, RULE_OF[DOWNSTREAM], d.name, _r(g), _r(n),
                             f"equal losses, different downstream metrics: {loss.name} matches (mean relative "
                             f"error {_pct(loss.mre_all)}) but {d.name} differs: mean relative error "
                             f"{_pct(d.mre_all)} over {d.compared} points; at {unit} {_r(x)} GPU {g:.6g}, "
                             f"NPU {n:.6g}; beyond the tolerance at {count} of {d.compared} "
                             f"points: {cited(res, 'npu', steps, count, unit, True)}", extra, x))
    for name, st in sorted(res.series.items()):
        if name == res.primary or is_downstream(name) or not st.compared or not st.beyond(s.tol(name)):
            continue
        rule = "curves-lr-differs" if name == "lr" else "curves-series-differs"
        x = st.first_beyond
        g, n = _at(st, x)
        steps, count = _beyond(st, s.tol(name))
        what = "learning-rate schedule differs" if name == "lr" else f"{name} differs"
        out.append(_make(res, rule, name, g, n,
                         f"{what}: mean relative error {_pct(st.mre_all)} over {st.compared} points, first beyond "
                         f"{_pct(s.tol(name))} at {unit} {_r(x)}, largest {_pct(st.max_rel[1])} at "
                         f"{unit} {_r(st.max_rel[0])}; beyond the tolerance at {count} of {st.compared} points: "
                         f"{cited(res, 'npu', steps, count, unit)}", {"series": st.to_json()}, x))
    return out


def _tolerance(s, st) -> str:
    """"tolerance 1.00%", or with a floor (`--floor`) the spread it is and how far beyond it."""
    if st.name not in s.floor:
        return f"tolerance {_pct(s.rtol)}"
    return f"tolerance {_pct(s.tol(st.name))}; {floor_said(s, st)}"


def _floored(s, st) -> str:
    return f" ({_tolerance(s, st)})" if st.name in s.floor else ""


def overview(res: Result) -> list[str]:
    """What was read, how it was aligned, the verdict and its evidence, the series table."""
    lines = []
    for side, run in (("GPU", res.gpu), ("NPU", res.npu)):
        for r in run.recognised:
            lines.append(f"{side} read {r.describe()}")
        for f in run.skipped_files:
            lines.append(f"{side} skipped {f}")
    s = res.settings
    if s.floor:
        side = s.floor_side.upper()
        shown = sorted(s.floor.items(), key=lambda kv: (kv[0] != res.primary, kv[0]))
        lines.append(f"floor: the {side}-to-{side} spread of two runs sets each metric's tolerance (at least "
                     f"{_pct(s.rtol)}): " + ", ".join(f"{k} {_pct(v)}" for k, v in shown[:8])
                     + (" ..." if len(shown) > 8 else ""))
    if res.axis:
        lines.append(res.axis.reason)
    lines.append(f"verdict: {res.said}")
    lines += [f"  {e}" for e in res.evidence]
    if res.series:
        lines += _series_table(res)
    for side in ("gpu", "npu"):
        if res.one_sided.get(side):
            shown = ", ".join(res.one_sided[side][:8]) + (" ..." if len(res.one_sided[side]) > 8 else "")
            lines.append(f"logged on {side.upper()} only: {shown}")
    if res.not_compared:
        lines.append(f"not compared (timing, bookkeeping): {', '.join(res.not_compared)}")
    return lines


def _series_table(res: Result) -> list[str]:
    """The series table: each column as wide as its widest cell, names whole (a table that
    fits a terminal needs no wrapping, and no name or number is cut)."""
    head = ("series", "points", "first N", "run", "worst win", "max", "at", "beyond", "diverges")
    rows: list = []
    for name, st in sorted(res.series.items(), key=lambda kv: (kv[0] != res.primary, kv[0])):
        if not st.compared:
            rows.append((name, str(st.points), "no point finite on both sides"))
        else:
            rows.append((name, str(st.compared), _pct(st.mre_first), _pct(st.mre_all), _pct(st.worst_window[2]),
                         _pct(st.max_rel[1]), _num(st.max_rel[0]), _num(st.first_beyond), _num(st.divergence)))
        if st.note:
            rows.append(f"  {name}: {st.note}")
    cells = [r for r in rows if isinstance(r, tuple)]
    width = [max([len(h)] + [len(r[i]) for r in cells if i < len(r) and (len(r) == len(head) or i < 2)])
             for i, h in enumerate(head)]

    def line(r) -> str:
        if len(r) < len(head):  # a series with no point finite on both sides: its name, its points, why
            return f"{r[0].ljust(width[0])} {r[1].rjust(width[1])}  {r[2]}"
        return " ".join([r[0].ljust(width[0])] + [c.rjust(w) for c, w in zip(r[1:], width[1:])]).rstrip()
    return [line(head)] + [r if isinstance(r, str) else line(r) for r in rows]


def _num(x) -> str:
    v = _r(x)
    return "-" if v is None else str(v)
