"""A dumps comparison as Findings of check `dumps` (rules/dumps.yaml), masks and text lines.

One finding carries the first divergence (its kind's rule: values, dtype, shape, NaN/inf,
arguments, kernel), located at the diverging call's own line (its innermost stack frame
outside the libraries) with its evidence in `extra["dumps"]`; each rank with calls that have
no counterpart gets a finding listing them; a rank on one side only, or ranks that could not
be matched at all, are not comparable. Expected substitutions (a port's NPU form for its GPU
form, within the thresholds) are masked.
"""
from __future__ import annotations

from .. import budget
from ..run.finding import finding
from ..model import Finding, InputError, Masked, Side
from ..ruleset.rules import code
from . import ports
from .reader import Frame
from .run import PHASES, RankResult, Result, _span, describe_side

CHECK = "dumps"
RULE_OF = {"values": "dump-values-diverge", "dtype": "dump-dtype-changed", "shape": "dump-shape-changed",
           "nan": "dump-nan-inf", "arguments": "dump-arguments-differ", "kernel": "dump-kernel-differs"}
SHOWN_CHAIN = 5
SHOWN_WITHIN = 5


def key_of(label: str, name: str) -> str:
    return f"dump:{label}:{name}" if label else f"dump:{name}"


def own_frame(frames: list) -> Frame | None:
    """The innermost frame that is not a library's (rules/dumps.yaml dump_frames)."""
    for f in frames:
        fr = Frame(*f) if isinstance(f, list) else f
        if not ports.library(fr.path):
            return fr
    return None


def _side(frames: list, value, dump: str, names: list) -> Side:
    fr = own_frame(frames)
    if fr is None:
        return Side(value=value, path=dump, line=None, source=_span(names))
    return Side(value=value, path=fr.path, line=fr.line, source=fr.source)


def _chain(ds: list, limit: int) -> str:
    if not ds:
        return ""
    more = "+" if len(ds) >= limit else ""
    return f"; then {len(ds)}{more} more divergent call(s), the next {ds[0].brief()}"


def divergence_finding(res: Result) -> Finding | None:
    d = res.first
    if d is None:
        return None
    rr = res.rank_of(d)
    ev = res.evidence
    top = d.diffs[0]
    name = d.gpu[0] if d.gpu else d.npu[0]
    other = "" if d.npu == d.gpu else f" ({_span(d.npu)} on NPU)"
    where = f"rank {d.label}, " if d.label else ""
    what = top.detail
    if top.kind == "kernel" and len(d.diffs) == 1:
        what += "; its outputs agree within the thresholds"
    elif top.kind != "kernel" and any(x.kind == "kernel" for x in d.diffs):
        what += "; " + next(x.detail for x in d.diffs if x.kind == "kernel")
    if top.kind == "values" and top.slot and top.slot.startswith("input"):
        what += " (the call's inputs already differ)"
    message = (f"first divergence ({where}{PHASES[d.phase]}, call {d.order[2] + 1}): {_span(d.gpu)}{other}: "
               f"{what}{_chain(rr.chain, res.settings.chain)}")
    extra = {"dumps": {"first": True, "rank": d.label, "phase": PHASES[d.phase], "index": d.order[2],
                       "gpu": list(d.gpu), "npu": list(d.npu), "kind": d.kind, "op": d.op,
                       "port": list(d.port) if d.port else None, "diffs": [x.to_json() for x in d.diffs[:8]],
                       "chain": [c.to_json() for c in rr.chain], "rows": [r.to_json() for r in rr.rows],
                       "frames": ev.get("frames", {}), "module": ev.get("module", {}),
                       "depends": ev.get("depends", []), "tensors": ev.get("tensors")}}
    return finding(RULE_OF[top.kind], key=key_of(d.label, name),
                   gpu=_side(ev.get("frames", {}).get("gpu", []), top.gpu, rr.g.dump, d.gpu),
                   npu=_side(ev.get("frames", {}).get("npu", []), top.npu, rr.n.dump, d.npu),
                   message=message, extra=extra)


def findings(res: Result) -> tuple[list[Finding], list[Masked], list[InputError]]:
    """The comparison's findings, its masked substitutions, and the errors of ranks that could
    not be read while they were compared (a side's own errors, met when it was opened, are
    `side_errors`)."""
    out: list[Finding] = []
    masked: list[Masked] = []
    errors: list[InputError] = []
    f = divergence_finding(res)
    if f is not None:
        out.append(f)
    for note in res.evidence.get("notes", []):  # a saved tensor or a stack that could not be read
        path, _, why = note.partition(": ")
        errors.append(InputError(path, why or note))
    for rr in res.ranks:
        if rr.error is not None:
            path, _, why = rr.error.partition(": ")
            errors.append(InputError(path, why or rr.error, fatal=True))
            continue
        ng, nn = rr.unmatched
        if ng or nn:
            msg = (f"{ng} GPU call(s) and {nn} NPU call(s) have no counterpart"
                   + (f" (rank {rr.label})" if rr.label else "") + ": "
                   + "; ".join(f"{s} {', '.join(names[:6])}" + (" ..." if len(names) > 6 or cnt > len(names) else "")
                               for s, names, cnt in (("GPU", rr.listed[0], ng), ("NPU", rr.listed[1], nn)) if names))
            out.append(finding("dump-calls-unmatched", key=key_of(rr.label, "unmatched"),
                               gpu=Side(value=f"{ng} call(s)", path=rr.g.dump, line=None,
                                        source=", ".join(rr.listed[0][:3])),
                               npu=Side(value=f"{nn} call(s)", path=rr.n.dump, line=None,
                                        source=", ".join(rr.listed[1][:3])),
                               message=msg))
        if not rr.matched and (rr.gheader.calls or rr.nheader.calls):
            out.append(_not_comparable(rr.label, "calls", rr.g.dump, rr.n.dump,
                                       f"no call of rank {rr.label or '.'} has a counterpart on the other side: "
                                       f"the dumps are not of one training step"))
        elif not rr.matched:
            out.append(_not_comparable(rr.label, "calls", rr.g.dump, rr.n.dump,
                                       f"neither dump of rank {rr.label or '.'} holds a call: nothing was compared"))
        n_odd, n_calls, named = rr.incomparable
        if n_odd:
            more = f"; ... ({n_odd - len(named)} more)" if n_odd > len(named) else ""
            out.append(_not_comparable(rr.label, "values", rr.g.dump, rr.n.dump,
                                       f"{n_odd:,} value(s) of {n_calls:,} call(s) cannot be compared and were not: "
                                       f"{'; '.join(named)}{more}"))
        if rr.dropped[0]:
            out.append(_not_comparable(rr.label, "arguments", rr.g.dump, rr.n.dump,
                                       f"{rr.dropped[0]:,} tensor(s) and argument(s) of {rr.dropped[1]:,} call(s) "
                                       f"(the first {rr.dropped[2]}) are past the {budget.DUMP_SLOTS:,} a call keeps or "
                                       f"{budget.DUMP_DEPTH} levels deep: they were not compared"))
        tasks = {rr.gheader.task, rr.nheader.task}
        if "md5" in tasks and len(tasks) > 1:
            out.append(_not_comparable(rr.label, "task", rr.g.dump, rr.n.dump,
                                       f"task {rr.gheader.task} on GPU and {rr.nheader.task} on NPU: an md5 summary "
                                       f"and statistics cannot be compared; only dtypes, shapes and arguments were"))
        for port, gform, nform, gnames, nnames in rr.substituted:
            gf, nf = ports.form(f"{port}/{gform}"), ports.form(f"{port}/{nform}")
            masked.append(Masked(rule=code("dump-port-substitution"),
                                 gpu=Side(value=gf.title if gf else gform, path=rr.g.dump, line=None,
                                          source=_span(gnames)),
                                 npu=Side(value=nf.title if nf else nform, path=rr.n.dump, line=None,
                                          source=_span(nnames)), target=f"{port}/{nform}"))
    out += frozen(res)
    for side, labels, rs in (("GPU", res.only[0], res.gpu), ("NPU", res.only[1], res.npu)):
        for label in labels:
            r = next(x for x in rs.ranks if x.label == label)
            other = "NPU" if side == "GPU" else "GPU"
            out.append(_not_comparable(label, "rank", r.dump if side == "GPU" else None,
                                       r.dump if side == "NPU" else None,
                                       f"rank {label} is in the {side} dump only: it was not compared "
                                       f"(the {other} dump has {', '.join(x.label for x in (res.npu if side == 'GPU' else res.gpu).ranks) or 'none'})"))
    return out, masked, errors


def frozen(res: Result) -> list[Finding]:
    """Modules frozen on one side only: on a pair of ranks whose dumps both record gradients
    (`parameters_grad`), a module that runs on both sides and has gradients on one only. One
    finding per side, its modules named (over every rank pair)."""
    out = []
    for i, (side, other) in enumerate((("GPU", "NPU"), ("NPU", "GPU"))):
        mods: dict[str, RankResult] = {}
        for rr in res.ranks:
            if rr.error is None and rr.trained[0] and rr.trained[1]:
                for m in sorted((rr.trained[1 - i] - rr.trained[i]) & rr.ran[i] & rr.ran[1 - i]):
                    mods.setdefault(m, rr)
        if not mods:
            continue
        names = list(mods)
        rr = next(iter(mods.values()))
        shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
        have = Side(value="gradients", path=(rr.g if i else rr.n).dump, line=None, source=", ".join(names[:3]))
        lack = Side(value="no gradients", path=(rr.n if i else rr.g).dump, line=None, source=", ".join(names[:3]))
        out.append(finding("dump-frozen-on-one-side", key=f"dump:frozen:{side.lower()}",
                           gpu=lack if i == 0 else have, npu=have if i == 0 else lack,
                           message=f"frozen on {side} only: {shown} ({len(names)} module(s)) run on both sides, and "
                                   f"their parameters get gradients in the {other} dump (parameters_grad) and none "
                                   f"in the {side} dump",
                           extra={"frozen": {"side": side.lower(), "modules": names}}))
    return out


def side_errors(side) -> list[InputError]:
    """A side's ranks that could not be read (fatal) and what was read without a part (notes)."""
    out = []
    for why in side.failed.values():
        path, _, reason = why.partition(": ")
        out.append(InputError(path, reason or why, fatal=True))
    for path, why in side.notes:
        out.append(InputError(path, why, level="note"))
    return out


def _not_comparable(label: str, what: str, gdump: str | None, ndump: str | None, message: str) -> Finding:
    return finding("dump-not-comparable", key=key_of(label, what),
                   gpu=Side(value="present", path=gdump, line=None, source="") if gdump else None,
                   npu=Side(value="present", path=ndump, line=None, source="") if ndump else None,
                   message=message)


# ------------------------------------------------------------------------------ the text

def overview(res: Result) -> list[str]:
    s = res.settings
    out = [f"GPU {res.gpu.spec}: {describe_side(res.gpu)}", f"NPU {res.npu.spec}: {describe_side(res.npu)}"]
    matched = sum(r.matched for r in res.ranks)
    ng = sum(r.unmatched[0] for r in res.ranks)
    nn = sum(r.unmatched[1] for r in res.ranks)
    subs = sum(r.substitutions for r in res.ranks)
    out.append(f"compared {res.compared} rank pair(s): {matched:,} calls matched, {ng:,} GPU and {nn:,} NPU call(s) "
               f"without a counterpart, {subs:,} expected substitution(s)")
    out.append(f"thresholds: a statistic's relative error > {s.rtol:g}; an output's > {s.output_rtol:g} with its "
               f"inputs within {s.input_rtol:g} (Ascend's accuracy guidance; --rtol, --output-rtol, --input-rtol)")
    if s.floor:
        out += floor_lines(res)
    d = res.first
    if d is None:
        out.append(("no divergence: every matched call agrees within the thresholds"
                    + (f" and the {s.floor_side.upper()}-to-{s.floor_side.upper()} spread" if s.floor else ""))
                   if any(r.matched for r in res.ranks) else "nothing was compared")
        return out
    ev = res.evidence
    top = d.diffs[0]
    out.append(f"first divergence: {('rank ' + d.label + ', ') if d.label else ''}{PHASES[d.phase]}, "
               f"call {d.order[2] + 1}: {_span(d.gpu)}" + ("" if d.gpu == d.npu else f" / NPU {_span(d.npu)}"))
    out.append(f"  {top.detail}")
    for x in d.diffs[1:4]:
        out.append(f"  {x.detail}")
    for side in ("gpu", "npu"):
        fr = own_frame(ev.get("frames", {}).get(side, []))
        if fr is not None:
            out.append(f"  {side.upper()} at {fr.path}:{fr.line} in {fr.function}: {fr.source}")
    mod = ev.get("module", {}).get("gpu") or ev.get("module", {}).get("npu")
    if mod:
        out.append(f"  in module call {mod}")
    t = ev.get("tensors")
    if t:
        out.append(f"  saved tensors ({t['slot']}): max |diff| {t.get('max_abs_diff')}, relative L2 "
                   f"{t.get('rel_l2')}, cosine {t.get('cosine')}")
    if ev.get("depends"):
        out.append("  depends on: " + "; ".join(f"{title} ({', '.join(keys[:5])}{', ...' if len(keys) > 5 else ''})"
                                                for title, keys in ev["depends"]))
    rr = res.rank_of(d)
    if rr.chain:
        out.append("  then: " + "; ".join(c.brief() for c in rr.chain[:SHOWN_CHAIN])
                   + (f"; ... ({len(rr.chain) - SHOWN_CHAIN} more)" if len(rr.chain) > SHOWN_CHAIN else ""))
    for other in res.ranks:
        if other is not rr and other.first is not None:
            out.append(f"  rank {other.label}: first divergence at {other.first.brief()}")
    out += side_by_side(rr.rows)
    return out


def floor_lines(res: Result) -> list[str]:
    """`--floor`: the spread that set the tolerances, and the call statistics beyond their
    threshold that it keeps within (the per-call verdict; those beyond it are the findings)."""
    s = res.settings
    side = s.floor_side.upper()
    (call, slot, stat), top = max(s.floor.items(), key=lambda kv: (kv[1], kv[0]))
    out = [f"floor: the {side}-to-{side} spread of two runs sets each call statistic's tolerance (at least the "
           f"thresholds): {len(s.floor):,} call statistic(s), the largest {100 * top:.2f}% ({call} {slot} {stat})"]
    within = [w for r in res.ranks for w in r.within]
    count = sum(r.within_n for r in res.ranks)
    for call, slot, stat, err, spread in within[:SHOWN_WITHIN]:
        out.append(f"  {call} {slot} {stat}: {100 * err:.2f}% between GPU and NPU, {s.floor_said(err, spread)}")
    if count > SHOWN_WITHIN:
        out.append(f"  ... ({count - SHOWN_WITHIN} more within the spread)")
    if not count:
        out.append(f"  no call statistic beyond the thresholds is within the {side}-to-{side} spread")
    return out


def side_by_side(rows: list) -> list[str]:
    if not rows:
        return []
    w = min(52, max(len("GPU"), *(len(r.gpu) for r in rows)))
    v = min(52, max(len("NPU"), *(len(r.npu) for r in rows)))
    out = ["  calls side by side (> the first divergence):", f"    {'GPU':<{w}}  {'NPU':<{v}}"]
    for r in rows:
        out.append(f"  {'>' if r.first else ' '} {_cut(r.gpu, w):<{w}}  {_cut(r.npu, v):<{v}}  {r.status}".rstrip())
    return out


def _cut(s: str, n: int) -> str:
    return s if len(s) <= n else s[:n - 1] + "…"

