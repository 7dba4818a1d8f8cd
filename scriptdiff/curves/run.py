"""`scriptdiff curves GPU NPU` end to end (api.curves, api.curves_view): read both sides,
compare, hand the findings to the engine (suppressions, baseline, --select/--ignore, exit
codes), and the views: terminal chart, plot, errors CSV (the markdown section is the
report's: report/curves.py)."""
from __future__ import annotations

import dataclasses

from ..model import InputError, Options, Report, UsageError
from ..run.pipeline import Inputs
from ..run.pipeline import run as run_pipeline
from ..ruleset.secrets import redact_text
from . import chart, plot
from .findings import findings, overview
from .metrics import Settings, _r
from .readers import ReadError, inputs, read_side
from .verdict import compare_runs, floor_from


def settings(rtol: float = 0.01, first: int = 10, window: int = 50, spike_z: float = 6.0,
             align: str = "auto") -> Settings:
    """The thresholds of a curves comparison (docs/curves.md); UsageError when one is out of range."""
    if not 0 < rtol < 10:
        raise UsageError("--rtol must be a positive fraction (0.01 = 1%)")
    if first < 1 or window < 1:
        raise UsageError("--first and --window must be at least 1")
    if spike_z <= 0:
        raise UsageError("--spike-z must be positive")
    if align not in ("auto", "step", "samples", "tokens"):
        raise UsageError("--align must be auto, step, samples or tokens")
    return Settings(rtol=rtol, first=first, window=window, spike_z=spike_z, align=align)


def compare(gpu: str | list[str], npu: str | list[str], opts: Options, settings: Settings | None = None,
            progress=None, repo: str = ".", floor: str | list[str] | None = None, floor_side: str = "gpu") -> Report:
    """Both runs' curves (files, folders or REV:path per side, read in `repo`), aligned,
    measured and judged by `settings` (made by `settings()`; None: the defaults). `floor`: a
    second run of `floor_side` (its files): the spread of that side's two runs sets each
    metric's tolerance, and the verdict says whether the gap is within it and by how much not."""
    gl = [gpu] if isinstance(gpu, str) else list(gpu)
    nl = [npu] if isinstance(npu, str) else list(npu)
    report = Report(gpu=" ".join(gl), npu=" ".join(nl))
    sides = []
    walked: list[list[InputError]] = []  # each side's errors met before its files were read
    for specs in (gl, nl):
        files: list = []
        errors: list[InputError] = []
        for s in specs:
            try:
                files += inputs(s, errors, repo)
            except ReadError as e:
                msg = str(e)
                errors.append(InputError(s, msg[len(s) + 2:] if msg.startswith(f"{s}: ") else msg, fatal=True))
        sides.append(files)
        walked.append(errors)
    if progress is not None:
        progress.start(sum(f.size for fs in sides for f in fs))
    try:
        gr = read_side(gl, "gpu", progress, repo_dir=repo, files=sides[0])
        nr = read_side(nl, "npu", progress, repo_dir=repo, files=sides[1])
    finally:
        if progress is not None:
            progress.close()
    gr.errors[:0], nr.errors[:0] = walked  # a side is read whole only if none of these is fatal (verdict.py)
    report.errors.extend(gr.errors + nr.errors)
    for run, specs in ((gr, gl), (nr, nl)):
        if run.empty and not any(e.fatal for e in run.errors):  # else its files' own errors say why
            why = "; ".join(run.skipped_files[:3]) or "no files"
            report.errors.append(InputError(" ".join(specs), f"no training curves recognised ({why})", fatal=True))
    if gr.empty or nr.empty:  # nothing to compare: exit 2
        return report.sorted()
    settings = settings or Settings()
    if floor:
        fl = [floor] if isinstance(floor, str) else list(floor)
        fr = read_side(fl, f"{floor_side}2", repo_dir=repo)
        report.errors.extend(fr.errors)
        if fr.empty:
            if not any(e.fatal for e in fr.errors):
                report.errors.append(InputError(" ".join(fl), "no training curves recognised in the --floor run",
                                                fatal=True))
            return report.sorted()
        spread = floor_from(compare_runs(gr if floor_side == "gpu" else nr, fr, settings))
        settings = dataclasses.replace(settings, floor=spread, floor_side=floor_side)
    res = compare_runs(gr, nr, settings)
    report.absorb(run_pipeline(Inputs(findings=findings(res), compared=1), opts))  # suppressions, --select, exit codes
    report.overview = overview(res)
    report.details["curves"] = res
    report.json_extra["curves"] = res.to_json()
    return report.sorted()


def view(report: Report, what: str, **options):
    res = report.details.get("curves")
    if what == "chart":  # series names are the logs' own (tags, headers): through the secret rules too
        return [redact_text(line) for line in _chart(res, **options)]
    if what == "plot":
        return _plot(res, **options)
    if what == "errors":
        return _errors_csv(res, **options)
    raise UsageError(f"no curves view {what!r}")


def _chart(res, width: int = 64, height: int = 10, series: list[str] | None = None) -> list[str]:
    if res is None:
        return []
    unit = _unit(res)
    out: list[str] = []
    for name in series or ([res.primary] if res.primary in res.series else []):
        if name not in res.series:
            raise UsageError(f"--chart {name}: not a series both sides logged "
                             f"({', '.join(sorted(res.series)) or 'none'})")
        out += chart.render(res.series[name], res.settings.rtol, width, height, unit)
    return out


def _plot(res, path: str) -> tuple[int, int]:
    if res is None:
        raise UsageError("--plot: nothing was compared, nothing to draw")
    try:
        return plot.draw(res, path)
    except plot.PlotError as e:
        raise UsageError(str(e)) from None


def _errors_csv(res, path: str) -> int:
    """Every aligned point of every series: axis, GPU, NPU, absolute and relative error (CSV);
    returns the number of rows written."""
    import csv

    import numpy as np

    if res is None:
        raise UsageError("--errors: nothing was compared, nothing to write")
    rows = 0
    try:
        with open(path, "w", encoding="utf-8", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["series", _unit(res).replace(" ", "_"), "gpu", "npu", "abs_err", "rel_err"])
            for name, st in sorted(res.series.items()):
                if st.x is None:
                    continue
                ok = np.isfinite(st.g) & np.isfinite(st.n)
                rel = np.full(len(st.x), np.nan)
                if st.rel is not None:
                    rel[ok] = st.rel
                for x, g, n, r in zip(st.x.tolist(), st.g.tolist(), st.n.tolist(), rel.tolist()):
                    w.writerow([name, _r(x), repr(g), repr(n), repr(abs(n - g)), repr(r)])
                    rows += 1
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror or e}") from None
    return rows


def _unit(res) -> str:
    return "step" if res.axis is None or res.axis.name == "step" else res.axis.name
