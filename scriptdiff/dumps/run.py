"""Both sides' dumps compared rank by rank: the first divergence in execution order.

A side is opened once (`open_side`): its ranks found, each dump.json read through once (its
header and its number of calls: a damaged file is an error before anything is compared,
never a shorter run) and each stack.json once for the calls an optimizer's step made (the
frames forms of rules/dumps.yaml). Ranks pair by label (step0/rank0 with step0/rank0); a
rank on one side only is said. Each pair of ranks is then read side by side in lockstep
(align.py) and every matched call compared (stats.py); what is kept per rank is bounded:
counts, the calls without a counterpart (the first budget.DUMP_LISTED by name), the first
divergence with the `chain` divergent calls after it and a few rows around it.

The first divergence of the whole comparison is the earliest in execution order: the
earliest step, then the forward pass before the backward pass before what follows it (the
optimizer's step), then the earliest call, then the lowest rank. Its stacks (stack.json),
the module it ran in (construct.json), the settings it depends on (rules/dumps.yaml
dump_depends) and, for a tensor dump, the saved tensors' max |diff|, relative L2 and
cosine, are its evidence.
"""
from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass, field

from .. import budget
from . import ports
from .align import Aligner, Pair
from .reader import (DumpError, Header, Rank, Tensor, calls, diff_stats, header_info, locate, parents, scan_stacks,
                     survey, tensor_ref)
from .stats import Diff, Settings, bad_fields, compare_calls, compare_group

PHASES = ("forward pass", "backward pass", "after the backward pass")
ROWS_BEFORE, ROWS_AFTER = 6, 12


@dataclass
class Side:
    """One side's dump: its ranks, each surveyed (header, calls) and its optimizer calls."""

    spec: str
    ranks: list[Rank] = field(default_factory=list)
    headers: dict = field(default_factory=dict)  # rank label -> Header
    labels: dict = field(default_factory=dict)  # rank label -> {call name: frames form label}
    failed: dict = field(default_factory=dict)  # rank label -> why it cannot be read (one line)
    notes: list = field(default_factory=list)  # (path, message): what was read without a part


def size(rank: Rank) -> int:
    try:
        return os.path.getsize(rank.dump)
    except OSError:
        return 0


def open_side(spec: str, ranks: list[Rank] | None = None, advance=None) -> Side:
    """A side on disk (its ranks: `locate(spec)` unless given), surveyed; raises DumpError
    when nothing of it is a dump. `advance(n)` is told the bytes of each dump.json read."""
    side = Side(spec=spec, ranks=ranks if ranks is not None else locate(spec))
    for r in side.ranks:
        try:
            h = survey(r)
        except DumpError as e:
            side.failed[r.label] = str(e)
            continue
        finally:
            if advance is not None:
                advance(size(r))
        side.headers[r.label] = h
        if r.stack is None:
            side.notes.append((r.folder, "no stack.json: the calls' lines are not known (the cause is looked for "
                                         "by the settings a call depends on only)"))
            continue
        try:
            side.labels[r.label] = scan_stacks(r.stack, set(), ports.frames_form)[1]
        except DumpError as e:
            side.notes.append((r.stack, f"{str(e).split(': ', 1)[-1]}; the calls' lines are not known"))
            r.stack = None
    return side


# ------------------------------------------------------------------------------ one rank

@dataclass
class Divergence:
    label: str  # the rank's
    order: tuple  # (step, phase, index, rank): execution order
    phase: int
    gpu: list  # call names
    npu: list
    op: str
    diffs: list  # [Diff], the most telling first
    err: float
    port: tuple | None = None
    first: bool = False  # the rank's first call
    objs: tuple | None = None  # (GPU calls, NPU calls): kept for the first divergence only

    @property
    def kind(self) -> str:
        return self.diffs[0].kind if self.diffs else "unmatched"

    def what(self) -> str:
        """How it differs, in a few words (`output.0 float32 -> float16`, `NPU only`)."""
        if not self.gpu:
            return "NPU only"
        if not self.npu:
            return "GPU only"
        d = self.diffs[0]
        return {"dtype": f"{d.slot} {d.gpu} -> {d.npu}", "shape": f"{d.slot} shape {d.gpu} -> {d.npu}",
                "nan": f"{d.slot} NaN/inf", "kernel": "another kernel", "arguments": f"{d.slot} {d.gpu} -> {d.npu}",
                "values": f"{d.slot} relative error {d.err:.3g}" if d.err is not None else f"{d.slot} values"}[d.kind]

    def brief(self) -> str:
        return f"{_span(self.gpu or self.npu)} ({self.what()})"

    def to_json(self) -> dict:
        return {"rank": self.label, "phase": PHASES[self.phase], "index": self.order[2], "gpu": list(self.gpu),
                "npu": list(self.npu), "kind": self.kind, "err": self.err, "port": list(self.port) if self.port else None,
                "diffs": [d.to_json() for d in self.diffs[:8]]}


def _span(names: list) -> str:
    if not names:
        return "-"
    return names[0] if len(names) == 1 else f"{names[0]} .. {names[-1]} ({len(names)} calls)"


@dataclass
class Row:
    gpu: str
    npu: str
    status: str  # "" when equal
    first: bool = False

    def to_json(self) -> list:
        return [self.gpu, self.npu, self.status, self.first]


@dataclass
class RankResult:
    label: str
    g: Rank
    n: Rank
    gheader: Header
    nheader: Header
    matched: int = 0  # pairs of calls compared
    tensors: int = 0
    diverging: int = 0
    unmatched: list = field(default_factory=lambda: [0, 0])  # GPU, NPU
    listed: tuple = field(default_factory=lambda: ([], []))  # their names (the first budget.DUMP_LISTED)
    substituted: list = field(default_factory=list)  # (port, gform, nform, gpu names, npu names)
    substitutions: int = 0
    dropped: list = field(default_factory=lambda: [0, 0, None])  # slots past the budgets, calls, the first such
    # values that cannot be compared (a field not of its type, NaN on both sides): how many, in
    # how many calls, and the first few, each "call: what"
    incomparable: list = field(default_factory=lambda: [0, 0, []])
    first: Divergence | None = None
    chain: list = field(default_factory=list)  # [Divergence] after the first, on this rank
    rows: list = field(default_factory=list)  # [Row] around the first divergence (or the start)
    error: str | None = None
    # `--floor`: the call statistics beyond their threshold but within the run-to-run spread,
    # (call, slot, statistic, relative error, spread), the first budget.DUMP_LISTED; and how many
    within: list = field(default_factory=list)
    within_n: int = 0
    # per side (GPU, NPU): the module paths that ran forward, and those whose parameters got
    # gradients (a `parameters_grad` record: a dump at level mix or L0 of the backward pass)
    ran: tuple = field(default_factory=lambda: (set(), set()))
    trained: tuple = field(default_factory=lambda: (set(), set()))

    def to_json(self) -> dict:
        return {"rank": self.label, "gpu": self.g.folder, "npu": self.n.folder, "gpu_calls": self.gheader.calls,
                "npu_calls": self.nheader.calls, "matched": self.matched, "diverging": self.diverging,
                "gpu_only": self.unmatched[0], "npu_only": self.unmatched[1],
                "gpu_only_listed": list(self.listed[0]), "npu_only_listed": list(self.listed[1]),
                "substitutions": self.substitutions,
                "first": self.first.to_json() if self.first else None,
                "chain": [d.to_json() for d in self.chain], "rows": [r.to_json() for r in self.rows],
                "error": self.error,
                **({"within_floor": [list(w) for w in self.within], "within_floor_count": self.within_n}
                   if self.within_n else {})}


def _status(d: Divergence | None, pair: Pair) -> str:
    if not pair.g:
        return "NPU only"
    if not pair.n:
        return "GPU only"
    if d is None:
        if pair.port:
            return f"expected: {pair.port[2]} for {pair.port[1]}"
        return ""
    return d.what()


def _names(calls_) -> list:
    return [c.name for c in calls_]


def compare_rank(gside: Side, nside: Side, g: Rank, n: Rank, st: Settings) -> RankResult:
    gh, nh = Header(), Header()
    res = RankResult(label=g.label or n.label, g=g, n=n, gheader=gh, nheader=nh)
    glabels, nlabels = gside.labels.get(g.label, {}), nside.labels.get(n.label, {})

    def stream(rank, header, labels, i):
        for c in calls(rank, header):
            if labels:
                c.form = labels.get(c.name)
            if c.module is not None:
                (res.trained if c.direction == "parameters_grad" else res.ran)[i].add(c.module)
            yield c

    before: deque = deque(maxlen=ROWS_BEFORE)
    after: list[Row] = []
    step = g.order[0] if g.order else 0
    rank_no = g.order[1] if len(g.order) > 1 else 0
    pos = 0
    try:
        for pair in Aligner(stream(g, gh, glabels, 0), stream(n, nh, nlabels, 1), st.window):
            d = _judge(pair, res, st, step, rank_no, pos == 0)
            pos += 1
            row = Row(_span(_names(pair.g)), _span(_names(pair.n)), _status(d, pair))
            if res.first is None:
                if d is not None and d.diffs:
                    res.first = d
                    d.objs = (pair.g, pair.n)
                    row.first = True
                    res.rows = list(before) + [row]
                else:
                    before.append(row)
                continue
            if len(after) < ROWS_AFTER:
                after.append(row)
            if d is not None and len(res.chain) < st.chain:
                res.chain.append(d)
    except DumpError as e:
        res.error = str(e)
        return res
    res.rows = (res.rows + after) if res.first is not None else list(before)[:ROWS_BEFORE]
    return res


def _judge(pair: Pair, res: RankResult, st: Settings, step: int, rank_no: int, first: bool) -> Divergence | None:
    """Compare one pair; the Divergence when it differs (or has no counterpart), else None."""
    if not pair.g or not pair.n:
        c = (pair.g or pair.n)[0]
        side = 0 if pair.g else 1
        res.unmatched[side] += 1
        if len(res.listed[side]) < budget.DUMP_LISTED:
            res.listed[side].append(c.name)
        return Divergence(res.label, (step, c.phase, c.index, rank_no), c.phase, _names(pair.g), _names(pair.n),
                          c.op, [], 0.0)
    res.matched += 1
    head = pair.g[0]
    odd: list[str] = []  # what of this pair cannot be compared
    for side, group in (("GPU", pair.g), ("NPU", pair.n)):
        for c in group:
            if c.dropped:  # arguments past budget.DUMP_SLOTS / DUMP_DEPTH: counted, said, not compared
                res.dropped[0] += c.dropped
                res.dropped[1] += 1
                res.dropped[2] = res.dropped[2] or c.name
            if c.malformed:
                odd += [f"{c.name} on {side}: {why}" for why in c.malformed]
    if pair.port:
        diffs, err = compare_group(pair.g, pair.n, pair.port[3], pair.port, st)
        for side, group in (("GPU", pair.g), ("NPU", pair.n)):  # a group is compared by its output: every field said
            odd += [f"{c.name}: {d.detail}" for c in group for slot, v in c.slots.items()
                    if isinstance(v, Tensor) and v.bad for d in bad_fields(slot, side, v)]
        if pair.port[3] and not diffs:
            res.substitutions += 1
            if len(res.substituted) < budget.DUMP_LISTED:
                res.substituted.append((pair.port[0], pair.port[1], pair.port[2], _names(pair.g), _names(pair.n)))
    else:
        res.tensors += sum(1 for v in head.slots.values() if isinstance(v, Tensor))
        within: list = []
        diffs, err = compare_calls(head, pair.n[0], st, within)
        res.within_n += len(within)
        res.within += within[:max(0, budget.DUMP_LISTED - len(res.within))]
    if diffs:
        odd += [f"{head.name}: {d.detail}" for d in diffs if d.kind == "incomparable"]
    if odd:
        res.incomparable[0] += len(odd)
        res.incomparable[1] += 1
        res.incomparable[2] += odd[:max(0, budget.DUMP_LISTED_ODD - len(res.incomparable[2]))]
        diffs = [d for d in diffs if d.kind != "incomparable"]
    if not diffs:
        return None
    res.diverging += 1
    op = head.op
    return Divergence(res.label, (step, head.phase, head.index, rank_no), head.phase, _names(pair.g),
                      _names(pair.n), op, diffs, err, port=pair.port, first=first)


# --------------------------------------------------------------------------- both sides

@dataclass
class Result:
    gpu: Side
    npu: Side
    settings: Settings
    ranks: list = field(default_factory=list)  # [RankResult]
    only: tuple = field(default_factory=lambda: ([], []))  # rank labels on one side only
    first: Divergence | None = None
    evidence: dict = field(default_factory=dict)

    @property
    def compared(self) -> int:
        return sum(1 for r in self.ranks if r.error is None)

    def rank_of(self, d: Divergence) -> RankResult:
        return next(r for r in self.ranks if r.label == d.label)

    def to_json(self) -> dict:
        return {"settings": self.settings.to_json(),
                "read": {s: {"path": side.spec, "ranks": {r.label or ".": {"folder": r.folder, **_header(side, r)}
                                                          for r in side.ranks}}
                         for s, side in (("gpu", self.gpu), ("npu", self.npu))},
                "gpu_only_ranks": list(self.only[0]), "npu_only_ranks": list(self.only[1]),
                "ranks": [r.to_json() for r in self.ranks],
                "first": self.first.to_json() if self.first else None, "evidence": self.evidence}


def _header(side: Side, r: Rank) -> dict:
    h = side.headers.get(r.label)
    if h is None:
        return {"error": side.failed.get(r.label)}
    return {"task": h.task, "level": h.level, "framework": h.framework, "calls": h.calls}


def pair_ranks(g: Side, n: Side) -> tuple[list, list, list]:
    """(GPU rank, NPU rank) pairs by label, and the labels on one side only. A step with one
    rank folder a side pairs them whatever their names (rank0 with proc: one run saw
    torch.distributed, the other not)."""
    gl = {r.label: r for r in g.ranks}
    nl = {r.label: r for r in n.ranks}
    pairs = [(gl[k], nl[k]) for k in gl if k in nl]
    gonly = [k for k in gl if k not in nl]
    nonly = [k for k in nl if k not in gl]
    for step in {gl[k].step for k in gonly}:
        a = [k for k in gonly if gl[k].step == step]
        b = [k for k in nonly if nl[k].step == step]
        if len(a) == 1 == len(b) and sum(1 for r in g.ranks if r.step == step) == 1 \
                and sum(1 for r in n.ranks if r.step == step) == 1:
            pairs.append((gl[a[0]], nl[b[0]]))
            gonly.remove(a[0])
            nonly.remove(b[0])
    return sorted(pairs, key=lambda p: (p[0].order, p[0].label)), gonly, nonly


def compare_sides(g: Side, n: Side, st: Settings | None = None, advance=None) -> Result:
    st = st or Settings()
    res = Result(gpu=g, npu=n, settings=st)
    pairs, gonly, nonly = pair_ranks(g, n)
    res.only = (gonly, nonly)
    for gr, nr in pairs:
        if gr.label in g.failed or nr.label in n.failed:
            continue  # unknown, not absent: its error says so
        res.ranks.append(compare_rank(g, n, gr, nr, st))
        if advance is not None:
            advance(size(gr) + size(nr))
    firsts = [r.first for r in res.ranks if r.first is not None and r.error is None]
    res.first = min(firsts, key=lambda d: d.order) if firsts else None
    if res.first is not None:
        res.evidence = evidence(res, res.first)
    return res


def evidence(res: Result, d: Divergence) -> dict:
    """The first divergence's stacks, module, settings and (tensor dumps) saved tensors."""
    rr = res.rank_of(d)
    out: dict = {"frames": {}, "module": {}, "depends": [], "tensors": None, "notes": []}
    for side, rank, names in (("gpu", rr.g, d.gpu), ("npu", rr.n, d.npu)):
        try:
            found, _ = scan_stacks(rank.stack, set(names))
        except DumpError as e:
            out["notes"].append(str(e))
            found = {}
        frames = next((found[x] for x in names if x in found), [])
        out["frames"][side] = [f.to_json() for f in frames]
        parent = parents(rank.construct, set(names))
        out["module"][side] = next((parent[x] for x in names if x in parent), None)
    port = d.port[0] if d.port else None
    out["depends"] = [[title, list(keys)] for title, keys in ports.depends(d.op, port, d.phase, d.first, d.kind)]
    top = d.diffs[0] if d.diffs else None
    if top is not None and top.slot and len(d.gpu) == 1 and len(d.npu) == 1:
        out["tensors"] = _saved(rr, d, top, out["notes"])
    return out


def _saved(rr: RankResult, d: Divergence, top: Diff, notes: list) -> dict | None:
    """max |diff|, relative L2 and cosine of the diverging slot's saved tensors (task tensor)."""
    if d.objs is None:
        return None
    a, b = d.objs[0][0].slots.get(top.slot), d.objs[1][0].slots.get(top.slot)
    if not (isinstance(a, Tensor) and isinstance(b, Tensor) and a.data_name and b.data_name):
        return None
    try:
        ga, nb = tensor_ref(rr.g, a.data_name), tensor_ref(rr.n, b.data_name)
        return {"slot": top.slot, **diff_stats(ga, nb)}
    except DumpError as e:
        notes.append(str(e))
        return None


def describe_side(side: Side) -> str:
    parts = []
    for r in side.ranks[:4]:
        h = side.headers.get(r.label)
        what = side.failed.get(r.label, "not read") if h is None else f"{h.calls:,} calls; {header_info(h)}"
        parts.append(f"{r.label or r.folder}: {what}")
    more = f"; ... ({len(side.ranks) - 4} more ranks)" if len(side.ranks) > 4 else ""
    return f"{len(side.ranks)} rank{'s' if len(side.ranks) != 1 else ''} ({'; '.join(parts)}{more})"
