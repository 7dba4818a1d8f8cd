"""The walk of specialisation: a file's device tests decided in execution order.

`Decider` walks the libcst tree in execution order (module-level code first, then the bodies of
functions with the module's final names), binding what each assignment gives (the device face,
evaluate/device.py, evaluates each value), and decides every `if`/`elif` chain, try-import and
conditional expression whose test it can evaluate for one device family. A test that cannot be
decided stays as written (both branches compared); code that may or may not run binds a name
only where every way agrees.
"""
from __future__ import annotations

import libcst as cst

from .evaluate import MODULE, UNDECIDED, DeviceEval, Env, FuncRef
from .evaluate.device import params
from .evaluate.program import blocks, names_bound
from .parse import Parsed, dotted, import_items, kids
from .parse import _block_body as _stmts


def _short(p: Parsed, node, limit: int = 60) -> str:
    s = " ".join(p.code(node).split())
    return s if len(s) <= limit else s[: limit - 3] + "..."


class Decider(DeviceEval):
    """Decides a file's device tests for one device family (see the module doc)."""

    def __init__(self, p: Parsed, family: str, aware: bool, patched: bool):
        super().__init__(p, family, aware, patched)
        self.ifs: dict[int, int] = {}  # id(If) -> index of its live clause (-1: none)
        self.tries: dict[int, tuple] = {}  # id(Try) -> ("body", None) | ("handler", index)
        self.exps: dict[int, bool] = {}  # id(IfExp) -> its test's value
        self.clause_idioms: dict[int, list] = {}  # id(If) -> the idioms of each clause's test
        self.idioms: dict[int, list] = {}  # id(decided node) -> idioms of its test
        self.undecided: dict[int, tuple] = {}  # id(node) -> (line, text) of a device test left as written
        self.within: list = []  # idioms of the decided device branches being walked
        self.deferred: list = []  # (FunctionDef or ClassDef, its enclosing Env)
        self.local_binds: set = set()  # names some function or class binds (shadowed)

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
        local = Env(env, cls=type(node) is cst.ClassDef)
        if type(node) is cst.FunctionDef:
            for prm in params(node):
                local.vars[prm] = (UNDECIDED, None)
                self.local_binds.add(prm)
        self.block(_stmts(node.body), local)
        if local.cls and env is self.module:  # class Env: DEVICE = ...: Env.DEVICE
            for name, (v, idiom) in list(local.vars.items()):
                if idiom and "." not in name:
                    env.vars[f"{node.name.value}.{name}"] = (v, idiom)

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
                for n in names_bound(node.target):
                    self.bind(env, n, UNDECIDED, None)
            for f in ("iter", "test", "items", "subject"):
                v = getattr(node, f, None)
                if v is not None:
                    self.exprs(v, env)
            self.undecided_blocks(blocks(node), env)

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
            elif len(small.targets) == 1 and (dotted(small.targets[0].target) or "").count(".") == 1 \
                    and dotted(small.targets[0].target).startswith("self.") and env.parent is not None \
                    and env.parent.cls:  # self.is_npu = ... in a method: a flag of the class's methods
                self.hits = []
                v = self.ev(small.value, env)
                if self.hits and v is not UNDECIDED:
                    self.bind(env.parent, dotted(small.targets[0].target), v,
                              self.hits[0] if self.hits[0].startswith("flag") else f"flag ({self.hits[0]})")
            else:
                for x in small.targets:
                    for n in names_bound(x.target):
                        self.bind(env, n, UNDECIDED, None)
        elif t is cst.AnnAssign and type(small.target) is cst.Name and small.value is not None:
            self.hits = []
            v = self.ev(small.value, env)
            self.bind(env, small.target.value, v, self.hits[0] if self.hits else None)
        elif t is cst.AugAssign:
            for n in names_bound(small.target):
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
            stack.extend(kids(x))

    # ------------------------------------------------------------------ decisions
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
            self.undecided_blocks(blocks(node), env)
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
                self.undecided_blocks(blocks(node), env)
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

    def try_live(self, node: cst.Try) -> list | None:
        """The statements a try-import runs on this device: its body (and else) where the module
        is this device's, else what comes before the import and the handler that catches its
        ImportError; None when the try imports no device's module or no handler catches."""
        fam, idiom, at = self.try_import(node)
        if fam is None:
            return None
        body = _stmts(node.body)
        if fam == self.family:
            self.hits.append(idiom)
            return list(body) + (list(_stmts(node.orelse.body)) if node.orelse is not None else [])
        h = next((i for i, hd in enumerate(node.handlers) if _catches_import_error(hd)), None)
        if h is None:
            return None
        self.hits.append(idiom)
        return list(body[:at]) + list(_stmts(node.handlers[h].body))

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

    def bind_imports(self, s, env: Env, idiom: str) -> None:
        if type(s) is not cst.SimpleStatementLine:
            return
        for small in s.body:
            if type(small) in (cst.Import, cst.ImportFrom):
                for b, _qn in import_items(small):
                    if b != "*":
                        env.vars[b.split(".")[0]] = (MODULE, f"flag ({idiom})")


def _origin(idioms: list) -> str:
    """The idiom a flag assigned in a decided branch came from."""
    first = idioms[0] if idioms else "device test"
    return first[6:-1] if first.startswith("flag (") else first


_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}


def _catches_import_error(h) -> bool:
    if h.type is None:
        return True
    names = [h.type] if type(h.type) is not cst.Tuple else [e.value for e in h.type.elements]
    return any((dotted(n) or "").rsplit(".", 1)[-1] in _IMPORT_ERRORS for n in names)


def _may_have_ifexp(p: Parsed, node) -> bool:
    """A cheap test on the node's source text before a walk of its tree: `A if c else B`."""
    text = p.code(node)
    return "if" in text and "else" in text
