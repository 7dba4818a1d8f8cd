"""The port checks: what a GPU->NPU port is expected to change, and whether it kept the numerics.

- imports are compared as sets of qualified names; an adapter import expected on one side
  only is masked, any other one-sided import is an import-differs finding;
- the NPU rewrites normalization met in a paired statement are listed as masked;
- swapped calls (flash_attn -> npu_fusion_attention, clip_grad_norm_ -> the NPU method) are
  masked, then their translation is checked (keep_prob = 1 - dropout_p, scale, causal mask:
  flash-attention-translation; clip norm_type);
- a fused-optimizer swap must keep decoupled (AdamW) or L2 (Adam) weight decay;
- statements that only build the atten_mask of an npu_fusion_attention call are masked.
"""
from __future__ import annotations

import libcst as cst

from ...model import Side
from ...ruleset.fidelity import IMPORT_TARGET
from ...ruleset.rules import code
from .classify import Classifier
from .evaluate import device_test, value
from .nodediff import NodeDiff
from .pair import PairState
from .parse import Parsed, St, canon_qn, dotted, expected_import, import_items, rules


class PortChecks:
    """Checks the expected GPU->NPU substitutions of one pair; records masks and findings."""

    def __init__(self, state: PairState, nodes: NodeDiff, classifier: Classifier):
        self.s = state
        self.nodes = nodes
        self.cls = classifier
        self._fa_support: set | None = None

    # -------------------------------------------------------- flash-attention support code
    def fa_support(self) -> set:
        """Names that hold the atten_mask of an npu_fusion_attention call (built on NPU only)."""
        if self._fa_support is None:
            s = self.s
            out = set()
            r = rules()
            for c in s.n.state.calls:
                q = s.nn.callee(c)
                if q is None or q not in r.fa_npu:
                    continue
                names = r.fa_npu[q]
                a = self.arg(c, "atten_mask", names.index("atten_mask") if "atten_mask" in names else None)
                d = dotted(a.value) if a is not None else None
                if d:
                    out.add(d.rsplit(".", 1)[-1])
            self._fa_support = out
        return self._fa_support

    def supports_swap(self, st: St) -> bool:
        names = self.fa_support()
        if not names or st.kind != "simple":
            return False
        if any(t in names for t in self.cls.targets(st)):
            return True
        for small in st.node.body:
            if type(small) is cst.Expr and type(small.value) is cst.Call and small.value.args:
                a0 = small.value.args[0].value
                if type(a0) is cst.SimpleString and a0.evaluated_value in names:
                    return True
        return False

    def mask_support(self, st: St) -> bool:
        """An NPU-only statement that builds the atten_mask of the swap: masked (True), or not."""
        if not self.supports_swap(st):
            return False
        p = self.s.n
        self.s.add_masked(code("flash-attention-swap"), None, Side(path=p.name, line=st.line, source=p.text_at(st.line)))
        return True

    # --------------------------------------------------------------------------- masks
    def record_masks(self, gs: St, ns: St) -> None:
        s = self.s
        k = s.keys.get(id(ns))
        hits = k.hits if k is not None else []
        if not hits:
            return
        same_shape = gs.raw.count("\n") == ns.raw.count("\n")
        for rule, node, *target in hits:
            nline = s.n.line_of(node, ns.line) if node is not None else ns.line
            gline = gs.line + (nline - ns.line) if same_shape else gs.line
            s.add_masked(rule, Side(path=s.g.name, line=gline, source=s.g.text_at(gline)),
                         Side(path=s.n.name, line=nline, source=s.n.text_at(nline)), *target)

    def mask_pair(self, rule: str, gc, nc, gs: St, ns: St, target: str = "") -> None:
        s = self.s
        gl = s.g.line_of(gc, gs.line)
        nl = s.n.line_of(nc, ns.line)
        s.add_masked(rule, Side(path=s.g.name, line=gl, source=s.g.text_at(gl)),
                     Side(path=s.n.name, line=nl, source=s.n.text_at(nl)), target)

    # ------------------------------------------------------------------------- imports
    def imports(self, gi: list[St], ni: list[St], scope: str) -> None:
        s = self.s

        def items(sts):
            out = {}
            for st in sts:
                for small in st.node.body:
                    for _bound, qn in import_items(small):
                        hits: list = []
                        c = canon_qn(qn, hits)
                        out.setdefault(c, (qn, st, hits))
            return out

        if not gi and not ni:
            return
        gm, nmap = items(gi), items(ni)
        for c, (qn, st, hits) in nmap.items():  # imported on both sides: the masks it met
            if c in gm:
                _gqn, gs, _ = gm[c]
                for rule, _node, *_target in hits:
                    s.add_masked(rule, Side(path=s.g.name, line=gs.line, source=s.g.text_at(gs.line)),
                                 Side(path=s.n.name, line=st.line, source=s.n.text_at(st.line)))
        for side, mine, other, p in (("npu", nmap, gm, s.n), ("gpu", gm, nmap, s.g)):  # on one side only
            for c, (qn, st, _hits) in mine.items():
                if c in other:
                    continue
                here = Side(value=qn, path=p.name, line=st.line, source=p.text_at(st.line))
                gside, nside = (here, None) if side == "gpu" else (None, here)
                rule = expected_import(qn, side) or (code("device-branch") if device_test(qn) else None)
                if rule:  # an import computes nothing: exact, whatever the rule of the edit it serves
                    s.add_masked(rule, gside, nside, IMPORT_TARGET + qn)
                else:
                    s.add_finding(code("import-differs"), scope, gside, nside,
                                  f"{qn} is imported on {side.upper()} only")

    # --------------------------------------------------------------------------- swaps
    def check_swaps(self, gs: St, ns: St, scope: str) -> bool:
        """Checks the swapped calls of a pair; True when the pair's difference was reported here."""
        s = self.s
        gk, nk = s.keys.get(id(gs)), s.keys.get(id(ns))
        gsw = gk.swaps if gk is not None else []
        nsw = nk.swaps if nk is not None else []
        if not gsw and not nsw:
            return False
        swapped = self.check_sdpa(gs, ns, [c for f, c in gsw if f == "sdpa"],
                                  [c for f, c in nsw if f == "flash_attention"], scope)
        if swapped is not None:
            return swapped
        gfa = [c for f, c in gsw if f == "flash_attention"]
        if gfa and not any(f == "flash_attention" for f, _c in nsw) and ns.kind == gs.kind == "simple":
            # flash-attn on GPU, an eager (or SDPA) computation in its place on NPU: use_flash_attn
            gq = canon_qn(s.gn.callee(gfa[0]) or "", None)
            ncalls = [c for c in s.n.state.calls if ns.node is not None and self._within(c, ns)]
            nq = canon_qn(s.nn.callee(ncalls[0]) or "", None) if ncalls else ""
            gl, nl = s.g.line_of(gfa[0], gs.line), ns.line
            s.add_hparam("use_flash_attn", Side(value=True, path=s.g.name, line=gl, source=s.g.text_at(gl)),
                         Side(value=False, path=s.n.name, line=nl, source=s.n.text_at(nl)),
                         f"attention kernel: {gq} on GPU, eager attention on NPU"
                         + (f" ({nq})" if nq else ""))
            return True
        for fam in ("flash_attention", "clip_grad_norm"):
            gl = [c for f, c in gsw if f == fam]
            nl = [c for f, c in nsw if f == fam]
            for gc, nc in zip(gl, nl):
                gq = canon_qn(s.gn.callee(gc) or "", None)
                nq = canon_qn(s.nn.callee(nc) or "", None)
                if fam == "flash_attention":
                    r = rules()
                    if gq in r.fa_gpu and nq in r.fa_npu:
                        self.mask_pair(code("flash-attention-swap"), gc, nc, gs, ns, nq)
                        self.check_fa(gc, nc, gq, nq, gs, ns, scope)
                    else:
                        self.cls.report_sites(self.nodes.diff_args(gc, nc, gq) if gq == nq else [(gc, nc, ("call", gq))],
                                              gs, ns, scope)
                else:
                    if gq == nq or (gq.rsplit(".", 1)[-1] == nq.rsplit(".", 1)[-1]):
                        self.cls.report_sites(self.nodes.diff_args(gc, nc, gq), gs, ns, scope)
                    else:
                        self.mask_pair(rules().clip_rule, gc, nc, gs, ns, nq)
                        gnt = self.arg(gc, "norm_type", 2)
                        nnt = self.arg(nc, "norm_type", 1)
                        gv = s.gn(gnt.value) if gnt is not None else ("NUM", 2)
                        nv = s.nn(nnt.value) if nnt is not None else ("NUM", 2)
                        if gv != nv and not (gv[0] == nv[0] == "NUM" and float(gv[1]) == float(nv[1])):
                            self.cls.report_sites([(gnt.value if gnt else ("MISSING", gc),
                                                    nnt.value if nnt else ("MISSING", nc),
                                                    (gq, "norm_type"))], gs, ns, scope)
        return False

    def check_sdpa(self, gs: St, ns: St, gcalls: list, ncalls: list, scope: str) -> bool | None:
        """SDPA on GPU, npu_fusion_attention in its place on NPU: the swap masked with its class
        and its translation checked (scale, keep_prob, layout, causal mask). True when the rest of
        the pair is the same once the swap is set aside, False when it still differs, None when
        the pair has no such swap."""
        s = self.s
        r = rules()
        done = False
        for gc, nc in zip(gcalls, ncalls):
            gq = canon_qn(s.gn.callee(gc) or "", None)
            nq = canon_qn(s.nn.callee(nc) or "", None)
            if gq in r.fa_sdpa and nq in r.fa_npu:
                self.mask_pair(r.fa["sdpa_rule"], gc, nc, gs, ns, r.fa.get("sdpa_target", ""))
                self.check_fa(gc, nc, gq, nq, gs, ns, scope)
                done = True
        if not done:
            return None
        gk, nk = s.keys.get(id(gs)), s.keys.get(id(ns))
        return gk is not None and nk is not None and _as_fused(gk.key, r.fa_sdpa) == nk.key

    def _within(self, node, st: St) -> bool:
        """The node lies on the statement's lines (its first call is the statement's callee)."""
        line = self.s.n.line_of(node)
        return line is not None and st.line <= line <= st.line + st.raw.count("\n")

    def check_optimizers(self, gs: St, ns: St, scope: str) -> None:
        """Decoupled (AdamW) vs L2 (Adam) weight decay across a fused-optimizer swap."""
        s = self.s
        gk, nk = s.keys.get(id(gs)), s.keys.get(id(ns))
        gl = gk.opts if gk is not None else []
        nl = nk.opts if nk is not None else []
        if not gl or not nl:
            return
        kinds = rules().raw.get("weight_decay_kind") or {}

        def kind(p, qn, call):
            if qn in (kinds.get("decoupled") or []):
                return "decoupled"
            if qn in (kinds.get("l2") or []):
                return "l2"
            sw = (kinds.get("switch") or {}).get(qn)
            if sw is None:
                return None
            a = self.arg(call, sw["param"], sw.get("position"))
            if a is None:
                return "decoupled" if sw.get("default") else "l2"
            try:
                v = value(p, a.value)
            except Exception:
                return None
            return "decoupled" if v else "l2"

        for (gf, gq, gc), (nf, nq, nc) in zip(gl, nl):
            gkind, nkind = kind(s.g, gq, gc), kind(s.n, nq, nc)
            if gkind is None or nkind is None or gkind == nkind:
                continue
            wd = self.arg(gc, "weight_decay", None) or self.arg(nc, "weight_decay", None)
            p = s.g if self.arg(gc, "weight_decay", None) is not None else s.n
            wdv = self.num(p, wd.value) if wd is not None else 0.0
            if wdv == 0:
                continue
            gl_ = s.g.line_of(gc, gs.line)
            nl_ = s.n.line_of(nc, ns.line)
            what = {"decoupled": "decoupled (AdamW)", "l2": "L2 (Adam)"}
            s.add_finding(
                code("code-changes-numerics"), scope,
                Side(value=f"{gq}: {what[gkind]} weight decay", path=s.g.name, line=gl_, source=s.g.text_at(gl_)),
                Side(value=f"{nq}: {what[nkind]} weight decay", path=s.n.name, line=nl_, source=s.n.text_at(nl_)),
                f"optimizer swap changes how weight_decay is applied: {what[gkind]} on GPU, {what[nkind]} on NPU")

    def check_fa(self, gc, nc, gq: str, nq: str, gs: St, ns: St, scope: str) -> None:
        s = self.s
        r = rules()
        gnames, roles = r.fa_sdpa[gq] if gq in r.fa_sdpa else (r.fa_gpu[gq], {})
        nnames = r.fa_npu[nq]
        what = "SDPA" if gq in r.fa_sdpa else "flash attention"

        def get(call, names, name):
            if names is gnames:  # the GPU call's parameter that plays flash_attn's role `name`
                name = roles.get(name, name)
            return self.arg(call, name, names.index(name) if name in names else None)

        problems = []  # (gpu node or MISSING, npu node or MISSING, message)
        # dropout -> keep_prob
        dp = get(gc, gnames, "dropout_p")
        kp = get(nc, nnames, "keep_prob")
        dpv = 0.0 if dp is None else self.num(s.g, dp.value)
        kpv = 1.0 if kp is None else self.num(s.n, kp.value)
        ok = False
        if dpv is not None and kpv is not None and not isinstance(dpv, bool) and not isinstance(kpv, bool):
            ok = abs((1.0 - float(dpv)) - float(kpv)) < 1e-9
        elif kp is not None and dp is not None and type(kp.value) is cst.BinaryOperation \
                and type(kp.value.operator) is cst.Subtract and self.num(s.n, kp.value.left) == 1:
            ok = s.nn(kp.value.right) == s.gn(dp.value)
        if not ok:  # a dropout change: lands on attention_dropout
            s.add_hparam("attention_dropout", s.side(s.g, dp.value if dp else ("MISSING", gc), gs.line),
                         s.side(s.n, kp.value if kp else ("MISSING", nc), ns.line),
                         f"{what} translation: keep_prob must be 1 - dropout_p")
        # scale
        ss = get(gc, gnames, "softmax_scale")
        sc = get(nc, nnames, "scale")
        ssv_none = ss is None or (type(ss.value) is cst.Name and ss.value.value == "None")
        if sc is None:
            problems.append((ss.value if ss else ("MISSING", gc), ("MISSING", nc),
                             f"scale is not given: npu_fusion_attention defaults to {r.fa.get('npu_default_scale', 1.0)}, "
                             "flash_attn to softmax_scale or 1/sqrt(head_dim)"))
        elif not ssv_none:
            a, b = self.num(s.g, ss.value), self.num(s.n, sc.value)
            same = (a is not None and b is not None and abs(float(a) - float(b)) < 1e-12) or s.gn(ss.value) == s.nn(sc.value)
            if not same:
                problems.append((ss.value, sc.value, "scale differs from softmax_scale" if not roles
                                 else f"scale differs from the GPU call's {roles.get('softmax_scale')}"))
        else:
            b = self.num(s.n, sc.value)
            if b is not None and float(b) == 1.0:
                problems.append((("MISSING", gc), sc.value, "scale=1.0 on NPU while flash_attn uses 1/sqrt(head_dim)"))
        # causal
        ca = get(gc, gnames, "causal")
        cav = False if ca is None else self.num(s.g, ca.value)
        am = get(nc, nnames, "atten_mask")
        sm = get(nc, nnames, "sparse_mode")
        smv = 0 if sm is None else self.num(s.n, sm.value)
        has_mask = am is not None and not (type(am.value) is cst.Name and am.value.value == "None")
        modes = r.fa.get("causal_sparse_modes", [0, 2, 3])
        if cav is True or (cav is None and ca is not None):
            if not has_mask:
                problems.append((ca.value, am.value if am else ("MISSING", nc),
                                 "causal=True needs a causal atten_mask on NPU"))
            elif smv is not None and smv not in modes:
                problems.append((ca.value, sm.value, f"sparse_mode {smv} is not a causal mode ({', '.join(map(str, modes))})"))
        elif cav is False and smv in (2, 3):
            problems.append((ca.value if ca else ("MISSING", gc), sm.value,
                             f"sparse_mode {smv} makes NPU attention causal; GPU causal is off"))
        # layout: the NPU's input_layout, when written, names the layout the GPU call takes
        want = (r.fa.get("layouts") or {}).get(gq)
        lay = get(nc, nnames, "input_layout")
        got = self.num(s.n, lay.value, strings=True) if lay is not None else None
        if want and isinstance(got, str) and not _same_layout(want, got, r.fa.get("same_layouts") or []):
            gl = s.g.line_of(gc, gs.line)
            problems.append((Side(value=want, path=s.g.name, line=gl, source=s.g.text_at(gl)), lay.value,
                             f"input_layout {got!r} is not the layout of q, k, v for {gq.rsplit('.', 1)[-1]} ({want})"))
        # a mask the GPU call applies that the NPU call does not
        gm = get(gc, gnames, "attn_mask")
        if gm is not None and not (type(gm.value) is cst.Name and gm.value.value == "None") and not has_mask:
            problems.append((gm.value, am.value if am else ("MISSING", nc),
                             "the GPU call applies attn_mask, the NPU call no atten_mask"))
        for gnode, nnode, msg in problems:
            gside = gnode if isinstance(gnode, Side) else s.side(s.g, gnode, gs.line)
            nside = s.side(s.n, nnode, ns.line)
            s.add_finding(code("flash-attention-translation"), scope, gside, nside,
                          f"{what} translation: {msg}")

    # ------------------------------------------------------------------------- helpers
    @staticmethod
    def arg(call, name: str, index: int | None, names: list | None = None):
        pos = 0
        for a in call.args:
            if a.keyword is not None:
                if a.keyword.value == name:
                    return a
            elif not a.star:
                if index is not None and pos == index:
                    return a
                pos += 1
        return None

    @staticmethod
    def num(p: Parsed, node, strings: bool = False):
        """The node's value when it is a number, a bool or None (with `strings`: a string too)."""
        try:
            v = value(p, node)
        except Exception:
            return None
        if strings and isinstance(v, str):
            return v
        return v if isinstance(v, (int, float, bool)) or v is None else None


def _same_layout(want: str, got: str, groups: list) -> bool:
    """`got` names the memory order `want` does (rules/python.yaml `same_layouts`)."""
    return got == want or any(want in g and got in g for g in groups)


def _as_fused(key, sdpa: dict):
    """A statement's key with each call of an SDPA-like function as the fused attention swap."""
    if isinstance(key, tuple):
        if len(key) == 3 and key[0] == "Call" and isinstance(key[1], tuple) and key[1][:1] == ("QN",) \
                and key[1][1] in sdpa:
            return ("SWAP", "flash_attention")
        return tuple(_as_fused(k, sdpa) for k in key)
    if isinstance(key, list):
        return [_as_fused(k, sdpa) for k in key]
    return key
