"""`--plot out.png|out.svg`: both curves per series, the relative error beneath, the
divergence marked. matplotlib is an optional extra (`pip install 'scriptdiff[plot]'`).

The figure is PANEL_W x PANEL_H inches per series at DPI (1000 x 400 pixels per series in a
PNG), at most MAX_SERIES series: the loss first, then downstream metrics beyond the
tolerance, the learning rate, the grad norm, then any other series beyond the tolerance.
"""
from __future__ import annotations

from .series import is_downstream
from .verdict import Result

PANEL_W, PANEL_H, DPI = 10.0, 4.0, 100
MAX_SERIES = 4
FORMATS = ("png", "svg")


class PlotError(Exception):
    """The plot cannot be drawn: one line."""


def chosen(res: Result) -> list[str]:
    s = res.settings
    order = []
    if res.primary in res.series:
        order.append(res.primary)
    order += sorted(k for k, st in res.series.items() if is_downstream(k) and st.compared and st.beyond(s.rtol))
    order += [k for k in ("lr", "grad_norm") if k in res.series]
    order += sorted(k for k, st in res.series.items() if st.compared and st.beyond(s.rtol))
    out = []
    for k in order:
        if k not in out and res.series[k].compared:
            out.append(k)
    return out[:MAX_SERIES]


def _scale(ax, st) -> None:
    """Log scale for a series spanning a decade or more; otherwise, when a steep warm-up
    would flatten the rest, the y range is that of the run after its first fifth (the
    warm-up leaves the top of the panel, and the panel says so)."""
    import numpy as np

    both = np.concatenate([st.g, st.n])
    both = both[np.isfinite(both)]
    if not len(both):
        return
    lo, hi = float(both.min()), float(both.max())
    if lo > 0 and hi / lo >= 10:
        ax.set_yscale("log")
        return
    k = len(st.x) // 5
    late = np.concatenate([st.g[k:], st.n[k:]])
    late = late[np.isfinite(late)]
    if len(late) and hi - lo > 3 * (float(late.max()) - lo):
        top = float(late.max()) + 0.1 * (float(late.max()) - lo)
        ax.set_ylim(lo - 0.1 * (top - lo), top)
        ax.text(0.005, 0.97, f"warm-up above {top:.4g} not shown", transform=ax.transAxes, fontsize=7,
                va="top", color="#555555")


def draw(res: Result, path: str) -> tuple[int, int]:
    """Write the figure; returns its size in pixels (width, height) for a PNG."""
    fmt = path.rsplit(".", 1)[-1].lower() if "." in path else ""
    if fmt not in FORMATS:
        raise PlotError(f"--plot {path}: the file name must end in .png or .svg")
    try:
        import matplotlib

        matplotlib.use("Agg", force=True)
        from matplotlib.figure import Figure
    except ImportError:
        raise PlotError("--plot needs matplotlib: pip install 'scriptdiff[plot]'") from None
    names = chosen(res)
    if not names:
        raise PlotError("--plot: no series both sides logged: nothing to draw")
    s = res.settings
    unit = "step" if res.axis is None or res.axis.name == "step" else res.axis.name
    fig = Figure(figsize=(PANEL_W, PANEL_H * len(names)), dpi=DPI)
    grid = fig.add_gridspec(2 * len(names), 1, height_ratios=[3, 1] * len(names), hspace=0.5,
                            left=0.08, right=0.98, top=1 - 0.25 / len(names), bottom=0.2 / len(names))
    for i, name in enumerate(names):
        st = res.series[name]
        ax = fig.add_subplot(grid[2 * i])
        er = fig.add_subplot(grid[2 * i + 1], sharex=ax)
        ax.plot(st.x, st.g, lw=1.0, color="#1f77b4", label="GPU")
        ax.plot(st.x, st.n, lw=1.0, color="#d62728", alpha=0.8, label="NPU")
        _scale(ax, st)
        title = f"{name}: mean relative error {100 * st.mre_all:.2f}% (first {s.first}: {100 * st.mre_first:.2f}%)"
        if name == res.primary:
            title = f"{res.verdict} | " + title
        ax.set_title(title, fontsize=9, loc="left")
        ax.legend(loc="upper right", fontsize=8)
        ax.grid(alpha=0.3)
        ok = (st.g == st.g) & (st.n == st.n)
        er.plot(st.x[ok], 100 * st.rel, lw=0.8, color="#555555")
        er.axhline(100 * s.rtol, color="#ff7f0e", lw=0.8, ls="--", label=f"tolerance {100 * s.rtol:g}%")
        er.set_ylabel("rel. err %", fontsize=8)
        er.grid(alpha=0.3)
        for a in (ax, er):
            if st.divergence is not None:
                a.axvline(st.divergence, color="#d62728", lw=1.0, ls="--")
            a.tick_params(labelsize=8)
        if st.divergence is not None:
            ax.annotate(f"diverges at {unit} {st.divergence:g}", (st.divergence, 0.92), xycoords=("data", "axes fraction"),
                        fontsize=8, color="#d62728", xytext=(4, 0), textcoords="offset points")
        er.legend(loc="upper left", fontsize=7)
        er.set_xlabel(unit, fontsize=8)
    try:
        fig.savefig(path, format=fmt, dpi=DPI)
    except OSError as e:
        raise PlotError(f"cannot write {path}: {e.strerror or e}") from None
    return round(PANEL_W * DPI), round(PANEL_H * len(names) * DPI)
