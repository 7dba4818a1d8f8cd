"""Where each node of a parsed file starts and ends: the one place that uses libcst internals.

The structural diff needs, for every node, its line, its source text (as written) and the
calls of the file. libcst's public way to get positions (PositionProvider through a
MetadataWrapper) runs two extra code-generation passes; a subclass of libcst's private
`CodegenState` (`libcst._nodes.internal`, driven by the private `Module._codegen`) gets all
of it in one pass of about half a parse. That private API has no stability promise, so:

- it is used only here, by `LineState`, and pyproject.toml bounds libcst (`<2`);
- `record()` checks the pass's result (the tokens rebuild the file and the hooks fired);
  when the private API is missing, raises or changed shape, the same records are built
  from the public API instead (`PublicState`: slower, same results);
- if that fails too, `record()` raises `SpansError` and the caller compares the file as
  text, with an error entry that says why.

Both states offer: `lines` (id(node) -> line of its syntactic start), `syn_tok`, `start_tok`,
`end_tok` (id(node) -> offset of its syntactic start, of its start with leading blank lines
and comments, of its end), `slice(a, b)` (the source text between two offsets), `column(node)`
(the column of its syntactic start, as libcst's PositionProvider counts it) and `calls`
(every `Call` node in source order).
"""
from __future__ import annotations

from contextlib import nullcontext

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider, WhitespaceInclusivePositionProvider

try:  # libcst's private API (see above)
    from libcst._nodes.internal import CodegenState as _CodegenState
    PRIVATE_API = True
except ImportError:  # moved or removed in this libcst: every file takes the public path
    _CodegenState = object
    PRIVATE_API = False

_NULL = nullcontext()


class SpansError(Exception):
    """Neither libcst's private nor its public API gave the node positions."""


class LineState(_CodegenState):
    """Code generation that records each node's line and token span, and collects calls.

    Offsets are indices into `tokens`."""

    def __init__(self, module: cst.Module):
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.line = 1
        self.lines: dict[int, int] = {}
        self.syn_tok: dict[int, int] = {}
        self.start_tok: dict[int, int] = {}
        self.end_tok: dict[int, int] = {}
        self.calls: list[cst.Call] = []

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        if "\n" in value:
            self.line += value.count("\n")

    def record_syntactic_position(self, node, *, start_node=None, end_node=None):
        k = id(node)
        self.lines[k] = self.line
        self.syn_tok[k] = len(self.tokens)
        return _NULL

    def before_codegen(self, node) -> None:
        self.start_tok[id(node)] = len(self.tokens)
        if type(node) is cst.Call:
            self.calls.append(node)

    def after_codegen(self, node) -> None:
        self.end_tok[id(node)] = len(self.tokens)

    def slice(self, a: int, b: int) -> str:
        return "".join(self.tokens[a:b])

    def column(self, node) -> int | None:
        """The column (characters from its line's start) of the node's syntactic start."""
        i = self.syn_tok.get(id(node))
        if i is None:
            return None
        col = 0
        for j in range(i - 1, -1, -1):
            t = self.tokens[j]
            nl = t.rfind("\n")
            if nl != -1:
                return col + len(t) - nl - 1
            col += len(t)
        return col


class _Calls(cst.CSTVisitor):
    def __init__(self):
        super().__init__()
        self.calls: list[cst.Call] = []

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(node)


class PublicState:
    """The records of LineState, from libcst's public metadata API. Offsets are indices
    into the generated code (`module.code`), which is the file's text."""

    def __init__(self, module: cst.Module):
        self.text = module.code
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)  # keep the nodes (and their ids)
        syn = wrapper.resolve(PositionProvider)
        inc = wrapper.resolve(WhitespaceInclusivePositionProvider)
        starts = _line_starts(self.text)

        def offset(pos) -> int:
            return starts[pos.line - 1] + pos.column if pos.line <= len(starts) else len(self.text)

        self.lines = {id(n): r.start.line for n, r in syn.items()}
        self.syn_tok = {id(n): offset(r.start) for n, r in syn.items()}
        self.start_tok = {id(n): offset(r.start) for n, r in inc.items()}
        self.end_tok = {id(n): offset(r.end) for n, r in inc.items()}
        v = _Calls()
        module.visit(v)
        self.calls = v.calls

    def slice(self, a: int, b: int) -> str:
        return self.text[a:b]

    def column(self, node) -> int | None:
        """The column (characters from its line's start) of the node's syntactic start."""
        a = self.syn_tok.get(id(node))
        return None if a is None else a - self.text.rfind("\n", 0, a) - 1


def _line_starts(text: str) -> list[int]:
    """Offsets where each line starts, with libcst's line breaks (\\r\\n, \\r, \\n)."""
    out = [0]
    pos = 0
    pieces = text.split("\n")
    last = len(pieces) - 1
    for k, piece in enumerate(pieces):
        j = piece.find("\r")
        while j != -1:
            if not (k < last and j == len(piece) - 1):  # else it is the CR of a CRLF
                out.append(pos + j + 1)
            j = piece.find("\r", j + 1)
        pos += len(piece) + 1
        if k < last:
            out.append(pos)
    return out


def _private(module: cst.Module, text: str) -> LineState | None:
    """One pass through libcst's private code generation, or None if it is unusable."""
    if not PRIVATE_API:
        return None
    try:
        st = LineState(module)
        module._codegen(st)
    except RecursionError:
        raise  # too deep for any code generation, private or public
    except Exception:  # the private API changed shape
        return None
    tokens = getattr(st, "tokens", None)
    if not isinstance(tokens, list) or "".join(tokens) != text:
        return None
    if st.start_tok.get(id(module)) != 0 or st.end_tok.get(id(module)) != len(tokens):
        return None  # the before/after hooks did not fire
    if module.body and id(module.body[0]) not in st.lines:  # the position hook did not fire
        return None
    return st


def record(module: cst.Module, text: str) -> LineState | PublicState:
    """Positions, spans and calls of a parsed file (`text` is what was parsed)."""
    st = _private(module, text)
    if st is not None:
        return st
    try:
        return PublicState(module)
    except RecursionError:
        raise
    except Exception as e:
        why = " ".join(str(e).split())
        raise SpansError(f"{type(e).__name__}: {why[:77] + '...' if len(why) > 80 else why}") from None
