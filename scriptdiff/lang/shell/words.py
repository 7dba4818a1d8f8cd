"""Shell words with provenance: values (Seg, Word, Var) and their expansion (Expander).

A value is a list of segments, each remembering the line it was written on, the variables
it came through and the names that could not be resolved. The Expander turns a
tree-sitter-bash node into the words bash would see: quoting, `$VAR` / `${VAR}` and their
default / alternative forms, `${#VAR}`, arrays `"${ARR[@]}"`, `$((...))` on known values and
word splitting of unquoted expansions. It reads and (for `${VAR:=d}`) writes the variables it
is given; it never runs anything: `$(...)` stays unresolved text. What it copies out of
variables is metered (scriptdiff/budget.py): `A=$A$A` doubled 22 times raises TooLarge
instead of building four million segments.
"""
from __future__ import annotations

import re
from bisect import bisect_right
from contextlib import contextmanager
from dataclasses import dataclass, field

from ...budget import Meter, check_number

NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")  # one token: an environment variable name


# ------------------------------------------------------------------ values with provenance

@dataclass
class Seg:
    """A piece of text with the line it was written on and how it got here."""

    text: str
    line: int
    via: tuple = ()  # variable names it came through, outermost last
    unresolved: tuple = ()  # names that could not be resolved
    quoted: bool = False
    # (start, end) byte offsets in the script where this text is written as it is (a literal
    # word, the inside of quotes without escapes); None when it is not (escapes, $((...)))
    span: tuple | None = None


@dataclass
class Word:
    """One shell word after expansion: its segments, and their joint text, line and provenance."""

    segs: list = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(s.text for s in self.segs)

    @property
    def line(self) -> int:
        for s in self.segs:
            if s.text.strip():
                return s.line
        return self.segs[0].line if self.segs else 0

    @property
    def span(self) -> tuple | None:
        """(start, end) byte offsets of the word's text in the script, where it is written there
        in one piece (`scriptdiff fix` edits it there); None when it is not."""
        a = b = None
        for sg in self.segs:
            if not sg.text:
                continue
            sp = sg.span
            if sp is None or (b is not None and sp[0] != b):
                return None
            if a is None:
                a = sp[0]
            b = sp[1]
        return None if a is None else (a, b)

    @property
    def via(self) -> tuple:
        """The variables the word was expanded from, in order, once each."""
        return self._each("via")

    @property
    def unresolved(self) -> tuple:
        """The variables the word needed and could not resolve, in order, once each."""
        return self._each("unresolved")

    def _each(self, attr: str) -> tuple:
        return tuple(dict.fromkeys(v for s in self.segs for v in getattr(s, attr)))


@dataclass
class Var:
    """A shell variable as assigned so far: a scalar (segments) or an array (words)."""

    kind: str  # scalar | array
    segs: list = field(default_factory=list)  # scalar
    words: list = field(default_factory=list)  # array
    line: int = 0
    exported: bool = False


def tail_word(w: Word, start: int) -> Word:
    """The part of a word from character `start` on, keeping each piece's line and variables."""
    out = []
    pos = 0
    for sg in w.segs:
        end = pos + len(sg.text)
        if end > start:
            cut = max(0, start - pos)
            out.append(Seg(sg.text[cut:], sg.line, sg.via, sg.unresolved, sg.quoted, _sub(sg, cut, len(sg.text))))
        pos = end
    return Word(out or [Seg("", w.line)])


def _sub(sg: Seg, a: int, b: int) -> tuple | None:
    """The span of characters a..b of a segment's text (None when the segment has none)."""
    if sg.span is None:
        return None
    if sg.text.isascii():
        return sg.span[0] + a, sg.span[0] + b
    return sg.span[0] + len(sg.text[:a].encode("utf-8")), sg.span[0] + len(sg.text[:b].encode("utf-8"))


def _moved(segs: list[Seg], via: tuple = (), quoted: bool | None = None) -> list[Seg]:
    """Segments copied on through a variable (`via` added), keeping where each was written."""
    return [Seg(s.text, s.line, s.via + via, s.unresolved, s.quoted if quoted is None else quoted, s.span)
            for s in segs]


_ESCAPED = frozenset('\n"$`')


def _unescaped(raw: str, row: int, start: int) -> list[tuple[str, int, tuple | None]]:
    """The text of a double-quoted string's part `raw` (written from byte `start`, on line
    `row`) after bash's escapes, as (text, line, span) pieces: each line apart, a newline its
    own piece, an escaped character a piece without a span."""
    out: list[tuple[str, int, tuple | None]] = []
    pos, i, n = start, 0, len(raw)
    plain = raw.isascii()

    def text(chunk: str) -> None:  # a run without escapes, written as it is
        nonlocal pos, row
        for k, piece in enumerate(chunk.split("\n")):
            if k:
                out.append(("\n", row, (pos, pos + 1)))
                pos, row = pos + 1, row + 1
            if piece:
                size = len(piece) if plain else len(piece.encode("utf-8"))
                out.append((piece, row, (pos, pos + size)))
                pos += size

    while i < n:
        j = raw.find("\\", i)
        while j != -1 and (j + 1 >= n or raw[j + 1] not in _ESCAPED):
            j = raw.find("\\", j + 1)
        if j == -1:
            text(raw[i:])
            break
        text(raw[i:j])
        ch = raw[j + 1]
        out.append((ch, row, None))
        pos += 1 + len(ch.encode("utf-8"))
        row += ch == "\n"
        i = j + 2
    return out


def via_text(names: tuple) -> str | None:
    """'$LR', or '$LR in $ARGS' when the value came through a variable inside another."""
    if not names:
        return None
    shown = [n if n.startswith("${") else "$" + n for n in names]
    return shown[0] + "".join(f" in {x}" for x in shown[1:])


def split_words(segs: list[Seg]) -> list[Word]:
    """Bash word splitting (IFS = blank, tab, newline) of an unquoted expansion's segments.

    Lines that start with # inside the value are comments; a lone backslash is a leftover
    line continuation and is dropped."""
    words: list[Word] = []
    cur: list[Seg] = []
    line_start = True
    skip_line = False
    for s in segs:
        buf = ""
        at = 0  # where buf starts in s.text
        for i, ch in enumerate(s.text):
            if ch == "\n":
                skip_line = False
            if skip_line:
                if ch == "\n":
                    line_start = True
                continue
            if ch in " \t\n":
                if buf:
                    cur.append(Seg(buf, s.line, s.via, s.unresolved, s.quoted, _sub(s, at, at + len(buf))))
                    buf = ""
                if cur:
                    w = Word(cur)
                    if w.text != "\\":
                        words.append(w)
                    cur = []
                if ch == "\n":
                    line_start = True
                continue
            if ch == "#" and line_start and not buf and not cur and len(segs) > 0 and _multiline(segs):
                skip_line = True
                continue
            line_start = False
            if not buf:
                at = i
            buf += ch
        if buf:
            cur.append(Seg(buf, s.line, s.via, s.unresolved, s.quoted, _sub(s, at, at + len(buf))))
    if cur:
        w = Word(cur)
        if w.text != "\\":
            words.append(w)
    return words


def _tdiv(a: int, n: int) -> int:
    """Integer division truncating toward zero, as expr and $((...)) divide."""
    q = abs(a) // abs(n)
    return q if (a >= 0) == (n > 0) else -q


def _multiline(segs: list[Seg]) -> bool:
    return any("\n" in s.text for s in segs)


# ------------------------------------------------------------------ expansion

@dataclass
class Origin:
    """Where the bytes of a text read again came from (`eval $cmd`): runs of (start byte, end
    byte, line, via), in order, one per segment of the words it was joined from."""

    starts: list[int]
    runs: list[tuple[int, int, int, tuple]]

    @classmethod
    def of(cls, words: list[Word]) -> tuple[bytes, "Origin"]:
        """The words joined by single blanks, as bytes, with the origin of every byte."""
        out = bytearray()
        runs = []
        for w in words:
            if out:
                out += b" "
            for sg in w.segs:
                b = sg.text.encode("utf-8")
                runs.append((len(out), len(out) + len(b), sg.line, sg.via))
                out += b
        return bytes(out), cls([r[0] for r in runs], runs)

    def run(self, byte: int) -> tuple[int, int, int, tuple] | None:
        if not self.runs:
            return None
        i = max(bisect_right(self.starts, byte) - 1, 0)
        return self.runs[i]


class Expander:
    """Expands tree-sitter-bash nodes of one script into Words, against the variables given.

    What it reads can change while a script is evaluated (`reading`): a fragment the script
    sources, whose lines are numbered from a base of their own (record.py), or a command
    string read again (`eval $cmd`), whose bytes each keep the line and variables they came
    from (`Origin`)."""

    def __init__(self, data: bytes, variables: dict[str, Var]):
        self.data = data
        self.vars = variables
        self.meter = Meter()  # what expansions copy out of variables (budget.py)
        self._arith_unresolved: set = set()
        self._arith_via: set = set()
        self.base = 0  # added to every line: a sourced fragment's lines follow the script's
        self.origin: Origin | None = None  # a text read again: where each of its bytes came from

    @contextmanager
    def reading(self, data: bytes, base: int = 0, origin: Origin | None = None):
        """Expand nodes of another text (a fragment, a command string) for a while."""
        saved = self.data, self.base, self.origin
        self.data, self.base, self.origin = data, base, origin
        try:
            yield
        finally:
            self.data, self.base, self.origin = saved

    @property
    def state(self) -> tuple:
        """What `reading` swaps: kept with a function body, restored where it is called."""
        return self.data, self.base, self.origin

    # ----------------------------------------------------------- node helpers
    def t(self, node) -> str:
        return self.data[node.start_byte:node.end_byte].decode("utf-8", "replace")

    def line_of(self, node) -> int:
        return self.line_at(node.start_byte, node.start_point[0])

    def line_at(self, byte: int, row: int) -> int:
        """The line of the byte at `byte` (tree-sitter's `row`): in a text read again, the line
        the byte was written on."""
        if self.origin is not None:
            r = self.origin.run(byte)
            return r[2] if r is not None else self.base + row + 1
        return self.base + row + 1

    # ----------------------------------------------------------- expansion
    def lookup(self, name: str) -> Var | None:
        return self.vars.get(name)

    def charge(self, segs: list[Seg]) -> None:
        """Meter a copy of `segs` (budget.py); raises TooLarge."""
        self.meter.value(sum(len(s.text) for s in segs), len(segs))

    def var_segs(self, name: str, node_line: int, quoted: bool) -> list[Seg]:
        var = self.lookup(name)
        if var is None:
            return [Seg(f"${name}", node_line, (), (name,), quoted)]
        if var.kind == "array":  # $ARR is its first element
            segs = var.words[0].segs if var.words else []
        else:
            segs = var.segs
        self.charge(segs)
        return [Seg(s.text, s.line, s.via + (name,), s.unresolved, s.quoted or quoted, s.span) for s in segs]

    def expansion(self, node, quoted: bool) -> list[list[Seg]] | list[Seg]:
        """${...}: returns a list of Seg (scalar) or a list of words (array [@])."""
        line = self.line_of(node)
        kids = [c for c in node.children if c.type not in ("${", "}")]
        if not kids:
            return [Seg(self.t(node), line, (), ("?",), quoted)]
        first = kids[0]
        if first.type == "#" and len(kids) > 1:  # ${#VAR}: length
            name = self.t(kids[1])
            v = self.lookup(name)
            if v is None:
                return [Seg(self.t(node), line, (), (name,), quoted)]
            n = len(v.words) if v.kind == "array" else len("".join(s.text for s in v.segs))
            return [Seg(str(n), line, (name,), (), quoted)]
        if first.type == "subscript":
            name_node = first.child_by_field_name("name")
            idx_node = first.child_by_field_name("index")
            name = self.t(name_node) if name_node else self.t(first)
            idx = self.t(idx_node) if idx_node else "0"
            v = self.lookup(name)
            if v is None:
                return [Seg(self.t(node), line, (), (name,), quoted)]
            words = v.words if v.kind == "array" else [Word(list(v.segs))]
            if idx in ("@", "*"):
                self.meter.value(sum(len(s.text) for w in words for s in w.segs),
                                 len(words) + sum(len(w.segs) for w in words))
                return [_moved(w.segs, (name,), True) for w in words]
            try:
                w = words[int(idx)]
            except (ValueError, IndexError):
                return [Seg(self.t(node), line, (), (f"{name}[{idx}]",), quoted)]
            return _moved(w.segs, (name,), quoted)
        if first.type in ("variable_name", "special_variable_name"):
            name = self.t(first)
            rest = kids[1:]
            op = self.t(rest[0]) if rest else ""
            v = self.lookup(name)
            if not rest:
                return self.var_segs(name, line, quoted)
            if op in (":-", "-", ":=", "="):
                empty = v is None or (v.kind == "scalar" and not "".join(s.text for s in v.segs))
                use_default = v is None if op in ("-", "=") else empty
                if not use_default:
                    return self.var_segs(name, line, quoted)
                segs: list[Seg] = []
                for c in rest[1:]:
                    segs.extend(self.concat_segs(c, quoted=True))
                shown = self.t(node)
                segs = _moved(segs, (shown if len(shown) < 40 else f"${{{name}{op}...}}",), quoted)
                if op in (":=", "="):
                    self.vars[name] = Var("scalar", segs=segs, line=line)
                return segs
            if op in (":+", "+"):
                if v is None:
                    return []
                segs = []
                for c in rest[1:]:
                    segs.extend(self.concat_segs(c, quoted=True))
                return segs
            return [Seg(self.t(node), line, (), (name,), quoted)]  # other operators: not evaluated
        return [Seg(self.t(node), line, (), (self.t(first),), quoted)]

    def concat_segs(self, node, quoted: bool = False) -> list[Seg]:
        """All of a node as one run of segments (no word splitting; arrays joined by spaces)."""
        out: list[Seg] = []
        for w in self.words(node, quoted=quoted, split=False):
            if out:
                out.append(Seg(" ", w.line, (), (), True))
            out.extend(w.segs)
        return out

    def string_segs(self, node) -> list:
        """A double-quoted string: segments, or words where "${ARR[@]}" expands to several."""
        parts: list = [[]]
        kids = list(node.children)
        prev_end = kids[0].end_byte if kids and kids[0].type == '"' else node.start_byte
        prev_row = self.line_of(node)

        def literal(text: str, row: int, start: int) -> None:
            # bash's escapes inside double quotes (\<newline>, \", \$, \`) give one character
            # each, written nowhere as it is: the text between them keeps where it is written
            for piece, line, span in _unescaped(text, row, start):
                parts[-1].append(Seg(piece, line, (), (), True, span))

        for c in kids:
            if c.start_byte > prev_end:  # text tree-sitter leaves between children (newlines)
                gap = self.data[prev_end:c.start_byte].decode("utf-8", "replace")
                literal(gap, prev_row, prev_end)
            prev_end = max(prev_end, c.end_byte)
            prev_row = self.line_at(max(c.end_byte - 1, c.start_byte), c.end_point[0])
            if c.type == '"':
                continue
            if c.type == "string_content":
                literal(self.t(c), self.line_of(c), c.start_byte)
            elif c.type == "expansion":
                r = self.expansion(c, quoted=True)
                if r and isinstance(r[0], list):  # "${ARR[@]}": several words
                    for j, wsegs in enumerate(r):
                        if j:
                            parts.append([])
                        parts[-1].extend(wsegs)
                else:
                    parts[-1].extend(r)
            elif c.type == "simple_expansion":
                parts[-1].extend(self.simple(c, quoted=True))
            else:
                for w in self.words(c, quoted=True, split=False):
                    parts[-1].extend(w.segs)
        return parts

    def simple(self, node, quoted: bool) -> list[Seg]:
        name = self.t(node)[1:]
        if not NAME_RE.match(name):  # $1, $@, $*, $#, $$ ...
            return [Seg(self.t(node), self.line_of(node), (), (name,), quoted)]
        return self.var_segs(name, self.line_of(node), quoted)

    def arith(self, node):
        """$((...)) on known values; None when a value is unknown or not a number."""
        t = node.type
        if t in ("arithmetic_expansion", "parenthesized_expression", "expansion_arithmetic"):
            kids = [c for c in node.children if c.type not in ("$((", "))", "((", "(", ")", "$[", "]")]
            return self.arith(kids[0]) if len(kids) == 1 else None
        if t == "number":
            try:
                return int(self.t(node), 0)
            except ValueError:
                return None
        if t in ("variable_name", "simple_expansion", "expansion", "word"):
            if t == "word" and self.t(node).lstrip("-").isdigit():
                return int(self.t(node))
            name = self.t(node).lstrip("$").strip("{}")
            v = self.lookup(name)
            if v is None or v.kind != "scalar":
                self._arith_unresolved.add(name)
                return None
            val = "".join(s.text for s in v.segs).strip()
            self._arith_via.add(name)
            try:
                return int(val, 0)
            except ValueError:
                if any(s.unresolved for s in v.segs):
                    self._arith_unresolved.update(u for s in v.segs for u in s.unresolved)
                return None
        if t == "binary_expression":
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            op = node.child_by_field_name("operator")
            opt = self.t(op) if op is not None else self.t(node.children[1])
            a, b = self.arith(left), self.arith(right)
            if a is None or b is None:
                return None
            try:
                return {"+": a + b, "-": a - b, "*": a * b, "/": a // b if b else None, "%": a % b if b else None,
                        "**": a ** b if 0 <= b < 64 else None}.get(opt)
            except (ZeroDivisionError, OverflowError):
                return None
        if t == "unary_expression" and node.child_count == 2:
            v = self.arith(node.children[1])
            return -v if v is not None and self.t(node.children[0]) == "-" else v
        return None

    def expr(self, node, quoted: bool) -> Seg | None:
        """`$(expr A op B ...)` with integer operands (literal or known variables) and + - * / %:
        its value (expr's precedence, division truncating toward zero), or None when it is
        anything else; the command is never run."""
        cmds = [c for c in node.children if c.is_named]
        if len(cmds) != 1 or cmds[0].type != "command":
            return None
        cmd = cmds[0]
        name = cmd.child_by_field_name("name")
        if name is None or self.t(name) != "expr":
            return None
        words = [w for c in cmd.children if c.is_named and c.type != "command_name" for w in self.words(c)]
        if any(c.type not in ("command_name", "word", "number", "simple_expansion", "expansion", "string",
                              "raw_string", "concatenation") for c in cmd.children if c.is_named):
            return None
        toks = [w.text for w in words]
        if len(toks) < 3 or len(toks) % 2 == 0 or any(toks[k] not in ("+", "-", "*", "/", "%") for k in range(1, len(toks), 2)):
            return None
        try:
            nums = [int(toks[k]) for k in range(0, len(toks), 2)]
        except ValueError:
            return None
        ops = [toks[k] for k in range(1, len(toks), 2)]
        terms, signs = [nums[0]], []
        for op, n in zip(ops, nums[1:]):
            if op in ("+", "-"):
                signs.append(op)
                terms.append(n)
                continue
            if op != "*" and n == 0:
                return None  # expr: division by zero
            a = terms[-1]
            terms[-1] = a * n if op == "*" else _tdiv(a, n) if op == "/" else a - n * _tdiv(a, n)
        value = terms[0]
        for op, n in zip(signs, terms[1:]):
            value = value + n if op == "+" else value - n
        via = tuple(dict.fromkeys(v for w in words for v in w.via))
        return Seg(str(value), self.line_of(node), via, (), quoted)

    def words(self, node, quoted: bool = False, split: bool = True) -> list[Word]:
        """The words a node expands to (bash word splitting for unquoted expansions). In a text
        read again, a word written in it keeps the lines and variables its bytes came from."""
        if self.origin is None:
            return self._words(node, quoted, split)
        if node.type in ("word", "number") and "\\" not in self.t(node):
            return [Word(self._origin_segs(node, quoted))]
        out = self._words(node, quoted, split)
        r = self.origin.run(node.start_byte)
        via = r[3] if r is not None else ()
        for w in out:  # offsets in a text read again name no bytes of the script: no span
            w.segs = [Seg(sg.text, sg.line, via if via and not sg.via else sg.via, sg.unresolved, sg.quoted)
                      for sg in w.segs]
        return out

    def _origin_segs(self, node, quoted: bool) -> list[Seg]:
        """A word of a text read again, cut where its bytes came from different places."""
        out = []
        a, b = node.start_byte, node.end_byte
        for start, end, line, via in self.origin.runs:
            lo, hi = max(a, start), min(b, end)
            if lo < hi:
                out.append(Seg(self.data[lo:hi].decode("utf-8", "replace"), line, via, (), quoted))
        return out or [Seg(self.t(node), self.line_of(node), (), (), quoted)]

    def _words(self, node, quoted: bool = False, split: bool = True) -> list[Word]:
        t = node.type
        line = self.line_of(node)
        if t in ("word", "number"):
            text = self.t(node)
            if "\\" in text:
                text = re.sub(r"\\(.)", r"\1", text)  # one token's escapes
                return [Word([Seg(text, line, (), (), quoted)])]
            return [Word([Seg(text, line, (), (), quoted, (node.start_byte, node.end_byte))])]
        if t == "raw_string":
            text = self.t(node)[1:-1]
            inside = Seg(text, line, span=(node.start_byte + 1, node.end_byte - 1))
            out, at = [], 0
            for i, piece in enumerate(text.split("\n")):
                if piece:
                    out.append(Seg(piece, line + i, (), (), True, _sub(inside, at, at + len(piece))))
                at += len(piece) + 1
            return [Word(out or [Seg("", line, (), (), True)])]
        if t == "ansi_c_string":
            return [Word([Seg(self.t(node)[2:-1], line, (), (), True)])]
        if t == "string":
            parts = self.string_segs(node)
            return [Word(p or [Seg("", line, (), (), True)]) for p in parts]
        if t in ("simple_expansion", "expansion"):
            r = self.simple(node, quoted) if t == "simple_expansion" else self.expansion(node, quoted)
            if r and isinstance(r[0], list):
                ws = [Word(x) for x in r]
                if split and not quoted:
                    out = []
                    for w in ws:
                        out.extend(split_words(w.segs))
                    return out
                return ws
            if split and not quoted:
                return split_words(r)
            return [Word(r)]
        if t == "arithmetic_expansion":
            self._arith_unresolved = set()
            self._arith_via = set()
            v = self.arith(node)
            check_number(v)  # no setting is that large; str() of it may not even work
            if v is None:
                return [Word([Seg(self.t(node), line, tuple(self._arith_via), tuple(self._arith_unresolved) or ("$((...))",),
                                  quoted)])]
            return [Word([Seg(str(v), line, tuple(sorted(self._arith_via)), (), quoted)])]
        if t == "command_substitution":
            seg = self.expr(node, quoted)
            if seg is not None:  # $(expr 16 / $N): integer arithmetic, evaluated like $((...))
                return [Word([seg])]
        if t in ("command_substitution", "process_substitution"):
            return [Word([Seg(self.t(node), line, (), (self.t(node),), quoted)])]
        if t == "concatenation":
            acc: list[Word] = []
            for c in node.children:
                ws = self.words(c, quoted=quoted, split=split)
                if not ws:
                    continue
                if not acc:
                    acc = ws
                else:
                    acc[-1] = Word(acc[-1].segs + ws[0].segs)
                    acc.extend(ws[1:])
            return acc
        if t == "array":
            out = []
            for c in node.children:
                if c.type in ("(", ")", "comment"):
                    continue
                out.extend(self.words(c, quoted=False, split=True))
            return out
        return [Word([Seg(self.t(node), line, (), (), quoted)])]
