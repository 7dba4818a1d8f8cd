"""Statement alignment: which GPU statement is compared with which NPU statement.

Per block, imports go to the port checks; the other statements are aligned on their source
text (identical statements cost a string comparison), what differs is aligned again on
normalized keys (equal keys: every rewrite was an expected substitution), and what still
differs is paired by anchor (assignment target, called function, def name). A pair is
diffed node by node and its clauses' blocks recursively; an unpaired statement is reported
as on one side only, unless it is a hyperparameter fact or NPU-only attention support code.
"""
from __future__ import annotations

import difflib

import libcst as cst

from ... import budget
from ...model import Severity, Side
from .classify import Classifier, severity_rule
from .evaluate import add_argument
from .devicecode import DeviceChecks
from .kernels import KernelSwaps
from .nodediff import NodeDiff
from .pair import PairState, StKey, one_line
from .parse import BLOCK_FIELDS, Norm, St, dotted, fields_of, rules
from .parse import _block_body
from .relevance import inert_of
from .port import PortChecks
from .regions import Regions
from .values import ValueChecks
from ..text import opcodes


# compound statements that may wrap a block the other side runs as it is (align.unwrap)
_WRAPPERS = (cst.With, cst.Try, getattr(cst, "TryStar", cst.Try), cst.For, cst.While, cst.If)


class Aligner:
    """Walks the two files' blocks, pairs their statements and hands each pair to the checks."""

    def __init__(self, state: PairState, nodes: NodeDiff, classifier: Classifier, port: PortChecks):
        self.s = state
        self.nodes = nodes
        self.cls = classifier
        self.port = port
        self.values = ValueChecks(state, classifier)
        self.devices = DeviceChecks(state)
        self.regions = Regions(state, self)
        self.kernels = KernelSwaps(state, names_of)

    # ------------------------------------------------------------------ blocks
    def block(self, G: list[St], N: list[St], scope: str) -> None:
        self.port.imports([s for s in G if s.kind == "import"], [s for s in N if s.kind == "import"], scope)
        Gs = [s for s in G if s.kind != "import"]
        Ns = [s for s in N if s.kind != "import"]
        ops = opcodes([s.text for s in Gs], [s.text for s in Ns], whole=True)
        # a statement written identically on both sides but not aligned has moved
        same = [(i1 + d, j1 + d) for tag, i1, i2, j1, j2 in ops if tag == "equal" for d in range(i2 - i1)]
        left: dict[str, list[int]] = {}
        for tag, _i1, _i2, j1, j2 in ops:
            if tag != "equal":
                for j in range(j1, j2):
                    left.setdefault(Ns[j].text, []).append(j)
        moves = []
        for tag, i1, i2, _j1, _j2 in ops:
            if tag != "equal":
                for i in range(i1, i2):
                    if left.get(Gs[i].text):
                        moves.append((i, left[Gs[i].text].pop(0)))
        mg, mn = {i for i, _ in moves}, {j for _, j in moves}
        regions = [([Gs[i] for i in range(i1, i2) if i not in mg], [Ns[j] for j in range(j1, j2) if j not in mn])
                   for tag, i1, i2, j1, j2 in ops if tag != "equal"]
        for gs, ns in self.moved_defs(regions):
            self.pair(gs, ns, scope)
        for g, n in regions:
            if g or n:
                self.region(g, n, scope)
        if moves:
            Moves(self, Gs, Ns, same + moves, scope).report(moves)

    @staticmethod
    def moved_defs(regions: list) -> list:
        """A function or class of one name, once on each side, that moved and changed: left in two
        different regions of the block (its text differs, so it is no move), it is still the same
        definition, compared as one (never "on GPU only" and "on NPU only"). Taken out of its
        regions; the other statements are aligned as before."""
        def named(side: int) -> dict:
            where: dict = {}
            for r, reg in enumerate(regions):
                for st in reg[side]:
                    if st.name is not None:
                        where.setdefault((type(st.node), st.name), []).append((r, st))
            return where
        gw, nw = named(0), named(1)
        out = []
        for k, gl in gw.items():
            nl = nw.get(k, ())
            if len(gl) == 1 and len(nl) == 1 and gl[0][0] != nl[0][0]:
                out.append((gl[0][1], nl[0][1]))
        for gs, ns in out:
            for reg in regions:
                reg[0][:] = [x for x in reg[0] if x is not gs]
                reg[1][:] = [x for x in reg[1] if x is not ns]
        return out

    def key(self, s: St, nm: Norm):
        """The statement's normalized key (a compound statement: its header), computed once."""
        k = self.s.keys.get(id(s))
        if k is not None:
            return k.key
        h0, w0, o0 = len(nm.hits), len(nm.swaps), len(nm.opt_calls)
        if s.kind == "compound":
            if s.name is not None:
                key = ("C", type(s.node).__name__, s.name)
                nm(s.node, skip_blocks=True)
            else:
                key = ("C", nm(s.node, skip_blocks=True))
        else:
            key = nm(s.node)
        self.s.keys[id(s)] = StKey(key, nm.hits[h0:], nm.swaps[w0:], nm.opt_calls[o0:])
        return key

    def region(self, Gs: list[St], Ns: list[St], scope: str) -> None:
        # NPU-only tuning (set_compile_mode) is the port wherever it stands: never paired with a
        # GPU statement it happens to replace (devicecode.py)
        tuned = [s for s in Ns if self.devices.npu_tuning(self.s.n, s)]
        if tuned:
            for s in tuned:
                self.devices.one_sided(s, "npu", scope)
            Ns = [s for s in Ns if not any(s is t for t in tuned)]
        # a GPU computation the NPU replaced by one fused kernel: a masked swap (kernels.py)
        Gs, Ns = self.kernels.region(Gs, Ns, scope)
        if not Gs and not Ns:
            return
        gk = [self.key(s, self.s.gn) for s in Gs]
        nk = [self.key(s, self.s.nn) for s in Ns]
        # device plumbing with no counterpart (`device = platform.device_type` before a `with
        # torch.device(device):`) is the port wherever it stands: not paired with what it precedes
        Gs, gk, Ns, nk = self.nodes.plumb.unpaired(Gs, gk, Ns, nk, self.anchor)
        Gs, gk, Ns, nk = self.unwrap(Gs, gk, Ns, nk, scope)
        for tag, i1, i2, j1, j2 in opcodes(gk, nk, whole=True):
            if tag == "equal":
                for gs, ns in zip(Gs[i1:i2], Ns[j1:j2]):
                    self.pair(gs, ns, scope)
            else:
                self.pair_up(Gs[i1:i2], Ns[j1:j2], scope)

    def unwrap(self, Gs: list[St], gk: list, Ns: list[St], nk: list, scope: str):
        """A block one side wraps around statements the other runs as they are (`with
        torch.no_grad():`, `try:`, a tiling `for` loop, an `if`): the wrapper is one finding, on its
        side only, and what it holds is compared with the other side's statements. Taken when
        most of its block (at least two statements) has counterparts by key there."""
        for _ in range(budget.UNWRAP_DEPTH):
            done = False
            for side in ("npu", "gpu"):
                A, ak, bk, nm = (Ns, nk, gk, self.s.nn) if side == "npu" else (Gs, gk, nk, self.s.gn)
                other = set(bk)
                for i, s in enumerate(A):
                    if s.kind != "compound" or type(s.node) not in _WRAPPERS or ak[i] in other or not s.clauses:
                        continue
                    body = [x for x in s.clauses[0][2] if x.kind != "import"]
                    keys = [self.key(x, nm) for x in body]
                    hits = sum(k in other for k in keys)
                    if hits < 2 or 2 * hits < len(body):
                        continue
                    where = "GPU" if side == "npu" else "NPU"
                    quiet = _ignores_errors(s.node)
                    self.cls.report_one_sided(s, side, scope, note=f"it wraps {len(body)} statement(s) the "
                                              f"{where} side runs unwrapped, compared with them"
                                              + ("; it only lets them fail without stopping the run: the same "
                                                 "run wherever they succeed" if quiet else ""), info=quiet)
                    A[i:i + 1], ak[i:i + 1] = body, keys
                    done = True
                    break
            if not done:
                break
        return Gs, gk, Ns, nk

    def anchor(self, s: St, nm: Norm):
        if s.kind == "compound":
            return ("C", type(s.node).__name__, s.name if s.name is not None else self.key(s, nm))
        body = s.node.body
        if not body:
            return ("empty",)
        first = body[0]
        t = type(first)
        if t is cst.Assign:
            return ("=", tuple(nm(x.target) for x in first.targets))
        if t in (cst.AugAssign, cst.AnnAssign):
            return ("=", nm(first.target))
        if t is cst.Expr and type(first.value) is cst.Call:
            k = nm(first.value)
            f = first.value.func
            if type(f) is cst.Attribute and f.attr.value == "add_argument":  # an option is its name
                dest = add_argument(first.value)[2]
                if dest is not None:
                    return ("option", dest)
            return ("call", k[1] if k[0] == "Call" else k)
        return (t.__name__,)

    def pair_up(self, Gs: list[St], Ns: list[St], scope: str) -> None:
        ga = [self.anchor(s, self.s.gn) for s in Gs]
        na = [self.anchor(s, self.s.nn) for s in Ns]
        sm = difflib.SequenceMatcher(None, ga, na, autojunk=False)
        for tag, i1, i2, j1, j2 in sm.get_opcodes():
            if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
                for gs, ns in zip(Gs[i1:i2], Ns[j1:j2]):
                    if gs.kind == ns.kind == "compound" and type(gs.node) is not type(ns.node):
                        self.one_sided(gs, "gpu", scope)
                        self.one_sided(ns, "npu", scope)
                    else:
                        self.pair(gs, ns, scope)
            else:
                g_left, n_left = list(Gs[i1:i2]), list(Ns[j1:j2])
                for gs, ns in self.renamed_defs(g_left, n_left):
                    self.pair(gs, ns, scope)
                for s in g_left:
                    self.one_sided(s, "gpu", scope)
                for s in n_left:
                    self.one_sided(s, "npu", scope)

    def renamed_defs(self, Gs: list[St], Ns: list[St]) -> list:
        """A function or class on each side, under another name, whose text is mostly the same
        (`class DDPStrategy` against `class NPUParallelStrategy`, git's rename detection): paired,
        so its header and its body are compared, and taken out of `Gs` and `Ns`. Each is paired
        at most once, with the most similar of its kind (at least budget.RENAME_SIMILARITY)."""
        defs = (cst.FunctionDef, cst.ClassDef)
        gd = [s for s in Gs if type(s.node) in defs and s.name]
        nd = [s for s in Ns if type(s.node) in defs and s.name]
        if not gd or not nd or len(gd) * len(nd) > budget.RENAME_CANDIDATES:
            return []
        lines = {}

        def text(p, s):
            got = lines.get(id(s))
            if got is None:
                got = lines[id(s)] = [x.strip() for x in p.code(s.node).splitlines()[1:] if x.strip()]
            return got

        scored = []
        for gs in gd:
            for ns in nd:
                if type(gs.node) is not type(ns.node) or gs.name == ns.name:
                    continue
                a, b = text(self.s.g, gs), text(self.s.n, ns)
                if len(a) < 3 or len(b) < 3:
                    continue
                r = difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()
                if r >= budget.RENAME_SIMILARITY:
                    scored.append((-r, Gs.index(gs), Ns.index(ns), gs, ns))
        out, used_g, used_n = [], set(), set()
        for _r, _i, _j, gs, ns in sorted(scored, key=lambda x: x[:3]):
            if id(gs) in used_g or id(ns) in used_n:
                continue
            used_g.add(id(gs))
            used_n.add(id(ns))
            out.append((gs, ns))
        Gs[:] = [s for s in Gs if id(s) not in used_g]
        Ns[:] = [s for s in Ns if id(s) not in used_n]
        return out

    def mps_branch(self, test, body: list[St], side: str) -> bool:
        """A GPU-only branch on torch.backends.mps (rules/python.yaml device_refactors.mps): masked."""
        mps = (rules().raw.get("device_refactors") or {}).get("mps")
        if side != "gpu" or not mps or test is None:
            return False
        nm, prefix = self.s.gn, mps["prefix"]

        def mentions(node) -> bool:
            if type(node) is cst.Attribute:
                q = nm.qualified(node)
                if q is not None and (q == prefix or q.startswith(prefix + ".")):
                    return True
            return any(mentions(c) for c in node.children)

        if not mentions(test):
            return False
        p = self.s.g
        line = p.line_of(test)
        self.s.add_masked(mps["rule"], Side(path=p.name, line=line, source=p.text_at(line)), None)
        for st in body:
            self.s.add_masked(mps["rule"], Side(path=p.name, line=st.line, source=p.text_at(st.line)), None)
        return True

    def one_sided(self, s: St, side: str, scope: str) -> None:
        if self.cls.fact_only(s, self.s.g if side == "gpu" else self.s.n):
            return
        if self.devices.one_sided(s, side, scope) or self.nodes.plumb.statement(s, side):
            return
        if type(s.node) is cst.If and s.node.orelse is None and self.mps_branch(s.node.test, s.clauses[0][2], side):
            return
        if side == "npu" and self.port.mask_support(s):
            return
        if self.values.plumbing(s, self.s.g if side == "gpu" else self.s.n, side, scope):
            return
        self.cls.report_one_sided(s, side, scope)

    # ------------------------------------------------------------- a pair
    def pair(self, gs: St, ns: St, scope: str) -> None:
        st = self.s
        gk, nk = self.key(gs, st.gn), self.key(ns, st.nn)
        self.port.record_masks(gs, ns)
        swapped = self.port.check_swaps(gs, ns, scope)
        self.port.check_optimizers(gs, ns, scope)
        if gs.kind != "compound" or ns.kind != "compound":
            if gk != nk and not swapped and not self.values.assign(gs, ns, scope):
                parts = conditional_parts(gs.node, ns.node)  # `x = a if c else b` against `if c: x = a / else: x = b`
                if parts is not None:
                    sites = [s for g, n in parts for s in self.nodes.diff_nodes(g, n, None)]
                else:
                    sites = self.nodes.diff_nodes(gs.node, ns.node, None)
                self.cls.report_sites(sites, gs, ns, scope)
            return
        inner = scope
        if gs.name is not None:
            inner = gs.name if scope == "<module>" else f"{scope}.{gs.name}"
        if st.gn(gs.node, skip_blocks=True) != st.nn(ns.node, skip_blocks=True):
            sites = []
            ctx = (f"def {gs.name}" if type(gs.node) is cst.FunctionDef else type(gs.node).__name__.lower(), None)
            for f in fields_of(type(gs.node)):
                if f in BLOCK_FIELDS:
                    continue
                sites += self.nodes.diff_values(getattr(gs.node, f), getattr(ns.node, f), ctx, gs.node, ns.node)
            if type(gs.node) is cst.FunctionDef and [x[:2] for x in sites] == [(gs.node.name, ns.node.name)]:
                # `def cleanup_env()` named `def cleanup_environment()`: what it runs is compared in its body,
                # and each call of it where it is written (a class renamed stays a warning: another class
                # is built, `NpuTrainerV2` against `Trainer`, unless the names differ by the device alone)
                said = (f"def {gs.node.name.value} is named {ns.node.name.value} on NPU, its parameters the same: "
                        f"what it runs is compared in its body")
                sites = [(gs.node.name, ns.node.name, ("NOTE", Severity.INFO, said))]
            elif type(gs.node) is cst.ClassDef and len(sites) > 1 and gs.node.name.value != ns.node.name.value:
                # a class renamed whose bases changed too: one finding for its header
                def bases(p, node):
                    return ", ".join(one_line(p.code(a)) for a in node.bases) or "none"

                said = (f"class {gs.node.name.value} is named {ns.node.name.value} on NPU and its bases differ "
                        f"({bases(st.g, gs.node)} on GPU, {bases(st.n, ns.node)} on NPU)")
                sites = [(gs.node.name, ns.node.name, ("NOTE", Severity.WARNING, said))]
            self.cls.report_sites(sites, gs, ns, inner if gs.name else scope)
        gcl = {label: (node, body) for label, node, body in gs.clauses}
        ncl = {label: (node, body) for label, node, body in ns.clauses}
        for label, (gnode, gbody) in gcl.items():
            if label in ncl:
                nnode, nbody = ncl[label]
                if label != "body" and gnode is not gs.node:
                    hg = st.gn(gnode, skip_blocks=True)
                    hn = st.nn(nnode, skip_blocks=True)
                    if hg != hn:
                        sites = []
                        for f in fields_of(type(gnode)):
                            if f not in BLOCK_FIELDS:
                                sites += self.nodes.diff_values(getattr(gnode, f), getattr(nnode, f), None, gnode, nnode)
                        self.cls.report_sites(sites, gs, ns, scope)
                if label == "body" and self.regions.rewritten(gs, ns, gbody, nbody, inner):
                    continue  # a function or loop rewritten: one finding for it (regions.py)
                self.block(gbody, nbody, inner)
            elif not (label == "elif" and self.mps_branch(getattr(gnode, "test", None), gbody, "gpu")):
                for s in gbody:
                    self.one_sided(s, "gpu", inner)
        for label, (nnode, nbody) in ncl.items():
            if label not in gcl:
                for s in nbody:
                    self.one_sided(s, "npu", inner)


class Moves:
    """Statements written identically on both sides at different places of one block.

    A statement moved with nothing it crossed depending on it (no name it binds read or bound
    there, none it reads bound there, and not two calls, whose effects may be ordered: a seed
    before a model's construction) is one info "moved", not a removal and an addition. A move
    across a dependency is one finding naming the line it crossed.
    """

    def __init__(self, al: Aligner, Gs: list[St], Ns: list[St], pairs: list, scope: str):
        self.al, self.Gs, self.Ns, self.pairs, self.scope = al, Gs, Ns, pairs, scope
        self._names: dict = {}

    def names(self, st: St) -> tuple[set, set, bool]:
        v = self._names.get(id(st))
        if v is None:
            v = self._names[id(st)] = names_of(st.node)
        return v

    def report(self, moves: list) -> None:
        self.crossings: set = set()  # two moved statements swapped: one decision, one finding
        for gi, nj in moves:
            self.moved(self.Gs[gi], self.Ns[nj], gi, nj)

    def moved(self, g: St, n: St, gi: int, nj: int) -> None:
        st = self.al.s
        crossed = [self.Gs[x] for x, y in self.pairs if x != gi and (x < gi) != (y < nj)]
        gb, gr, gc = self.names(g)
        blocker = None
        for x in crossed:
            xb, xr, xc = self.names(x)
            if gb & (xr | xb) or xb & gr or (gc and xc):
                blocker = x
                break
        gside = Side(value=one_line(g.hraw if g.kind == "compound" else g.raw), path=st.g.name, line=g.line,
                     source=st.g.text_at(g.line))
        nside = Side(value=one_line(n.hraw if n.kind == "compound" else n.raw), path=st.n.name, line=n.line,
                     source=st.n.text_at(n.line))
        if blocker is not None:
            pair = frozenset((id(g), id(blocker)))
            if pair in self.crossings:
                return
            self.crossings.add(pair)
        if blocker is None:
            st.add_finding(severity_rule(Severity.INFO), self.scope, gside, nside,
                           f"statement moved (line {g.line} on GPU, {n.line} on NPU); nothing it crossed depends on it")
        else:
            sev = self.al.cls.classify(None, [g, n], self.scope)
            sev = Severity.WARNING if sev == Severity.INFO else sev  # an order that changed is never cosmetic
            st.add_finding(severity_rule(sev), self.scope, gside, nside,
                           f"statement moved past line {blocker.line} on GPU ({one_line(blocker.raw, 60)}), "
                           "which depends on it or on whose effects it depends: the order changed")


def names_of(node) -> tuple[set, set, bool]:
    """(names it binds, names it reads, whether it calls anything): dotted names and their prefixes."""
    bound: set = set()
    read: set = set()
    calls = False

    def chain(x) -> set:
        d = dotted(x)
        if d is None:
            return set()
        parts = d.split(".")
        return {".".join(parts[:i + 1]) for i in range(len(parts))}

    def walk(x, target: bool) -> None:
        nonlocal calls
        t = type(x)
        if t is cst.Call:
            calls = True
        if t in (cst.Name, cst.Attribute) and dotted(x) is not None:
            if target:
                bound.add(dotted(x))
                read.update(chain(x) - {dotted(x)})
            else:
                read.update(chain(x))
            return
        if t is cst.AssignTarget:
            walk(x.target, True)
            return
        if t in (cst.AugAssign,):
            walk(x.target, True)
            read.update(chain(x.target))
            walk(x.value, False)
            return
        if t is cst.AnnAssign:
            walk(x.target, True)
            if x.value is not None:
                walk(x.value, False)
            return
        if t in (cst.FunctionDef, cst.ClassDef):  # a definition runs nothing of its body
            bound.add(x.name.value)
            return
        if t in (cst.For,):
            walk(x.target, True)
            walk(x.iter, False)
            walk(x.body, False)
            return
        for c in x.children:
            walk(c, target)

    walk(node, False)
    return bound, read, calls


def _ignores_errors(node) -> bool:
    """`try: ... except AttributeError: pass`: a try with no else or finally whose every handler
    does nothing (`pass`, `...`) or only says so (a call that logs: rules/relevance.yaml)."""
    if type(node) is not cst.Try or node.orelse is not None or node.finalbody is not None or not node.handlers:
        return False
    for h in node.handlers:
        for st in _block_body(h.body):
            if type(st) is not cst.SimpleStatementLine:
                return False
            for small in st.body:
                if type(small) is cst.Pass or type(small) is cst.Expr and type(small.value) is cst.Ellipsis:
                    continue
                if type(small) is cst.Expr and type(small.value) is cst.Call \
                        and inert_of(dotted(small.value.func), False) == "logging":  # rules/relevance.yaml
                    continue
                return False
    return True


def _one_assign(node):
    """The Assign of a block or a statement line that is one assignment to one target, else None."""
    if type(node) is cst.IndentedBlock:
        if len(node.body) != 1:
            return None
        node = node.body[0]
    if type(node) is not cst.SimpleStatementLine or len(node.body) != 1:
        return None
    a = node.body[0]
    return a if type(a) is cst.Assign and len(a.targets) == 1 else None


def conditional_parts(g, n) -> list | None:
    """A conditional expression assigned to a name (`x = a if c else b`) and the `if`/`else` that
    assigns it the same way on the other side (`if c: x = a` / `else: x = b`): one statement
    written two ways. The pairs of parts to compare (target, test, each branch's value), GPU
    first; None for any other pair."""
    def split(node):
        if type(node) is cst.If:
            if type(node.orelse) is not cst.Else:
                return None
            a, b = _one_assign(node.body), _one_assign(node.orelse.body)
            if a is None or b is None:
                return None
            return a.targets[0].target, node.test, a.value, b.targets[0].target, b.value
        a = _one_assign(node)
        if a is None or type(a.value) is not cst.IfExp:
            return None
        x = a.value
        return a.targets[0].target, x.test, x.body, a.targets[0].target, x.orelse

    if (type(g) is cst.If) == (type(n) is cst.If):
        return None
    gp, np_ = split(g), split(n)
    if gp is None or np_ is None:
        return None
    return [(gp[0], np_[0]), (gp[3], np_[3]), (gp[1], np_[1]), (gp[2], np_[2]), (gp[4], np_[4])]
