"""Two sides' tracks on one axis: by step, or by consumed samples/tokens when the batch sizes
differ; resampled when the sides log at different intervals.

The axis is chosen once per comparison (`choose_axis`) and said in the report. Resampling
follows what the logs mean: a logged loss is the mean over the steps since the previous log,
so the side that logs more often is averaged over the other side's logging intervals (never
interpolated between two noisy points).
"""
from __future__ import annotations

from dataclasses import dataclass

from .series import Run

RATE_TOLERANCE = 0.01  # consumed samples per step differing by more than this: batch sizes differ


@dataclass
class Axis:
    name: str  # "step" | "consumed samples" | "consumed tokens"
    reason: str
    track: str | None = None  # the track that maps a step to the axis

    def to_json(self) -> dict:
        return {"name": self.name, "reason": self.reason}


def _rate(run: Run, name: str) -> float | None:
    """Median increase of a consumed-samples/tokens track per step."""
    import numpy as np

    t = run.tracks.get(name)
    if t is None or t.points < 2:
        return None
    s, v = t.arrays()
    ds = np.diff(s)
    ok = ds > 0
    if not ok.any():
        return None
    return float(np.median(np.diff(v)[ok] / ds[ok]))


def choose_axis(g: Run, n: Run, want: str = "auto") -> Axis:
    """Step, unless the two runs consume different amounts per step (global batch size or
    sequence length differ): then consumed tokens (when both log them) or samples."""
    rates = {name: (_rate(g, name), _rate(n, name)) for name in ("consumed_samples", "consumed_tokens")}
    if want == "step":
        return Axis("step", "aligned by step (--align step)")
    for name, label in (("consumed_tokens", "consumed tokens"), ("consumed_samples", "consumed samples")):
        rg, rn = rates[name]
        if want in (label.split()[1], "auto") and rg and rn:
            if want != "auto":
                return Axis(label, f"aligned by {label} (--align {want})", name)
            if abs(rg - rn) > RATE_TOLERANCE * max(abs(rg), abs(rn)):
                return Axis(label, f"aligned by {label}: {_fmt(rg)} per step on GPU, {_fmt(rn)} on NPU "
                                   f"(the batch sizes differ)", name)
    if want in ("samples", "tokens"):
        return Axis("step", f"aligned by step: --align {want} asked, but a side logs no consumed {want}")
    for name, (rg, rn) in rates.items():
        if rg and rn:
            return Axis("step", f"aligned by step ({name.replace('_', ' ')} per step equal: {_fmt(rg)})")
    return Axis("step", "aligned by step")


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.4g}"


def to_axis(run: Run, axis: Axis, steps):
    """The axis value of each step: steps themselves, or consumed samples/tokens at that step
    (interpolated between logged points)."""
    import numpy as np

    if axis.track is None:
        return steps
    s, v = run.tracks[axis.track].arrays()
    ok = np.isfinite(v)
    return np.interp(steps, s[ok], v[ok])


def _interval(x) -> float:
    import numpy as np

    return float(np.median(np.diff(x))) if len(x) > 1 else 1.0


def pair(gx, gv, nx, nv):
    """(x, gpu values, npu values, note): the two series on common points. Equal grids are
    compared as they are; otherwise the side that logs more often is averaged over the other
    side's intervals. Only the range both sides cover is compared."""
    import numpy as np

    note = ""
    if len(gx) == 0 or len(nx) == 0:
        return np.array([]), np.array([]), np.array([]), "no points on a side"
    lo, hi = max(gx[0], nx[0]), min(gx[-1], nx[-1])
    gm, nm = (gx >= lo) & (gx <= hi), (nx >= lo) & (nx <= hi)
    gx, gv, nx, nv = gx[gm], gv[gm], nx[nm], nv[nm]
    if len(gx) == 0 or len(nx) == 0:
        return np.array([]), np.array([]), np.array([]), "the two sides cover no common range"
    common, gi, ni = np.intersect1d(gx, nx, assume_unique=True, return_indices=True)
    if len(common) >= 0.9 * min(len(gx), len(nx)) and abs(_interval(gx) - _interval(nx)) <= 1e-9 * max(1, _interval(gx)):
        if len(common) < max(len(gx), len(nx)):
            note = f"{max(len(gx), len(nx)) - len(common)} point(s) logged on one side only were left out"
        return common, gv[gi], nv[ni], note
    gint, nint = _interval(gx), _interval(nx)
    if gint >= nint:
        x, cv, fx, fv, coarse, fine = gx, gv, nx, nv, "GPU", "NPU"
    else:
        x, cv, fx, fv, coarse, fine = nx, nv, gx, gv, "NPU", "GPU"
    mean = _bin_means(x, fx, fv)
    keep = ~np.isnan(mean[1])
    x, cv, mv = x[keep], cv[keep], mean[0][keep]
    note = (f"resampled: {fine} logs every {_fmt(min(gint, nint))}, {coarse} every {_fmt(max(gint, nint))}; "
            f"{fine} averaged over {coarse}'s logging intervals")
    if coarse == "GPU":
        return x, cv, mv, note
    return x, mv, cv, note


def _bin_means(cx, fx, fv):
    """For each coarse point x_k, the mean of the fine values in (x_{k-1}, x_k] (a non-finite
    value makes its bin non-finite); (means, marker) with marker NaN where a bin is empty."""
    import numpy as np

    finite = np.isfinite(fv)
    csum = np.concatenate([[0.0], np.cumsum(np.where(finite, fv, 0.0))])
    ccount = np.concatenate([[0], np.cumsum(finite)])
    cbad = np.concatenate([[0], np.cumsum(~finite)])
    first = cx[0] - (cx[1] - cx[0] if len(cx) > 1 else 1.0)
    left = np.concatenate([[first], cx[:-1]])
    a = np.searchsorted(fx, left, side="right")
    b = np.searchsorted(fx, cx, side="right")
    cnt = ccount[b] - ccount[a]
    bad = cbad[b] - cbad[a]
    total = cnt + bad
    with np.errstate(invalid="ignore", divide="ignore"):
        means = (csum[b] - csum[a]) / cnt
    means = np.where(bad > 0, np.nan, means)
    marker = np.where(total > 0, 0.0, np.nan)
    return means, marker
