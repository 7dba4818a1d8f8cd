"""Rewritten regions (issue 39): a training loop replaced rather than edited.

A port sometimes swaps a whole loop: an `accelerate` loop (`Accelerator(mixed_precision="fp16",
gradient_accumulation_steps=4)`, `accelerator.backward(loss)`, `accelerator.clip_grad_norm_`) on
one side, a hand-written one (`autocast`, `GradScaler`, `if (i + 1) % accum == 0:
optimizer.step()`, `clip_grad_norm_`) on the other. Statement by statement almost everything
differs, and none of those findings says what a reviewer asks: do the two loops train alike?

- `Regions.rewritten` (asked by the aligner for the body of a function or a loop): when most of
  its statements differ (rules/relevance.yaml `rewritten_regions`: a share of them, and a least
  number) and the region runs a training step on both sides (a call of a `step_sinks` sink:
  a backward, an optimizer step), its statement findings are one SD110 finding for the region,
  listing the settings each side applies in it; what the region's statements say as
  hyperparameters (and a wrong flash-attention translation) is kept.
- `read_settings` (asked by the facts reader) reads those settings as hyperparameters, so that
  they are compared under their keys like any other: a hand-written gradient accumulation (an
  optimizer step and reset under `if i % N == 0`) is `gradient_accumulation_steps` N, and what a
  call applies without writing it (`implied`: accelerate's fp16 creates torch's GradScaler with
  its defaults) is that call's default of those keys. Accelerate's `mixed_precision` is read as
  the run's precision and `clip_grad_norm_` as clipping by the facts reader already.
"""
from __future__ import annotations

import difflib

import libcst as cst

from ...model import Side
from ...ruleset.rules import RuleSet, code, derived
from . import relevance
from .classify import CODE_RULES
from .pair import PairState, one_line
from .parse import St, canon_qn, dotted, match_name, source_kids

_REGIONS = (cst.FunctionDef, cst.For, cst.While)


@derived
def region_rules(rs: RuleSet) -> dict:
    return rs.section("rewritten_regions", {}) or {}


def leaves(stmts: list[St]) -> list[St]:
    """Every statement of a block, the headers of compound ones and what their blocks hold."""
    out: list[St] = []
    stack = list(reversed(stmts))
    while stack:
        s = stack.pop()
        if s.kind == "import":
            continue
        out.append(s)
        for _label, _node, body in reversed(s.clauses):
            stack.extend(reversed(body))
    return out


def callee_name(nm, call: cst.Call) -> str:
    raw = nm.callee(call)
    if raw is not None:
        return canon_qn(raw, None)
    return "?." + call.func.attr.value if type(call.func) is cst.Attribute else "?"


def calls_of(node) -> list[cst.Call]:
    """Every call in `node`, in the order of the text (a walk of the tree's fields: libcst's
    visitor cost five times as much, asked once per statement and kernel)."""
    found: list[cst.Call] = []
    stack = [node]
    while stack:
        x = stack.pop()
        if type(x) is cst.Call:
            found.append(x)
        stack.extend(reversed(source_kids(x)))
    return found


class Regions:
    """Asked by the aligner whether a function's or a loop's body was rewritten."""

    def __init__(self, state: PairState, aligner):
        self.s = state
        self.al = aligner

    def matched(self, gl: list[St], nl: list[St], keys) -> int:
        """How many statements of one side have their counterpart on the other, aligned by `keys`."""
        sm = difflib.SequenceMatcher(None, [keys(s, "gpu") for s in gl], [keys(s, "npu") for s in nl], autojunk=False)
        return sum(b.size for b in sm.get_matching_blocks())

    def enough(self, matched: int, total: int) -> bool:
        d = region_rules()
        differ = total - 2 * matched
        return differ >= d["least"] and differ >= d["share"] * total

    def steps(self, stmts: list[St], side: str) -> bool:
        """The region runs a training step on this side (a backward, an optimizer step)."""
        nm = self.s.gn if side == "gpu" else self.s.nn
        wanted = set(region_rules()["step_sinks"])
        return any(relevance.sink_of(callee_name(nm, c)) in wanted for s in stmts for c in calls_of(s.node))

    def rewritten(self, gs: St, ns: St, gbody: list[St], nbody: list[St], scope: str) -> bool:
        """True when the region was rewritten: then its statements were compared here, their code
        findings made one finding for the region."""
        d = region_rules()
        if not d or type(gs.node) not in _REGIONS or type(ns.node) is not type(gs.node):
            return False
        gl, nl = leaves(gbody), leaves(nbody)
        total = len(gl) + len(nl)
        # the text first (cheap, and no smaller than what differs once normalized)
        if not self.enough(self.matched(gl, nl, lambda s, _side: s.text), total):
            return False
        st = self.s
        matched = self.matched(gl, nl, lambda s, side: self.al.key(s, st.gn if side == "gpu" else st.nn))
        if not self.enough(matched, total):
            return False
        trains = self.steps(gbody, "gpu") and self.steps(nbody, "npu")
        if not trains:
            if type(gs.node) is not cst.FunctionDef:
                return False  # a loop that trains nothing: its function, if rewritten, is the region
            # rewritten, not edited: most statements have no counterpart even by what they assign
            # or call (an argument changed at every call site is edits, each its own finding)
            anchored = self.matched(gl, nl, lambda s, side: self.al.anchor(s, st.gn if side == "gpu" else st.nn))
            if not self.enough(anchored, total):
                return False
        first = len(st.findings)
        self.al.block(gbody, nbody, scope)
        gone = {code(name) for name in CODE_RULES + ("import-differs", "code-region-rewritten", "code-function-rewritten")}
        inner = (code("code-region-rewritten"), code("code-function-rewritten"))  # a region inside: what it stood for
        replaced = [f for f in st.findings[first:] if f.rule in gone]
        said = sum(f.extra["region"]["statement_findings"] if f.rule in inner else 1 for f in replaced)
        if not trains and (said < 2 or all(f.severity == "info" for f in replaced)):
            return True  # one finding already, or every difference reaches nothing training computes
        st.findings[first:] = [f for f in st.findings[first:] if f.rule not in gone]
        if trains:
            self.report(gs, ns, gl, nl, scope, said, matched)
        else:
            self.report_function(gs, ns, gl, nl, scope, said, matched, replaced)
        return True

    def report_function(self, gs: St, ns: St, gl: list[St], nl: list[St], scope: str, said: int, matched: int,
                        replaced: list) -> None:
        """A function that trains nothing, rewritten (a kernel, a communication backend): one loud
        finding for it, naming what its differences reach where that was found."""
        st = self.s
        gspan, nspan = span(gs, gl), span(ns, nl)
        sinks = sorted({(f.extra or {}).get("reaches", {}).get("sink") for f in replaced} - {None})
        reach = f"; its differences reach {', '.join(relevance.shown(x) for x in sinks)}" if sinks else ""
        msg = (f"function {gs.name} was rewritten ({len(gl) - matched} of {len(gl)} statements differ on GPU, "
               f"{len(nl) - matched} of {len(nl)} on NPU): one finding for the region, its {said} statement "
               f"findings folded{reach}; what it computes is not compared statement by statement")
        gside = Side(value=one_line(gs.hraw), path=st.g.name, line=gs.line, source=st.g.text_at(gs.line))
        nside = Side(value=one_line(ns.hraw), path=st.n.name, line=ns.line, source=st.n.text_at(ns.line))
        st.add_finding(code("code-function-rewritten"), scope, gside, nside, msg,
                       {"region": {"gpu": list(gspan), "npu": list(nspan), "statement_findings": said,
                                   "reaches": sinks}})

    def report(self, gs: St, ns: St, gl: list[St], nl: list[St], scope: str, said: int, matched: int) -> None:
        st = self.s
        gspan, nspan = span(gs, gl), span(ns, nl)
        keys = sorted({f.key for p, (a, b) in ((st.g, gspan), (st.n, nspan)) for f in p.facts
                       if a <= (f.line if f.line is not None else f.meta.get("call_line") or 0) <= b})
        what = f"function {gs.name}" if type(gs.node) is cst.FunctionDef else \
            f"the {'for' if type(gs.node) is cst.For else 'while'} loop"
        settings = (f"the settings each side applies in it are compared under their keys ({', '.join(keys)})"
                    if keys else "no setting is read from it on either side")
        msg = (f"{what} was rewritten ({len(gl) - matched} of {len(gl)} statements differ on GPU, "
               f"{len(nl) - matched} of {len(nl)} on NPU): one finding for the region; {settings}")
        gside = Side(value=one_line(gs.hraw), path=st.g.name, line=gs.line, source=st.g.text_at(gs.line))
        nside = Side(value=one_line(ns.hraw), path=st.n.name, line=ns.line, source=st.n.text_at(ns.line))
        st.add_finding(code("code-region-rewritten"), scope, gside, nside, msg,
                       {"region": {"gpu": list(gspan), "npu": list(nspan), "settings": keys, "statement_findings": said}})


def span(s: St, inner: list[St]) -> tuple[int, int]:
    """The lines a region covers: its header to the end of its last statement."""
    last = max([s] + inner, key=lambda x: x.line)
    return s.line, last.line + (last.hraw if last.kind == "compound" else last.raw).rstrip().count("\n")


# ------------------------------------------------------------------ the settings a loop applies
def read_settings(r) -> None:
    """Facts of what a call applies without writing it, and of a hand-written gradient
    accumulation (the facts reader `r`, facts.Reader)."""
    d = region_rules()
    p = r.p
    if not d or p.module is None:
        return
    dead = p.spec.dead_calls if p.spec is not None else ()
    calls = [c for c in p.state.calls if id(c) not in dead]
    for entry in d.get("implied") or ():
        for c in calls:
            qn = callee_name(r.nm, c)
            if match_name(qn, entry["call"]) and applies(r, c, entry):
                for key, v in entry["sets"].items():
                    p.facts.append(r.default(key, v, qn, c))
                    p.facts[-1].meta["implied"] = True  # compared with a value, never said alone (compare.py)
    acc = d.get("accumulation")
    if acc:
        accumulation(r, acc)


def applies(r, call: cst.Call, entry: dict) -> bool:
    kws = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    if any(a.star for a in call.args) or any(k in kws for k in entry.get("unless") or ()):
        return False
    for k, want in (entry.get("when") or {}).items():
        if k not in kws:
            return False
        try:
            if r.values.evaluate(kws[k], []) != want:
                return False
        except Exception:
            return False
    return True


def accumulation(r, acc: dict) -> None:
    """`if (i + 1) % N == 0:` around an optimizer step and its reset: gradient accumulation over N."""
    p = r.p
    found: list = []  # (N, the function its if is in)
    stack = [(s, None) for s in reversed(p.body)]
    while stack:  # the statements' tree (parse.St), not libcst's: a visit of the module costs a parse
        s, fn = stack.pop()
        if s.kind != "compound":
            continue
        if type(s.node) is cst.FunctionDef:
            fn = s.node
        inner = []
        for _label, node, body in s.clauses:
            n = modulus(node.test) if type(node) is cst.If else None
            if n is not None:
                names = [callee_name(r.nm, c) for c in calls_of(node.body)]
                if any(match_name(x, acc["step"]) for x in names) and any(match_name(x, acc["reset"]) for x in names):
                    found.append((n, fn))
            inner += [(x, fn) for x in body]
        stack.extend(reversed(inner))  # popped in the file's order
    for n, fn in found:
        used: list = []
        target = local_value(fn, n)
        try:
            v = r.values.evaluate(target, used)
        except Exception:
            continue
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            continue
        f = r.fact(acc["key"], v, n if target is n else target, used, "accumulation", written="accumulation")
        f.meta["slot"] = "accumulation"
        f.meta["origin"] = {"computed": "an optimizer step and reset every N steps (`if i % N == 0:`)"}
        p.facts.append(f)
        p.owned[id(n)] = acc["key"]


def modulus(test):
    """N of `<expr> % N == 0` (alone, or one side of `and`/`or`), else None."""
    if type(test) is cst.BooleanOperation:
        return modulus(test.left) or modulus(test.right)
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return None
    c = test.comparisons[0]
    left, right = test.left, c.comparator
    if type(c.operator) is not cst.Equal:
        return None
    for a, b in ((left, right), (right, left)):
        if type(b) is cst.Integer and b.value == "0" and type(a) is cst.BinaryOperation \
                and type(a.operator) is cst.Modulo:
            return a.right
    return None


def local_value(fn, node):
    """The value a bare name is assigned once in the function `fn`, else the node."""
    if type(node) is not cst.Name or fn is None:
        return node
    values = []

    class Assigned(cst.CSTVisitor):
        def visit_Assign(self, a: cst.Assign) -> None:
            if len(a.targets) == 1 and dotted(a.targets[0].target) == node.value:
                values.append(a.value)

    fn.visit(Assigned())
    return values[0] if len(values) == 1 else node
