"""Device plumbing is the port: the parts of a pair that differ only in how they name the run's
device (docs/devices.md, "Device plumbing is the port").

Two expressions that are both the run's device (`"cuda"` against `platform.device_type`,
`torch.device("cuda", r)` against `f"npu:{r}"`, `torch.cuda.current_device()` against
`get_current_device()`), both its process-group backend (`"nccl"` against a helper returning
"hccl"), or the same name with the device in its words (`num_gpus`, `num_npus`) are one
abstract device: masked (SD022), never a finding (`same`, with the shapes of two expressions:
a device-or-cpu choice, device lists and tables gaining the NPU, asserts on the device, a
module moved to the device or not, placement parameters). So are a call of the device
namespace and its stand-in (`torch.cuda.set_device(r)`, `platform.set_device(r)`,
`torch_set_device(r)`), a factory or a class for the device standing for a GPU wrapper, an
autocast spelt in the CUDA namespace against `torch.autocast(device_type=...)` (`call`: their
other arguments compared), a placement argument given on one side only (`DDP(model,
device_ids=[rank])` against `DDP(model)`: `placement`), and a statement on one side only that
sets, defines or asserts the device (`torch.cuda.set_device(r)` moved, `assert
torch.cuda.device_count() > 0`, `device = torch.device(f"npu:{r}")`: `statement`). What an
expression is comes from the evaluator (evaluate/plumbing.py: its value with its kind, or its
words when the value is not known); the data is rules/devices.yaml `devices.python.plumbing`.
"""
from __future__ import annotations

import libcst as cst

from ...model import Side
from ...ruleset.devices import device_flag, family_of, table
from ...ruleset.envmap import canonical
from ...ruleset.vocabulary import device_named, device_value_words, words as value_words
from ...ruleset.rules import code
from .evaluate import MISSING, UNDECIDED, Env, NotLiteral, Values, constant, device_test, device_value, env_read
from .evaluate.kinds import named, switch_family
from .evaluate.program import program
from .evaluate.plumbing import (BACKEND, DEVICE, RANK, Role, is_count, namespace_call, namespace_function, of_value,
                                plumbing_table, role, same_method, stand_in, words)
from .pair import PairState
from .parse import Parsed, St, canon_qn, dotted, import_items, match_name, qualified_name
from .parse import _block_body


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
        if rg is not None and rn is not None and rg.what == rn.what and rg.what in (DEVICE, BACKEND):
            self.mask(g, n)
            return True
        if self.same_truth(g, n) or self.indexed(rg, rn, g, n):
            self.mask(g, n)
            return True
        if self.either(g, n) or self.renamed(g, n) or self.choices(g, n) or self.gains_npu(g, n) or self.entries(g, n) \
                or self.asserts(g, n) or self.membership(g, n) or self.moved(g, n) or self.parameters(g, n) \
                or self.device_text(g, n):
            self.mask(g, n)
            return True
        return False

    def device_text(self, g, n) -> bool:
        """Two strings that differ only by the device each names, as a word of its own (`"bash
        run.sh GPU 4"` against `"bash run.sh Ascend 4"`, an f-string's expressions the same):
        rules/aliases.yaml `device_value_words`, the GPU's words on the GPU side, the NPU's on the NPU."""
        gt, nt = self._text(g, self.s.gn), self._text(n, self.s.nn)
        if gt is None or nt is None or gt[1] != nt[1] or gt[0] == nt[0]:
            return False
        dg, dn = device_named(gt[0]), device_named(nt[0])
        if dg is None or dg != dn:
            return False
        gpu, npu = device_value_words()
        gw = {w for w in value_words(gt[0]) if w in gpu or w in npu}
        nw = {w for w in value_words(nt[0]) if w in gpu or w in npu}
        return gw <= gpu and nw <= npu

    @staticmethod
    def _text(node, nm):
        """A string literal's text, an f-string's with each expression a placeholder (and the
        expressions' keys), else None."""
        t = type(node)
        if t is cst.SimpleString:
            try:
                v = node.evaluated_value
            except Exception:
                return None
            return (v, ()) if isinstance(v, str) else None
        if t is cst.FormattedString:
            text, exprs = [], []
            for part in node.parts:
                if type(part) is cst.FormattedStringText:
                    text.append(part.value)
                elif type(part) is cst.FormattedStringExpression:
                    text.append(" \x00 ")
                    exprs.append(nm(part.expression))
                else:
                    return None
            return "".join(text), tuple(exprs)
        return None

    def same_truth(self, g, n) -> bool:
        """Two tests of the devices that each run answers alike (`cfg.use_gpu or cfg.use_mlu` against
        `cfg.use_gpu or cfg.use_npu or cfg.use_mlu`: true on both runs), each decided by a device test."""
        vg, vn = device_value(self.s.g, g, anywhere=True), device_value(self.s.n, n, anywhere=True)
        return isinstance(vg, bool) and isinstance(vn, bool) and vg is vn

    def indexed(self, rg: Role | None, rn: Role | None, g, n) -> bool:
        """`x.to(local_rank)` against `x.to(f"npu:{local_rank}")` (or `torch.device("npu",
        local_rank)`): a rank where the other side writes the run's device indexed by that same
        rank is that device (a bare index places on the run's own accelerator)."""
        if rg is None or rn is None or {rg.what, rn.what} != {DEVICE, RANK}:
            return False
        s = self.s
        if rg.what == RANK:
            return s.gn(s.g.live_of(g)) in {s.nn(x) for x in _index_parts(s.n, n)}
        return s.nn(s.n.live_of(n)) in {s.gn(x) for x in _index_parts(s.g, g)}

    def either(self, g, n) -> bool:
        """`torch.device("cuda" if use_gpu else "cpu")` against `get_current_device() if use_gpu
        else "cpu"`: one test choosing between the run's device and the same other value."""
        s = self.s

        def unwrap(p, node):
            node = p.live_of(node)
            if type(node) is cst.Call and canon_qn(qualified_name(p, node.func) or "", None) == "torch.device" \
                    and len(node.args) == 1 and node.args[0].keyword is None:
                return p.live_of(node.args[0].value)
            return node

        a, b = unwrap(s.g, g), unwrap(s.n, n)
        if type(a) is not cst.IfExp or type(b) is not cst.IfExp or (a is g and b is n):
            return False
        same_test = s.gn(s.g.live_of(a.test)) == s.nn(s.n.live_of(b.test))
        ra, rb = self.role(s.g, a.body), self.role(s.n, b.body)
        return same_test and ra is not None and rb is not None and ra.what == rb.what == DEVICE and (
            s.gn(a.orelse) == s.nn(b.orelse))

    def membership(self, g, n) -> bool:
        """`x.device.type == "cuda"` against `x.device.type in ["cuda", "npu"]` (either way round):
        both ask whether `x` is on the run's device, whatever its family."""
        if type(g) is not cst.Comparison or type(n) is not cst.Comparison or len(g.comparisons) != 1 \
                or len(n.comparisons) != 1 or self.s.gn(g.left) != self.s.nn(n.left):
            return False

        def devices(p: Parsed, c: cst.ComparisonTarget):
            op, x = type(c.operator), c.comparator
            if op in (cst.Equal, cst.NotEqual):
                xs, positive = [x], op is cst.Equal
            elif op in (cst.In, cst.NotIn) and type(x) in (cst.List, cst.Tuple, cst.Set):
                xs, positive = [e.value for e in x.elements], op is cst.In
            else:
                return None
            rs = [self.role(p, e) for e in xs]
            if not xs or any(r is None or r.what != DEVICE or type(e) is not cst.SimpleString for r, e in zip(rs, xs)):
                return None
            return positive

        a, b = devices(self.s.g, g.comparisons[0]), devices(self.s.n, n.comparisons[0])
        return a is not None and a == b

    def moved(self, g, n) -> bool:
        """`x.cuda()` against `x` (either way round): where a module or tensor lives, not what it holds."""
        s = self.s
        for a, pa, na_, b, nb in ((g, s.g, s.gn, n, s.nn), (n, s.n, s.nn, g, s.gn)):
            if type(a) is cst.Call and type(b) is not cst.Call or type(a) is cst.Call and type(b) is cst.Call \
                    and self.device_method(b, s.n if pa is s.g else s.g, nb) is None:
                k = self.device_method(a, pa, na_)
                if k is not None and k == nb(b):
                    return True
        return False

    def parameters(self, g, n) -> bool:
        """`def step(model, batch)` against `def step(model, batch, device)`: the same parameters but
        for placement ones (`device`, `device_ids`) one side adds."""
        if type(g) is not cst.Parameters or type(n) is not cst.Parameters or g.star_arg != n.star_arg \
                and not (isinstance(g.star_arg, cst.MaybeSentinel) and isinstance(n.star_arg, cst.MaybeSentinel)):
            return False
        s = self.s
        gp = [x for x in list(g.params) + list(g.kwonly_params)]
        np_ = [x for x in list(n.params) + list(n.kwonly_params)]
        short, long_ = (gp, np_) if len(gp) < len(np_) else (np_, gp)
        if len(short) == len(long_):
            return False
        names = [x.name.value for x in short]
        extra = [x for x in long_ if x.name.value not in names]
        kept = [x for x in long_ if x.name.value in names]
        return all(x.name.value in plumbing_table().parameters for x in extra) and len(kept) == len(short) and all(
            a.name.value == b.name.value and (s.gn(a) if short is gp else s.nn(a)) == (s.nn(b) if short is gp else s.gn(b))
            for a, b in zip(short, kept))

    def asserts(self, g, n) -> bool:
        """Two asserts that each check the run's devices (`assert torch.cuda.is_available(), "CUDA
        ..."` against `assert torch.npu.is_available(), "Ascend NPU ..."`, `assert device in
        ["cuda", "mlu"]` against `[..., "npu"]`): their messages and device lists aside."""
        return type(g) is cst.Assert and type(n) is cst.Assert and all(
            is_count(p, x.test) or self.names_device(p, x.test, any_family=True) for p, x in ((self.s.g, g), (self.s.n, n)))

    def entries(self, g, n) -> bool:
        """Two dicts keyed by device names, one with an entry for the NPU the other has for the GPU
        (`{"cuda": "nccl"}` against `{"cuda": "nccl", "npu": "hccl"}`): the same but for the entry
        the port added, whose value is of the same kind as the CUDA entry's."""
        if type(g) is not cst.Dict or type(n) is not cst.Dict:
            return False
        s = self.s

        def split(d: cst.Dict, p: Parsed, nm):
            rest, npu, cuda = [], None, None
            for el in d.elements:
                if type(el) is not cst.DictElement:
                    return None
                k = el.key.evaluated_value if type(el.key) is cst.SimpleString else None
                fam = family_of(k) if isinstance(k, str) else None
                if fam == "npu":
                    npu = el.value
                    continue
                if fam == "cuda":
                    cuda = el.value
                rest.append((nm(el.key), nm(el.value)))
            return rest, npu, cuda

        a, b = split(g, s.g, s.gn), split(n, s.n, s.nn)
        if a is None or b is None or a[0] != b[0] or (a[1] is None) == (b[1] is None):
            return False
        added, p = (b[1], s.n) if b[1] is not None else (a[1], s.g)
        cuda, cp = (a[2], s.g) if b[1] is not None else (b[2], s.n)
        if cuda is None:
            return False
        ra, rc = self.role(p, added), self.role(cp, cuda)
        if ra is not None and rc is not None and ra.what == rc.what:
            return True
        return isinstance(device_value(p, added), bool) and isinstance(device_value(cp, cuda), bool)  # availability tests

    def renamed(self, g, n) -> bool:
        """`num_gpus` and `num_npus`, `self.use_cuda` and `self.use_npu`: one name, the device in its
        words; `PPO` and `NpuPPO`: one class's name, the NPU's variant of it; `_init_cuda_setting`
        and `_init_setting`: a GPU helper's name made general for any device (the same words
        without the GPU's)."""
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
        if a != b and wa is None and wb is not None:  # `PPO` against `NpuPPO`: the NPU's own variant
            if not (b[:1].isupper() and not b.isupper()):
                return False  # a class's name only: a variable `lr_npu` may hold another value
            npu = set((table().get("families") or {}).get("npu") or ())
            nw = words(b)
            return any(w in npu for w in nw) and tuple(w for w in nw if w not in npu) == words(a)
        if a != b and wa is not None and wb is None:  # `_init_cuda_setting` against `_init_setting`
            cuda = set((table().get("families") or {}).get("cuda") or ())
            general = tuple(w for w in words(a) if w not in cuda and not (w.endswith("s") and w[:-1] in cuda))
            return bool(general) and general == words(b) and len(general) < len(words(a))
        return a != b and wa is not None and wa == wb

    def gains_npu(self, g, n) -> bool:
        """A collection the NPU side extends with entries that name the NPU only (`devices +
        [f"npu:{i}" for i in range(k)]`, `[..., DistributedType.MULTI_NPU]`, `["cuda", "mps"] +
        ["npu"]`): the other entries the same, in order."""
        s = self.s

        def parts(node):
            t = type(node)
            if t is cst.BinaryOperation and type(node.operator) is cst.Add:
                return parts(node.left) + parts(node.right)
            if t in (cst.List, cst.Tuple, cst.Set) and all(type(e) is cst.Element for e in node.elements):
                return [("item", e.value) for e in node.elements]
            return [("part", node)]

        gp, np_ = parts(g), parts(n)
        if len(np_) <= len(gp):
            return False
        # a name is an entry naming the NPU only as an item of a collection (`loss + npu_aux` is no list)
        kept = [x for x in np_ if not (_names_npu(x[1]) and (x[0] == "item" or type(x[1]) not in (cst.Name, cst.Attribute)))]
        if len(kept) != len(gp) or len(kept) == len(np_):
            return False
        return all(a[0] == b[0] and s.gn(a[1]) == s.nn(b[1]) for a, b in zip(gp, kept))

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
                           ("<backend>",) if v.lower() in plumbing_table().backends else v)
            return out

        a, b = items(g), items(n)
        return a is not None and b is not None and a != b and set(a) == set(b)

    # ------------------------------------------------------------------ calls
    @staticmethod
    def placing(callee: str) -> bool:
        """A function of the device namespace that only places, waits, frees or measures
        (`torch.cuda.set_device`): its arguments say where, not what."""
        for ns in plumbing_table().namespaces:
            if callee.startswith(ns + "."):
                name = callee[len(ns) + 1:]
                return name in plumbing_table().calls or any(
                    c.endswith(".*") and name.startswith(c[:-1]) for c in plumbing_table().calls)
        return False

    def request(self, callee: str, gkw: dict, nkw: dict) -> list:
        """A scheduler's device request spelt for each device (rules/devices.yaml
        resource_requests): `num_gpus=N` on the GPU against `resources={"NPU": M}` on the NPU is
        one request. The pair is taken out of `gkw`/`nkw` (keyword -> Arg): masked when N and M
        are the same value, else one site comparing N with M (the sites returned). A count asked
        on the GPU with no request on the NPU is masked too (the NPU finds its devices another
        way). A resources dict with other entries is left to be compared as written."""
        req = plumbing_table().requests
        if not req or not callee or not match_name(callee, req.get("calls") or ()):
            return []
        s, npu = self.s, set((table().get("families") or {}).get("npu") or ())
        for count in req.get("count") or ():
            for res in req.get("resources") or ():
                ga, na = gkw.get(count), nkw.get(res)
                zero = s.n.live_of(nkw[count].value) if count in nkw else None
                nil = type(zero) is cst.Integer and zero.value == "0"  # `num_gpus=0` on the NPU run
                live = s.n.live_of(na.value) if na is not None else None
                if ga is None or na is None or (count in nkw and not nil) or res in gkw or type(live) is not cst.Dict \
                        or len(live.elements) != 1 or type(live.elements[0]) is not cst.DictElement:
                    continue
                el = live.elements[0]
                name = self.device_key(el.key)
                if not isinstance(name, str) or name.lower() not in npu:
                    continue
                if nil:
                    self.mask(None, nkw.pop(count).value)
                del gkw[count], nkw[res]
                if s.gn(ga.value) != s.nn(el.value):
                    return [(ga.value, el.value, (callee, f"{count} / {res}[{name!r}]"))]
                self.mask(ga.value, na.value)
                return []
        for count in req.get("count") or ():  # asked on the GPU, not at all on the NPU
            ga = gkw.get(count)
            if ga is not None and count not in nkw and not any(r in nkw for r in req.get("resources") or ()):
                self.mask(ga.value, None)
                del gkw[count]
        return []

    def device_key(self, key):
        """A resource's name in an NPU-side request: a string, or a name the specialisation read as
        the run's own device (`{ACCELERATOR_TYPE: n}`, shown as the NPU's resource name)."""
        name = constant(key)
        if isinstance(name, str):
            return name
        dev = device_value(self.s.n, key)
        if isinstance(dev, str) and family_of(dev) == "npu":
            return "NPU"
        return None

    def bare_request(self, g, n) -> bool:
        """A scheduler's device request on one side (`@ray.remote(num_gpus=1)`, or
        `resources={"NPU": 1}` on the NPU) against the same callable given no request at all on
        the other (`@ray.remote`): the other side finds its devices another way. Masked (True)
        when the call's only arguments are that request."""
        req = plumbing_table().requests
        if not req:
            return False
        s = self.s
        call, bare, p, nm, bnm = (g, n, s.g, s.gn, s.nn) if type(g) is cst.Call else (n, g, s.n, s.nn, s.gn)
        if type(call) is not cst.Call or type(bare) not in (cst.Name, cst.Attribute) or nm(call.func) != bnm(bare):
            return False
        qn = qualified_name(p, call.func)
        if not qn or not match_name(canon_qn(qn, None) or qn, req.get("calls") or ()) or not call.args:
            return False
        npu = set((table().get("families") or {}).get("npu") or ())
        for a in call.args:
            kw = a.keyword.value if a.keyword is not None else None
            if call is g and kw in (req.get("count") or ()):
                continue
            if call is n and kw in (req.get("resources") or ()) and type(a.value) is cst.Dict and all(
                    type(e) is cst.DictElement and isinstance(constant(e.key), str) and constant(e.key).lower() in npu
                    for e in a.value.elements):
                continue
            return False
        self.mask(g, n)
        return True

    def call(self, g: cst.Call, n: cst.Call, diff_args) -> list | None:
        """Two calls of different functions that are one device call (module doc): the sites of
        their arguments (`diff_args(g, n, callee)`), or None when they are not."""
        s = self.s
        if self.device_method(g, s.g, s.gn) is not None and \
                self.device_method(g, s.g, s.gn) == self.device_method(n, s.n, s.nn):
            self.mask(g, n)  # module.cuda() against getattr(module, device)()
            return []
        if self.dispatch(g, n) or self.dispatch(n, g, reverse=True) or self.device_class(g, n):
            return []
        if self.renamed(g.func, n.func):  # self.trainer._init_cuda_setting() against ._init_setting()
            self.mask(g, n)
            return diff_args(g, n, _callee_name(g) or "")
        if self.alias(g, s.g, n, s.n) or self.alias(n, s.n, g, s.g):
            self.mask(g, n)  # amp_autocast = torch.npu.amp.autocast; amp_autocast(...): the same function
            return diff_args(g, n, canon_qn(qualified_name(s.g, g.func) or qualified_name(s.n, n.func) or "", None))
        gname, nname = namespace_call(s.g, g), namespace_call(s.n, n)
        if gname is not None and (nname == gname or stand_in(s.n, n, gname)) or \
                nname is not None and stand_in(s.g, g, nname):
            self.mask(g, n)
            return diff_args(g, n, f"torch.cuda.{gname or nname}")
        # any other function of the namespace called through another object under its own name
        # (`torch.cuda.set_rng_state(s)` against `current_platform.set_rng_state(s)`): its arguments compared
        gany, nany = namespace_function(s.g, g), namespace_function(s.n, n)
        if gany is not None and same_method(s.n, n, gany) or nany is not None and same_method(s.g, g, nany):
            self.mask(g, n)
            return diff_args(g, n, f"torch.cuda.{gany or nany}")
        return self.autocast(g, n)

    @staticmethod
    def alias(a: cst.Call, pa: Parsed, b: cst.Call, pb: Parsed) -> bool:
        """`a` calls a local name every assignment of which (in the code this device runs) is the
        function `b` calls (their qualified names, after the masks' renames)."""
        if type(a.func) is not cst.Name:
            return False
        qb = qualified_name(pb, b.func)
        if qb is None:
            return False
        prog = program(pa)
        fn = prog.scope_of(a)
        values = prog.assignments(fn, a.func.value) if fn is not None else None
        return bool(values) and all(canon_qn(qualified_name(pa, v) or "", None) == canon_qn(qb, None) for v in values)

    def dispatch(self, a: cst.Call, b: cst.Call, reverse: bool = False) -> bool:
        """`MMDistributedDataParallel(model.cuda(), device_ids=ids)` against `build_ddp(model,
        device=device, device_ids=ids)`: a factory that takes the run's device and names the class
        it stands for (a word of its name is the class name's initials, `ddp`, or one of its
        words), the other arguments the same (`same_arguments`). Masked (True) when so."""
        s = self.s
        pb = s.g if reverse else s.n
        dev = [x for x in b.args if (x.keyword is None or x.keyword.value in plumbing_table().parameters)
               and not x.star and (self.role(pb, x.value) or Role("", False)).what == DEVICE]
        if len(dev) != 1 or dev[0].keyword is not None and any(
                x.keyword is not None and x.keyword.value == dev[0].keyword.value for x in a.args):
            return False
        wa, wb = words(_callee_name(a) or ""), words(_callee_name(b) or "")
        initials = {"".join(w[0] for w in wa[i:]) for i in range(len(wa) - 1)}
        if not wa or not wb or not any(w in initials or w in wa for w in wb):
            return False
        rest_b = [x for x in b.args if x is not dev[0]]
        if not self.same_arguments(*((rest_b, a.args) if reverse else (a.args, rest_b))):
            return False
        self.mask(b if reverse else a, a if reverse else b)
        return True

    def device_class(self, g: cst.Call, n: cst.Call) -> bool:
        """`MMDataParallel(model.cuda(), ...)` against `NPUDataParallel(model.npu(), ...)`: a class
        named for the NPU (its device word aside, its words end the GPU class's, two at least)
        with the same arguments (`same_arguments`). Masked (True) when so."""
        gw, nw = words(_callee_name(g) or ""), words(_callee_name(n) or "")
        fams = table().get("families") or {}
        npu_words = set(fams.get("npu") or ())
        if not npu_words & set(nw):
            return False
        rest = tuple(w for w in nw if w not in npu_words)
        if len(rest) < 2 or gw[-len(rest):] != rest or not self.same_arguments(g.args, n.args):
            return False
        self.mask(g, n)
        return True

    def same_arguments(self, ga: list, na: list) -> bool:
        """Two calls' arguments the same, a module moved to the device being the module itself
        (`model.cuda()`, `model.npu()`, `model`) and a placement argument given on one side only
        or spelt for each device (`device_ids=[rank]`) aside."""
        s = self.s

        def placement(x, p, others) -> bool:  # given on this side only, and only a placement
            return x.keyword is not None and x.keyword.value in plumbing_table().parameters \
                and x.keyword.value not in {y.keyword.value for y in others if y.keyword is not None} \
                and all((self.role(p, e) or Role("", False)).what in (DEVICE, RANK) for e in _items(x.value))

        ga, na = [x for x in ga if not placement(x, s.g, na)], [x for x in na if not placement(x, s.n, ga)]

        if len(ga) != len(na):
            return False
        for x, y in zip(ga, na):
            if (x.keyword.value if x.keyword else None) != (y.keyword.value if y.keyword else None) or x.star != y.star:
                return False
            kx = self.device_method(x.value, s.g, s.gn) if type(x.value) is cst.Call else None
            ky = self.device_method(y.value, s.n, s.nn) if type(y.value) is cst.Call else None
            if (kx if kx is not None else s.gn(x.value)) != (ky if ky is not None else s.nn(y.value)) and not (
                    x.keyword is not None and self.placements(x.keyword.value, x.value, y.value)):
                return False
        return True

    def device_method(self, call: cst.Call, p: Parsed, nm):
        """The key of the value a call moves to the run's device, else None: `x.cuda()` / `x.npu()`
        (no argument, or `non_blocking` only), `x.to(device)`, `getattr(x, device)()` and a move
        helper imported from another module (`place_on_device(x, device)`: `move_helper`)."""
        f = call.func
        fam = (table().get("families") or {})
        if call.args and type(f) is cst.Attribute and qualified_name(p, f) is None and f.attr.value in (
                list(fam.get("cuda") or ()) + list(fam.get("npu") or ())) and family_of(f.attr.value) in ("cuda", "npu"):
            # x.cuda(non_blocking=True): a move of x to the run's device (with an index,
            # `x.cuda(rank)`, it is the rules' own mask, cuda-method-to-device)
            return nm(f.value) if self._placing_only(call.args, p, ()) else None
        if call.args and (moved := self.move_helper(call, p)) is not None:
            return nm(moved)
        if call.args:  # x.to(self.device), x.to(device=dev, non_blocking=True): a move to the run's device
            if type(f) is not cst.Attribute or f.attr.value != "to" or qualified_name(p, f) is not None:
                return None
            dev = [a.value for a in call.args if a.keyword is None or a.keyword.value == "device"]
            rest = [a for a in call.args if a.keyword is not None and a.keyword.value != "device"]
            if len(dev) != 1 or any(a.star or a.keyword.value != "non_blocking" for a in rest) \
                    or (self.role(p, dev[0]) or Role("", False)).what != DEVICE:
                return None
            return nm(f.value)
        if type(f) is cst.Attribute and qualified_name(p, f) is None and f.attr.value in (
                list(fam.get("cuda") or ()) + list(fam.get("npu") or ())) and family_of(f.attr.value) in ("cuda", "npu"):
            return nm(f.value)
        if type(f) is cst.Call and type(f.func) is cst.Name and f.func.value == "getattr" and "getattr" not in p.aliases \
                and len(f.args) == 2 and (self.role(p, f.args[1].value) or Role("", False)).what == DEVICE:
            return nm(f.args[0].value)
        return None

    def _placing_only(self, args: list, p: Parsed, kinds: tuple) -> bool:
        """Arguments that only say where (at most one device, given bare or as `device=`, of one
        of the value kinds `kinds`) and how (`non_blocking`)."""
        placed = 0
        for a in args:
            if a.star:
                return False
            kw = a.keyword.value if a.keyword is not None else None
            if kw == "non_blocking":
                continue
            if kw not in (None, "device") or (self.role(p, a.value) or Role("", False)).what not in kinds:
                return False
            placed += 1
        return placed <= 1

    def move_helper(self, call: cst.Call, p: Parsed):
        """The value `place_on_device(x, device)` moves: a function imported from another module,
        named for a move to the device (rules/devices.yaml `plumbing.moves`), given the value first
        and the run's device; None for any other call."""
        moves = plumbing_table().moves
        qn = qualified_name(p, call.func)
        if qn is None or not call.args or call.args[0].keyword is not None or call.args[0].star:
            return None
        ws = set(words(qn.rsplit(".", 1)[-1]))
        if not ws & moves.get("words", frozenset()) or not ws & moves.get("verbs", frozenset()):
            return None
        rest = call.args[1:]
        if not rest or not self._placing_only(rest, p, (DEVICE,)) or not any(
                a.keyword is None or a.keyword.value == "device" for a in rest):
            return None
        return call.args[0].value

    def autocast(self, g: cst.Call, n: cst.Call) -> list | None:
        """`torch.cuda.amp.autocast(...)` against `torch.autocast(device_type=DEVICE, ...)` (either
        way round): one autocast, its other arguments compared (sites), else None."""
        ac = plumbing_table().autocast
        if not ac:
            return None
        s = self.s
        qg, qn = (canon_qn(q, None) if q else None for q in (qualified_name(s.g, g.func), qualified_name(s.n, n.func)))
        if qg in ac["device"] and qn in ac["any"]:
            cuda, anyx = (g, s.g), (n, s.n)
        elif qn in ac["device"] and qg in ac["any"]:
            cuda, anyx = (n, s.n), (g, s.g)
        elif self.autocast_stand_in(qn, n) and qg in ac["device"]:
            return self._autocast_sites(g, n, _bind(g, ["enabled", "dtype", "cache_enabled"]), _bind(n, []))
        elif self.autocast_stand_in(qg, g) and qn in ac["device"]:
            return self._autocast_sites(g, n, _bind(g, []), _bind(n, ["enabled", "dtype", "cache_enabled"]))
        elif self.autocast_stand_in(qn, n) and qg in ac["any"]:
            cuda, anyx = (n, s.n), (g, s.g)  # the stand-in takes no device: as the CUDA namespace's form
        elif self.autocast_stand_in(qg, g) and qn in ac["any"]:
            cuda, anyx = (g, s.g), (n, s.n)
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
        return self._autocast_sites(g, n, gb, nb)

    def autocast_stand_in(self, qn: str | None, call: cst.Call) -> bool:
        """`autocast(dtype=...)` imported from outside torch (devices.yaml `autocast.stand_in`),
        keywords only: torch.autocast on the run's device, picked by the project's helper."""
        names = plumbing_table().autocast.get("stand_in") or ()
        return qn is not None and not qn.startswith("torch.") and qn.rsplit(".", 1)[-1] in names \
            and all(a.keyword is not None and not a.star for a in call.args)

    def _autocast_sites(self, g, n, gb: dict | None, nb: dict | None) -> list | None:
        """The sites of two autocasts taken as one (their arguments by name), masked."""
        s = self.s
        if gb is None or nb is None:
            return None
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

    def placement(self, name: str, node, p: Parsed, callee: str = "") -> bool:
        """An argument that only says where a module or tensor lives (`device_ids=[rank]`,
        `output_device=local_rank`, `device=get_current_device()`, a device passed by position,
        the index of `model.cuda(i)`), given on one side only."""
        if family_of(callee.rsplit(".", 1)[-1]) in ("cuda", "npu") and callee.rsplit(".", 1)[-1] in ("cuda", "npu"):
            self.mask(node if p is self.s.g else None, node if p is self.s.n else None)
            return True
        if name.startswith("argument ") and (self.role(p, node) or Role("", False)).what in (DEVICE, BACKEND):
            self.mask(node if p is self.s.g else None, node if p is self.s.n else None)
            return True
        if not name.startswith("argument ") and constant(node) is True \
                and device_flag(words(name)) == ("cuda" if p is self.s.g else "npu"):
            self.mask(node if p is self.s.g else None, node if p is self.s.n else None)
            return True  # super().__init__(..., npu=True): this side's own device, said
        if name not in plumbing_table().parameters:
            return False
        nodes = [e.value for e in node.elements] if type(node) in (cst.List, cst.Tuple) else [node]
        for x in nodes:
            r = self.role(p, x)
            if r is None or r.what not in (DEVICE, RANK):
                return False
        if nodes:
            self.mask(node if p is self.s.g else None, node if p is self.s.n else None)
        return bool(nodes)

    def default(self, g: cst.Param, n: cst.Param) -> bool:
        """`def f(device="cuda")` against `def f(device=None)` (the function then finds the device):
        a placement parameter whose default is the run's device on one side and None on the other."""
        if g.name.value != n.name.value or g.name.value not in plumbing_table().parameters \
                or g.default is None or n.default is None:
            return False
        roles = [(self.role(p, d) or Role("", False)).what if constant(d) is not None else None
                 for p, d in ((self.s.g, g.default), (self.s.n, n.default))]
        if DEVICE not in roles or not set(roles) <= {DEVICE, None}:
            return False
        self.mask(g, n)
        return True

    def placements(self, name: str, g, n) -> bool:
        """The same placement argument on both sides, each a device or a rank (`device_ids=[args.gpu]`
        against `device_ids=[local_rank]`)."""
        if name not in plumbing_table().parameters:
            return False
        for p, node in ((self.s.g, g), (self.s.n, n)):
            nodes = [e.value for e in node.elements] if type(node) in (cst.List, cst.Tuple) else [node]
            if not nodes or any((self.role(p, x) or Role("", False)).what not in (DEVICE, RANK) for x in nodes):
                return False
        self.mask(g, n)
        return True

    # ------------------------------------------------------------------ a statement on one side
    def statement(self, st: St, side: str, simple: bool = False) -> bool:
        """A statement on one side only that sets, defines or asserts the run's device (module doc):
        masked (True). `simple`: only a simple statement (a device set or defined)."""
        p = self.s.g if side == "gpu" else self.s.n
        if simple and st.kind != "simple":
            return False
        if type(st.node) is cst.FunctionDef:  # a helper one side needs alone: `def get_backend(): return "hccl"`
            r = self.returns(p, st.node) if not device_test(st.node.name.value) else Role(DEVICE, True)
            if (r is None or r.what not in (DEVICE, BACKEND)) and not self.helper_body(st.node, p):
                return False
            self.mask(st.node if side == "gpu" else None, st.node if side == "npu" else None)
            return True
        if type(st.node) is cst.If and st.node.orelse is None and st.clauses:
            return self.guard(st, p, side)
        if type(st.node) is cst.Try and st.clauses and all(
                x.kind == "import" or self.plumbing_only(x, p) for _l, _n, body in st.clauses for x in body):
            self.mask(st.node if side == "gpu" else None, st.node if side == "npu" else None)
            return True  # try: the device from one API, except: from another
        if type(st.node) is cst.Try and st.clauses and self.optional_import(st, p):
            self.mask(st.node if side == "gpu" else None, st.node if side == "npu" else None)
            return True
        if not self.plumbing_only(st, p, moved=not simple):
            return False
        here = st.node
        self.mask(here if side == "gpu" else None, here if side == "npu" else None)
        return True

    def optional_import(self, st: St, p: Parsed) -> bool:
        """`try: from fastlib import op; FAST_OK = True` / `except ImportError: op = None; FAST_OK =
        False` on one side, where the other side imports the same names unconditionally: the same
        import made optional (where it succeeds, the same objects; where it fails, what uses them
        shows as its own difference). Its blocks hold only those imports and constants (None, True,
        False) bound to names."""
        other = self.s.n if p is self.s.g else self.s.g
        theirs = {canon_qn(qn, None) for qn in other.aliases.values()}
        imported = []
        for _label, _node, body in st.clauses:
            for x in body:
                if x.kind == "import":
                    imported += [canon_qn(qn, None) for small in x.node.body for _b, qn in import_items(small)]
                    continue
                if x.kind != "simple" or not all(type(y) in (cst.Assign, cst.Pass) and (
                        type(y) is cst.Pass or type(y.value) is cst.Name and y.value.value in ("None", "True", "False")
                        and all(type(t.target) is cst.Name for t in y.targets)) for y in x.node.body):
                    return False
        return bool(imported) and set(imported) <= theirs

    def unpaired(self, gs: list, gk: list, ns: list, nk: list, anchor) -> tuple:
        """The statements of a region less the assignments of device plumbing (`device =
        platform.device_type`: `plumbing_only`) whose key and anchor (`anchor(st, normalizer)`: its
        target) the other side does not have: masked here, never paired with a statement they
        stand next to (a call is left to be paired with its stand-in)."""
        out = []
        s = self.s
        ga, na = [anchor(x, s.gn) for x in gs], [anchor(x, s.nn) for x in ns]
        for sts, keys, anchors, others, side in ((gs, gk, ga, set(nk) | set(na), "gpu"),
                                                 (ns, nk, na, set(gk) | set(ga), "npu")):
            keep = [i for i, st in enumerate(sts) if keys[i] in others or anchors[i] in others
                    or not (st.kind == "simple" and all(type(x) in (cst.Assign, cst.Assert) for x in st.node.body))
                    or not self.statement(st, side, simple=True)]
            out += [[sts[i] for i in keep], [keys[i] for i in keep]]
        return tuple(out)

    def plumbing_only(self, st: St, p: Parsed, moved: bool = True) -> bool:
        """A simple statement that only sets, defines or asserts the run's device (`statement`);
        `moved`: or a set-up call the other side makes elsewhere (`moved_setup`)."""
        if st.kind != "simple":
            return False
        other = self.s.n if p is self.s.g else self.s.g
        for small in st.node.body:
            t = type(small)
            if t is cst.Expr and type(small.value) is cst.Call:
                call = small.value
                if not (self.called_elsewhere(call, p, other) or moved and self.moved_setup(call, p, other)
                        or self.device_move(call, p) or self.selects_device(call, p)):
                    return False
            elif t is cst.Assert:
                if not (is_count(p, small.test) or self.names_device(p, small.test)):
                    return False
            elif t is cst.Assign and len(small.targets) == 1 and self.device_variable(small.targets[0].target, p):
                continue  # os.environ["NCCL_NVLS_ENABLE"] = "0": the GPU's own library tuning
            elif t is cst.Assign and len(small.targets) == 1 and self.own_entry(small.targets[0].target, p):
                continue  # factory["npu"] = NPUWrapper: the NPU's entry of a table keyed by device
            elif t is cst.Assign and len(small.targets) == 1 and self.placement_key(small.targets[0].target) \
                    and (self.role(p, small.value) or Role("", False)).what in (DEVICE, RANK):
                continue  # kwargs["device_map"] = "npu"
            elif t is cst.Assign and all(type(x.target) in (cst.Name, cst.Attribute) and switch_family(
                    dotted(x.target) or "") == ("cuda" if p is self.s.g else "npu") for x in small.targets):
                continue  # use_npu = cfg.get("use_npu", False): this side's own device switch
            elif t is cst.Assign and all(type(x.target) in (cst.Name, cst.Attribute) for x in small.targets):
                v = small.value
                r = self.role(p, v)
                index = all(named(dotted(x.target)) == DEVICE for x in small.targets) and (
                    r is not None and r.what == RANK or type(v) is cst.Integer)  # device = local_rank
                ns = type(v) is cst.Attribute and any(canon_qn(qualified_name(p, v) or "", None).startswith(x + ".")
                                                      for x in plumbing_table().namespaces)  # f = torch.npu.amp.autocast
                if not (r is not None and r.what in (DEVICE, BACKEND) or index or ns or type(v) is cst.Call
                        and (namespace_call(p, v) is not None or self.device_move(v, p) or self.device_call(v, p))
                        or isinstance(device_value(p, v), bool)):
                    return False  # not the device, its backend, a device call, a move or a device test's answer
            else:
                return False
        return True

    def names_device(self, p: Parsed, test, any_family: bool = False) -> bool:
        """`device in ["cuda", "npu"]`, `device == "npu"`: a test of which device the run's is
        (`any_family`: the names listed may be any device's, `["cuda", "mlu"]`)."""
        if type(test) is not cst.Comparison or len(test.comparisons) != 1:
            return False
        r = self.role(p, test.left)
        x = test.comparisons[0].comparator
        xs = [e.value for e in x.elements] if type(x) in (cst.List, cst.Tuple, cst.Set) else [x]
        return r is not None and r.what == DEVICE and all(type(e) is cst.SimpleString and (
            family_of(e.evaluated_value) is not None if any_family else
            (self.role(p, e) or Role("", False)).what == DEVICE) for e in xs)

    @staticmethod
    def placement_key(target) -> bool:
        """`kwargs["device_map"]`: an entry named after a placement parameter."""
        if type(target) is not cst.Subscript or len(target.slice) != 1 or type(target.slice[0].slice) is not cst.Index:
            return False
        k = target.slice[0].slice.value
        return type(k) is cst.SimpleString and k.evaluated_value in plumbing_table().parameters

    def own_entry(self, target, p: Parsed) -> bool:
        """`table["npu"]` on the NPU side (`table["cuda"]` on the GPU side)."""
        if type(target) is not cst.Subscript or len(target.slice) != 1 or type(target.slice[0].slice) is not cst.Index:
            return False
        k = target.slice[0].slice.value
        return type(k) is cst.SimpleString and family_of(k.evaluated_value or "") == (
            "cuda" if p is self.s.g else "npu")

    def device_variable(self, target, p: Parsed) -> bool:
        """`os.environ["X"]` for a variable of this side's device stack only, that tunes it
        (rules/environment.yaml `gpu_tuning` on the GPU side, `npu_tuning` on the NPU side)."""
        var = env_read(p, target)
        if var is None:
            return False
        return canonical(var)[1] == ("gpu_tuning" if p is self.s.g else "npu_tuning")

    def called_elsewhere(self, call: cst.Call, p: Parsed, other: Parsed) -> bool:
        """A device-namespace call (`torch.cuda.set_device(r)`, or its stand-in) whose function the
        other side calls too, elsewhere: moved, not added or dropped (a device set on one side
        only is still a difference)."""
        name = namespace_call(p, call) or next((c for c in plumbing_table().calls if stand_in(p, call, c)), None)
        if name is None:
            return False
        return any(namespace_call(other, c) == name or stand_in(other, c, name) for c in other.state.calls)

    def device_move(self, call: cst.Call, p: Parsed) -> bool:
        """`x.cuda()`, `x.npu()`, `getattr(x, device)()`, `x.to(device)`: a module or tensor moved
        to the run's device."""
        nm = self.s.gn if p is self.s.g else self.s.nn
        if self.device_method(call, p, nm) is not None:
            return True
        f = call.func
        return type(f) is cst.Attribute and f.attr.value == "to" and qualified_name(p, f) is None \
            and len(call.args) == 1 and call.args[0].keyword in (None,) \
            and (self.role(p, call.args[0].value) or Role("", False)).what == DEVICE

    def selects_device(self, call: cst.Call, p: Parsed) -> bool:
        """`paddle.set_device("npu:0")`, `platform.set_device(device)`, `torch.npu.set_device(
        local_rank)`: a call of set_device (any library's, or a stand-in) given the run's device or
        an index of it: which accelerator of the run's own kind the process computes on (the other
        side's framework picks one by default, or by its launcher), never what it computes; so is
        an index given one way on one side and another way on the other (`nodediff`). A device
        named that is not the run's (`"cpu"`) is a difference."""
        if not call.args or any(a.star or a.keyword is not None for a in call.args):
            return False
        f = call.func
        last = f.attr.value if type(f) is cst.Attribute else f.value if type(f) is cst.Name else None
        if last != "set_device" and not stand_in(p, call, "set_device"):
            return False
        for a in call.args:
            if (self.role(p, a.value) or Role("", False)).what in (DEVICE, RANK):
                continue
            try:
                v = Values(p).evaluate(a.value, [])
            except Exception:  # NotLiteral, or what a hostile value raises: an index not known statically
                continue
            if not isinstance(v, int) or isinstance(v, bool):
                return False  # "cpu", or anything but an index
        return True

    def moved_setup(self, call: cst.Call, p: Parsed, other: Parsed) -> bool:
        """A call whose every argument is the run's device or backend (`init_process_group(
        "cuda:nccl,cpu:gloo")`) and whose function the other side calls too, elsewhere."""
        if not call.args or any(a.star for a in call.args):
            return False
        for a in call.args:
            r = self.role(p, a.value)
            if r is None or r.what not in (DEVICE, BACKEND):
                return False
        q = qualified_name(p, call.func)
        if q is None:
            return False
        q = canon_qn(q, None)
        return any(canon_qn(qualified_name(other, c.func) or "", None) == q for c in other.state.calls)


    def guard(self, st: St, p: Parsed, side: str) -> bool:
        """An `if` on one side only that refuses an option on this device (`if cfg.device == "npu"
        and cfg.compile: raise ...`: its test a device test, its body only raises), or that only
        imports, under a condition, what the other side imports anyway (`if args.amp: from
        torch.npu.amp import GradScaler` against a GPU import of torch.cuda.amp.GradScaler)."""
        body = st.clauses[0][2]
        if not body:
            return False
        test = st.node.test
        spec = p.spec
        device_test = spec is not None and (id(test) in spec.live or device_value(p, test) is not MISSING)
        if all(self.plumbing_only(x, p) for x in body):
            pass  # only device plumbing (`if not device: device = get_device()`)
        elif device_test and all(x.kind == "simple" and all(type(y) is cst.Raise for y in x.node.body) for x in body):
            pass  # an option refused on this device
        elif all(x.kind == "import" for x in body):
            other = self.s.n if p is self.s.g else self.s.g
            mine = {canon_qn(qn, None) for x in body for small in x.node.body for _b, qn in import_items(small)}
            if not mine or not mine <= {canon_qn(qn, None) for qn in other.aliases.values()}:
                return False
        else:
            return False
        self.mask(st.node if side == "gpu" else None, st.node if side == "npu" else None)
        return True

    # ------------------------------------------------------------------ a helper of the file, called
    def inline(self, call: cst.Call, p: Parsed) -> tuple | None:
        """What a call of a module-level function of the file does on this side's device, when
        that is one thing: `pick(local, kind)` with `def pick(i, kind=None): if kind == "npu":
        torch.npu.set_device(i) ...` and `kind = probe()` returning "npu" is
        `torch.npu.set_device(i)` with i bound to `local`. Returns (the expression it evaluates:
        the call it makes or the value it returns, {parameter: the argument node given for it});
        None when the function is not the file's, takes its arguments in a way that cannot be
        bound, or does more than one thing, or what it does depends on what cannot be decided
        (evaluate.device.DeviceEval.live_path)."""
        d = getattr(getattr(p, "spec", None), "decider", None)
        if d is None or type(call.func) is not cst.Name:
            return None
        fn = program(p).funcs.get(call.func.value)
        if fn is None or fn.asynchronous is not None or fn.decorators or isinstance(fn.params.star_arg, (
                cst.Param, cst.ParamStar)) or fn.params.star_kwarg is not None or fn.params.kwonly_params \
                or fn.params.posonly_params:
            return None
        names = [prm.name.value for prm in fn.params.params]
        given: dict = {}
        for i, a in enumerate(call.args):
            if a.star:
                return None
            key = a.keyword.value if a.keyword is not None else (names[i] if i < len(names) else None)
            if key not in names or key in given:
                return None
            given[key] = a.value
        env = Env(d.module)
        binding = {}
        for prm in fn.params.params:
            node = given.get(prm.name.value, prm.default)
            if node is None:
                return None
            binding[prm.name.value] = node
            env.vars[prm.name.value] = (self.argument(p, call, node, d), None)
        out: list = []
        d.hits = []
        try:
            ends = d.live_path(_block_body(fn.body), env, out)
        except Exception:  # a hostile helper: not followed
            return None
        if ends is None or len(out) != 1 or out[0].value is None:
            return None
        for name, (_v, how) in env.vars.items():  # a parameter given a new value inside: no node for it
            if how == "reassigned":
                binding.pop(name, None)
        return out[0].value, binding

    def device_call(self, call: cst.Call, p: Parsed) -> bool:
        """A call of a file's helper that, on this device, is a call of the device namespace
        (`count_devices(kind)` doing `torch.npu.device_count()`: `inline`)."""
        got = self.inline(call, p)
        return got is not None and type(got[0]) is cst.Call and namespace_call(p, got[0]) is not None

    @staticmethod
    def argument(p: Parsed, call: cst.Call, node, d):
        """The device face's value of an argument node at a call: a constant, a device test, or a
        name the calling function assigns once (`kind = probe()`)."""
        if type(node) is cst.Name and node.value not in ("True", "False", "None"):
            fn = program(p).scope_of(call)
            values = program(p).assignments(fn, node.value) if fn is not None else None
            if fn is not None and (values is None or len(values) != 1) \
                    and node.value in {prm.name.value for prm in fn.params.params}:
                return UNDECIDED
            if values is not None and len(values) == 1:
                node = values[0]
        try:
            return d.ev(node, d.module)
        except Exception:  # a hostile value: not known
            return UNDECIDED

    def helper_body(self, fn: cst.FunctionDef, p: Parsed) -> bool:
        """A function whose every statement, on every path, is device plumbing: device tests and
        tests of its own parameters for None, imports of a device's module, its parameters given
        the run's device, calls of the device namespace (`torch.npu.set_device(i)`), and returns
        of those calls, of constants, of parameters or of the device. Such a helper, defined on one
        side only, changes nothing by being defined; where it is called is compared (`inline`)."""
        d = getattr(getattr(p, "spec", None), "decider", None)
        params = {prm.name.value for prm in fn.params.params}
        device = [False]

        def value_ok(v) -> bool:
            if v is None or type(v) in (cst.Integer, cst.Float, cst.SimpleString) \
                    or type(v) is cst.Name and (v.value in params or v.value in ("True", "False", "None")):
                return True
            if type(v) is cst.Call and namespace_call(p, v) is not None:
                device[0] = True
                return True
            r = self.role(p, v)
            if r is not None and r.what in (DEVICE, BACKEND):
                device[0] = True
                return True
            return False

        def test_ok(t) -> bool:
            if type(t) is cst.Comparison and len(t.comparisons) == 1 and type(t.comparisons[0].operator) in (
                    cst.Is, cst.IsNot) and type(t.left) is cst.Name and t.left.value in params \
                    and type(t.comparisons[0].comparator) is cst.Name and t.comparisons[0].comparator.value == "None":
                return True
            if self.names_device(p, t, any_family=True):
                device[0] = True
                return True
            if d is not None:
                d.hits = []
                try:
                    d.ev(t, d.module)
                except Exception:
                    return False
                if d.hits:
                    device[0] = True
                    return True
            return False

        def block(stmts) -> bool:
            for st in stmts:
                t = type(st)
                if t is cst.SimpleStatementLine:
                    for small in st.body:
                        ts = type(small)
                        if ts is cst.Pass or ts is cst.Expr and type(small.value) in (cst.SimpleString,
                                                                                      cst.ConcatenatedString):
                            continue
                        if ts in (cst.Import, cst.ImportFrom) and d is not None and all(
                                d.module_family(qn) is not None for _b, qn in import_items(small)):
                            device[0] = True
                            continue
                        if ts is cst.Return and value_ok(small.value):
                            continue
                        if ts is cst.Expr and type(small.value) is cst.Call and namespace_call(p, small.value) is not None:
                            device[0] = True
                            continue
                        if ts is cst.Assign and all(type(x.target) is cst.Name and x.target.value in params
                                                    for x in small.targets) and value_ok(small.value):
                            continue
                        return False
                elif t is cst.If:
                    o = st
                    while o is not None:
                        if type(o) is cst.If:
                            if not test_ok(o.test) or not block(_block_body(o.body)):
                                return False
                            o = o.orelse
                        else:
                            if not block(_block_body(o.body)):
                                return False
                            o = None
                elif t is cst.Try and st.finalbody is None and st.orelse is None and all(
                        h.type is not None for h in st.handlers):
                    if not block(_block_body(st.body)) or not all(block(_block_body(h.body)) for h in st.handlers):
                        return False
                else:
                    return False
            return True

        try:
            return block(_block_body(fn.body)) and device[0]
        except RecursionError:
            raise
        except Exception:  # a hostile helper: not plumbing
            return False

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


def _items(node) -> list:
    return [e.value for e in node.elements] if type(node) in (cst.List, cst.Tuple) else [node]


def _callee_name(call: cst.Call) -> str | None:
    f = call.func
    return f.value if type(f) is cst.Name else f.attr.value if type(f) is cst.Attribute else None


def _names_npu(node) -> bool:
    """An entry that names the NPU only: "npu:0", f"npu:{i}", a comprehension of such, a list of
    them, `DistributedType.MULTI_NPU`."""
    t = type(node)
    if t is cst.SimpleString:
        v = node.evaluated_value
        return isinstance(v, str) and family_of(v.split(":", 1)[0]) == "npu"
    if t is cst.FormattedString:
        head = node.parts[0] if node.parts else None
        return type(head) is cst.FormattedStringText and family_of(head.value.split(":", 1)[0]) == "npu" \
            and head.value.split(":", 1)[0] != ""
    if t in (cst.ListComp, cst.GeneratorExp, cst.SetComp):
        return _names_npu(node.elt)
    if t in (cst.List, cst.Tuple, cst.Set):
        return bool(node.elements) and all(type(e) is cst.Element and _names_npu(e.value) for e in node.elements)
    if t in (cst.Attribute, cst.Name):  # MULTI_NPU, backend.npu: the NPU's own member, not `npu_scale`
        name = node.attr.value if t is cst.Attribute else node.value
        npu = set((table().get("families") or {}).get("npu") or ())
        ws = words(name)
        return bool(ws) and (ws[-1] in npu or name.isupper() and any(w in npu for w in ws))
    return False


def _device_words(name: str) -> tuple | None:
    """An identifier's words with each device name (gpu, gpus, cuda, npu, npus, ...) as one
    word, and each accelerator's collective library (nccl, hccl: rules/devices.yaml `backends`)
    as another (`NcclBackend` and `HcclBackend`); None when it names neither."""
    fams = table().get("families") or {}
    devs = {n for fam in ("cuda", "npu") for n in fams.get(fam) or ()}
    libs = {str(n).lower() for fam in ("cuda", "npu") for n in (table().get("backends") or {}).get(fam) or ()}
    out, hit = [], False
    for w in words(name):
        if w in libs:
            out.append("<backend>")
            hit = True
        elif w in devs or (w.endswith("s") and w[:-1] in devs):
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


def _index_parts(p: Parsed, node) -> list:
    """The expressions a device is indexed by: the `{...}` of `f"npu:{rank}"` (also given to
    `torch.device`), the second argument of `torch.device("npu", rank)`, through a name bound to
    one of them."""
    node = p.live_of(node)
    if type(node) in (cst.Name, cst.Attribute):
        bound = Values(p).binding(node)
        if bound is not None:
            node = p.live_of(bound)
    if type(node) is cst.FormattedString:
        return [x.expression for x in node.parts if type(x) is cst.FormattedStringExpression]
    if type(node) is cst.Call and canon_qn(qualified_name(p, node.func) or "", None) == "torch.device" \
            and len(node.args) == 2 and all(a.keyword is None for a in node.args):
        return [node.args[1].value]
    if type(node) is cst.Call and canon_qn(qualified_name(p, node.func) or "", None) == "torch.device" \
            and len(node.args) == 1 and node.args[0].keyword is None \
            and type(node.args[0].value) is cst.FormattedString:  # torch.device(f"npu:{rank}")
        return _index_parts(p, node.args[0].value)
    return []

