"""Device plumbing is the port: the parts of a pair that differ only in how they name the run's
device (docs/devices.md, "Device plumbing is the port").

Two expressions that are both the run's device (`"cuda"` against `platform.device_type`,
`torch.device("cuda", r)` against `f"npu:{r}"`, `torch.cuda.current_device()` against
`get_current_device()`), both its process-group backend (`"nccl"` against a helper returning
"hccl"; one of them known), or the same name with the device in its words (`num_gpus`,
`num_npus`) are one abstract device: masked (SD022), never a finding. So are a call of the
device namespace and its stand-in (`torch.cuda.set_device(r)`, `platform.set_device(r)`,
`torch_set_device(r)`: their arguments compared), an autocast spelt in the CUDA namespace
against `torch.autocast(device_type=...)` (its other arguments compared), a placement argument
given on one side only (`DDP(model, device_ids=[rank])` against `DDP(model)`), a list of
choices that differs only by device names, and a statement on one side only that sets, defines
or asserts the device (`torch.cuda.set_device(r)` moved, `assert torch.cuda.device_count() > 0`,
`device = torch.device(f"npu:{r}")`). What an expression is comes from the evaluator
(evaluate/plumbing.py: its value with its kind, or its words when the value is not known).
"""
from __future__ import annotations

import libcst as cst

from ...model import Side
from ...ruleset.devices import family_of, table
from ...ruleset.rules import code
from .evaluate import NotLiteral, Values, constant
from .evaluate.plumbing import (BACKEND, DEVICE, RANK, Role, is_count, namespace_call, of_value, plumbing, role,
                                stand_in, words)
from .pair import PairState
from .parse import Parsed, St, canon_qn, qualified_name


class PlumbingChecks:
    """The device plumbing of one pair (module doc): each check says True (or a site list) when
    what it was given is the port, and lists it as masked."""

    def __init__(self, state: PairState):
        self.s = state
        self._roles: dict = {}

    def role(self, p: Parsed, node) -> Role | None:
        k = id(node)
        if k not in self._roles:
            try:
                self._roles[k] = role(p, node)
            except RecursionError:
                raise
            except Exception:  # a hostile value: no role
                self._roles[k] = None
        return self._roles[k]

    def mask(self, g, n) -> None:
        s = self.s
        gl = s.g.line_of(g) if g is not None else None
        nl = s.n.line_of(n) if n is not None else None
        s.add_masked(code("device-plumbing"), Side(path=s.g.name, line=gl, source=s.g.text_at(gl)) if g is not None
                     else None, Side(path=s.n.name, line=nl, source=s.n.text_at(nl)) if n is not None else None)

    # ------------------------------------------------------------------ two expressions
    def same(self, g, n) -> bool:
        """`g` and `n` are one abstract device, one backend, or one name with the device in its words."""
        rg, rn = self.role(self.s.g, g), self.role(self.s.n, n)
        if rg is not None and rn is not None and rg.what == rn.what and (
                rg.what == DEVICE or rg.what == BACKEND and (rg.known or rn.known)):
            self.mask(g, n)
            return True
        if self.renamed(g, n) or self.choices(g, n):
            self.mask(g, n)
            return True
        return False

    def renamed(self, g, n) -> bool:
        """`num_gpus` and `num_npus`, `self.use_cuda` and `self.use_npu`: one name, the device in its words."""
        s = self.s
        t = type(g)
        if t is not type(n) or t not in (cst.Name, cst.Attribute):
            return False
        if t is cst.Attribute:
            if qualified_name(s.g, g) is not None or qualified_name(s.n, n) is not None \
                    or s.gn(g.value) != s.nn(n.value):
                return False
            a, b = g.attr.value, n.attr.value
        else:
            if g.value in s.g.aliases or n.value in s.n.aliases:
                return False
            a, b = g.value, n.value
        wa, wb = _device_words(a), _device_words(b)
        return a != b and wa is not None and wa == wb

    def choices(self, g, n) -> bool:
        """Two lists of string literals that differ only by names of the run's devices or backends
        (`choices=["cuda", "cpu"]` against `["cuda", "npu", "cpu"]`)."""
        if type(g) not in (cst.List, cst.Tuple, cst.Set) or type(n) not in (cst.List, cst.Tuple, cst.Set):
            return False

        def items(node):
            out = []
            for e in node.elements:
                if type(e) is not cst.Element or type(e.value) is not cst.SimpleString \
                        or not isinstance(e.value.evaluated_value, str):
                    return None
                v = e.value.evaluated_value
                r = family_of(v)
                out.append(("<device>",) if r in ("cuda", "npu") else
                           ("<backend>",) if v.lower() in plumbing().backends else v)
            return out

        a, b = items(g), items(n)
        return a is not None and b is not None and a != b and set(a) == set(b)

    # ------------------------------------------------------------------ calls
    def call(self, g: cst.Call, n: cst.Call, diff_args) -> list | None:
        """Two calls of different functions that are one device call (module doc): the sites of
        their arguments (`diff_args(g, n, callee)`), or None when they are not."""
        s = self.s
        gname, nname = namespace_call(s.g, g), namespace_call(s.n, n)
        if gname is not None and (nname == gname or stand_in(s.n, n, gname)) or \
                nname is not None and stand_in(s.g, g, nname):
            self.mask(g, n)
            return diff_args(g, n, f"torch.cuda.{gname or nname}")
        return self.autocast(g, n)

    def autocast(self, g: cst.Call, n: cst.Call) -> list | None:
        """`torch.cuda.amp.autocast(...)` against `torch.autocast(device_type=DEVICE, ...)` (either
        way round): one autocast, its other arguments compared (sites), else None."""
        ac = plumbing().autocast
        if not ac:
            return None
        s = self.s
        qg, qn = (canon_qn(q, None) if q else None for q in (qualified_name(s.g, g.func), qualified_name(s.n, n.func)))
        if qg in ac["device"] and qn in ac["any"]:
            cuda, anyx = (g, s.g), (n, s.n)
        elif qn in ac["device"] and qg in ac["any"]:
            cuda, anyx = (n, s.n), (g, s.g)
        else:
            return None
        bound_cuda = _bind(cuda[0], ["enabled", "dtype", "cache_enabled"])
        bound_any = _bind(anyx[0], [ac["param"], "dtype", "enabled", "cache_enabled"])
        if bound_cuda is None or bound_any is None:
            return None
        dev = bound_any.pop(ac["param"], None)
        r = self.role(anyx[1], dev) if dev is not None else None
        if r is None or r.what != DEVICE:
            return None
        gb, nb = (bound_cuda, bound_any) if cuda[0] is g else (bound_any, bound_cuda)
        sites = []
        defaults = {"enabled": True}
        for name in sorted(set(gb) | set(nb)):
            ga, na = gb.get(name), nb.get(name)
            if ga is not None and id(ga) in s.g.owned or na is not None and id(na) in s.n.owned:
                continue  # autocast(dtype=...): compared as the params_dtype fact
            if ga is not None and na is not None:
                if s.gn(ga) != s.nn(na):
                    sites.append((ga, na, ("torch.autocast", name)))
                continue
            present, p = (ga, s.g) if ga is not None else (na, s.n)
            if name in defaults and constant(present) is defaults[name]:
                continue
            sites.append((ga if ga is not None else ("MISSING", g), na if na is not None else ("MISSING", n),
                          ("torch.autocast", name)))
        self.mask(g, n)
        return sites

    def placement(self, name: str, node, p: Parsed) -> bool:
        """An argument that only says where a module or tensor lives (`device_ids=[rank]`,
        `output_device=local_rank`, `device=get_current_device()`), given on one side only."""
        if name not in plumbing().parameters:
            return False
        nodes = [e.value for e in node.elements] if type(node) in (cst.List, cst.Tuple) else [node]
        for x in nodes:
            r = self.role(p, x)
            if r is None or r.what not in (DEVICE, RANK):
                return False
        if nodes:
            self.mask(node if p is self.s.g else None, node if p is self.s.n else None)
        return bool(nodes)

    def placements(self, name: str, g, n) -> bool:
        """The same placement argument on both sides, each a device or a rank (`device_ids=[args.gpu]`
        against `device_ids=[local_rank]`)."""
        if name not in plumbing().parameters:
            return False
        for p, node in ((self.s.g, g), (self.s.n, n)):
            nodes = [e.value for e in node.elements] if type(node) in (cst.List, cst.Tuple) else [node]
            if not nodes or any((self.role(p, x) or Role("", False)).what not in (DEVICE, RANK) for x in nodes):
                return False
        self.mask(g, n)
        return True

    # ------------------------------------------------------------------ a statement on one side
    def statement(self, st: St, side: str) -> bool:
        """A statement on one side only that sets, defines or asserts the run's device (module doc):
        masked (True)."""
        p = self.s.g if side == "gpu" else self.s.n
        if type(st.node) is cst.FunctionDef:  # a helper one side needs alone: `def get_backend(): return "hccl"`
            r = self.returns(p, st.node)
            if r is None or r.what not in (DEVICE, BACKEND):
                return False
            self.mask(st.node if side == "gpu" else None, st.node if side == "npu" else None)
            return True
        if st.kind != "simple":
            return False
        for small in st.node.body:
            t = type(small)
            if t is cst.Expr and type(small.value) is cst.Call:
                call = small.value
                if namespace_call(p, call) is None and not any(stand_in(p, call, c) for c in plumbing().calls):
                    return False
            elif t is cst.Assert:
                if not is_count(p, small.test):
                    return False
            elif t is cst.Assign and all(type(x.target) in (cst.Name, cst.Attribute) for x in small.targets):
                v = small.value
                r = self.role(p, v)
                if not (r is not None and r.what in (DEVICE, BACKEND) or type(v) is cst.Call
                        and namespace_call(p, v) is not None):
                    return False
            else:
                return False
        here = st.node
        self.mask(here if side == "gpu" else None, here if side == "npu" else None)
        return True


    @staticmethod
    def returns(p: Parsed, fn: cst.FunctionDef) -> Role | None:
        """What a call of `fn` without arguments returns, for the run."""
        if any(prm.default is None for prm in fn.params.params):
            return None
        try:
            v = Values(p).call_function(fn, cst.Call(func=cst.Name(fn.name.value)), [], 0)
        except NotLiteral:
            return None
        return of_value(v) if isinstance(v, str) else None


def _device_words(name: str) -> tuple | None:
    """An identifier's words with each device name (gpu, gpus, cuda, npu, npus, ...) as one
    word; None when it names no device."""
    fams = table().get("families") or {}
    devs = {n for fam in ("cuda", "npu") for n in fams.get(fam) or ()}
    out, hit = [], False
    for w in words(name):
        if w in devs or (w.endswith("s") and w[:-1] in devs):
            out.append("<device>s" if w not in devs else "<device>")
            hit = True
        else:
            out.append(w)
    return tuple(out) if hit else None


def _bind(call: cst.Call, params: list[str]) -> dict | None:
    out: dict = {}
    for i, a in enumerate(call.args):
        if a.star:
            return None
        if a.keyword is None:
            if i >= len(params):
                return None
            out[params[i]] = a.value
        else:
            out[a.keyword.value] = a.value
    return out
