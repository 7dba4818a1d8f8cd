"""Every bound lives in scriptdiff/budget.py (issue 38): no other module of the package
compares a size, a depth or a count with a number of its own, or names one.

The rule, checked on the syntax tree of every module of the package but budget.py:

- A *bound literal* is an integer constant expression (literals joined by arithmetic) whose
  value is more than 100, or that is spelled with `<<`, `*` or `**` (a size in units:
  `1 << 20`, `64 * 1024`, `10 ** 6`). A literal written in hexadecimal (`0xdc80`, a code
  point or a bit mask) is not one.
- A *measure* is a `len(...)` call, or a name or attribute whose name says a size, a depth
  or a count (it contains size, depth, count, length, bytes, chars, lines, nodes, level,
  records, entries, items, pieces or steps).
- A *depth* is a name or attribute whose name contains "depth".

A module fails the test when it holds

1. a module-level constant bound to a bound literal, or a module-level constant named
   DEPTH, *_DEPTH, *TIMEOUT* or *_WAIT bound to any number (depths are small, deadlines are
   seconds);
2. an ordering comparison (<, <=, >, >=) of a measure with a bound literal;
3. an ordering comparison of a depth with an integer literal other than 0, 1 and 2;
4. a bound literal as a slice bound, as an argument of min() or max(), or as the size given
   to a read (read, read1, readline, readlines, recv, head, read_head, read_text);
5. a bound literal given as a keyword that names a bound (limit, max_bytes, block_size,
   chunk, chunk_size, maxsize), a number given as a deadline (a keyword with "timeout" in
   its name, or the argument of .join() or .wait());
6. a bound literal as the default value of a parameter whose name says it bounds (it
   contains limit, max, cap, chunk, size, bytes, depth or timeout: `limit: int = 1 << 20`;
   an option's default, `window: int = 256`, is the user's to change and stays with it).

Out of its reach on purpose: 0, 1, 2, indexes and exit codes; numbers up to 100 (the width
of a message or a terminal, the five names a message lists, an 8-byte header); equality
tests (a format's exact lengths: 64 hex digits of a SHA-256); a range with literals at both
ends (`48 <= b <= 57`, the ASCII digits); a number compared with something that is not a
measure (`n < 1000` steps a size's unit in a summary; `abs(v) < 2 ** 53` is the largest
integer a float holds exactly). ALLOWED names the few constants the rule would take for
bounds and are not, each with its reason.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import scriptdiff.budget as budget

PKG = Path(__file__).resolve().parent.parent / "scriptdiff"
HOME = PKG / "budget.py"

MEASURE = re.compile(r"size|depth|count|length|bytes|chars|lines|nodes|level|records|entries|items|pieces|steps",
                     re.I)
SMALL_NAME = re.compile(r"^_?(DEPTH|\w+_DEPTH|\w*TIMEOUT\w*|\w+_WAIT)$")
READS = {"read", "read1", "readline", "readlines", "recv", "head", "read_head", "read_text"}
BOUND_PARAMETER = re.compile(r"limit|max|cap|chunk|size|bytes|depth|timeout", re.I)
BOUND_KEYWORDS = {"limit", "max_bytes", "block_size", "chunk", "chunk_size", "maxsize"}
ORDER = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)

# (module under scriptdiff/, constant) -> why it is not a bound
ALLOWED = {
    ("lang/shell/record.py", "LINE_BASE"): "a numbering: the k-th sourced file's lines start at k * 2**32",
    ("curves/series.py", "EVAL_BIT"): "a flag bit of a line code, not a size",
    ("commands/runmemo.py", "RACY_NS"): "a clock's granularity (a file changed this close to the memo is not "
                                        "trusted), not a cap",
    ("curves/readers.py", "PROGRESS_EVERY"): "how often progress is drawn, not how much is read",
    ("checks/wholehash.py", "BIG_FILE"): "a threshold that adds blake3's threads for a big file; everything is read",
    ("checks/safetensors_io.py", "SMALL_TENSOR"): "a threshold that hashes a small tensor in one slice; "
                                                  "everything is read",
    ("lang/python/focus.py", "MIN_BYTES"): "a threshold below which a pair is read whole instead of cut "
                                           "down to its differences, not a cap",
}


def _const(node) -> bool:
    if isinstance(node, ast.Constant):
        return type(node.value) in (int, float)
    if isinstance(node, ast.BinOp):
        return _const(node.left) and _const(node.right)
    if isinstance(node, ast.UnaryOp):
        return _const(node.operand)
    return False


def _value(node):
    return eval(compile(ast.Expression(node), "<literal>", "eval"))  # literals only: _const holds


def _hex(node, source: str) -> bool:
    return isinstance(node, ast.Constant) and (ast.get_source_segment(source, node) or "").lower().startswith("0x")


def _bound(node, source: str) -> bool:
    """An integer constant expression over 100, or spelled in units (<<, *, **)."""
    if not _const(node) or _hex(node, source):
        return False
    value = _value(node)
    if not isinstance(value, int) or isinstance(value, bool):
        return False
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.LShift, ast.Mult, ast.Pow)):
        return True
    return abs(value) > 100


def _name(node) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _measure(node) -> bool:
    if isinstance(node, ast.Call) and _name(node.func) == "len":
        return True
    return bool(MEASURE.search(_name(node)))


def _small_int(node) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def bounds_in(path: Path, root: Path = PKG) -> list[str]:
    """Each bound the module holds outside budget.py, as `path:line: what`, in line order."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    rel = path.relative_to(root).as_posix()
    out: list[tuple[int, str]] = []

    def hit(node, what: str) -> None:
        out.append((node.lineno, f"{rel}:{node.lineno}: {what}"))

    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and _const(node.value):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                name = _name(target)
                if not isinstance(target, ast.Name) or not name.lstrip("_").isupper() or (rel, name) in ALLOWED:
                    continue
                if _bound(node.value, source) or SMALL_NAME.match(name):
                    hit(node, f"constant {name} = {ast.unparse(node.value)}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if len(sides) == 3 and _const(sides[0]) and _const(sides[2]):
                continue  # a range, `lo <= x <= hi`
            for op, a, b in zip(node.ops, sides, sides[1:]):
                if not isinstance(op, ORDER):
                    continue
                for lit, other in ((a, b), (b, a)):
                    small = _small_int(lit)
                    if (_bound(lit, source) and _measure(other)) or \
                            ("depth" in _name(other).lower() and small is not None and small > 2):
                        hit(node, f"compares {ast.unparse(other)} with {ast.unparse(lit)}")
        elif isinstance(node, ast.Slice):
            for part in (node.lower, node.upper, node.step):
                if part is not None and _bound(part, source):
                    hit(node, f"slices at {ast.unparse(part)}")
        elif isinstance(node, ast.Call):
            called = _name(node.func)
            if called in READS | {"min", "max"}:
                for arg in node.args:
                    if _bound(arg, source):
                        hit(node, f"{called}({ast.unparse(arg)})")
            if called in ("join", "wait") and isinstance(node.func, ast.Attribute):
                for arg in node.args:
                    if _const(arg):
                        hit(node, f"waits {ast.unparse(arg)} s")
            for kw in node.keywords:
                if kw.arg and ((kw.arg in BOUND_KEYWORDS and _bound(kw.value, source))
                               or ("timeout" in kw.arg and _const(kw.value))):
                    hit(node, f"{kw.arg}={ast.unparse(kw.value)}")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = node.args
            positional = [*args.posonlyargs, *args.args]
            pairs = [*zip(positional[len(positional) - len(args.defaults):], args.defaults),
                     *((a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None)]
            for arg, default in pairs:
                if BOUND_PARAMETER.search(arg.arg) and _bound(default, source):
                    hit(default, f"{arg.arg} defaults to {ast.unparse(default)}")
    return [what for _, what in sorted(out)]


def test_every_bound_is_in_budget():
    found = [b for p in sorted(PKG.rglob("*.py")) if p != HOME for b in bounds_in(p)]
    assert found == []


def test_the_allowed_constants_exist_and_are_not_in_budget():
    for (rel, name), why in ALLOWED.items():
        tree = ast.parse((PKG / rel).read_text(encoding="utf-8"))
        assigned = {_name(t) for n in tree.body if isinstance(n, ast.Assign) for t in n.targets}
        assert name in assigned, (rel, name)
        assert not hasattr(budget, name) and why


def test_the_rule_finds_each_shape(tmp_path):
    """The rule on a module written for it: each shape it names is found, the shapes it
    leaves alone are not."""
    mod = tmp_path / "scriptdiff" / "probe.py"
    mod.parent.mkdir()
    mod.write_text(
        "MAX_THINGS = 5000\n"                     # 1: a constant over 100
        "CHUNK = 1 << 16\n"                       # 1: spelled in units
        "DEPTH = 8\n"                             # 1: a depth, however small
        "WRITE_WAIT = 30.0\n"                     # 1: a deadline
        "SCHEMA = 1\n"
        "WIDTH = 80\n"
        "MASK = 0xA282EAD8\n"
        "def f(data, fh, names, depth, n, c, p, text, limit=64 * 1024, window=256):\n"
        "    if len(data) > 4096: pass\n"         # 2
        "    if st_size >= 256: pass\n"           # 2
        "    if depth > 8: pass\n"                # 3
        "    head = data[:4096]\n"                # 4
        "    m = min(n, 1 << 20)\n"               # 4
        "    fh.read(8192)\n"                     # 4
        "    g(fh, limit=4096)\n"                 # 5
        "    run(cmd, timeout=5)\n"               # 5
        "    p.join(5)\n"                         # 5
        "    if len(names) > 5: pass\n"
        "    if len(text) == 64: pass\n"
        "    if 48 <= c <= 57: pass\n"
        "    if n < 1000: pass\n"
        "    if abs(n) < 2 ** 53: pass\n"
        "    if c < 0x100: pass\n"
        "    if depth > 1: pass\n"
        "    line = text[:77]\n"
        "    return names[0], data[-1], fh.read(4)\n",
        encoding="utf-8")
    assert bounds_in(mod, mod.parent) == [
        "probe.py:1: constant MAX_THINGS = 5000",
        "probe.py:2: constant CHUNK = 1 << 16",
        "probe.py:3: constant DEPTH = 8",
        "probe.py:4: constant WRITE_WAIT = 30.0",
        "probe.py:8: limit defaults to 64 * 1024",
        "probe.py:9: compares len(data) with 4096",
        "probe.py:10: compares st_size with 256",
        "probe.py:11: compares depth with 8",
        "probe.py:12: slices at 4096",
        "probe.py:13: min(1 << 20)",
        "probe.py:14: read(8192)",
        "probe.py:15: limit=4096",
        "probe.py:16: timeout=5",
        "probe.py:17: waits 5 s",
    ]


def test_docs_bounds_names_every_bound():
    """docs/bounds.md lists the bounds: every number budget.py holds is named there."""
    doc = (PKG.parent / "docs" / "bounds.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", doc))
    numbers = {n for n, v in vars(budget).items()
               if n.isupper() and isinstance(v, (int, float)) and not isinstance(v, bool)}
    assert sorted(numbers - named) == []
