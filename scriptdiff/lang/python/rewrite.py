"""The rewrite of specialisation: a file's statement lists as the program one device runs.

After the walk (decider.py) decided the device tests, the statement lists the reader built
(parse.St) are rewritten: a decided `if` becomes the statements of its live clause, the other
clauses are set aside (their lines listed as SD019 masks, their calls read for no facts), a
decided conditional expression reads as its live operand (parse.Norm, facts), a device-keyed
dict indexed by the device as this device's entry, a device name (`DEVICE`, `get_device()`) as
one, and the statements that hold a specialised part are marked so that text equality does not
skip them. A branch that only raises on the other device makes this side's branch set aside too:
an option the other device refuses has no counterpart there.
"""
from __future__ import annotations

from collections import Counter

import libcst as cst

from ... import budget
from ...ruleset.devices import family_of
from .decider import Decider
from .evaluate import MISSING, UNDECIDED, DictRef, FuncRef
from .evaluate.kinds import may_name_switch
from .parse import Parsed, St, kids


class Rewriter:
    """Rewrites one file's statements for its device (`own`, the decisions of its walk; `other`,
    a function giving the other device's, computed when a refusal or a flag needs them) into
    `spec` (specialise.Specialised)."""

    def __init__(self, p: Parsed, own: Decider, other, spec):
        self.p, self.own, self._other, self.spec = p, own, other, spec
        self._reads: Counter | None = None
        self._names: list | None = None  # the module names worth a look (module_name)
        self._name_set: set | None = None

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
                    # a file that never tests for the NPU (a GPU script of a pair) has no NPU branch to
                    # refuse with: read for the NPU, its raise is no option the NPU refuses
                    theirs = self.other.ifs.get(k) if refusals and self.own.saw_npu else None
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
                stack.extend(kids(x))
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
        stack = [node]
        if st.kind == "compound":  # the header only: its blocks are their own statements
            stack = [getattr(node, f) for f in ("test", "iter", "items", "decorators", "params", "returns", "bases")
                     if getattr(node, f, None) is not None]
        if not (("if" in text and "else" in text) or (" and " in text or " or " in text) and self.own.saw_test
                or self.mentions(text, stack) or "=" in text and may_name_switch(text)):
            return False
        found = False
        while stack:
            x = stack.pop()
            if isinstance(x, (list, tuple)):
                stack.extend(x)
                continue
            if not isinstance(x, cst.CSTNode):
                continue
            t = type(x)
            if t is cst.AssignTarget and type(x.target) is cst.Name:
                continue  # `D1 = D0`: the name bound is no device read (only its value is)
            if t is cst.Arg and x.keyword is not None and self.switched(x.value):
                found = True  # autocast(enable=cfg.use_gpu): off on the NPU run, as the GPU's switch is there
                continue
            if t is cst.BooleanOperation:
                rest = self.reduced(x)
                if rest is not None:  # `args.sync and device.type == "cuda"` on the GPU: `args.sync`
                    self.spec.live[id(x)] = rest
                    found = True
                    stack.append(rest)
                    continue
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
            stack.extend(kids(x))
        return found

    def switched(self, v) -> bool:
        """A keyword's value made of settings' device switches only (`enable=cfg.use_gpu or
        cfg.use_mlu`): this device's answer, True or False, stands for it (live)."""
        if type(v) not in (cst.Attribute, cst.Name, cst.BooleanOperation, cst.UnaryOperation) or id(v) in self.spec.live:
            return False
        d = self.own
        d.hits = []
        try:
            val = d.ev(v, d.module)
        except Exception:
            return False
        if not isinstance(val, bool) or not d.hits or any(h != "device switch" for h in d.hits):
            return False
        self.spec.live[id(v)] = cst.Name("True" if val else "False")
        self.spec.tests += 1
        self.spec.decided["device switch"] += 1
        return True

    def mentions(self, text: str, roots: list) -> bool:
        """The statement names one of the module's device names, dicts or functions: a look at
        its text when they are few, else at its names (linear however many the module binds)."""
        if len(self._names) <= budget.NAMES_BY_TEXT:
            return any(n in text for n in self._names)
        if self._name_set is None:
            self._name_set = set(self._names)
        stack = list(roots)
        while stack:
            x = stack.pop()
            if isinstance(x, (list, tuple)):
                stack.extend(x)
            elif type(x) is cst.Name:
                if x.value in self._name_set:
                    return True
            elif isinstance(x, cst.CSTNode):
                stack.extend(kids(x))
        return False

    def reduced(self, x: cst.BooleanOperation):
        """The operand a boolean operation comes down to when its other operand is a device test
        this device answers with the neutral value (true in `and`, false in `or`), else None."""
        d = self.own
        neutral = type(x.operator) is cst.And
        for test, other in ((x.left, x.right), (x.right, x.left)):
            d.hits = []
            v = d.ev(test, d.module)
            if d.hits and v is not UNDECIDED and v is not MISSING and bool(v) is neutral:
                d.hits = []
                if d.ev(other, d.module) is UNDECIDED or not d.hits:  # the other is no decided test
                    return other
        return None

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


def _is_refusal(sts: list[St]) -> bool:
    """A block that only raises (an option this device refuses)."""
    if not sts:
        return False
    for s in sts:
        if s.kind != "simple" or not all(type(x) is cst.Raise for x in s.node.body):
            return False
    return True


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
        stack.extend(kids(x))
