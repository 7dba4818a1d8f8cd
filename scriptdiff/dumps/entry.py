"""`scriptdiff dumps GPU_DUMP NPU_DUMP [--scripts GPU NPU]` end to end (api.dumps).

Both sides are opened and compared (run.py); the findings go through the pipeline like any
other (suppressions, baseline, --select/--ignore, exit codes). With `--scripts`, the two
script trees (or files) are compared in the same pipeline run, so that the `dumps` check's
`relate` hook (cause.py) finds the static findings at the diverging call's lines, in its
function or on a setting it depends on; the report keeps the dumps findings (the probable
cause names the static ones, with both lines), the scripts' findings being `diff`'s or
`check`'s to show. `report.overview` says what was read, the first divergence and the calls
side by side; the JSON gains a `dumps` section.
"""
from __future__ import annotations

import dataclasses
import os

from ..model import InputError, Options, Report, UsageError
from ..run.fidelity import annotate
from ..run.pipeline import Inputs
from ..run.pipeline import run as run_pipeline
from .findings import CHECK, findings, overview, side_errors
from .reader import DumpError, locate
from .run import Settings, compare_sides, open_side, size


def settings(rtol: float = 0.5, output_rtol: float = 0.1, input_rtol: float = 0.01, atol: float = 1e-6,
             chain: int = 10, window: int = 256) -> Settings:
    for name, v in (("--rtol", rtol), ("--output-rtol", output_rtol), ("--input-rtol", input_rtol)):
        if not 0 < v < 100:
            raise UsageError(f"{name} must be a positive relative error (0.5 = 50%)")
    if atol <= 0:
        raise UsageError("--atol must be positive")
    if chain < 0 or window < 8:
        raise UsageError("--chain takes 0 or more calls, --window 8 or more")
    return Settings(rtol=rtol, output_rtol=output_rtol, input_rtol=input_rtol, atol=atol, chain=chain, window=window)


def compare(gpu: str, npu: str, opts: Options, st: Settings | None = None,
            scripts: tuple[str, str] | None = None, progress=None, floor: str | None = None,
            floor_side: str = "gpu") -> Report:
    """Both dumps compared (and `scripts`, see above). `floor`: a second run's dump of
    `floor_side`: that side's two runs are compared first, and each call statistic's relative
    error between them is its tolerance where it is larger than the thresholds."""
    st = st or Settings()
    if floor_side not in ("gpu", "npu"):
        raise UsageError("--floor-side must be gpu or npu")
    report = Report(gpu=gpu, npu=npu)
    located = []
    for spec in (gpu, npu) + ((floor,) if floor else ()):
        try:
            located.append((spec, locate(spec)))
        except DumpError as e:
            msg = str(e)
            report.errors.append(InputError(spec, msg[len(spec) + 2:] if msg.startswith(f"{spec}: ") else msg,
                                            fatal=True))
    advance = None
    if progress is not None:  # every dump.json is read twice: surveyed, then compared
        progress.start(2 * sum(size(r) for _s, ranks in located for r in ranks))
        advance = progress.advance
    try:
        sides = [open_side(spec, ranks, advance) for spec, ranks in located]
        if floor:
            fside = sides.pop() if located and located[-1][0] == floor and len(located) == len(sides) else None
            if fside is None or not fside.headers:  # the floor run cannot be read: nothing is judged (exit 2)
                report.errors += side_errors(fside) if fside is not None else []
                if not any(e.path == floor or e.path.startswith(floor) for e in report.errors):
                    report.errors.append(InputError(floor, "no readable dump in the --floor run", fatal=True))
                return report.sorted()
            if len(sides) == 2 and all(s.headers for s in sides):
                spread = dataclasses.replace(st, spread={})
                compare_sides(sides[0] if floor_side == "gpu" else sides[1], fside, spread, advance)
                st = dataclasses.replace(st, floor=spread.spread, floor_side=floor_side)
        return _compare(report, sides, opts, st, scripts, advance)
    finally:
        if progress is not None:
            progress.close()


def _compare(report: Report, sides: list, opts: Options, st: Settings, scripts, advance) -> Report:
    inputs = Inputs()
    if scripts is not None:
        inputs = script_inputs(scripts[0], scripts[1], report, opts)
    if len(sides) < 2 or not all(s.headers for s in sides):  # nothing of a side is a readable dump: exit 2
        for s in sides:
            report.errors += side_errors(s)
        report.absorb(run_pipeline(inputs, opts))
        report.findings = [f for f in report.findings if f.check == CHECK]
        report.compared = 0
        return report.sorted()
    res = compare_sides(sides[0], sides[1], st, advance)
    found, masked, errors = findings(res)
    annotate(masked)  # each substituted kernel's class (docs/fidelity.md); its outputs were measured
    inputs.findings += found  # within the thresholds, so that is listed (--show-masked), not reported again
    report.absorb(run_pipeline(inputs, opts))
    report.findings = [f for f in report.findings if f.check == CHECK]  # the scripts' own: diff's and check's
    report.masked = list(masked)  # the scripts' masked substitutions are diff's to list
    report.errors += errors + side_errors(sides[0]) + side_errors(sides[1])
    report.compared = res.compared
    report.overview = overview(res)
    report.details["dumps"] = res
    report.json_extra["dumps"] = res.to_json()
    return report.sorted()


def script_inputs(g: str, n: str, report: Report, opts: Options) -> Inputs:
    """The two script trees (or files) as the pipeline's Inputs, read as `diff` reads them."""
    from ..run import scopes  # lazy: keeps --help fast
    from ..inputs.sources import SourceError, read_path  # lazy: keeps --help fast
    from ..run.folders import collect  # lazy: keeps --help fast
    from ..run.pairing import skip_dirs  # lazy: keeps --help fast
    from ..inputs.walk import walk  # lazy: keeps --help fast

    for p in (g, n):
        if not os.path.exists(p):
            raise UsageError(f"--scripts {p}: no such file or directory")
    if os.path.isdir(g) and os.path.isdir(n):
        gfiles = walk(g, skip_dirs(), report.errors, g.rstrip("/"))
        nfiles = walk(n, skip_dirs(), report.errors, n.rstrip("/"))
        c = collect(gfiles, nfiles, report, opts)
        return scopes.inputs(c, (scopes.disk(g), scopes.disk(n)), report=report)
    if os.path.isdir(g) or os.path.isdir(n):
        raise UsageError("--scripts takes two folders or two files")
    try:
        gs, ns = read_path(g), read_path(n)
    except SourceError as e:
        report.errors.append(InputError(str(e).split(": ", 1)[0], str(e).split(": ", 1)[-1], fatal=True))
        return Inputs()
    return scopes.files([gs], [ns], [(gs, ns)])
