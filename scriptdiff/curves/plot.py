"""`--plot out.png|out.svg`: both curves per series, the relative error beneath, the
divergence and the verdict marked. matplotlib is an optional extra (`pip install
'scriptdiff[plot]'`).

The figure is PANEL_W x PANEL_H inches per series at DPI (1000 x 400 pixels per series in a
PNG), at most MAX_SERIES series: the loss first, then downstream metrics beyond the
tolerance, the learning rate, the grad norm, then any other series beyond the tolerance.
Each series has two panels side by side: its first steps (the points the first-step verdict
judges, shaded, and the warm-up after them), and the whole run. No curve is clipped: a series
that spans a factor of 3 or more is drawn on a log axis, so the warm-up and the end of the
run are both readable; the relative error is scaled past a spike (metrics.error_scale), what
lies above drawn at the top, marked and counted. NaN/inf, skipped, overflow and spike steps are marked above the curves
(GPU below NPU), the tolerance is dashed in the relative error, and the legend sits above the
panel, clear of the divergence label.
"""
from __future__ import annotations

from .metrics import error_scale
from .series import is_downstream
from .verdict import Result

PANEL_W, PANEL_H, DPI = 10.0, 4.0, 100
MAX_SERIES = 4
FORMATS = ("png", "svg")
GPU_COLOR, NPU_COLOR = "#1f77b4", "#d62728"
# kind of event -> (marker, label), as SideCounts.marks names them
EVENTS = {"nan/inf": ("X", "NaN/inf"), "skipped": ("v", "skipped"), "overflow": ("^", "overflow"),
          "spikes": ("o", "spike")}


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


def log_axis(g, n) -> bool:
    """Points spanning a factor of 3 or more, all positive, are drawn on a log axis (the
    html page decides the same way)."""
    import numpy as np

    both = np.concatenate([g, n])
    both = both[np.isfinite(both)]
    return bool(len(both)) and float(both.min()) > 0 and float(both.max()) / float(both.min()) >= 3


def first_span(res: Result, st) -> int:
    """How many of a series' points the first-steps panel shows: the points the first-step
    verdict judges and the warm-up after them (at least 50, at most the run)."""
    return min(len(st.x), max(5 * res.settings.first, 50))


def _clear(ax, st) -> float:
    """An axes-fraction height for the divergence label, on the side of the panel the curves
    leave free around the divergence."""
    import numpy as np

    near = np.abs(st.x - st.divergence) <= 0.05 * (st.x[-1] - st.x[0] or 1)
    vals = np.concatenate([st.g[near], st.n[near]])
    vals = vals[np.isfinite(vals)]
    if not len(vals):
        return 0.9
    y = ax.transLimits.transform(ax.transScale.transform([[st.divergence, float(np.median(vals))]]))[0][1]
    return 0.9 if y < 0.55 else 0.06


def _decades(g, n) -> float:
    import numpy as np

    both = np.concatenate([g, n])
    both = both[np.isfinite(both) & (both > 0)]
    return float(np.log10(both.max() / both.min())) if len(both) else 0.0


def events(res: Result, name: str, st) -> dict[str, dict[str, list]]:
    """side -> kind -> axis points to mark: the loss's counted events; for any series, its
    own non-finite points."""
    import numpy as np

    out: dict[str, dict[str, list]] = {}
    for side, vals in (("gpu", st.g), ("npu", st.n)):
        got: dict[str, list] = {}
        if name == res.primary and side in res.counts:
            got = {k: list(v) for k, v in res.counts[side].marks.items() if v}
        bad = st.x[~np.isfinite(vals)].tolist() if st.x is not None else []
        if bad:
            got["nan/inf"] = sorted(set(got.get("nan/inf", [])) | set(bad))
        out[side] = got
    return out


def draw(res: Result, path: str) -> tuple[int, int]:
    """Write the figure; returns its size in pixels (width, height) for a PNG."""
    fmt = path.rsplit(".", 1)[-1].lower() if "." in path else ""
    if fmt not in FORMATS:
        raise PlotError(f"--plot {path}: the file name must end in .png or .svg")
    fig, rows = figure(res)
    try:
        fig.savefig(path, format=fmt, dpi=DPI)
    except OSError as e:
        raise PlotError(f"cannot write {path}: {e.strerror or e}") from None
    return round(PANEL_W * DPI), round(PANEL_H * rows * DPI)


def figure(res: Result):
    """(the matplotlib Figure, how many series it draws)."""
    try:
        import matplotlib

        matplotlib.use("Agg", force=True)
        from matplotlib.figure import Figure
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch
        from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    except ImportError:
        raise PlotError("--plot needs matplotlib: pip install 'scriptdiff[plot]'") from None
    import numpy as np

    names = chosen(res)
    if not names:
        raise PlotError("--plot: no series both sides logged: nothing to draw")
    s = res.settings
    unit = "step" if res.axis is None or res.axis.name == "step" else res.axis.name
    height = PANEL_H * len(names)
    fig = Figure(figsize=(PANEL_W, height), dpi=DPI)
    # one legend for the figure, in its own strip at the top: never over a curve or a label;
    # below it, room for the first series' strip of event markers
    first = events(res, names[0], res.series[names[0]])
    strip = sum(1 for kind in EVENTS if first["gpu"].get(kind) or first["npu"].get(kind))
    top = 1 - (0.55 + 0.15 * strip) / height
    grid = fig.add_gridspec(2 * len(names), 2, width_ratios=[1, 3], height_ratios=[3, 1] * len(names),
                            hspace=0.6, wspace=0.12, left=0.075, right=0.955, top=top - 0.3 / height,
                            bottom=0.45 / height)
    plain = FuncFormatter(lambda v, _p: f"{v:g}")
    kinds: set[str] = set()
    diverged = False
    for i, name in enumerate(names):
        st = res.series[name]
        ax0, ax = fig.add_subplot(grid[2 * i, 0]), fig.add_subplot(grid[2 * i, 1])
        er0, er = fig.add_subplot(grid[2 * i + 1, 0], sharex=ax0), fig.add_subplot(grid[2 * i + 1, 1], sharex=ax)
        k = first_span(res, st)
        ok = np.isfinite(st.g) & np.isfinite(st.n)
        rel = np.full(len(st.x), np.nan)
        if st.rel is not None:
            rel[ok] = 100 * st.rel
        marks = events(res, name, st)
        for a, e, sl in ((ax0, er0, slice(0, k)), (ax, er, slice(None))):
            x = st.x[sl]
            a.plot(x, st.g[sl], lw=1.0, color=GPU_COLOR)
            a.plot(x, st.n[sl], lw=1.0, color=NPU_COLOR, alpha=0.8)
            if log_axis(st.g[sl], st.n[sl]):  # each panel by its own points
                a.set_yscale("log")
                a.yaxis.set_major_formatter(plain)
                if _decades(st.g[sl], st.n[sl]) < 1:  # within a decade: a few labelled minor ticks, else none
                    a.yaxis.set_minor_locator(LogLocator(subs=(2.0, 5.0)))
                    a.yaxis.set_minor_formatter(plain)
                else:
                    a.yaxis.set_minor_formatter(NullFormatter())
            a.axvspan(st.x[0], st.x[min(s.first, len(st.x)) - 1], color="#f2c14e", alpha=0.25, lw=0)
            # scaled to a robust top (a spike does not flatten a drift): what lies above is drawn at the
            # top, marked ▲ and counted
            rtop, _n = error_scale(rel[sl] / 100, s.rtol)
            over = np.isfinite(rel[sl]) & (rel[sl] > 100 * rtop)
            e.plot(x, np.minimum(rel[sl], 100 * rtop), lw=0.8, color="#555555")
            e.set_ylim(0, 100 * rtop)
            if over.any():
                e.plot(x[over], [100 * rtop] * int(over.sum()), ls="", marker="^", ms=4, color=NPU_COLOR, clip_on=False)
                if e is er:
                    e.annotate(f"{int(over.sum())} above {100 * rtop:.2g}% (clipped, ▲)", (1.0, 1.0),
                               xycoords="axes fraction", xytext=(-3, -3), textcoords="offset points", fontsize=6,
                               ha="right", va="top", color=NPU_COLOR)
            if name in s.floor:  # the run-to-run spread of one side (--floor): a band under it
                e.axhspan(0, 100 * min(s.floor[name], rtop), color="#ff7f0e", alpha=0.12, lw=0)
            e.axhline(100 * s.rtol, color="#ff7f0e", lw=0.8, ls="--")
            # a strip above the panel, one row per kind of event (GPU hollow, NPU filled)
            rows = [kind for kind in EVENTS if marks["gpu"].get(kind) or marks["npu"].get(kind)]
            for row, kind in enumerate(rows):
                kinds.add(kind)
                for side in ("gpu", "npu"):
                    xs = [v for v in marks[side].get(kind, ()) if len(x) and x[0] <= v <= x[-1]]
                    if xs:
                        c = NPU_COLOR if side == "npu" else GPU_COLOR
                        a.plot(xs, [1.04 + 0.075 * row] * len(xs), ls="", marker=EVENTS[kind][0], ms=4.5, mew=1.0,
                               color=c, mfc=c if side == "npu" else "none", transform=a.get_xaxis_transform(),
                               clip_on=False)
                if a is ax:
                    a.annotate(EVENTS[kind][1], (1.0, 1.04 + 0.075 * row), xycoords="axes fraction", xytext=(3, 0),
                               textcoords="offset points", fontsize=6, va="center", color="#444444")
            if st.divergence is not None and x[0] <= st.divergence <= x[-1]:
                diverged = True
                for p in (a, e):
                    p.axvline(st.divergence, color=NPU_COLOR, lw=1.0, ls="--")
            for p in (a, e):
                p.grid(alpha=0.3)
                p.tick_params(labelsize=7)
        pad = 6 + 11 * len([kind for kind in EVENTS if marks["gpu"].get(kind) or marks["npu"].get(kind)])
        ax0.set_title(f"first {k} points (first {s.first} judged, shaded)", fontsize=8, loc="left", pad=pad)
        title = f"{name}: mean relative error {100 * st.mre_all:.2f}% (first {s.first}: {100 * st.mre_first:.2f}%)"
        if name == res.primary:
            title = f"verdict: {res.said} | " + title
        ax.set_title(title, fontsize=9, loc="left", fontweight="bold" if name == res.primary else "normal", pad=pad)
        if st.divergence is not None:  # the label where the curves are not: above them or below
            ax.annotate(f"diverges at {unit} {st.divergence:g}", (st.divergence, _clear(ax, st)),
                        xycoords=("data", "axes fraction"), fontsize=8, color=NPU_COLOR, xytext=(4, 0),
                        textcoords="offset points", bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "none",
                                                          "alpha": 0.85})
        er0.set_ylabel("rel. err %", fontsize=8)
        for e in (er0, er):
            e.set_xlabel(unit, fontsize=8)
    handles = [Line2D([], [], color=GPU_COLOR, lw=1.4, label="GPU"), Line2D([], [], color=NPU_COLOR, lw=1.4, label="NPU"),
               Line2D([], [], color="#ff7f0e", lw=0.8, ls="--", label=f"tolerance {100 * s.rtol:g}%"),
               Patch(color="#f2c14e", alpha=0.4, label=f"first {s.first} points")]
    if s.floor:
        side = s.floor_side.upper()
        handles.append(Patch(color="#ff7f0e", alpha=0.25, label=f"{side}-to-{side} spread (--floor)"))
    if diverged:
        handles.append(Line2D([], [], color=NPU_COLOR, lw=1.0, ls="--", label="first persistent divergence"))
    if kinds:
        handles += [Line2D([], [], ls="", marker="o", color=NPU_COLOR, ms=5, label="NPU event"),
                    Line2D([], [], ls="", marker="o", color=GPU_COLOR, mfc="none", ms=5, label="GPU event")]
    fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 1 - 0.08 / height), ncol=len(handles),
               fontsize=8, frameon=False, handlelength=1.8, columnspacing=1.2)
    return fig, len(names)
