"""What the shell builtins that set variables compute, without running anything.

`printf -v NAME FORMAT ARGS...`, `read NAME... <<< WORD`, `set -- ARGS...`, `shift`, `let`,
`(( ))` and the loops (`for`, `while`, `until`, a C-style `for`) set variables the launch
line then uses. The evaluator (evaluator.py) asks this module what they compute when every
input is known: the text `printf` formats, the fields `read` splits a line into, the names
a loop assigns. What cannot be computed is never guessed: the variable is then *unknown*
(words.Seg.unknown), and a setting made from it is not compared (the input's account says
which, and why).
"""
from __future__ import annotations

import re

# one conversion of a printf format: flags, width, precision, the conversion letter
_CONV = re.compile(r"%([-+ #0]*)(\d*)(?:\.(\d*))?([diouxXeEfFgGsc%])")
_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'", "a": "\a", "r": "\r"}


def printf(fmt: str, args: list[str]) -> str | None:
    """`printf FORMAT ARGS...` as bash formats it (the format reused while arguments remain),
    or None when it holds what is not computed here (`%b`, `%q`, `*` widths, octal escapes,
    a number conversion of a word that is no number)."""
    if "%b" in fmt or "%q" in fmt or "*" in fmt:
        return None
    text = _unescape(fmt)
    if text is None:
        return None
    convs = [m for m in _CONV.finditer(text) if m.group(4) != "%"]
    out = []
    rest = list(args)
    while True:
        piece = _one_round(text, rest)
        if piece is None:
            return None
        out.append(piece[0])
        rest = piece[1]
        if not rest or not convs:
            break
    return "".join(out)


def _one_round(text: str, args: list[str]) -> tuple[str, list[str]] | None:
    out, pos = [], 0
    for m in _CONV.finditer(text):
        out.append(text[pos:m.start()])
        pos = m.end()
        flags, width, prec, conv = m.groups()
        if conv == "%":
            out.append("%")
            continue
        arg = args.pop(0) if args else None
        spec = "%" + flags + width + (f".{prec}" if prec is not None else "")
        try:
            if conv in "sc":
                value = "" if arg is None else arg
                out.append((spec + "s") % (value[:1] if conv == "c" else value))
            elif conv in "diouxX":
                n = _integer(arg)
                if n is None:
                    return None
                out.append((spec + ("d" if conv in "iu" else conv)) % n)
            else:
                x = _float(arg)
                if x is None:
                    return None
                out.append((spec + conv) % x)
        except (TypeError, ValueError, OverflowError):
            return None
    out.append(text[pos:])
    return "".join(out), args


def _integer(arg: str | None) -> int | None:
    if arg is None or arg == "":
        return 0
    a = arg.strip()
    try:
        if a[:1] in ("'", '"') and len(a) >= 2:  # printf %d "'A": the character's code
            return ord(a[1])
        return int(a, 16) if a.lower().startswith(("0x", "-0x")) else int(a, 8) if a.startswith("0") and len(a) > 1 \
            else int(a)
    except ValueError:
        return None


def _float(arg: str | None) -> float | None:
    if arg is None or arg == "":
        return 0.0
    try:
        return float(arg.strip())
    except ValueError:
        return None


def _unescape(fmt: str) -> str | None:
    """The format's backslash escapes (`\\n`, `\\t`, `\\\\`): None for one not computed here."""
    out, i = [], 0
    while i < len(fmt):
        ch = fmt[i]
        if ch == "\\" and i + 1 < len(fmt):
            nxt = fmt[i + 1]
            if nxt not in _ESCAPES:
                return None
            out.append(_ESCAPES[nxt])
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def array_fields(line: str, ifs: str = " \t\n", raw: bool = True) -> list[str]:
    """The elements `read -a ARR` gives ARR from one input line (IFS splitting, empty fields of
    IFS whitespace dropped)."""
    line = line.split("\n", 1)[0]
    if not raw:
        line = re.sub(r"\\(.)", r"\1", line).rstrip("\\")
    white = "".join(c for c in ifs if c in " \t\n")
    other = "".join(c for c in ifs if c not in " \t\n")
    if not other:
        return line.split() if white else [line]
    pieces = re.split("[" + re.escape(other) + "]", line.strip(white) if white else line)
    return [p.strip(white) if white else p for p in pieces]


def read_fields(line: str, count: int, ifs: str = " \t\n", raw: bool = True, delim: str = "\n") -> list[str]:
    """The values `read N1 ... Nk` gives its `count` names from one input line, as bash splits
    it: IFS whitespace trimmed, one field per name, the last name gets the rest of the line
    (its trailing IFS whitespace trimmed); without `-r` a backslash escapes the next character
    and a backslash before a newline joins the lines. The line ends at `delim` (`-d X`; `-d ''`
    reads up to a NUL: all of a here-document)."""
    if not raw:
        line = line.replace("\\\n", "")
    line = line.split(delim or "\0", 1)[0]
    if not raw:
        line = re.sub(r"\\(.)", r"\1", line).rstrip("\\")
    white = "".join(c for c in ifs if c in " \t\n")
    other = [c for c in ifs if c not in " \t\n"]
    line = line.strip(white) if white else line
    fields: list[str] = []
    pos = 0
    while len(fields) < count - 1 and pos <= len(line):
        j = pos
        while j < len(line) and line[j] not in ifs:
            j += 1
        if j >= len(line):
            break
        fields.append(line[pos:j])
        pos = j + 1
        if white:  # whitespace around a separator belongs to it
            while pos < len(line) and line[pos] in white:
                pos += 1
            if line[j] in white and pos < len(line) and line[pos] in other:
                pos += 1
                while pos < len(line) and line[pos] in white:
                    pos += 1
    rest = line[pos:] if pos <= len(line) else ""
    if rest or len(fields) < count:
        fields.append(rest.rstrip(white) if white else rest)
    while len(fields) < count:
        fields.append("")
    return fields[:count]


# commands whose words name variables they set: the option that names one, or the operands
_SETTERS = {"read": None, "mapfile": None, "readarray": None, "getopts": 1, "printf": "v", "let": None}


def assigned(node, text) -> set[str]:
    """The names a statement (a loop's condition and body) may set, written anywhere in it:
    assignments, `read`, `printf -v`, `mapfile`, `getopts`, `let`, `(( x = ... ))`, `x++`, a
    nested loop's variable. `text(node)` is the node's source text."""
    out: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        t = n.type
        if t == "variable_assignment":
            nm = n.child_by_field_name("name")
            if nm is not None:
                out.add(text(nm).split("[", 1)[0])
        elif t == "for_statement":
            var = n.child_by_field_name("variable")
            if var is not None:
                out.add(text(var))
        elif t == "binary_expression":
            op = n.child_by_field_name("operator")
            left = n.child_by_field_name("left")
            opt = text(op) if op is not None else (text(n.children[1]) if n.child_count > 1 else "")
            if left is not None and opt.endswith("=") and opt not in ("==", "!=", "<=", ">="):
                out.add(text(left).lstrip("$"))
        elif t in ("postfix_expression", "unary_expression") and n.child_count == 2:
            ops = {text(c) for c in n.children}
            if ops & {"++", "--"}:
                out.update(text(c).lstrip("$") for c in n.children if text(c) not in ("++", "--"))
        elif t == "command":
            name = n.child_by_field_name("name")
            cmd = text(name) if name is not None else ""
            if cmd in _SETTERS:
                words = [text(c) for c in n.children if c.is_named and c.type != "command_name"
                         and c.type not in ("herestring_redirect", "file_redirect", "variable_assignment")]
                out.update(set_by(cmd, words))
        stack.extend(n.children)
    return {x for x in out if re.fullmatch(r"[A-Za-z_]\w*", x)}


# options of `read` and `mapfile` that take a value (the value is no name)
_READ_VALUED = frozenset(("-d", "-p", "-n", "-N", "-t", "-u", "-i"))
_MAPFILE_VALUED = frozenset(("-d", "-n", "-O", "-s", "-u", "-C", "-c"))


def read_names(words: list[str]) -> tuple[list[str], str | None, set[str]]:
    """`read`'s operands: (the names, the array `-a` names or None, the other options given)."""
    names, array, opts, i = [], None, set(), 0
    while i < len(words):
        w = words[i]
        if w == "-a" and i + 1 < len(words):
            array, i = words[i + 1], i + 2
            continue
        if w.startswith("-") and len(w) > 1 and not names:
            opts.add(w)
            i += 2 if w in _READ_VALUED else 1
            continue
        names.append(w)
        i += 1
    return names, array, opts


def set_by(cmd: str, words: list[str]) -> list[str]:
    """The names command `cmd` (`printf -v`, `getopts`, `let`, `read`, `mapfile`) sets, from its operands."""
    if cmd == "printf":
        return [words[i + 1] for i, w in enumerate(words[:-1]) if w == "-v"]
    if cmd == "getopts":
        return words[1:2]
    if cmd == "let":
        return [w.strip("'\"").split("=", 1)[0].rstrip("+-*/%<>&|^").strip() for w in words if "=" in w]
    if cmd == "read":
        names, array, _opts = read_names(words)
        return names + ([array] if array else []) or ["REPLY"]
    operands, i = [], 0  # mapfile / readarray [options] [ARRAY]
    while i < len(words):
        if words[i] in _MAPFILE_VALUED:
            i += 2
            continue
        if not words[i].startswith("-"):
            operands.append(words[i])
        i += 1
    return operands[-1:] or ["MAPFILE"]
