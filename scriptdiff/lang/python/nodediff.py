"""Where two paired nodes differ, as sites: (GPU node, NPU node, context).

A site is the smallest node pair worth reporting: a changed call argument by argument (by
keyword, by position, a missing one as ("MISSING", call)), a different callee as the call, a
def by parameter. Nodes owned by hyperparameter facts are skipped (they are compared as
facts), and a node with more than MAX_SITES differing parts is one site. The context is
None (a statement), ("call", callee), (callee, argument label) or ("def name", parameter).
"""
from __future__ import annotations

import libcst as cst

from ... import budget
from ...model import Severity, Side
from ...ruleset.devices import family_of, table
from ...ruleset.rules import code, load
from ...ruleset.vocabulary import device_named, names_npu, npu_variant
from .pair import PairState, one_line
from .plumbing import PlumbingChecks
from .evaluate import Kind, Values, env_read, kind_of, value
from .parse import Norm, canon_qn, dotted, fields_of, match_name, node_index, rules

MAX_SITES = 6


_CAST_BACK = ("to", "type_as", "type", "half", "bfloat16")


def _cast_back(call) -> cst.Call | None:
    """The call a cast is applied to (`<call>.to(q.dtype)`, `.type_as(q)`, `.half()`), else None."""
    if type(call) is cst.Call and type(call.func) is cst.Attribute and call.func.attr.value in _CAST_BACK \
            and type(call.func.value) is cst.Call and len(call.args) <= 1:
        return call.func.value
    return None


class NodeDiff:
    """Diffs paired nodes of one pair into sites, through the pair's normalizers."""

    def __init__(self, state: PairState):
        self.s = state
        self.plumb = PlumbingChecks(state)
        self.inlining = 0  # helpers followed into, one inside another (bounded: budget.CALL_DEPTH)

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
        g, n = s.g.live_of(g), s.n.live_of(n)  # `A if is_npu() else B`: the operand each device evaluates
        kg, kn = s.gn(g), s.nn(n)
        if kg == kn:
            return []
        if id(g) in s.g.owned or id(n) in s.n.owned:
            return []
        if self.dropped_call(g, n):  # torch.compile(m) against m: the fact's
            return []
        if self.plumb.same(g, n):  # one abstract device, however each side names it (plumbing.py)
            return []
        tg = type(g)
        if type(n) is cst.Call and self.npu_wrapped(g, n):
            return []  # `npu_config_proto(config_proto=config)` where the GPU passes `config`
        if tg is not type(n):
            if tg is cst.Call and type(n) is cst.Subscript and kg == kn:
                return []
            if self.plumb.bare_request(g, n):  # @ray.remote(num_gpus=1) against @ray.remote
                return []
            if cst.Call in (tg, type(n)) and self.inlined(g, n, ctx):  # torch.bfloat16 against pick_dtype(kind)
                return []
            return [(g, n, ctx)]
        if tg is cst.Call:
            if kg[0] != "Call" or kn[0] != "Call":
                return [] if kg == kn else [(g, n, ("call", self.callee_name(g, s.gn)))]
            if kg[1] != kn[1]:
                plumbed = self.plumb.call(g, n, self.diff_args)  # torch.cuda.set_device against its stand-in
                if plumbed is not None:
                    return plumbed
                if self.inlined(g, n, ctx):  # torch.cuda.set_device(r) against the file's set_dev(r, kind)
                    return []
                refactor = self.device_refactor(g, n)
                if refactor is not None:
                    return refactor
                soft = self.softmax_cast(g, n, ctx)
                if soft is not None:
                    return soft
                if self.same_values(g, n):  # x.view(s) against x.reshape(s)
                    return []
                if type(g.func) is cst.Attribute and type(n.func) is cst.Attribute \
                        and g.func.attr.value == n.func.attr.value and kg[2:] == kn[2:] \
                        and type(g.func.value) is cst.Call and type(n.func.value) is cst.Call:
                    # the same method on a different call: `softmax(x.float()).type_as(q)`
                    return self.diff_nodes(g.func.value, n.func.value, ctx)
                if (kg[2:] == kn[2:] or self.same_but_device_keywords(g, n)) and self.device_named_callee(g, n):
                    return []
                if kg[2:] == kn[2:] and type(g.func) is cst.Attribute and type(n.func) is cst.Attribute \
                        and g.func.attr.value == n.func.attr.value and s.gn.qualified(g.func) is None \
                        and s.nn.qualified(n.func) is None:
                    # the same method with the same arguments: what differs is its receiver (a name
                    # with the device in its words, `norm_gpu[0].item()`, is the port)
                    return self.diff_nodes(g.func.value, n.func.value, ctx)
                return [(g, n, ("call", self.callee_name(g, s.gn)))]
            callee = self.callee_name(g, s.gn)
            sm = rules().raw.get("softmax_fp32")
            if sm and match_name(callee, sm.get("calls") or []):
                gf, nf = self.fp32(g, s.gn), self.fp32(n, s.nn)
                if gf != nf:
                    return [(g, n, ("HPARAM", sm["key"], gf, nf,
                                    f"{callee} is computed in fp32 on {'GPU' if gf else 'NPU'} only: "
                                    f"in the input's precision on {'NPU' if gf else 'GPU'}"))]
                if gf and g.args and n.args and g.args[0].keyword is None and n.args[0].keyword is None:
                    gi, ni = g.args[0].value, n.args[0].value  # x.float() and x.to(torch.float32): one cast
                    if type(gi) is cst.Call and type(ni) is cst.Call and type(gi.func) is cst.Attribute \
                            and type(ni.func) is cst.Attribute and s.gn(gi.func.value) == s.nn(ni.func.value) \
                            and s.gn.value(g.args[1:]) == s.nn.value(n.args[1:]):
                        return []
            return self.diff_args(g, n, callee)
        if tg is cst.Attribute and type(g.value) is cst.Call and type(n.value) is cst.Call \
                and g.attr.value == n.attr.value:  # pipe(...).images: the call is what differs
            return self.diff_nodes(g.value, n.value, ctx)
        if tg in (cst.Name, cst.Attribute, cst.SimpleString, cst.ConcatenatedString, cst.Integer, cst.Float,
                  cst.FormattedStringText, cst.FormattedString):
            return [(g, n, ctx)]
        if tg is cst.Param:
            if self.plumb.default(g, n):  # def f(device="cuda") against def f(device=None)
                return []
            ctx = (ctx[0] if ctx else "parameter", g.name.value)
        sites = []
        for f in fields_of(tg):
            sites += self.diff_values(getattr(g, f), getattr(n, f), ctx, g, n)
        if len(sites) > MAX_SITES:
            return [(g, n, ctx)]
        return sites

    def inlined(self, g, n, ctx) -> bool:
        """A call of a function of the file on one side, where the other side writes what that
        function does on this side's device (plumbing.inline): `accel_count(kind)` against
        `torch.cuda.device_count()`, `pick(local, kind)` against `torch.cuda.set_device(local)`.
        The same once followed (every place that differs is a parameter given what the other side
        writes there): both masked (True)."""
        if self.inlining >= budget.CALL_DEPTH:
            return False
        s = self.s
        for side in ("npu", "gpu"):
            call = n if side == "npu" else g
            if type(call) is not cst.Call:
                continue
            got = self.plumb.inline(call, s.n if side == "npu" else s.g)
            if got is None:
                continue
            done, binding = got
            self.inlining += 1
            try:
                sites = self.diff_nodes(g, done, ctx) if side == "npu" else self.diff_nodes(done, n, ctx)
                rest = []
                for a, b, c in sites:
                    mine, theirs = (b, a) if side == "npu" else (a, b)
                    if type(mine) is cst.Name and mine.value in binding:
                        arg = binding[mine.value]
                        rest += self.diff_nodes(theirs, arg, c) if side == "npu" else self.diff_nodes(arg, theirs, c)
                    else:
                        rest.append((a, b, c))
            finally:
                self.inlining -= 1
            if not rest:
                self.plumb.mask(g, n)
                s.followed.setdefault((side, call.func.value), set()).add(id(call))
                return True
        return False

    def same_values(self, g: cst.Call, n: cst.Call) -> bool:
        """Two method calls that give the same values (rules/python.yaml `same_values`): methods
        of one group, the same receiver once the `transparent` methods are taken off it, the
        same arguments (`x.contiguous().view(b, -1)` against `x.reshape(b, -1)`)."""
        sv = rules().raw.get("same_values") or {}
        groups, clear = sv.get("methods") or (), set(sv.get("transparent") or ())
        if type(g.func) is not cst.Attribute or type(n.func) is not cst.Attribute:
            return False
        a, b = g.func.attr.value, n.func.attr.value
        if a == b or not any(a in grp and b in grp for grp in groups):
            return False

        def bare(x):
            while type(x) is cst.Call and not x.args and type(x.func) is cst.Attribute and x.func.attr.value in clear:
                x = x.func.value
            return x

        s = self.s
        return s.gn(bare(g.func.value)) == s.nn(bare(n.func.value)) and \
            s.gn.value(g.args) == s.nn.value(n.args)

    def diff_args(self, g: cst.Call, n: cst.Call, callee: str) -> list:
        s = self.s
        if self.plumb.placing(callee):  # torch.cuda.set_device(rank % n) against (rank): where, not what
            self.plumb.mask(g, n)
            return []
        sig = rules().signatures.get(callee)
        if sig is not None:
            bound = self.bound_diff(g, n, callee, sig)
            if bound is not None:
                return bound

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
        sites = self.plumb.request(callee, gkw, nkw)  # num_gpus=1 against resources={"NPU": 1}

        def one(ga, na, label):
            if ga is not None and na is not None:
                if self.device_setting(label, ga.value, na.value) or self.plumb.placements(label, ga.value, na.value):
                    return []
                return self.diff_nodes(ga.value, na.value, (callee, label))
            present, p = (ga, s.g) if ga is not None else (na, s.n)
            if id(present.value) in p.owned or self.plumb.placement(label, present.value, p, callee):
                return []
            if present.keyword is not None and self.env_default(  # world_size=int(os.environ["WORLD_SIZE"])
                    callee, label, {k: a.value for k, a in (gkw if ga is not None else nkw).items()}, p, present.value):
                return []
            return [(ga.value if ga else ("MISSING", g), na.value if na else ("MISSING", n), (callee, label))]

        for i in range(max(len(gp), len(np_))):
            sites += one(gp[i] if i < len(gp) else None, np_[i] if i < len(np_) else None, f"argument {i + 1}")
        for k in list(gkw) + [k for k in nkw if k not in gkw]:
            sites += one(gkw.get(k), nkw.get(k), k)
        if [s.gn(a.value) for a in gst] != [s.nn(a.value) for a in nst]:
            sites.append((g, n, (callee, "*args/**kwargs")))
        return sites

    def bound_diff(self, g: cst.Call, n: cst.Call, callee: str, sig) -> list | None:
        """The arguments of a call with a known signature (rules/signatures.yaml), bound to
        their parameters, a left-out one read as its default; None when a call cannot be bound
        (*args, an unknown keyword, too many positionals). Several differing arguments are one
        site ("ARGS", callee, [(name, GPU text, NPU text)]): one call, one decision."""
        s = self.s
        params, defaults = sig
        positional = params[:params.index("*")] if "*" in params else params

        def bind(call):
            out, i = {}, 0
            for a in call.args:
                if a.star:
                    return None
                if a.keyword is None:
                    if i >= len(positional):
                        return None
                    out[positional[i]] = a.value
                    i += 1
                elif a.keyword.value in params and a.keyword.value not in out:
                    out[a.keyword.value] = a.value
                else:
                    return None
            return out

        gb, nb = bind(g), bind(n)
        if gb is None or nb is None:
            return None
        sites, diffs = [], []
        for name in params:
            ga, na = gb.get(name), nb.get(name)
            if ga is None and na is None:
                continue
            if ga is not None and na is not None:
                sub = self.diff_nodes(ga, na, (callee, name))
                if sub:
                    sites += sub
                    diffs.append((name, ga, na))
                continue
            present, p = (ga, s.g) if ga is not None else (na, s.n)
            if id(present) in p.owned or self.plumb.placement(name, present, p, callee):
                continue
            if name in defaults and self.is_default(p, present, defaults[name]):
                continue
            if self.env_default(callee, name, gb if ga is not None else nb, p, present):
                continue
            sites.append((ga if ga is not None else ("MISSING", g), na if na is not None else ("MISSING", n),
                          (callee, name)))
            diffs.append((name, ga, na))
        if len(diffs) <= 1:
            return sites

        def text(p, node, name):
            if node is not None:
                return f"{name}={one_line(p.code(node), 60)}"
            return f"{name}={defaults[name]!r} (default)" if name in defaults else f"{name} not given"

        return [(g, n, ("ARGS", callee, [(name, text(s.g, ga, name), text(s.n, na, name)) for name, ga, na in diffs]))]

    def device_setting(self, name: str, g, n) -> bool:
        """`accelerator="GPU"` -> `accelerator="NPU"` (any call): a device setting naming each
        side's device (rules/aliases.yaml device_port), masked as the device-string port."""
        dev = load().section("device_port", {}) or {}
        if not dev or name.lower() not in (dev.get("names") or ()):
            return False
        vals = []
        for p, node in ((self.s.g, g), (self.s.n, n)):
            try:
                v = value(p, node)
            except Exception:
                return False
            if type(v) is not str:
                return False
            vals.append(v.strip().lower())
        if not (family_of(vals[0]) in (dev.get("gpu") or ()) and family_of(vals[1]) in (dev.get("npu") or ())):
            return False
        s = self.s
        gl, nl = s.g.line_of(g), s.n.line_of(n)
        s.add_masked(code("device-string-to-npu"), Side(path=s.g.name, line=gl, source=s.g.text_at(gl)),
                     Side(path=s.n.name, line=nl, source=s.n.text_at(nl)))
        return True

    def env_default(self, callee: str, name: str, bound: dict, p, node) -> bool:
        """`rank=int(os.environ["RANK"])` (or `rank=rank` with `rank = int(os.environ["RANK"])`)
        where the default reads $RANK (rules/signatures.yaml env_defaults): the default written out."""
        var = ((load().section("call_signatures", {}) or {}).get(callee) or {}).get("env_defaults", {}).get(name)
        if var is None or bound.get("init_method") is not None and self._literal(p, bound["init_method"]) != "env://":
            return False
        return self.env_name(self._assigned(p, node), p) == var

    def _literal(self, p, node):
        try:
            return value(p, node)
        except Exception:
            return None

    @staticmethod
    def _assigned(p, node):
        """A bare name's value where the function it stands in (the value model's locals), or else
        the file, assigns it once (`rank = int(os.environ["RANK"])`)."""
        if type(node) is not cst.Name or p.module is None:
            return node
        bound = Values(p).binding(node)
        if bound is not None:
            return bound
        found = [a.value for a in node_index(p).assigns
                 if len(a.targets) == 1 and type(a.targets[0].target) is cst.Name
                 and a.targets[0].target.value == node.value]
        return found[0] if len(found) == 1 else node

    def is_default(self, p, node, default) -> bool:
        try:
            v = value(p, node)
        except Exception:
            return False
        if isinstance(v, str) and type(v) is str and isinstance(default, str):
            nm = self.s.gn if p is self.s.g else self.s.nn
            return nm.mask_string(v, None) == default
        if isinstance(v, bool) or isinstance(default, bool):
            return type(v) is type(default) and v == default
        return type(v) is not str and v == default

    # ------------------------------------------------------------ device refactors
    def device_refactor(self, g: cst.Call, n: cst.Call) -> list | None:
        """A known device refactor between two calls (rules/python.yaml device_refactors):
        [] when masked, a site carrying its diagnosis when it can change numerics, else None."""
        s = self.s
        dr = rules().raw.get("device_refactors") or {}
        td = dr.get("to_device")
        if td and type(g.func) is cst.Attribute and type(n.func) is cst.Attribute \
                and g.func.attr.value in td["methods"] and n.func.attr.value == "to" \
                and s.gn.qualified(g.func) is None and s.gn(g.func.value) == s.nn(n.func.value):
            args = [a for a in n.args if not (a.keyword is not None and a.keyword.value == "non_blocking")]
            if len(args) == 1 and not args[0].star and (args[0].keyword is None or args[0].keyword.value == "device") \
                    and self.is_device(args[0].value):
                gl, nl = s.g.line_of(g), s.n.line_of(n)
                s.add_masked(td["rule"], Side(path=s.g.name, line=gl, source=s.g.text_at(gl)),
                             Side(path=s.n.name, line=nl, source=s.n.text_at(nl)))
                return []
        dc = dr.get("device_count")
        if dc and not g.args and canon_qn(s.gn.callee(g) or "", None) in (dc.get("gpu") or []):
            env = self.env_name(n)
            if env is not None and env in (dc.get("env") or []):
                return [(g, n, ("NOTE", Severity.WARNING,
                                f"torch.cuda.device_count() became ${env}: equal on one node with every device "
                                f"visible, but {env} counts the whole job, so what is derived from it "
                                "(per-device batch, learning-rate scaling) can differ"))]
        return None

    def softmax_cast(self, g: cst.Call, n: cst.Call, ctx) -> list | None:
        """A softmax whose result is cast back (`softmax(x, dtype=torch.float32).to(q.dtype)`,
        `x.float().softmax(-1).type_as(q)`) on one side and not on the other: the cast is the
        fp32 softmax's, so the softmax calls are compared (attention_softmax_in_fp32)."""
        sm = rules().raw.get("softmax_fp32")
        if not sm:
            return None
        s = self.s
        gi, ni = _cast_back(g) or g, _cast_back(n) or n
        if not all(type(x) is cst.Call and match_name(self.callee_name(x, nm), sm.get("calls") or [])
                   for x, nm in ((gi, s.gn), (ni, s.nn))):
            return None
        gf, nf = self.fp32(gi, s.gn), self.fp32(ni, s.nn)
        if gf != nf:  # scores.float().softmax(-1) against scores.softmax(-1)
            callee = self.callee_name(gi if gf else ni, s.gn if gf else s.nn)
            return [(gi, ni, ("HPARAM", sm["key"], gf, nf,
                              f"{callee} is computed in fp32 on {'GPU' if gf else 'NPU'} only: "
                              f"in the input's precision on {'NPU' if gf else 'GPU'}"))]
        if gi is g and ni is n:
            return None
        return self.diff_nodes(gi, ni, ctx)

    def fp32(self, call: cst.Call, nm: Norm) -> bool:
        """The softmax runs in fp32: `dtype=torch.float32`, or its input is `.float()` /
        `.to(torch.float32)` / `.type(torch.float32)`."""
        fp32 = set((rules().raw.get("dtype_names") or {}).get("fp32") or [])

        def is32(node) -> bool:
            q = nm.qualified(node) if type(node) in (cst.Attribute, cst.Name) else None
            return q is not None and q in fp32

        for a in call.args:
            if a.keyword is not None and a.keyword.value == "dtype" and is32(a.value):
                return True
        inputs = []  # the first argument; a method's receiver too (x.float().softmax(-1), self.softmax(x.float()))
        if call.args and call.args[0].keyword is None:
            inputs.append(call.args[0].value)
        if type(call.func) is cst.Attribute and nm.qualified(call.func) is None:
            inputs.append(call.func.value)
        for x in inputs:
            if type(x) is cst.Call and type(x.func) is cst.Attribute:
                m = x.func.attr.value
                if m == "float" and not x.args:
                    return True
                if m in ("to", "type") and x.args and is32(x.args[0].value):
                    return True
        return False

    def is_device(self, node) -> bool:
        """A `.to()` argument that names a device (not a dtype, not a device a tensor of either
        run may be on: rules/devices.yaml `tensor_devices`, the CPU)."""
        p = self.s.n
        r = self.plumb.role(p, node)
        if r is not None and r.what == "device":  # `.to(platform.device_type)`, `.to(f"npu:{rank}")`
            return True
        try:
            v = value(p, node)
        except Exception:
            v = None
        if isinstance(v, str):
            dev = v.split(":", 1)[0]
            if type(v) is str:
                return dev not in ((table().get("python") or {}).get("tensor_devices") or ())
            return kind_of(v) is not Kind.DTYPE and "." not in v  # a name the imports resolve: not a dtype
        if v is not None:
            return isinstance(v, int) and not isinstance(v, bool)
        d = dotted(node) or ""
        return bool(d) and "dtype" not in d.rsplit(".", 1)[-1].lower()

    def env_name(self, node, p=None) -> str | None:
        """RANK_SIZE of `int(os.environ["RANK_SIZE"])`, `os.getenv("RANK_SIZE", 1)`, ..."""
        return env_read(self.s.n if p is None or p is self.s.n else self.s.g, node)

    def dropped_call(self, g, n) -> bool:
        """A call that is a setting by being made (facts.py `present`: `torch.compile(m)`) on one
        side, its first argument as it is on the other (`m`): said by that setting's fact."""
        s = self.s
        for a, b, pa, na, pb in ((g, n, s.g, s.gn, s.nn), (n, g, s.n, s.nn, s.gn)):
            if id(a) in pa.present_calls and type(a) is cst.Call and a.args and a.args[0].keyword is None \
                    and na(a.args[0].value) == pb(b):
                return True
        return False

    def npu_wrapped(self, g, n: cst.Call) -> bool:
        """The NPU side passes the GPU's value through a function named for the NPU (`npu_wrap(x)`,
        `npu_config_proto(config_proto=config)`, from an adapter module or a star import of one),
        as its only argument: the adapter's, masked (SD031)."""
        s = self.s
        name = s.nn.callee(n) or ""
        if not names_npu(name.rsplit(".", 1)[-1]) or len(n.args) != 1 or n.args[0].star:
            return False
        if s.gn(g) != s.nn(n.args[0].value):
            return False
        self._mask(code("device-named-call"), g, n)
        return True

    def same_but_device_keywords(self, g: cst.Call, n: cst.Call) -> bool:
        """The same arguments but for keywords one side alone gives whose name holds a word of that
        side's own device (`_parse_gpu_ids(devices, include_cuda=True)` against `_parse_npu_ids(devices)`)."""
        s = self.s

        def kept(call, nm, fam):  # a word of the device, or its plural (num_gpus_per_node)
            return [nm(a) for a in call.args
                    if a.keyword is None or not any(family_of(w) == fam or w.endswith("s") and family_of(w[:-1]) == fam
                                                    for w in a.keyword.value.split("_"))]

        return kept(g, s.gn, "cuda") == kept(n, s.nn, "npu")

    def device_named_callee(self, g: cst.Call, n: cst.Call) -> bool:
        """Two calls with the same arguments whose functions' names differ only by the word naming
        each side's device (`NcclBackend(mpu)` and `HcclBackend(mpu)`, `comm.nccl.pack` and
        `comm.hccl.pack`, `fused_cuda(x)` and `fused_npu(x)`: rules/aliases.yaml
        `device_value_words`), or the NPU's named by the GPU's name with an NPU word added
        (`run_job(args)` and `run_job_npu(args)`): each device's implementation of one operation,
        masked (SD031)."""
        s = self.s
        gq, nq = s.gn.callee(g), s.nn.callee(n)
        if gq is None or nq is None:
            return False
        gname, nname = canon_qn(gq, None), canon_qn(nq, None)
        gparts, nparts = gname.split("."), nname.split(".")
        if len(gparts) != len(nparts):
            return False
        for a, b in zip(gparts, nparts):
            if a == b:
                continue
            da, db = device_named(a), device_named(b)
            if (da is None or da != db or not names_npu(b) or names_npu(a)) and not npu_variant(a, b):
                return False
        self._mask(code("device-named-call"), g, n)
        return True

    def _mask(self, rule: str, g, n) -> None:
        """A masked edit between two nodes, each side at its line."""
        s = self.s
        gl, nl = s.g.line_of(g), s.n.line_of(n)
        s.add_masked(rule, Side(path=s.g.name, line=gl, source=s.g.text_at(gl)),
                     Side(path=s.n.name, line=nl, source=s.n.text_at(nl)))

    def callee_name(self, call, nm: Norm) -> str:
        q = nm.callee(call)
        if q is not None:
            return canon_qn(q, None)
        s = self.s
        return one_line((s.g if nm is s.gn else s.n).code(call.func), 60)
