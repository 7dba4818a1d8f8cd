"""`scriptdiff fix` in Python files: through libcst, so formatting and comments stay as written.

The reader recorded where each value is written (lang/python/facts.py, `meta["origin"]`): the
literal it was read from, followed through module constants, `args.x` option defaults, dict
entries and this device's branch of a conditional, at its libcst position. The editor parses
the NPU file with libcst, finds the node at that position (PositionProvider), checks it is the
literal read, and replaces it with the new value as libcst writes it; a keyword the NPU call
lacks is added to that call (`meta["call"]`) after the argument the GPU call has before it.
Each change is a span of the file's text and its new text, so every other byte is kept.
"""
from __future__ import annotations

import ast
from functools import lru_cache

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from ..model import ORIGIN_DEFAULT, Fact
from .base import (Edit, Refused, Request, line_starts, needs_spelling, number_text, offset, refuse_unspelled,
                   spelling)

KIND = "python"


class _Tree:
    """One file parsed: its module, each node's position, the text's line offsets."""

    def __init__(self, text: str):
        try:
            module = cst.parse_module(text)
        except Exception as e:  # libcst refuses it: nothing is edited
            raise Refused(f"libcst cannot parse it ({type(e).__name__}); edit it by hand", "file") from None
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        self.module = module
        self.pos = wrapper.resolve(PositionProvider)
        self.text = text
        self.starts = line_starts(text)
        self.at: dict[tuple[int, int], list] = {}
        for node, r in self.pos.items():
            self.at.setdefault((r.start.line, r.start.column), []).append(node)

    def find(self, where, typename: str | None = None):
        if not where:
            return None
        nodes = self.at.get((where[0], where[1]), [])
        for n in nodes:
            if typename is None or type(n).__name__ == typename:
                return n
        return None

    def span(self, node) -> tuple[int, int]:
        r = self.pos[node]
        return (offset(self.starts, self.text, r.start.line, r.start.column),
                offset(self.starts, self.text, r.end.line, r.end.column))

    def code(self, node) -> str:
        a, b = self.span(node)
        return self.text[a:b]


@lru_cache(maxsize=8)
def _tree(text: str) -> _Tree:
    return _Tree(text)


def _squash(s: str) -> str:
    return "".join(ch for ch in s if ch not in " \t\r\n()\\")


def _origin(f: Fact) -> dict:
    o = f.meta.get("origin")
    if not isinstance(o, dict):
        raise Refused("where the value is written was not recorded; edit it by hand", "no place")
    if "environment" in o:
        raise Refused(f"read from the environment (${o['environment']}); set it where the NPU run starts",
                      "environment")
    if "ambiguous" in o:
        raise Refused(f"written at two places ({o['ambiguous']}); edit the one the NPU run uses by hand", "ambiguous")
    if "computed" in o:
        raise Refused(f"computed, not written as a value ({o['computed']}); edit it by hand", "computed")
    return o


def _literal_text(node) -> object:
    """The Python value a literal node writes, or a marker when it is a name (torch.bfloat16)."""
    try:
        return ast.literal_eval(cst.Module([cst.SimpleStatementLine([cst.Expr(node)])]).code.strip())
    except Exception:
        return _NAME


_NAME = object()


def _string(node, value: str) -> str:
    """`value` as a string literal in the quotes `node` uses (a prefix-free single-line string)."""
    quote = '"'
    if type(node) is cst.SimpleString and not node.prefix and node.quote in ("'", '"'):
        quote = node.quote
    body = value.replace("\\", "\\\\").replace(quote, "\\" + quote).replace("\n", "\\n")
    return f"{quote}{body}{quote}"


def _written(req: Request, node, value) -> str:
    """The new value as Python code at `node` (None: a new keyword): the NPU spelling where
    rules/fix.yaml gives one, else the GPU's own literal for the same keyword, else the value
    written as Python."""
    entry = spelling(req.key, req.written, value, KIND)
    if entry is not None:
        npu = entry["npu"]
        if not entry.get("code"):
            return _string(node, npu) if isinstance(npu, str) else _python(npu)
        if node is None:
            return str(npu)
        if type(node) is cst.Attribute and "." in str(npu):  # th.bfloat16 under `import torch as th`
            return f"{_code(node.value)}.{str(npu).rsplit('.', 1)[1]}"
        raise Refused(f"written as `{_code(node)}` on NPU, not as a name like {npu}; edit it by hand")
    raw = _literal_text(node) if node is not None else None
    if node is not None and raw is not _NAME and needs_spelling(req.key, raw):
        raise refuse_unspelled(req.key, req.written, value)
    code = _gpu_code(req)
    if code is not None:
        expr = cst.parse_expression(code)
        if _literal_text(expr) is not _NAME:
            return code
        if node is not None and type(node) is cst.Attribute and type(expr) is cst.Attribute:
            return f"{_code(node.value)}.{expr.attr.value}"
    if isinstance(value, str) and node is not None and type(node) is cst.Attribute:
        raise Refused(f"the NPU side writes a name here and {value!r} is none; edit it by hand")
    text = _python(value, node)
    if text is None:
        raise Refused(f"{value!r} cannot be written as a Python literal; edit it by hand")
    return text


def _gpu_code(req: Request) -> str | None:
    """The GPU side's literal, when it is Python written under the same keyword as on NPU."""
    g = req.gpu
    o = g.meta.get("origin") if g is not None else None
    if not isinstance(o, dict) or "pos" not in o or not o.get("code") or "\n" in o["code"]:
        return None
    mine = (req.fact.meta.get("written_key") if req.fact is not None else None) or g.meta.get("written_key")
    if g.meta.get("written_key") != mine or not _parses(o["code"]):
        return None
    return o["code"]


def _code(node) -> str:
    return cst.Module([]).code_for_node(node)


def _python(value, node=None) -> str | None:
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, (int, float)):
        return number_text(value)
    if isinstance(value, str):
        return _string(node, value)
    if isinstance(value, (list, tuple)):
        items = [_python(v) for v in value]
        if any(i is None for i in items):
            return None
        if node is not None and type(node) is cst.List:
            return "[" + ", ".join(items) + "]"
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    return None


def _parses(code: str) -> bool:
    try:
        cst.parse_expression(code)
        return True
    except Exception:
        return False


def set_value(req: Request) -> list[Edit]:
    """The literal the NPU value was read from becomes the GPU value."""
    f = req.fact
    o = _origin(f)
    t = _tree(req.src.text)
    node = t.find(o.get("pos"), o.get("node"))
    if node is None or _squash(t.code(node)) != _squash(o.get("code") or ""):
        raise Refused("the value is not where it was read (the file changed?); run fix again", "file")
    new = _written(req, node, req.value)
    try:
        cst.parse_expression(new)
    except Exception:
        raise Refused(f"`{new}` is not a Python expression; edit it by hand") from None
    a, b = t.span(node)
    return [Edit(req.src.name, a, b, new)]


def remove(req: Request) -> list[Edit]:
    """A keyword argument the NPU call has and the GPU side has no value for: removed."""
    f = req.fact
    o = _origin(f)
    if o.get("via"):
        raise Refused(f"set through {', '.join(o['via'])}; remove it by hand")
    t = _tree(req.src.text)
    call = t.find(f.meta.get("call"), "Call")
    value = t.find(o.get("pos"), o.get("node"))
    if call is None or value is None:
        raise Refused("the call is not where it was read (the file changed?); run fix again", "file")
    args = list(call.args)
    i = next((k for k, a in enumerate(args) if a.value is value and a.keyword is not None), None)
    if i is None:
        raise Refused("a positional argument: remove it by hand", "no place")
    if i + 1 < len(args):  # up to the next argument: this one and its comma
        a, b = t.span(args[i])[0], t.span(args[i + 1])[0]
    elif i > 0:  # the last one: from the end of the one before (its comma goes)
        a, b = t.span(args[i - 1].value)[1], t.span(args[i].value)[1]
    else:
        a, b = t.span(args[i])[0], t.span(args[i].value)[1]
    return [Edit(req.src.name, a, b, "")]


def add(req: Request) -> list[Edit]:
    """A keyword the GPU call writes and the NPU call lacks: added to the NPU call, after the
    keyword the GPU call writes before it (else before the one after it, else at the end)."""
    g = req.gpu
    kw = g.meta.get("written_key")
    if not kw or not str(kw).isidentifier() or g.meta.get("callee") in (None, "argparse"):
        raise Refused("not a keyword argument of a call on GPU; add it by hand", "no place")
    t = _tree(req.src.text)
    call = t.find(_npu_call(req), "Call")
    if call is None:
        raise Refused(f"the NPU side has no call to add {kw}= to; add it by hand", "no place")
    if any(a.keyword is not None and a.keyword.value == kw for a in call.args):
        raise Refused(f"the NPU call already has {kw}= (set through **kwargs or twice?); edit it by hand")
    order = _gpu_keywords(req)
    names = [a.keyword.value if a.keyword is not None else None for a in call.args]
    at = len(call.args)
    if kw in order:
        before = [k for k in order[:order.index(kw)] if k in names]
        after = [k for k in order[order.index(kw) + 1:] if k in names]
        if before:
            at = names.index(before[-1]) + 1
        elif after:
            at = names.index(after[0])
    stars = [k for k, a in enumerate(call.args) if a.star == "**"]
    if stars and at > stars[0]:  # a keyword never follows **kwargs
        at = stars[0]
    value_code = _written(req, None, req.value)
    try:
        cst.parse_expression(value_code)
    except Exception:
        raise Refused(f"`{value_code}` is not a Python expression; add it by hand") from None
    args = call.args
    like = next((a for a in args if a.keyword is not None and isinstance(a.equal, cst.AssignEqual)), None)
    new = f"{kw}{_code(like.equal) if like is not None else '='}{value_code}"
    text = req.src.text
    seps = [_uncommented(text[t.span(a.value)[1]:t.span(b)[0]]) for a, b in zip(args, args[1:])]
    sep = next((x for x in seps if x.strip() == ","), seps[0] if seps else ", ")
    rank = (order.index(kw) if kw in order else len(order),)
    if not args:  # f(): between the parentheses
        pos = text.index("(", t.span(call.func)[1]) + 1
        return [Edit(req.src.name, pos, pos, new, rank)]
    if at > 0 and _commented(args[at - 1]):  # its comment stays with it: the new keyword goes below
        return _add_below(t, req, args, at, new, rank)
    if at < len(args):
        pos = t.span(args[at])[0]
        return [Edit(req.src.name, pos, pos, new + sep, rank)]
    pos = t.span(args[-1].value)[1]
    return [Edit(req.src.name, pos, pos, sep + new, rank)]


def _commented(arg: cst.Arg) -> bool:
    """A comment follows the argument, before the next one (or the closing parenthesis)."""
    comma = arg.comma if isinstance(arg.comma, cst.Comma) else None
    for ws in (comma.whitespace_before, comma.whitespace_after) if comma else (arg.whitespace_after_arg,):
        if isinstance(ws, cst.ParenthesizedWhitespace) and (
                ws.first_line.comment is not None or any(e.comment is not None for e in ws.empty_lines)):
            return True
    return False


def _uncommented(sep: str) -> str:
    """The text between two arguments (whitespace, the comma, comments: nothing else stands
    there) without its comments: the comma, and the next argument's line and indentation."""
    if "#" not in sep:
        return sep
    lines = sep.split("\n")
    return lines[0].split("#", 1)[0].rstrip() + ("\r\n" if lines[0].endswith("\r") else "\n") + lines[-1]


def _add_below(t: _Tree, req: Request, args, at: int, new: str, rank: tuple) -> list[Edit]:
    """The keyword `new` added after args[at - 1], which a comment follows (`lr=1e-4,  # lr`):
    on a line of its own below that argument's line, so the comment stays with the keyword it
    was written for, indented as the next argument (else as that argument)."""
    x = args[at - 1]
    end = t.span(x.value)[1]
    comma = x.comma if isinstance(x.comma, cst.Comma) else None
    tail = t.module.code_for_node(comma) if comma else t.module.code_for_node(x.whitespace_after_arg)
    # between the value and what follows there is only whitespace, the comma and comments (libcst's
    # nodes): the argument's line ends at the first line break, and a comma before the '#' is its own
    first = tail[:tail.find("\n") + 1]
    if not first or (comma is not None and "," not in first.split("#", 1)[0]):
        raise Refused(f"comments around the call's arguments leave no line of its own for {new}; add it by hand",
                      "no place")
    newline = "\r\n" if first.endswith("\r\n") else "\n"
    below = args[at] if at < len(args) else x
    home = t.text.rfind("\n", 0, t.span(below)[0]) + 1
    indent = t.text[home:t.span(below)[0]]
    if indent.strip():  # it shares its line with the call's start: that line's indentation and four spaces
        indent = indent[:len(indent) - len(indent.lstrip())] + "    "
    pos = end + len(first)
    if comma is None:  # it was the last argument, without a trailing comma: it gets one, the new one none
        return [Edit(req.src.name, end, end, ",", rank), Edit(req.src.name, pos, pos, indent + new + newline, rank)]
    return [Edit(req.src.name, pos, pos, indent + new + "," + newline, rank)]


def _npu_call(req: Request):
    """Where the NPU call is: the default fact's call, else the call where the NPU side writes
    most of the settings the GPU call writes beside this one."""
    f = req.fact
    if f is not None and f.origin == ORIGIN_DEFAULT and f.meta.get("call") and f.path == req.src.name:
        return f.meta["call"]
    gcall = req.gpu.meta.get("call")
    siblings = {x.key for x in req.gpu_facts if x.meta.get("call") == gcall and x.path == req.gpu.path
                and x.key != req.key}
    votes: dict[tuple, int] = {}
    for x in req.npu_facts:
        if x.path == req.src.name and x.key in siblings and x.meta.get("call"):
            votes[tuple(x.meta["call"])] = votes.get(tuple(x.meta["call"]), 0) + 1
    if not votes:
        return None
    best = max(votes.values())
    places = [c for c, v in votes.items() if v == best]
    if len(places) > 1:
        raise Refused("two NPU calls could take it; add it by hand", "ambiguous")
    return list(places[0])


def _gpu_keywords(req: Request) -> list[str]:
    """The keywords of the GPU call, in order."""
    if req.gpu_src is None:
        return []
    try:
        t = _tree(req.gpu_src.text)
    except Refused:
        return []
    call = t.find(req.gpu.meta.get("call"), "Call")
    if call is None:
        return []
    return [a.keyword.value for a in call.args if a.keyword is not None]


def parses(old: str, new: str) -> str | None:
    """Why the edited file is no longer Python, or None."""
    try:
        cst.parse_module(new)
        ast.parse(new)
    except SyntaxError as e:
        return f"not valid Python after the edit: line {e.lineno}: {e.msg}"
    except Exception as e:
        return f"not valid Python after the edit ({type(e).__name__})"
    return None
