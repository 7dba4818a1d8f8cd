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

import libcst as cst

from ...model import Severity, Side
from ...run.finding import rule_of
from ...ruleset.vocabulary import is_cosmetic
from .pair import PairState, one_line
from .parse import Parsed, St, dotted, match_name, rules

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


def attributes_read(p: Parsed) -> set[str]:
    """Every attribute name the file reads (`x.mask`) and every string it holds (getattr(self, "mask"))."""
    if p.module is None:
        return set()
    found: set[str] = set()

    class V(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> None:
            found.add(node.attr.value)

        def visit_SimpleString(self, node: cst.SimpleString) -> None:
            v = node.evaluated_value
            if isinstance(v, str):
                found.add(v)

    p.module.visit(V())
    return found


def attribute_lines(p: Parsed, name: str) -> list[int]:
    """The lines where the file reads attribute `name`."""
    out: list[int] = []

    class V(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> None:
            if node.attr.value == name:
                ln = p.line_of(node)
                if ln is not None:
                    out.append(ln)

    if p.module is not None:
        p.module.visit(V())
    return sorted(set(out))


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


class Classifier:
    """Turns the sites of a pair, and statements on one side only, into findings."""

    def __init__(self, state: PairState):
        self.s = state

    def report_sites(self, sites: list, gs: St, ns: St, scope: str) -> None:
        s = self.s
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
            sev = self.classify(ctx, [gs, ns], scope)
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
            s.add_finding(severity_rule(sev), scope, gside, nside, msg)

    def report_args(self, g, n, ctx: tuple, gs: St, ns: St, scope: str) -> None:
        """One call whose arguments, bound to its signature, differ in several places (its site's
        ctx: ("ARGS", callee, [(name, GPU text, NPU text)])): one finding."""
        s = self.s
        _args, callee, diffs = ctx
        sev = Severity.worst(self.classify((callee, name), [gs, ns], scope) for name, _g, _n in diffs)
        gl, nl = s.g.line_of(g, gs.line), s.n.line_of(n, ns.line)
        gside = Side(value=", ".join(x for _n, x, _y in diffs), path=s.g.name, line=gl, source=s.g.text_at(gl))
        nside = Side(value=", ".join(y for _n, _x, y in diffs), path=s.n.name, line=nl, source=s.n.text_at(nl))
        names = ", ".join(name for name, _g, _n in diffs)
        s.add_finding(severity_rule(sev), scope, gside, nside,
                      f"{callee}: arguments {names} differ (bound to its signature, defaults included)")

    def report_one_sided(self, st: St, side: str, scope: str) -> None:
        """A statement on one side only (its key is the whole statement's, blocks included)."""
        s = self.s
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
        msg = f"{what} on {where} only" + (f": {st.name}" if st.name else "")
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
        s.add_finding(severity_rule(sev), inner, sd if side == "gpu" else None, sd if side == "npu" else None, msg)

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
