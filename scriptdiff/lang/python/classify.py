"""What a structural difference means: its severity, its message, and its finding.

Severity comes from `classes` in rules/python.yaml, tried in order: the argument or
parameter name (`eps`, `dropout`; a name that looks cosmetic by rules/aliases.yaml
`cosmetic_names` is info), the called function (`torch.nn.functional.*`), a bare string (a
docstring is info), the statements' assignment targets (cosmetic names included) and the
calls they make, then the enclosing function's name (`loss_func`); each list is tried most
severe first (model.Severity's order). A difference is reported under the rule of CODE_RULES
whose severity (in its pack) is the one found.
"""
from __future__ import annotations

import ast

import libcst as cst

from ...model import Severity, Side
from ...run.finding import rule_of
from ...ruleset.vocabulary import device_value_words, is_cosmetic, words as value_words
from . import relevance
from .evaluate import Kind, read
from .pair import PairState, one_line
from .parse import Parsed, St, dotted, kids, library_roots, match_name, node_index, rules

# the rules a code difference is reported under: one per severity
CODE_RULES = ("code-changes-numerics", "code-may-change-numerics", "cosmetic-code-differs")


def severity_rule(severity: Severity | str) -> str:
    """The code of the rule that reports a code difference of this severity."""
    return rule_of(severity, CODE_RULES)


def registered_buffer(st: St) -> str | None:
    """The name `self.register_buffer("mask", ...)` registers (one statement), else None."""
    if st.kind != "simple" or len(st.node.body) != 1 or type(st.node.body[0]) is not cst.Expr:
        return None
    call = st.node.body[0].value
    if type(call) is not cst.Call or type(call.func) is not cst.Attribute or call.func.attr.value != "register_buffer" \
            or not call.args or type(call.args[0].value) is not cst.SimpleString:
        return None
    name = call.args[0].value.evaluated_value
    return name if isinstance(name, str) and name else None


def _all_attributes(p: Parsed) -> list:
    """Every attribute of the module, those written in its imports too."""
    ix = node_index(p)
    out = list(ix.attributes)
    stack = list(ix.imports)
    while stack:
        x = stack.pop()
        if type(x) is cst.Attribute:
            out.append(x)
        stack.extend(kids(x))
    return out


ADDED_CHECK = "a check the NPU side adds"  # it refuses a run the GPU side lets go on; one that goes on computes the same


def _check_only(st: St) -> bool:
    """An `assert`, or an `if` without `else` whose body only raises, whose tests call nothing
    but builtins that change nothing (rules/relevance.yaml `pure_calls`): on the side that adds
    it, it refuses a run or lets it go on, and a run that goes on computes what the other side's
    does. (The reverse, a check the NPU side drops, lets the NPU run what the GPU side refuses:
    not this.)"""
    node = st.node
    pure = relevance.tables().pure_calls

    def quiet(expr) -> bool:
        stack = [expr]
        while stack:
            x = stack.pop()
            if type(x) is cst.Call and not (type(x.func) is cst.Name and x.func.value in pure):
                return False
            if type(x) in (cst.Lambda, cst.NamedExpr, cst.Await, cst.Yield):
                return False
            stack.extend(kids(x))
        return True

    if st.kind == "simple":
        return bool(node.body) and all(type(x) is cst.Assert and quiet(x.test) for x in node.body)
    if type(node) is not cst.If or node.orelse is not None or not quiet(node.test):
        return False
    if isinstance(node.body, cst.IndentedBlock):  # each line simple, each statement a raise
        smalls = [x for b in node.body.body for x in (b.body if isinstance(b, cst.SimpleStatementLine) else [b])]
    else:  # `if x: raise ValueError(...)` on one line
        smalls = list(node.body.body)
    return bool(smalls) and all(type(x) is cst.Raise for x in smalls)


def attributes_read(p: Parsed) -> set[str]:
    """Every attribute name the file reads (`x.mask`) and every string it holds (getattr(self, "mask"))."""
    if p.module is None:
        return set()
    found: set[str] = {node.attr.value for node in _all_attributes(p)}
    for node in node_index(p).strings:
        v = node.evaluated_value
        if isinstance(v, str):
            found.add(v)
    return found


def attribute_lines(p: Parsed, name: str) -> list[int]:
    """The lines where the file reads attribute `name`."""
    if p.module is None:
        return []
    return sorted({ln for node in _all_attributes(p) if node.attr.value == name
                   for ln in (p.line_of(node),) if ln is not None})


def device_move(st: St) -> str | None:
    """`x = x.npu()`, `x = x.cuda()`, `x = x.to(device)` (one statement, the same name on both
    sides of `=`): the name moved, else None."""
    if st.kind != "simple" or len(st.node.body) != 1 or type(st.node.body[0]) is not cst.Assign:
        return None
    a = st.node.body[0]
    if len(a.targets) != 1 or type(a.value) is not cst.Call or type(a.value.func) is not cst.Attribute:
        return None
    target, call = dotted(a.targets[0].target), a.value
    if target is None or dotted(call.func.value) != target or call.func.attr.value not in ("npu", "cuda", "to"):
        return None
    if call.func.attr.value == "to" and (len(call.args) != 1 or call.args[0].keyword not in (None,) and
                                         call.args[0].keyword.value != "device"):
        return None
    if call.func.attr.value == "to":  # .to(torch.float16) is a cast, not a move
        d = dotted(call.args[0].value) or ""
        if "float" in d or "half" in d or "bfloat" in d or "dtype" in d or "int" in d.rsplit(".", 1)[-1]:
            return None
    return target


def _split_name(name: str) -> list[str]:
    return [t for t in name.lower().replace(".", "_").split("_") if t]


_KINDS = {Kind.DEVICE: relevance.DEVICE, Kind.DTYPE: relevance.DTYPE}


def reach_extra(reach: relevance.Reach) -> dict:
    """What a finding's `extra` says of where its difference goes (JSON: `reaches`)."""
    if reach.verdict == relevance.SINK:
        r = {"sink": reach.what[0], "side": reach.side, "line": reach.line, "through": list(reach.through)}
        return {"reaches": {**r, "said": sink_text({"reaches": r})}}
    return {"reaches": {"sink": None, "only": list(reach.what)}}


def reach_text(extra: dict) -> str:
    """How a message says that a difference reaches nothing training computes (empty otherwise:
    the sink a loud difference reaches is in its `extra`, its message is the difference's own)."""
    r = extra.get("reaches") if extra else None
    if not r or r.get("sink") is not None:
        return ""
    return f"; reaches nothing training computes ({', '.join(r.get('only') or ())})"


def sink_text(extra: dict) -> str:
    """The sink a loud difference reaches, as a line says it ("the optimizer and its schedule
    (NPU line 12, through opt)"), or empty: `extra["reaches"]["said"]`, which the text report
    shows under the finding (its message stays the difference's own)."""
    r = extra.get("reaches") if extra else None
    if not r or r.get("sink") is None:
        return ""
    where = [f"{(r.get('side') or '').upper()} line {r['line']}".strip()] if r.get("line") else []
    if r.get("through"):
        where.append("through " + ", ".join(r["through"]))
    return relevance.shown(r["sink"]) + (f" ({', '.join(where)})" if where else "")


class Classifier:
    """Turns the sites of a pair, and statements on one side only, into findings."""

    def __init__(self, state: PairState):
        self.s = state
        self._flows: dict = {}

    # ------------------------------------------------- where a difference goes (relevance.py)
    def flow(self, p: Parsed) -> relevance.Flow:
        """The whole file's tree for following values (read once per side, whatever was focused)."""
        f = self._flows.get(id(p))
        if f is None:
            f = self._flows[id(p)] = relevance.Flow("\n".join(p.lines) + "\n")
        return f

    def ast_statements(self, p: Parsed, st: St) -> list:
        f = self.flow(p)
        found = f.statements_at(st.line, p.text_at(st.line))
        if not found:
            return []
        first = found[0]
        return [n for n in found if f.parent.get(id(n)) is f.parent.get(id(first))]

    def ast_node(self, p: Parsed, node):
        line, col = p.line_of(node), p.state.column(node) if p.state else None
        return self.flow(p).locate(line, col, p.code(node))

    @staticmethod
    def kind(p: Parsed, node) -> str | None:
        try:
            return _KINDS.get(read(p, node).kind)
        except Exception:
            return None

    def statement_reach(self, p: Parsed, st: St, side: str) -> relevance.Reach:
        stmts = self.ast_statements(p, st)
        kinds = {}
        if st.kind == "simple":
            for small in st.node.body:
                if type(small) is cst.Assign and len(small.targets) == 1:
                    k = self.kind(p, small.value)
                    name = dotted(small.targets[0].target)
                    if k is not None and name:
                        kinds[name] = k
        return relevance.statements(self.flow(p), stmts, kinds)._replace(side=side)

    def site_reach(self, p: Parsed, node, st: St, ctx, side: str) -> relevance.Reach:
        """Where one side of a site goes: the statement (a statement that differs), the call (a
        different callee), the parameter (a signature), the argument or the part that differs."""
        f = self.flow(p)
        if st.kind == "simple" and any(type(x) is cst.Assert and x.msg is node for x in st.node.body):
            return relevance.Reach(relevance.INERT, (relevance.ASSERTION,), side=side)  # what a failed check says
        if ctx is None or (isinstance(ctx[0], str) and ctx[0] in ("NOTE", "HPARAM")):
            return self.statement_reach(p, st, side)
        if isinstance(node, tuple) and node and node[0] == "MISSING":
            call = self.ast_node(p, node[1])
            label = ctx[1] or ""
            kw = None if label.startswith("argument") or label.startswith("*") else label
            return relevance.argument(f, call, kw)._replace(side=side)
        if ctx[0] == "call":
            return relevance.call(f, self.ast_node(p, node))._replace(side=side)
        if isinstance(ctx[0], str) and ctx[0].startswith("def ") and ctx[1]:
            fn = next((n for n in self.ast_statements(p, st) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))),
                      None)
            return relevance.parameter(f, fn, ctx[1])._replace(side=side)
        if isinstance(node, cst.CSTNode) and not isinstance(node, (cst.BaseSmallStatement, cst.BaseStatement,
                                                                   cst.Param, cst.Arg)):
            at = self.ast_node(p, node)
            if at is not None:
                return relevance.value(f, at, self.kind(p, node))._replace(side=side)
        # a part CPython's tree has no node for (an operator, a comparison's right side): its statement
        return self.statement_reach(p, st, side)

    def graded(self, sev: Severity, reach) -> tuple[Severity, dict]:
        """A loud code difference is loud when it reaches what training computes (saying which
        sink), info when every path ends in logging, placement and the like (saying which), and as
        it was when where it goes cannot be followed."""
        if sev not in (Severity.ERROR, Severity.WARNING) or reach is None:
            return sev, {}
        if reach.verdict == relevance.SINK:
            return sev, reach_extra(reach)
        if reach.verdict == relevance.INERT:
            return Severity.INFO, reach_extra(reach)
        return sev, {}

    def grade_sites(self, sev: Severity, g, n, gs: St, ns: St, ctx) -> tuple[Severity, dict]:
        if sev not in (Severity.ERROR, Severity.WARNING):
            return sev, {}
        if type(g) is cst.Integer and type(n) is cst.Integer:  # .cuda(0) -> .npu(1): which device, not how it is named
            return sev, {}
        s = self.s
        reach = relevance.combine(self.site_reach(s.g, g, gs, ctx, "gpu"), self.site_reach(s.n, n, ns, ctx, "npu"))
        return self.graded(sev, reach)

    def grade_statements(self, sev: Severity, gs: St | None, ns: St | None) -> tuple[Severity, dict]:
        if sev not in (Severity.ERROR, Severity.WARNING):
            return sev, {}
        s = self.s
        if gs is None and ns is not None and _check_only(ns):  # a check the NPU side adds
            return self.graded(sev, relevance.Reach(relevance.INERT, (ADDED_CHECK,), side="npu"))
        got = ([self.statement_reach(s.g, gs, "gpu")] if gs is not None else []) + \
              ([self.statement_reach(s.n, ns, "npu")] if ns is not None else [])
        return self.graded(sev, relevance.combine(*got))

    def report_sites(self, sites: list, gs: St, ns: St, scope: str) -> None:
        s = self.s
        plain = [(g, n) for g, n, ctx in sites if ctx is None]
        if len(plain) > 1:  # several places of one expression differ: one finding for the statement
            sites = [x for x in sites if x[2] is not None]
            self.report_plain(plain, gs, ns, scope)
        for g, n, ctx in sites:
            if ctx is not None and ctx[0] == "ARGS":
                self.report_args(g, n, ctx, gs, ns, scope)
                continue
            if ctx is not None and ctx[0] == "HPARAM":  # a code change that is a hyperparameter
                gl, nl = s.g.line_of(g, gs.line), s.n.line_of(n, ns.line)
                s.add_hparam(ctx[1], Side(value=ctx[2], path=s.g.name, line=gl, source=s.g.text_at(gl)),
                             Side(value=ctx[3], path=s.n.name, line=nl, source=s.n.text_at(nl)), ctx[4])
                continue
            if ctx is not None and ctx[0] == "NOTE":  # a known refactor, with its diagnosis
                s.add_finding(severity_rule(ctx[1]), scope, s.side(s.g, g, gs.line), s.side(s.n, n, ns.line),
                              ctx[2])
                continue
            gside = s.side(s.g, g, gs.line)
            nside = s.side(s.n, n, ns.line)
            sev, extra = self.grade_sites(self.classify(ctx, [gs, ns], scope), g, n, gs, ns, ctx)
            if ctx is None:
                msg = "statement differs"
            elif ctx[0] == "call":
                msg = f"a different function is called ({ctx[1]} on GPU)"
            elif ctx[1] is None:
                msg = f"the {ctx[0]} header differs" if not ctx[0].startswith("def ") else f"the signature of {ctx[0]} differs"
            else:
                label = ctx[1] if ctx[1].startswith("argument") or ctx[1].startswith("*") else f"argument {ctx[1]}"
                if ctx[0].startswith("def "):
                    label = f"parameter {ctx[1]}"
                if gside.value is None:
                    msg = f"{ctx[0]}: {label} is given on NPU only"
                elif nside.value is None:
                    msg = f"{ctx[0]}: {label} is given on GPU only"
                else:
                    msg = f"{ctx[0]}: {label} differs"
            s.add_finding(severity_rule(sev), scope, gside, nside, msg, extra)

    def report_plain(self, plain: list, gs: St, ns: St, scope: str) -> None:
        """Places of one statement that differ with nothing to name them by (`a and b == c`
        against `a and b != c and d`), grouped by the lines they are on: one finding a line pair,
        the first place's values shown, graded by the worst of them."""
        s = self.s
        groups: dict = {}
        for g, n in plain:
            groups.setdefault((s.g.line_of(g, gs.line), s.n.line_of(n, ns.line)), []).append((g, n))
        for places in groups.values():
            graded = [self.grade_sites(self.classify(None, [gs, ns], scope), g, n, gs, ns, None) for g, n in places]
            sev = Severity.worst(x[0] for x in graded)
            extra = next(x[1] for x in graded if x[0] == sev)
            g, n = places[0]
            more = f" ({len(places)} places in it)" if len(places) > 1 else ""
            s.add_finding(severity_rule(sev), scope, s.side(s.g, g, gs.line), s.side(s.n, n, ns.line),
                          f"statement differs{more}", extra)

    def report_args(self, g, n, ctx: tuple, gs: St, ns: St, scope: str) -> None:
        """One call whose arguments, bound to its signature, differ in several places (its site's
        ctx: ("ARGS", callee, [(name, GPU text, NPU text)])): one finding."""
        s = self.s
        _args, callee, diffs = ctx
        sev = Severity.worst(self.classify((callee, name), [gs, ns], scope) for name, _g, _n in diffs)
        extra: dict = {}
        if sev in (Severity.ERROR, Severity.WARNING):
            gc, nc = self.ast_node(s.g, g), self.ast_node(s.n, n)
            sev, extra = self.graded(sev, relevance.combine(*(
                relevance.argument(self.flow(p), c, name)._replace(side=side)
                for name, _g, _n in diffs for p, c, side in ((s.g, gc, "gpu"), (s.n, nc, "npu")))))
        gl, nl = s.g.line_of(g, gs.line), s.n.line_of(n, ns.line)
        gside = Side(value=", ".join(x for _n, x, _y in diffs), path=s.g.name, line=gl, source=s.g.text_at(gl))
        nside = Side(value=", ".join(y for _n, _x, y in diffs), path=s.n.name, line=nl, source=s.n.text_at(nl))
        names = ", ".join(name for name, _g, _n in diffs)
        s.add_finding(severity_rule(sev), scope, gside, nside,
                      f"{callee}: arguments {names} differ (bound to its signature, defaults included)", extra)

    def report_one_sided(self, st: St, side: str, scope: str, note: str | None = None, info: bool = False,
                         deferred: bool = False) -> None:
        """A statement on one side only (its key is the whole statement's, blocks included);
        `note` is added to its message; `info`: it cannot change what is computed (the note says why).
        A module-level function of the file that the file calls is said at the end (`finish`)."""
        s = self.s
        if not deferred and scope == "<module>" and type(st.node) is cst.FunctionDef and not st.node.decorators \
                and not info and not _uncalled_function(s.g if side == "gpu" else s.n, st):
            s.one_sided_defs.append((st, side, scope, note))
            return
        p, nm = (s.g, s.gn) if side == "gpu" else (s.n, s.nn)
        k = s.keys.get(id(st))
        if k is None or st.kind == "compound":
            s.set_key(st, nm(st.node))
        inner = scope
        if st.name is not None:
            inner = st.name if scope == "<module>" else f"{scope}.{st.name}"
        sd = Side(value=one_line(st.hraw if st.kind == "compound" else st.raw), path=p.name, line=st.line,
                  source=p.text_at(st.line))
        sev = self.classify(None, [st], inner)
        what = {"FunctionDef": "function", "ClassDef": "class"}.get(type(st.node).__name__, "statement")
        where = "GPU" if side == "gpu" else "NPU"
        msg = f"{what} on {where} only" + (f": {st.name}" if st.name else "") + (f"; {note}" if note else "")
        moved = device_move(st)
        if moved is not None:  # labels = labels.npu(): where a tensor lives, not what it holds
            sev, msg = Severity.INFO, f"{msg}: {moved} moved to the device (placement, not numerics)"
        buf = registered_buffer(st)
        other = s.n if side == "gpu" else s.g
        if buf is not None and buf not in attributes_read(other):
            # a mask buffer the other side never reads: it follows from the change of its uses
            uses = [ln for ln in attribute_lines(p, buf) if ln != st.line]
            at = f" (read at line {uses[0]}, compared there)" if uses else ""
            sev = Severity.INFO
            msg = (f"{msg}: buffer {buf!r}, which the {'NPU' if side == 'gpu' else 'GPU'} side never reads; "
                   f"it follows from the change of its uses{at}")
        if scope == "<module>" and _uncalled_function(p, st):  # a helper defined, called nowhere here
            sev, msg = Severity.INFO, (f"{msg}: defined, called nowhere in this file; a call of it is a "
                                       f"difference where it is written")
        elif _own_device_call(p, st, side):
            # require_npu(), clear_npu_overflow_flag(): a project's helper named for the side's own
            # device, given nothing, its result unused: that device's setup or bookkeeping
            sev, msg = Severity.INFO, (f"{msg}: a call of the project's own helper named for the {where}, given "
                                       f"nothing and its result unused (that device's setup)")
        elif scope == "<module>" and type(st.node) is cst.ClassDef and _named_for_own_device(st.name or "", side):
            # class NPUAccelerator(Accelerator) on the NPU side only: the device's own implementation,
            # what it changes said where it is used (Trainer(accelerator=NPUAccelerator()))
            sev, msg = Severity.INFO, (f"{msg}: named for the {where}'s own device, defined for it alone; "
                                       f"its uses are compared where they are written")
        sev, extra = self.grade_statements(sev, st if side == "gpu" else None, st if side == "npu" else None)
        if info:
            sev = Severity.INFO
        s.add_finding(severity_rule(sev), inner, sd if side == "gpu" else None, sd if side == "npu" else None, msg,
                      extra)

    def finish(self, plumb) -> None:
        """The file's own functions on one side only (report_one_sided): one whose every call in
        the file was followed and found the port where the other side writes what it does
        (`pick_dtype(kind)` against `torch.bfloat16`) changes nothing by being defined: masked
        (SD022, `plumb.mask`); any other is said as a statement on one side only."""
        s = self.s
        for st, side, scope, note in s.one_sided_defs:
            p = s.g if side == "gpu" else s.n
            name = st.node.name.value
            calls = sum(1 for x in node_index(p).names if x.value == name) - 1
            if 0 < calls <= len(s.followed.get((side, name), ())):
                plumb.mask(st.node if side == "gpu" else None, st.node if side == "npu" else None)
                continue
            self.report_one_sided(st, side, scope, note, deferred=True)
        s.one_sided_defs = []

    @staticmethod
    def fact_only(s: St, p: Parsed) -> bool:
        """A statement whose every part is compared as a hyperparameter fact."""
        if s.kind != "simple":
            return False
        for small in s.node.body:
            t = type(small)
            if t is cst.Expr and type(small.value) is cst.Call and id(small.value) in p.fact_calls:
                continue
            if t in (cst.Assign, cst.AnnAssign) and small.value is not None and id(small.value) in p.owned:
                continue
            return False
        return True

    def classify(self, ctx, stmts: list[St], scope: str = "") -> Severity:
        classes = rules().classes
        names = classes.get("names") or {}
        calls = classes.get("calls") or {}
        if ctx is None and stmts and all(s is not None for s in stmts):
            said = [self.bare_call(s) for s in stmts]  # print(... loss ...): the call says, not its arguments
            if all(c is not None and match_name(c, calls.get(Severity.INFO) or []) for c in said):
                return Severity.INFO
        if ctx is not None and ctx[1] and not ctx[1].startswith("argument") and not ctx[1].startswith("*"):
            toks = _split_name(ctx[1])
            if is_cosmetic(ctx[1], dialects=False) and not any(t in (names.get(Severity.ERROR) or []) for t in toks):
                return Severity.INFO  # run names, paths, hosts, throughput constants (rules/aliases.yaml cosmetic_names)
            for sev in Severity:
                if any(t in (names.get(sev) or []) for t in toks):
                    return sev
        if ctx is not None and ctx[0]:
            callee = ctx[0][4:] if ctx[0].startswith("def ") else ctx[0]
            if ctx[0] == "call":
                callee = ctx[1]
            for sev in Severity:
                if match_name(callee, calls.get(sev) or []):
                    return sev
            if ctx[0].startswith("def "):
                for sev in Severity:
                    if any(t in (names.get(sev) or []) for t in _split_name(callee)):
                        return sev
        # a bare string (docstring) cannot change numerics
        if stmts and all(s is not None and s.kind == "simple" and all(
                type(x) is cst.Expr and type(x.value) in (cst.SimpleString, cst.ConcatenatedString)
                for x in s.node.body) for s in stmts):
            return Severity.INFO
        # the statements: assignment targets, then the calls they make
        found = set()
        for s in stmts:
            if s is None:
                continue
            for tname in self.targets(s):
                for sev in Severity:
                    if any(t in (names.get(sev) or []) for t in _split_name(tname)):
                        found.add(sev)
                        break
                else:
                    if is_cosmetic(tname, dialects=False):  # theoryflops = 989e12: a throughput constant
                        found.add(Severity.INFO)
            for c in self.calls_in(self.s.key_of(s)):
                for sev in Severity:
                    if match_name(c, calls.get(sev) or []):
                        found.add(sev)
                        break
        for sev in Severity:
            if sev in found:
                return sev
        # the enclosing function's name (loss_func, compute_loss, log_metrics)
        fn = scope.rsplit(".", 1)[-1] if scope and scope != "<module>" else ""
        for sev in Severity:
            if fn and any(t in (names.get(sev) or []) for t in _split_name(fn)):
                return sev
        return Severity(classes.get("default", Severity.WARNING))

    def bare_call(self, s: St) -> str | None:
        """The callee of a statement that is one call and nothing else (`print(...)`), else None."""
        if s.kind != "simple" or len(s.node.body) != 1:
            return None
        small = s.node.body[0]
        if type(small) is not cst.Expr or type(small.value) is not cst.Call:
            return None
        k = self.s.key_of(s)
        if isinstance(k, tuple) and k and k[0] == "Call":
            got = self.calls_in(("Call", k[1]))
            return got[0] if got else None
        return dotted(small.value.func)

    @staticmethod
    def targets(s: St) -> list[str]:
        out = []
        if s.kind == "compound":
            if s.name:
                out.append(s.name)
            return out
        for small in s.node.body:
            t = type(small)
            tg = []
            if t is cst.Assign:
                tg = [x.target for x in small.targets]
            elif t in (cst.AugAssign, cst.AnnAssign):
                tg = [small.target]
            for x in tg:
                d = dotted(x)
                if d:
                    out.append(d.rsplit(".", 1)[-1])
        return out

    @staticmethod
    def calls_in(key) -> list[str]:
        out = []

        def name_of(k):
            if not isinstance(k, tuple) or not k:
                return None
            if k[0] in ("QN", "N"):
                return k[1]
            if k[0] == "A":
                base = name_of(k[1])
                return f"{base}.{k[2]}" if base else f"?.{k[2]}"
            if k[0] == "OPT":
                return f"torch.optim.{k[1]}"
            return None

        swaps = {"flash_attention": "flash_attn.flash_attn_func", "clip_grad_norm": "torch.nn.utils.clip_grad_norm_"}

        def walk(k):
            if isinstance(k, tuple):
                if k and k[0] == "Call":
                    nm = name_of(k[1])
                    if nm:
                        out.append(nm)
                elif len(k) == 2 and k[0] == "SWAP" and k[1] in swaps:
                    out.append(swaps[k[1]])
                for x in k:
                    walk(x)

        walk(key)
        return out


def _uncalled_function(p: Parsed, st: St) -> bool:
    """A module-level function, undecorated (a decorator may register it), whose name nothing
    else in its file reads: defining it changes nothing this file computes."""
    node = st.node
    if type(node) is not cst.FunctionDef or node.decorators:
        return False
    name = node.name.value
    return sum(1 for n in node_index(p).names if n.value == name) <= 1


def _named_for_own_device(name: str, side: str) -> bool:
    """A name with a word naming the side's own device (rules/aliases.yaml device_value_words:
    NPUAccelerator, HcclPlugin on the NPU; CudaGraphRunner on the GPU) and none of the other's."""
    gpu, npu = device_value_words()
    ws = set(value_words(name))
    own, other = (npu, gpu) if side == "npu" else (gpu, npu)
    return bool(ws & own) and not ws & other


def _own_device_call(p: Parsed, st: St, side: str) -> bool:
    """A statement that is only a call, with no arguments, of a function not of a library the
    rules know (facts.library_roots) whose name names the side's own device."""
    if st.kind != "simple" or len(st.node.body) != 1 or type(st.node.body[0]) is not cst.Expr:
        return False
    call = st.node.body[0].value
    if type(call) is not cst.Call or call.args:
        return False
    name = dotted(call.func) or ""
    qn = p.aliases.get(name.split(".", 1)[0])
    if qn is not None and not qn.startswith(".") and qn.split(".", 1)[0] in library_roots():
        return False
    return _named_for_own_device(name.rsplit(".", 1)[-1], side)
