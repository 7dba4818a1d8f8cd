"""Parsing a Python file once, and the normalized form its statements are compared in.

One libcst parse per file, then one code-generation pass with a light state that records,
for every node, its line and its token span (libcst's PositionProvider and
QualifiedNameProvider cost several parses each on a large file; this pass costs about half
of one). That pass uses libcst's private API, in spans only, which falls back to the
public API when the private one is unusable. Qualified names come from the file's own imports (`import torch as th`,
`from torch import cuda`), which is what the masks need.

`Norm` turns a node into a hashable key: formatting and comments dropped, literals
evaluated, names resolved through imports, and the NPU forms in rules/python.yaml
(`torch_npu.npu.X`, `.npu()`, 'hccl', 'npu:0', ...) rewritten into their GPU forms, with
every rewrite recorded so it can be listed as a masked substitution.
"""
from __future__ import annotations

import ast
import fnmatch
import sys
import warnings
from dataclasses import dataclass, field

import libcst as cst

from ...ruleset.rules import RuleSet, code, derived
from . import cpytree
from .guard import measure, on_big_stack
from .spans import LineState, PublicState, SpansError, record

# statement types that hold blocks, and the fields that hold them
COMPOUND = (cst.FunctionDef, cst.ClassDef, cst.If, cst.For, cst.While, cst.With, cst.Try, cst.TryStar, cst.Match)
BLOCK_FIELDS = frozenset({"body", "orelse", "handlers", "finalbody", "cases"})
# fields that are pure formatting
SKIP_FIELDS = frozenset({
    "lpar", "rpar", "comma", "semicolon", "leading_lines", "lines_after_decorators", "header", "footer",
    "trailing_whitespace", "indent", "newline", "equal", "colon", "lbracket", "rbracket", "lbrace", "rbrace",
    "default_indent", "default_newline", "has_trailing_newline", "encoding", "dot", "first_line",
})


@dataclass
class St:
    """One statement of a block, as compared."""

    node: cst.CSTNode
    kind: str  # simple | import | compound
    raw: str
    line: int
    name: str | None = None  # def/class name
    clauses: list = field(default_factory=list)  # [(label, clause node, [St])]
    hraw: str = ""  # header text of a compound statement
    mark: str = ""  # the device it was specialised for, when part of it was (specialise.py)

    @property
    def text(self) -> str:
        """What the alignment compares first: its text, and the device a specialised part reads for."""
        return self.raw + self.mark if self.mark else self.raw


@dataclass
class Parsed:
    """One Python file: its libcst module, node positions, statements, imports and facts."""

    name: str
    module: cst.Module | None
    lines: list[str]
    state: LineState | PublicState | None = None  # node positions and spans (spans)
    aliases: dict[str, str] = field(default_factory=dict)  # bound name -> qualified name
    body: list[St] = field(default_factory=list)
    error: str | None = None  # why the file is not compared structurally (it is compared as text)
    text_reason: str = "not valid Python"  # the text comparison's note, when error is set
    # fact bookkeeping (facts fills these)
    owned: dict[int, str] = field(default_factory=dict)  # id(node) -> fact key (compared as facts)
    fact_calls: set[int] = field(default_factory=set)  # ids of calls that yielded facts
    present_calls: set[int] = field(default_factory=set)  # of those, calls that are a setting by being made
    facts: list = field(default_factory=list)
    frameworks: set[str] = field(default_factory=set)
    consts: dict[str, cst.CSTNode] = field(default_factory=dict)
    reassigned: set[str] = field(default_factory=set)  # module constants assigned more than once
    names: set | None = None  # every Name in the file, computed on demand (values)
    options: dict | None = None  # option or dataclass field name -> (its label, default node) (facts)
    fact_error: str | None = None  # why the facts could not be read (the structural diff still runs)
    too_large: list[str] = field(default_factory=list)  # values over an evaluation budget, a line each
    # what a call of code this file does not hold leaves unknown (facts.py: built_elsewhere): a
    # phrase naming it -> the settings it could set; said only when the other side sets one of them
    unknowns: dict[str, list[str]] = field(default_factory=dict)
    size: int = 0  # bytes of source (the parse cache's measure)
    spec: object | None = None  # what specialising it to one device gave (specialise.Specialised)
    program: object | None = None  # its functions, classes and local names (evaluate/program.py), built once
    nodes: object | None = None  # its calls, names and imports in one walk (node_index), built once

    def release(self) -> None:
        """Drop what was built from it and refers back to it (its walk, its program): cycles
        that, left to the cycle collector (which a command freezes: run/gcpause.py), would
        keep the whole tree to the end of the process. Called when no reader needs it again."""
        self.spec = self.program = None

    def line_of(self, node, default: int | None = None) -> int | None:
        return self.state.lines.get(id(node), default) if self.state else default

    def position(self, node) -> list[int] | None:
        """[line, column] of the node's syntactic start in the file (the line mapped back from a
        focused text): where `scriptdiff fix` finds it again with libcst's PositionProvider."""
        line = self.line_of(node)
        col = self.state.column(node) if self.state else None
        return None if line is None or col is None else [line, col]

    def live_of(self, node):
        """The operand a conditional expression on the device (`A if is_npu() else B`) evaluates
        on this file's device (specialise.py); any other node as it is."""
        sp = self.spec
        while sp is not None:
            nxt = sp.live.get(id(node))
            if nxt is None:
                break
            node = nxt
        return node

    def text_at(self, line: int | None) -> str:
        if line is None or not (1 <= line <= len(self.lines)):
            return ""
        return self.lines[line - 1].strip()

    def code(self, node) -> str:
        """The source text of a node (formatting as written), from the recorded token span."""
        st = self.state
        a = st.syn_tok.get(id(node), st.start_tok.get(id(node)))
        b = st.end_tok.get(id(node))
        if a is None or b is None:
            try:
                return self.module.code_for_node(node).strip()
            except Exception:
                return type(node).__name__
        return st.slice(a, b).strip()


_DEPTH_WORDS = ("too many nested", "too many statically nested", "too many levels of indentation", "too complex")


def _beyond_libcst(name: str, lines: list[str], e: Exception) -> Parsed:
    """Valid Python (CPython parses it) that libcst cannot: said as such, never "not valid Python"."""
    why = (str(getattr(e, "message", "") or e).strip().splitlines() or [type(e).__name__])[0].rstrip(".")
    line = getattr(e, "raw_line", None)
    return Parsed(name=name, module=None, lines=lines,
                  error=f"valid Python that the structural parser (libcst) cannot read"
                        f"{f' at line {line}' if line else ''} ({why})",
                  text_reason="valid Python that libcst cannot read")


def parse(name: str, text: str, max_bytes: int | None = None, linemap: list[int] | None = None,
          lines: list[str] | None = None) -> Parsed:
    """`text` may be a part of the file (focus): `linemap` then gives the file line of each
    of its lines, and `lines` the file's lines."""
    lines = text.splitlines() if lines is None else lines
    # CPython's parser first: it is cheap (under a tenth of libcst's) and guards its stack,
    # while libcst's native parser crashes the process on deep nesting and long chains;
    # guard measures what CPython accepted against what libcst and the passes after it
    # can take. A plain syntax error is left to libcst, which may know newer syntax than the
    # running interpreter.
    valid = False  # CPython parses it: a libcst failure is then libcst's limit, not the file's fault
    try:
        if linemap is None:  # the whole file: its tree is kept for the pair's other readers
            tree = cpytree.whole(text)
        else:
            with warnings.catch_warnings():  # the analysed file's invalid escapes are its own business
                warnings.simplefilter("ignore")
                tree = ast.parse(text)
        too_deep = measure(tree, text, max_bytes)
        del tree
        if too_deep:
            return Parsed(name=name, module=None, lines=lines, error=too_deep,
                          text_reason="beyond the structural parser's limits")
        valid = True
    except (RecursionError, MemoryError):
        return Parsed(name=name, module=None, lines=lines, error="not valid Python: nested too deeply to parse")
    except SyntaxError as se:
        if se.msg and any(w in se.msg for w in _DEPTH_WORDS):
            return Parsed(name=name, module=None, lines=lines, error=f"not valid Python: line {se.lineno}: {se.msg}")
    except Exception:
        pass
    try:
        module = on_big_stack(cst.parse_module, text)
    except cst.ParserSyntaxError as e:
        if valid:
            return _beyond_libcst(name, lines, e)
        line, reason = e.raw_line, str(e.message if hasattr(e, "message") else e).strip().splitlines()[0]
        try:  # CPython's own message and line are the ones users know
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ast.parse(text)
        except SyntaxError as se:
            line, reason = se.lineno or line, se.msg or reason
        except Exception:
            pass
        return Parsed(name=name, module=None, lines=lines, error=f"not valid Python: line {line}: {reason}")
    except Exception as e:  # libcst refuses some inputs with other errors; never a traceback
        if valid:
            return _beyond_libcst(name, lines, e)
        reason = (str(e).splitlines() or [type(e).__name__])[0].rstrip(".")
        where = ""
        try:
            ast.parse(text)
        except SyntaxError as se:
            where, reason = f"line {se.lineno}: ", se.msg or reason
        except Exception:
            pass
        return Parsed(name=name, module=None, lines=lines, error=f"not valid Python: {where}{reason}")
    try:
        st = record(module, text)
    except SpansError as e:
        return Parsed(name=name, module=None, lines=lines,
                      error=f"node positions not available from libcst ({e})",
                      text_reason="libcst gave no node positions")
    if linemap is not None:
        st.lines = {k: linemap[v - 1] if 0 < v <= len(linemap) else v for k, v in st.lines.items()}
    p = Parsed(name=name, module=module, lines=lines, state=st)
    p.body = build_block(module.body, p)
    return p


# ---------------------------------------------------------------- statements and imports
def _span(p: Parsed, node, start_syntactic: bool = True) -> str:
    st = p.state
    a = st.syn_tok.get(id(node)) if start_syntactic else None
    if a is None:
        a = st.start_tok.get(id(node), 0)
    b = st.end_tok.get(id(node), a)
    return st.slice(a, b)


def build_block(stmts, p: Parsed) -> list[St]:
    out = []
    for node in stmts:
        t = type(node)
        if t is cst.SimpleStatementLine or t is cst.SimpleStatementSuite:
            small = node.body
            kind = "import" if small and all(type(s) in (cst.Import, cst.ImportFrom) for s in small) else "simple"
            for s in small:
                if type(s) in (cst.Import, cst.ImportFrom):
                    _record_imports(s, p)
            out.append(St(node=node, kind=kind, raw=_span(p, node), line=p.line_of(node, 0)))
        elif isinstance(node, COMPOUND):
            start = None
            decos = getattr(node, "decorators", ())
            if decos:
                start = p.state.syn_tok.get(id(decos[0]))
            a = start if start is not None else p.state.syn_tok.get(id(node), p.state.start_tok.get(id(node), 0))
            b = p.state.end_tok.get(id(node), a)
            raw = p.state.slice(a, b)
            s = St(node=node, kind="compound", raw=raw, line=p.line_of(node, 0),
                   name=node.name.value if t in (cst.FunctionDef, cst.ClassDef) else None)
            s.clauses = clauses(node, p)
            body_start = p.state.start_tok.get(id(node.body), b) if hasattr(node, "body") else b
            s.hraw = p.state.slice(a, body_start) if t not in (cst.Match,) else raw
            out.append(s)
        else:  # pragma: no cover  (every statement is one of the above)
            out.append(St(node=node, kind="simple", raw=_span(p, node), line=p.line_of(node, 0)))
    return out


def _block_body(b) -> list:
    if isinstance(b, cst.IndentedBlock):
        return list(b.body)
    if isinstance(b, cst.SimpleStatementSuite):
        return [b]
    return []


def clauses(node, p: Parsed) -> list:
    t = type(node)
    if t is cst.Match:
        return [(f"case{i}", c, build_block(_block_body(c.body), p)) for i, c in enumerate(node.cases)]
    out = [("body", node, build_block(_block_body(node.body), p))]
    if t is cst.If:
        o = node.orelse
        while o is not None:
            if isinstance(o, cst.If):
                out.append(("elif", o, build_block(_block_body(o.body), p)))
                o = o.orelse
            else:
                out.append(("else", o, build_block(_block_body(o.body), p)))
                o = None
    elif t in (cst.For, cst.While):
        if node.orelse is not None:
            out.append(("else", node.orelse, build_block(_block_body(node.orelse.body), p)))
    elif t in (cst.Try, cst.TryStar):
        for i, h in enumerate(node.handlers):
            out.append((f"except{i}", h, build_block(_block_body(h.body), p)))
        if node.orelse is not None:
            out.append(("else", node.orelse, build_block(_block_body(node.orelse.body), p)))
        if node.finalbody is not None:
            out.append(("finally", node.finalbody, build_block(_block_body(node.finalbody.body), p)))
    return out


def dotted(node) -> str | None:
    """'a.b.c' for a Name/Attribute chain, else None."""
    parts = []
    while type(node) is cst.Attribute:
        parts.append(node.attr.value)
        node = node.value
    if type(node) is not cst.Name:
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def qualified_name(p: "Parsed", node) -> str | None:
    """The qualified name of a Name/Attribute chain whose head the file imports
    (`th.cuda.synchronize` with `import torch as th`: torch.cuda.synchronize), else None."""
    d = dotted(node)
    if d is None:
        return None
    head, _, rest = d.partition(".")
    base = p.aliases.get(head)
    if base is None:
        return None
    return base + ("." + rest if rest else "")


def import_items(s) -> list[tuple[str, str]]:
    """(bound name, qualified name) for each alias of an import statement."""
    out = []
    if type(s) is cst.Import:
        for a in s.names:
            full = dotted(a.name) or ""
            if a.asname is not None:
                out.append((a.asname.name.value, full))
            else:
                out.append((full.split(".")[0], full))
    elif type(s) is cst.ImportFrom:
        mod = dotted(s.module) if s.module is not None else ""
        mod = "." * len(s.relative) + (mod or "")
        if isinstance(s.names, cst.ImportStar):
            return [("*", mod + ".*")]
        for a in s.names:
            nm = dotted(a.name) or ""
            bound = a.asname.name.value if a.asname is not None else nm
            out.append((bound, f"{mod}.{nm}" if mod and not mod.endswith(".") else f"{mod}{nm}"))
    return out


def _record_imports(s, p: Parsed) -> None:
    for bound, qn in import_items(s):
        if bound == "*" or bound in p.aliases:
            continue
        if type(s) is cst.Import and bound == qn.split(".")[0]:
            p.aliases[bound] = bound  # `import torch.nn` binds torch
        else:
            p.aliases[bound] = qn


# ------------------------------------------------------------------- rule data, prepared
@dataclass
class PyRules:
    qrenames: list  # [(npu prefix, gpu prefix, rule)] longest first
    methods: dict  # npu name -> (gpu name, rule)
    attrs: dict
    whole: dict  # npu string -> (gpu string, rule)
    substr: list  # [(npu, gpu, rule)]
    npu_imports: list
    gpu_imports: list
    opt_family: dict  # qualified name -> (family, side)
    clip_gpu: set
    clip_method: str
    clip_rule: str
    fa_gpu: dict
    fa_npu: dict
    fa: dict
    fa_sdpa: dict  # GPU attention calls npu_fusion_attention replaces under other names: qn -> (params, roles)
    classes: dict
    raw: dict
    signatures: dict = field(default_factory=dict)  # qualified name -> (params, defaults) (rules/signatures.yaml)


@derived
def rules(rs: RuleSet) -> PyRules:
    d = rs.section("python", {}) or {}
    q = sorted(((r["npu"], r["gpu"], r["rule"]) for r in d.get("qualified_renames", [])), key=lambda x: -len(x[0]))
    fam = {}
    for name, f in (d.get("optimizer_swaps") or {}).items():
        for qn in f.get("gpu", []):
            fam[qn] = (name, "gpu")
        for qn in f.get("npu", []):
            fam[qn] = (name, "npu")
    fa = d.get("flash_attention") or {}
    clip = d.get("clip_swap") or {}
    strings = d.get("strings") or {}
    ei = d.get("expected_imports") or {}
    return PyRules(
        qrenames=q,
        methods={r["npu"]: (r["gpu"], r["rule"]) for r in d.get("method_renames", [])},
        attrs={r["npu"]: (r["gpu"], r["rule"]) for r in d.get("attribute_renames", [])},
        # an environment variable's NPU name (os.environ["ASCEND_RT_VISIBLE_DEVICES"]) is its GPU twin's
        # (rules/environment.yaml env_map.pairs), as in a launch script's export
        whole={**{npu: (gpu, code("env-var-renamed"))
                  for gpu, npu in ((rs.section("env_map", {}) or {}).get("pairs") or {}).items()},
               **{r["npu"]: (r["gpu"], r["rule"]) for r in strings.get("whole", [])}},
        substr=[(r["npu"], r["gpu"], r["rule"]) for r in strings.get("substring", [])],
        npu_imports=[(r["module"], r["rule"]) for r in ei.get("npu_only", [])],
        gpu_imports=[(r["module"], r["rule"]) for r in ei.get("gpu_only", [])],
        opt_family=fam,
        clip_gpu=set(clip.get("gpu", [])), clip_method=clip.get("npu_method", ""), clip_rule=clip["rule"] if "rule" in clip else code("fused-optimizer-swap"),
        fa_gpu=dict(fa.get("gpu") or {}), fa_npu=dict(fa.get("npu") or {}), fa=fa,
        fa_sdpa={qn: (list(e["params"]), dict(e.get("roles") or {})) for qn, e in (fa.get("sdpa") or {}).items()},
        classes=d.get("classes") or {}, raw=d,
        signatures={qn: (list(e.get("params") or []), dict(e.get("defaults") or {}))
                    for qn, e in (rs.section("call_signatures", {}) or {}).items()},
    )


def expected_import(qn: str, side: str) -> str | None:
    """The mask rule of an import expected on this side only (a prefix match), else None."""
    r = rules()
    for mod, rule in (r.npu_imports if side == "npu" else r.gpu_imports):
        if qn.startswith(mod):
            return rule
    return None


def canon_qn(qn: str, hits: list | None, node=None) -> str:
    """The GPU form of a qualified name (NPU renames applied), recording a hit."""
    r = rules()
    for npu, gpu, rule in r.qrenames:
        if qn == npu or qn.startswith(npu + "."):
            qn = gpu + qn[len(npu):]
            if hits is not None:
                hits.append((rule, node))
            break
    last = qn.rsplit(".", 1)
    if len(last) == 2 and last[1] in r.attrs:
        gpu, rule = r.attrs[last[1]]
        qn = last[0] + "." + gpu
        if hits is not None:
            hits.append((rule, node))
    return qn


# --------------------------------------------------------------------------- normalizing
_FIELDS: dict[type, tuple] = {}


def fields_of(t: type) -> tuple:
    f = _FIELDS.get(t)
    if f is None:
        f = tuple(n for n in t.__dataclass_fields__ if n not in SKIP_FIELDS and not n.startswith("whitespace"))
        _FIELDS[t] = f
    return f


_IS_NODE: dict = {}


def _node(v) -> bool:
    t = type(v)
    got = _IS_NODE.get(t)
    if got is None:
        got = _IS_NODE[t] = issubclass(t, cst.CSTNode)
    return got


def kids(node) -> list:
    """A node's child nodes, formatting left out (libcst's `children` runs a visitor: slow).
    Called for every node of a file several times over: written for speed (the node test is a
    lookup by type, the function only for a type not met yet)."""
    out = []
    is_node = _IS_NODE.get
    f = _FIELDS.get(type(node))
    for name in f if f is not None else fields_of(type(node)):
        v = getattr(node, name)
        t = type(v)
        if t is list or t is tuple:
            for x in v:
                k = is_node(type(x))
                if k or k is None and _node(x):
                    out.append(x)
        else:
            k = is_node(t)
            if k or k is None and _node(v):
                out.append(v)
    return out


_TEXT_ORDER = {cst.IfExp: ("body", "test", "orelse")}  # fields whose order is not the text's


def source_kids(node) -> list:
    """`kids`, in the order they are written (`a if t else b`: a, t, b; decorators first)."""
    t = type(node)
    if t is cst.FunctionDef or t is cst.ClassDef:
        ks = kids(node)
        deco = [k for k in ks if type(k) is cst.Decorator]
        return deco + [k for k in ks if type(k) is not cst.Decorator] if deco else ks
    order = _TEXT_ORDER.get(t)
    if order is None:
        return kids(node)
    return [getattr(node, f) for f in order]


@dataclass
class NodeIndex:
    """The nodes of a whole module that the passes after the diff ask for, found in one walk (a
    libcst visitor pass per question cost a third of a parse each): every call, every name or
    attribute chain not inside another (`torch.cuda.amp`, a keyword's name) and every attribute,
    imports left out; the import statements; every Name, string and assignment, imports
    included. In the order of the walk: callers sort by line where order matters."""

    calls: list
    chains: list
    attributes: list
    imports: list
    names: list
    strings: list
    assigns: list


def node_index(p: Parsed) -> NodeIndex:
    if p.nodes is None:
        ix = p.nodes = NodeIndex([], [], [], [], [], [], [])
        stack = [(p.module, False, False)] if p.module is not None else []
        while stack:
            x, chained, imported = stack.pop()
            t = type(x)
            if t is cst.Name:
                ix.names.append(x)
                if not chained and not imported:
                    ix.chains.append(x)
                continue
            if t is cst.SimpleString:
                ix.strings.append(x)
                continue
            if t is cst.Import or t is cst.ImportFrom:
                ix.imports.append(x)
                imported = True
            elif imported:
                pass
            elif t is cst.Call:
                ix.calls.append(x)
            elif t is cst.Attribute:
                ix.attributes.append(x)
                if not chained:
                    ix.chains.append(x)
                    chained = True
            elif t is cst.Assign:
                ix.assigns.append(x)
            stack.extend((k, chained, imported) for k in reversed(kids(x)))
    return p.nodes


class Norm:
    """Normalizes nodes of one file; memoizes keys; records masks and swap calls."""

    def __init__(self, p: Parsed):
        self.p = p
        self.memo: dict[int, object] = {}
        self.hits: list = []  # (rule, node) or (rule, node, target: what the edit maps to)
        self.swaps: list = []  # (family, call node)
        self.opt_calls: list = []  # (family, qualified name, call node)

    def __call__(self, node, skip_blocks: bool = False):
        k = id(node)
        if not skip_blocks:
            v = self.memo.get(k)
            if v is not None:
                return v
        own = self.p.owned.get(k)
        sp = self.p.spec
        if own is not None:
            v = ("FACT", own)
        elif sp is not None and (k in sp.live or k in sp.devices):
            # specialised: `A if is_npu() else B`, DTYPES[DEVICE], a device name (DEVICE, get_device())
            v = self(self.p.live_of(node)) if k in sp.live else ("S", self.mask_string(sp.devices[k], node))
        else:
            h = _HANDLERS.get(type(node))
            v = h(self, node) if h is not None and not skip_blocks else self.generic(node, skip_blocks)
        if not skip_blocks:
            self.memo[k] = v
        return v

    def generic(self, node, skip_blocks: bool = False):
        t = type(node)
        out = [t.__name__]
        for name in fields_of(t):
            if skip_blocks and name in BLOCK_FIELDS:
                continue
            out.append(self.value(getattr(node, name)))
        return tuple(out)

    def value(self, v):
        if isinstance(v, cst.CSTNode):
            return self(v)
        if isinstance(v, (list, tuple)):
            return tuple(self.value(x) for x in v)
        if isinstance(v, cst.MaybeSentinel):
            return None
        return v

    # -- names
    def qualified(self, node) -> str | None:
        """Qualified name of a Name/Attribute chain whose head is imported (before renames)."""
        return qualified_name(self.p, node)

    def name(self, node):
        q = self.p.aliases.get(node.value)
        if q is not None:
            return ("QN", canon_qn(q, self.hits, node))
        return ("N", node.value)

    def attribute(self, node):
        q = self.qualified(node)
        if q is not None:
            return ("QN", canon_qn(q, self.hits, node))
        attr = node.attr.value
        r = rules().attrs.get(attr)
        if r is not None:
            self.hits.append((r[1], node))
            attr = r[0]
        return ("A", self(node.value), attr)

    def callee(self, node) -> str | None:
        """The called function's qualified name (raw, before renames), or a dotted local name."""
        f = node.func
        q = self.qualified(f)
        if q is not None:
            return q
        return dotted(f)

    def call(self, node):
        r = rules()
        raw_qn = self.callee(node)
        f = node.func
        if raw_qn is not None:
            if raw_qn in r.fa_gpu or raw_qn in r.fa_npu:
                self.swaps.append(("flash_attention", node))
                return ("SWAP", "flash_attention")
            if raw_qn in r.fa_sdpa:  # compared as written; a swap only when the NPU side has the fused attention
                self.swaps.append(("sdpa", node))
            if raw_qn in r.clip_gpu or (type(f) is cst.Attribute and f.attr.value == r.clip_method):
                self.swaps.append(("clip_grad_norm", node))
                return ("SWAP", "clip_grad_norm")
            fam = r.opt_family.get(raw_qn)
            if fam is not None:
                if fam[1] == "npu":
                    self.hits.append((code("fused-optimizer-swap"), node, raw_qn))  # its target: the NPU class
                self.opt_calls.append((fam[0], raw_qn, node))
                return ("Call", ("OPT", fam[0]), self.value(node.args))
        if type(f) is cst.Attribute and f.attr.value in r.methods and self.qualified(f) is None:
            gpu, rule = r.methods[f.attr.value]
            self.hits.append((rule, node))
            return ("Call", ("A", self(f.value), gpu), self.value(node.args))
        return ("Call", self(f), self.value(node.args))

    def subscript(self, node):
        v = node.value
        if type(v) is cst.Call:
            q = self.callee(v)
            if q is not None and q in rules().fa_npu and len(node.slice) == 1:
                return self(v)
        return self.generic(node)

    def string(self, node):
        try:
            s = node.evaluated_value
        except Exception:
            return self.generic(node)
        return ("S", self.mask_string(s, node))

    def mask_string(self, s, node, whole: bool = True):
        if not isinstance(s, str):
            return s
        r = rules()
        if whole and s in r.whole:
            gpu, rule = r.whole[s]
            self.hits.append((rule, node))
            return gpu
        for npu, gpu, rule in r.substr:
            if npu in s:
                s = s.replace(npu, gpu)
                self.hits.append((rule, node))
        return s

    def fstring_text(self, node):
        return ("FT", self.mask_string(node.value, node, whole=False))

    def number(self, node):
        try:
            return ("NUM", ast.literal_eval(node.value.replace("_", "")))
        except Exception:
            return ("NUM", node.value)

    def concat(self, node):
        try:
            s = node.evaluated_value
        except Exception:
            s = None
        if s is None:
            return self.generic(node)
        return ("S", self.mask_string(s, node))


_HANDLERS = {
    cst.Name: Norm.name,
    cst.Attribute: Norm.attribute,
    cst.Call: Norm.call,
    cst.Subscript: Norm.subscript,
    cst.SimpleString: Norm.string,
    cst.ConcatenatedString: Norm.concat,
    cst.FormattedStringText: Norm.fstring_text,
    cst.Integer: Norm.number,
    cst.Float: Norm.number,
    cst.Imaginary: Norm.number,
}


def match_name(qn: str | None, patterns) -> bool:
    if not qn:
        return False
    for pat in patterns:
        if pat.startswith("*.") and "*" not in pat[2:] and "?" not in pat[2:]:
            if qn == pat[2:] or qn.endswith(pat[1:]):
                return True
        elif fnmatch.fnmatchcase(qn, pat):
            return True
    return False


@derived
def library_roots(rs: RuleSet) -> frozenset:
    """Top-level modules whose calls the rules know (a fact call, a call signature, a sink or an
    inert call of rules/relevance.yaml names one of their functions), and the standard library:
    a call of theirs is read by the rules or sets no training setting, never a project's builder."""
    raw = rules(rs).raw
    names = [n for e in raw.get("fact_calls", []) for n in e["match"]]
    names += list(rs.section("call_signatures", {}) or {})
    rel = rs.section("numerics_relevance", {}) or {}
    for group in ("sinks", "inert"):
        names += [n for e in (rel.get(group) or {}).values() for n in (e.get("calls") or [])]
    roots = {n.split(".", 1)[0] for n in names if not n.startswith(("*", "[", "?"))}
    return frozenset(r for r in roots if r.isidentifier()) | frozenset(sys.stdlib_module_names)
