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
from ..parse import Parsed, canon_qn, qualified_name
from .declared import option_default
from .device import family_entry
from .kinds import CONSTANTS, MISSING, UNDECIDED, NotLiteral, QName, number

_DEVICE_EXPRS = (cst.Call, cst.Comparison, cst.BooleanOperation, cst.UnaryOperation, cst.Name, cst.Attribute,
                 cst.Subscript)
BUILTINS = {"int": int, "float": float, "str": str, "max": max, "min": min, "abs": abs, "round": round}


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


class Values:
    """One reading's evaluation of a file's values (module doc), with its meter."""

    def __init__(self, p: Parsed):
        self.p = p
        self.meter = Meter()  # the evaluation work of this reading (budget.py)
        self.steps = 0  # of the value being evaluated
        self.too_large: set = set()  # nodes whose value exceeded the budget once: not tried again

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
        if t is cst.Subscript:  # CONFIG["lr"] of a module-level dict literal
            c = self.p.consts.get(node.value.value) if type(node.value) is cst.Name else None
            if type(c) is cst.Dict and len(node.slice) == 1 and type(node.slice[0].slice) is cst.Index:
                by_device = self.device_entry(c, node, used)
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
                            used.append((f"{node.value.value}[{k!r}]", el.value))
                            return self.evaluate(el.value, used, depth + 1)
            raise NotLiteral
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

    def device_entry(self, c: cst.Dict, node: cst.Subscript, used: list):
        """DTYPES[device] with DTYPES = {"npu": torch.float16, "cuda": torch.bfloat16} and the key
        this side's device (the device face): the entry of its family, else None."""
        sp = self.p.spec
        if sp is None or device_key(self.p, node.slice[0].slice.value) is None:
            return None
        hit = family_entry(c, sp.family)
        if hit is None:
            return None
        used.append((f"{node.value.value}[{hit[0]!r}]", hit[1]))
        return hit[1]

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
        """int(3e6), float(os.environ.get("LR", "1e-4")), max(a, b): what the call returns."""
        if any(a.star or a.keyword is not None for a in node.args):
            raise NotLiteral
        f = node.func
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
