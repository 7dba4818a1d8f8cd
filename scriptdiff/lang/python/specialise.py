"""A parsed Python file read as the program one device runs (docs/devices.md).

Upstream scripts support Ascend by keeping the CUDA code and adding the NPU code beside it
behind a device test. Before facts are read and code is compared, each side is specialised
to its device: on the NPU side a device test means "this is an Ascend NPU", on the GPU side
"this is a CUDA GPU"; a test for another device (mps, xpu, mlu, hpu, xla, cpu) is false on
both. What is recognised is data (rules/devices.yaml `devices.python`): calls
(`is_torch_npu_available()`, `torch.cuda.is_available()`), `hasattr(torch, "npu")`,
`importlib.util.find_spec("torch_npu")`, try-import flags, names that hold the run's device
(`device.type == "npu"`, `args.device == "npu"`), calls returning it
(`get_accelerator().device_name()`), and, followed through the file, names assigned from
those (`IS_NPU = is_npu_available()`, `DEVICE = "npu" if ... else "cuda"`) and functions
of the file that return a device name (`get_device()`).

`specialise(p, side)` runs in two steps. `Decider` walks the libcst tree in execution order
(module-level code first, then the bodies of functions with the module's final names) and
decides every `if`/`elif` chain, try-import and conditional expression whose test it can
evaluate, for this side's device and for the other (a branch that only raises on the other
device makes this side's branch set aside too: an option the other device refuses has no
counterpart there). Then the statement lists the reader built (parse.St) are rewritten: a
decided `if` becomes the statements of its live clause, the other clauses are set aside
(their lines listed as SD019 masks, their calls read for no facts), a decided conditional
expression reads as its live operand (parse.Norm, facts), and the statements that hold a
specialised part are marked so that text equality does not skip them. A test that cannot be
decided stays as written (both branches compared), and the input's account says so.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import libcst as cst

from ... import budget
from ...ruleset.devices import family_of, side_family, table
from ...ruleset.rules import RuleSet, derived
from .parse import Parsed, St, dotted, fields_of, import_items, match_name, qualified_name
from .parse import _block_body as _stmts


class _Undecided:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNDECIDED"


UNDECIDED = _Undecided()
MISSING = object()
SPEC = object()  # what find_spec returns for an installed module (truthy, not None)
MODULE = object()  # a module imported by a try-import that succeeds on this device


class DevStr(str):
    """A device name as the program holds it: a literal ("npu:0"), or only its type known
    (the run's device, `f"npu:{rank}"`): `exact` is False then."""

    exact: bool = True

    @classmethod
    def of(cls, s: str, exact: bool) -> "DevStr":
        v = cls(s)
        v.exact = exact
        return v


class FuncRef:
    __slots__ = ("node",)

    def __init__(self, node):
        self.node = node


class DictRef:
    """A dict literal bound to a name (`DTYPES = {"npu": torch.float16, "cuda": torch.bfloat16}`)."""

    __slots__ = ("node",)

    def __init__(self, node):
        self.node = node


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
                    tensor_devices=set(py.get("tensor_devices") or ()), masks=masks)


@dataclass
class Specialised:
    """What specialising one file to its device gave (Parsed.spec)."""

    side: str
    family: str
    live: dict = field(default_factory=dict)  # id(IfExp or DTYPES[device]) -> the node this device evaluates
    devices: dict = field(default_factory=dict)  # id(node) -> the device name it holds (DEVICE, get_device())
    dead_calls: set = field(default_factory=set)  # ids of calls in code set aside (no facts)
    set_aside: list = field(default_factory=list)  # (line, why, mask rule name) of each statement set aside
    plumbing: set = field(default_factory=set)  # ids of statements that define or import a device test
    skipped: dict = field(default_factory=dict)  # first line of a statement set aside -> line of its test
    tests: int = 0  # device tests decided (an if/elif chain, a try-import, a conditional expression, D[device])
    decided: Counter = field(default_factory=Counter)  # idiom -> decided tests it was met in
    undecided: list = field(default_factory=list)  # (line, test text) of device tests left as written
    decider: object = None  # the Decider of this side (device_key evaluates with its names)

    def note(self) -> str | None:
        """The account's note: what was decided for this device, and what was left as written."""
        if not self.tests and not self.undecided:
            return None
        dev = "NPU" if self.side == "npu" else "GPU"
        n = self.tests
        parts = [f"device tests read for the {dev}: {n} decided"
                 + (f" (by {', '.join(f'{k} {v}' for k, v in sorted(self.decided.items()))})" if n else "")]
        if self.undecided:
            shown = "; ".join(f"line {ln}: {txt}" for ln, txt in self.undecided[:4])
            more = f" and {len(self.undecided) - 4} more" if len(self.undecided) > 4 else ""
            parts.append(f"{len(self.undecided)} not decided, compared as written ({shown}{more})")
        return ", ".join(parts)


class Env:
    """Names bound in one scope (module, function), each with the idiom it came from."""

    __slots__ = ("vars", "parent")

    def __init__(self, parent: "Env | None" = None):
        self.vars: dict[str, tuple] = {}
        self.parent = parent

    def get(self, name: str):
        e = self
        while e is not None:
            if name in e.vars:
                return e.vars[name]
            e = e.parent
        return MISSING


def _truth(v):
    if v is UNDECIDED:
        return None
    return bool(v) if v is not MISSING else None


def _short(p: Parsed, node, limit: int = 60) -> str:
    s = " ".join(p.code(node).split())
    return s if len(s) <= limit else s[: limit - 3] + "..."


class Decider:
    """Decides a file's device tests for one device family (see the module doc)."""

    def __init__(self, p: Parsed, family: str, aware: bool, patched: bool):
        self.p, self.family, self.aware, self.patched = p, family, aware, patched
        self.t = prepared()
        self.ifs: dict[int, int] = {}  # id(If) -> index of its live clause (-1: none)
        self.tries: dict[int, tuple] = {}  # id(Try) -> ("body", None) | ("handler", index)
        self.exps: dict[int, bool] = {}  # id(IfExp) -> its test's value
        self.clause_idioms: dict[int, list] = {}  # id(If) -> the idioms of each clause's test
        self.idioms: dict[int, list] = {}  # id(decided node) -> idioms of its test
        self.undecided: dict[int, tuple] = {}  # id(node) -> (line, text) of a device test left as written
        self.saw_npu = False  # an NPU test was met (the file tests for the NPU itself)
        self.cuda_on_npu = False  # a CUDA test was decided on the NPU side
        self.hits: list = []
        self.region = 0  # > 0 inside code whose running is not decided
        self.within: list = []  # idioms of the decided device branches being walked
        self.test_reads: Counter = Counter()  # flag name -> reads inside device tests
        self.testing = False
        self.module = Env()
        self.deferred: list = []  # (FunctionDef or ClassDef, its enclosing Env)
        self.fvalues: dict[int, object] = {}
        self.calling: set = set()
        self.local_binds: set = set()  # names some function or class binds (shadowed)
        self.call_memo: dict = {}  # qualified callee -> (family, idiom) of the device test it is, or None

    # ------------------------------------------------------------------ walking
    def run(self) -> "Decider":
        if self.p.module is None:
            return self
        self.block(self.p.module.body, self.module)
        while self.deferred:
            node, env = self.deferred.pop(0)
            self.body(node, env)
        return self

    def body(self, node, env: Env) -> None:
        local = Env(env)
        if type(node) is cst.FunctionDef:
            for prm in _params(node):
                local.vars[prm] = (UNDECIDED, None)
                self.local_binds.add(prm)
        self.block(_stmts(node.body), local)

    def block(self, stmts, env: Env) -> None:
        for s in stmts:
            self.stmt(s, env)

    def shadowed(self) -> set:
        """The names some function or class of the file binds (they shadow module names there):
        collected by the walk itself."""
        return self.local_binds

    def stmt(self, node, env: Env) -> None:
        t = type(node)
        if t is cst.SimpleStatementLine or t is cst.SimpleStatementSuite:
            for small in node.body:
                self.small(small, env)
        elif t is cst.If:
            self.if_chain(node, env)
        elif t is cst.Try:
            self.try_stmt(node, env)
        elif t is cst.FunctionDef:
            self.bind(env, node.name.value, FuncRef(node), None)
            self.exprs(node.decorators, env)
            self.deferred.append((node, env))
        elif t is cst.ClassDef:
            self.bind(env, node.name.value, UNDECIDED, None)
            self.deferred.append((node, env))
        else:  # for, while, with, match, try*: their blocks in order, not decided
            if t is cst.For:
                for n in _bound_names(node.target):
                    self.bind(env, n, UNDECIDED, None)
            for f in ("iter", "test", "items", "subject"):
                v = getattr(node, f, None)
                if v is not None:
                    self.exprs(v, env)
            self.undecided_blocks(_blocks(node), env)

    def undecided_blocks(self, blocks, env: Env) -> None:
        """Blocks that may or may not run: walked in order, what they bind known only if it agrees."""
        self.region += 1
        try:
            for blk in blocks:
                self.block(blk, env)
        finally:
            self.region -= 1

    def small(self, small, env: Env) -> None:
        t = type(small)
        self.exprs(small, env)
        if t is cst.Assign:
            names = [x.target.value for x in small.targets if type(x.target) is cst.Name]
            if len(names) == len(small.targets):
                self.hits = []
                v = self.ev(small.value, env)
                idiom = f"flag ({self.hits[0]})" if self.hits and not self.hits[0].startswith("flag") else \
                    (self.hits[0] if self.hits else None)
                for n in names:
                    self.bind(env, n, v, idiom)
            else:
                for x in small.targets:
                    for n in _bound_names(x.target):
                        self.bind(env, n, UNDECIDED, None)
        elif t is cst.AnnAssign and type(small.target) is cst.Name and small.value is not None:
            self.hits = []
            v = self.ev(small.value, env)
            self.bind(env, small.target.value, v, self.hits[0] if self.hits else None)
        elif t is cst.AugAssign:
            for n in _bound_names(small.target):
                self.bind(env, n, UNDECIDED, None)

    def bind(self, env: Env, name: str, value, idiom) -> None:
        if env is not self.module:
            self.local_binds.add(name)
        if idiom is None and self.within and (value is None or isinstance(value, (bool, str))):
            idiom = f"flag ({self.within[-1]})"  # USE_NPU_FA = True in the NPU branch
        if self.region:  # bound in code that may not run: known only if it agrees
            old = env.vars.get(name)
            if old is None or old[0] is UNDECIDED or value is UNDECIDED or old[0] != value:
                env.vars[name] = (UNDECIDED, None)
                return
        env.vars[name] = (value, idiom)

    def exprs(self, node, env: Env) -> None:
        """Decide the conditional expressions in `node` (not inside nested functions)."""
        stack = [node] if not isinstance(node, (list, tuple)) else list(node)
        if not any(_may_have_ifexp(self.p, x) for x in stack):
            return
        while stack:
            x = stack.pop()
            if type(x) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
                continue
            if type(x) is cst.IfExp:
                self.hits = []
                v = self.test(x.test, env)
                hits = self.hits
                if hits and v is not None:
                    self.exps[id(x)] = v
                    self.idioms[id(x)] = list(hits)
                    stack.append(x.body if v else x.orelse)
                    stack.append(x.test)
                    continue
                if hits:
                    self.undecided[id(x)] = (self.p.line_of(x), _short(self.p, x.test))
            stack.extend(_kids(x))

    # ------------------------------------------------------------------ decisions
    def test(self, node, env: Env):
        """The truth of a test on this device (None: not decided); the idioms met are in hits."""
        self.testing = True
        try:
            return _truth(self.ev(node, env))
        finally:
            self.testing = False

    def if_chain(self, node: cst.If, env: Env) -> None:
        clauses = []  # (test or None, block, node)
        o = node
        while o is not None:
            if type(o) is cst.If:
                clauses.append((o.test, _stmts(o.body), o))
                o = o.orelse
            else:
                clauses.append((None, _stmts(o.body), o))
                o = None
        live = None
        idioms: list = []
        per: list = []
        for i, (test, _blk, cnode) in enumerate(clauses):
            if test is None:
                live = i
                break
            self.hits = []
            v = self.test(test, env)
            hits = self.hits
            if not hits or v is None:
                if hits and v is None:
                    self.undecided[id(node)] = (self.p.line_of(cnode), _short(self.p, test))
                live = "undecided"
                break
            idioms += hits
            per.append(list(hits))
            self.exprs(test, env)
            if v:
                live = i
                break
        else:
            live = -1
        if live == "undecided":
            self.exprs([c[0] for c in clauses if c[0] is not None], env)
            self.undecided_blocks([blk for _t, blk, _n in clauses], env)
            return
        self.ifs[id(node)] = live
        self.idioms[id(node)] = idioms
        self.clause_idioms[id(node)] = per
        hits = self.hits
        for test, _blk, _n in clauses[len(per):]:  # not reached here: read for what they test (saw_npu)
            if test is not None:
                self.hits = []
                self.ev(test, env)
        self.hits = hits
        if live >= 0:
            self.within.append(_origin(idioms))
            try:
                self.block(clauses[live][1], env)
            finally:
                self.within.pop()

    def try_stmt(self, node: cst.Try, env: Env) -> None:
        fam, idiom, at = self.try_import(node)
        if fam is None:
            self.undecided_blocks(_blocks(node), env)
            return
        body = _stmts(node.body)
        if fam == self.family:
            self.tries[id(node)] = ("body", None)
            self.idioms[id(node)] = [idiom]
            self.within.append(idiom)
            try:
                for s in body:
                    self.stmt(s, env)
                    self.bind_imports(s, env, idiom)
                if node.orelse is not None:
                    self.block(_stmts(node.orelse.body), env)
            finally:
                self.within.pop()
        else:
            h = next((i for i, hd in enumerate(node.handlers) if _catches_import_error(hd)), None)
            if h is None:
                self.undecided_blocks(_blocks(node), env)
                return
            self.tries[id(node)] = ("handler", h)
            self.idioms[id(node)] = [idiom]
            self.block(body[:at], env)
            self.within.append(idiom)
            try:  # what the handler binds is this device's value of the flag
                self.block(_stmts(node.handlers[h].body), env)
            finally:
                self.within.pop()
        if node.finalbody is not None:
            self.block(_stmts(node.finalbody.body), env)

    def try_import(self, node: cst.Try):
        """(family, idiom, index of the import) when the try's body imports a device's module."""
        for i, s in enumerate(_stmts(node.body)):
            if type(s) is not cst.SimpleStatementLine:
                continue
            for small in s.body:
                if type(small) not in (cst.Import, cst.ImportFrom):
                    continue
                for _b, qn in import_items(small):
                    hit = self.module_family(qn)
                    if hit is not None:
                        return hit[0], hit[1], i
        return None, None, None

    def module_family(self, qn: str):
        top = qn.lstrip(".")
        for m, fi in self.t.modules.items():
            if top == m or top.startswith(m + "."):
                return fi
        return None

    def bind_imports(self, s, env: Env, idiom: str) -> None:
        if type(s) is not cst.SimpleStatementLine:
            return
        for small in s.body:
            if type(small) in (cst.Import, cst.ImportFrom):
                for b, _qn in import_items(small):
                    if b != "*":
                        env.vars[b.split(".")[0]] = (MODULE, f"flag ({idiom})")

    # ------------------------------------------------------------------ values
    def answer(self, family: str, idiom: str):
        """A test for `family` on this device."""
        self.hits.append(idiom)
        if family == "npu":
            self.saw_npu = True
        if family == "cuda" and self.family == "npu":
            self.cuda_on_npu = True
            return self.patched or not self.aware
        return family == self.family

    def run_device(self, idiom: str) -> DevStr:
        self.hits.append(idiom)
        return DevStr.of("npu" if self.family == "npu" else "cuda", False)

    def qualified(self, node) -> str | None:
        return qualified_name(self.p, node)

    def ev(self, node, env: Env, depth: int = 0):
        if depth > budget.DEVICE_TEST_DEPTH:
            return UNDECIDED
        t = type(node)
        if t is cst.Name:
            v = node.value
            if v in ("True", "False", "None"):
                return {"True": True, "False": False, "None": None}[v]
            got = env.get(v)
            if got is not MISSING and got[0] is not UNDECIDED:
                if got[1]:
                    self.hits.append(got[1])
                    if self.testing:
                        self.test_reads[v] += 1
                    if "npu" in got[1].lower():
                        self.saw_npu = True
                return got[0]
            if v in self.t.holders:
                return self.run_device(self.t.holder_idiom)
            return UNDECIDED
        if t is cst.Attribute:
            d = dotted(node)
            if d is not None and d in self.t.holders:
                return self.run_device(self.t.holder_idiom)
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
                return float(node.value.replace("_", "")) if t is cst.Float else int(node.value.replace("_", ""), 0)
            except ValueError:
                return UNDECIDED
        if t is cst.FormattedString:
            head = node.parts[0] if node.parts else None
            if type(head) is cst.FormattedStringText and ":" in head.value:
                base = head.value.split(":", 1)[0]
                if family_of(base) is not None:
                    return DevStr.of(base, False)
            return UNDECIDED
        if t is cst.Call:
            return self.call(node, env, depth)
        if t is cst.Comparison:
            return self.compare(node, env, depth)
        if t is cst.UnaryOperation and type(node.operator) is cst.Not:
            v = _truth(self.ev(node.expression, env, depth + 1))
            return UNDECIDED if v is None else (not v)
        if t is cst.BooleanOperation:  # short-circuit, with an operand not decided
            stop = type(node.operator) is cst.Or  # the truth that decides: False for `and`, True for `or`
            left = self.ev(node.left, env, depth + 1)
            lt = _truth(left)
            if lt is stop:
                return left
            right = self.ev(node.right, env, depth + 1)
            if lt is not None:
                return right
            return stop if _truth(right) is stop else UNDECIDED
        if t is cst.IfExp:
            v = _truth(self.ev(node.test, env, depth + 1))
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
        fam = family_of(key)
        for el in d.node.elements:
            if type(el) is cst.DictElement and type(el.key) in (cst.SimpleString, cst.ConcatenatedString):
                ek = el.key.evaluated_value
                if isinstance(ek, str) and family_of(ek) == fam and fam is not None:
                    return el.value
        return None

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
            got = env.get(qn) if "." not in qn else MISSING
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
            if meth in ("lower", "upper", "strip") and not args:
                v = self.ev(f.value, env, depth + 1)
                if isinstance(v, str):
                    return DevStr.of(getattr(str(v), meth)(), getattr(v, "exact", True))
                return UNDECIDED
        return UNDECIDED

    def function(self, node: cst.FunctionDef):
        """What a function of the file returns on this device, when that is one value."""
        k = id(node)
        if k in self.fvalues:
            return self.fvalues[k]
        if k in self.calling or any(p.default is None for p in node.params.params):
            return UNDECIDED
        self.calling.add(k)
        hits, region = self.hits, self.region
        self.hits, self.region = [], 0
        try:
            env = Env(self.module)
            for prm in _params(node):
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
                chosen, o = None, s
                while o is not None:
                    if type(o) is cst.If:
                        v = _truth(self.ev(o.test, env))
                        if v is None:
                            if _has_return(s):
                                return UNDECIDED
                            break
                        if v:
                            chosen = _stmts(o.body)
                            break
                        o = o.orelse
                    else:
                        chosen = _stmts(o.body)
                        o = None
                if chosen is not None:
                    v = self.returns(chosen, env)
                    if v is not MISSING:
                        return v
            elif _has_return(s):
                return UNDECIDED
        return MISSING

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


def _origin(idioms: list) -> str:
    """The idiom a flag assigned in a decided branch came from."""
    first = idioms[0] if idioms else "device test"
    return first[6:-1] if first.startswith("flag (") else first


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


def _blocks(node) -> list:
    out = []
    for f in ("body", "orelse", "finalbody"):
        v = getattr(node, f, None)
        if v is None:
            continue
        if isinstance(v, (cst.IndentedBlock, cst.SimpleStatementSuite)):
            out.append(_stmts(v))
        elif hasattr(v, "body"):
            out.append(_stmts(v.body) if isinstance(v.body, (cst.IndentedBlock, cst.SimpleStatementSuite)) else [])
    for h in getattr(node, "handlers", ()) or ():
        out.append(_stmts(h.body))
    for c in getattr(node, "cases", ()) or ():
        out.append(_stmts(c.body))
    return out


def _params(node: cst.FunctionDef) -> list[str]:
    ps = node.params
    out = [p.name.value for p in list(ps.params) + list(ps.kwonly_params) + list(ps.posonly_params)]
    for p in (ps.star_arg, ps.star_kwarg):
        if isinstance(p, cst.Param):
            out.append(p.name.value)
    return out


def _bound_names(target) -> list[str]:
    if type(target) is cst.Name:
        return [target.value]
    if type(target) in (cst.Tuple, cst.List):
        return [n for e in target.elements for n in _bound_names(e.value)]
    return []


def _has_return(node) -> bool:
    stack = [node]
    while stack:
        x = stack.pop()
        if type(x) is cst.Return:
            return True
        if type(x) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            if x is not node:
                continue
        stack.extend(_kids(x))
    return False


_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}


def _catches_import_error(h) -> bool:
    if h.type is None:
        return True
    names = [h.type] if type(h.type) is not cst.Tuple else [e.value for e in h.type.elements]
    return any((dotted(n) or "").rsplit(".", 1)[-1] in _IMPORT_ERRORS for n in names)


def _is_refusal(sts: list[St]) -> bool:
    """A block that only raises (an option this device refuses)."""
    if not sts:
        return False
    for s in sts:
        if s.kind != "simple" or not all(type(x) is cst.Raise for x in s.node.body):
            return False
    return True


_IS_NODE: dict = {}


def _node(v) -> bool:
    t = type(v)
    got = _IS_NODE.get(t)
    if got is None:
        got = _IS_NODE[t] = issubclass(t, cst.CSTNode)
    return got


def _kids(node) -> list:
    """A node's child nodes, formatting left out (libcst's `children` runs a visitor: slow)."""
    out = []
    for name in fields_of(type(node)):
        v = getattr(node, name)
        t = type(v)
        if t is list or t is tuple:
            out.extend(x for x in v if _node(x))
        elif _node(v):
            out.append(v)
    return out


def _may_have_ifexp(p: Parsed, node) -> bool:
    """A cheap test on the node's source text before a walk of its tree: `A if c else B`."""
    text = p.code(node)
    return "if" in text and "else" in text


def _ends(st: St) -> bool:
    """A statement after which its block goes no further (return, raise, continue, break)."""
    return st.kind == "simple" and bool(st.node.body) and type(st.node.body[-1]) in (
        cst.Return, cst.Raise, cst.Continue, cst.Break)


def _calls(node, out: set) -> None:
    stack = [node]
    while stack:
        x = stack.pop()
        if type(x) is cst.Call:
            out.add(id(x))
        stack.extend(_kids(x))


# ------------------------------------------------------------------------------ applying
class _Apply:
    def __init__(self, p: Parsed, own: Decider, other, spec: Specialised):
        self.p, self.own, self._other, self.spec = p, own, other, spec
        self._reads: Counter | None = None
        self._names: list | None = None  # the module names worth a look (module_name)

    def aside(self, sts: list[St], why: str, test_line: int | None = None, rule: str = "device-branch") -> None:
        """Statements this side does not run: their lines listed, their calls read for no facts."""
        for s in sts:
            self.spec.set_aside.append((s.line, why, rule))
            if test_line is not None:
                self.spec.skipped.setdefault(s.line, test_line)
            _calls(s.node, self.spec.dead_calls)
            for _label, _n, body in s.clauses:
                self.aside(body, why, test_line, rule)

    @property
    def other(self) -> Decider:
        """The other device's decisions, computed when first needed (a refusal, a flag)."""
        if callable(self._other):
            self._other = self._other()
        return self._other

    def clause_idioms(self, cnode, per: list, i: int) -> list:
        """The idioms of a clause's test (one the chain did not reach is read now)."""
        if i < len(per):
            return per[i]
        if type(cnode) is not cst.If:
            return []
        d = self.own
        d.hits = []
        d.ev(cnode.test, d.module)
        return list(d.hits)

    def header(self, cnode, body: list[St]) -> int | None:
        line = self.p.line_of(cnode)
        if line is None and body:
            line = body[0].line - 1
        return line

    def block(self, sts: list[St]) -> tuple[list[St], bool]:
        out: list[St] = []
        changed = False
        for at, st in enumerate(sts):
            if out and _ends(out[-1]) and changed:  # `if _NPU: return "npu"` taken: what follows is not reached
                self.aside(sts[at:], "not reached on this device (the branch before it returns)")
                break
            n = st.node
            k = id(n)
            if st.kind == "compound" and type(n) is cst.If and k in self.own.ifs:
                live = self.own.ifs[k]
                changed = True
                self.count(k)
                test_line = self.p.line_of(n)
                per = self.own.clause_idioms.get(k) or []
                for i, (_label, cnode, body) in enumerate(st.clauses):
                    if i != live:
                        rule = next((self.own.t.masks[x] for x in self.clause_idioms(cnode, per, i)
                                     if x in self.own.t.masks), "device-branch")
                        line = self.header(cnode, body)
                        if line is not None:
                            self.spec.set_aside.append((line, "branch for another device", rule))
                        self.aside(body, "branch for another device", test_line, rule)
                if live >= 0:
                    body = st.clauses[live][2]
                    if _is_refusal(body):
                        self.aside(body, "raises on this device (an option it refuses)", test_line)
                        continue
                    refusals = [i for i, c in enumerate(st.clauses) if i != live and _is_refusal(c[2])]
                    theirs = self.other.ifs.get(k) if refusals else None
                    if theirs is not None and theirs in refusals:
                        self.aside(body, "refused by the other device (its branch raises)", test_line)
                        continue
                    new, _ = self.block(body)
                    out.extend(self.clean(new, flags=True))
                continue
            if st.kind == "compound" and type(n) is cst.Try and k in self.own.tries:
                changed = True
                self.count(k)
                what, h = self.own.tries[k]
                test_line = self.p.line_of(n)
                keep = []
                live = ("body", "else", "finally") if what == "body" else (f"except{h}", "finally")
                for label, cnode, body in st.clauses:
                    if label in live:
                        keep += body
                    elif label == "body":  # the import fails here: what comes before it runs
                        at = self.own.try_import(n)[2] or 0
                        keep += body[:at]
                        self.aside(body[at:], "branch for another device", test_line)
                    else:
                        line = self.header(cnode, body)
                        if line is not None:
                            self.spec.set_aside.append((line, "branch for another device", "device-branch"))
                        self.aside(body, "branch for another device", test_line)
                new, _ = self.block(keep)
                out.extend(self.clean(new, flags=True))
                continue
            if st.clauses:
                for i, (label, cnode, body) in enumerate(st.clauses):
                    new, ch = self.block(body)
                    if ch:
                        st.clauses[i] = (label, cnode, new)
                        changed = True
                        self.mark(st)
            if self.has_live_exp(st):
                self.mark(st)
                changed = True
            if self.defines_test(st):
                self.spec.plumbing.add(id(n))
                if type(n) is cst.FunctionDef:  # get_device(): its value is compared where it is used
                    v = self.own.fvalues.get(id(n))
                    self.aside([b for _l, _n, body in st.clauses for b in body],
                               f"device test plumbing: returns {v!r} on this device")
                    st.clauses = [(label, cnode, []) for label, cnode, _body in st.clauses]
                    self.mark(st)
                    changed = True
            if st.kind == "compound" and type(n) is cst.If and st.clauses and not any(b for _l, _n, b in st.clauses) \
                    and st.mark:
                # an if whose every branch was set aside (an option the other device refuses)
                self.spec.set_aside.append((st.line, "its branches were set aside", "device-branch"))
                continue
            out.append(st)
        return out, changed

    def clean(self, sts: list[St], flags: bool = False) -> list[St]:
        """A live branch's statements, less what only serves the device test: `pass`, and the
        assignment of a flag (`_NPU = True`) that is read nowhere but in device tests."""
        out = []
        for s in sts:
            if s.kind == "simple" and all(type(x) is cst.Pass for x in s.node.body):
                self.spec.set_aside.append((s.line, "device test plumbing", "device-branch"))
                continue
            if flags and s.kind == "simple" and all(self.flag_assign(x) for x in s.node.body):
                self.spec.set_aside.append((s.line, "device test plumbing", "device-branch"))
                continue
            out.append(s)
        return out

    def flag_assign(self, small) -> bool:
        if type(small) is not cst.Assign or len(small.targets) != 1 or type(small.targets[0].target) is not cst.Name:
            return False
        v = small.value
        if not (type(v) is cst.Name and v.value in ("True", "False", "None")):
            return False
        name = small.targets[0].target.value
        return self.reads().get(name, 0) <= max(self.own.test_reads.get(name, 0), self.other.test_reads.get(name, 0))

    def reads(self) -> Counter:
        """How often each name is read in the file (assignment targets not counted)."""
        if self._reads is None:
            c: Counter = Counter()
            stack = [self.p.module]
            while stack:
                x = stack.pop()
                t = type(x)
                if t is cst.Name:
                    c[x.value] += 1
                elif t is cst.AssignTarget and type(x.target) is cst.Name:
                    continue
                stack.extend(_kids(x))
            self._reads = c
        return self._reads

    def defines_test(self, st: St) -> bool:
        """`IS_NPU = is_torch_npu_available()`, `def get_device(): ...` returning a device name."""
        n = st.node
        if st.kind == "compound":
            if type(n) is cst.FunctionDef:
                v = self.own.fvalues.get(id(n))
                return v is not None and v is not UNDECIDED and v is not MISSING
            return False
        for small in n.body:
            if type(small) is not cst.Assign or not all(type(x.target) is cst.Name for x in small.targets):
                return False
            if type(small.value) is cst.Dict and small.value.elements and all(
                    type(el) is cst.DictElement and type(el.key) is cst.SimpleString
                    and family_of(el.key.evaluated_value or "") is not None for el in small.value.elements):
                continue  # DTYPES = {"cuda": ..., "npu": ...}: read through its uses, DTYPES[DEVICE]
            d = self.own
            d.hits = []
            v = d.ev(small.value, d.module)
            if not d.hits or v is UNDECIDED or not isinstance(v, (bool, str)) and v is not None:
                return False
        return True

    def has_live_exp(self, st: St) -> bool:
        node = st.node
        if self._names is None:
            self._names = [n for n in self.own.module.vars if self.module_name(n)]
        text = st.hraw if st.kind == "compound" else st.raw
        if not (("if" in text and "else" in text) or any(n in text for n in self._names)):
            return False
        stack = [node]
        if st.kind == "compound":  # the header only: its blocks are their own statements
            stack = [getattr(node, f) for f in ("test", "iter", "items", "decorators", "params", "returns", "bases")
                     if getattr(node, f, None) is not None]
        found = False
        while stack:
            x = stack.pop()
            if isinstance(x, (list, tuple)):
                stack.extend(x)
                continue
            if not isinstance(x, cst.CSTNode):
                continue
            t = type(x)
            if t is cst.IfExp and id(x) in self.own.exps:
                live = self.own.exps[id(x)]
                self.spec.live[id(x)] = x.body if live else x.orelse
                _calls(x.orelse if live else x.body, self.spec.dead_calls)
                self.count(id(x))
                found = True
            elif t is cst.Subscript and type(x.value) is cst.Name and self.module_name(x.value.value):
                d = self.own
                d.hits = []
                entry = d.entry(x, d.module)
                if entry is not None:  # DTYPES[DEVICE]: this device's entry
                    self.spec.live[id(x)] = entry
                    self.spec.tests += 1
                    self.spec.decided["dict indexed by the device"] += 1
                    found = True
            elif (t is cst.Name and self.module_name(x.value)) or (t is cst.Call and type(x.func) is cst.Name
                                                                   and self.module_name(x.func.value)):
                d = self.own
                d.hits = []
                v = d.ev(x, d.module)
                held = (d.t.holder_idiom, f"flag ({d.t.holder_idiom})", d.t.device_calls_idiom)
                if isinstance(v, str) and d.hits and d.hits[0] not in held and family_of(v) is not None:
                    self.spec.devices[id(x)] = str(v)  # DEVICE, get_device(): a device name, compared as one
                    found = True
                    continue
            stack.extend(_kids(x))
        return found

    def module_name(self, name: str) -> bool:
        """A name bound at module level to a device value, a dict or a function, and by no
        function or class of the file (a flag, DEVICE, DTYPES, get_device)."""
        got = self.own.module.vars.get(name)
        if got is None or not (got[1] or type(got[0]) in (DictRef, FuncRef)):
            return False
        return name not in self.own.shadowed()

    def mark(self, st: St) -> None:
        st.mark = self.spec.family

    def count(self, k: int) -> None:
        idioms = self.own.idioms.get(k) or []
        if idioms:
            self.spec.tests += 1
            for i in dict.fromkeys(idioms):
                self.spec.decided[i] += 1


def specialise(p: Parsed, side: str) -> Specialised:
    """Rewrite `p`'s statement lists into the program `side`'s device runs (module doc)."""
    fam = side_family(side)
    spec = Specialised(side=side, family=fam)
    p.spec = spec
    if p.module is None:
        return spec
    t = prepared()
    patched = any(any(qn == m or qn.startswith(m + ".") for m in t.patched_by) for qn in p.aliases.values())
    other_fam = "cuda" if fam == "npu" else "npu"

    def decide(family: str) -> Decider:
        d = Decider(p, family, aware=False, patched=patched).run()
        if d.saw_npu and d.cuda_on_npu:  # the file tests for the NPU itself: its CUDA tests fail there
            d = Decider(p, family, aware=True, patched=patched).run()
        return d

    own = decide(fam)
    spec.decider = own
    ap = _Apply(p, own, lambda: decide(other_fam), spec)
    p.body, _ = ap.block(p.body)
    for k, (line, text) in own.undecided.items():
        spec.undecided.append((line, text))
    spec.undecided.sort(key=lambda x: (x[0] or 0))
    return spec


_DEVICE_EXPRS = (cst.Call, cst.Comparison, cst.BooleanOperation, cst.UnaryOperation, cst.Name, cst.Attribute,
                 cst.Subscript)


def device_value(p: Parsed, node):
    """What a device test or a device name (`not is_torch_npu_available()`, `_NPU`,
    `args.device`) is on this file's device: a bool or a device name; MISSING when `node` is
    none, or cannot be decided. `TrainingArguments(fp16=is_npu_available())` reads it."""
    sp = p.spec
    d = getattr(sp, "decider", None)
    if d is None or type(node) not in _DEVICE_EXPRS or not (sp.tests or sp.undecided):
        return MISSING
    d.hits = []
    try:
        v = d.ev(node, d.module)
    except Exception:
        return MISSING
    if not d.hits or v is UNDECIDED or not isinstance(v, (bool, str)):
        return MISSING
    return str(v) if isinstance(v, str) else v


def device_key(p: Parsed, node) -> str | None:
    """The device family an expression holds on this file's device (`device`, `args.device`,
    `DEVICE` assigned from a device test), else None: the key of a dict indexed by the device."""
    v = device_value(p, node)
    return family_of(v) if isinstance(v, str) else None


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
