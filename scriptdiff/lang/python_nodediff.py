"""Where two paired nodes differ, as sites: (GPU node, NPU node, context).

A site is the smallest node pair worth reporting: a changed call argument by argument (by
keyword, by position, a missing one as ("MISSING", call)), a different callee as the call, a
def by parameter. Nodes owned by hyperparameter facts are skipped (they are compared as
facts), and a node with more than MAX_SITES differing parts is one site. The context is
None (a statement), ("call", callee), (callee, argument label) or ("def name", parameter).
"""
from __future__ import annotations

import libcst as cst

from .python_pair import PairState, one_line
from .python_parse import Norm, canon_qn, fields_of

MAX_SITES = 6


class NodeDiff:
    """Diffs paired nodes of one pair into sites, through the pair's normalizers."""

    def __init__(self, state: PairState):
        self.s = state

    def diff_values(self, vg, vn, ctx, pg, pn) -> list:
        s = self.s
        if isinstance(vg, cst.CSTNode) and isinstance(vn, cst.CSTNode):
            return self.diff_nodes(vg, vn, ctx)
        if isinstance(vg, (list, tuple)) and isinstance(vn, (list, tuple)):
            if len(vg) == len(vn):
                out = []
                for a, b in zip(vg, vn):
                    out += self.diff_values(a, b, ctx, pg, pn)
                return out
            if s.gn.value(vg) != s.nn.value(vn):
                return [(pg, pn, ctx)]
            return []
        if s.gn.value(vg) != s.nn.value(vn):
            return [(pg, pn, ctx)]
        return []

    def diff_nodes(self, g, n, ctx) -> list:
        s = self.s
        kg, kn = s.gn(g), s.nn(n)
        if kg == kn:
            return []
        if id(g) in s.g.owned or id(n) in s.n.owned:
            return []
        tg = type(g)
        if tg is not type(n):
            if tg is cst.Call and type(n) is cst.Subscript and kg == kn:
                return []
            return [(g, n, ctx)]
        if tg is cst.Call:
            if kg[0] != "Call" or kn[0] != "Call":
                return [] if kg == kn else [(g, n, ("call", self.callee_name(g, s.gn)))]
            if kg[1] != kn[1]:
                return [(g, n, ("call", self.callee_name(g, s.gn)))]
            return self.diff_args(g, n, self.callee_name(g, s.gn))
        if tg in (cst.Name, cst.Attribute, cst.SimpleString, cst.ConcatenatedString, cst.Integer, cst.Float,
                  cst.FormattedStringText, cst.FormattedString):
            return [(g, n, ctx)]
        if tg is cst.Param:
            ctx = (ctx[0] if ctx else "parameter", g.name.value)
        sites = []
        for f in fields_of(tg):
            sites += self.diff_values(getattr(g, f), getattr(n, f), ctx, g, n)
        if len(sites) > MAX_SITES:
            return [(g, n, ctx)]
        return sites

    def diff_args(self, g: cst.Call, n: cst.Call, callee: str) -> list:
        s = self.s

        def split(call):
            pos, kw, star = [], {}, []
            for a in call.args:
                if a.star:
                    star.append(a)
                elif a.keyword is None:
                    pos.append(a)
                else:
                    kw[a.keyword.value] = a
            return pos, kw, star

        gp, gkw, gst = split(g)
        np_, nkw, nst = split(n)
        sites = []

        def one(ga, na, label):
            if ga is not None and na is not None:
                return self.diff_nodes(ga.value, na.value, (callee, label))
            present, owned = (ga, s.g.owned) if ga is not None else (na, s.n.owned)
            if id(present.value) in owned:
                return []
            return [(ga.value if ga else ("MISSING", g), na.value if na else ("MISSING", n), (callee, label))]

        for i in range(max(len(gp), len(np_))):
            sites += one(gp[i] if i < len(gp) else None, np_[i] if i < len(np_) else None, f"argument {i + 1}")
        for k in list(gkw) + [k for k in nkw if k not in gkw]:
            sites += one(gkw.get(k), nkw.get(k), k)
        if [s.gn(a.value) for a in gst] != [s.nn(a.value) for a in nst]:
            sites.append((g, n, (callee, "*args/**kwargs")))
        return sites

    def callee_name(self, call, nm: Norm) -> str:
        q = nm.callee(call)
        if q is not None:
            return canon_qn(q, None)
        s = self.s
        return one_line((s.g if nm is s.gn else s.n).code(call.func), 60)
