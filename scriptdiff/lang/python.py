"""The Python diff: hyperparameter facts, masked substitutions and a structural code diff.

Each file is parsed once with libcst (cached per content for the engine's extract and
diff_pair calls). `extract` returns the hyperparameter facts (python_facts). `diff_pair`
compares what is left after masking, scope by scope:

1. per block, imports are compared as sets of qualified names (adapter imports masked);
2. the other statements are aligned on their source text, so identical statements cost a
   string comparison;
3. the statements that differ are normalized (comments and formatting dropped, imports
   resolved, NPU forms rewritten into GPU forms) and aligned again; equal after
   normalization means every rewrite was an expected substitution (listed as masked);
4. what still differs is paired by anchor (assignment target, called function, def name)
   and diffed: a changed call argument by argument, a def by signature and body, a
   statement on one side only reported as such.

Arguments that are hyperparameter facts (lr, betas, seeds, ...) are compared as facts and
skipped here, so nothing is reported twice. Severity comes from `classes` in
rules/python.yaml.
"""
from __future__ import annotations

import difflib
import hashlib
from collections import OrderedDict

import libcst as cst

from ..model import Finding, InputError, Masked, Side
from .python_parse import (BLOCK_FIELDS, Norm, Parsed, St, canon_qn, dotted, expected_import, fields_of,
                           import_items, match_name, parse, rules)

SEVERITY_RULE = {"error": "SD101", "warning": "SD102", "info": "SD103"}
IMPORT_RULE = "SD104"
FA_RULE = "SD105"
MAX_SITES = 6

_CACHE: "OrderedDict[tuple, Parsed]" = OrderedDict()


def analyse(src) -> Parsed:
    """Parse + facts for one source, cached by name and content."""
    from .python_facts import read_facts

    key = (src.name, hashlib.blake2b(src.data, digest_size=16).digest())
    p = _CACHE.get(key)
    if p is not None:
        _CACHE.move_to_end(key)
        return p
    p = parse(src.name, src.text)
    if p.error is None:
        try:
            read_facts(p, "")
        except RecursionError:
            raise
        except Exception as e:  # never a traceback: keep the structural diff, note the lost facts
            p.facts = []
            p.fact_error = f"hyperparameters not read ({type(e).__name__}: {_one_line(str(e), 80)})"
    _CACHE[key] = p
    while len(_CACHE) > 8:
        _CACHE.popitem(last=False)
    return p


def extract(src, ctx):
    from ..model import Extract

    p = analyse(src)
    if p.error is not None:
        return Extract(errors=[InputError(src.name, f"{p.error}; compared as text")])
    errors = [InputError(src.name, p.fact_error)] if getattr(p, "fact_error", None) else []
    return Extract(facts=list(p.facts), frameworks=set(p.frameworks), errors=errors)


def diff_pair(gsrc, nsrc, opts=None):
    from ..model import PairResult
    from . import text

    limit = getattr(opts, "max_bytes", None)
    if limit and max(len(gsrc.data), len(nsrc.data)) > limit:
        res = text.diff_pair(gsrc, nsrc, opts, reason="file too large for a structural diff")
        res.errors.append(InputError(gsrc.name, f"larger than {limit} bytes; compared as text"))
        return res
    g = analyse(gsrc)
    n = analyse(nsrc)
    if g.error is not None or n.error is not None:
        # the error itself is reported by extract(); here only the text comparison
        return text.diff_pair(gsrc, nsrc, opts, reason="not valid Python")
    c = Comparer(g, n)
    try:
        c.block(g.body, n.body, "<module>")
    except RecursionError:
        raise  # the engine falls back to text with its own note
    except Exception as e:  # a defect here must not cost the user the comparison
        res = text.diff_pair(gsrc, nsrc, opts, reason="structural diff failed")
        res.errors.append(InputError(nsrc.name, f"structural Python diff failed ({type(e).__name__}: "
                                                f"{_one_line(str(e), 80)}); compared as text"))
        return res
    return PairResult(findings=c.findings, masked=c.masked)


def _one_line(s: str, limit: int = 160) -> str:
    s = " ".join(s.split())
    return s if len(s) <= limit else s[: limit - 3] + "..."


def _split_name(name: str) -> list[str]:
    return [t for t in name.lower().replace(".", "_").split("_") if t]


class Comparer:
    def __init__(self, g: Parsed, n: Parsed):
        self.g, self.n = g, n
        self.gn, self.nn = Norm(g), Norm(n)
        self.base = g.name.replace("\\", "/").rsplit("/", 1)[-1]
        self.findings: list[Finding] = []
        self.masked: list[Masked] = []
        self._masked_seen: set = set()
        self._fa_support: set | None = None

    def fa_support(self) -> set:
        """Names that hold the atten_mask of an npu_fusion_attention call (built on NPU only)."""
        if self._fa_support is None:
            out = set()
            r = rules()
            for c in self.n.state.calls:
                q = self.nn.callee(c)
                if q is None or q not in r.fa_npu:
                    continue
                names = r.fa_npu[q]
                a = self.arg(c, "atten_mask", names.index("atten_mask") if "atten_mask" in names else None)
                d = dotted(a.value) if a is not None else None
                if d:
                    out.add(d.rsplit(".", 1)[-1])
            self._fa_support = out
        return self._fa_support

    def supports_swap(self, s: St) -> bool:
        names = self.fa_support()
        if not names or s.kind != "simple":
            return False
        if any(t in names for t in self.targets(s)):
            return True
        for small in s.node.body:
            if type(small) is cst.Expr and type(small.value) is cst.Call and small.value.args:
                a0 = small.value.args[0].value
                if type(a0) is cst.SimpleString and a0.evaluated_value in names:
                    return True
        return False

    # ------------------------------------------------------------------ blocks
    def block(self, G: list[St], N: list[St], scope: str) -> None:
        self.imports([s for s in G if s.kind == "import"], [s for s in N if s.kind == "import"], scope)
        Gs = [s for s in G if s.kind != "import"]
        Ns = [s for s in N if s.kind != "import"]
        sm = difflib.SequenceMatcher(None, [s.raw for s in Gs], [s.raw for s in Ns], autojunk=False)
        for tag, i1, i2, j1, j2 in sm.get_opcodes():
            if tag != "equal":
                self.region(Gs[i1:i2], Ns[j1:j2], scope)

    def key(self, s: St, nm: Norm):
        k = getattr(s, "_key", None)
        if k is not None:
            return k
        h0, w0, o0 = len(nm.hits), len(nm.swaps), len(nm.opt_calls)
        if s.kind == "compound":
            if s.name is not None:
                k = ("C", type(s.node).__name__, s.name)
                nm(s.node, skip_blocks=True)
            else:
                k = ("C", nm(s.node, skip_blocks=True))
        else:
            k = nm(s.node)
        s._key = k
        s._hits = nm.hits[h0:]
        s._swaps = nm.swaps[w0:]
        s._opts = nm.opt_calls[o0:]
        return k

    def region(self, Gs: list[St], Ns: list[St], scope: str) -> None:
        gk = [self.key(s, self.gn) for s in Gs]
        nk = [self.key(s, self.nn) for s in Ns]
        sm = difflib.SequenceMatcher(None, gk, nk, autojunk=False)
        for tag, i1, i2, j1, j2 in sm.get_opcodes():
            if tag == "equal":
                for gs, ns in zip(Gs[i1:i2], Ns[j1:j2]):
                    self.pair(gs, ns, scope)
            else:
                self.pair_up(Gs[i1:i2], Ns[j1:j2], scope)

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
            return ("call", k[1] if k[0] == "Call" else k)
        return (t.__name__,)

    def pair_up(self, Gs: list[St], Ns: list[St], scope: str) -> None:
        ga = [self.anchor(s, self.gn) for s in Gs]
        na = [self.anchor(s, self.nn) for s in Ns]
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
                for s in Gs[i1:i2]:
                    self.one_sided(s, "gpu", scope)
                for s in Ns[j1:j2]:
                    self.one_sided(s, "npu", scope)

    # ------------------------------------------------------------- a pair
    def pair(self, gs: St, ns: St, scope: str) -> None:
        gk, nk = self.key(gs, self.gn), self.key(ns, self.nn)
        self.record_masks(gs, ns)
        self.check_swaps(gs, ns, scope)
        self.check_optimizers(gs, ns, scope)
        if gs.kind != "compound" or ns.kind != "compound":
            if gk != nk:
                self.report_sites(self.diff_nodes(gs.node, ns.node, None), gs, ns, scope)
            return
        inner = scope
        if gs.name is not None:
            inner = gs.name if scope == "<module>" else f"{scope}.{gs.name}"
        if self.gn(gs.node, skip_blocks=True) != self.nn(ns.node, skip_blocks=True):
            sites = []
            ctx = (f"def {gs.name}" if type(gs.node) is cst.FunctionDef else type(gs.node).__name__.lower(), None)
            for f in fields_of(type(gs.node)):
                if f in BLOCK_FIELDS:
                    continue
                sites += self.diff_values(getattr(gs.node, f), getattr(ns.node, f), ctx, gs.node, ns.node)
            self.report_sites(sites, gs, ns, inner if gs.name else scope)
        gcl = {label: (node, body) for label, node, body in gs.clauses}
        ncl = {label: (node, body) for label, node, body in ns.clauses}
        for label, (gnode, gbody) in gcl.items():
            if label in ncl:
                nnode, nbody = ncl[label]
                if label != "body" and gnode is not gs.node:
                    hg = self.gn(gnode, skip_blocks=True)
                    hn = self.nn(nnode, skip_blocks=True)
                    if hg != hn:
                        sites = []
                        for f in fields_of(type(gnode)):
                            if f not in BLOCK_FIELDS:
                                sites += self.diff_values(getattr(gnode, f), getattr(nnode, f), None, gnode, nnode)
                        self.report_sites(sites, gs, ns, scope)
                self.block(gbody, nbody, inner)
            else:
                for s in gbody:
                    self.one_sided(s, "gpu", inner)
        for label, (nnode, nbody) in ncl.items():
            if label not in gcl:
                for s in nbody:
                    self.one_sided(s, "npu", inner)

    # ---------------------------------------------------------- node diff
    def diff_values(self, vg, vn, ctx, pg, pn) -> list:
        if isinstance(vg, cst.CSTNode) and isinstance(vn, cst.CSTNode):
            return self.diff_nodes(vg, vn, ctx)
        if isinstance(vg, (list, tuple)) and isinstance(vn, (list, tuple)):
            if len(vg) == len(vn):
                out = []
                for a, b in zip(vg, vn):
                    out += self.diff_values(a, b, ctx, pg, pn)
                return out
            if self.gn.value(vg) != self.nn.value(vn):
                return [(pg, pn, ctx)]
            return []
        if self.gn.value(vg) != self.nn.value(vn):
            return [(pg, pn, ctx)]
        return []

    def diff_nodes(self, g, n, ctx) -> list:
        kg, kn = self.gn(g), self.nn(n)
        if kg == kn:
            return []
        if id(g) in self.g.owned or id(n) in self.n.owned:
            return []
        tg = type(g)
        if tg is not type(n):
            if tg is cst.Call and type(n) is cst.Subscript and kg == kn:
                return []
            return [(g, n, ctx)]
        if tg is cst.Call:
            if kg[0] != "Call" or kn[0] != "Call":
                return [] if kg == kn else [(g, n, ("call", self.callee_name(g, self.gn)))]
            if kg[1] != kn[1]:
                return [(g, n, ("call", self.callee_name(g, self.gn)))]
            return self.diff_args(g, n, self.callee_name(g, self.gn))
        if tg in (cst.Name, cst.Attribute, cst.SimpleString, cst.ConcatenatedString, cst.Integer, cst.Float,
                  cst.FormattedStringText, cst.FormattedString):
            return [(g, n, ctx)]
        if tg is cst.Param:
            ctx = (ctx[0] if ctx else "parameter", g.name.value)
        sites = []
        for f in fields_of(tg):
            sites += self.diff_values(getattr(g, f), getattr(n, f), ctx, g, n)
        if len(sites) > MAX_SITES:
            return [(g, n, ctx)]
        return sites

    def diff_args(self, g: cst.Call, n: cst.Call, callee: str) -> list:
        def split(call):
            pos, kw, star = [], {}, []
            for a in call.args:
                if a.star:
                    star.append(a)
                elif a.keyword is None:
                    pos.append(a)
                else:
                    kw[a.keyword.value] = a
            return pos, kw, star

        gp, gkw, gst = split(g)
        np_, nkw, nst = split(n)
        sites = []

        def one(ga, na, label):
            if ga is not None and na is not None:
                return self.diff_nodes(ga.value, na.value, (callee, label))
            present, owned = (ga, self.g.owned) if ga is not None else (na, self.n.owned)
            if id(present.value) in owned:
                return []
            return [(ga.value if ga else ("MISSING", g), na.value if na else ("MISSING", n), (callee, label))]

        for i in range(max(len(gp), len(np_))):
            sites += one(gp[i] if i < len(gp) else None, np_[i] if i < len(np_) else None, f"argument {i + 1}")
        for k in list(gkw) + [k for k in nkw if k not in gkw]:
            sites += one(gkw.get(k), nkw.get(k), k)
        if [self.gn(a.value) for a in gst] != [self.nn(a.value) for a in nst]:
            sites.append((g, n, (callee, "*args/**kwargs")))
        return sites

    def callee_name(self, call, nm: Norm) -> str:
        q = nm.callee(call)
        if q is not None:
            return canon_qn(q, None)
        return _one_line((self.g if nm is self.gn else self.n).code(call.func), 60)

    # ------------------------------------------------------------ findings
    def side(self, p: Parsed, node, fallback_line: int | None, value=True) -> Side:
        if isinstance(node, tuple) and node and node[0] == "MISSING":
            line = p.line_of(node[1], fallback_line)
            return Side(value=None, path=p.name, line=line, source=p.text_at(line))
        line = p.line_of(node, fallback_line)
        return Side(value=self.typed_value(p, node) if value else None, path=p.name, line=line, source=p.text_at(line))

    @staticmethod
    def typed_value(p: Parsed, node):
        """A literal as its value (0.1, True, 'out'); any other code as its source text."""
        if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString, cst.UnaryOperation,
                             cst.Name, cst.Tuple, cst.List)):
            from .python_facts import QName, Reader

            used: list = []
            try:
                v = Reader(p, "").evaluate(node, used)
            except Exception:
                v = None
                used = [None]
            if not used and not isinstance(v, QName) and not isinstance(v, bytes) \
                    and not (v is None and not (type(node) is cst.Name and node.value == "None")):
                return v
        return _one_line(p.code(node))

    def report_sites(self, sites: list, gs: St, ns: St, scope: str) -> None:
        for g, n, ctx in sites:
            gside = self.side(self.g, g, gs.line)
            nside = self.side(self.n, n, ns.line)
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
            self.findings.append(Finding(rule=SEVERITY_RULE[sev], check="script", severity=sev,
                                         key=f"code:{self.base}:{scope}", gpu=gside, npu=nside, message=msg))

    def classify(self, ctx, stmts: list[St], scope: str = "") -> str:
        classes = rules().classes
        names = classes.get("names") or {}
        calls = classes.get("calls") or {}
        order = ("error", "warning", "info")
        if ctx is not None and ctx[1] and not ctx[1].startswith("argument") and not ctx[1].startswith("*"):
            toks = _split_name(ctx[1])
            for sev in order:
                if any(t in (names.get(sev) or []) for t in toks):
                    return sev
        if ctx is not None and ctx[0]:
            callee = ctx[0][4:] if ctx[0].startswith("def ") else ctx[0]
            if ctx[0] == "call":
                callee = ctx[1]
            for sev in order:
                if match_name(callee, calls.get(sev) or []):
                    return sev
            if ctx[0].startswith("def "):
                for sev in order:
                    if any(t in (names.get(sev) or []) for t in _split_name(callee)):
                        return sev
        # a bare string (docstring) cannot change numerics
        if stmts and all(s is not None and s.kind == "simple" and all(
                type(x) is cst.Expr and type(x.value) in (cst.SimpleString, cst.ConcatenatedString)
                for x in s.node.body) for s in stmts):
            return "info"
        # the statements: assignment targets, then the calls they make
        found = set()
        for s in stmts:
            if s is None:
                continue
            for tname in self.targets(s):
                for sev in order:
                    if any(t in (names.get(sev) or []) for t in _split_name(tname)):
                        found.add(sev)
                        break
            for c in self.calls_in(getattr(s, "_key", None)):
                for sev in order:
                    if match_name(c, calls.get(sev) or []):
                        found.add(sev)
                        break
        for sev in order:
            if sev in found:
                return sev
        # the enclosing function's name (loss_func, compute_loss, log_metrics)
        fn = scope.rsplit(".", 1)[-1] if scope and scope != "<module>" else ""
        for sev in order:
            if fn and any(t in (names.get(sev) or []) for t in _split_name(fn)):
                return sev
        return classes.get("default", "warning")

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

    def fact_only(self, s: St, p: Parsed) -> bool:
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

    def one_sided(self, s: St, side: str, scope: str) -> None:
        p, nm = (self.g, self.gn) if side == "gpu" else (self.n, self.nn)
        if self.fact_only(s, p):
            return
        if side == "npu" and self.supports_swap(s):
            self.add_masked("SD008", None, Side(path=p.name, line=s.line, source=p.text_at(s.line)))
            return
        if getattr(s, "_key", None) is None or s.kind == "compound":
            nm(s.node)
            s._key = nm(s.node)
        inner = scope
        if s.name is not None:
            inner = s.name if scope == "<module>" else f"{scope}.{s.name}"
        sd = Side(value=_one_line(s.hraw if s.kind == "compound" else s.raw), path=p.name, line=s.line,
                  source=p.text_at(s.line))
        sev = self.classify(None, [s], inner)
        what = {"FunctionDef": "function", "ClassDef": "class"}.get(type(s.node).__name__, "statement")
        where = "GPU" if side == "gpu" else "NPU"
        msg = f"{what} on {where} only" + (f": {s.name}" if s.name else "")
        self.findings.append(Finding(rule=SEVERITY_RULE[sev], check="script", severity=sev,
                                     key=f"code:{self.base}:{inner}", gpu=sd if side == "gpu" else None,
                                     npu=sd if side == "npu" else None, message=msg))

    # --------------------------------------------------------------- masks
    def add_masked(self, rule: str, gside: Side | None, nside: Side | None) -> None:
        k = (rule, gside.line if gside else None, nside.line if nside else None)
        if k in self._masked_seen:
            return
        self._masked_seen.add(k)
        self.masked.append(Masked(rule=rule, gpu=gside, npu=nside))

    def record_masks(self, gs: St, ns: St) -> None:
        hits = getattr(ns, "_hits", [])
        if not hits:
            return
        same_shape = gs.raw.count("\n") == ns.raw.count("\n")
        for rule, node in hits:
            nline = self.n.line_of(node, ns.line) if node is not None else ns.line
            gline = gs.line + (nline - ns.line) if same_shape else gs.line
            self.add_masked(rule, Side(path=self.g.name, line=gline, source=self.g.text_at(gline)),
                            Side(path=self.n.name, line=nline, source=self.n.text_at(nline)))

    def imports(self, gi: list[St], ni: list[St], scope: str) -> None:
        def items(sts, p):
            out = {}
            for s in sts:
                for small in s.node.body:
                    for _bound, qn in import_items(small):
                        hits: list = []
                        c = canon_qn(qn, hits)
                        out.setdefault(c, (qn, s, hits))
            return out

        if not gi and not ni:
            return
        gm, nmap = items(gi, self.g), items(ni, self.n)
        for c, (qn, s, hits) in nmap.items():
            if c in gm:
                _gqn, gs, _ = gm[c]
                for rule, _node in hits:
                    self.add_masked(rule, Side(path=self.g.name, line=gs.line, source=self.g.text_at(gs.line)),
                                    Side(path=self.n.name, line=s.line, source=self.n.text_at(s.line)))
                continue
            rule = expected_import(qn, "npu")
            nside = Side(value=qn, path=self.n.name, line=s.line, source=self.n.text_at(s.line))
            if rule:
                self.add_masked(rule, None, nside)
            else:
                self.findings.append(Finding(rule=IMPORT_RULE, check="script", severity="info",
                                             key=f"code:{self.base}:{scope}", gpu=None, npu=nside,
                                             message=f"{qn} is imported on NPU only"))
        for c, (qn, s, _hits) in gm.items():
            if c in nmap:
                continue
            rule = expected_import(qn, "gpu")
            gside = Side(value=qn, path=self.g.name, line=s.line, source=self.g.text_at(s.line))
            if rule:
                self.add_masked(rule, gside, None)
            else:
                self.findings.append(Finding(rule=IMPORT_RULE, check="script", severity="info",
                                             key=f"code:{self.base}:{scope}", gpu=gside, npu=None,
                                             message=f"{qn} is imported on GPU only"))

    # --------------------------------------------------------------- swaps
    def check_swaps(self, gs: St, ns: St, scope: str) -> None:
        gsw = getattr(gs, "_swaps", [])
        nsw = getattr(ns, "_swaps", [])
        if not gsw and not nsw:
            return
        for fam in ("flash_attention", "clip_grad_norm"):
            gl = [c for f, c in gsw if f == fam]
            nl = [c for f, c in nsw if f == fam]
            for gc, nc in zip(gl, nl):
                gq = canon_qn(self.gn.callee(gc) or "", None)
                nq = canon_qn(self.nn.callee(nc) or "", None)
                if fam == "flash_attention":
                    r = rules()
                    if gq in r.fa_gpu and nq in r.fa_npu:
                        self.mask_pair("SD008", gc, nc, gs, ns)
                        self.check_fa(gc, nc, gq, nq, gs, ns, scope)
                    else:
                        self.report_sites(self.diff_args(gc, nc, gq) if gq == nq else [(gc, nc, ("call", gq))],
                                          gs, ns, scope)
                else:
                    if gq == nq or (gq.rsplit(".", 1)[-1] == nq.rsplit(".", 1)[-1]):
                        self.report_sites(self.diff_args(gc, nc, gq), gs, ns, scope)
                    else:
                        self.mask_pair(rules().clip_rule, gc, nc, gs, ns)
                        gnt = self.arg(gc, "norm_type", 2)
                        nnt = self.arg(nc, "norm_type", 1)
                        gv = self.gn(gnt.value) if gnt is not None else ("NUM", 2)
                        nv = self.nn(nnt.value) if nnt is not None else ("NUM", 2)
                        if gv != nv and not (gv[0] == nv[0] == "NUM" and float(gv[1]) == float(nv[1])):
                            self.report_sites([(gnt.value if gnt else ("MISSING", gc), nnt.value if nnt else ("MISSING", nc),
                                                (gq, "norm_type"))], gs, ns, scope)

    def check_optimizers(self, gs: St, ns: St, scope: str) -> None:
        """Decoupled (AdamW) vs L2 (Adam) weight decay across a fused-optimizer swap."""
        gl, nl = getattr(gs, "_opts", []), getattr(ns, "_opts", [])
        if not gl or not nl:
            return
        kinds = rules().raw.get("weight_decay_kind") or {}
        from .python_facts import NotLiteral, Reader

        def kind(p, qn, call):
            if qn in (kinds.get("decoupled") or []):
                return "decoupled"
            if qn in (kinds.get("l2") or []):
                return "l2"
            sw = (kinds.get("switch") or {}).get(qn)
            if sw is None:
                return None
            a = self.arg(call, sw["param"], sw.get("position"))
            if a is None:
                return "decoupled" if sw.get("default") else "l2"
            try:
                v = Reader(p, "").evaluate(a.value, [])
            except (NotLiteral, Exception):
                return None
            return "decoupled" if v else "l2"

        for (gf, gq, gc), (nf, nq, nc) in zip(gl, nl):
            gk, nk = kind(self.g, gq, gc), kind(self.n, nq, nc)
            if gk is None or nk is None or gk == nk:
                continue
            wd = self.arg(gc, "weight_decay", None) or self.arg(nc, "weight_decay", None)
            p = self.g if self.arg(gc, "weight_decay", None) is not None else self.n
            wdv = self.num(p, wd.value) if wd is not None else 0.0
            if wdv == 0:
                continue
            gl_ = self.g.line_of(gc, gs.line)
            nl_ = self.n.line_of(nc, ns.line)
            what = {"decoupled": "decoupled (AdamW)", "l2": "L2 (Adam)"}
            self.findings.append(Finding(
                rule="SD101", check="script", severity="error", key=f"code:{self.base}:{scope}",
                gpu=Side(value=f"{gq}: {what[gk]} weight decay", path=self.g.name, line=gl_, source=self.g.text_at(gl_)),
                npu=Side(value=f"{nq}: {what[nk]} weight decay", path=self.n.name, line=nl_, source=self.n.text_at(nl_)),
                message=f"optimizer swap changes how weight_decay is applied: {what[gk]} on GPU, {what[nk]} on NPU"))

    def mask_pair(self, rule: str, gc, nc, gs: St, ns: St) -> None:
        gl = self.g.line_of(gc, gs.line)
        nl = self.n.line_of(nc, ns.line)
        self.add_masked(rule, Side(path=self.g.name, line=gl, source=self.g.text_at(gl)),
                        Side(path=self.n.name, line=nl, source=self.n.text_at(nl)))

    @staticmethod
    def arg(call, name: str, index: int | None, names: list | None = None):
        pos = 0
        for a in call.args:
            if a.keyword is not None:
                if a.keyword.value == name:
                    return a
            elif not a.star:
                if index is not None and pos == index:
                    return a
                pos += 1
        return None

    def num(self, p: Parsed, node):
        from .python_facts import NotLiteral, Reader

        try:
            v = Reader(p, "").evaluate(node, [])
        except (NotLiteral, Exception):
            return None
        return v if isinstance(v, (int, float, bool)) or v is None else None

    def check_fa(self, gc, nc, gq: str, nq: str, gs: St, ns: St, scope: str) -> None:
        r = rules()
        gnames = r.fa_gpu[gq]
        nnames = r.fa_npu[nq]

        def get(call, names, name):
            return self.arg(call, name, names.index(name) if name in names else None)

        problems = []  # (gpu node or MISSING, npu node or MISSING, message)
        # dropout -> keep_prob
        dp = get(gc, gnames, "dropout_p")
        kp = get(nc, nnames, "keep_prob")
        dpv = 0.0 if dp is None else self.num(self.g, dp.value)
        kpv = 1.0 if kp is None else self.num(self.n, kp.value)
        ok = False
        if dpv is not None and kpv is not None and not isinstance(dpv, bool) and not isinstance(kpv, bool):
            ok = abs((1.0 - float(dpv)) - float(kpv)) < 1e-9
        elif kp is not None and dp is not None and type(kp.value) is cst.BinaryOperation \
                and type(kp.value.operator) is cst.Subtract and self.num(self.n, kp.value.left) == 1:
            ok = self.nn(kp.value.right) == self.gn(dp.value)
        if not ok:
            problems.append((dp.value if dp else ("MISSING", gc), kp.value if kp else ("MISSING", nc),
                             "keep_prob must be 1 - dropout_p"))
        # scale
        ss = get(gc, gnames, "softmax_scale")
        sc = get(nc, nnames, "scale")
        ssv_none = ss is None or (type(ss.value) is cst.Name and ss.value.value == "None")
        if sc is None:
            problems.append((ss.value if ss else ("MISSING", gc), ("MISSING", nc),
                             f"scale is not given: npu_fusion_attention defaults to {r.fa.get('npu_default_scale', 1.0)}, "
                             "flash_attn to softmax_scale or 1/sqrt(head_dim)"))
        elif not ssv_none:
            a, b = self.num(self.g, ss.value), self.num(self.n, sc.value)
            same = (a is not None and b is not None and abs(float(a) - float(b)) < 1e-12) or self.gn(ss.value) == self.nn(sc.value)
            if not same:
                problems.append((ss.value, sc.value, "scale differs from softmax_scale"))
        else:
            b = self.num(self.n, sc.value)
            if b is not None and float(b) == 1.0:
                problems.append((("MISSING", gc), sc.value, "scale=1.0 on NPU while flash_attn uses 1/sqrt(head_dim)"))
        # causal
        ca = get(gc, gnames, "causal")
        cav = False if ca is None else self.num(self.g, ca.value)
        am = get(nc, nnames, "atten_mask")
        sm = get(nc, nnames, "sparse_mode")
        smv = 0 if sm is None else self.num(self.n, sm.value)
        has_mask = am is not None and not (type(am.value) is cst.Name and am.value.value == "None")
        modes = r.fa.get("causal_sparse_modes", [0, 2, 3])
        if cav is True or (cav is None and ca is not None):
            if not has_mask:
                problems.append((ca.value, am.value if am else ("MISSING", nc),
                                 "causal=True needs a causal atten_mask on NPU"))
            elif smv is not None and smv not in modes:
                problems.append((ca.value, sm.value, f"sparse_mode {smv} is not a causal mode ({', '.join(map(str, modes))})"))
        elif cav is False and smv in (2, 3):
            problems.append((ca.value if ca else ("MISSING", gc), sm.value,
                             f"sparse_mode {smv} makes NPU attention causal; GPU causal is off"))
        for gnode, nnode, msg in problems:
            gside = self.side(self.g, gnode, gs.line)
            nside = self.side(self.n, nnode, ns.line)
            self.findings.append(Finding(rule=FA_RULE, check="script", severity="error",
                                         key=f"code:{self.base}:{scope}", gpu=gside, npu=nside,
                                         message=f"flash attention translation: {msg}"))
