"""Two runs compared: every shared series measured, and one verdict with its evidence.

The verdict sorts a mismatch into the four kinds of Ascend's accuracy guidance, checked in
this order (the first that holds is the verdict; every other that holds is in `also`, and
each gets its finding: a spike does not hide a drift):

  first-step difference   mean relative error of the loss over the first N points > rtol
  overflow, NaN or spikes  the NPU run has more non-finite losses, NaN or skipped iterations,
                           overflows or loss spikes than the GPU run
  long-term difference     a persistent divergence later in the run, or a whole-run mean
                           relative error > rtol
  equal losses, different downstream metrics
                           the loss matches, an evaluation metric does not
  equal                    none of these
  incomplete               none of these in what was read, but a side's logs were not read
                           whole (a damaged or cut file, an unreadable one): never "equal"

The loss is the first of the primary metrics (rules/curves.yaml `curve_metrics.primary`) both
sides logged.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .align import Axis, choose_axis, pair, to_axis
from .metrics import SeriesStats, Settings, SideCounts, _r, compare_series, side_counts
from .series import Run, is_downstream, is_timing, metrics

FIRST = "first-step difference"
ANOMALY = "overflow, NaN or spikes"
LONG = "long-term difference"
DOWNSTREAM = "equal losses, different downstream metrics"
EQUAL = "equal"
INCOMPLETE = "incomplete"  # equal as far as read, but a log was not read whole: no pass
NOT_COMPARED = "not compared"
FEW = 8  # fewer compared loss points than this: no window, divergence or spike can be told (spikes())


@dataclass
class Result:
    gpu: Run
    npu: Run
    settings: Settings
    axis: Axis | None = None
    primary: str | None = None
    series: dict[str, SeriesStats] = field(default_factory=dict)
    counts: dict[str, SideCounts] = field(default_factory=dict)  # gpu / npu
    verdict: str = NOT_COMPARED
    also: list[str] = field(default_factory=list)  # the other kinds that hold, in the same order
    evidence: list[str] = field(default_factory=list)
    one_sided: dict[str, list[str]] = field(default_factory=dict)  # metrics logged by one side only
    not_compared: list[str] = field(default_factory=list)  # shared, but timing/bookkeeping

    @property
    def said(self) -> str:
        """The verdict as the views write it: "overflow, NaN or spikes (also long-term difference)"."""
        return self.verdict + (f" (also {', '.join(self.also)})" if self.also else "")

    @property
    def loss(self) -> SeriesStats | None:
        return self.series.get(self.primary) if self.primary else None

    def downstream(self) -> list[SeriesStats]:
        return [s for k, s in self.series.items() if is_downstream(k) and k != self.primary]

    def to_json(self) -> dict:
        return {
            "verdict": self.verdict,
            "also": list(self.also),
            "evidence": list(self.evidence),
            "primary": self.primary,
            "axis": self.axis.to_json() if self.axis else None,
            "settings": self.settings.to_json(),
            "series": {k: s.to_json() for k, s in sorted(self.series.items())},
            "counts": {k: c.to_json() for k, c in self.counts.items()},
            "read": {side: [r.to_json() for r in run.recognised] for side, run in (("gpu", self.gpu),
                                                                                 ("npu", self.npu))},
            "skipped_files": {"gpu": list(self.gpu.skipped_files), "npu": list(self.npu.skipped_files)},
            "one_sided": {k: list(v) for k, v in self.one_sided.items()},
            "not_compared": list(self.not_compared),
        }


def primary_of(names) -> str | None:
    for p in metrics().primary:
        if p in names:
            return p
    return None


def compare_runs(g: Run, n: Run, s: Settings | None = None) -> Result:
    s = s or Settings()
    res = Result(gpu=g, npu=n, settings=s)
    gk = {k for k, t in g.tracks.items() if t.points}
    nk = {k for k, t in n.tracks.items() if t.points}
    shared = gk & nk
    res.one_sided = {"gpu": sorted(gk - nk), "npu": sorted(nk - gk)}
    res.primary = primary_of(shared)
    res.axis = choose_axis(g, n, s.align)
    for name in sorted(shared):
        if is_timing(name) or name == "skipped_total":
            res.not_compared.append(name)
            continue
        gs, gv = g.tracks[name].arrays()
        ns, nv = n.tracks[name].arrays()
        x, a, b, note = pair(to_axis(g, res.axis, gs), gv, to_axis(n, res.axis, ns), nv)
        strides = {g.tracks[name].stride, n.tracks[name].stride}
        if strides != {1}:
            note = "; ".join(x for x in (note, f"a long run: every {max(strides)} logged points averaged into one")
                             if x)
        res.series[name] = compare_series(name, x, a, b, s, note)
    res.counts = {"gpu": side_counts(g, res.primary, s), "npu": side_counts(n, res.primary, s)}
    _judge(res)
    return res


def _pct(x: float) -> str:
    return f"{100 * x:.2f}%"


def _step(x) -> str:
    v = _r(x)
    return "?" if v is None else str(v)


def spread_of(st: SeriesStats) -> float:
    """What one comparison of a series says of the distance between its runs: the larger of the
    mean relative errors over the first points and over the whole run (the two the verdict judges)."""
    return max(st.mre_first, st.mre_all)


def floor_said(s: Settings, st: SeriesStats) -> str:
    """The series against the run-to-run spread of one side (`--floor`): "loss against the
    GPU-to-GPU spread: 1.50%, within the GPU-to-GPU spread (1.80%)", or how far beyond it."""
    side = s.floor_side.upper()
    spread, gap = s.floor[st.name], spread_of(st)
    if gap <= s.tol(st.name):
        return f"{st.name}: {_pct(gap)} between GPU and NPU, within the {side}-to-{side} spread ({_pct(spread)})"
    return (f"{st.name}: {_pct(gap)} between GPU and NPU, beyond the {side}-to-{side} spread ({_pct(spread)}) by "
            f"{100 * (gap - spread):.2f} points ({gap / spread:.1f}x)" if spread > 0 else
            f"{st.name}: {_pct(gap)} between GPU and NPU; the two {side} runs do not differ at all")


def floor_from(res: Result) -> dict[str, float]:
    """Each compared series' spread between two runs of one side (compare_runs of the two)."""
    return {name: spread_of(st) for name, st in res.series.items() if st.compared}


def _judge(res: Result) -> None:
    s = res.settings
    loss = res.loss
    ev = res.evidence
    if loss is None or loss.compared == 0:
        res.verdict = NOT_COMPARED
        ev.append("no loss series logged by both sides" if loss is None else
                  f"{loss.name}: no point where both sides are finite")
        return
    unit = "step" if res.axis is None or res.axis.name == "step" else res.axis.name
    fx, fg, fn = loss.first_values
    ev.append(f"{loss.name} at {unit} {_step(fx)}: GPU {fg:.6g}, NPU {fn:.6g} "
              f"(relative error {_pct(abs(fn - fg) / abs(fg) if fg else 0.0)})")
    ev.append(f"mean relative error of {loss.name}: first {min(s.first, loss.compared)} points {_pct(loss.mre_first)}, "
              f"whole run {_pct(loss.mre_all)} ({loss.compared} points)")
    a, b, m = loss.worst_window
    if loss.compared < FEW:
        ev.append(f"only {loss.compared} point(s) compared: too few points for windows, a persistent "
                  f"divergence or spikes; the verdict rests on these points alone")
    else:
        ev.append(f"worst window of {loss.window} points: {unit}s {_step(a)}-{_step(b)}, mean relative error {_pct(m)}")
    ev.append(f"largest relative error {_pct(loss.max_rel[1])} at {unit} {_step(loss.max_rel[0])}")
    if loss.first_beyond is not None:
        ev.append(f"first {unit} beyond {_pct(s.tol(loss.name))}: {_step(loss.first_beyond)}")
    if loss.divergence is not None:
        ev.append(f"first persistent divergence at {unit} {_step(loss.divergence)}")
    gc, nc = res.counts["gpu"].anomalies(), res.counts["npu"].anomalies()
    worse = {k: (gc[k], nc[k]) for k in nc if nc[k] > gc[k]}
    ev.append("anomalies GPU/NPU: " + ", ".join(f"{k} {gc[k]}/{nc[k]}" for k in gc))
    down = [d for d in res.downstream() if d.compared and d.beyond(s.tol(d.name))]
    at = res.counts["npu"].spike_at
    if "spikes" in worse and at:
        ev.append(f"NPU spikes at {unit}s {', '.join(_step(x) for x in at)}")
    tol = s.tol(loss.name)
    first = loss.mre_first > tol
    # beside spikes, only a persistent divergence (judged on windows' medians) says a drift: the
    # spikes alone lift the whole run's mean error
    long = loss.divergence is not None or (loss.mre_all > tol and not worse)
    if loss.name in s.floor:
        ev.append(floor_said(s, loss))
    # a long-term difference matches early, a downstream one has equal losses: neither holds beside
    # a first-step difference (or, downstream, a long-term one); spikes hold beside any
    holds = [k for k, yes in ((FIRST, first), (ANOMALY, bool(worse)), (LONG, long and not first),
                              (DOWNSTREAM, bool(down) and not (first or long))) if yes]
    if DOWNSTREAM in holds:
        for d in down:
            ev.append(f"{d.name}: mean relative error {_pct(d.mre_all)} over {d.compared} points, "
                      f"largest {_pct(d.max_rel[1])} at {unit} {_step(d.max_rel[0])}")
    if holds:
        res.verdict, res.also = holds[0], holds[1:]
    else:
        res.verdict = EQUAL
        unread = [(side, e) for side, run in (("GPU", res.gpu), ("NPU", res.npu)) for e in run.errors if e.fatal]
        if unread:  # what was read is equal, but not everything was: never a pass
            res.verdict = INCOMPLETE
            ev.insert(0, "not read whole: " + "; ".join(f"{side} {e.path}" for side, e in unread[:3])
                      + (f" and {len(unread) - 3} more" if len(unread) > 3 else "")
                      + " (see the errors): the curves are equal only as far as they were read")
