"""What a file defines that its values flow through: the value model's map of the program.

The value face (static.py) follows a value through the names a file binds: module constants
(declared.py), and here the rest of what one reading of the file needs, built once per parsed
file (`program(p)`, kept on `Parsed.program`):

- the module's functions (`def lr(): ...`, called as `lr()`) and classes with the attributes
  their bodies assign (`class Env: DEVICE = ...; DTYPE = ...`, read as `Env.DEVICE`);
- each function's local names: a name assigned once in the code the function runs on this
  device (the branches specialisation set aside do not count) is that assignment's value; a
  name bound any other way (twice, by a loop, a `with`, an augmented assignment, a parameter)
  is not known without running the program;
- where each function's text starts and ends, so a node is read in the scope it stands in
  (`scope_of`).
"""
from __future__ import annotations

from bisect import bisect_right

import libcst as cst

from ..parse import Parsed, kids
from ..parse import _block_body as _stmts

UNBOUND = object()  # a local name bound in a way that is not one known assignment


class Program:
    """The functions, classes and local names of one parsed file (module doc)."""

    def __init__(self, p: Parsed):
        self.p = p
        self.funcs: dict[str, cst.FunctionDef | None] = {}  # module-level function; None: defined twice
        self.classes: dict[str, dict] = {}  # module-level class -> attribute -> value node (UNBOUND: twice)
        self._spans: list = []  # (start, end, FunctionDef) of every function, by start
        self._starts: list = []
        self._locals: dict[int, dict] = {}  # id(FunctionDef) -> name -> value node or UNBOUND
        self.returns: dict[int, tuple] = {}  # id(FunctionDef) -> what a call without arguments gave (static.py)
        if p.module is None:
            return
        for s in p.module.body:
            t = type(s)
            if t is cst.FunctionDef:
                self.funcs[s.name.value] = None if s.name.value in self.funcs else s
            elif t is cst.ClassDef:
                self.classes[s.name.value] = {} if s.name.value in self.classes else self.class_attributes(s)
        st = p.state
        stack = [p.module]
        while stack:  # every function of the file, however nested (only statements are walked)
            x = stack.pop()
            if type(x) is cst.FunctionDef:
                a, b = st.start_tok.get(id(x)), st.end_tok.get(id(x))
                if a is not None and b is not None:
                    self._spans.append((a, b, x))
            if isinstance(x, (cst.Module, cst.FunctionDef, cst.ClassDef, cst.If, cst.For, cst.While, cst.With,
                              cst.Try, cst.TryStar, cst.IndentedBlock, cst.Else, cst.ExceptHandler,
                              cst.ExceptStarHandler, cst.Finally, cst.Match, cst.MatchCase)):
                stack.extend(kids(x))
        self._spans.sort(key=lambda s: (s[0], -s[1]))
        self._starts = [s[0] for s in self._spans]

    @staticmethod
    def class_attributes(node: cst.ClassDef) -> dict:
        out: dict = {}
        for s in _stmts(node.body):
            if type(s) is not cst.SimpleStatementLine:
                continue
            for small in s.body:
                if type(small) is cst.Assign and len(small.targets) == 1 and type(small.targets[0].target) is cst.Name:
                    name, v = small.targets[0].target.value, small.value
                elif type(small) is cst.AnnAssign and small.value is not None and type(small.target) is cst.Name:
                    name, v = small.target.value, small.value
                else:
                    continue
                out[name] = UNBOUND if name in out else v
        return out

    def scope_of(self, node) -> cst.FunctionDef | None:
        """The innermost function whose text holds `node`, or None (module level)."""
        st = self.p.state
        at = st.syn_tok.get(id(node), st.start_tok.get(id(node))) if st is not None else None
        if at is None or not self._spans:
            return None
        i = bisect_right(self._starts, at) - 1
        while i >= 0:
            a, b, fn = self._spans[i]
            if a <= at < b:
                return fn
            i -= 1
        return None

    def local(self, fn: cst.FunctionDef, name: str):
        """The value node of `name` in `fn` (one known assignment), UNBOUND (bound otherwise), or
        None (not a local of `fn`)."""
        names = self._locals.get(id(fn))
        if names is None:
            names = self._locals[id(fn)] = self.locals_of(fn)
        return names.get(name)

    def assignments(self, fn: cst.FunctionDef, name: str) -> list | None:
        """Every value `name` is assigned in `fn`'s code this device runs (in order), or None when
        it is bound any other way (a parameter, a loop, a branch not decided)."""
        found = self.locals_of(fn, every=True).get(name)
        return None if found is None or found is UNBOUND else found

    def locals_of(self, fn: cst.FunctionDef, every: bool = False) -> dict:
        """name -> its one value node (UNBOUND when bound otherwise); `every`: name -> the list of
        the values of its plain assignments."""
        out: dict = {}
        ps = fn.params
        for prm in list(ps.params) + list(ps.kwonly_params) + list(ps.posonly_params) + [
                x for x in (ps.star_arg, ps.star_kwarg) if isinstance(x, cst.Param)]:
            out[prm.name.value] = UNBOUND
        decided = getattr(getattr(self.p.spec, "decider", None), "ifs", None) or {}

        def bind(name: str, value) -> None:
            if every:
                out[name] = UNBOUND if value is None or out.get(name) is UNBOUND else out.get(name, []) + [value]
            else:
                out[name] = UNBOUND if name in out or value is None else value

        def targets(t) -> None:
            for n in names_bound(t):
                bind(n, None)

        def block(stmts, plain: bool) -> None:
            for s in stmts:
                t = type(s)
                if t in (cst.SimpleStatementLine, cst.SimpleStatementSuite):
                    for small in s.body:
                        ts = type(small)
                        if ts is cst.Assign:
                            one = len(small.targets) == 1 and type(small.targets[0].target) is cst.Name
                            for x in small.targets:
                                if one and plain:
                                    bind(x.target.value, small.value)
                                else:
                                    targets(x.target)
                        elif ts is cst.AnnAssign and small.value is not None and type(small.target) is cst.Name:
                            bind(small.target.value, small.value if plain else None)
                        elif ts is cst.AugAssign:
                            targets(small.target)
                        elif ts in (cst.Global, cst.Nonlocal):
                            for n in small.names:
                                bind(n.name.value, None)
                        elif ts in (cst.Import, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
                            for a in small.names:
                                n = a.asname.name if a.asname is not None else a.name
                                if type(n) is cst.Name:
                                    bind(n.value, None)
                elif t in (cst.FunctionDef, cst.ClassDef):
                    bind(s.name.value, None)
                elif t is cst.If and id(s) in decided:  # this device's clause only
                    chosen = if_clauses(s)
                    if 0 <= decided[id(s)] < len(chosen):
                        block(chosen[decided[id(s)]], plain)
                else:  # code that may or may not run: what it binds is not one known value
                    if t is cst.For:
                        targets(s.target)
                    if t is cst.With:
                        for item in s.items:
                            if item.asname is not None:
                                targets(item.asname.name)
                    for b in blocks(s):
                        block(b, t is cst.With and plain)
        block(_stmts(fn.body), True)
        return out


def if_clauses(node: cst.If) -> list[list]:
    """The statements of each clause of an if/elif/else chain, in order."""
    out, o = [], node
    while o is not None:
        out.append(_stmts(o.body))
        o = o.orelse if type(o) is cst.If else None
        if o is not None and type(o) is not cst.If:
            out.append(_stmts(o.body))
            o = None
    return out


def blocks(node) -> list:
    """The statement lists a compound statement holds (an elif as a statement of its own)."""
    out = []
    for f in ("body", "orelse", "finalbody"):
        v = getattr(node, f, None)
        if v is None:
            continue
        if isinstance(v, (cst.IndentedBlock, cst.SimpleStatementSuite)):
            out.append(_stmts(v))
        elif isinstance(v, cst.If):  # elif: a statement of its own
            out.append([v])
        elif hasattr(v, "body"):
            out.append(_stmts(v.body) if isinstance(v.body, (cst.IndentedBlock, cst.SimpleStatementSuite)) else [])
    for h in getattr(node, "handlers", ()) or ():
        out.append(_stmts(h.body))
    for c in getattr(node, "cases", ()) or ():
        out.append(_stmts(c.body))
    return out


def names_bound(target) -> list[str]:
    """The names an assignment target binds (`a`, `a, (b, *c)`)."""
    t = type(target)
    if t is cst.Name:
        return [target.value]
    if t in (cst.Tuple, cst.List):
        return [n for e in target.elements for n in names_bound(e.value)]
    if t is cst.StarredElement:
        return names_bound(target.value)
    return []


def program(p: Parsed) -> Program:
    """The file's Program, built once."""
    got = getattr(p, "program", None)
    if got is None or got.p is not p:
        got = Program(p)
        p.program = got
    return got
