"""Shapes the structural parser cannot take, found before libcst sees a file.

libcst's native parser recurses once per nesting level, and it nests what CPython keeps
flat: `a and b and c` is one `BoolOp` in CPython's tree but a chain of binary
`BooleanOperation`s in libcst's, and so are the strings of an implicit concatenation. On
the main thread's 8 MB stack the native parser overflows (a segmentation fault: no
exception, no output) on an `and`/`or` chain of about 7,000 terms, a `+` chain of about
7,000, `not not ...` 8,000 deep, an attribute chain of about 6,000 or 1,300 nested
parentheses. The Python code that walks the tree afterwards (libcst's code generation,
our positions, masks and facts) recurses too and stops far earlier, with a RecursionError,
at a few hundred levels.

So, in `parse.parse`:

1. CPython's parser runs first (`ast.parse`): it refuses deep nesting itself (200
   parentheses, its AST construction depth) with an error, never a crash;
2. `measure` counts CPython's tree against a node budget (budget.PARSE_NODES_PER_BYTE of --max-bytes),
   then walks it (iteratively) and computes the depth libcst's tree will have, weighted by
   what each level costs (WEIGHTS), with the terms of every boolean chain and implicit
   string concatenation on the way. Beyond `budget.PARSE_DEPTH` the file is compared as text with a
   one-line reason (`expression chain of 8,000 terms (line 1) is beyond the structural
   parser's limit (200); compared as text`);
3. libcst's parser then runs on a thread with a 256 MB stack (`on_big_stack`): 32 times the
   main thread's, a margin against a shape this measurement does not anticipate.

The limit was found by bisecting each shape in a subprocess (docs/python.md lists them):
the whole pipeline handles a weighted depth of about 245 before Python's recursion limit,
and the native parser crashes above 1,200 levels on 8 MB; budget.PARSE_DEPTH sits below both.
"""
from __future__ import annotations

import ast
import io
import os
import threading
import tokenize

from ... import budget

_STRINGS = {tokenize.STRING}
if hasattr(tokenize, "FSTRING_START"):  # Python 3.12: an f-string is several tokens
    _STRINGS.add(tokenize.FSTRING_START)


def _concat_terms(node, lines: list[str]) -> int:
    """How many string literals an implicit concatenation is made of (1 for a plain string)."""
    lo, hi = node.lineno, node.end_lineno or node.lineno
    if lo == hi:
        span = (node.end_col_offset or 0) - node.col_offset
    else:
        span = sum(len(lines[i - 1]) for i in range(lo, hi + 1) if 0 < i <= len(lines))
    if span < _MIN_SPAN:  # each literal takes at least two characters ('' or "")
        return 1
    seg = "\n".join(lines[lo - 1:hi])
    count = 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO(seg).readline):
            if tok.type in _STRINGS:
                count += 1
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return max(count, 1)


def _binop_terms(node) -> int:
    """The operands of a chain of binary operators (`a + b * c - d`: 4)."""
    terms = 0
    todo = [node]
    while todo:
        n = todo.pop()
        if type(n) is ast.BinOp:
            todo.append(n.left)
            todo.append(n.right)
        else:
            terms += 1
    return terms


def count_nodes(tree: ast.AST) -> int:
    """The nodes of CPython's tree (about 60 ms for 800 KB of code)."""
    n = 0
    stack = [tree]
    pop, push = stack.pop, stack.append
    node_type = ast.AST
    while stack:
        node = pop()
        n += 1
        for name in node._fields:
            v = getattr(node, name, None)
            if v.__class__ is list:
                for x in v:
                    if isinstance(x, node_type):
                        push(x)
            elif isinstance(v, node_type):
                push(v)
    return n


# libcst's tree costs 1.7 to 2.9 KB and 17 to 25 us per node of CPython's tree (measured on
# typical training code, 190 to 215 nodes per KB, and on the densest, a literal list of
# numbers, 500 per KB, and short assignments, 885 per KB): bytes alone do not bound it. A
# file may hold budget.PARSE_NODES_PER_BYTE nodes per byte of --max-bytes.
def measure(tree: ast.AST, text: str, max_bytes: int | None = None) -> str | None:
    """Why libcst must not be given this file (a one-line reason), or None when it may."""
    if max_bytes:
        allowed = int(max_bytes * budget.PARSE_NODES_PER_BYTE)
        nodes = count_nodes(tree)
        if nodes > allowed:
            return (f"{nodes:,} syntax nodes are beyond the structural parser's budget ({allowed:,}, "
                    f"{budget.PARSE_NODES_PER_BYTE} per byte of --max-bytes {max_bytes:,})")
    d, chain, what, line = depth_of(tree, text, budget.PARSE_DEPTH)
    if d <= budget.PARSE_DEPTH:
        return None
    if what and chain * (STRING_TERM if what.startswith("string") else 1) > budget.PARSE_DEPTH / 2:
        return f"{what} of {chain:,} terms (line {line}) is beyond the structural parser's limit ({budget.PARSE_DEPTH})"
    return f"nesting (line {line}) is beyond the structural parser's limit ({budget.PARSE_DEPTH})"


# What one level of CPython's tree costs in libcst's tree and the passes over it, relative to
# a boolean term (measured: the pipeline gave up at about 245 units of every shape, e.g.
# 243 `and` terms, 98 nested calls, 97 nested `if` blocks, 193 subscripts, 489 strings).
_HEAVY = 2.5  # a node that libcst wraps (Call -> Arg, Dict -> DictElement, If -> IndentedBlock)
WEIGHTS = {
    ast.Call: _HEAVY, ast.Dict: _HEAVY, ast.Set: _HEAVY, ast.List: _HEAVY, ast.Tuple: _HEAVY,
    ast.DictComp: _HEAVY, ast.SetComp: _HEAVY, ast.ListComp: _HEAVY, ast.GeneratorExp: _HEAVY,
    ast.Subscript: 1.25,
    ast.FunctionDef: _HEAVY, ast.AsyncFunctionDef: _HEAVY, ast.ClassDef: _HEAVY, ast.If: _HEAVY,
    ast.For: _HEAVY, ast.AsyncFor: _HEAVY, ast.While: _HEAVY, ast.With: _HEAVY, ast.AsyncWith: _HEAVY,
    ast.Try: _HEAVY, ast.Match: _HEAVY, ast.ExceptHandler: _HEAVY, ast.match_case: _HEAVY,
}
if hasattr(ast, "TryStar"):
    WEIGHTS[ast.TryStar] = _HEAVY
STRING_TERM = 0.5  # one literal of an implicit concatenation
_MIN_SPAN = 64  # a string shorter than this cannot be a concatenation that matters


# No construct adds more than this to the weighted depth per byte of source it spans (the
# densest: `[[[...` 2.5 per byte; `f(x=f(x=...` 3.5 per 4 bytes; `else:` + `if a:` 3.5 per
# 12): a node shorter than (stop - depth) / PER_BYTE cannot reach `stop`, and is skipped.
PER_BYTE = 3.0


def _line_starts(text: str) -> list[int]:
    """The UTF-8 offset of each line's start, lines as CPython counts them (its column
    offsets are UTF-8 offsets too)."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    data = text.encode("utf-8", "surrogatepass")
    starts = [0]
    pos = data.find(b"\n")
    while pos != -1:
        starts.append(pos + 1)
        pos = data.find(b"\n", pos + 1)
    return starts


def depth_of(tree: ast.AST, text: str, stop: float | None = None) -> tuple[float, int, str, int]:
    """(the weighted depth libcst's tree will have, the longest chain of terms on the way
    there, what kind of chain, the line of the deepest point), walking CPython's tree without
    recursion; the walk ends at the first point deeper than `stop`."""
    lines = None
    starts = _line_starts(text) if stop is not None else None
    stack = [(tree, 0.0, None)]
    worst = (0.0, 0, "", 1)
    while stack:
        node, depth, parent = stack.pop()
        if starts is not None and hasattr(node, "end_col_offset") and node.end_lineno is not None:
            a, b = node.lineno - 1, node.end_lineno - 1
            if 0 <= a <= b < len(starts) and \
                    depth + PER_BYTE * (starts[b] + node.end_col_offset - starts[a] - node.col_offset) <= stop:
                continue  # too short to hold anything deeper than `stop`: not walked
        t = type(node)
        chain = 0
        what = ""
        if t is ast.BoolOp:
            chain, what = len(node.values), "expression chain"
            w = float(chain)
        elif t is ast.BinOp:
            if type(parent) is not ast.BinOp:
                chain, what = _binop_terms(node), "expression chain"
            w = 1.0
        elif (t is ast.Constant and isinstance(node.value, (str, bytes))) or t is ast.JoinedStr:
            if lines is None:
                lines = text.splitlines()
            chain = _concat_terms(node, lines)
            what = "string concatenation" if chain > 1 else ""
            w = 1.0 + STRING_TERM * (chain - 1)
        elif t is ast.If and type(parent) is ast.If and parent.orelse and parent.orelse[0] is node \
                and node.col_offset == parent.col_offset:
            w = 1.0  # `elif` (at the `if`'s column, unlike `else:` + `if`): libcst nests it without a block
        elif t is ast.If and type(parent) is ast.If and node in parent.orelse:
            w = _HEAVY + 1.0  # `else:` and its block, then the `if`
        else:
            w = WEIGHTS.get(t, 1.0)
        d = depth + w
        if d > worst[0] or chain > worst[1]:
            worst = (max(d, worst[0]), max(chain, worst[1]), what if chain > worst[1] else worst[2],
                     getattr(node, "lineno", worst[3]))
            if stop is not None and d > stop:
                break
        if t is ast.JoinedStr:
            continue  # its parts are the concatenation just counted
        for child in ast.iter_child_nodes(node):
            stack.append((child, d, node))
    return worst


class _BigStack:
    """One long-lived thread with a budget.PARSE_STACK stack that runs what it is handed (a thread
    per parse cost about a millisecond: more than parsing a small focused text)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.todo: list = []
        self.ready = threading.Condition(self.lock)
        old = threading.stack_size(budget.PARSE_STACK)
        try:
            self.thread = threading.Thread(target=self._loop, name="scriptdiff-parse", daemon=True)
            self.thread.start()
        finally:
            threading.stack_size(old)

    def _loop(self) -> None:
        while True:
            with self.ready:
                while not self.todo:
                    self.ready.wait()
                fn, args, box, done = self.todo.pop(0)
            try:
                box["value"] = fn(*args)
            except BaseException as e:  # handed to the caller as is
                box["error"] = e
            done.set()

    def run(self, fn, args):
        box: dict = {}
        done = threading.Event()
        with self.ready:
            self.todo.append((fn, args, box, done))
            self.ready.notify()
        done.wait()
        if "error" in box:
            raise box["error"]
        return box["value"]


_BIG: _BigStack | None = None
_BIG_LOCK = threading.Lock()


def _forget_thread() -> None:  # a forked child has no copy of the thread: it makes its own
    global _BIG
    _BIG = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_thread)


def on_big_stack(fn, *args):
    """fn(*args) on a thread with a budget.PARSE_STACK stack; exceptions are re-raised here. Where
    such a thread cannot be had (limits, platform), fn runs on this thread: `measure` alone
    then keeps libcst away from the shapes known to crash it."""
    global _BIG
    if threading.current_thread().name == "scriptdiff-parse":
        return fn(*args)  # already on the big stack
    with _BIG_LOCK:
        if _BIG is None:
            try:
                _BIG = _BigStack()
            except (ValueError, RuntimeError):  # no thread of that size to be had
                return fn(*args)
    return _BIG.run(fn, args)
