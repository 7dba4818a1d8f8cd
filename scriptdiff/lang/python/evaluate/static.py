"""The value face of the evaluator: what an expression of a file is, without running it.

Literals, arithmetic on literals, module-level constants (`LR = 1e-4`), `args.<dest>`
references to an argparse or dataclass default (declared.py), module-level dict literals
(`CONFIG["lr"]`, `DTYPES[DEVICE]` through the device face), this device's operand of a
conditional expression (specialisation decided it), `os.environ.get(name, default)` and a few
builtins (`int(3e6)`, `max(a, b)`). At every node the device face answers first: a device test
or a device name is this device's value (`fp16=is_torch_npu_available()`).

An evaluation is metered (scriptdiff/budget.py): constants that refer to each other many times
over (`A1 = [A0, A0, ...]`), or products of huge numbers, are too large to evaluate, which the
input's account says (Parsed.too_large) instead of building them. A value that is not known
statically raises NotLiteral. `Values.origin(node)` is where a value is written: the literal it
was read from, through the same constants, defaults, dicts and branches (for `scriptdiff fix`).
"""
from __future__ import annotations

import libcst as cst

from .... import budget
from ....budget import Meter, TooLarge, check_number, note
from ....ruleset.devices import family_of
from ..parse import Parsed, canon_qn, kids, qualified_name
from ..parse import _block_body as _stmts
from .declared import option_default
from .device import family_entry, fstring_device, truth
from .kinds import CONSTANTS, MISSING, UNDECIDED, DevStr, NotLiteral, QName, Unknown, number, switch_family
from .program import UNBOUND, if_clauses, names_bound, program

_DEVICE_EXPRS = (cst.Call, cst.Comparison, cst.BooleanOperation, cst.UnaryOperation, cst.Name, cst.Attribute,
                 cst.Subscript)
BUILTINS = {"int": int, "float": float, "str": str, "max": max, "min": min, "abs": abs, "round": round}


def device_value(p: Parsed, node, anywhere: bool = False):
    """What a device test or a device name (`not is_torch_npu_available()`, `_NPU`,
    `args.device`) is on this file's device: a bool or a device name; MISSING when `node` is
    none, or cannot be decided. `TrainingArguments(fp16=is_npu_available())` reads it.
    `anywhere`: also in a file the walk decided no device test in (a comparison of the two
    sides asks for one expression at a time: `device.type == "cuda"` against `!= "cuda"`)."""
    sp = p.spec
    d = getattr(sp, "decider", None)
    if d is None or type(node) not in _DEVICE_EXPRS or not (anywhere or sp.tests or sp.undecided or _switches(node)):
        return MISSING
    d.hits = []
    try:
        v = d.ev(node, d.module)
    except Exception:
        return MISSING
    if not d.hits or v is UNDECIDED or not isinstance(v, (bool, str)):
        return MISSING
    return str(v) if isinstance(v, str) else v


def _switches(node) -> bool:
    """Whether an expression reads a setting's device switch (`cfg.use_npu`): a file that tests
    its devices only that way has no device test for the walk to decide."""
    stack = [node]
    while stack:
        n = stack.pop()
        if type(n) is cst.Attribute and switch_family(n.attr.value) is not None:
            return True
        if type(n) in (cst.BooleanOperation, cst.UnaryOperation, cst.Attribute):
            stack.extend(kids(n))
    return False


def device_key(p: Parsed, node) -> str | None:
    """The device family an expression holds on this file's device (`device`, `args.device`,
    `DEVICE` assigned from a device test), else None: the key of a dict indexed by the device."""
    v = device_value(p, node)
    return family_of(v) if isinstance(v, str) else None


class Values:
    """One reading's evaluation of a file's values (module doc), with its meter."""

    def __init__(self, p: Parsed, account: bool = False):
        self.p = p
        self.meter = Meter()  # the evaluation work of this reading (budget.py)
        self.steps = 0  # of the value being evaluated
        self.too_large: set = set()  # nodes whose value exceeded the budget once: not tried again
        self.account = account  # a value that cannot be followed is said in the input's account
        self.frames: list[dict] = []  # the names of the functions being called (innermost last)
        self.calling: list[int] = []  # ids of the functions being called

    def qualified(self, node) -> str | None:
        return qualified_name(self.p, node)

    def evaluate(self, node, used: list, depth: int = 0):
        """The value of `node`; `used` gets (name, node) for each name it was read through."""
        if depth:
            return self._evaluate(node, used, depth)
        if id(node) in self.too_large:  # the budget is spent once per value, not once per reader
            raise NotLiteral
        self.steps = 0
        try:
            return self._evaluate(node, used, 0)
        except TooLarge as e:  # not known statically, and said so
            self.too_large.add(id(node))
            what = note(f"`{clip(self.p, node)}`", e, self.p.line_of(node))
            if what not in self.p.too_large:
                self.p.too_large.append(what)
            raise NotLiteral from None
        except Unknown as e:  # a value that cannot be followed (a helper that calls itself): unknown
            if self.account:
                line = self.p.line_of(node)
                what = f"`{clip(self.p, node)}`{f' at line {line}' if line else ''}: {e}; its value is unknown"
                if what not in self.p.too_large:
                    self.p.too_large.append(what)
            raise NotLiteral from None

    def _evaluate(self, node, used: list, depth: int):
        t = type(node)
        if depth > budget.VALUE_DEPTH:
            raise NotLiteral
        self.steps += 1
        if self.steps > self.meter.value_pieces:
            raise TooLarge(f"more than {self.meter.value_pieces:,} evaluation steps")
        self.meter.step()
        v = device_value(self.p, node)  # `fp16=is_torch_npu_available()`: this device's answer
        if v is not MISSING:
            return v
        if t in (cst.Integer, cst.Float):
            return number(node.value)
        if t in (cst.SimpleString, cst.ConcatenatedString):
            v = node.evaluated_value
            if v is None:
                raise NotLiteral
            return v
        if t is cst.Name:
            if node.value in CONSTANTS:
                return CONSTANTS[node.value]
            bound = self.bound(node)
            if bound is not None:
                name, v = bound
                if v is UNBOUND:
                    raise NotLiteral
                if type(v) is _Known:
                    used.extend(v.used)
                    return v.value
                used.append((name, v))
                return self.evaluate(v, used, depth + 1)
            c = self.p.consts.get(node.value)
            if c is not None:
                used.append((node.value, c))
                return self.evaluate(c, used, depth + 1)
            q = self.p.aliases.get(node.value)
            if q is not None:
                return QName(canon_qn(q, None))
            raise NotLiteral
        if t is cst.Attribute:
            q = self.qualified(node)
            if q is not None:
                return QName(canon_qn(q, None))
            attr = self.class_attribute(node)  # Env.DEVICE of `class Env: DEVICE = ...`
            if attr is not None:
                if attr is UNBOUND:
                    raise NotLiteral
                used.append((f"{node.value.value}.{node.attr.value}", attr))
                return self.evaluate(attr, used, depth + 1)
            d = option_default(self.p, node)  # args.lr_actor: the option's default
            if d is not None:
                used.append(d)
                return self.evaluate(d[1], used, depth + 1)
            raise NotLiteral
        if t is cst.Call:
            return self.call_value(node, used, depth)
        if t is cst.IfExp:  # `torch.float16 if is_npu_available() else torch.bfloat16`: this device's operand
            live = self.p.live_of(node)
            if live is node:
                raise NotLiteral
            return self.evaluate(live, used, depth + 1)
        if t is cst.Subscript:  # CONFIG["lr"], {"cuda": 1e-4, "npu": 2e-4}[DEVICE], CFG[DEV]["lr"]
            c = self.container(node.value, depth)
            if type(c) is cst.Dict and len(node.slice) == 1 and type(node.slice[0].slice) is cst.Index:
                by_device = self.device_entry(c, node, used, depth)
                if by_device is not None:
                    return self.evaluate(by_device, used, depth + 1)
                k = self.evaluate(node.slice[0].slice.value, [], depth + 1)
                for el in c.elements:
                    if type(el) is cst.DictElement:
                        try:
                            ek = self.evaluate(el.key, [], depth + 1)
                        except NotLiteral:
                            raise NotLiteral from None
                        if ek == k and type(ek) is type(k):
                            used.append((f"{_label(self.p, node.value)}[{k!r}]", el.value))
                            return self.evaluate(el.value, used, depth + 1)
            raise NotLiteral
        if t is cst.FormattedString:  # f"npu:{rank}": a device of the run, its index not known
            v = fstring_device(node)
            if v is None:
                raise NotLiteral
            return v
        if t is cst.Comparison:  # `n > 0`, `mode == "fast"` on known values
            left = self.evaluate(node.left, [], depth + 1)
            for c in node.comparisons:
                right = self.evaluate(c.comparator, [], depth + 1)
                if not compare(type(c.operator), left, right):
                    return False
                left = right
            return True
        if t is cst.BooleanOperation:  # `args.backend or "nccl"`: decided when the left operand is known
            a = self.evaluate(node.left, used, depth + 1)
            if bool(a) is (type(node.operator) is cst.Or):
                return a
            return self.evaluate(node.right, used, depth + 1)
        if t is cst.UnaryOperation:
            v = self.evaluate(node.expression, used, depth + 1)
            op = type(node.operator)
            if op is cst.Minus and isinstance(v, (int, float)):
                return -v
            if op is cst.Plus and isinstance(v, (int, float)):
                return v
            if op is cst.Not:
                return not v
            raise NotLiteral
        if t is cst.BinaryOperation:
            a = self.evaluate(node.left, used, depth + 1)
            b = self.evaluate(node.right, used, depth + 1)
            if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b)):
                raise NotLiteral
            r = arith(type(node.operator), a, b)
            check_number(r)
            return r
        if t in (cst.Tuple, cst.List):
            return [self.evaluate(e.value, used, depth + 1) for e in node.elements]
        raise NotLiteral

    def device_entry(self, c: cst.Dict, node: cst.Subscript, used: list, depth: int = 0):
        """DTYPES[device] with DTYPES = {"npu": torch.float16, "cuda": torch.bfloat16} and the key
        this side's device (the device face, or a value of the run's device: a local chosen by a
        device test, `Env.DEVICE`): the entry of its family, else None."""
        sp = self.p.spec
        if sp is None:
            return None
        key = node.slice[0].slice.value
        if device_key(self.p, key) is None:
            try:
                k = self.evaluate(key, [], depth + 1) if type(key) not in (cst.SimpleString, cst.ConcatenatedString) \
                    else None
            except NotLiteral:
                k = None
            if not (isinstance(k, DevStr) or isinstance(k, str) and self.chosen(key)) or family_of(k) is None:
                return None
        hit = family_entry(c, sp.family)
        if hit is None:
            return None
        used.append((f"{_label(self.p, node.value)}[{hit[0]!r}]", hit[1]))
        return hit[1]

    def chosen(self, node) -> bool:
        """A name whose value specialisation chose by the device (`dev = "npu" if npu else "cuda"`)."""
        seen = 0
        while type(node) is cst.Name and seen < budget.CALL_DEPTH:
            seen += 1
            bound = self.bound(node)
            v = bound[1] if bound is not None else self.p.consts.get(node.value)
            if v is None or v is UNBOUND or type(v) is _Known:
                return False
            if type(v) is cst.IfExp:
                return self.p.live_of(v) is not v
            node = v
        return False

    # ------------------------------------------------------------------ names the file binds
    def bound(self, node: cst.Name):
        """(name, value node or _Known or UNBOUND) of a name bound in the function being called or,
        read in place, a local of the function it stands in; None when it is no local."""
        name = node.value
        if self.frames:
            frame = self.frames[-1]
            return (name, frame[name]) if name in frame else None
        fn = program(self.p).scope_of(node)
        if fn is None:
            return None
        v = program(self.p).local(fn, name)
        return None if v is None else (name, v)

    def binding(self, node):
        """The value node a name (a local, a module constant) or a class attribute is bound to by
        one assignment, else None."""
        if type(node) is cst.Name:
            bound = self.bound(node)
            v = bound[1] if bound is not None else self.p.consts.get(node.value)
        elif type(node) is cst.Attribute:
            v = self.class_attribute(node)
        else:
            return None
        return v if isinstance(v, cst.CSTNode) else None

    def class_attribute(self, node: cst.Attribute):
        """The value node of `Cls.ATTR` for a module-level class of the file (UNBOUND: assigned
        twice), else None."""
        if type(node.value) is not cst.Name:
            return None
        name = node.value.value
        if name in self.p.consts or name in self.p.aliases or (self.frames and name in self.frames[-1]):
            return None
        attrs = program(self.p).classes.get(name)
        return None if attrs is None else attrs.get(node.attr.value)

    def container(self, node, depth: int):
        """The dict literal an expression holds: written in place, a name bound to one (module
        constant, local, class attribute), or an entry of one (CFG[DEV]); else None."""
        for _ in range(budget.DICT_DEPTH):
            t = type(node)
            if t is cst.Dict:
                return node
            if t is cst.Name:
                bound = self.bound(node)
                node = bound[1] if bound is not None else self.p.consts.get(node.value)
                if node is None or node is UNBOUND or type(node) is _Known:
                    return None
                continue
            if t is cst.Attribute:
                node = self.class_attribute(node)
                if node is None or node is UNBOUND:
                    return None
                continue
            if t is cst.Subscript:
                c = self.container(node.value, depth + 1)
                if c is None or len(node.slice) != 1 or type(node.slice[0].slice) is not cst.Index:
                    return None
                entry = self.device_entry(c, node, [], depth) or self.dict_entry(c, node)
                if entry is None:
                    return None
                node = entry
                continue
            return None
        return None

    def dict_entry(self, c: cst.Dict, node: cst.Subscript):
        """The value node of CONFIG["lr"] (or this device's entry of a device-keyed dict), or None:
        where the value is written (the last entry of its key)."""
        if len(node.slice) != 1 or type(node.slice[0].slice) is not cst.Index:
            return None
        by_device = self.device_entry(c, node, [])
        if by_device is not None:
            return by_device
        k = self.evaluate(node.slice[0].slice.value, [], 1)
        hits = [el.value for el in c.elements if type(el) is cst.DictElement
                and literal(self.p, el.key) and self.evaluate(el.key, [], 1) == k]
        return hits[-1] if hits else None

    def origin(self, node, index: int | None = None) -> dict:
        """Where a fact's value is written, for `scriptdiff fix` (docs/fix.md): the literal it was
        read from, followed through module constants, `args.x` option defaults, dict entries and
        this device's branch of a conditional: {"pos": [line, col], "node": its libcst type,
        "code": its text, "via": the names passed through}; or why it cannot be edited in one
        place: {"computed": ...}, {"environment": NAME}, {"ambiguous": ...}."""
        p = self.p
        via: list[str] = []
        try:
            for _ in range(16):
                n = p.live_of(node)
                if n is not node:
                    node = n
                    continue
                if device_value(p, node) is not MISSING:
                    return {"computed": f"`{clip(p, node)}` is chosen by a device test"}
                t = type(node)
                if index is not None and t in (cst.Tuple, cst.List):
                    els = node.elements
                    if index >= len(els) or type(els[index]) is not cst.Element:
                        break
                    node, index = els[index].value, None
                    continue
                if index is None and literal(p, node):
                    text = p.code(node)
                    if len(text) > budget.LITERAL_CHARS:
                        return {"computed": f"a literal of more than {budget.LITERAL_CHARS} characters"}
                    return {"pos": p.position(node), "node": t.__name__, "code": text, "via": via}
                if t is cst.Name and node.value in p.consts:
                    if node.value in p.reassigned:
                        return {"ambiguous": f"{node.value} is assigned more than once at module level"}
                    via.append(node.value)
                    node = p.consts[node.value]
                    continue
                if t is cst.Attribute and self.qualified(node) is None:
                    d = option_default(p, node)
                    if d is None:
                        break
                    via.append(d[0])
                    node = d[1]
                    continue
                if t is cst.Subscript and type(node.value) is cst.Name and type(p.consts.get(node.value.value)) is cst.Dict:
                    entry = self.dict_entry(p.consts[node.value.value], node)
                    if entry is None:
                        break
                    via.append(f"{node.value.value}[...]")
                    node = entry
                    continue
                env = environment(p, node)
                if env is not None:
                    return {"environment": env}
                break
        except (NotLiteral, TooLarge, RecursionError):
            pass
        return {"computed": f"`{clip(p, node)}` is computed" + (f" (through {', '.join(via)})" if via else "")}

    def call_value(self, node: cst.Call, used: list, depth: int):
        """int(3e6), float(os.environ.get("LR", "1e-4")), max(a, b), a function of the file
        (`lr()`): what the call returns."""
        f = node.func
        fn = self.function_of(f)
        if fn is not None:
            return self.call_function(fn, node, used, depth)
        if any(a.star or a.keyword is not None for a in node.args):
            raise NotLiteral
        q = self.qualified(f)
        if q in ("os.environ.get", "os.getenv") and len(node.args) == 2:
            name = self.evaluate(node.args[0].value, [], depth + 1)
            v = self.evaluate(node.args[1].value, used, depth + 1)
            used.append((f"${name}", node.args[1].value))
            return v
        if q is not None or type(f) is not cst.Name or f.value in self.p.consts:
            raise NotLiteral
        fn = BUILTINS.get(f.value)
        if fn is None:
            raise NotLiteral
        vals = [self.evaluate(a.value, used, depth + 1) for a in node.args]
        if not vals or not all(isinstance(v, (int, float, str)) and not isinstance(v, bool) for v in vals):
            raise NotLiteral
        try:
            return fn(*vals)
        except (TypeError, ValueError, OverflowError):
            raise NotLiteral from None


    # ------------------------------------------------------------------ functions of the file
    def function_of(self, f):
        """The module-level function of the file a call's callee names, else None."""
        if type(f) is not cst.Name:
            return None
        name = f.value
        if name in self.p.consts or name in self.p.aliases or self.bound(f) is not None:
            return None
        return program(self.p).funcs.get(name)

    def call_function(self, fn: cst.FunctionDef, call: cst.Call, used: list, depth: int):
        """What a call of a function of the file returns on this device: its parameters bound to
        the arguments (or their defaults), its statements run as far as they are known (the branch
        specialisation decided, an `if` on a known value), helpers followed up to budget.CALL_DEPTH
        deep; a function that calls itself is unknown (Unknown, said by `evaluate`)."""
        name = fn.name.value
        if id(fn) in self.calling:
            raise Unknown(f"{name}() calls itself")
        if len(self.calling) >= budget.CALL_DEPTH:
            raise Unknown(f"helpers called more than {budget.CALL_DEPTH} deep")
        memo = program(self.p).returns
        if not call.args and id(fn) in memo:
            v, names = memo[id(fn)]
            if v is UNBOUND:
                raise NotLiteral
            used.extend(names)
            return v
        frame = self.arguments(fn, call, depth)
        mine: list = []
        self.calling.append(id(fn))
        self.frames.append(frame)
        try:
            v = self.run(_body(fn), frame, mine, depth)
        except Unknown:
            raise
        except NotLiteral:
            if not call.args:
                memo[id(fn)] = (UNBOUND, [])
            raise
        finally:
            self.frames.pop()
            self.calling.pop()
        if v is _FELL_OFF:
            v = None
        if not call.args:
            memo[id(fn)] = (v, mine)
        used.extend(mine)
        return v

    def arguments(self, fn: cst.FunctionDef, call: cst.Call, depth: int) -> dict:
        """Each parameter's value for this call: _Known, or UNBOUND when not known."""
        ps = fn.params
        params = list(ps.posonly_params) + list(ps.params)
        frame: dict = {}
        for prm in params + list(ps.kwonly_params) + [x for x in (ps.star_arg, ps.star_kwarg)
                                                       if isinstance(x, cst.Param)]:
            frame[prm.name.value] = UNBOUND
        given: dict = {}
        pos = 0
        for a in call.args:
            if a.star:
                return frame  # *args: what binds where is not known
            if a.keyword is None:
                if pos >= len(params):
                    return frame
                given[params[pos].name.value] = a.value
                pos += 1
            else:
                given[a.keyword.value] = a.value
        for prm in params + list(ps.kwonly_params):
            node, known = given.get(prm.name.value), None
            outer, self.frames = self.frames, (self.frames if node is not None else [])  # a default: module scope
            try:
                if node is not None or prm.default is not None:
                    names: list = []
                    known = _Known(self.evaluate(node if node is not None else prm.default, names, depth + 1), names)
            except NotLiteral:
                known = None
            finally:
                self.frames = outer
            if known is not None:
                frame[prm.name.value] = known
        return frame

    def run(self, stmts, frame: dict, used: list, depth: int):
        """The value the first `return` reached returns; _FELL_OFF when none is reached."""
        decided = getattr(getattr(self.p.spec, "decider", None), "ifs", None) or {}
        for s in stmts:
            t = type(s)
            if t in (cst.SimpleStatementLine, cst.SimpleStatementSuite):
                for small in s.body:
                    ts = type(small)
                    if ts is cst.Return:
                        if small.value is None:
                            return None
                        used.append((f"{_function_name(self)}()", small.value))
                        return self.evaluate(small.value, used, depth + 1)
                    if ts is cst.Raise:
                        raise NotLiteral
                    if ts is cst.Assign and len(small.targets) == 1 and type(small.targets[0].target) is cst.Name:
                        names: list = []
                        try:
                            frame[small.targets[0].target.value] = _Known(
                                self.evaluate(small.value, names, depth + 1), names)
                        except Unknown:
                            raise
                        except NotLiteral:
                            frame[small.targets[0].target.value] = UNBOUND
                    else:
                        for n in _bound(small):
                            frame[n] = UNBOUND
                continue
            if t is cst.If:
                clauses = if_clauses(s)
                live = decided.get(id(s))
                if live is None:
                    live = self.branch(s, depth)
                if live is None:  # not known which branch runs
                    if _returns(s):
                        raise NotLiteral
                    for n in _bound(s):
                        frame[n] = UNBOUND
                    continue
                if 0 <= live < len(clauses):
                    v = self.run(clauses[live], frame, used, depth)
                    if v is not _FELL_OFF:
                        return v
                continue
            if t in (cst.FunctionDef, cst.ClassDef):
                frame[s.name.value] = UNBOUND
                continue
            if t is cst.With:
                v = self.run(_stmts(s.body), frame, used, depth)
                if v is not _FELL_OFF:
                    return v
                continue
            if _returns(s):  # a loop or a try that may return: not known
                raise NotLiteral
            for n in _bound(s):
                frame[n] = UNBOUND
        return _FELL_OFF

    def branch(self, node: cst.If, depth: int) -> int | None:
        """The index of the clause an `if` chain takes, its tests known values; else None."""
        i, o = 0, node
        while o is not None:
            if type(o) is not cst.If:
                return i
            try:
                v = truth(self.evaluate(o.test, [], depth + 1))
            except Unknown:
                raise
            except NotLiteral:
                return None
            if v is None:
                return None
            if v:
                return i
            i += 1
            o = o.orelse
        return -1


class _Known:
    """A name's value, known: bound by a call's frame (`run`)."""

    __slots__ = ("value", "used")

    def __init__(self, value, used: list):
        self.value, self.used = value, used


_FELL_OFF = object()  # a function's statements ran to their end without a return


def _function_name(v: Values) -> str:
    fn = next((f for f in program(v.p).funcs.values() if f is not None and id(f) == v.calling[-1]), None)
    return fn.name.value if fn is not None else "?"


def _body(fn: cst.FunctionDef) -> list:
    return _stmts(fn.body)


def _bound(node) -> list[str]:
    """The names a statement binds (not inside nested functions)."""
    out: list = []
    stack = [node]
    while stack:
        x = stack.pop()
        t = type(x)
        if t is cst.AssignTarget:
            out.extend(names_bound(x.target))
            continue
        if t in (cst.AugAssign, cst.AnnAssign):
            out.extend(names_bound(x.target))
        elif t is cst.For:
            out.extend(names_bound(x.target))
        elif t is cst.WithItem and x.asname is not None:
            out.extend(names_bound(x.asname.name))
        elif t in (cst.FunctionDef, cst.ClassDef):
            out.append(x.name.value)
            continue
        elif t is cst.Lambda:
            continue
        stack.extend(kids(x))
    return out


def _returns(node) -> bool:
    stack = [node]
    while stack:
        x = stack.pop()
        if type(x) in (cst.Return, cst.Raise):
            return True
        if type(x) in (cst.FunctionDef, cst.ClassDef, cst.Lambda) and x is not node:
            continue
        stack.extend(kids(x))
    return False


def _label(p: Parsed, node) -> str:
    """How a container is named in a value's origins: `CONFIG`, `Env.CFG`, `{...}`."""
    return node.value if type(node) is cst.Name else clip(p, node) if type(node) is not cst.Dict else "{...}"


_COMPARE = {cst.Equal: lambda a, b: a == b, cst.NotEqual: lambda a, b: a != b, cst.LessThan: lambda a, b: a < b,
            cst.LessThanEqual: lambda a, b: a <= b, cst.GreaterThan: lambda a, b: a > b,
            cst.GreaterThanEqual: lambda a, b: a >= b, cst.In: lambda a, b: a in b, cst.NotIn: lambda a, b: a not in b,
            cst.Is: lambda a, b: a is b, cst.IsNot: lambda a, b: a is not b}


def compare(op, a, b) -> bool:
    """a op b on plain values (numbers, strings, None, lists), or NotLiteral."""
    plain = (int, float, str, type(None), list)
    if not isinstance(a, plain) or not isinstance(b, plain) or isinstance(a, (DevStr, QName)) \
            or isinstance(b, (DevStr, QName)):
        raise NotLiteral
    if op in (cst.Is, cst.IsNot) and not (a is None or b is None):
        raise NotLiteral
    fn = _COMPARE.get(op)
    if fn is None:
        raise NotLiteral
    try:
        return bool(fn(a, b))
    except TypeError:
        raise NotLiteral from None


def arith(op, a, b):
    """a op b on numbers, or NotLiteral."""
    try:
        if op is cst.Add:
            return a + b
        if op is cst.Subtract:
            return a - b
        if op is cst.Multiply:
            return a * b
        if op is cst.Divide:
            return a / b
        if op is cst.FloorDivide:
            return a // b
        if op is cst.Modulo:
            return a % b
        if op is cst.Power and abs(b) <= budget.POWER_EXPONENT and abs(a) < 1e6:
            return a ** b
    except (ZeroDivisionError, OverflowError, ValueError):
        raise NotLiteral from None
    raise NotLiteral


def env_read(p: Parsed, node) -> str | None:
    """The variable of `os.environ["X"]`, `os.environ.get("X", d)`, `os.getenv("X")`, possibly
    converted (`int(...)`), else None."""
    while type(node) is cst.Call and type(node.func) is cst.Name and node.func.value in ("int", "float", "str") \
            and len(node.args) == 1:
        node = node.args[0].value
    if type(node) is cst.Subscript and qualified_name(p, node.value) == "os.environ" and len(node.slice) == 1 \
            and type(node.slice[0].slice) is cst.Index:
        k = node.slice[0].slice.value
    elif type(node) is cst.Call and qualified_name(p, node.func) in ("os.environ.get", "os.getenv") and node.args:
        k = node.args[0].value
    else:
        return None
    return k.evaluated_value if type(k) is cst.SimpleString else None


def environment(p: Parsed, node) -> str | None:
    """The variable a value is read from (`os.environ.get("LR", "1e-4")`, also inside `float(...)`), or None."""
    stack = [node]
    while stack:
        n = stack.pop()
        if type(n) is cst.Call:
            q = qualified_name(p, n.func)
            if q in ("os.environ.get", "os.getenv") and n.args:
                v = n.args[0].value
                return v.evaluated_value if type(v) is cst.SimpleString and v.evaluated_value else "?"
            stack.extend(a.value for a in n.args)
        elif type(n) is cst.Subscript and qualified_name(p, n.value) == "os.environ":
            return "?"
    return None


def clip(p: Parsed, node) -> str:
    text = " ".join(p.code(node).split())
    return text if len(text) <= 40 else text[:37] + "..."


def literal(p: Parsed, node) -> bool:
    """A value written as itself: a number (signed), a string, True/False/None, a dotted name the
    imports resolve (torch.bfloat16), or a tuple or list of those."""
    t = type(node)
    if t in (cst.Integer, cst.Float, cst.SimpleString):
        return True
    if t is cst.ConcatenatedString:
        return node.evaluated_value is not None
    if t is cst.Name:
        return node.value in CONSTANTS
    if t is cst.UnaryOperation:
        return type(node.operator) in (cst.Minus, cst.Plus) and type(node.expression) in (cst.Integer, cst.Float)
    if t is cst.Attribute:
        return qualified_name(p, node) is not None
    if t in (cst.Tuple, cst.List):
        return len(node.elements) <= 64 and all(type(e) is cst.Element and literal(p, e.value)
                                                for e in node.elements)
    return False
