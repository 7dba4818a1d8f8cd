"""Python config files: module-level assignments of literals and `dict(...)` calls, the style
of mmengine/mmcv-based projects (`optimizer = dict(type="AdamW", lr=1e-4)`, `max_epochs = 12`,
`train_cfg = dict(max_epochs=max_epochs)`), and the attribute assignments of a YACS config
(`_C.SOLVER.BASE_LR = 1e-4`: the setting SOLVER.BASE_LR, the config object's name dropped).

The file is parsed with the standard library's `ast` (never run or imported). Each module-level
assignment becomes a tree of values: literals, `dict(...)` keyword calls, `{...}` dicts,
lists and tuples, names bound earlier in the file, unary minus and arithmetic on numbers. Its
leaves are then config facts exactly as a YAML file's would be (lang/config.py): the dialects
of this kind (rules/pyconfig.yaml: mmengine) first, then the vocabulary, the alias table and
neutral sections. A value that is not a literal (a call of another function, an attribute)
is kept as its source text. `_base_` inheritance is not merged: the input says so (unread), so
a pair never passes silently with its bases uncompared.

Names share their values (`b = dict(x=a, y=a)` holds `a` twice, not a copy), so a 1 KB file
can describe a tree of millions of leaves. Each bound value's size in leaves is measured
(once per shared subtree) against the budgets of scriptdiff/budget.py; a value over them is
too large to evaluate: left out, said in the input's account, the rest compared.

`looks_like_config(head, basename)` is the kind's sniff (rules/kinds.yaml `pyconfig`): a
module made only of imports, assignments and `with read_base():` blocks, at least one of
them a `dict(...)` or `{...}` value, and no function or class.
"""
from __future__ import annotations

import ast
import operator
from typing import Any

from .. import budget
from ..budget import TOO_LARGE, TooLarge
from ..model import Extract, InputError
from ..ruleset.registry import dialects_for
from ..ruleset.vocabulary import detect_dialects
from .config import dialect_defaults, facts_for, interpolate, leaves, too_large_notes

KIND = "pyconfig"
ALLOWED = (ast.Assign, ast.AnnAssign, ast.Import, ast.ImportFrom, ast.Expr, ast.With, ast.Pass)
OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
       ast.Pow: operator.pow}


class _Opaque(str):
    """A value that is not a literal: kept as its source text."""


def _parse_head(head: str) -> ast.Module | None:
    """The head of a file, parsed; a statement cut at the end is dropped (up to 20 tries)."""
    lines = head.splitlines()
    for _ in range(20):
        try:
            return ast.parse("\n".join(lines))
        except SyntaxError:
            top = [i for i, ln in enumerate(lines) if i > 0 and ln[:1] not in ("", " ", "\t", ")", "]", "}")]
            if not top:
                return None
            lines = lines[:top[-1]]
        except (ValueError, RecursionError, MemoryError):
            return None
    return None


def looks_like_config(head: str, basename: str) -> bool:
    if "dict(" not in head and "{" not in head:
        return False  # no dict value at all: not worth parsing (most .py files stop here or at a def)
    for marker in ("\ndef ", "\nclass ", "\nasync def ", "\nif __name__"):
        if marker in "\n" + head:
            return False  # a module-level function or class: code, whatever else it holds
    tree = _parse_head(head)
    if tree is None or not tree.body:
        return False
    configish = False
    for stmt in tree.body:
        if not isinstance(stmt, ALLOWED):
            return False
        if isinstance(stmt, ast.Expr) and not isinstance(stmt.value, ast.Constant):
            return False  # a call at module level: a script, not a config
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            v = stmt.value
            configish |= isinstance(v, ast.Dict) or (isinstance(v, ast.Call) and isinstance(v.func, ast.Name)
                                                      and v.func.id == "dict")
    return configish


def _parse(src) -> tuple[ast.Module | None, str | None]:
    """The module, or None and why it cannot be read."""
    if not src.text.strip():
        return None, "empty file; nothing compared"
    try:
        return ast.parse(src.text), None
    except SyntaxError as e:
        where = f"line {e.lineno}: " if e.lineno else ""
        return None, f"not valid Python: {where}{e.msg}; not compared"
    except (ValueError, RecursionError, MemoryError) as e:
        return None, f"cannot be parsed ({type(e).__name__}); not compared"


def extract(src, ctx) -> Extract:
    ex = Extract()
    tree, problem = _parse(src)
    if tree is None:
        ex.errors.append(InputError(src.name, problem or "not compared", fatal=True))
        return ex
    text = src.text
    env: dict[str, Any] = {}
    lines: dict[tuple, int] = {}
    reader = _Reader(env, lines)
    for stmt in _statements(tree.body):
        reader.statement(stmt)
    data = {k: v for k, v in env.items() if not k.startswith("__") and k != "_base_"}
    if "_base_" in env:
        bases = env["_base_"] if isinstance(env["_base_"], list) else [env["_base_"]]
        ex.unread.append(f"line {lines.get(('_base_',), 1)}: inherits _base_ config(s) "
                         f"{', '.join(str(b) for b in bases)}: their settings are not merged or compared")
    big = [((name,), why) for name, why in reader.too_large]
    data = interpolate(data, big)
    too_large_notes(ex, big, lines)
    dialects = detect_dialects(dialects_for(KIND), [".".join(str(p) for p in path) for path, _ in leaves(data)])
    ex.frameworks |= dialect_defaults(dialects, None)  # no framework's defaults are known for a plain one
    src_lines = text.splitlines()
    for path, value in leaves(data):
        if not path or value is TOO_LARGE:
            continue
        line = lines.get(path) or lines.get(path[:-1])
        if isinstance(value, _Opaque):
            value = str(value)
        ex.facts.extend(facts_for(path, value, "hf", src, line, src_lines, ex, ctx.root, dialects))
    ex.understood = True
    return ex


def _statements(body: list) -> list:
    """Module-level statements, the bodies of `with read_base():` blocks flattened in."""
    out = []
    for stmt in body:
        if isinstance(stmt, ast.With):
            out.extend(_statements(stmt.body))
        else:
            out.append(stmt)
    return out


class _Reader:
    def __init__(self, env: dict, lines: dict):
        self.env = env
        self.lines = lines
        self.settings = 0  # leaves of the values bound so far
        self.sizes: dict[int, tuple[Any, tuple]] = {}  # id(container) -> (it, leaves under it): kept alive
        self.too_large: list[tuple[str, TooLarge]] = []  # names bound to a value over budget

    def statement(self, stmt) -> None:
        if isinstance(stmt, ast.Assign):
            value = self.value(stmt.value, ())
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    self.bind(target.id, value, stmt.value)
                elif isinstance(target, ast.Attribute):
                    self.attribute(target, value, stmt.value)
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None and isinstance(stmt.target, ast.Name):
            self.bind(stmt.target.id, self.value(stmt.value, ()), stmt.value)

    def attribute(self, target: ast.Attribute, value: Any, node) -> None:
        """`_C.SOLVER.BASE_LR = 1e-4` (a YACS config written as code): the setting SOLVER.BASE_LR
        of the config object `_C`, whose own name is no part of the path."""
        parts = []
        while isinstance(target, ast.Attribute):
            parts.insert(0, target.attr)
            target = target.value
        if not isinstance(target, ast.Name) or not parts or isinstance(value, (dict, list)):
            return
        tree = self.env
        for part in parts[:-1]:
            if not isinstance(tree.get(part), dict):
                tree[part] = {}
            tree = tree[part]
        tree[parts[-1]] = value
        self.settings += 1
        self._lines(tuple(parts), node)

    def bind(self, name: str, value: Any, node) -> None:
        try:
            n = self.size(value)[1]  # a shared subtree counts each time it occurs
            if n <= 4 * sum(1 for _ in ast.walk(node)) + 16:
                pass  # no larger than it is written: the file's text bounds it, not the budget
            elif self.settings + n > budget.FILE_SETTINGS:
                raise TooLarge(f"the file's values would hold more than {budget.FILE_SETTINGS:,} settings, "
                               f"each counted once per level of nesting")
            else:
                self.settings += n
        except TooLarge as e:
            value = TOO_LARGE
            self.too_large.append((name, e))
        self.env[name] = value
        self._lines((name,), node)

    def size(self, value: Any) -> tuple[int, int]:
        """(leaves, their path parts) of a value as a tree (what leaves() enumerates, and what
        reading its leaves costs), each distinct container measured once; raises TooLarge past
        the per-value budget."""
        if not isinstance(value, (dict, list)):
            return 1, 1
        got = self.sizes.get(id(value))
        if got is not None and got[0] is value:
            return got[1]
        leaves = parts = 0
        for v in (value.values() if isinstance(value, dict) else value):
            a, b = self.size(v)
            leaves, parts = leaves + a, parts + a + b
        n = (max(1, leaves), max(1, parts))
        if n[1] > budget.FILE_SETTINGS:
            raise TooLarge(f"more than {budget.FILE_SETTINGS:,} settings, each counted once per level of nesting")
        self.sizes[id(value)] = (value, n)
        return n

    def _lines(self, path: tuple, node) -> None:
        self.lines[path] = node.lineno
        if isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg is not None:
                    self._lines(path + (kw.arg,), kw.value)
        elif isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values):
                if isinstance(k, ast.Constant) and isinstance(k.value, str):
                    self._lines(path + (k.value,), v)
        elif isinstance(node, (ast.List, ast.Tuple)):
            for i, v in enumerate(node.elts):
                self._lines(path + (i,), v)

    def value(self, node, path: tuple, depth: int = 0) -> Any:
        if depth > budget.CONFIG_VALUE_DEPTH:
            return _Opaque("...")
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args:
            return {kw.arg: self.value(kw.value, path + (kw.arg,), depth + 1)
                    for kw in node.keywords if kw.arg is not None}
        if isinstance(node, ast.Dict):
            return {k.value: self.value(v, path, depth + 1) for k, v in zip(node.keys, node.values)
                    if isinstance(k, ast.Constant) and isinstance(k.value, (str, int))}
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.value(e, path, depth + 1) for e in node.elts]
        if isinstance(node, ast.Name):
            return self.env.get(node.id, _Opaque(node.id))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = self.value(node.operand, path, depth + 1)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.BinOp) and type(node.op) in OPS:
            a, b = self.value(node.left, path, depth + 1), self.value(node.right, path, depth + 1)
            numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b))
            if numbers and not (isinstance(node.op, ast.Pow) and abs(b) > budget.CONFIG_POWER_EXPONENT) \
                    and abs(a) < 1e300 and abs(b) < 1e300:
                try:
                    return OPS[type(node.op)](a, b)
                except (ZeroDivisionError, OverflowError):
                    pass
        return _Opaque(ast.unparse(node)[:budget.CONFIG_OPAQUE_CHARS])
