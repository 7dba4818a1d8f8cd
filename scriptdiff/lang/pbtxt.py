"""Protocol Buffers text format configs (`.pbtxt`, `.prototxt`, TensorFlow's object detection
`pipeline.config`): `train_config { batch_size: 8  optimizer { ... } }`.

The format needs the message schema to be read by protobuf itself; scriptdiff has none, so a
small tokenizer and recursive-descent parser read it as a tree: a field is `name: scalar`,
`name { fields }` (or `< >`, the colon optional), or `name: [v, ...]`; a name repeated in one
message is a list. Each scalar leaf is one fact, at the line it is written on, read as a YAML
config key would be (lang/config.py: the vocabulary's spellings, the full dotted path
otherwise), so nothing read is dropped. Comments (`#`) are skipped; a file that does not
parse is one error, not compared.
"""
from __future__ import annotations

from .. import budget
from ..model import Extract, InputError
from .config import empty, facts_for

KIND = "pbtxt"

_PUNCT = set("{}<>:[],;")


class PbtxtError(ValueError):
    """Not protocol buffers text: the message names the line."""


def tokens(text: str) -> list[tuple[str, str, int]]:
    """(kind, text, line) of each token: name, number, string, punct."""
    out: list[tuple[str, str, int]] = []
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c in " \t\r\f\v":
            i += 1
        elif c == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in _PUNCT:
            out.append(("punct", c, line))
            i += 1
        elif c in "'\"":
            j, buf = i + 1, []
            while j < n and text[j] != c:
                if text[j] == "\n":
                    raise PbtxtError(f"line {line}: string not closed")
                if text[j] == "\\" and j + 1 < n:
                    buf.append({"n": "\n", "t": "\t"}.get(text[j + 1], text[j + 1]))
                    j += 2
                    continue
                buf.append(text[j])
                j += 1
            if j >= n:
                raise PbtxtError(f"line {line}: string not closed")
            out.append(("string", "".join(buf), line))
            i = j + 1
        elif c.isalnum() or c in "_-+.":
            j = i
            while j < n and (text[j].isalnum() or text[j] in "_-+./"):
                j += 1
            word = text[i:j]
            out.append(("number" if _number(word) is not None else "name", word, line))
            i = j
        else:
            raise PbtxtError(f"line {line}: unexpected character {c!r}")
        if len(out) > budget.PBTXT_TOKENS:
            raise PbtxtError(f"more than {budget.PBTXT_TOKENS} tokens")
    return out


def _number(word: str):
    w = word.lower().lstrip("+-")
    try:
        if w.startswith("0x"):
            return int(word, 16)
        return int(word) if w.isdigit() else float(word)
    except ValueError:
        return None


def _scalar(kind: str, word: str):
    if kind == "string":
        return word
    if kind == "number":
        return _number(word)
    low = word.lower()
    if low in ("true", "t"):
        return True
    if low in ("false", "f"):
        return False
    return word  # an enum value: its name


class _Parser:
    def __init__(self, toks: list):
        self.toks = toks
        self.i = 0
        self.lines: dict[tuple, int] = {}

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self):
        t = self.peek()
        if t is None:
            raise PbtxtError("unexpected end of file")
        self.i += 1
        return t

    def message(self, path: tuple, close: str | None, depth: int) -> dict:
        if depth > budget.DOCUMENT_DEPTH:
            raise PbtxtError(f"nested deeper than {budget.DOCUMENT_DEPTH} messages")
        out: dict = {}
        while True:
            t = self.peek()
            if t is None:
                if close is not None:
                    raise PbtxtError(f"a message is not closed with {close!r}")
                return out
            if t[0] == "punct" and t[1] == close:
                self.i += 1
                return out
            if t[0] == "punct" and t[1] in ",;":
                self.i += 1
                continue
            kind, name, line = self.take()
            if kind != "name":
                raise PbtxtError(f"line {line}: a field name was expected, not {name!r}")
            if name.startswith("[") or "/" in name:
                raise PbtxtError(f"line {line}: extension and Any fields are not read")
            count = len(out[name]) if isinstance(out.get(name), list) else (1 if name in out else 0)
            here = path + (name,) + ((count,) if count else ())
            sep = self.peek()
            if sep is not None and sep[0] == "punct" and sep[1] == ":":
                self.i += 1
                sep = self.peek()
            if sep is None:
                raise PbtxtError(f"line {line}: field {name} has no value")
            if sep[0] == "punct" and sep[1] in "{<":
                self.i += 1
                value = self.message(here, "}" if sep[1] == "{" else ">", depth + 1)
            elif sep[0] == "punct" and sep[1] == "[":
                self.i += 1
                value = self.values(here, line)
            elif sep[0] == "punct":
                raise PbtxtError(f"line {sep[2]}: a value was expected for {name}, not {sep[1]!r}")
            else:
                self.i += 1
                value = _scalar(sep[0], sep[1])
                self.lines[here] = sep[2]
                while self.peek() is not None and self.peek()[0] == "string" and sep[0] == "string":
                    value += self.take()[1]  # adjacent strings are one
            self.lines.setdefault(here, line)
            if name in out:
                if not isinstance(out[name], list) or not getattr(out[name], "repeated", False):
                    out[name] = _Repeated([out[name]])
                out[name].append(value)
            else:
                out[name] = value

    def values(self, path: tuple, line: int) -> list:
        out = []
        while True:
            t = self.take()
            if t[0] == "punct" and t[1] == "]":
                return out
            if t[0] == "punct" and t[1] == ",":
                continue
            if t[0] == "punct" and t[1] in "{<":
                out.append(self.message(path + (len(out),), "}" if t[1] == "{" else ">", 1))
            elif t[0] == "punct":
                raise PbtxtError(f"line {t[2]}: a list value was expected, not {t[1]!r}")
            else:
                out.append(_scalar(t[0], t[1]))
            self.lines.setdefault(path + (len(out) - 1,), t[2])


class _Repeated(list):
    """A field written more than once in one message."""
    repeated = True


def parse(text: str) -> tuple[dict, dict[tuple, int]]:
    """The tree of a protobuf text document and the line of each path (a repeated field's
    second and later values have their index after the name)."""
    p = _Parser(tokens(text))
    return p.message((), None, 0), p.lines


def _leaves(value, path: tuple = ()):
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, _Repeated):
                for i, x in enumerate(v):
                    yield from _leaves(x, path + (k,) + ((i,) if i else ()))
            else:
                yield from _leaves(v, path + (k,))
    elif isinstance(value, list) and any(isinstance(x, dict) for x in value):
        for i, x in enumerate(value):
            yield from _leaves(x, path + (i,))
    else:
        yield path, value


def _line_of(lines: dict, path: tuple) -> int | None:
    """The line of a leaf: its own, else that of the nearest message holding it."""
    for k in range(len(path), 0, -1):
        if path[:k] in lines:
            return lines[path[:k]]
    return None


def extract(src, ctx) -> Extract:
    ex = empty(src)
    if ex is not None:
        return ex
    ex = Extract()
    text = src.text
    try:
        data, lines = parse(text)
    except PbtxtError as e:
        ex.errors.append(InputError(src.name, f"not valid protobuf text: {e}; not compared", fatal=True))
        return ex
    src_lines = text.splitlines()
    for path, value in _leaves(data):
        if not path:
            continue
        line = _line_of(lines, path)
        facts = facts_for(path, value, "hf", src, line, src_lines, ex)
        for f in facts:
            f.meta["cpath"] = list(path)
        ex.facts.extend(facts)
    ex.understood = True
    return ex


def looks_like_pbtxt(head: str, basename: str) -> bool:
    """A `.config` that is protocol buffers text: its start parses as messages and fields (the
    last, cut-off field aside) with at least one message block."""
    cut = head.rfind("\n")
    part = head if cut < 0 or len(head) < budget.KIND_SNIFF else head[:cut]  # a cut-off last line left out
    try:
        toks = tokens(part)
    except PbtxtError:
        return False
    if not any(t == ("punct", "{", t[2]) for t in toks):
        return False
    depth = 0
    for t in toks:  # keep the blocks closed so far: a cut-off head is fine
        if t[0] == "punct" and t[1] == "{":
            depth += 1
        elif t[0] == "punct" and t[1] == "}":
            depth -= 1
    try:
        _Parser(toks + [("punct", "}", 0)] * max(depth, 0)).message((), None, 0)
    except PbtxtError:
        return False
    return True
