"""The device face of the evaluator: what a device test or a device name is on one device.

On the NPU side a device test means "this is an Ascend NPU", on the GPU side "this is a CUDA
GPU"; a test for another device (mps, xpu, mlu, hpu, xla, cpu) is false on both. What is
recognised is data (rules/devices.yaml `devices.python`): calls (`is_torch_npu_available()`,
`torch.cuda.is_available()`), `hasattr(torch, "npu")`, `importlib.util.find_spec("torch_npu")`,
try-import flags, names that hold the run's device (`device.type == "npu"`, `args.device ==
"npu"`), calls returning it (`get_accelerator().device_name()`), and, through the names the
walk of specialisation binds (`Env`), names assigned from those (`IS_NPU = is_npu_available()`,
`DEVICE = "npu" if ... else "cuda"`), dicts keyed by device name (`DTYPES[DEVICE]`) and
functions of the file that return a device name (`get_device()`).

`DeviceEval.ev(node, env)` is a value on this device or UNDECIDED; the idioms each answer was
met through are collected in `hits` (the account says by what each test was decided).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import libcst as cst

from .... import budget
from ....ruleset.devices import family_of, name_words, table
from ....ruleset.rules import RuleSet, derived
from ..parse import Parsed, dotted, kids, match_name, node_index, qualified_name
from ..parse import _block_body as _stmts
from .kinds import (CONSTANTS, MISSING, SPEC, UNDECIDED, DevStr, DictRef, Env, FuncRef, flag_family, named,
                    number, switch_family)

@dataclass
class Prepared:
    calls: list  # [(patterns, family, idiom)]
    attributes: dict  # qualified "torch.npu" -> (family, idiom)
    modules: dict  # module -> (family, idiom)
    find_module: set
    holders: set
    holder_idiom: str
    device_calls: dict  # qualified name -> method or None
    device_calls_idiom: str
    patched_by: list
    tuning: list
    switches: dict
    tensor_devices: set
    masks: dict  # idiom -> the mask rule name of its dead branches (else device-branch)
    own_device: dict  # test/device/ending words of a call asking whether the run's own device is there


@derived
def prepared(rs: RuleSet) -> Prepared:
    py = table(rs).get("python") or {}
    calls = [(list(e.get("match") or []), e["family"], e.get("idiom", "device test")) for e in py.get("calls") or []]
    masks = {e.get("idiom"): e["mask"] for e in py.get("calls") or [] if e.get("mask")}
    attrs = {}
    for e in py.get("attributes") or []:
        for qn in e.get("match") or []:
            attrs[qn] = (e["family"], e.get("idiom", "hasattr"))
    mods = {}
    for e in py.get("modules") or []:
        for m in e.get("match") or []:
            mods[m] = (e["family"], e.get("idiom", "try-import flag"))
    h = py.get("holders") or {}
    dc = py.get("device_calls") or {}
    dcalls = {}
    for m in dc.get("match") or []:
        if "()." in m:
            qn, method = m.split("().", 1)
            dcalls[qn] = method
        else:
            dcalls[m] = None
    return Prepared(calls=calls, attributes=attrs, modules=mods, find_module=set(py.get("find_module") or []),
                    holders=set(h.get("match") or []), holder_idiom=h.get("idiom", "device comparison"),
                    device_calls=dcalls, device_calls_idiom=dc.get("idiom", "device comparison"),
                    patched_by=list((py.get("cuda_on_npu") or {}).get("patched_by") or []),
                    tuning=list(py.get("npu_tuning") or []), switches=dict(py.get("cuda_switches") or {}),
                    tensor_devices=set(py.get("tensor_devices") or ()), masks=masks,
                    own_device=dict(py.get("own_device") or {}))


def device_test(qn: str) -> bool:
    """A function that tests the device (devices.python.calls): its import on one side only is
    device-test plumbing (SD019)."""
    return any(match_name(qn, pats) for pats, _fam, _idiom in prepared().calls)


def tuning(qn: str) -> bool:
    """An NPU-only tuning call or switch (devices.python.npu_tuning)."""
    return any(qn == x or qn.startswith(x + ".") for x in prepared().tuning)


def switch(qn: str) -> dict | None:
    """The CUDA-only switch `qn` names (devices.python.cuda_switches), or None."""
    return prepared().switches.get(qn)


def truth(v):
    if v is UNDECIDED:
        return None
    return bool(v) if v is not MISSING else None


def family_entry(d: cst.Dict, family: str | None):
    """(key, value node) of the first entry of a dict literal whose string key names a device of
    `family` (`{"npu": torch.float16, "cuda": torch.bfloat16}`), else None."""
    if family is None:
        return None
    for el in d.elements:
        if type(el) is cst.DictElement and type(el.key) in (cst.SimpleString, cst.ConcatenatedString):
            ek = el.key.evaluated_value
            if isinstance(ek, str) and family_of(ek) == family:
                return ek, el.value
    return None


class DeviceEval:
    """A file's device tests and device names, evaluated for one device family (module doc)."""

    def __init__(self, p: Parsed, family: str, aware: bool, patched: bool):
        self.p, self.family, self.aware, self.patched = p, family, aware, patched
        self.t = prepared()
        self.saw_npu = False  # an NPU test was met (the file tests for the NPU itself)
        self.saw_test = False  # any device test or device name was met
        self.cuda_on_npu = False  # a CUDA test was decided on the NPU side
        self.hits: list = []
        self.region = 0  # > 0 inside code whose running is not decided (the walk's)
        self.test_reads: Counter = Counter()  # flag name -> reads inside device tests
        self.testing = False
        self.module = Env()  # the module's names, as the walk of specialisation binds them
        self.fvalues: dict[int, object] = {}
        self.calling: set = set()
        self.call_memo: dict = {}  # qualified callee -> (family, idiom) of the device test it is, or None

    def test(self, node, env: Env):
        """The truth of a test on this device (None: not decided); the idioms met are in hits."""
        self.testing = True
        try:
            return truth(self.ev(node, env))
        finally:
            self.testing = False

    def module_family(self, qn: str):
        top = qn.lstrip(".")
        for m, fi in self.t.modules.items():
            if top == m or top.startswith(m + "."):
                return fi
        return None

    # ------------------------------------------------------------------ values
    def answer(self, family: str, idiom: str):
        """A test for `family` on this device."""
        self.hits.append(idiom)
        self.saw_test = True
        if family == "npu":
            self.saw_npu = True
        if family == "cuda" and self.family == "npu":
            self.cuda_on_npu = True
            return self.patched or not self.aware
        return family == self.family

    def switch(self, family: str) -> bool:
        """A setting's switch for `family` (`cfg.use_gpu`): on each run only its own device's is on.
        No library patches a setting, so unlike a CUDA test it is off on the NPU run even where
        CUDA calls are routed to the NPU."""
        self.hits.append("device switch")
        self.saw_test = True
        if family == "npu":
            self.saw_npu = True
        return family == self.family

    def device_part(self, node: cst.Subscript, env, depth: int):
        """`X.split(":")[0]` of a device name X (`paddle.get_device()` is "npu:0"): its type."""
        v = node.value
        if len(node.slice) != 1 or type(node.slice[0].slice) is not cst.Index \
                or type(node.slice[0].slice.value) is not cst.Integer or node.slice[0].slice.value.value != "0" \
                or type(v) is not cst.Call or type(v.func) is not cst.Attribute or v.func.attr.value != "split" \
                or len(v.args) != 1:
            return UNDECIDED
        whole = self.ev(v.func.value, env, depth + 1)
        sep = self.ev(v.args[0].value, env, depth + 1)
        if not isinstance(whole, str) or not isinstance(sep, str) or not sep:
            return UNDECIDED
        return DevStr.of(whole.split(sep, 1)[0], getattr(whole, "exact", True))

    def run_device(self, idiom: str) -> DevStr:
        self.hits.append(idiom)
        self.saw_test = True
        return DevStr.of("npu" if self.family == "npu" else "cuda", False)

    def run_backend(self) -> str:
        """The run's process-group backend, held by an imported object's attribute whose words say so
        (`platform.communication_backend`), in a test (a parameter called backend is no device test)."""
        self.hits.append("backend comparison")
        self.saw_test = True
        return "hccl" if self.family == "npu" else "nccl"

    def qualified(self, node) -> str | None:
        return qualified_name(self.p, node)

    def ev(self, node, env: Env, depth: int = 0):
        if depth > budget.DEVICE_TEST_DEPTH:
            return UNDECIDED
        t = type(node)
        if t is cst.Name:
            v = node.value
            if v in CONSTANTS:
                return CONSTANTS[v]
            got = self.lookup(v, env)
            if got is not MISSING:
                return got
            if v in self.t.holders or named(v) == "device":
                return self.run_device(self.t.holder_idiom)
            if v in self.p.aliases and flag_family(v) is not None:  # from utils import TORCH_NPU_AVAILABLE
                return self.answer(flag_family(v), "imported device flag")
            if switch_family(v) is not None and v not in self.tested_names():
                return self.switch(switch_family(v))  # use_npu = cfg.get("use_npu", False), not decided by the walk
            return UNDECIDED
        if t is cst.Attribute:
            d = dotted(node)
            if d is not None and (d in self.t.holders or d.count(".") == 1 and d.startswith("self.")
                                  and named(d) == "device"):  # self._device, self.target_device
                return self.run_device(self.t.holder_idiom)
            if self.testing and d is not None and d.count(".") == 1 and d.startswith("self.") \
                    and named(d) == "backend":  # `self.comm_backend_name == "nccl"`: the run's own
                return self.run_backend()
            got = self.lookup(d, env) if d is not None else MISSING  # self.is_npu, Env.DEVICE: bound by the walk
            if got is not MISSING:
                return got
            if d is not None and switch_family(d) is not None:  # cfg.use_npu: on each run, its own device's
                return self.switch(switch_family(d))
            q = self.qualified(node) if self.testing and named(node.attr.value) == "backend" else None
            if q is not None and not q.startswith("torch."):  # `platform.communication_backend == "nccl"`:
                return self.run_backend()  # an imported platform object's backend, in a test
            if node.attr.value == "type":
                v = self.ev(node.value, env, depth + 1)
                if isinstance(v, str):
                    return DevStr.of(v.split(":", 1)[0], True)
                return UNDECIDED
            return UNDECIDED
        if t in (cst.SimpleString, cst.ConcatenatedString):
            try:
                v = node.evaluated_value
            except Exception:
                return UNDECIDED
            return v if isinstance(v, str) else UNDECIDED
        if t in (cst.Integer, cst.Float):
            try:
                return number(node.value)
            except (ValueError, SyntaxError):
                return UNDECIDED
        if t is cst.FormattedString:
            v = fstring_device(node)
            return UNDECIDED if v is None else v
        if t is cst.Subscript:  # device.split(":")[0]: the name of a device without its index
            return self.device_part(node, env, depth)
        if t is cst.Call:
            return self.call(node, env, depth)
        if t is cst.Comparison:
            return self.compare(node, env, depth)
        if t is cst.UnaryOperation and type(node.operator) is cst.Not:
            v = truth(self.ev(node.expression, env, depth + 1))
            return UNDECIDED if v is None else (not v)
        if t is cst.BooleanOperation:  # short-circuit, with an operand not decided
            stop = type(node.operator) is cst.Or  # the truth that decides: False for `and`, True for `or`
            left = self.ev(node.left, env, depth + 1)
            lt = truth(left)
            if lt is stop:
                return left
            right = self.ev(node.right, env, depth + 1)
            if lt is not None:
                return right
            return stop if truth(right) is stop else UNDECIDED
        if t is cst.IfExp:
            v = truth(self.ev(node.test, env, depth + 1))
            if v is None:
                return UNDECIDED
            return self.ev(node.body if v else node.orelse, env, depth + 1)
        if t in (cst.Tuple, cst.List, cst.Set):
            return tuple(self.ev(e.value, env, depth + 1) for e in node.elements)
        if t is cst.Dict:
            return DictRef(node)
        if t is cst.Subscript:
            entry = self.entry(node, env, depth)
            return self.ev(entry, env, depth + 1) if entry is not None else UNDECIDED
        return UNDECIDED

    def tested_names(self) -> frozenset:
        """Names the file assigns from a test (`use_cuda = device_type == "cuda"`): their value is
        that test's, decided by the walk or not at all, never a setting's switch by its name."""
        got = getattr(self, "_tested", None)
        if got is None:
            got = self._tested = frozenset(
                x.target.value for a in node_index(self.p).assigns
                if type(a.value) in (cst.Comparison, cst.BooleanOperation, cst.UnaryOperation)
                for x in a.targets if type(x.target) is cst.Name)
        return got

    def lookup(self, name: str, env: Env):
        """A name's value as the walk bound it (its idiom counted in hits), MISSING when not decided."""
        got = env.get(name)
        if got is MISSING or got[0] is UNDECIDED:
            return MISSING
        if got[1]:
            self.hits.append(got[1])
            if self.testing:
                self.test_reads[name] += 1
            if "npu" in got[1].lower():
                self.saw_npu = True
        return got[0]

    def entry(self, node: cst.Subscript, env: Env, depth: int = 0):
        """The value node of `D[key]` for a dict literal D and a key that is this device's name."""
        if len(node.slice) != 1 or type(node.slice[0].slice) is not cst.Index:
            return None
        d = self.ev(node.value, env, depth + 1)
        if type(d) is not DictRef:
            return None
        h0 = len(self.hits)
        key = self.ev(node.slice[0].slice.value, env, depth + 1)
        if not isinstance(key, str) or len(self.hits) == h0:
            return None
        hit = family_entry(d.node, family_of(key))
        return hit[1] if hit is not None else None

    def call(self, node: cst.Call, env: Env, depth: int):
        f = node.func
        qn = self.qualified(f) or dotted(f)
        args = [a for a in node.args if a.keyword is None and not a.star]
        if qn is not None:
            hit = self.call_memo.get(qn, MISSING)
            if hit is MISSING:
                hit = self.call_memo[qn] = next(((fam, idiom) for pats, fam, idiom in self.t.calls
                                                 if match_name(qn, pats)), None)
            if hit is not None:
                return self.answer(*hit)
            if qn == "hasattr" and len(args) == 2 and "hasattr" not in self.p.aliases:
                obj = self.qualified(args[0].value) or dotted(args[0].value)
                name = self.ev(args[1].value, env, depth + 1)
                if obj is not None and isinstance(name, str):
                    hit = self.t.attributes.get(f"{obj}.{name}")
                    if hit is not None:
                        return self.answer(hit[0], hit[1])
                return UNDECIDED
            if qn in self.t.find_module and args:
                name = self.ev(args[0].value, env, depth + 1)
                hit = self.module_family(name) if isinstance(name, str) else None
                if hit is not None:
                    return SPEC if self.answer(hit[0], hit[1]) else None
                return UNDECIDED
            if qn in self.t.device_calls and self.t.device_calls[qn] is None:
                return self.run_device(self.t.device_calls_idiom)
            if qn in ("torch.device",) and args:
                v = self.ev(args[0].value, env, depth + 1)
                return v if isinstance(v, str) else UNDECIDED
            if qn == "str" and len(args) == 1 and "str" not in self.p.aliases:
                v = self.ev(args[0].value, env, depth + 1)
                return v if isinstance(v, str) else UNDECIDED
            if not args and self.qualified(f) is not None and flag_family(qn) is not None \
                    and not qn.startswith("torch."):  # platform.is_npu(): an imported object's device test
                return self.answer(flag_family(qn), "imported device flag")
            got = env.get(qn) if "." not in qn else MISSING
            if (got is MISSING or type(got[0]) is not FuncRef) and self.own_device(qn, node, env, depth):
                return self.answer(self.family, self.t.own_device.get("idiom", "own device"))
            if got is not MISSING and type(got[0]) is FuncRef:
                v = self.function(got[0].node)
                if v is not UNDECIDED and isinstance(v, (str, bool)):
                    self.hits.append("device helper function")
                return v
        if type(f) is cst.Attribute:
            meth = f.attr.value
            if type(f.value) is cst.Call:
                inner = self.qualified(f.value.func) or dotted(f.value.func)
                if inner in self.t.device_calls and self.t.device_calls[inner] == meth:
                    return self.run_device(self.t.device_calls_idiom)
            if meth in ("startswith", "endswith") and len(args) == 1:
                v = self.ev(f.value, env, depth + 1)
                s = self.ev(args[0].value, env, depth + 1)
                if isinstance(v, str) and isinstance(s, str):
                    if isinstance(v, DevStr) and not v.exact and meth == "endswith":
                        return UNDECIDED
                    return v.startswith(s) if meth == "startswith" else v.endswith(s)
                return UNDECIDED
            if meth in ("lower", "upper", "strip", "__str__") and not args:
                v = self.ev(f.value, env, depth + 1)
                if isinstance(v, str):
                    return DevStr.of(getattr(str(v), meth)(), getattr(v, "exact", True))
                return UNDECIDED
        return UNDECIDED

    def own_device(self, qn: str, node: cst.Call, env: Env, depth: int) -> bool:
        """`has_accel_available(device_type)`, `is_accelerator_available()` of a module not read
        (devices.python.own_device): whether the run's own device is there, given nothing or only
        the run's device. Never a function of torch (its own tests are listed by name)."""
        spec = self.t.own_device
        if not spec or qn.startswith("torch."):
            return False
        ws = name_words(qn.rsplit(".", 1)[-1])
        if len(ws) < 3 or ws[0] not in spec.get("test", ()) or ws[-1] not in spec.get("ending", ()) \
                or not all(w in spec.get("device", ()) for w in ws[1:-1]):
            return False
        for a in node.args:
            if a.keyword is not None or a.star:
                return False
            h0 = len(self.hits)
            v = self.ev(a.value, env, depth + 1)
            if not isinstance(v, DevStr) or len(self.hits) == h0 or family_of(v) != self.family:
                return False
        return True

    def function(self, node: cst.FunctionDef):
        """What a function of the file returns on this device, when that is one value."""
        k = id(node)
        if k in self.fvalues:
            return self.fvalues[k]
        if k in self.calling or any(p.default is None for p in node.params.params):
            return UNDECIDED  # a function that calls itself, or needs its caller's arguments: unknown
        if len(self.calling) >= budget.CALL_DEPTH:  # helpers calling helpers past the bound: unknown,
            self.hits.append(f"helpers called more than {budget.CALL_DEPTH} deep")  # and said
            return UNDECIDED
        self.calling.add(k)
        hits, region = self.hits, self.region
        self.hits, self.region = [], 0
        try:
            env = Env(self.module)
            for prm in params(node):
                env.vars[prm] = (UNDECIDED, None)
            v = self.returns(_stmts(node.body), env)
            found = list(self.hits)
        finally:
            self.calling.discard(k)
            self.hits, self.region = hits, region
        if not found or v is MISSING:  # a function that tests no device, or returns nothing
            v = UNDECIDED
        self.hits.extend(found)
        self.fvalues[k] = v
        return v

    def returns(self, stmts, env: Env):
        """The value the first `return` reached returns (MISSING: none is reached)."""
        for s in stmts:
            t = type(s)
            if t is cst.SimpleStatementLine:
                for small in s.body:
                    if type(small) is cst.Return:
                        return UNDECIDED if small.value is None else self.ev(small.value, env)
                    if type(small) is cst.Raise:
                        return UNDECIDED
                    if type(small) is cst.Assign and len(small.targets) == 1 \
                            and type(small.targets[0].target) is cst.Name:
                        env.vars[small.targets[0].target.value] = (self.ev(small.value, env), None)
            elif t is cst.If:
                chosen = self.live_clause(s, env)
                if chosen is UNDECIDED and _has_return(s):
                    return UNDECIDED
                if chosen is not None and chosen is not UNDECIDED:
                    v = self.returns(chosen, env)
                    if v is not MISSING:
                        return v
            elif t is cst.Try and self.try_live(s) is not None:  # try: import torch_npu ... except ImportError
                v = self.returns(self.try_live(s), env)
                if v is not MISSING:
                    return v
            elif _has_return(s):
                return UNDECIDED
        return MISSING

    def live_clause(self, node: cst.If, env: Env):
        """The block of an if/elif/else chain this device runs, None when no clause runs, or
        UNDECIDED when a test on the way cannot be decided."""
        o = node
        while o is not None:
            if type(o) is not cst.If:
                return _stmts(o.body)
            v = truth(self.ev(o.test, env))
            if v is None:
                return UNDECIDED
            if v:
                return _stmts(o.body)
            o = o.orelse
        return None

    def try_live(self, node: cst.Try) -> list | None:
        """The statements a try-import runs on this device (decider.Decider knows them), or None."""
        return None

    def live_path(self, stmts, env: Env, out: list) -> bool | None:
        """What a call of a file's function does on this device, its parameters bound in `env`:
        the expression statements it runs and the `return` it reaches are appended to `out` (True:
        a return was reached; False: the end of the block). None when it cannot be told: a test that
        cannot be decided, a name assigned that is not a parameter (its value would have to be
        followed), a loop, a `with`, a nested function, anything but those few shapes."""
        for s in stmts:
            t = type(s)
            if t is cst.SimpleStatementLine:
                for small in s.body:
                    ts = type(small)
                    if ts is cst.Return:
                        out.append(small)
                        return True
                    if ts is cst.Pass or ts is cst.Expr and type(small.value) in (cst.SimpleString,
                                                                                  cst.ConcatenatedString):
                        continue  # a docstring
                    if ts is cst.Expr:
                        out.append(small)
                        continue
                    if ts is cst.Assign and all(type(x.target) is cst.Name and x.target.value in env.vars
                                                for x in small.targets):  # `kind = kind or probe()`: a parameter
                        v = self.ev(small.value, env)
                        for x in small.targets:
                            env.vars[x.target.value] = (v, "reassigned")
                        continue
                    return None
            elif t is cst.If:
                chosen = self.live_clause(s, env)
                if chosen is UNDECIDED:
                    return None
                if chosen is not None:
                    got = self.live_path(chosen, env, out)
                    if got is not False:
                        return got
            elif t is cst.Try and self.try_live(s) is not None and s.finalbody is None:
                got = self.live_path(self.try_live(s), env, out)
                if got is not False:
                    return got
            else:
                return None
        return False

    def compare(self, node: cst.Comparison, env: Env, depth: int):
        if len(node.comparisons) != 1:
            return UNDECIDED
        c = node.comparisons[0]
        op = type(c.operator)
        h0 = len(self.hits)
        left = self.ev(node.left, env, depth + 1)
        right = self.ev(c.comparator, env, depth + 1)
        if op in (cst.Equal, cst.NotEqual) and (left is UNDECIDED) != (right is UNDECIDED):
            known, expr = (right, node.left) if left is UNDECIDED else (left, c.comparator)
            fam = family_of(known) if isinstance(known, str) and not isinstance(known, DevStr) else None
            if fam is not None and len(self.hits) == h0:
                name = known.split(":", 1)[0].lower()
                if fam == "other" and name not in self.t.tensor_devices and _devicelike(expr):
                    # x.device.type == "mps": no tensor of a CUDA or an NPU run is on that device
                    self.hits.append("another device's name")
                    return op is cst.NotEqual
                self.hits.append("device name compared")  # left as written: the account says so
        if left is UNDECIDED or right is UNDECIDED:
            return UNDECIDED
        if op in (cst.Equal, cst.NotEqual):
            eq = _same_device(left, right)
            if eq is None:
                return UNDECIDED
            return eq if op is cst.Equal else not eq
        if op in (cst.In, cst.NotIn):
            if isinstance(right, tuple):
                res = [_same_device(left, x) for x in right]
                got = True if any(r is True for r in res) else (None if any(r is None for r in res) else False)
            elif isinstance(right, str) and isinstance(left, str):
                if isinstance(right, DevStr) and not right.exact and ":" in left:
                    return UNDECIDED
                got = left in right
            else:
                return UNDECIDED
            if got is None:
                return UNDECIDED
            return got if op is cst.In else not got
        if op in (cst.Is, cst.IsNot):
            if right is None or left is None:
                same = left is right
                return same if op is cst.Is else not same
        return UNDECIDED


def fstring_device(node: cst.FormattedString) -> DevStr | None:
    """f"npu:{rank}", f"cuda:{i}": a device of that type, its index not known; else None."""
    head = node.parts[0] if node.parts else None
    if type(head) is cst.FormattedStringText and ":" in head.value:
        base = head.value.split(":", 1)[0]
        if family_of(base) is not None:
            return DevStr.of(base, False)
    return None


def _devicelike(node) -> bool:
    """`x.device`, `x.device.type`, `device`, `self.device_type`: an expression naming a device."""
    d = dotted(node)
    if d is None and type(node) is cst.Call and type(node.func) is cst.Name and node.func.value == "str" and node.args:
        d = dotted(node.args[0].value)
    if d is None:
        return False
    parts = d.split(".")
    if parts[-1] == "type":
        parts = parts[:-1]
    return bool(parts) and "device" in parts[-1].lower()


def _same_device(a, b):
    """a == b for device names: True, False, or None (cannot say)."""
    if isinstance(a, str) and isinstance(b, str):
        if isinstance(a, DevStr) and not a.exact or isinstance(b, DevStr) and not b.exact:
            fa, fb = family_of(a), family_of(b)
            ba, bb = a.split(":", 1)[0].lower(), b.split(":", 1)[0].lower()
            if fa is None or fb is None:
                return False if fa != fb else (ba == bb or None)
            if fa != fb or (fa == "other" and ba != bb):
                return False
            inexact = [x for x in (a, b) if isinstance(x, DevStr) and not x.exact]
            other = b if a in inexact else a
            return None if ":" in other and len(inexact) == 1 else True
        return a == b
    if a is UNDECIDED or b is UNDECIDED:
        return None
    try:
        return a == b
    except Exception:
        return None


def params(node: cst.FunctionDef) -> list[str]:
    ps = node.params
    out = [p.name.value for p in list(ps.params) + list(ps.kwonly_params) + list(ps.posonly_params)]
    for p in (ps.star_arg, ps.star_kwarg):
        if isinstance(p, cst.Param):
            out.append(p.name.value)
    return out


def _has_return(node) -> bool:
    stack = [node]
    while stack:
        x = stack.pop()
        if type(x) is cst.Return:
            return True
        if type(x) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            if x is not node:
                continue
        stack.extend(kids(x))
    return False
