"""A curves comparison as Findings of check `process` (rules/curves.yaml), and as text lines.

One finding carries the verdict (its kind's rule, the evidence in `extra`); a learning-rate
schedule that differs and any other logged series beyond the tolerance get a finding each.
An `equal` verdict gives no finding: the overview says it, with its evidence.
"""
from __future__ import annotations

from ..finding import finding
from ..model import Finding, Side
from .metrics import SeriesStats, _r
from .series import is_downstream
from .verdict import ANOMALY, DOWNSTREAM, FIRST, LONG, NOT_COMPARED, Result

CHECK = "process"
RULE_OF = {FIRST: "curves-first-step-differs", LONG: "curves-long-term-differs",
           ANOMALY: "curves-anomalies-more-often", DOWNSTREAM: "curves-downstream-differs",
           NOT_COMPARED: "curves-not-comparable"}


def _pct(x: float) -> str:
    return f"{100 * x:.2f}%"


def _where(res: Result, side: str, name: str | None) -> tuple[str | None, str]:
    """The file a series was read from (its first point's) and the reader that read it."""
    run = res.gpu if side == "gpu" else res.npu
    t = run.tracks.get(name) if name else None
    if t is not None and t.first_line:
        path = t.first_line[0]
        reader = next((r.reader for r in run.recognised if r.path == path and name in r.metrics), "")
        return path, reader
    rec = run.recognised[0] if run.recognised else None
    return (rec.path if rec else run.label), (rec.reader if rec else "")


def _side(res: Result, side: str, name: str | None, value) -> Side:
    path, reader = _where(res, side, name)
    return Side(value=value, path=path, line=None, source=reader)


def _at(st: SeriesStats, x):
    """(gpu, npu) values of a series at axis point x."""
    import numpy as np

    if x is None or st.x is None or len(st.x) == 0:
        return None, None
    i = int(np.searchsorted(st.x, x))
    i = min(i, len(st.x) - 1)
    return _r(st.g[i]), _r(st.n[i])


def _make(res: Result, rule_name: str, key_name: str, gval, nval, message: str, extra: dict) -> Finding:
    return finding(rule_name, key=f"curve:{key_name}",
                   gpu=_side(res, "gpu", key_name, gval), npu=_side(res, "npu", key_name, nval),
                   message=message, extra=extra)


def findings(res: Result) -> list[Finding]:
    out: list[Finding] = []
    s = res.settings
    unit = "step" if res.axis is None or res.axis.name == "step" else res.axis.name
    loss = res.loss
    extra = {"verdict": res.verdict, "evidence": list(res.evidence),
             "axis": res.axis.name if res.axis else None}
    if res.verdict == NOT_COMPARED:
        g = ", ".join(sorted(k for k, t in res.gpu.tracks.items() if t.points)[:8]) or "nothing"
        n = ", ".join(sorted(k for k, t in res.npu.tracks.items() if t.points)[:8]) or "nothing"
        out.append(_make(res, RULE_OF[NOT_COMPARED], res.primary or "loss", g, n,
                         f"no loss series both sides logged: the curves were not compared "
                         f"(GPU logs {g}; NPU logs {n})", extra))
        return out
    if res.verdict == FIRST:
        x, g, n = loss.first_values
        out.append(_make(res, RULE_OF[FIRST], loss.name, _r(g), _r(n),
                         f"first-step difference: {loss.name} differs from the first steps: mean relative error "
                         f"{_pct(loss.mre_first)} over the first {min(s.first, loss.compared)} points "
                         f"(tolerance {_pct(s.rtol)}); at {unit} {_r(x)} GPU {g:.6g}, NPU {n:.6g}", extra))
    elif res.verdict == ANOMALY:
        gc, nc = res.counts["gpu"].anomalies(), res.counts["npu"].anomalies()
        worse = [k for k in nc if nc[k] > gc[k]]
        gv = ", ".join(f"{k} {gc[k]}" for k in gc)
        nv = ", ".join(f"{k} {nc[k]}" for k in nc)
        spikes = res.counts["npu"].spike_at
        at = f"; NPU spikes at {unit}s {', '.join(str(_r(x)) for x in spikes)}" if "spikes" in worse and spikes else ""
        out.append(_make(res, RULE_OF[ANOMALY], loss.name, gv, nv,
                         f"overflow, NaN or spikes: the NPU run has more {', '.join(worse)} than the GPU run "
                         f"({', '.join(f'{k} {gc[k]} vs {nc[k]}' for k in worse)}){at}", extra))
    elif res.verdict == LONG:
        x = loss.divergence if loss.divergence is not None else loss.worst_window[0]
        g, n = _at(loss, x)
        a, b, m = loss.worst_window
        first = (f"first persistent divergence at {unit} {_r(loss.divergence)}" if loss.divergence is not None
                 else f"no single point of divergence; worst window at {unit} {_r(a)}")
        out.append(_make(res, RULE_OF[LONG], loss.name, g, n,
                         f"long-term difference: {loss.name} matches early (first {min(s.first, loss.compared)} "
                         f"points: {_pct(loss.mre_first)}) and drifts later: {first}; mean relative error "
                         f"{_pct(loss.mre_all)} over the run, {_pct(m)} over {unit}s {_r(a)}-{_r(b)}, largest "
                         f"{_pct(loss.max_rel[1])} at {unit} {_r(loss.max_rel[0])}", extra))
    elif res.verdict == DOWNSTREAM:
        for d in res.downstream():
            if not (d.compared and d.beyond(s.rtol)):
                continue
            x, g, n = d.last_values
            out.append(_make(res, RULE_OF[DOWNSTREAM], d.name, _r(g), _r(n),
                             f"equal losses, different downstream metrics: {loss.name} matches (mean relative "
                             f"error {_pct(loss.mre_all)}) but {d.name} differs: mean relative error "
                             f"{_pct(d.mre_all)} over {d.compared} points; at {unit} {_r(x)} GPU {g:.6g}, "
                             f"NPU {n:.6g}", extra))
    for name, st in sorted(res.series.items()):
        if name == res.primary or is_downstream(name) or not st.compared or not st.beyond(s.rtol):
            continue
        rule = "curves-lr-differs" if name == "lr" else "curves-series-differs"
        x = st.first_beyond
        g, n = _at(st, x)
        what = "learning-rate schedule differs" if name == "lr" else f"{name} differs"
        out.append(_make(res, rule, name, g, n,
                         f"{what}: mean relative error {_pct(st.mre_all)} over {st.compared} points, first beyond "
                         f"{_pct(s.rtol)} at {unit} {_r(x)}, largest {_pct(st.max_rel[1])} at {unit} "
                         f"{_r(st.max_rel[0])}", {"series": st.to_json()}))
    return out


def overview(res: Result) -> list[str]:
    """What was read, how it was aligned, the verdict and its evidence, the series table."""
    lines = []
    for side, run in (("GPU", res.gpu), ("NPU", res.npu)):
        for r in run.recognised:
            lines.append(f"{side} read {r.describe()}")
        for f in run.skipped_files:
            lines.append(f"{side} skipped {f}")
    if res.axis:
        lines.append(res.axis.reason)
    lines.append(f"verdict: {res.verdict}")
    lines += [f"  {e}" for e in res.evidence]
    if res.series:
        lines.append(f"{'series':<24} {'points':>7} {'first N':>8} {'run':>8} {'worst win':>9} {'max':>8} "
                     f"{'at':>8} {'beyond':>8} {'diverges':>8}")
        for name, st in sorted(res.series.items(), key=lambda kv: (kv[0] != res.primary, kv[0])):
            if not st.compared:
                lines.append(f"{name[:24]:<24} {st.points:>7}  no point finite on both sides")
                continue
            lines.append(f"{name[:24]:<24} {st.compared:>7} {_pct(st.mre_first):>8} {_pct(st.mre_all):>8} "
                         f"{_pct(st.worst_window[2]):>9} {_pct(st.max_rel[1]):>8} {_num(st.max_rel[0]):>8} "
                         f"{_num(st.first_beyond):>8} {_num(st.divergence):>8}")
            if st.note:
                lines.append(f"  {name}: {st.note}")
    for side in ("gpu", "npu"):
        if res.one_sided.get(side):
            shown = ", ".join(res.one_sided[side][:8]) + (" ..." if len(res.one_sided[side]) > 8 else "")
            lines.append(f"logged on {side.upper()} only: {shown}")
    if res.not_compared:
        lines.append(f"not compared (timing, bookkeeping): {', '.join(res.not_compared)}")
    return lines


def _num(x) -> str:
    v = _r(x)
    return "-" if v is None else str(v)
