"""Hyperparameter facts read from Python code.

argparse `add_argument(..., default=)`, TrainingArguments-like config constructors,
`from_pretrained(attn_implementation=, torch_dtype=)`, optimizer constructors, GradScaler,
autocast, clip_grad_norm_, seeds and determinism switches: which calls and keywords are read
is the `fact_calls` table in rules/python.yaml; keys and types come from the vocabulary.
Values are evaluated without running anything: literals, arithmetic on literals, module
level constants (`LR = 1e-4`) and `args.<dest>` references to an argparse default. An
evaluation is metered (scriptdiff/budget.py): constants that refer to each other many times
over (`A1 = [A0, A0, ...]`), or products of huge numbers, are too large to evaluate, which the
input's account says (Parsed.too_large) instead of building them.

Every argument read this way is *owned* by the hyperparameter comparison: the structural
diff sees it as a placeholder, so a changed lr is reported once, as a hyperparameter.
"""
from __future__ import annotations

import ast
from functools import lru_cache

import libcst as cst

from ... import budget
from ...budget import Meter, TooLarge, check_number, note
from ...model import ORIGIN_DEFAULT, RANK_CODE, RANK_DEFAULT, Fact
from ...ruleset.secrets import is_secret, redact_text, withheld
from ...ruleset.vocabulary import (convert, fits, key_type, lookup, name_key, nested_key, norm_name, normalize,
                           spelling_index, value_ports)
from .focus import fact_callee_names
from ...ruleset.devices import family_of
from ...ruleset.rules import RuleSet, derived
from .parse import Norm, Parsed, canon_qn, dotted, match_name, rules
from .specialise import MISSING, device_key, device_value


class NotLiteral(Exception):
    pass


class QName(str):
    """A dotted name that resolved through the imports (torch.bfloat16)."""


def norm_dtype(v):
    if v is None:
        return None
    s = str(v).strip()
    for canon, names in (rules().raw.get("dtype_names") or {}).items():
        if s in names or s.rsplit(".", 1)[-1] in names:
            return canon
    return s


def typed(key: str, v):
    t = key_type(key)
    if t == "dtype" or key == "params_dtype":
        d = norm_dtype(v)
        if key in value_ports() and isinstance(v, (str, int)) and not isinstance(v, bool) \
                and d not in (rules().raw.get("dtype_names") or {}):
            d = convert(key, v)[1]  # Lightning precision="bf16-mixed", precision=16
        return d
    if isinstance(v, QName):
        v = str(v)
    return normalize(v, t)


@derived
def code_names(rs: RuleSet) -> dict:
    """rules/python.yaml generic_keywords.names: keyword -> key (None: never a setting)."""
    return dict((rules(rs).raw.get("generic_keywords") or {}).get("names") or {})


@derived
def generic_skip(rs: RuleSet) -> tuple:
    return tuple((rules(rs).raw.get("generic_keywords") or {}).get("skip") or ())


def python_spelled(qn: str) -> bool:
    """A callee whose keywords the vocabulary's `python` column spells (an optimizer's eps=)."""
    return match_name(qn.rsplit(".", 1)[-1], (rules().raw.get("generic_keywords") or {}).get("python_spellings") or ())


@lru_cache(maxsize=budget.NUMBER_MEMO)
def _number(text: str):
    """An Integer or Float literal's value (`1_000` is 1000); cached: a constant repeated
    a hundred thousand times is parsed once."""
    return ast.literal_eval(text.replace("_", ""))


class Reader:
    def __init__(self, p: Parsed, side: str):
        self.p = p
        self.side = side
        self.nm = Norm(p)
        self.argdests: dict[str, str] = {}
        self.const_keys: dict[str, str] = {}  # module constant -> the key it is a setting of
        self.meter = Meter()  # the evaluation work of this reader (budget.py)
        self.steps = 0  # of the value being evaluated
        self.too_large: set = set()  # nodes whose value exceeded the budget once: not tried again

    # ------------------------------------------------------------------ evaluation
    def evaluate(self, node, used: list, depth: int = 0):
        if depth:
            return self._evaluate(node, used, depth)
        if id(node) in self.too_large:  # the budget is spent once per value, not once per reader
            raise NotLiteral
        self.steps = 0
        try:
            return self._evaluate(node, used, 0)
        except TooLarge as e:  # not known statically, and said so
            self.too_large.add(id(node))
            what = note(f"`{_clip(self.p, node)}`", e, self.p.line_of(node))
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
            return _number(node.value)
        if t in (cst.SimpleString, cst.ConcatenatedString):
            v = node.evaluated_value
            if v is None:
                raise NotLiteral
            return v
        if t is cst.Name:
            if node.value in ("True", "False", "None"):
                return {"True": True, "False": False, "None": None}[node.value]
            c = self.p.consts.get(node.value)
            if c is not None:
                used.append((node.value, c))
                return self.evaluate(c, used, depth + 1)
            q = self.p.aliases.get(node.value)
            if q is not None:
                return QName(canon_qn(q, None))
            raise NotLiteral
        if t is cst.Attribute:
            q = self.nm.qualified(node)
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
            r = _arith(type(node.operator), a, b)
            check_number(r)
            return r
        if t in (cst.Tuple, cst.List):
            return [self.evaluate(e.value, used, depth + 1) for e in node.elements]
        raise NotLiteral

    def device_entry(self, c: cst.Dict, node: cst.Subscript, used: list, depth: int):
        """DTYPES[device] with DTYPES = {"npu": torch.float16, "cuda": torch.bfloat16} and the key
        this side's device (specialise.py): the entry of its family, else None."""
        sp = self.p.spec
        if sp is None:
            return None
        key = device_key(self.p, node.slice[0].slice.value)
        if key is None:
            return None
        for el in c.elements:
            if type(el) is cst.DictElement and type(el.key) in (cst.SimpleString, cst.ConcatenatedString):
                ek = el.key.evaluated_value
                if isinstance(ek, str) and family_of(ek) == sp.family:
                    used.append((f"{node.value.value}[{ek!r}]", el.value))
                    return el.value
        return None

    def call_value(self, node: cst.Call, used: list, depth: int):
        """int(3e6), float(os.environ.get("LR", "1e-4")), max(a, b): what the call returns."""
        if any(a.star or a.keyword is not None for a in node.args):
            raise NotLiteral
        f = node.func
        q = self.nm.qualified(f)
        if q in ("os.environ.get", "os.getenv") and len(node.args) == 2:
            name = self.evaluate(node.args[0].value, [], depth + 1)
            v = self.evaluate(node.args[1].value, used, depth + 1)
            used.append((f"${name}", node.args[1].value))
            return v
        if q is not None or type(f) is not cst.Name or f.value in self.p.consts:
            raise NotLiteral
        fn = _BUILTINS.get(f.value)
        if fn is None:
            raise NotLiteral
        vals = [self.evaluate(a.value, used, depth + 1) for a in node.args]
        if not vals or not all(isinstance(v, (int, float, str)) and not isinstance(v, bool) for v in vals):
            raise NotLiteral
        try:
            return fn(*vals)
        except (TypeError, ValueError, OverflowError):
            raise NotLiteral from None

    def argref(self, node) -> str | None:
        """`args.lr` where lr is an argparse dest read as a fact: its key."""
        if type(node) is cst.Attribute and type(node.value) is cst.Name:
            return self.argdests.get(node.attr.value)
        return None

    # --------------------------------------------------------------------- facts
    def fact(self, key: str, value, node, used: list, callee: str, written: str | None = None,
             index: int | None = None) -> Fact:
        p = self.p
        if written is None and type(node) is cst.Arg and node.keyword is not None:
            written = node.keyword.value  # from_pretrained(..., use_flash_attention_2=True)
        via = None
        line = p.line_of(node)
        if used:
            name, cnode = used[-1]
            written_at = node.value if type(node) is cst.Arg else node
            if type(written_at) in (cst.Name, cst.Attribute, cst.Subscript, cst.IfExp):
                line = p.line_of(cnode, line)  # lr=LR: where LR is set; lr=LR * 2 stays where it is computed
            via = name
            for _n, c in used:
                p.owned[id(c)] = key
        value, source = typed(key, value), p.text_at(line)
        known = set()
        if isinstance(value, str) and is_secret(key, value):  # a credential passed as a setting: never shown
            value, known = withheld(value), {value}
        source = redact_text(source, known, code=True)  # and none shown in the line of another setting
        meta = {"callee": callee, "written_key": written} if written else {"callee": callee}
        meta["origin"] = self.origin(node.value if type(node) is cst.Arg else node, index) if not known \
            else {"computed": "a secret-looking value"}
        if callee != "argparse":  # an option is the flag's setting; a call's is that call's (compare.slot)
            meta["slot"] = f"{callee.rsplit('.', 1)[-1]}.{written or key}"
        return Fact(key=key, value=value, check="hyperparameters", path=p.name, line=line,
                    source=source, rank=RANK_CODE, via=via, meta=meta)

    def default(self, key: str, value, callee: str, node) -> Fact:
        return Fact(key=key, value=typed(key, value), check="hyperparameters", path=self.p.name, line=None,
                    source="default", origin=ORIGIN_DEFAULT, rank=RANK_DEFAULT, via=f"{callee} default",
                    meta={"callee": callee, "call_line": self.p.line_of(node), "call": self.p.position(node)})

    # ------------------------------------------------------------------ provenance
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
                    return {"computed": f"`{_clip(p, node)}` is chosen by a device test"}
                t = type(node)
                if index is not None and t in (cst.Tuple, cst.List):
                    els = node.elements
                    if index >= len(els) or type(els[index]) is not cst.Element:
                        break
                    node, index = els[index].value, None
                    continue
                if index is None and _literal(node, self.nm):
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
                if t is cst.Attribute and self.nm.qualified(node) is None:
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
                env = _environment(node, self.nm)
                if env is not None:
                    return {"environment": env}
                break
        except (NotLiteral, TooLarge, RecursionError):
            pass
        return {"computed": f"`{_clip(p, node)}` is computed" + (f" (through {', '.join(via)})" if via else "")}

    def dict_entry(self, c: cst.Dict, node: cst.Subscript):
        """The value node of CONFIG["lr"] (or this device's entry of a device-keyed dict), or None."""
        if len(node.slice) != 1 or type(node.slice[0].slice) is not cst.Index:
            return None
        by_device = self.device_entry(c, node, [], 1)
        if by_device is not None:
            return by_device
        k = self.evaluate(node.slice[0].slice.value, [], 1)
        hits = [el.value for el in c.elements if type(el) is cst.DictElement
                and _literal(el.key, self.nm) and self.evaluate(el.key, [], 1) == k]
        return hits[-1] if hits else None

    def read_arg(self, keys, arg, call, callee: str, vmap: dict | None = None, written: str | None = None) -> bool:
        """Facts from one argument; marks it owned. keys: a key or a list (tuple argument)."""
        p = self.p
        ref = self.argref(arg.value)
        if ref is not None and ref == keys:
            # the value is the argparse fact itself; the call is not a fact of its own, so a
            # call removed on one side is still a structural difference
            p.owned[id(arg.value)] = keys
            return True
        # an option read under another key (torch.cuda.manual_seed_all(args.seed): device_seed)
        # is that key's fact too, with the option's default
        used: list = []
        try:
            v = self.evaluate(arg.value, used)
        except (NotLiteral, Exception):
            return False
        if isinstance(keys, list):
            if not isinstance(v, list) or len(v) != len(keys):
                return False
            for i, (k, x) in enumerate(zip(keys, v)):
                p.facts.append(self.fact(k, x, arg, used, callee, index=i))
                p.facts[-1].meta["call"] = p.position(call)
            p.owned[id(arg.value)] = "+".join(keys)
        else:
            if vmap is not None:
                if v in vmap:
                    v = vmap[v]
                elif isinstance(v, str) and v in {str(k): 1 for k in vmap}:
                    v = {str(k): x for k, x in vmap.items()}[v]
            p.facts.append(self.fact(keys, v, arg, used, callee, written))
            p.facts[-1].meta["call"] = p.position(call)
            p.owned[id(arg.value)] = keys
        p.fact_calls.add(id(call))
        return True

    def argparse(self, call) -> None:
        p = self.p
        flags, kws = [], {}
        for a in call.args:
            if a.keyword is not None:
                kws[a.keyword.value] = a
            elif type(a.value) is cst.SimpleString:
                s = a.value.evaluated_value
                if isinstance(s, str):
                    flags.append(s)
        if "dest" in kws and type(kws["dest"].value) is cst.SimpleString:
            dest = kws["dest"].value.evaluated_value
        else:
            longs = [f for f in flags if f.startswith("--")]
            cand = longs[0] if longs else (flags[0] if flags else None)
            if cand is None:
                return
            dest = cand.lstrip("-").replace("-", "_")
        key = lookup(dest)
        if key is None:
            return
        if "default" in kws:
            if self.read_arg(key, kws["default"], call, "argparse", written=dest):
                self.argdests[dest] = key
            return
        act = kws.get("action")
        if act is not None and type(act.value) is cst.SimpleString and act.value.evaluated_value in ("store_true", "store_false"):
            v = act.value.evaluated_value == "store_false"
            p.facts.append(self.fact(key, v, act, [], "argparse", written=dest))
            p.facts[-1].meta["origin"] = {"computed": f"the default of `action={act.value.value}` follows from "
                                                      f"the action"}
            p.owned[id(act.value)] = key
            p.fact_calls.add(id(call))
            self.argdests[dest] = key

    def call(self, call) -> None:
        p = self.p
        raw = self.nm.callee(call)
        if raw is None and type(call.func) is cst.Attribute:  # torch.Generator().manual_seed(0): a method of a value
            raw = "?." + call.func.attr.value
        if raw is None:
            return
        qn = canon_qn(raw, None)
        last = qn.rsplit(".", 1)[-1]
        entry = None
        for e in rules().raw.get("fact_calls", []):
            if match_name(qn, e["match"]) or match_name(raw, e["match"]):
                entry = e
                break
        if entry is None:
            return
        if entry.get("framework"):
            p.frameworks.add(entry["framework"])
        args = entry.get("args") or {}
        positional = entry.get("positional") or (entry.get("positional_by_name") or {}).get(last) or []
        vmaps = rules().raw.get("value_maps") or {}
        seen: set = set()
        pos = 0
        dtype_flags = {}
        for a in call.args:
            if a.star:
                pos = 10**6
                continue
            if a.keyword is None:
                kwname = positional[pos] if pos < len(positional) else None
                pos += 1
                if kwname is None or kwname not in args:
                    continue
                seen.add(kwname)
                self.read_arg(args[kwname], a, call, qn, vmaps.get(kwname))
                continue
            kw = a.keyword.value
            if kw in args:
                seen.add(kw)
                self.read_arg(args[kw], a, call, qn, vmaps.get(kw))
            elif entry.get("spellings") == "hf":
                if kw in ("bf16", "fp16"):
                    dtype_flags[kw] = a
                    continue
                key = spelling_index()["hf"].get(kw) or (rules().raw.get("hf_extra") or {}).get(kw) or (
                    spelling_index()["python"].get(kw) if python_spelled(qn) else None)
                if key is not None:
                    self.read_arg(key, a, call, qn, vmaps.get(kw))
        if dtype_flags:
            self.mixed_precision(dtype_flags, call, qn)
        for kw, dv in (entry.get("defaults") or {}).items():
            if kw in seen:
                continue
            keys = args.get(kw)
            if isinstance(keys, list):
                for k, x in zip(keys, dv):
                    p.facts.append(self.default(k, x, qn, call))
            elif keys:
                p.facts.append(self.default(keys, dv, qn, call))

    def dataclass_fields(self, node: cst.ClassDef) -> None:
        """`@dataclass class Args: learning_rate: float = field(default=2e-5)` (HfArgumentParser style)."""
        if not any((dotted(d.decorator.func if type(d.decorator) is cst.Call else d.decorator) or "")
                   .rsplit(".", 1)[-1] == "dataclass" for d in node.decorators):
            return
        if not isinstance(node.body, cst.IndentedBlock):
            return
        for stmt in node.body.body:
            if type(stmt) is not cst.SimpleStatementLine:
                continue
            for small in stmt.body:
                if type(small) is not cst.AnnAssign or type(small.target) is not cst.Name or small.value is None:
                    continue
                name = small.target.value
                key = lookup(name, ("hf", "python", "megatron", "aliases"))
                if key is None:
                    continue
                value = small.value
                if type(value) is cst.Call and (dotted(value.func) or "").rsplit(".", 1)[-1] == "field":
                    value = next((a.value for a in value.args if a.keyword is not None and a.keyword.value == "default"), None)
                    if value is None:
                        continue
                used: list = []
                try:
                    v = self.evaluate(value, used)
                except NotLiteral:
                    continue
                f = self.fact(key, v, value, used, f"{node.name.value}.{name}", written=name)
                f.meta.pop("slot", None)  # a dataclass field is an option (HfArgumentParser): the flag's setting
                self.p.facts.append(f)
                self.p.owned[id(value)] = key
                self.argdests.setdefault(name, key)

    # ------------------------------------------------- configs written as code (issue 27)
    def module_settings(self) -> None:
        """Module-level assignments whose target names a setting (`train_steps = 300`,
        `_C.SOLVER.BASE_LR = 1e-4`) and the keys of module-level dict literals
        (`CONFIG = {"lr": 1e-4}`): facts under the keys they spell (rules/python.yaml
        `generic_keywords`; vocabulary.name_key, nested_key)."""
        dead = self.p.spec.dead_calls if self.p.spec is not None else ()
        for st in self.p.body:
            if st.kind != "simple":
                continue
            for small in st.node.body:
                if type(small) is cst.Assign and len(small.targets) == 1:
                    target, value = small.targets[0].target, small.value
                elif type(small) is cst.AnnAssign and small.value is not None:
                    target, value = small.target, small.value
                else:
                    continue
                if type(value) is cst.Call and id(value) in dead:
                    continue
                name = dotted(target)
                if name is None or self.nm.qualified(target) is not None:
                    continue  # torch.backends.cudnn.benchmark = True: a library's switch, not a config
                parts = name.split(".")
                if type(value) is cst.Dict:
                    self.dict_settings(value, parts)
                    continue
                if len(parts) == 1:
                    hit = (self.code_key(parts[0]), False)
                else:
                    hit = nested_key(parts[1:]) or (None, False)
                    if hit[0] is not None and code_names().get(norm_name(parts[-1]), hit[0]) is None:
                        hit = (None, False)
                if hit[0] is None:
                    continue
                if self.setting(hit[0], value, ".".join(parts[1:]) or parts[0], name, "module level",
                                sectioned=hit[1]) and len(parts) == 1:
                    self.const_keys[parts[0]] = hit[0]

    def dict_settings(self, node: cst.Dict, path: list[str], depth: int = 0) -> None:
        """The string keys of a module-level dict literal, nested dicts walked (up to budget.DICT_DEPTH levels)."""
        if depth > budget.DICT_DEPTH:
            return
        for el in node.elements:
            if type(el) is not cst.DictElement or type(el.key) is not cst.SimpleString:
                continue
            k = el.key.evaluated_value
            if not isinstance(k, str) or not k:
                continue
            if type(el.value) is cst.Dict:
                self.dict_settings(el.value, path + [k], depth + 1)
                continue
            hit = nested_key(path[1:] + [k]) if len(path) > 1 else (self.code_key(k), False)
            if hit is None or hit[0] is None or code_names().get(norm_name(k), hit[0]) is None:
                continue
            self.setting(hit[0], el.value, ".".join(path[1:] + [k]), f"{'.'.join(path)}[{k!r}]", "module level",
                         sectioned=hit[1])

    def code_key(self, name: str) -> str | None:
        """The key a keyword or a module-level name spells in code (generic_keywords.names first)."""
        names = code_names()
        n = norm_name(name)
        if n in names:
            return names[n]
        return name_key(name)

    def keywords(self, call: cst.Call) -> None:
        """Every keyword of a call (whatever the callee) whose name spells a setting, not already
        read by the fact table: a fact under that key, its callee named in `meta["callee"]`, its
        slot `Callee.keyword` (TrainerConfig(global_batch_size=16): global_batch_size)."""
        raw = self.nm.callee(call)
        qn = canon_qn(raw, None) if raw is not None else (dotted(call.func) or "")
        if not qn or match_name(qn, generic_skip()):
            return
        last = qn.rsplit(".", 1)[-1]
        sig = rules().signatures.get(qn)  # a known signature binds positionals: DataLoader(ds, 8) is batch_size=8
        params = sig[0][:sig[0].index("*")] if sig is not None and "*" in sig[0] else (sig[0] if sig else [])
        pos = 0
        for a in call.args:
            if a.star:
                break
            kw = a.keyword.value if a.keyword is not None else (params[pos] if pos < len(params) else None)
            if a.keyword is None:
                pos += 1
            if kw is None or id(a.value) in self.p.owned:
                continue
            key = self.code_key(kw)
            if key is None and python_spelled(qn):
                key = spelling_index()["python"].get(kw)
            if key is None:
                continue
            self.setting(key, a.value, f"{last}.{kw}", kw, qn, arg=a, call=call)

    def setting(self, key: str, value, slot: str, written: str, callee: str, sectioned: bool = False,
                arg=None, call=None) -> bool:
        """One setting read by its name: a fact when its value is known and fits the key."""
        if id(value) in self.p.owned:  # LR = 3e-4 read by AdamW(lr=LR) already
            return False
        used: list = []
        try:
            v = self.evaluate(value, used)
        except (NotLiteral, Exception):
            return False
        if v is None or isinstance(v, (bytes, dict)) or (isinstance(v, QName) and key_type(key) != "dtype"
                                                          and key not in ("params_dtype", "load_dtype")):
            return False
        if used and self.const_keys.get(used[0][0]) == key:
            self.p.owned[id(value)] = key  # read from a module constant that is this setting already
            return False
        if not fits(key, v):
            return False
        f = self.fact(key, v, arg if arg is not None else value, used, callee, written)
        if f.value is None:
            return False
        f.meta["slot"] = slot
        if sectioned:
            f.meta["sectioned"] = True
        self.p.facts.append(f)
        self.p.owned[id(value)] = key
        if call is not None:
            self.p.fact_calls.add(id(call))
        return True

    def mixed_precision(self, flags: dict, call, qn: str) -> None:
        vals = {}
        for kw, a in flags.items():
            try:
                vals[kw] = bool(self.evaluate(a.value, []))
            except NotLiteral:
                return
        dtype = "bf16" if vals.get("bf16") else ("fp16" if vals.get("fp16") else "fp32")
        a = flags.get(dtype) or next(iter(flags.values()))
        self.p.facts.append(self.fact("params_dtype", dtype, a, [], qn))
        self.p.facts[-1].meta["origin"] = {"computed": f"set by the {' and '.join(sorted(flags))} switches together"}
        for a in flags.values():
            self.p.owned[id(a.value)] = "params_dtype"
        self.p.fact_calls.add(id(call))


def _arith(op, a, b):
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


def env_read(nm, node) -> str | None:
    """The variable of `os.environ["X"]`, `os.environ.get("X", d)`, `os.getenv("X")`, possibly
    converted (`int(...)`), else None."""
    while type(node) is cst.Call and type(node.func) is cst.Name and node.func.value in ("int", "float", "str") \
            and len(node.args) == 1:
        node = node.args[0].value
    if type(node) is cst.Subscript and nm.qualified(node.value) == "os.environ" and len(node.slice) == 1 \
            and type(node.slice[0].slice) is cst.Index:
        k = node.slice[0].slice.value
    elif type(node) is cst.Call and nm.qualified(node.func) in ("os.environ.get", "os.getenv") and node.args:
        k = node.args[0].value
    else:
        return None
    return k.evaluated_value if type(k) is cst.SimpleString else None


def _clip(p: Parsed, node) -> str:
    text = " ".join(p.code(node).split())
    return text if len(text) <= 40 else text[:37] + "..."


def _literal(node, nm: Norm) -> bool:
    """A value written as itself: a number (signed), a string, True/False/None, a dotted name the
    imports resolve (torch.bfloat16), or a tuple or list of those."""
    t = type(node)
    if t in (cst.Integer, cst.Float, cst.SimpleString):
        return True
    if t is cst.ConcatenatedString:
        return node.evaluated_value is not None
    if t is cst.Name:
        return node.value in ("True", "False", "None")
    if t is cst.UnaryOperation:
        return type(node.operator) in (cst.Minus, cst.Plus) and type(node.expression) in (cst.Integer, cst.Float)
    if t is cst.Attribute:
        return nm.qualified(node) is not None
    if t in (cst.Tuple, cst.List):
        return len(node.elements) <= 64 and all(type(e) is cst.Element and _literal(e.value, nm)
                                                for e in node.elements)
    return False


def _environment(node, nm: Norm) -> str | None:
    """The variable a value is read from (`os.environ.get("LR", "1e-4")`, also inside `float(...)`), or None."""
    stack = [node]
    while stack:
        n = stack.pop()
        if type(n) is cst.Call:
            q = nm.qualified(n.func)
            if q in ("os.environ.get", "os.getenv") and n.args:
                v = n.args[0].value
                return v.evaluated_value if type(v) is cst.SimpleString and v.evaluated_value else "?"
            stack.extend(a.value for a in n.args)
        elif type(n) is cst.Subscript and nm.qualified(n.value) == "os.environ":
            return "?"
    return None


_BUILTINS = {"int": int, "float": float, "str": str, "max": max, "min": min, "abs": abs, "round": round}


def option_default(p: Parsed, node) -> tuple[str, cst.CSTNode] | None:
    """`args.lr_actor` (any receiver that is not an import): ('--lr_actor', its default node)
    when exactly one argparse option or dataclass field of the file is called lr_actor."""
    if type(node) is not cst.Attribute or type(node.value) not in (cst.Name, cst.Attribute):
        return None
    if p.options is None:
        p.options = _options(p)
    return p.options.get(node.attr.value)


def _options(p: Parsed) -> dict:
    found: dict[str, list] = {}
    dead = p.spec.dead_calls if p.spec is not None else ()
    for c in p.state.calls if p.state is not None else ():
        if id(c) in dead:
            continue
        f = c.func
        if type(f) is not cst.Attribute or f.attr.value != "add_argument":
            continue
        kws = {a.keyword.value: a.value for a in c.args if a.keyword is not None}
        if "default" not in kws:
            continue
        if type(kws.get("dest")) is cst.SimpleString:
            dest = kws["dest"].evaluated_value
        else:
            flags = [a.value.evaluated_value for a in c.args
                     if a.keyword is None and type(a.value) is cst.SimpleString]
            flags = [x for x in flags if isinstance(x, str)]
            longs = [x for x in flags if x.startswith("--")]
            cand = longs[0] if longs else (flags[0] if flags else None)
            if cand is None:
                continue
            dest = cand.lstrip("-").replace("-", "_")
        if isinstance(dest, str):
            found.setdefault(dest, []).append(("--" + dest, kws["default"]))
    for st in p.body:
        if st.kind != "compound" or type(st.node) is not cst.ClassDef or not any(
                (dotted(d.decorator.func if type(d.decorator) is cst.Call else d.decorator) or "")
                .rsplit(".", 1)[-1] == "dataclass" for d in st.node.decorators):
            continue
        for s in (st.node.body.body if isinstance(st.node.body, cst.IndentedBlock) else ()):
            for small in (s.body if type(s) is cst.SimpleStatementLine else ()):
                if type(small) is not cst.AnnAssign or type(small.target) is not cst.Name or small.value is None:
                    continue
                v = small.value
                if type(v) is cst.Call and (dotted(v.func) or "").rsplit(".", 1)[-1] == "field":
                    v = next((a.value for a in v.args if a.keyword is not None and a.keyword.value == "default"), None)
                if v is not None:
                    found.setdefault(small.target.value, []).append((f"{st.node.name.value}.{small.target.value}", v))
    return {k: v[0] for k, v in found.items() if len(v) == 1}


def module_consts(p: Parsed) -> None:
    for s in p.body:
        if s.kind != "simple":
            continue
        for small in s.node.body:
            t = type(small)
            if t is cst.Assign and len(small.targets) == 1 and type(small.targets[0].target) is cst.Name:
                name = small.targets[0].target.value
            elif t is cst.AnnAssign and small.value is not None and type(small.target) is cst.Name:
                name = small.target.value
            else:
                continue
            if name in p.consts:
                p.reassigned.add(name)
            p.consts[name] = small.value


def read_facts(p: Parsed, side: str) -> None:
    """Fill p.facts, p.owned, p.fact_calls, p.frameworks."""
    if p.module is None:
        return
    module_consts(p)
    r = Reader(p, side)
    calls = p.state.calls
    if p.spec is not None and p.spec.dead_calls:  # code this side's device does not run gives no facts
        dead = p.spec.dead_calls
        calls = [c for c in calls if id(c) not in dead]
    for c in calls:
        f = c.func
        if type(f) is cst.Attribute and f.attr.value == "add_argument":
            try:
                r.argparse(c)
            except Exception:
                continue
    for st in p.body:
        if st.kind == "compound" and type(st.node) is cst.ClassDef:
            try:
                r.dataclass_fields(st.node)
            except Exception:
                continue
    exact, suffixes = fact_callee_names()
    for c in calls:
        f = c.func
        name = f.attr.value if type(f) is cst.Attribute else (f.value if type(f) is cst.Name else None)
        if name is None or name == "add_argument":
            continue
        if name not in exact and not name.endswith(suffixes):
            continue
        try:
            r.call(c)
        except Exception:
            continue
    try:  # configs written as code: module-level settings, then every call's keywords
        r.module_settings()
    except Exception:
        pass
    for c in calls:
        if any(a.keyword is not None for a in c.args):
            try:
                r.keywords(c)
            except Exception:
                continue

