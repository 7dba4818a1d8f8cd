"""The compact terminal chart: both curves of a series, and its relative error beneath.

Plain unicode, no extra: each column averages the aligned points that fall into it; GPU is
`•`, NPU `×`, both in one cell `◆`. A loss that falls by 3x or more is drawn on a log
scale (said in the title). Beneath, one row of eighth-blocks shows the relative error
per column (full height = the larger of twice the tolerance and the largest error), `▲`
marks the first persistent divergence and `!` the columns beyond the tolerance. The scale is
set by the run after its first fifth: a steep warm-up above it is drawn as `↑`.
"""
from __future__ import annotations

from .metrics import SeriesStats, _r

BLOCKS = " ▁▂▃▄▅▆▇█"


def _columns(x, v, width: int):
    import numpy as np

    edges = np.linspace(x[0], x[-1], width + 1)
    idx = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, width - 1)
    ok = np.isfinite(v)
    sums = np.bincount(idx[ok], weights=v[ok], minlength=width)
    cnt = np.bincount(idx[ok], minlength=width)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(cnt > 0, sums / np.maximum(cnt, 1), np.nan), edges


def render(st: SeriesStats, rtol: float, width: int = 64, height: int = 10, unit: str = "step") -> list[str]:
    import numpy as np

    if st.x is None or len(st.x) < 2 or not st.compared:
        return [f"{st.name}: too few points to draw"]
    width = max(16, min(width, len(st.x)))
    gcol, edges = _columns(st.x, st.g, width)
    ncol, _ = _columns(st.x, st.n, width)
    both = np.concatenate([gcol[np.isfinite(gcol)], ncol[np.isfinite(ncol)]])
    if not len(both):
        return [f"{st.name}: no finite point to draw"]
    lo, hi = float(both.min()), float(both.max())
    # a warm-up that falls steeply would flatten the rest: the scale is set by the run after
    # its first fifth, and earlier points above it are drawn as ↑ in the top row
    late = np.concatenate([c[width // 5:][np.isfinite(c[width // 5:])] for c in (gcol, ncol)])
    clipped = len(late) > 0 and float(late.max()) < hi
    if clipped:
        hi = float(late.max())
    logy = lo > 0 and hi / lo >= 3
    f = np.log10 if logy else (lambda a: a)
    flo, fhi = float(f(lo)), float(f(hi))
    span = (fhi - flo) or 1.0

    def row(v):
        return np.where(np.isfinite(v), np.clip(((f(np.where(np.isfinite(v) & (v > 0 if logy else True), v, lo))
                                                   - flo) / span * (height - 1)).round(), 0, height - 1), -1)

    gr, nr = row(gcol), row(ncol)
    grid = [[" "] * width for _ in range(height)]
    for c in range(width):
        for r, ch, v in ((gr[c], "•", gcol[c]), (nr[c], "×", ncol[c])):
            if r < 0:
                continue
            cell = grid[height - 1 - int(r)]
            if clipped and np.isfinite(v) and v > hi:
                cell[c] = "↑"
                continue
            cell[c] = "◆" if cell[c] not in (" ", ch) else ch
    label = 10
    top, bottom = f"{hi:.4g}", f"{lo:.4g}"
    scale = " (log scale)" if logy else ""
    above = f", ↑ above {hi:.4g}" if clipped else ""
    out = [f"{st.name}{scale}: GPU • NPU × (both ◆{above})"]
    for i, cells in enumerate(grid):
        y = top if i == 0 else bottom if i == height - 1 else ""
        out.append(f"{y:>{label}} │{''.join(cells)}")
    if st.rel is not None and len(st.rel):
        ok = np.isfinite(st.g) & np.isfinite(st.n)
        rcol, _ = _columns(st.x[ok], st.rel, width)
        top_err = max(2 * rtol, float(np.nanmax(rcol)) if np.isfinite(rcol).any() else 0.0)
        bar = "".join(BLOCKS[int(round(min(1.0, v / top_err) * 8))] if np.isfinite(v) and top_err > 0 else " "
                      for v in rcol)
        marks = ["!" if np.isfinite(v) and v > rtol else " " for v in rcol]
        if st.divergence is not None:
            c = int(np.clip(np.searchsorted(edges, st.divergence, side="right") - 1, 0, width - 1))
            marks[c] = "▲"
        out.append(f"{'rel err':>{label}} │{bar}  (full = {100 * top_err:.2g}%)")
        out.append(f"{'':>{label}} │{''.join(marks)}" + (f"  ▲ diverges at {unit} {_r(st.divergence)}"
                                                           if st.divergence is not None else ""))
    first, last = f"{_r(st.x[0])}", f"{_r(st.x[-1])}"
    out.append(f"{'':>{label}} └{'─' * width}")
    out.append(f"{'':>{label}}  {first}{' ' * max(1, width - len(first) - len(last) - len(unit) - 1)}{last} {unit}")
    return out
