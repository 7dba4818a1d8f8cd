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

    def window_for(self, n: int) -> int:
        """The moving window over n compared points: at most n (a series of one or two points,
        an evaluation metric logged twice, has a window of its length)."""
        return max(1, min(self.window, n, max(3, n // 5)))

    def to_json(self) -> dict:
        return {"rtol": self.rtol, "first": self.first, "window": self.window, "spike_z": self.spike_z,
                "align": self.align}


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
    over = np.nonzero(rel > s.rtol)[0]
    st.first_beyond = float(xs[over[0]]) if len(over) else None
    st.divergence = _persistent(_rolling_median(rel, w), xs, w, s.rtol)
    st.first_values = (float(xs[0]), float(gs[0]), float(ns[0]))
    st.last_values = (float(xs[-1]), float(gs[-1]), float(ns[-1]))
    return st


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


@dataclass
class SideCounts:
    nonfinite: int = 0  # NaN or inf values of the loss
    nan_iterations: int = 0
    skipped: int = 0
    overflow: int = 0
    spikes: int = 0
    spike_at: list = field(default_factory=list)  # the first few spikes' steps

    def anomalies(self) -> dict:
        return {"nan/inf": self.nonfinite + self.nan_iterations, "skipped": self.skipped,
                "overflow": self.overflow, "spikes": self.spikes}

    def to_json(self) -> dict:
        return {"nonfinite": self.nonfinite, "nan_iterations": self.nan_iterations, "skipped": self.skipped,
                "overflow": self.overflow, "spikes": self.spikes, "spike_at": [_r(x) for x in self.spike_at]}


def side_counts(run: Run, primary: str | None, s: Settings) -> SideCounts:
    import numpy as np

    c = SideCounts()
    t = run.tracks.get(primary) if primary else None
    if t is not None:
        c.nonfinite = t.nan + t.inf
        steps, v = t.arrays()
        c.spikes, c.spike_at = spikes(steps, v, s.spike_z)
    for name, attr in (("nan_iterations", "nan_iterations"), ("skipped", "skipped")):
        tt = run.tracks.get(name)
        if tt is not None:
            _s, v = tt.arrays()
            setattr(c, attr, int(np.nansum(v)) * (tt.stride if tt.stride > 1 else 1))
    tt = run.tracks.get("skipped_total")  # DeepSpeed: cumulative
    if tt is not None and tt.points:
        _s, v = tt.arrays()
        c.skipped = max(c.skipped, int(np.nanmax(v)))
    ls = run.tracks.get("loss_scale")
    if ls is not None and ls.points > 1:
        _s, v = ls.arrays()
        v = v[np.isfinite(v)]
        c.overflow = int((np.diff(v) < 0).sum())
    c.overflow += run.overflow_lines
    return c


def spikes(steps, v, z: float) -> tuple[int, list]:
    """Upward step-to-step changes with a robust z-score above z: 0.6745 (d - median) / MAD."""
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
    hit = np.nonzero(score > z)[0]
    return int(len(hit)), [float(steps[i + 1]) for i in hit[:5]]
