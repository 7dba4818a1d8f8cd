"""Kernel swaps written in Python (docs/fidelity.md, "Kernel swaps"): a GPU computation that the
NPU port replaces by one fused torch_npu kernel (RMSNorm as `x * rsqrt(mean(x^2) + eps) * w` or
`F.rms_norm`, SwiGLU as `F.silu(a) * b`, a rotary embedding as `x * cos + rotate(x) * sin`, by
`npu_rms_norm`, `npu_swiglu`, `npu_rotary_mul`).

Asked by the aligner for each region of a block where the two sides differ: when the NPU side
calls a kernel of rules/fidelity.yaml `kernel_swaps` and the GPU side has that kernel's form (a
call it names, or a statement reading the names the kernel's arguments read), the kernel's
statement and the GPU's form, with the statements of the region connected to them by the names
they bind and read, are one masked swap (its class: the kernel's fidelity target) instead of
statement differences; what the kernel takes as an argument and the GPU wrote (an epsilon) is
compared, a difference being a finding that names both values and lines."""
from __future__ import annotations

import libcst as cst

from ...model import Side
from ...ruleset.fidelity import PART_TARGET, Kernel, kernel_swaps
from .evaluate import value
from .pair import PairState
from .parse import St, match_name
from .port import PortChecks
from .regions import callee_name, calls_of


class KernelSwaps:
    """Finds the kernel swaps of a region; records them as masks and checks their arguments."""

    def __init__(self, state: PairState, names_of):
        self.s = state
        self.names_of = names_of  # align.names_of: (names a node binds, names it reads, calls anything)

    def region(self, Gs: list[St], Ns: list[St], scope: str) -> tuple[list[St], list[St]]:
        """The region's statements that are no part of a kernel swap (the swaps recorded)."""
        ks = kernel_swaps()
        if ks is None or not Gs or not Ns:
            return Gs, Ns
        s = self.s
        for k, nst, ncall in [(k, st, c) for k in ks.kernels for st in Ns if st.kind == "simple"
                              for c in calls_of(st.node) if callee_name(s.nn, c) in k.npu]:
            if not any(st is nst for st in Ns):  # already part of a swap
                continue
            core = [st for st in Gs if st.kind == "simple" and self._form(st, k, ncall)]
            if not core:
                continue
            gset = _connected(core, [st for st in Gs if st.kind == "simple"], self.names_of)
            nset = _connected([nst], [st for st in Ns if st.kind == "simple"], self.names_of)
            first = core[0]
            s.add_masked(ks.rule, self._side(s.g, first), self._side(s.n, nst), k.target)
            for st in gset:
                if st is not first:
                    s.add_masked(ks.rule, self._side(s.g, st), None, PART_TARGET + k.target)
            for st in nset:
                if st is not nst:
                    s.add_masked(ks.rule, None, self._side(s.n, st), PART_TARGET + k.target)
            if k.epsilon:
                self._epsilon(k, gset, nst, ncall, ks.translation, scope)
            Gs = [st for st in Gs if not any(st is x for x in gset)]
            Ns = [st for st in Ns if not any(st is x for x in nset)]
            if not Gs or not Ns:
                break
        return Gs, Ns

    def _form(self, st: St, k: Kernel, ncall: cst.Call) -> bool:
        """The GPU statement computes what kernel `k` computes: it calls what marks its form, or
        reads every name the kernel's first arguments read (x, cos, sin of a rotary embedding)."""
        if any(match_name(callee_name(self.s.gn, c), k.gpu) for c in calls_of(st.node)):
            return True
        if k.reads_npu_args:
            args = [a for a in ncall.args if a.keyword is None and not a.star][:k.reads_npu_args]
            names = []
            for a in args:
                _bound, read, _calls = self.names_of(a.value)
                top = {n for n in read if not any(m.startswith(n + ".") for m in read)}
                names.append(top)
            if len(args) == k.reads_npu_args and all(names):
                _bound, read, _calls = self.names_of(st.node)
                return all(n <= read for n in names)
        return False

    def _side(self, p, st: St) -> Side:
        return Side(path=p.name, line=st.line, source=p.text_at(st.line))

    def _epsilon(self, k: Kernel, gset: list[St], nst: St, ncall: cst.Call, rule: str, scope: str) -> None:
        """The epsilon the NPU kernel takes against the one the GPU form adds."""
        s = self.s
        spec = k.epsilon
        gnode = None
        for st in gset:
            for c in calls_of(st.node):
                name = callee_name(s.gn, c)
                for pat, how in (spec.get("gpu") or {}).items():
                    if match_name(name, [pat]):
                        gnode = _gpu_epsilon(c, how)
                        if gnode is not None:
                            break
                if gnode is not None:
                    break
            if gnode is not None:
                break
        if gnode is None:
            return
        npu = spec["npu"]
        narg = PortChecks.arg(ncall, npu["name"], npu.get("position"))
        gv = _num(s.g, gnode)
        nv = _num(s.n, narg.value) if narg is not None else npu.get("default")
        if narg is not None and gv is None and s.g.code(gnode) == s.n.code(narg.value):
            return
        if gv is not None and nv is not None and abs(float(gv) - float(nv)) <= 1e-12 * max(abs(float(gv)), 1e-30):
            return
        kernel = k.npu[0].rsplit(".", 1)[-1]
        gl = s.g.line_of(gnode)
        gside = Side(value=gv if gv is not None else s.g.code(gnode), path=s.g.name, line=gl, source=s.g.text_at(gl))
        if narg is None:
            nside = Side(value=None, path=s.n.name, line=nst.line, source=s.n.text_at(nst.line))
            msg = (f"{kernel} swap: {npu['name']} is not given, so the kernel adds its default {npu.get('default')}; "
                   f"the GPU adds {gside.value}")
        else:
            nl = s.n.line_of(narg.value, nst.line)
            nside = Side(value=nv if nv is not None else s.n.code(narg.value), path=s.n.name, line=nl,
                         source=s.n.text_at(nl))
            msg = f"{kernel} swap: {npu['name']} {nside.value} on NPU, the GPU adds {gside.value}"
        s.add_finding(rule, scope, gside, nside, msg)


def _connected(core: list[St], stmts: list[St], names_of) -> list[St]:
    """`core` and the statements of `stmts` linked to it by a name one binds and another reads."""
    info = {id(st): names_of(st.node) for st in stmts}
    out = list(core)
    grew = True
    while grew:
        grew = False
        for st in stmts:
            if any(st is x for x in out):
                continue
            b, r, _ = info[id(st)]
            if any(b & info[id(x)][1] or r & info[id(x)][0] for x in out if id(x) in info):
                out.append(st)
                grew = True
    return sorted(out, key=lambda st: st.line)


def _gpu_epsilon(call: cst.Call, how: dict):
    """The epsilon node of a GPU call: its argument `name`/`position`, or (`addend`) what the
    call's argument (a method call: its receiver) adds to the mean: `rsqrt(var + eps)`."""
    if "name" in how:
        a = PortChecks.arg(call, how["name"], how.get("position"))
        return a.value if a is not None else None
    if not how.get("addend"):
        return None
    if type(call.func) is cst.Attribute and not call.args:
        x = call.func.value
    elif call.args:
        x = call.args[0].value
    else:
        return None
    if type(x) is not cst.BinaryOperation or type(x.operator) is not cst.Add:
        return None
    left_calls, right_calls = calls_of(x.left), calls_of(x.right)
    return x.left if right_calls and not left_calls else x.right


def _num(p, node):
    try:
        v = value(p, node)
    except Exception:
        return None
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None
