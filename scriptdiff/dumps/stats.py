"""One matched call compared, tensor by tensor and argument by argument.

The defaults follow Ascend's accuracy guidance for msprobe's statistics comparison (msprobe
compare, "accuracy compare" chapter: Result and highlighting rules):

  --rtol 0.5         a tensor differs when one of its Max, Min, Mean and Norm has a relative
                     error above 0.5 (the comparison's "Warning": at least one of the four
                     statistics beyond 0.5)
  --output-rtol 0.1  the call itself brought a difference in when an output's Max has a
  --input-rtol 0.01  relative error above 0.1 while every input's stays within 0.01 (the
                     guidance's highlight of an API whose output error is not its inputs')

The relative error of a statistic is |NPU - GPU| / max(|NPU|, |GPU|, atol) (msprobe's
magnitude difference; `atol`, 1e-6, keeps statistics near zero from dividing by nothing).
Besides the thresholds, a call differs for certain when a tensor's dtype or shape differs
(a dtype change is named as such: float32 on GPU, float16 on NPU), when NaN or inf appears on
one side only, when an argument that is not a tensor differs (a dropout probability, the
scalar an optimizer multiplies by: up to the port's device and backend names), or when two
md5 summaries differ.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

from .. import budget
from . import ports
from .reader import STATS, Scalar, Tensor, _dtype, _g

# the order in which kinds name a call's divergence: the most telling first; "incomparable"
# is no divergence: a value that cannot be compared (a field not of its type, NaN on both
# sides), said per rank (SD810), never taken for agreement
KINDS = ("dtype", "nan", "shape", "kernel", "arguments", "values", "incomparable")


@dataclass
class Settings:
    rtol: float = 0.5
    output_rtol: float = 0.1
    input_rtol: float = 0.01
    atol: float = 1e-6
    chain: int = 10  # calls that follow the first divergence, listed
    window: int = 256  # calls of each side the matcher looks ahead
    # `--floor`: (call name, slot, statistic) -> the relative error between two runs of
    # `floor_side` (the call named as that side's first run names it): that statistic's
    # tolerance is the larger of its threshold and this spread
    floor: dict = field(default_factory=dict)
    floor_side: str = "gpu"
    # set (to {}) while the two runs of one side are compared: every call statistic's relative
    # error is recorded there (the largest over ranks), which becomes the other comparison's floor
    spread: dict | None = None

    def to_json(self) -> dict:
        out = {"rtol": self.rtol, "output_rtol": self.output_rtol, "input_rtol": self.input_rtol,
               "atol": self.atol, "chain": self.chain, "window": self.window}
        if self.floor:
            out["floor"] = {"side": self.floor_side, "statistics": len(self.floor),
                            "largest": max(self.floor.values())}
        return out

    def spread_of(self, call: str, slot: str, stat: str) -> float | None:
        return self.floor.get((call, slot, stat))

    def floor_said(self, err: float, spread: float | None) -> str:
        """A relative error against the run-to-run spread of its statistic: "within the
        GPU-to-GPU spread (60.00%)", or how far beyond it."""
        side = self.floor_side.upper()
        if spread is None:
            return f"no {side}-to-{side} spread was measured for it"
        if err <= spread:
            return f"within the {side}-to-{side} spread ({100 * spread:.2f}%)"
        if spread == 0:
            return f"the two {side} runs agree on it"
        return (f"beyond the {side}-to-{side} spread ({100 * spread:.2f}%) by {100 * (err - spread):.2f} points "
                f"({err / spread:.1f}x)")


@dataclass
class Diff:
    """One way one matched call differs."""

    kind: str  # one of KINDS
    slot: str | None  # input.0, output.0, parameters_grad.weight.0 (None: the call as a whole)
    gpu: str  # the GPU side as shown
    npu: str
    detail: str  # in words
    err: float | None = None  # the largest relative error (values)

    def rank(self) -> tuple:
        return (KINDS.index(self.kind), 0 if self.slot and self.slot.startswith("input") else 1)

    def to_json(self) -> dict:
        return {"kind": self.kind, "slot": self.slot, "gpu": self.gpu, "npu": self.npu, "detail": self.detail,
                "err": self.err}


def rel(g: float, n: float, atol: float) -> float:
    if g == n:
        return 0.0
    return abs(n - g) / max(abs(n), abs(g), atol)


def _stat_errs(g: Tensor, n: Tensor, atol: float) -> list[tuple[str, float]]:
    out = []
    for k, a, b in zip(STATS, g.stats, n.stats):
        if a is not None and b is not None and math.isfinite(a) and math.isfinite(b):
            out.append((k, rel(a, b, atol)))
    return out


def _nonfinite(t: Tensor) -> str:
    return ", ".join(f"{k} {v}" for k, v in zip(STATS, t.stats) if v is not None and not math.isfinite(v))


@lru_cache(maxsize=budget.DTYPE_MEMO)
def _norm_dtype(d) -> str:
    s = str(d)
    for pre in ("torch.", "mindspore.", "numpy.", "np."):
        if s.startswith(pre):
            s = s[len(pre):]
    return {"half": "float16", "float": "float32", "double": "float64", "Float16": "float16",
            "Float32": "float32", "BFloat16": "bfloat16"}.get(s, s).lower()


def _shown(v) -> str:
    if v is None:
        return "None"
    return v.shown()


def bad_fields(slot: str, side: str, t: Tensor) -> list[Diff]:
    """The fields of a tensor that are not of their type (reader.Tensor.bad): not comparable."""
    return [Diff("incomparable", slot, "", "", f"{slot}'s {k} on {side} {why}") for k, why in t.bad]


def compare_tensors(slot: str, g: Tensor, n: Tensor, st: Settings, fields: bool = True, call: str | None = None,
                    within: list | None = None) -> tuple[list[Diff], float]:
    """The differences of one tensor, and its largest relative error (of any statistic); with
    `fields`, its fields that are not of their type too (a port's group says its own). `call`:
    the name its statistics are known by in the floor (Settings.floor, Settings.spread); a
    statistic beyond its threshold but within the floor is appended to `within` as (call, slot,
    statistic, relative error, spread)."""
    if g.stats == n.stats and g.dtype == n.dtype and g.shape == n.shape and g.md5 == n.md5 \
            and not (g.bad or n.bad) and all(v is None or math.isfinite(v) for v in g.stats):
        if st.spread is not None and call is not None:
            for k, v in zip(STATS, g.stats):
                if v is not None:
                    st.spread.setdefault((call, slot, k), 0.0)
        return [], 0.0  # the same statistics (runs that agree bit for bit)
    out: list[Diff] = bad_fields(slot, "GPU", g) + bad_fields(slot, "NPU", n) if fields and (g.bad or n.bad) else []
    if g.dtype is not None and n.dtype is not None and _norm_dtype(g.dtype) != _norm_dtype(n.dtype):
        out.append(Diff("dtype", slot, _dtype(g.dtype), _dtype(n.dtype),
                        f"{slot} is {_dtype(g.dtype)} on GPU and {_dtype(n.dtype)} on NPU (a dtype change)"))
    if g.shape is not None and n.shape is not None and g.shape != n.shape:
        out.append(Diff("shape", slot, str(list(g.shape)), str(list(n.shape)),
                        f"{slot} has shape {list(g.shape)} on GPU and {list(n.shape)} on NPU"))
    gb, nb = g.nonfinite(), n.nonfinite()
    if gb != nb:
        bad, side = (n, "NPU") if nb else (g, "GPU")
        out.append(Diff("nan", slot, _nonfinite(g) or "finite", _nonfinite(n) or "finite",
                        f"{slot} has NaN/inf on {side} only ({_nonfinite(bad)})"))
    elif gb:  # both have one: statistic by statistic
        out += _nonfinite_pair(slot, g, n)
    if g.md5 and n.md5 and g.md5 != n.md5:
        out.append(Diff("values", slot, g.md5, n.md5, f"{slot}'s md5 is {g.md5} on GPU and {n.md5} on NPU"))
    errs = _stat_errs(g, n, st.atol)
    worst = max(errs, key=lambda x: x[1]) if errs else None
    if st.spread is not None and call is not None:
        for k, e in errs:
            st.spread[(call, slot, k)] = max(e, st.spread.get((call, slot, k), 0.0))
    if st.floor and call is not None and worst is not None and worst[1] > st.rtol:
        beyond = []
        for k, e in errs:
            spread = st.spread_of(call, slot, k)
            if e <= st.rtol:
                continue
            if spread is not None and e <= spread:
                if within is not None:
                    within.append((call, slot, k, e, spread))
            else:
                beyond.append((k, e, spread))
        if beyond:
            k, e, spread = max(beyond, key=lambda x: x[1])
            i = STATS.index(k)
            out.append(Diff("values", slot, _g(g.stats[i]), _g(n.stats[i]),
                            f"{slot}'s {k} is {_g(g.stats[i])} on GPU and {_g(n.stats[i])} on NPU "
                            f"(relative error {e:.3g} > {st.rtol:g}, {st.floor_said(e, spread)})", err=e))
    elif worst is not None and worst[1] > st.rtol:
        k = worst[0]
        i = STATS.index(k)
        out.append(Diff("values", slot, _g(g.stats[i]), _g(n.stats[i]),
                        f"{slot}'s {k} is {_g(g.stats[i])} on GPU and {_g(n.stats[i])} on NPU "
                        f"(relative error {worst[1]:.3g} > {st.rtol:g})", err=worst[1]))
    return out, (worst[1] if worst else 0.0)


def _nonfinite_pair(slot: str, g: Tensor, n: Tensor) -> list[Diff]:
    """Two tensors that both have a statistic that is not finite: a statistic finite on one side
    only, or inf against -inf, differs; NaN on both sides cannot be compared (a NaN is equal to
    nothing, so it is no agreement); the same infinity on both sides agrees (a mask's -inf)."""
    out: list[Diff] = []
    for k, a, b in zip(STATS, g.stats, n.stats):
        if a is None or b is None or (math.isfinite(a) and math.isfinite(b)):
            continue
        if math.isnan(a) and math.isnan(b):
            out.append(Diff("incomparable", slot, "nan", "nan", f"{slot}'s {k} is NaN on GPU and on NPU"))
        elif a != b:
            out.append(Diff("nan", slot, _g(a), _g(b), f"{slot}'s {k} is {_g(a)} on GPU and {_g(b)} on NPU"))
    return out


def _max_err(g: Tensor, n: Tensor, atol: float) -> float:
    a, b = g.stats[0], n.stats[0]
    if a is None or b is None or not (math.isfinite(a) and math.isfinite(b)):
        return 0.0
    return rel(a, b, atol)


def compare_calls(g, n, st: Settings, within: list | None = None) -> tuple[list[Diff], float]:
    """Every difference of a matched pair of calls (sorted, the most telling first), and the
    largest relative error of any of its tensors; a statistic that only the floor (`--floor`)
    keeps within its tolerance is appended to `within` (compare_tensors)."""
    name = (n if st.floor and st.floor_side == "npu" else g).name
    diffs: list[Diff] = []
    worst = 0.0
    in_max = 0.0
    outs: list[tuple[str, float, Tensor, Tensor]] = []
    names = list(g.slots) + [k for k in n.slots if k not in g.slots]
    for slot in names:
        a, b = g.slots.get(slot, _ABSENT), n.slots.get(slot, _ABSENT)
        if a is _ABSENT or b is _ABSENT:
            here, there = ("GPU", "NPU") if b is _ABSENT else ("NPU", "GPU")
            shown = _shown(a if b is _ABSENT else b)
            diffs.append(Diff("arguments", slot, "(absent)" if a is _ABSENT else _shown(a),
                              "(absent)" if b is _ABSENT else _shown(b),
                              f"{slot} is {shown} on {here} and absent on {there}"))
            continue
        if isinstance(a, Tensor) and isinstance(b, Tensor):
            d, err = compare_tensors(slot, a, b, st, call=name, within=within)
            diffs += d
            worst = max(worst, err)
            if slot.startswith("output"):
                outs.append((slot, _max_err(a, b, st.atol), a, b))
            else:
                in_max = max(in_max, _max_err(a, b, st.atol))
            continue
        if isinstance(a, Scalar) and isinstance(b, Scalar):
            if not _same_scalar(a.value, b.value):
                diffs.append(Diff("arguments", slot, a.shown(), b.shown(),
                                  f"{slot} is {a.shown()} on GPU and {b.shown()} on NPU"))
            continue
        if a is None and b is None:
            continue
        diffs.append(Diff("arguments", slot, _shown(a), _shown(b), f"{slot} is {_shown(a)} on GPU and {_shown(b)} on NPU"))
    if in_max <= st.input_rtol:  # the call itself brought the difference in
        for slot, err, a, b in outs:
            spread = st.spread_of(name, slot, "Max") if st.floor else None
            if spread is not None and st.output_rtol < err <= spread:
                if within is not None and not any(w[:3] == (name, slot, "Max") for w in within):
                    within.append((name, slot, "Max", err, spread))
                continue
            if err > st.output_rtol and not any(d.slot == slot and d.kind == "values" for d in diffs):
                diffs.append(Diff("values", slot, _g(a.stats[0]), _g(b.stats[0]),
                                  f"{slot}'s Max is {_g(a.stats[0])} on GPU and {_g(b.stats[0])} on NPU (relative "
                                  f"error {err:.3g} > {st.output_rtol:g} while the inputs agree within "
                                  f"{st.input_rtol:g}{', ' + st.floor_said(err, spread) if st.floor else ''})",
                                  err=err))
    return sorted(diffs, key=Diff.rank), worst


def _same_scalar(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) \
            and not isinstance(b, bool):
        return a == b
    return ports.same_value(a, b)


_ABSENT = object()


def group_output(calls) -> Tensor | None:
    """The first output tensor of a group's last call that has one (an eager block's last
    matmul, a fused kernel's attention output)."""
    for c in reversed(calls):
        for k, v in c.slots.items():
            if k.startswith("output") and isinstance(v, Tensor):
                return v
    return None


def _numel(t: Tensor) -> int | None:
    if t.shape is None:
        return None
    n = 1
    for x in t.shape:
        n *= x
    return n


def compare_group(g: list, n: list, expected: bool, port: tuple, st: Settings) -> tuple[list[Diff], float]:
    """A port's two forms (pair.port): their outputs compared in the forward pass by their
    statistics (a fused kernel may lay the same values out otherwise: BSND against BNSD), not
    in the backward pass (the gradients do not correspond slot by slot) nor for an optimizer's
    calls (combined buffers against one tensor per parameter); and a kernel change when the
    NPU form is not the expected substitution for the GPU's."""
    diffs: list[Diff] = []
    worst = 0.0
    gf, nf = ports.form(f"{port[0]}/{port[1]}"), ports.form(f"{port[0]}/{port[2]}")
    whole = gf is not None and nf is not None and not (gf.frames or nf.frames)  # an optimizer's calls: no one output
    if whole and g and n and g[0].direction == "forward":
        a, b = group_output(g), group_output(n)
        na, nb = (_numel(a), _numel(b)) if a is not None and b is not None else (None, None)
        if a is not None and b is not None and (na == nb or na is None or nb is None):
            diffs, worst = compare_tensors("output.0", a, b, st, fields=False)  # the same values in another layout
            diffs = [d for d in diffs if d.kind != "shape"]
        elif a is not None and b is not None:
            diffs.append(Diff("shape", "output.0", str(list(a.shape)), str(list(b.shape)),
                              f"output.0 holds {na} values on GPU ({list(a.shape)}) and {nb} on NPU ({list(b.shape)})"))
        elif a is not None or b is not None:  # one form's output is no tensor: never taken for agreement
            diffs.append(Diff("incomparable", "output.0", "", "",
                              f"output.0's {'NPU' if b is None else 'GPU'} form has no output tensor"))
    if not expected:
        p = ports.ports().get(port[0])
        diffs.append(Diff("kernel", None, gf.title if gf else port[1], nf.title if nf else port[2],
                          f"{p.title if p else port[0]} is computed by {gf.title if gf else port[1]} on GPU and by "
                          f"{nf.title if nf else port[2]} on NPU (not the port's substitution)"))
    return sorted(diffs, key=Diff.rank), worst
