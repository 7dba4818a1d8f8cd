"""The `check` hooks of the `process` check (rules/kinds.yaml): the configured `logs` of
each side are measured in place (streamed, like a dataset), and both sides' curves are
compared when the engine meets the two facts.

measure(path) -> Extract   one fact `process:curves` per configured path, holding the Run
                           (value: what was read, e.g. "loss: 3000 points"; `force` makes
                           the engine hand the pair to `classify` even when the texts match);
                           a path with no curves is an input not understood (never a pass)
derive(table)              a side given two or more log paths whose curves overlap (two runs
                           of one config: `--gpu logs=A --gpu logs=B`): the first is the run,
                           the others its floor, as `curves --floor` (their spread per metric,
                           meta["floor"]); logs that do not overlap (one run's parts) are left
classify(key, g, n, rs)    the comparison's most severe finding, or None when equal; the
                           comparison itself is left in both facts' meta["details"] for the
                           report's views (checkrun copies it into Report.details)
"""
from __future__ import annotations

from ..run.finding import finding
from ..model import Extract, Fact, Finding, InputError, Severity, Side
from ..inputs.sources import SourceError, shown_path
from .findings import CHECK, findings
import dataclasses

from .metrics import Settings
from .readers import read_side
from .verdict import compare_runs, floor_from

KEY = "process:curves"


def measure(path: str, **_options) -> Extract:
    shown = shown_path(path)
    try:
        run = read_side([shown], shown)
    except (OSError, SourceError) as e:
        return Extract(errors=[InputError(shown, f"cannot read the training log: {e}", fatal=True)])
    ex = Extract(errors=list(run.errors))
    if run.empty:
        if not any(e.fatal for e in run.errors):
            why = "; ".join(run.skipped_files[:3]) or "no files"
            here = Side(value=f"no training curves: {why}", path=shown, line=None, source="logs")
            ex.findings.append(finding("input-not-understood", check=CHECK, key=f"input:{shown}", gpu=here,
                                       message=f"logs {shown}: no training curves recognised ({why}); "
                                               f"process data not compared"))
        return ex
    ex.facts.append(curves_fact(run, shown))
    ex.understood = True
    return ex


def curves_fact(run, shown: str) -> Fact:
    """The fact that carries one side's curves to `classify`."""
    names = sorted(k for k, t in run.tracks.items() if t.points)
    summary = ", ".join(f"{k}: {run.tracks[k].points} points" for k in names[:3])
    return Fact(key=KEY, value=summary, check=CHECK, path=shown, line=None,
                source="; ".join(r.reader for r in run.recognised), meta={"run": run, "force": True})


def derive(table) -> None:
    runs = [f for f in table.facts.get(KEY, []) if "run" in f.meta]
    if len(runs) < 2 or any("floor" in f.meta for f in runs):
        return
    first, spread, seconds = runs[0], {}, []
    for other in runs[1:]:
        got = floor_from(compare_runs(first.meta["run"], other.meta["run"], Settings()))
        if got:  # the two overlap: a second run of the same config
            seconds.append(other)
            for k, v in got.items():
                spread[k] = max(v, spread.get(k, 0.0))
    if not seconds:
        return  # the parts of one run (or runs that share no step): as before, the strongest fact compares
    kept = dataclasses.replace(first, meta={**first.meta, "floor": spread, "floor_of": [f.path for f in seconds]})
    table.facts[KEY] = [f for f in table.facts[KEY] if f is not first and all(f is not s for s in seconds)] + [kept]


def classify(key: str, g: Fact | None, n: Fact | None, rs) -> Finding | None:
    if g is None or n is None or "run" not in g.meta or "run" not in n.meta:
        return None  # a side without curves was said when it was measured
    side = "gpu" if "floor" in g.meta else "npu" if "floor" in n.meta else None  # two runs of one side: its floor
    st = Settings() if side is None else Settings(floor=(g if side == "gpu" else n).meta["floor"], floor_side=side)
    res = compare_runs(g.meta["run"], n.meta["run"], st)
    for f in (g, n):  # for the views (the html page's curves, the markdown section): checkrun hands it on
        f.meta["details"] = {"curves": res}
    found = sorted(findings(res), key=lambda f: Severity(f.severity).rank)
    return found[0] if found else None
