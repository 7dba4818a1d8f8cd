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

import fnmatch
import posixpath
import re
from bisect import bisect_right
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from ...budget import Meter, check_number
from ...ruleset.devices import table as device_table
from ...ruleset.rules import RuleSet, derived
from .grammar import parser

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
    # why the value is not known: a variable set in a way the evaluator does not follow (read
    # from a file, set in a loop of unknown length), each reason one line of the input's account;
    # such a value is never compared, never equal to another (evaluator.py `unknown`)
    unknown: tuple = ()
    # a path relative to the directory of the script itself (`$(dirname "$0")`, `$SCRIPT_DIR`)
    anchored: bool = False

    def moved(self, **changes) -> "Seg":
        """This segment copied with `changes` (every other field kept)."""
        return replace(self, **changes)


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

    @property
    def unknown(self) -> tuple:
        """Why the word's value is not known (Seg.unknown), once each: empty when it is."""
        return self._each("unknown")

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
            out.append(sg.moved(text=sg.text[cut:], span=_sub(sg, cut, len(sg.text))))
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
    return [s.moved(via=s.via + via, quoted=s.quoted if quoted is None else quoted) for s in segs]


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
    line continuation and is dropped. An expansion kept as written because it could not be
    evaluated (`$(dirname $DIR)`, `${X/a/b}`) is one piece: what it expands to is not known,
    so it is never split at the blanks of its own text."""
    words: list[Word] = []
    cur: list[Seg] = []
    line_start = True
    skip_line = False
    for s in segs:
        if whole(s) and not skip_line:
            cur.append(s)
            line_start = False
            continue
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
                    cur.append(s.moved(text=buf, span=_sub(s, at, at + len(buf))))
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
            cur.append(s.moved(text=buf, span=_sub(s, at, at + len(buf))))
    if cur:
        w = Word(cur)
        if w.text != "\\":
            words.append(w)
    return words


# expansions inside double quotes whose node tree-sitter starts at the blank before them
_LEADING_BLANKS = frozenset(("simple_expansion", "expansion", "command_substitution", "arithmetic_expansion",
                             "process_substitution"))


def whole(s: Seg) -> bool:
    """An expansion kept as its text (command substitution, an operator not evaluated): one piece."""
    return bool(s.unresolved) and s.text.startswith(("$(", "${", "`", "<(", ">("))


@derived
def _counts(rs: RuleSet) -> dict | None:
    """rules/devices.yaml `devices.counts`, with the device paths of `devices.shell.paths`."""
    sh = device_table(rs).get("shell") or {}
    c = device_table(rs).get("counts")
    if not c:
        return None
    paths = [p for fam in ("cuda", "npu") for p in (sh.get("paths") or {}).get(fam) or ()]
    return {"shown": c["shown"], "tools": set(c.get("tools") or ()), "listers": set(c.get("listers") or ()),
            "printers": set(c.get("printers") or ()), "visible": set(c.get("visible") or ()),
            "filters": set(c.get("filters") or ()), "counter": list(c["counter"]), "paths": paths}


def _descendants(node):
    stack = [node]
    while stack:
        x = stack.pop()
        yield x
        stack.extend(x.children)


def _tdiv(a: int, n: int) -> int:
    """Integer division truncating toward zero, as expr and $((...)) divide."""
    q = abs(a) // abs(n)
    return q if (a >= 0) == (n > 0) else -q


_ASSIGN = frozenset(("=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "|=", "^="))


def _binary(op: str, a: int, b: int):
    """Bash's integer operator `op` on a and b; None where bash stops (division by zero) or the
    result would be too large to be a setting."""
    try:
        if op in ("/", "%"):
            if b == 0:
                return None
            q = _tdiv(a, b)
            return q if op == "/" else a - b * q
        if op == "**":
            return a ** b if 0 <= b < 64 else None
        if op in ("<<", ">>"):
            return (a << b if op == "<<" else a >> b) if 0 <= b < 64 else None
        f = {"+": a + b, "-": a - b, "*": a * b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b,
             "!=": a != b, "&": a & b, "|": a | b, "^": a ^ b}.get(op)
        return None if f is None else int(f)
    except OverflowError:
        return None


def _dirname(path: str) -> str:
    """`dirname PATH` as coreutils computes it."""
    p = path.rstrip("/") or "/"
    if "/" not in p:
        return "."
    head = p.rsplit("/", 1)[0].rstrip("/")
    return head or "/"


def _parent(path: str) -> str:
    """The folder of a path anchored at the script's folder (`.` is that folder: its parent is `..`)."""
    return posixpath.normpath(posixpath.join(posixpath.normpath(path), ".."))


def _basename(path: str, suffix: str = "") -> str:
    """`basename PATH [SUFFIX]` as coreutils computes it."""
    p = path.rstrip("/") or "/"
    base = p.rsplit("/", 1)[-1] or "/"
    if suffix and base != suffix and base.endswith(suffix):
        base = base[: -len(suffix)]
    return base


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
        self._arith_unknown: set = set()
        self.base = 0  # added to every line: a sourced fragment's lines follow the script's
        # the positional parameters ($1 ..., $#, $@): a function's arguments, or what `set --`
        # gave; None while they are the script's own arguments (unresolved, as written)
        self.positional: list[Word] | None = None
        self.script = ""  # the script's file name: `$(dirname "$0")` is the folder it is in
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
        text = self.data[node.start_byte:node.end_byte].decode("utf-8", "replace")
        if node.type in _LEADING_BLANKS and text[:1].isspace():
            return text.lstrip()  # "$a $b": tree-sitter gives `$b` the blank before it (string_segs)
        return text

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
        """Variable `name` as set so far; the positional parameters (`$1`, `$#`, `$@`) where they
        are known: a function's arguments, what `set --` gave (the script's own are not)."""
        v = self.vars.get(name)
        if v is not None or self.positional is None or not (name.isdigit() or name in ("#", "@", "*")):
            return v
        args = self.positional
        if name == "#":
            return Var("scalar", segs=[Seg(str(len(args)), 0)])
        if name in ("@", "*"):
            return Var("array", words=list(args))
        i = int(name)
        if i == 0:
            return None  # $0: the script as it was started (see `script_path`)
        return Var("scalar", segs=list(args[i - 1].segs)) if i <= len(args) else Var("scalar")

    def every(self, name: str, line: int, quoted: bool) -> list[list[Seg]] | None:
        """`$@` / `$*` where the positional parameters are known: one word each (`"$*"`: one
        word, joined by blanks); None when they are the script's own (unresolved)."""
        v = self.lookup(name) if name in ("@", "*") else None
        if v is None or v.kind != "array":
            return None
        self.meter.value(sum(len(sg.text) for w in v.words for sg in w.segs), len(v.words))
        words = [_moved(w.segs, (name,), True if quoted else None) for w in v.words]
        if name == "*" and quoted:
            joined: list[Seg] = []
            for w in words:
                if joined:
                    joined.append(Seg(" ", line, (), (), True))
                joined.extend(w)
            return [joined]
        return words

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
        return [s.moved(via=s.via + (name,), quoted=s.quoted or quoted) for s in segs]

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
                every = self.every(name, line, quoted)  # ${@}: every argument
                return every if every is not None else self.var_segs(name, line, quoted)
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
                empty = v is not None and v.kind == "scalar" and not "".join(s.text for s in v.segs) \
                    and not any(s.unknown or s.unresolved for s in v.segs)
                if v is None or (op == ":+" and empty):  # ${ckpt:+--checkpoint $ckpt} with ckpt= : nothing
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
            if c.type in _LEADING_BLANKS:  # "$a $b": the blank tree-sitter puts in `$b` is the string's
                raw = self.data[c.start_byte:c.end_byte].decode("utf-8", "replace")
                lead = raw[:len(raw) - len(raw.lstrip())]
                if lead:
                    literal(lead, self.line_of(c), c.start_byte)
            if c.type == "string_content":
                literal(self.t(c), self.line_of(c), c.start_byte)
            elif c.type in ("expansion", "simple_expansion"):
                r = self.expansion(c, quoted=True) if c.type == "expansion" else self.simple(c, quoted=True)
                if r and isinstance(r[0], list):  # "${ARR[@]}", "$@": several words
                    for j, wsegs in enumerate(r):
                        if j:
                            parts.append([])
                        parts[-1].extend(wsegs)
                elif not r and len(kids) == 3 and parts == [[]] and self._every_node(c):
                    return []  # "$@" with no arguments: no word at all
                else:
                    parts[-1].extend(r)
            else:
                for w in self.words(c, quoted=True, split=False):
                    parts[-1].extend(w.segs)
        return parts

    def _every_node(self, node) -> bool:
        """`$@` / `${@}` (or `*`) while the positional parameters are known."""
        text = self.t(node).strip("${}")
        return text in ("@", "*") and self.positional is not None

    def simple(self, node, quoted: bool) -> list[Seg] | list[list[Seg]]:
        """$NAME, and $1, $#, $@ where the positional parameters are known (`$@`: one list of
        segments per argument); $$, $?, $!, the script's own arguments: kept as written."""
        name = self.t(node)[1:]
        if not NAME_RE.match(name):  # $1, $@, $*, $#, $$ ...
            every = self.every(name, self.line_of(node), quoted)
            if every is not None:
                return every
            if (name.isdigit() or name == "#") and self.lookup(name) is not None:
                return self.var_segs(name, self.line_of(node), quoted)
            return [Seg(self.t(node), self.line_of(node), (), (name,), quoted)]
        return self.var_segs(name, self.line_of(node), quoted)

    def _arith_again(self, inner: str, line: int):
        """The arithmetic `inner`, parsed again as `(( inner ))` and evaluated here."""
        data = f"(( {inner} ))".encode("utf-8")
        try:
            tree = parser().parse(data)
        except Exception:  # tree-sitter unavailable: said once by the reader already
            return None
        kids = tree.root_node.children
        if not kids or tree.root_node.has_error:
            return None
        with self.reading(data, self.base, Origin([0], [(0, len(data), line, ())])):
            return self.arith(kids[0])

    def arith(self, node):
        """Bash arithmetic (`$((...))`, `(( ))`, `let`, a C-style `for`) on known integers: its
        value, or None when an operand is not a known integer (its names go to the unresolved
        or unknown sets of this evaluation). Assignments (`=`, `+=`, ..., `++`, `--`) set their
        variable as bash does: to the value, or, when it cannot be computed, to a value that
        stays unresolved or unknown as its operands are."""
        t = node.type
        if t in ("arithmetic_expansion", "parenthesized_expression", "expansion_arithmetic", "compound_statement"):
            kids = [c for c in node.children
                    if c.type not in ("$((", "))", "((", "(", ")", "$[", "]", ",", ";", "comment")]
            if not kids:
                return None
            v = None
            for k in kids:  # `a = 1, b = a + 1`: each in turn, the last is the value
                v = self.arith(k)
            return v
        if t == "command_substitution":  # `$((N))` in `for ((...))`: tree-sitter reads `$( (N) )`
            text = self.t(node)
            if text.startswith("$((") and text.endswith("))") and node.start_byte < node.end_byte:
                return self._arith_again(text[3:-2], self.line_of(node))
            return None
        if t == "number":
            try:
                return int(self.t(node), 0)
            except ValueError:
                return None
        if t in ("variable_name", "simple_expansion", "expansion", "word"):
            if t == "word" and self.t(node).lstrip("-").isdigit():
                return int(self.t(node))
            return self._arith_var(self.t(node).lstrip("$").strip("{}"))
        if t == "binary_expression":
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            op = node.child_by_field_name("operator")
            opt = self.t(op) if op is not None else self.t(node.children[1])
            if opt in _ASSIGN:
                return self._arith_assign(left, opt, right, node)
            if opt in ("&&", "||"):  # short-circuit, as bash does
                a = self.arith(left)
                if a is None:
                    return None
                if (opt == "&&" and not a) or (opt == "||" and a):
                    return int(bool(a))
                b = self.arith(right)
                return None if b is None else int(bool(b))
            a, b = self.arith(left), self.arith(right)
            if a is None or b is None:
                return None
            return _binary(opt, a, b)
        if t == "unary_expression" and node.child_count == 2:
            op = self.t(node.children[0])
            if op in ("++", "--"):  # ++i: the new value
                return self._arith_step(node.children[1], op, node, prefix=True)
            v = self.arith(node.children[1])
            if v is None:
                return None
            return {"-": -v, "+": v, "!": int(not v), "~": ~v}.get(op)
        if t == "postfix_expression" and node.child_count == 2:  # i++: the old value
            return self._arith_step(node.children[0], self.t(node.children[1]), node, prefix=False)
        if t == "variable_assignment":  # for ((i = 0; ...)): the initializer
            name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
            if name is None or value is None:
                return None
            v = self.arith(value)
            self._arith_set(self.t(name), v, node)
            return v
        if t == "ternary_expression":
            kids = [c for c in node.children if c.is_named]
            if len(kids) == 3:
                c = self.arith(kids[0])
                return None if c is None else self.arith(kids[1] if c else kids[2])
        return None

    def _arith_var(self, name: str):
        v = self.lookup(name)
        if v is None or v.kind != "scalar":
            self._arith_unresolved.add(name)
            return None
        self._arith_via.add(name)
        self._arith_unknown.update(u for s in v.segs for u in s.unknown)
        val = "".join(s.text for s in v.segs).strip()
        try:
            return int(val, 0) if not any(s.unknown for s in v.segs) else None
        except ValueError:
            if any(s.unresolved for s in v.segs):
                self._arith_unresolved.update(u for s in v.segs for u in s.unresolved)
            return None

    def _arith_set(self, name: str, value, node) -> None:
        """Variable `name` set by arithmetic: to `value`, or (None) to what its operands leave it."""
        line = self.line_of(node)
        old = self.vars.get(name)
        exported = bool(old and old.exported)
        if value is not None:
            check_number(value)
            seg = Seg(str(value), line, tuple(sorted(self._arith_via)))
        elif self._arith_unknown:
            seg = Seg(f"${name}", line, (), (name,), unknown=tuple(sorted(self._arith_unknown)))
        else:
            seg = Seg(f"$(({self.t(node)}))", line, tuple(sorted(self._arith_via)),
                      tuple(sorted(self._arith_unresolved)) or ("$((...))",))
        self.vars[name] = Var("scalar", segs=[seg], line=line, exported=exported)

    def _arith_assign(self, left, opt: str, right, node):
        name = self.t(left).lstrip("$").strip("{}")
        if not NAME_RE.match(name):
            return None
        b = self.arith(right)
        if opt == "=":
            value = b
        else:
            a = self._arith_var(name)
            value = None if a is None or b is None else _binary(opt[:-1], a, b)
        self._arith_set(name, value, node)
        return value

    def _arith_step(self, target, op: str, node, prefix: bool):
        name = self.t(target).lstrip("$").strip("{}")
        if not NAME_RE.match(name):
            return None
        a = self._arith_var(name)
        new = None if a is None else a + (1 if op == "++" else -1)
        self._arith_set(name, new, node)
        return new if prefix else a

    def arith_value(self, node) -> tuple:
        """(value or None, the variables read, those unresolved, why unknown) of one arithmetic
        evaluation (the sets are this evaluation's own)."""
        self._arith_unresolved, self._arith_via, self._arith_unknown = set(), set(), set()
        v = self.arith(node)
        check_number(v)  # no setting is that large; str() of it may not even work
        return v, tuple(sorted(self._arith_via)), tuple(self._arith_unresolved), tuple(sorted(self._arith_unknown))

    def path_command(self, node, quoted: bool) -> Seg | None:
        """`$(dirname P)`, `$(basename P [SUFFIX])`, `$(realpath P)`, `$(readlink -f P)`,
        `$(cd P && pwd)` (or `cd P; pwd`) on a known P: the path, computed as the command would.
        `"$0"` and `${BASH_SOURCE[0]}` are the script itself, a path anchored at its own folder
        (`Seg.anchored`): `$(dirname "$0")` is that folder, `.`, and its parent `..`, so that a
        config named from it is found beside the script. None for anything else (a path that
        depends on the working directory, an unknown word): the command is never run."""
        cmds = [self._unguarded(c) for c in node.children if c.is_named and c.type != "comment"]
        if len(cmds) == 1 and cmds[0].type == "list":  # cd P && pwd
            kids = [c for c in cmds[0].children if c.is_named]
            ops = [c.type for c in cmds[0].children if not c.is_named]
            cmds = kids if ops == ["&&"] else []
        if not cmds or any(c.type != "command" for c in cmds):
            return None
        argv = [self._path_argv(c) for c in cmds]
        if any(a is None for a in argv):
            return None
        if len(argv) == 2 and argv[0][0] == "cd" and len(argv[0]) == 2 and argv[1] in (["pwd"], ["pwd", "-P"]):
            argv = [["realpath", argv[0][1]]]
        if len(argv) != 1:
            return None
        name, args = argv[0][0], argv[0][1:]
        if name == "readlink" and args[:1] in (["-f"], ["-e"], ["-m"]):
            name, args = "realpath", args[1:]
        args = [a for a in args if not (name == "realpath" and a in ("-s", "-e", "-m", "-q"))]
        if not args or (name != "basename" and len(args) != 1) or len(args) > 2:
            return None
        w = args[0]
        if not isinstance(w, Word) or w.unresolved or w.unknown or not w.text:
            return None
        # `./"$(dirname $0)"`: a `./` before the script's folder is that folder still
        lead = 0
        while lead < len(w.segs) - 1 and not w.segs[lead].anchored and w.segs[lead].text in ("./", ".", ""):
            lead += 1
        anchored = bool(w.segs and w.segs[lead].anchored)
        path = "".join(x.text for x in w.segs[lead:]) if anchored else w.text
        if name == "dirname":
            out = _parent(path) if anchored else _dirname(path)
        elif name == "realpath":
            if not (anchored or path.startswith("/")):
                return None  # relative to the working directory: not known
            out = posixpath.normpath(path)
        elif name == "basename" and not anchored:  # the script's own name differs between sides: as written
            suffix = args[1].text if len(args) == 2 and isinstance(args[1], Word) else ""
            out = _basename(path, suffix)
        else:
            return None
        return Seg(out, self.line_of(node), w.via, (), quoted, anchored=anchored)

    def field_command(self, node, quoted: bool) -> Seg | None:
        """`$(echo WORDS | cut -d C -f N)` on known words: field N of the line echo prints (its
        words joined by single blanks), split at the one character C (a tab by default), as
        coreutils computes it. None for anything else: the command is never run."""
        kids = [c for c in node.children if c.is_named and c.type != "comment"]
        if len(kids) != 1 or kids[0].type != "pipeline":
            return None
        cmds = [c for c in kids[0].children if c.is_named]
        if len(cmds) != 2 or any(c.type != "command" for c in cmds):
            return None
        names = [self.t(c.child_by_field_name("name")) if c.child_by_field_name("name") is not None else ""
                 for c in cmds]
        if names != ["echo", "cut"]:
            return None
        words = [w for c in cmds[0].children if c.type != "command_name" and c.is_named for w in self.words(c)]
        if any(w.unresolved or w.unknown for w in words) or (words and words[0].text.startswith("-")):
            return None  # echo -n / -e: not read
        opts = []  # cut's options are literals: read as written, a quoted blank included (-d' ')
        for c in cmds[1].children:
            if c.type == "command_name" or not c.is_named:
                continue
            raw = self.t(c)
            if "$" in raw or "`" in raw:
                return None
            for q in ("'", '"'):
                raw = raw.replace(q, "")
            opts.append(raw)
        delim, field = "\t", None
        i = 0
        while i < len(opts):
            o = opts[i]
            if o in ("-d", "-f") and i + 1 < len(opts):
                o, i = o + opts[i + 1], i + 1
            if o.startswith("-d"):
                delim = o[2:]
            elif o.startswith("-f") and o[2:].isdigit():
                field = int(o[2:])
            else:
                return None
            i += 1
        if field is None or field < 1 or len(delim) != 1:
            return None
        line = " ".join(w.text for w in words)
        parts = line.split(delim)
        out = parts[field - 1] if len(parts) > 1 and field <= len(parts) else (line if len(parts) == 1 else "")
        via = tuple(dict.fromkeys(v for w in words for v in w.via))
        return Seg(out, self.line_of(node), via, (), quoted)

    def _unguarded(self, node):
        """`cd P || exit` (or `|| return`, `|| exit 1`): the command, whose failure only ends the
        script; any other node as it is."""
        if node.type != "list":
            return node
        kids = [c for c in node.children if c.is_named]
        ops = [c.type for c in node.children if not c.is_named]
        if ops == ["||"] and len(kids) == 2 and kids[1].type == "command":
            name = kids[1].child_by_field_name("name")
            if name is not None and self.t(name) in ("exit", "return"):
                return kids[0]
        return node

    def _path_argv(self, cmd) -> list | None:
        """A command of `path_command` as [name, word, ...]; `"$0"` (or `${BASH_SOURCE[0]}` in the
        script itself) as the script's anchored path; None for any other shape."""
        name = cmd.child_by_field_name("name")
        if name is None or any(c.type in ("variable_assignment", "file_redirect", "herestring_redirect")
                               for c in cmd.children):
            return None
        out: list = [self.t(name)]
        for c in cmd.children:
            if not c.is_named or c.type == "command_name":
                continue
            raw = self.t(c).strip('"')
            if raw in ("$0", "${0}") or (raw in ("$BASH_SOURCE", "${BASH_SOURCE}", "${BASH_SOURCE[0]}")
                                         and not self.base and "BASH_SOURCE" not in self.vars):
                if not self.script:
                    return None
                out.append(Word([Seg(self.script, self.line_of(c), (), (), True, anchored=True)]))
                continue
            ws = self.words(c)
            if len(ws) != 1:
                return None
            out.append(ws[0].text if ws[0].text.startswith("-") else ws[0])  # an option as its text
        return out

    def device_count(self, node, quoted: bool) -> Seg | None:
        """`$(nvidia-smi --list-gpus | wc -l)`, `$(ls /dev/davinci* | grep -v davinci_manager | wc -l)`,
        `$(echo "$ASCEND_RT_VISIBLE_DEVICES" | tr ',' '\\n' | wc -l)`: the devices the run sees,
        one value on both devices (rules/devices.yaml `devices.counts`), else None. Never run."""
        t = _counts()
        cmds = [c for c in node.children if c.is_named and c.type != "comment"]
        pipe = self.counted_pipeline(cmds[0]) if len(cmds) == 1 else None
        if not t or pipe is None:
            return None
        stages = [c for c in pipe.children if c.is_named]
        if len(stages) < 2 or any(c.type != "command" for c in stages):
            return None
        argv = []
        for c in stages:
            name = c.child_by_field_name("name")
            if name is None or any(k.type in ("variable_assignment", "file_redirect", "herestring_redirect")
                                   for k in c.children):
                return None
            argv.append((self.t(name), [k for k in c.children if k.is_named and k.type != "command_name"]))
        if [argv[-1][0]] + [self.t(k) for k in argv[-1][1]] != list(t["counter"]) \
                or any(a[0] not in t["filters"] for a in argv[1:-1]):
            return None
        head, args = argv[0]
        if head in t["tools"]:
            pass
        elif head in t["listers"]:
            paths = [self.t(k).strip("'\"") for k in args if not self.t(k).startswith("-")]
            if not paths or not all(any(fnmatch.fnmatchcase(p, pat) for pat in t["paths"]) for p in paths):
                return None
        elif head in t["printers"]:
            names = {self.t(v) for k in args for v in _descendants(k) if v.type == "variable_name"}
            if not names or not names <= t["visible"]:
                return None
        else:
            return None
        return Seg(t["shown"], self.line_of(node), (), (t["shown"],), quoted)

    def counted_pipeline(self, node):
        """The pipeline a device count runs: the node itself, or with its errors sent to /dev/null
        (`... | wc -l 2>/dev/null`: what it prints is the same), or followed by a fallback for a
        machine without the tool (`... || echo 0`: where the tool runs, the count is the
        pipeline's). None for any other command."""
        if node.type == "list":
            kids = node.children
            if len(kids) != 3 or kids[1].type != "||" or kids[2].type != "command":
                return None
            name = kids[2].child_by_field_name("name")
            args = [k for k in kids[2].children if k.is_named and k.type != "command_name"]
            if name is None or self.t(name) not in ("echo", "printf") or len(args) != 1 \
                    or not self.t(args[0]).strip("'\"").isdigit():
                return None
            node = kids[0]
        if node.type == "redirected_statement":
            body = None
            for i, r in enumerate(node.children):
                if node.field_name_for_child(i) == "body":
                    body = r
                    continue
                fd = [k for k in r.children if k.type == "file_descriptor"]
                dest = r.child_by_field_name("destination")
                if r.type != "file_redirect" or len(fd) != 1 or self.t(fd[0]) != "2" or dest is None \
                        or self.t(dest) != "/dev/null":
                    return None
            node = body
        return node if node is not None and node.type == "pipeline" else None

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
            w.segs = [sg.moved(via=via if via and not sg.via else sg.via, span=None) for sg in w.segs]
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
            v, via, unresolved, unknown = self.arith_value(node)
            if v is None:
                return [Word([Seg(self.t(node), line, via, unresolved or ("$((...))",), quoted, unknown=unknown)])]
            return [Word([Seg(str(v), line, via, (), quoted)])]
        if t == "command_substitution":
            seg = self.expr(node, quoted) or self.device_count(node, quoted)
            if seg is None:  # $(dirname "$0"), $(cd "$(dirname "$0")/.." && pwd): a path
                seg = self.path_command(node, quoted)
            if seg is None:  # $(echo "$pair" | cut -d' ' -f1): a field of a known text
                seg = self.field_command(node, quoted)
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
