"""Whether a code difference can reach what training computes: data flow to sinks (issue 39).

A statement that differs, or the differing part of one (an argument, a test, a callee), is
followed where its value goes: through the names it binds or mutates to the statements of its
function that read them, into the functions of the file it calls (their parameters), to the
callers in the file of a function whose result it changes, and into the blocks a test or a loop
it feeds controls. The flow ends at

- a **sink**: a call or an attribute of what training computes (rules/relevance.yaml
  `numerics_relevance.sinks`: parameters, precision, optimizer, loss, data, randomness,
  attention kernel, gradient handling): the difference is loud, and the finding names the sink;
- an **inert** effect: a call that only logs, times, measures memory, shows progress, writes
  files or places tensors on the accelerator (`inert`), the message of an assertion (words
  for people), or a device given to any call (`placement_keywords`, a value of device kind):
  what goes in stops there;
- or somewhere it **cannot be followed**: a call nobody in the file defines whose result is
  discarded (`patch_everything(x)`), a name or attribute nobody in the file reads (another module
  may), a function's result whose callers are not in the file, a library's state
  (`os.environ[...]`, `torch.backends...`), an import, an assertion's test or a raise (whether
  the run goes on: a check removed lets a configuration run that the other side refuses),
  the current device (`set_device`), a move to the host (the CPU computes with other kernels),
  a context manager not known to be inert. Unknown is never silence: the finding stays as it was,
  and so does a difference the file shows going nowhere at all.

A difference is demoted to info only when *every* path ends inert. The flow is read on
CPython's tree of the whole file (`ast`: a tenth of libcst's cost, and the whole file even when
the structural diff read a focused part of it, so the answer does not depend on how much the
diff read). The search is bounded (budget.RELEVANCE_STEPS items, budget.RELEVANCE_DEPTH calls
into other functions); over a bound the reach is unknown.
"""
from __future__ import annotations

import ast
import builtins
from collections import deque
from dataclasses import dataclass, field
from typing import NamedTuple

from ... import budget
from ...ruleset.devices import family_of, table
from ...ruleset.rules import RuleSet, derived
from . import cpytree
from .parse import canon_qn, match_name, rules

SINK, INERT, UNKNOWN = "sink", "inert", "unknown"
NOTHING, UNREAD = "nothing", "nothing reads it"
ASSERTION = "an assertion's message"  # what a failed check says: words for people
DEVICE_CHECK = "a device check"  # whether a device is there: each run answers for its own
_MATCH = getattr(ast, "Match", None)
DEVICE, DTYPE, HOST = "device", "dtype", "host"  # HOST: a device a tensor of either run may be on (the CPU)


class Reach(NamedTuple):
    """Where a difference's value goes: SINK (`what` is the sink's name, `line` where it is
    reached on `side`, `through` the names followed), INERT (`what`: the effects met) or UNKNOWN
    (`what`: why it could not be followed)."""

    verdict: str
    what: tuple = ()
    line: int | None = None
    through: tuple = ()
    side: str | None = None


NOT_FOLLOWED = Reach(UNKNOWN, ("not located",))


@dataclass
class Tables:
    sinks: list  # [(name, shown, call patterns, attribute patterns)]
    inert: list  # [(effect, call patterns, words)]
    qualifiers: frozenset
    compute: tuple  # modules whose calls are inert only by a pattern that names them
    placement_keywords: frozenset
    move_methods: frozenset
    device_words: frozenset
    dtype_names: frozenset
    shown: dict = field(default_factory=dict)  # sink name -> how a message names it
    pure_calls: frozenset = frozenset()  # builtins a check may call that change nothing
    setup_checks: tuple = ()  # calls that ask whether the process group is up (read as device checks)
    probe_calls: tuple = ()  # calls that ask whether a device is there, of any family (rules/devices.yaml)
    in_place: tuple = ()  # calls that change the tensor given first, and nothing else (the collectives)
    loaders: tuple = ()  # calls whose placement keyword only says where loaded bytes are put
    placement_environment: frozenset = frozenset()  # os.environ entries that say which devices a process sees
    rendezvous: tuple = ()  # (call patterns, keywords): how the processes of a job find each other


@derived
def tables(rs: RuleSet) -> Tables:
    d = rs.section("numerics_relevance", {}) or {}
    sinks = [(name, e.get("shown") or name, tuple(e.get("calls") or ()), tuple(e.get("attributes") or ()))
             for name, e in (d.get("sinks") or {}).items()]
    inert = [(name, tuple(e.get("calls") or ()), frozenset(e.get("words") or ()))
             for name, e in (d.get("inert") or {}).items()]
    # the NPU's own tuning calls (rules/devices.yaml devices.python.npu_tuning: compile options,
    # internal formats) are the port's, reported as such: what goes into them stops there
    tuning = tuple(dict.fromkeys(q for x in (table(rs).get("python") or {}).get("npu_tuning") or ()
                                 for q in (x, canon_qn(x, None))))  # as written, and as callees read (the GPU form)
    if tuning:
        inert.append(("NPU tuning", tuning, frozenset()))
    dtypes = frozenset(n for ns in (rules(rs).raw.get("dtype_names") or {}).values() for n in ns)
    return Tables(sinks=sinks, inert=inert, qualifiers=frozenset(d.get("qualifier_words") or ()),
                  compute=tuple(d.get("compute_modules") or ()),
                  placement_keywords=frozenset(d.get("placement_keywords") or ()),
                  move_methods=frozenset(d.get("move_methods") or ()),
                  device_words=frozenset(d.get("device_words") or ()), dtype_names=dtypes,
                  shown={name: shown for name, shown, _c, _a in sinks},
                  pure_calls=frozenset(d.get("pure_calls") or ()), loaders=tuple(d.get("loaders") or ()),
                  placement_environment=frozenset(d.get("placement_environment") or ()),
                  rendezvous=(tuple((d.get("rendezvous") or {}).get("calls") or ()),
                              frozenset((d.get("rendezvous") or {}).get("keywords") or ())),
                  setup_checks=tuple(d.get("setup_checks") or ()), in_place=tuple(d.get("in_place") or ()),
                  probe_calls=tuple(m for c in (table(rs).get("python") or {}).get("calls") or ()
                                    for m in c.get("match") or ()))


def shown(sink: str) -> str:
    """How a message names a sink ("the optimizer and its schedule")."""
    return tables().shown.get(sink, sink)


# ----------------------------------------------------------------------------- one file
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Module)
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_FRESH = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp, ast.Tuple)
_FRESH_CALLS = frozenset({"dict", "list", "set", "collections.OrderedDict", "collections.defaultdict", "OrderedDict",
                          "defaultdict"})
_SAFE_CONTEXTS = frozenset({"open", "contextlib.nullcontext", "nullcontext", "io.open"})


def dotted(node) -> str | None:
    parts = []
    while type(node) is ast.Attribute:
        parts.append(node.attr)
        node = node.value
    if type(node) is not ast.Name:
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


_KINDS: dict[type, tuple[bool, bool]] = {}


def _kind(t: type) -> tuple[bool, bool]:
    """(a statement or an expression, a scope) for a node type, looked up once per type."""
    k = _KINDS.get(t)
    if k is None:
        k = _KINDS[t] = (issubclass(t, (ast.stmt, ast.expr)), issubclass(t, _SCOPES))
    return k


def _children(node) -> list:
    """`list(ast.iter_child_nodes(node))`, in its order, without its generators (the walk of
    every node of a file)."""
    out = []
    for name in node._fields:
        v = getattr(node, name, None)
        if type(v) is list:
            for x in v:
                if isinstance(x, ast.AST):
                    out.append(x)
        elif isinstance(v, ast.AST):
            out.append(v)
    return out


def _stores(target) -> set:
    """The names an assignment target binds."""
    return {x.id for x in ast.walk(target) if type(x) is ast.Name and type(x.ctx) is ast.Store}


def _words(name: str) -> list[str]:
    return [w for w in name.lower().replace(".", "_").split("_") if w]


class Flow:
    """One file's tree (CPython's), indexed for following values: parents, the names each
    scope binds, where each name, attribute and function is read or called."""

    def __init__(self, text: str):
        self.tree = None
        self.lines = text.splitlines()
        try:
            self.tree = cpytree.whole(text)  # parsed once for the pair's readers
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return
        self.parent: dict[int, ast.AST] = {}
        self.scope: dict[int, ast.AST] = {}  # id(Name read) -> the scope it is read in
        self.scope_loads: dict[tuple, list] = {}  # (id(scope), name) -> the Names read in it
        self.subscopes: dict[int, list] = {}  # id(scope) -> the scopes defined right in it
        self.loads: dict[str, list] = {}  # name -> Name nodes read
        self.attr_loads: dict[str, list] = {}  # attribute -> Attribute nodes read
        self.calls: dict[str, list] = {}  # last name of the callee -> Call nodes
        self.defs: dict[str, list] = {}  # function name -> FunctionDef nodes
        self.placed: list = []  # statements and expressions, for the index by line (built when asked)
        self._lines: dict[int, list] | None = None
        self.aliases: dict[str, str] = {}
        self._bound: dict[int, tuple] = {}
        self.probes: dict[int, bool] = {}  # id(function) -> whether it is a device test (Walk.probe_function)
        stack = [(self.tree, self.tree)]
        while stack:  # one pass, depth first, each node with the scope it is in
            node, scope = stack.pop()
            t = type(node)
            if t is ast.Name and type(node.ctx) is ast.Load:
                self.loads.setdefault(node.id, []).append(node)
                self.scope[id(node)] = scope
                self.scope_loads.setdefault((id(scope), node.id), []).append(node)
            elif t is ast.Attribute and type(node.ctx) is ast.Load:
                self.attr_loads.setdefault(node.attr, []).append(node)
            elif t is ast.Call:
                f = node.func
                last = f.id if type(f) is ast.Name else (f.attr if type(f) is ast.Attribute else None)
                if last is not None:
                    self.calls.setdefault(last, []).append(node)
            elif t in _FUNCS:
                self.defs.setdefault(node.name, []).append(node)
            elif t in (ast.Import, ast.ImportFrom):
                self._imports(node)
            placed, scoping = _kind(t)
            if placed:
                self.placed.append(node)
            inner = node if scoping else scope
            if inner is not scope:
                self.subscopes.setdefault(id(scope), []).append(node)
            children = _children(node)
            for child in children:
                self.parent[id(child)] = node
            stack.extend((child, inner) for child in reversed(children))  # popped in the file's order

    @property
    def ok(self) -> bool:
        return self.tree is not None

    def _char_col(self, line: int, col: int) -> int:
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        if text.isascii():
            return col
        return len(text.encode("utf-8")[:col].decode("utf-8", "ignore"))

    def _imports(self, node) -> None:
        if type(node) is ast.Import:
            for a in node.names:
                bound = a.asname or a.name.split(".")[0]
                self.aliases.setdefault(bound, a.name if a.asname else bound)
        else:
            mod = "." * (node.level or 0) + (node.module or "")
            for a in node.names:
                if a.name == "*":
                    continue
                self.aliases.setdefault(a.asname or a.name,
                                        f"{mod}.{a.name}" if mod and not mod.endswith(".") else f"{mod}{a.name}")

    # ---------------------------------------------------------------- finding nodes
    def segment(self, node) -> str:
        """A node's source text, its spaces collapsed (ast.get_source_segment without splitting
        the whole file again)."""
        l0, c0, l1, c1 = node.lineno, node.col_offset, getattr(node, "end_lineno", None), \
            getattr(node, "end_col_offset", None)
        if l1 is None or c1 is None or not (0 < l0 <= l1 <= len(self.lines)):
            return ""
        parts = [self.lines[i].encode("utf-8") for i in range(l0 - 1, l1)]
        if len(parts) == 1:
            raw = parts[0][c0:c1]
        else:
            raw = b"\n".join([parts[0][c0:]] + parts[1:-1] + [parts[-1][:c1]])
        return " ".join(raw.decode("utf-8", "replace").split())

    def at_line(self, line: int) -> list:
        """The statements and expressions that start at `line`, with their character columns."""
        if self._lines is None:
            self._lines = {}
            for n in self.placed:
                self._lines.setdefault(n.lineno, []).append(n)
        return [(self._char_col(line, n.col_offset), n) for n in self._lines.get(line, ())]

    def locate(self, line: int | None, col: int | None, text: str) -> ast.AST | None:
        """The expression that starts at (line, character column) and reads as `text` (a call that is
        a whole statement is the call, not its statement), else such a statement."""
        if self.tree is None or line is None or col is None:
            return None
        cands = sorted((n for c, n in self.at_line(line) if c == col), key=lambda n: not isinstance(n, ast.expr))
        want = " ".join(text.split())
        for n in cands:
            if self.segment(n) == want:
                return n
        bare = want.strip("()")
        for n in cands:
            if self.segment(n).strip("()") == bare:
                return n
        return None

    def statements_at(self, line: int, text: str) -> list:
        """The statements that start at `line` (several: `a = 1; b = 2`) when the line reads as `text`."""
        if self.tree is None or not (0 < line <= len(self.lines)) or self.lines[line - 1].strip() != text.strip():
            return []
        return sorted((n for _c, n in self.at_line(line) if isinstance(n, ast.stmt)), key=lambda n: n.col_offset)

    # ---------------------------------------------------------------- names
    def scope_of(self, node) -> ast.AST:
        p = self.parent.get(id(node))
        while p is not None and not isinstance(p, _SCOPES):
            p = self.parent.get(id(p))
        return p if p is not None else self.tree

    def bound(self, scope) -> tuple[set, set]:
        """(names a function or class binds itself, names it declares global)."""
        got = self._bound.get(id(scope))
        if got is not None:
            return got
        names, glob = set(), set()
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = scope.args
            for x in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg]:
                if x is not None:
                    names.add(x.arg)
        stack = list(ast.iter_child_nodes(scope))
        while stack:
            n = stack.pop()
            t = type(n)
            if t is ast.Name and type(n.ctx) in (ast.Store, ast.Del):
                names.add(n.id)
            elif t in (ast.Global, ast.Nonlocal):
                glob.update(n.names)
            elif t in (ast.Import, ast.ImportFrom):
                names.update((a.asname or a.name.split(".")[0]) for a in n.names)
            if isinstance(n, _SCOPES):
                if t in _FUNCS or t is ast.ClassDef:
                    names.add(n.name)
                continue
            stack.extend(ast.iter_child_nodes(n))
        got = self._bound[id(scope)] = (names - glob, glob)
        return got

    def binder(self, node, name: str) -> ast.AST:
        """The scope whose `name` a read or a store at `node` refers to."""
        first = s = self.scope.get(id(node)) or self.scope_of(node)
        while s is not self.tree:
            names, glob = self.bound(s)
            if name in glob:
                return self.tree
            if name in names and (type(s) is not ast.ClassDef or s is first):  # a class body's names: in it only
                return s
            s = self.scope_of(s)
        return self.tree

    def reads(self, scope, name: str) -> list:
        """Where `name` of `scope` is read: in it, and in the functions inside it that do not bind it."""
        if scope is self.tree:
            return [n for n in self.loads.get(name, ()) if self.binder(n, name) is scope]
        if type(scope) is ast.ClassDef:  # a class's names are seen in its body only
            return list(self.scope_loads.get((id(scope), name), ()))
        out, todo = [], [(scope, True)]
        while todo:
            sc, own = todo.pop()
            if own:
                out += self.scope_loads.get((id(sc), name), ())
            for sub in self.subscopes.get(id(sc), ()):
                names, glob = self.bound(sub)
                if name in glob:  # declared global (or nonlocal, read as binder() reads it): not this one
                    continue
                if name not in names:
                    todo.append((sub, True))
                elif type(sub) is ast.ClassDef:  # binds it for its body only: its methods read this one
                    todo.append((sub, False))
        return out

    def callee(self, call: ast.Call) -> str:
        """The callee's qualified name (imports resolved, NPU names in their GPU form), or its
        dotted name, or `?.method` for a method of a computed value."""
        f = call.func
        d = dotted(f)
        if d is None:
            return "?." + f.attr if type(f) is ast.Attribute else "?"
        head, _, rest = d.partition(".")
        base = self.aliases.get(head)
        if base is None:
            return d
        return canon_qn(base + ("." + rest if rest else ""), None)

    def qualified(self, d: str | None) -> str | None:
        if d is None:
            return None
        head, _, rest = d.partition(".")
        base = self.aliases.get(head)
        return canon_qn(base + ("." + rest if rest else ""), None) if base is not None else d

    def imported(self, name: str) -> bool:
        return name.partition(".")[0] in self.aliases


# ----------------------------------------------------------------------------- matching
def sink_of(name: str | None, attribute: bool = False) -> str | None:
    if not name:
        return None
    for sink, _shown, calls, attrs in tables().sinks:
        if match_name(name, attrs if attribute else calls):
            return sink
    return None


def inert_of(name: str | None, qualified: bool) -> str | None:
    """The inert effect of calling `name`: a pattern that names it, a `*.x` pattern unless it is a
    library's computation (`torch.log`), or a printing helper's name (print_rank_0)."""
    if not name or name == "?":
        return None
    t = tables()
    compute = qualified and any(name == m or name.startswith(m + ".") for m in t.compute)
    for effect, calls, _words_ in t.inert:
        pats = [c for c in calls if not (compute and c.startswith("*"))]
        if match_name(name, pats):
            return effect
    last = name.rsplit(".", 1)[-1]
    words = [w.rstrip("0123456789") for w in _words(last)]
    words = [w for w in words if w]
    for effect, _calls, ws in t.inert:
        if ws and words and not compute and any(w in ws for w in words) \
                and all(w in ws or w in t.qualifiers for w in words):
            return effect
    return None


# ----------------------------------------------------------------------------- the search
class _Found(Exception):
    def __init__(self, sink: str, line: int | None, item):
        self.sink, self.line, self.item = sink, line, item


class Search:
    """One question: where can the values of these roots go?"""

    def __init__(self, flow: Flow):
        self.f = flow
        self.queue: deque = deque()
        self.seen: set = set()
        self.pred: dict = {}
        self.effects: set = set()
        self.unknown: list = []
        self.steps = 0
        self.t = tables()

    # -- bookkeeping
    @staticmethod
    def key(item: tuple) -> tuple:
        """What was visited: the item without its depth, and without the kind a value carries
        (the first way a value is reached is the one followed)."""
        tag = item[0]
        k = item[:3] if tag in ("name", "arg") else item[:2]
        return tuple(id(x) if isinstance(x, ast.AST) else x for x in k)

    def push(self, item: tuple, frm=None) -> None:
        k = self.key(item)
        if k in self.seen:
            return
        self.seen.add(k)
        self.pred[k] = None if frm is None else self.key(frm)
        self.queue.append(item)

    def found(self, sink: str, node, item) -> None:
        raise _Found(sink, getattr(node, "lineno", None), item)

    def effect(self, what: str) -> None:
        self.effects.add(what)

    def cannot(self, why: str) -> None:
        self.unknown.append(why)

    def run(self) -> Reach:
        try:
            while self.queue:
                self.steps += 1
                if self.steps > budget.RELEVANCE_STEPS:
                    return Reach(UNKNOWN, ("too far to follow",))
                item = self.queue.popleft()
                getattr(self, "do_" + item[0])(item)
        except _Found as hit:
            return Reach(SINK, (hit.sink,), hit.line, self.chain(hit.item))
        except RecursionError:
            raise
        except Exception as e:  # a shape the search does not know: unknown, never a crash
            return Reach(UNKNOWN, (f"not followed ({type(e).__name__})",))
        if self.unknown:
            return Reach(UNKNOWN, tuple(dict.fromkeys(self.unknown)))
        if self.effects <= {NOTHING, UNREAD}:  # it went nowhere the file shows: nothing learnt
            return Reach(UNKNOWN, ("nothing in the file uses it",))
        return Reach(INERT, _effects(self.effects))

    def chain(self, item) -> tuple:
        """The names the value went through to the sink, in order."""
        names = []
        k = None if item is None else self.key(item)
        hops = 0
        while k is not None and hops < budget.RELEVANCE_STEPS:
            hops += 1
            if k[0] == "name":
                names.append(k[2])
            elif k[0] == "attr":
                names.append("." + k[1])
            k = self.pred.get(k)
        return tuple(reversed(list(dict.fromkeys(names))))

    # -- items
    def do_stmt(self, item) -> None:
        _tag, s, depth = item
        t = type(s)
        if t is ast.Expr:
            v = s.value.value if type(s.value) is ast.Await else s.value
            if type(v) is ast.Call:
                self.bare_call(v, item, depth)
            elif type(v) is ast.Constant:
                self.effect("a docstring")
            else:
                self.effect(NOTHING)
            return
        if t in (ast.Assign, ast.AugAssign, ast.AnnAssign):
            if s.value is None:
                self.effect("an annotation")
                return
            self.scan(s.value, item, depth)
            targets = s.targets if t is ast.Assign else [s.target]
            kind = self.kind_of_value(s.value)
            for x in targets:
                self.bind(x, kind, item, depth)
            return
        if t is ast.Assert and self.device_probe(s.test) or t is ast.Raise and self.in_probe(s):
            # `assert torch.cuda.is_available()`, or a device test's refusal of a device it does
            # not know: each run on its own device
            self.effect(DEVICE_CHECK)
            return
        if t in (ast.Assert, ast.Raise):
            self.cannot("an assertion (whether the run goes on)")
            return
        if t in (ast.Pass, ast.Global, ast.Nonlocal):
            self.effect(NOTHING)
            return
        if t is ast.Delete:
            self.effect("memory statistics")
            return
        if t is ast.Return:
            if s.value is None:
                self.cannot("a return that changes what runs")
            elif self.picks_device(s.value):
                self.effect("placement")  # `return device_type` where it is decided: the device it picks
            else:
                self.scan(s.value, item, depth)
                self.push(("ret", self.f.scope_of(s), depth), item)
            return
        if t in (ast.If, ast.While):
            self.scan(s.test, item, depth)
            self.block(s.body + s.orelse, item, depth)
            return
        if t is _MATCH:  # `match x: case "npu": ...`: the subject and the guards decide the arms
            self.scan(s.subject, item, depth)
            for case in s.cases:
                if case.guard is not None:
                    self.scan(case.guard, item, depth)
                self.block(case.body, item, depth)
            return
        if t in (ast.For, ast.AsyncFor):
            self.scan(s.iter, item, depth)
            self.bind(s.target, None, item, depth)
            self.block(s.body + s.orelse, item, depth)
            return
        if t in (ast.With, ast.AsyncWith):
            for w in s.items:
                self.context(w.context_expr, item, depth)
                if w.optional_vars is not None:
                    self.bind(w.optional_vars, None, item, depth)
            self.block(s.body, item, depth)
            return
        if t in (ast.Try, getattr(ast, "TryStar", ast.Try)):
            self.block(s.body + [x for h in s.handlers for x in h.body] + s.orelse + s.finalbody, item, depth)
            return
        if t in _FUNCS:
            self.push(("def", s, depth), item)
            return
        if t in (ast.Break, ast.Continue):
            self.cannot("a change of what runs next")
            return
        if t in (ast.Import, ast.ImportFrom):
            self.cannot("an import (importing runs the module)")
            return
        self.cannot(f"a {t.__name__} statement")

    def do_value(self, item) -> None:
        """A value that carries the difference (`kind`: what it is when known): where it goes."""
        _tag, node, kind, depth = item
        shape = self.kind_of_value(node)
        kind = HOST if shape == HOST else (kind or shape)
        absorbed = self.absorber(node)
        if absorbed == "placement" and kind == HOST and not self.loaded_to(node):
            self.cannot("computation placed on the host")
            return
        if absorbed is not None:
            self.effect(absorbed)
            return
        cur = node
        while True:
            par = self.f.parent.get(id(cur))
            t = type(par)
            if par is None:
                self.cannot("a value at the top of the file")
                return
            if t is ast.keyword:
                self.into_call(self.f.parent[id(par)], par.arg, cur, kind, item, depth)
                return
            if t is ast.Starred:
                cur, kind = par, None
                continue
            if t is ast.Call:
                if cur is par.func:  # a callable that carries the difference, called
                    cur, kind = par, None
                    continue
                up = self.f.parent.get(id(par))
                if type(up) is ast.Raise and up.exc is par and self.raised(par):
                    self.effect(ASSERTION)  # raise ValueError(f"... {device}"): the error's words, for people
                    return
                self.into_call(par, None, cur, kind, item, depth)
                return
            if t in (ast.Attribute, ast.Subscript) and type(par.ctx) is not ast.Load:
                if cur is par.value:  # the value itself changed in place: followed through its reads
                    self.effect(NOTHING)
                else:  # d[x] = ...: the container depends on it
                    self.bind(par, None, item, depth)
                return
            if t is ast.Attribute:
                up = self.f.parent.get(id(par))
                if type(up) is ast.Call and up.func is par:  # a method of the value
                    if self.meets(up, item):
                        return
                    cur, kind = up, (kind if par.attr in self.t.move_methods else None)
                    continue
                kind = DEVICE if par.attr == "device" else (DTYPE if par.attr == "dtype" else (
                    kind if kind == DEVICE and par.attr in ("type", "index") else None))
                cur = par
                continue
            if t in (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr):
                if cur is getattr(par, "value", None):
                    for x in (par.targets if t is ast.Assign else [par.target]):
                        self.bind(x, kind, item, depth)
                    if t is ast.NamedExpr:
                        cur = par
                        continue
                    return
                cur = par
                continue
            if t in (ast.If, ast.While) and cur is par.test:
                self.block(par.body + par.orelse, item, depth)
                return
            if t is ast.IfExp:
                kind = None if cur is par.test else kind
                cur = par
                continue
            if t in (ast.For, ast.AsyncFor, ast.comprehension):
                if cur is par.iter:
                    self.bind(par.target, None, item, depth)
                    if t is ast.comprehension:
                        cur, kind = self.f.parent[id(par)], None
                        continue
                    self.block(par.body + par.orelse, item, depth)
                    return
                if t is ast.comprehension:  # an `if` of a comprehension: what it yields
                    cur, kind = self.f.parent[id(par)], None
                    continue
                self.cannot("a loop target")
                return
            if t is ast.withitem:
                if par.optional_vars is not None:
                    self.bind(par.optional_vars, None, item, depth)
                self.context(cur, item, depth)
                self.block(self.f.parent[id(par)].body, item, depth)
                return
            if t is ast.Return:
                if par.value is not None and self.picks_device(par.value):
                    self.effect("placement")  # `return device_type`: the device it picks, the port's
                    return
                self.push(("ret", self.f.scope_of(par), depth), item)
                return
            if t in (ast.Yield, ast.YieldFrom):
                self.push(("ret", self.f.scope_of(par), depth), item)
                return
            if t is ast.Assert and cur is par.msg:  # what a failed check says: words for people
                self.effect(ASSERTION)
                return
            if t is ast.Assert and self.device_probe(par.test):
                self.effect(DEVICE_CHECK)
                return
            if t in (ast.Assert, ast.Raise):
                self.cannot("an assertion (whether the run goes on)")
                return
            if t is ast.Expr:  # computed and dropped
                self.effect(NOTHING)
                return
            if t is ast.Delete:
                self.effect("memory statistics")
                return
            if t is ast.arguments:  # a parameter's default
                fn = self.f.parent.get(id(par))
                name = self.param_of_default(par, cur)
                if name is None or fn is None:
                    self.cannot("a default of a parameter")
                    return
                self.push(("name", fn, name, kind, depth), item)
                return
            if t is ast.Lambda:
                self.cannot("a lambda's result")
                return
            if isinstance(par, ast.expr) or t in (ast.Slice, ast.FormattedValue, ast.JoinedStr):
                cur, kind = par, None
                continue
            self.cannot(f"a value read by a {t.__name__}")
            return

    def raised(self, call: ast.Call) -> bool:
        """`ValueError(...)` in `raise ValueError(...)`: an exception class (a builtin one, or a
        name ending in Error, Exception or Warning) made only to be raised."""
        name = (self.f.callee(call) or "").rsplit(".", 1)[-1]
        known = getattr(builtins, name, None)
        return isinstance(known, type) and issubclass(known, BaseException) or name.endswith(
            ("Error", "Exception", "Warning"))

    def do_call(self, item) -> None:
        """A call whose callee differs: what calling it does, and where its result goes."""
        _tag, call, depth = item
        absorbed = self.absorber(call)
        if absorbed is not None:
            self.effect(absorbed)
            return
        if type(self.f.parent.get(id(call))) is ast.Expr:
            self.bare_call(call, item, depth)
            return
        # an inert call's arguments stop there, a move places its receiver; the result (a time, a
        # memory figure, the moved value) goes on
        if not self.meets(call, item) and self.moves(call):
            self.move(call, item)
        self.push(("value", call, None, depth), item)

    def do_arg(self, item) -> None:
        """An argument given on one side only: what its call does with it."""
        _tag, call, kw, kind, depth = item
        absorbed = self.absorber(call)
        if absorbed is not None and kw not in self.t.placement_keywords:
            self.effect(absorbed)
            return
        self.into_call(call, kw, None, kind, item, depth)

    def do_name(self, item) -> None:
        _tag, scope, name, kind, depth = item
        if kind is None and self.device_name(name):
            kind = DEVICE
        if type(scope) is ast.ClassDef:  # a class attribute: read as self.name
            self.push(("attr", name, kind, depth), item)
            return
        reads = self.f.reads(scope, name)
        if not reads:
            if scope is self.f.tree:
                self.cannot(f"{name}, which nothing in the file reads (another module may)")
            else:
                self.effect(UNREAD)
            return
        for r in reads:
            self.push(("value", r, kind, depth), item)

    def do_attr(self, item) -> None:
        _tag, name, kind, depth = item
        if kind is None and self.device_name(name):
            kind = DEVICE
        reads = self.f.attr_loads.get(name, ())
        if not reads:
            self.cannot(f".{name}, which nothing in the file reads (another module may)")
            return
        for r in reads:
            self.push(("value", r, kind, depth), item)

    def do_ret(self, item) -> None:
        """A function whose result carries the value: its callers in the file."""
        _tag, fn, depth = item
        if type(fn) not in _FUNCS:
            self.cannot("a value a lambda or a module returns")
            return
        if self.probe_function(fn):  # it answers whether a device is there: each run for its own
            self.effect(DEVICE_CHECK)
            return
        self.callers_get(fn, item, depth, f"what {fn.name}() returns, whose callers are not in the file")

    def do_def(self, item) -> None:
        """A function defined on one side only: what its calls in the file run and give."""
        _tag, fn, depth = item
        if self.callers_get(fn, item, depth, f"{fn.name}(), which nothing in the file calls (another module may)"):
            self.body(fn, item, depth)

    def callers_get(self, fn, item, depth: int, unknown: str) -> bool:
        """Each call of `fn` in the file gets its result; unknown when there is none."""
        calls = self.callers(fn)
        if not calls:
            self.cannot(unknown)
            return False
        for c in calls:
            self.push(("value", c, None, depth), item)
        return True

    def do_body(self, item) -> None:
        _tag, fn, depth = item
        self.block(fn.body, item, depth)

    # -- helpers
    def block(self, stmts: list, frm, depth: int) -> None:
        for s in stmts:
            self.push(("stmt", s, depth), frm)

    def body(self, fn, frm, depth: int) -> None:
        if depth >= budget.RELEVANCE_DEPTH:
            self.cannot("calls too deep to follow")
            return
        self.push(("body", fn, depth + 1), frm)

    def callers(self, fn) -> list:
        method = type(self.f.parent.get(id(fn))) is ast.ClassDef
        out = []
        for c in self.f.calls.get(fn.name, ()):
            if type(c.func) is ast.Name and not method:
                out.append(c)
            elif type(c.func) is ast.Attribute and (method or not self.f.imported(dotted(c.func) or "?")):
                out.append(c)
        return out

    def in_file(self, call: ast.Call) -> list:
        """The functions of the file a call may run."""
        f = call.func
        if type(f) is ast.Name:
            return [d for d in self.f.defs.get(f.id, ()) if type(self.f.parent.get(id(d))) is not ast.ClassDef]
        if type(f) is ast.Attribute and not self.f.imported(dotted(f) or "?"):
            return [d for d in self.f.defs.get(f.attr, ()) if type(self.f.parent.get(id(d))) is ast.ClassDef]
        return []

    def scan(self, expr, frm, depth: int) -> None:
        """The calls an expression makes itself: a sink is reached there; a function of the file
        runs its body."""
        stack = [expr]
        while stack:
            n = stack.pop()
            if type(n) is ast.Lambda:
                continue
            if type(n) is ast.Call:
                name = self.f.callee(n)
                sink = sink_of(name)
                if sink is not None:
                    self.found(sink, n, frm)
                if inert_of(name, self.f.imported(name)) is not None:
                    continue  # what goes into an inert call stops there
                for d in self.in_file(n):
                    self.body(d, frm, depth)
            stack.extend(ast.iter_child_nodes(n))

    def absorber(self, node) -> str | None:
        """The inert call or placement keyword a value goes into, however deep (print(f"{x}"))."""
        cur = node
        while True:
            par = self.f.parent.get(id(cur))
            if par is None or isinstance(par, ast.stmt):
                return None
            if type(par) is ast.keyword and par.arg in self.t.placement_keywords:
                return "placement"
            if type(par) is ast.Call and cur is not par.func:
                name = self.f.callee(par)
                got = inert_of(name, self.f.imported(name))
                if got is not None:
                    return got
            cur = par

    def loaded_to(self, node) -> bool:
        """A placement keyword of a loader (`torch.load(p, map_location="cpu")`): where the bytes
        read are put, copied as they are into whatever receives them; the host computes nothing."""
        par = self.f.parent.get(id(node))
        if type(par) is not ast.keyword or par.arg not in self.t.placement_keywords:
            return False
        call = self.f.parent.get(id(par))
        return type(call) is ast.Call and match_name(self.f.callee(call) or "", self.t.loaders)

    def into_call(self, call: ast.Call, kw: str | None, node, kind, frm, depth: int) -> None:
        """A value given to a call, as keyword `kw` or positionally."""
        if kind == HOST and (kw in self.t.placement_keywords or self.moves(call)):
            self.cannot("computation placed on the host")
            return
        if kw in self.t.placement_keywords:
            self.effect("placement")
            return
        calls, keywords = self.t.rendezvous or ((), frozenset())
        if kw in keywords and match_name(self.f.callee(call) or "", calls):
            self.effect("how the job's processes meet")  # init_process_group(init_method="env://", timeout=...)
            return
        if self.meets(call, frm):
            return
        name = self.f.callee(call)
        if self.moves(call):
            if kw == "dtype" or kind == DTYPE:
                self.found("precision", call, frm)
            if kw is None and kind == DEVICE:
                self.effect("placement")
                return
            self.cannot(f"a .{call.func.attr}() argument that may be a device or a dtype")
            return
        if kind == DEVICE:
            self.effect("placement")
            return
        if kind == DTYPE:
            self.found("precision", call, frm)
        defs = self.in_file(call)
        if defs:
            if depth >= budget.RELEVANCE_DEPTH:
                self.cannot("calls too deep to follow")
                return
            for d in defs:
                p = self.param(d, call, kw, node)
                if p is None:
                    self.cannot(f"an argument of {d.name}() not bound to a parameter")
                    return
                self.push(("name", d, p, kind, depth + 1), frm)
            self.push(("value", call, None, depth), frm)
            return
        if self.in_place(call, frm, depth):
            return
        if type(self.f.parent.get(id(call))) is ast.Expr:  # called for its effect, result dropped
            if not self.mutates(call, frm, depth):
                self.cannot(f"given to {name}(), whose effect is not known")
            return
        self.push(("value", call, None, depth), frm)  # a function of its arguments: its result carries it

    def moves(self, call: ast.Call) -> bool:
        """`x.to(...)`: a method that moves or casts its receiver."""
        return type(call.func) is ast.Attribute and call.func.attr in self.t.move_methods

    def move(self, call: ast.Call, frm) -> bool:
        """A move whose arguments say what it is: a cast reaches the precision, a move to the
        accelerator is placement (True), to the host it is not known (True); else False."""
        kinds = [self.kind_of_value(a) for a in call.args] + [
            DTYPE if k.arg == "dtype" else (self.kind_of_value(k.value) or DEVICE if k.arg == "device"
                                            else self.kind_of_value(k.value))
            for k in call.keywords if k.arg not in self.t.placement_keywords or k.arg == "device"]
        if DTYPE in kinds:
            self.found("precision", call, frm)
        if HOST in kinds:
            self.cannot("computation placed on the host")
            return True
        if kinds and all(k == DEVICE for k in kinds):
            self.effect("placement")
            return True
        return False

    def mutates(self, call: ast.Call, frm, depth: int) -> bool:
        """`d.update(x)`, `items.append(x)` on a name of this function or an attribute of self:
        the receiver now carries the value."""
        f = call.func
        if type(f) is not ast.Attribute:
            return False
        recv = f.value
        if type(recv) is ast.Name and not self.f.imported(recv.id):
            scope = self.f.binder(recv, recv.id)
            if scope is self.f.tree or not self.fresh(scope, recv.id):
                return False
            self.push(("name", scope, recv.id, None, depth), frm)
            return True
        if type(recv) is ast.Attribute and type(recv.value) is ast.Name and recv.value.id == "self":
            self.push(("attr", recv.attr, None, depth), frm)
            return True
        return False

    def in_place(self, call: ast.Call, frm, depth: int) -> bool:
        """A collective (`numerics_relevance.in_place`): what it is given reaches the tensor it is
        given first, followed from there; it does nothing else a run computes with."""
        name = self.f.callee(call)
        if not match_name(name, self.t.in_place):
            return False
        if not call.args or type(call.args[0]) is ast.Starred:
            self.cannot(f"{name}() given no tensor it is known to change")
            return True
        self.changed(call.args[0], frm, depth)
        return True

    def changed(self, target, frm, depth: int) -> None:
        """A tensor changed in place: its name read from there on, and where it is a parameter, the
        argument each caller in the file gives for it (bounded like any call)."""
        while type(target) is ast.Subscript:
            target = target.value
        t = type(target)
        if t is ast.Attribute and type(target.value) is ast.Name and target.value.id == "self":
            self.push(("attr", target.attr, None, depth), frm)
            return
        if t is not ast.Name or self.f.imported(target.id):
            self.cannot("a tensor changed in place that is not a name of the file")
            return
        scope = self.f.binder(target, target.id)
        self.push(("name", scope, target.id, None, depth), frm)
        if type(scope) not in _FUNCS or target.id not in {a.arg for a in scope.args.posonlyargs + scope.args.args
                                                          + scope.args.kwonlyargs}:
            return
        if depth >= budget.RELEVANCE_DEPTH:
            self.cannot("calls too deep to follow")
            return
        calls = self.callers(scope)
        if not calls:
            self.cannot(f"an argument of {scope.name}(), whose callers are not in the file")
        for c in calls:
            given = self.given_for(scope, c, target.id)
            if given is None:
                self.cannot(f"an argument of {scope.name}() not given by name or place")
                continue
            self.changed(given, frm, depth + 1)

    @staticmethod
    def given_for(fn, call: ast.Call, name: str):
        """The argument a call gives for parameter `name` of `fn`, None when it cannot be told."""
        for k in call.keywords:
            if k.arg == name:
                return k.value
        pos = [x.arg for x in fn.args.posonlyargs + fn.args.args]
        if type(call.func) is ast.Attribute and pos and pos[0] in ("self", "cls"):
            pos = pos[1:]
        if name not in pos:
            return None
        i = pos.index(name)
        if any(type(a) is ast.Starred for a in call.args[:i + 1]) or i >= len(call.args):
            return None
        return call.args[i]

    def fresh(self, scope, name: str) -> bool:
        """Every binding of `name` in `scope` is a new container (`d = {}`): mutating it changes
        nothing else."""
        found = False
        for n in ast.walk(scope):
            t = type(n)
            if t is ast.arg and n.arg == name:
                return False
            if t in (ast.Assign, ast.AnnAssign):
                targets = n.targets if t is ast.Assign else [n.target]
                if any(type(x) is ast.Name and x.id == name for x in targets):
                    v = n.value
                    if not (isinstance(v, _FRESH) or (type(v) is ast.Call and self.f.callee(v) in _FRESH_CALLS)):
                        return False
                    found = True
                elif any(name in _stores(x) for x in targets):  # a, d = f(): d from elsewhere
                    return False
            elif t in (ast.For, ast.AsyncFor, ast.comprehension) and name in _stores(n.target):
                return False
            elif t in (ast.With, ast.AsyncWith) and any(
                    w.optional_vars is not None and name in _stores(w.optional_vars) for w in n.items):
                return False
            elif t is ast.NamedExpr and n.target.id == name:
                return False
        return found

    def meets(self, call: ast.Call, frm) -> bool:
        """A call that is a sink (found: the search ends there) or inert (its effect noted: True)."""
        name = self.f.callee(call)
        sink = sink_of(name)
        if sink is not None:
            self.found(sink, call, frm)
        got = inert_of(name, self.f.imported(name))
        if got is not None:
            self.effect(got)
            return True
        return False

    def bare_call(self, call: ast.Call, frm, depth: int) -> None:
        """A statement that is one call: what calling it does."""
        if self.meets(call, frm) or self.moves(call) and self.move(call, frm):
            return
        name = self.f.callee(call)
        for a in list(call.args) + [k.value for k in call.keywords]:
            self.scan(a, frm, depth)
        defs = self.in_file(call)
        if defs:
            for d in defs:
                self.body(d, frm, depth)
            return
        if self.mutates(call, frm, depth) or self.in_place(call, frm, depth):
            return
        self.cannot(f"a call of {name}(), whose effect is not known")

    def context(self, expr, frm, depth: int) -> None:
        """A `with` item: what runs inside it runs under it."""
        if type(expr) is not ast.Call:
            self.cannot("a context manager held in a name")
            return
        name = self.f.callee(expr)
        sink = sink_of(name)
        if sink is not None:
            self.found(sink, expr, frm)
        if inert_of(name, self.f.imported(name)) is not None or name in _SAFE_CONTEXTS:
            return
        defs = self.in_file(expr)
        if defs:
            for d in defs:
                self.body(d, frm, depth)
            return
        self.cannot(f"code run under {name}()")

    def bind(self, target, kind, frm, depth: int) -> None:
        """A target that now holds the value: follow it."""
        t = type(target)
        if t is ast.Name:
            self.push(("name", self.f.binder(target, target.id), target.id, kind, depth), frm)
        elif t is ast.Attribute:
            sink = sink_of(self.f.qualified(dotted(target)) or "?." + target.attr, attribute=True)
            if sink is not None:
                self.found(sink, target, frm)
            if self.f.imported(dotted(target) or "?"):  # torch.backends.x = ..., a library's state
                self.cannot(f"{dotted(target)}, a setting of a library")
                return
            self.push(("attr", target.attr, kind, depth), frm)
        elif t is ast.Subscript:
            root = target.value
            while type(root) is ast.Subscript:
                root = root.value
            if self.placement_entry(target):  # os.environ["CUDA_VISIBLE_DEVICES"] = ...: which devices it sees
                self.effect("placement")
            elif self.f.imported(dotted(root) or "?"):  # os.environ["X"] = ...: a library's (or the process's) state
                self.cannot(f"an entry of {dotted(root)}, a library's state")
            elif type(root) is ast.Name:
                scope = self.f.binder(root, root.id)
                if scope is not self.f.tree and self.fresh(scope, root.id):
                    self.push(("name", scope, root.id, None, depth), frm)
                else:
                    self.cannot(f"an entry of {root.id}, which may be shared")
            elif type(root) is ast.Attribute:
                self.bind(root, None, frm, depth)
            else:
                self.cannot("an entry of a computed value")
        elif t in (ast.Tuple, ast.List):
            for x in target.elts:
                self.bind(x, None, frm, depth)
        elif t is ast.Starred:
            self.bind(target.value, None, frm, depth)
        else:
            self.cannot("a target of an unknown shape")

    def placement_entry(self, target: ast.Subscript) -> bool:
        """`os.environ["ASCEND_RT_VISIBLE_DEVICES"]` (rules/relevance.yaml placement_environment):
        the entry of the process's environment that says which devices it sees. A list written
        as a literal is a setting (how many devices the run sees, compared as written, as a launch
        script's export is); one computed (the ids a scheduler gave) is placement."""
        key = target.slice
        if not (self.f.qualified(dotted(target.value) or "?") == "os.environ" and type(key) is ast.Constant
                and key.value in self.t.placement_environment):
            return False
        stmt = self.f.parent.get(id(target))
        return not (isinstance(stmt, (ast.Assign, ast.AnnAssign)) and type(stmt.value) is ast.Constant)

    @staticmethod
    def param(fn, call: ast.Call, kw: str | None, node) -> str | None:
        a = fn.args
        if kw is not None:
            names = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
            return kw if kw in names else (a.kwarg.arg if a.kwarg is not None else None)
        pos = [x.arg for x in a.posonlyargs + a.args]
        if type(call.func) is ast.Attribute and pos and pos[0] in ("self", "cls"):
            pos = pos[1:]
        for i, x in enumerate(call.args):
            if type(x) is ast.Starred:
                return None
            if x is node:
                return pos[i] if i < len(pos) else (a.vararg.arg if a.vararg is not None else None)
        return None

    @staticmethod
    def param_of_default(args: ast.arguments, node) -> str | None:
        pos = args.posonlyargs + args.args
        for x, d in zip(pos[len(pos) - len(args.defaults):], args.defaults):
            if d is node:
                return x.arg
        for x, d in zip(args.kwonlyargs, args.kw_defaults):
            if d is node:
                return x.arg
        return None

    def device_probe(self, expr, setup: bool = True) -> bool:
        """A test of whether a device is there (rules/devices.yaml `python.calls` of any family:
        `torch.cuda.is_available()`, `torch.backends.mps.is_available()`; `hasattr(torch, "npu")`;
        `torch.cuda.device_count() > 0`), or `not`/`and`/`or` of such tests; with `setup`, also
        that the process group is up (`setup_checks`), never that it is not."""
        t = type(expr)
        if t is ast.UnaryOp and type(expr.op) is ast.Not:
            # `assert not dist.is_initialized()` forbids a mode a run may be in: not a precondition
            return self.device_probe(expr.operand, setup=False)
        if t is ast.BoolOp:
            return all(self.device_probe(v, setup) for v in expr.values)
        if t is ast.Compare and len(expr.ops) == 1 and type(expr.comparators[0]) is ast.Constant \
                and expr.comparators[0].value is True:  # `dist.is_initialized() == True`
            return self.device_probe(expr.left, setup)
        if t is ast.Compare:
            return len(expr.ops) == 1 and type(expr.left) is ast.Call \
                and self.f.callee(expr.left).rsplit(".", 1)[-1] == "device_count" \
                and type(expr.comparators[0]) is ast.Constant and type(expr.comparators[0].value) is int
        if t is not ast.Call:
            return False
        name = self.f.callee(expr)
        if name == "hasattr" and len(expr.args) == 2 and type(expr.args[1]) is ast.Constant:
            return isinstance(expr.args[1].value, str) and family_of(expr.args[1].value) is not None
        return match_name(name, self.t.probe_calls) or (setup and match_name(name, self.t.setup_checks))

    def in_probe(self, node) -> bool:
        fn = self.f.scope_of(node)
        return type(fn) in _FUNCS and self.probe_function(fn)

    def probe_function(self, fn) -> bool:
        """A function every return of which is a device test or a constant truth, one at least a
        device test (`def has_dev(name): if name == "npu": return torch.npu.is_available() ...
        return True`): its result says whether a device is there."""
        got = self.f.probes.get(id(fn))
        if got is None:
            probes = consts = 0
            stack = list(ast.iter_child_nodes(fn))
            while stack and consts >= 0:
                n = stack.pop()
                if isinstance(n, _SCOPES):
                    continue
                if type(n) is ast.Return:
                    if n.value is not None and self.device_probe(n.value):
                        probes += 1
                    elif type(n.value) is ast.Constant and type(n.value.value) is bool:
                        consts += 1
                    else:
                        consts = -1
                stack.extend(ast.iter_child_nodes(n))
            got = self.f.probes[id(fn)] = probes > 0 and consts >= 0
        return got

    def picks_device(self, expr) -> bool:
        """A returned value that is a device: by its shape or name, or a local name every
        assignment of which in its function is a device or the host (`choice = "npu"` ... `choice
        = "cpu"`: which device the helper picks)."""
        if self.kind_of_value(expr) == DEVICE:
            return True
        if type(expr) is not ast.Name:
            return False
        scope = self.f.binder(expr, expr.id)
        if type(scope) not in _FUNCS:
            return False
        kinds, stores, stack = [], 0, list(ast.iter_child_nodes(scope))
        while stack:
            n = stack.pop()
            if isinstance(n, _SCOPES):
                continue
            if type(n) is ast.Assign and any(type(x) is ast.Name and x.id == expr.id for x in n.targets):
                kinds.append(self.kind_of_value(n.value))
            elif type(n) is ast.Name and n.id == expr.id and type(n.ctx) is not ast.Load:
                stores += 1  # every binding: a loop target or an augmented one is no device chosen
            stack.extend(ast.iter_child_nodes(n))
        return stores == len(kinds) > 0 and DEVICE in kinds and all(k in (DEVICE, HOST) for k in kinds)

    def device_name(self, name: str) -> bool:
        """A name that says it holds a device (`device`, `local_device`, `current_device`)."""
        words = _words(name)
        return name.lower() in self.t.device_words or bool(words) and (
            words[-1] in self.t.device_words or "_".join(words[-2:]) in self.t.device_words)

    def kind_of_value(self, node) -> str | None:
        """What a value is, when its shape says: a device string or `torch.device(...)`, a dtype name,
        `x.device`, `x.dtype`, a name that names a device."""
        t = type(node)
        host = (table().get("python") or {}).get("tensor_devices") or ()
        if t is ast.Constant and isinstance(node.value, str):
            if node.value.split(":", 1)[0] in host:
                return HOST
            return DEVICE if family_of(node.value) is not None else None
        if t is ast.JoinedStr:  # f"npu:{rank}" a device, f"cpu:{i}" the host, as their literals are
            head = node.values[0] if node.values else None
            if type(head) is not ast.Constant or not isinstance(head.value, str):
                return None
            dev = head.value.split(":", 1)[0]
            return HOST if dev in host else DEVICE if family_of(dev) is not None else None
        if t is ast.Call:  # torch.device(...), get_current_device(): a call that says it gives a device
            name = self.f.callee(node)
            return DEVICE if name == "torch.device" or self.device_name(name.rsplit(".", 1)[-1]) else None
        if t in (ast.Attribute, ast.Name):
            d = dotted(node) or ""
            q = self.f.qualified(d) or d
            if q in self.t.dtype_names or (self.f.imported(d) and q.rsplit(".", 1)[-1] in self.t.dtype_names):
                return DTYPE
            last = d.rsplit(".", 1)[-1]
            if last == "dtype":
                return DTYPE
            if self.device_name(last):
                return DEVICE
        return None


def statements(flow: Flow, stmts: list, kinds: dict | None = None) -> Reach:
    """Where whole statements' effects go (a statement on one side only, a statement that differs)."""
    if not flow.ok or not stmts:
        return NOT_FOLLOWED
    s = Search(flow)
    for st in stmts:  # what the evaluator knows of an assigned value's kind, beyond its shape: first
        for x in (st.targets if type(st) is ast.Assign else ()):
            k = (kinds or {}).get(dotted(x) or "")
            if k is not None and type(x) is ast.Name:
                s.push(("name", flow.binder(x, x.id), x.id, k, 0))
            elif k is not None and type(x) is ast.Attribute:
                s.push(("attr", x.attr, k, 0))
    for st in stmts:
        s.push(("stmt", st, 0))
    return s.run()


def value(flow: Flow, node, kind: str | None = None) -> Reach:
    """Where a value that differs goes (an argument, a test, a callee)."""
    if not flow.ok or node is None:
        return NOT_FOLLOWED
    s = Search(flow)
    if isinstance(node, ast.stmt):
        s.push(("stmt", node, 0))
    else:
        s.push(("value", node, kind, 0))
    return s.run()


def call(flow: Flow, node) -> Reach:
    """Where a call whose callee differs leads: its own effect, and its result."""
    if not flow.ok or type(node) is not ast.Call:
        return NOT_FOLLOWED
    s = Search(flow)
    s.push(("call", node, 0))
    return s.run()


def parameter(flow: Flow, fn, name: str) -> Reach:
    """Where a parameter whose default differs goes, in its function."""
    if not flow.ok or type(fn) not in _FUNCS:
        return NOT_FOLLOWED
    s = Search(flow)
    s.push(("name", fn, name, None, 0))
    return s.run()


def argument(flow: Flow, call, keyword: str | None, kind: str | None = None) -> Reach:
    """Where an argument given on one side only (or bound to a parameter) goes: into its call."""
    if not flow.ok or type(call) is not ast.Call:
        return NOT_FOLLOWED
    s = Search(flow)
    s.push(("arg", call, keyword, kind, 0))
    return s.run()


def combine(*reaches: Reach) -> Reach:
    """Both sides of a difference: a sink on either is a sink; unknown on either is unknown."""
    for r in reaches:
        if r.verdict == SINK:
            return r
    unknown = [w for r in reaches if r.verdict == UNKNOWN for w in r.what]
    if unknown:
        return Reach(UNKNOWN, tuple(dict.fromkeys(unknown)))
    return Reach(INERT, _effects({w for r in reaches for w in r.what}))


def _effects(found: set) -> tuple:
    """The inert effects met, in order; `nothing` only when nothing else was."""
    said = sorted(found - {NOTHING, UNREAD})
    return tuple(said) if said else ((UNREAD,) if UNREAD in found else (NOTHING,))
