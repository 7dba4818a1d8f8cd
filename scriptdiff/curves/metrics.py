"""What is measured on two aligned series, and on each side alone.

Per series (GPU is the reference): absolute and relative error per point, the mean relative
error over the first N points, over the whole run and over sliding windows (the worst one),
the largest error and where, the first point beyond the tolerance, and the first persistent
divergence: the centre of the first window from which the windowed relative error stays
beyond the tolerance for a whole window further on (or to the end of the run); windows are
judged by their median there, so that a few spikes are not taken for a drift.

Per side: non-finite values, NaN and skipped iterations, overflows (loss-scale drops and
overflow lines) and spikes: upward step-to-step changes whose robust z-score is above
`spike_z` (median and MAD taken per block of SPIKE_BLOCK changes: the noise of a loss falls
as the loss falls, so one run-wide MAD would call early noise spikes).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import budget
from .series import Run

TINY = 1e-12
SPIKE_BLOCK = 100


@dataclass
class Settings:
    rtol: float = 0.01
    first: int = 10  # the first N points of a run
    window: int = 50  # sliding window (points); shorter runs use a fifth of their length
    spike_z: float = 6.0
    align: str = "auto"  # auto | step | samples | tokens
    # metric -> the spread of two runs of one side (`--floor`: the second run of `floor_side`):
    # that metric's tolerance is the larger of rtol and its spread
    floor: dict = field(default_factory=dict)
    floor_side: str = "gpu"

    def tol(self, name: str) -> float:
        """The tolerance of metric `name`: rtol, or the run-to-run spread where that is larger."""
        return max(self.rtol, self.floor.get(name, 0.0))

    def window_for(self, n: int) -> int:
        """The moving window over n compared points: at most n (a series of one or two points,
        an evaluation metric logged twice, has a window of its length)."""
        return max(1, min(self.window, n, max(3, n // 5)))

    def to_json(self) -> dict:
        out = {"rtol": self.rtol, "first": self.first, "window": self.window, "spike_z": self.spike_z,
               "align": self.align}
        if self.floor:
            out["floor"] = {"side": self.floor_side, "spread": dict(sorted(self.floor.items()))}
        return out


@dataclass
class SeriesStats:
    name: str
    points: int  # aligned points
    compared: int  # of which finite on both sides
    x: object = None  # arrays, for charts (not in JSON)
    g: object = None
    n: object = None
    rel: object = None
    mre_first: float = 0.0
    mre_all: float = 0.0
    window: int = 0
    worst_window: tuple = (None, None, 0.0)  # (start x, end x, mean relative error)
    windows: list = field(default_factory=list)  # [(start, end, mre)] over up to 20 spans
    max_abs: tuple = (None, 0.0)  # (x, value)
    max_rel: tuple = (None, 0.0)
    first_beyond: float | None = None
    divergence: float | None = None  # first persistent divergence
    first_values: tuple = (None, None, None)  # (x, gpu, npu) of the first compared point
    last_values: tuple = (None, None, None)
    note: str = ""

    def beyond(self, rtol: float) -> bool:
        return self.mre_all > rtol or self.divergence is not None

    def to_json(self) -> dict:
        return {"name": self.name, "points": self.points, "compared": self.compared,
                "mre_first": _r(self.mre_first), "mre_all": _r(self.mre_all), "window": self.window,
                "worst_window": {"start": _r(self.worst_window[0]), "end": _r(self.worst_window[1]),
                                 "mre": _r(self.worst_window[2])},
                "windows": [{"start": _r(a), "end": _r(b), "mre": _r(m)} for a, b, m in self.windows],
                "max_abs": {"at": _r(self.max_abs[0]), "value": _r(self.max_abs[1])},
                "max_rel": {"at": _r(self.max_rel[0]), "value": _r(self.max_rel[1])},
                "first_beyond": _r(self.first_beyond), "divergence": _r(self.divergence),
                "first": {"at": _r(self.first_values[0]), "gpu": _r(self.first_values[1]),
                          "npu": _r(self.first_values[2])},
                "last": {"at": _r(self.last_values[0]), "gpu": _r(self.last_values[1]),
                         "npu": _r(self.last_values[2])},
                "note": self.note}


def _r(x):
    if x is None:
        return None
    x = float(x)
    if x != x or x in (float("inf"), float("-inf")):
        return str(x)
    return int(x) if x.is_integer() and abs(x) < 2 ** 53 else float(f"{x:.6g}")


def relative(g, n):
    """|n - g| / |g| (GPU the reference); where g is zero, 0 if n is too, else 1."""
    import numpy as np

    ab = np.abs(n - g)
    den = np.abs(g)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > TINY, ab / np.where(den > TINY, den, 1.0), np.where(ab > TINY, 1.0, 0.0))


def compare_series(name: str, x, g, n, s: Settings, note: str = "") -> SeriesStats:
    import numpy as np

    ok = np.isfinite(g) & np.isfinite(n)
    st = SeriesStats(name=name, points=len(x), compared=int(ok.sum()), note=note)
    xs, gs, ns = x[ok], g[ok], n[ok]
    st.x, st.g, st.n = x, g, n
    if len(xs) == 0:
        return st
    ab = np.abs(ns - gs)
    rel = relative(gs, ns)
    st.rel = rel
    st.mre_first = float(rel[:s.first].mean())
    st.mre_all = float(rel.mean())
    w = min(s.window_for(len(rel)), len(rel))  # a run of one or two points is its own window
    st.window = w
    c = np.concatenate([[0.0], np.cumsum(rel)])
    m = (c[w:] - c[:-w]) / w  # m[i] = mean of rel[i:i+w]
    i = int(np.argmax(m))
    st.worst_window = (float(xs[i]), float(xs[i + w - 1]), float(m[i]))
    spans = np.array_split(np.arange(len(rel)), min(20, len(rel)))
    st.windows = [(float(xs[sp[0]]), float(xs[sp[-1]]), float(rel[sp].mean())) for sp in spans if len(sp)]
    j = int(np.argmax(ab))
    st.max_abs = (float(xs[j]), float(ab[j]))
    j = int(np.argmax(rel))
    st.max_rel = (float(xs[j]), float(rel[j]))
    over = np.nonzero(rel > s.tol(name))[0]
    st.first_beyond = float(xs[over[0]]) if len(over) else None
    st.divergence = _persistent(_rolling_median(rel, w), xs, w, s.tol(name))
    st.first_values = (float(xs[0]), float(gs[0]), float(ns[0]))
    st.last_values = (float(xs[-1]), float(gs[-1]), float(ns[-1]))
    return st


# the relative-error panels (the page, --plot) are scaled to this quantile of the errors (with
# HEADROOM), so that a spike does not flatten a drift: what lies above is drawn clipped, marked
ERROR_QUANTILE = 0.99
HEADROOM = 1.25


def error_scale(rel, rtol: float) -> tuple[float, int]:
    """The top of a relative-error panel and how many points lie above it: the whole range when
    a robust one (ERROR_QUANTILE of the finite errors) would clip nothing, else that one;
    never below twice the tolerance."""
    import numpy as np

    r = np.asarray(rel, dtype=float)
    r = r[np.isfinite(r)]
    if not len(r):
        return 2 * rtol, 0
    top = max(2 * rtol, float(np.quantile(r, ERROR_QUANTILE)) * HEADROOM)
    above = int((r > top).sum())
    if not above:
        return max(2 * rtol, float(r.max()) * 1.08), 0
    return top, above


def _rolling_median(rel, w: int):
    """m[i] = median of rel[i:i+w]: a lone spike does not move it."""
    import numpy as np
    from numpy.lib.stride_tricks import sliding_window_view

    view = sliding_window_view(rel, w)
    block = max(1, (1 << 20) // w)  # np.median copies its input: a block of windows at a time
    return np.concatenate([np.median(view[i:i + block], axis=1) for i in range(0, len(view), block)])


def _persistent(m, xs, w: int, rtol: float) -> float | None:
    """The first window from which every window median up to a window further (or to the
    end) is beyond the tolerance; the point at its centre (the run's start when it is the
    first window)."""
    import numpy as np

    above = m > rtol
    if not above.any():
        return None
    # below[k]: index of the first window at or after k that is not above (len(m) if none)
    idx = np.where(~above, np.arange(len(m)), len(m))
    nxt = np.minimum.accumulate(idx[::-1])[::-1]
    for k in np.nonzero(above)[0]:
        if nxt[k] >= min(len(m), k + w + 1):
            # the window's centre: a window median crosses the tolerance when half its points do
            return float(xs[0] if k == 0 else xs[min(k + w // 2, len(xs) - 1)])
    return None


AT = 5  # steps named per kind of event (the count is exact)


@dataclass
class SideCounts:
    nonfinite: int = 0  # NaN or inf values of the loss
    nan_iterations: int = 0
    skipped: int = 0
    overflow: int = 0
    spikes: int = 0
    spike_at: list = field(default_factory=list)  # the first few spikes' steps
    nonfinite_at: list = field(default_factory=list)  # the first few steps of each kind of event
    nan_at: list = field(default_factory=list)
    skipped_at: list = field(default_factory=list)
    overflow_at: list = field(default_factory=list)
    # every event step (up to budget.CHART_MARKS per kind), for the charts' markers
    marks: dict = field(default_factory=dict)

    def anomalies(self) -> dict:
        return {"nan/inf": self.nonfinite + self.nan_iterations, "skipped": self.skipped,
                "overflow": self.overflow, "spikes": self.spikes}

    def steps_of(self, kind: str) -> list:
        """The first steps of one kind of `anomalies()`."""
        if kind == "nan/inf":
            return sorted(set(self.nonfinite_at) | set(self.nan_at))[:AT]
        return {"skipped": self.skipped_at, "overflow": self.overflow_at, "spikes": self.spike_at}[kind][:AT]

    def to_json(self) -> dict:
        return {"nonfinite": self.nonfinite, "nan_iterations": self.nan_iterations, "skipped": self.skipped,
                "overflow": self.overflow, "spikes": self.spikes, "spike_at": [_r(x) for x in self.spike_at],
                "nonfinite_at": [_r(x) for x in self.nonfinite_at], "nan_at": [_r(x) for x in self.nan_at],
                "skipped_at": [_r(x) for x in self.skipped_at], "overflow_at": [_r(x) for x in self.overflow_at]}


def side_counts(run: Run, primary: str | None, s: Settings) -> SideCounts:
    import numpy as np

    c = SideCounts()
    t = run.tracks.get(primary) if primary else None
    marks: dict[str, list] = {}
    if t is not None:
        c.nonfinite = t.nan + t.inf
        steps, v = t.arrays()
        bad = steps[~np.isfinite(v)]  # after decimation: the first step of each group that held one
        marks["nan/inf"] = bad[:budget.CHART_MARKS].tolist()
        c.nonfinite_at = marks["nan/inf"][:AT]
        c.spikes, at = spikes(steps, v, s.spike_z, s.window_for(int(np.isfinite(v).sum())))
        marks["spikes"] = at[:budget.CHART_MARKS]
        c.spike_at = at[:AT]
    for name, attr in (("nan_iterations", "nan_iterations"), ("skipped", "skipped")):
        tt = run.tracks.get(name)
        if tt is not None:
            st, v = tt.arrays()
            setattr(c, attr, int(np.nansum(v)) * (tt.stride if tt.stride > 1 else 1))
            hit = st[np.nan_to_num(v) > 0][:budget.CHART_MARKS].tolist()
            if attr == "nan_iterations":
                c.nan_at = hit[:AT]
                marks["nan/inf"] = sorted(set(marks.get("nan/inf", [])) | set(hit))[:budget.CHART_MARKS]
            else:
                c.skipped_at = hit[:AT]
                marks["skipped"] = hit
    tt = run.tracks.get("skipped_total")  # DeepSpeed: cumulative
    if tt is not None and tt.points:
        st, v = tt.arrays()
        total = int(np.nanmax(v))
        if total > c.skipped:
            c.skipped = total
            ok = np.isfinite(v)
            st, v = st[ok], v[ok]
            rise = st[np.nonzero(np.diff(np.concatenate([[0.0], v])) > 0)[0]][:budget.CHART_MARKS].tolist()
            c.skipped_at, marks["skipped"] = rise[:AT], rise
    over: list = []
    ls = run.tracks.get("loss_scale")
    if ls is not None and ls.points > 1:
        st, v = ls.arrays()
        ok = np.isfinite(v)
        st, v = st[ok], v[ok]
        drops = np.diff(v) < 0
        c.overflow = int(drops.sum())
        over = st[1:][drops][:budget.CHART_MARKS].tolist()
    c.overflow += run.overflow_lines
    over += [x for x, _f, _l in run.overflow_at if x is not None]
    marks["overflow"] = sorted(set(over))[:budget.CHART_MARKS]
    c.overflow_at = marks["overflow"][:AT]
    c.marks = marks
    return c


def _trend(pre) -> tuple[float, float]:
    """A robust line through the points before a rise: (its value at the last point, its
    slope per point); the slope is the median of the slopes between the two halves' points
    (one noisy point or an earlier spike does not tilt it)."""
    import numpy as np

    m = len(pre) // 2
    slope = float(np.median((pre[m:2 * m] - pre[:m]) / m)) if m >= 2 else 0.0
    base = float(np.median(pre - slope * (np.arange(len(pre)) - (len(pre) - 1))))
    return base, slope


def spikes(steps, v, z: float, window: int = 50) -> tuple[int, list]:
    """Upward step-to-step changes with a robust z-score above z (0.6745 (d - median) / MAD)
    that are transient: within `window` points the series comes back at least halfway to
    the trend line it rose from (the median change around the rise: a falling loss keeps
    falling). A rise that stays is a level shift, the long-term difference's business, not a
    spike; a rise too close to the end of the run to tell counts as a spike."""
    import numpy as np

    ok = np.isfinite(v)
    steps, v = steps[ok], v[ok]
    if len(v) < 8:
        return 0, []
    d = np.diff(v)
    score = np.zeros_like(d)
    starts = list(range(0, len(d), SPIKE_BLOCK))
    if len(starts) > 1 and len(d) - starts[-1] < SPIKE_BLOCK // 2:
        starts.pop()  # a short last block joins the one before
    for k, a in enumerate(starts):
        b = starts[k + 1] if k + 1 < len(starts) else len(d)
        blk = d[a:b]
        med = np.median(blk)
        mad = np.median(np.abs(blk - med))
        if mad <= TINY:
            mad = float(np.mean(np.abs(blk - med))) or TINY
        score[a:b] = 0.6745 * (blk - med) / mad
    hit = []
    until = -1  # the point where the last spike came back: a rise before it is the same spike
    for i in np.nonzero(score > z)[0]:  # d[i] = v[i + 1] - v[i]: the rise into point i + 1
        if i + 1 <= until:
            continue
        base, slope = _trend(v[max(0, i + 1 - window):i + 1])  # the line the loss followed before
        after = v[i + 2:i + 2 + window]
        rise = v[i + 1] - (base + slope)
        # back at least halfway to that line (a falling loss keeps falling on its own)
        back = np.nonzero(after - (base + slope * np.arange(2, 2 + len(after))) <= rise / 2)[0]
        if len(back) or len(after) < window:
            hit.append(float(steps[i + 1]))
            until = i + 2 + int(back[0]) if len(back) else len(v)
    return len(hit), hit
