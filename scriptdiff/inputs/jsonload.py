"""JSON, read one way everywhere: bounded nesting, and line numbers where a reader wants them.

Two entry points, both raising JSONError (a ValueError, one line) instead of RecursionError
or a traceback:

- `loads(text_or_bytes, name)`: plain data, parsed by the standard library's C decoder after
  a cheap check of the nesting depth (`budget.DOCUMENT_DEPTH` levels). Every JSON input that is not a
  config goes through it: safetensors headers and shard indexes, data manifests, weights
  fingerprints, name maps, baselines, cache entries, pip lists, direct_url.json files.
- `load_json(text)`: the data and, for every path (a tuple of keys and list indices), the
  line it starts on, as yamlload does for YAML; for config files and snapshots. Small
  documents are read by a line-tracking parser (exact messages: "line 3: expected a quoted
  key"); above `budget.JSON_EAGER` characters the C decoder reads the data and a line is found
  only when a reader asks for it (a 40 MB list is one value: its elements get no lines).

And one way to read a document too large to hold: `Stream(binary_file, limit)` walks it a
member at a time (HF trainer_state.json's log_history, msprobe's dump.json, stack.json and
construct.json), each value decoded by the C decoder from a buffer that holds at most one
value and a chunk of the file.
"""
from __future__ import annotations

import bisect
import io
import json
import re
from typing import Any, Iterator

from .. import budget
from .sources import exception_reason


class JSONError(ValueError):
    """Malformed or hostile JSON: `str(e)` is one line ("line 3: nested too deeply ...");
    `name` is the file when the caller gave one."""

    def __init__(self, msg: str, line: int | None = None, name: str | None = None):
        super().__init__(f"line {line}: {msg}" if line else msg)
        self.line = line
        self.reason = msg
        self.name = name


def too_deep() -> str:
    return f"nested too deeply (> {budget.DOCUMENT_DEPTH} levels)"


# strings are skipped when brackets are counted: the unrolled form keeps the regex linear
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def check_depth(data: str | bytes, limit: int = budget.DOCUMENT_DEPTH, name: str | None = None) -> None:
    """Raise JSONError when brackets nest deeper than `limit`; C speed, no recursion.

    A document with at most `limit` opening brackets cannot be deeper (one count). Else the
    strings are removed, everything but brackets deleted, and innermost pairs peeled off one
    level per pass: a document that still has brackets after `limit` passes, each of which
    removed some, is deeper than `limit`. Mismatched brackets stop the peeling early and are
    left for the decoder to report."""
    if isinstance(data, str):
        if data.count("[") + data.count("{") <= limit:
            return
        data = data.encode("utf-8", "surrogatepass")
    elif data.count(b"[") + data.count(b"{") <= limit:
        return
    s = _STRING.sub(b"", data) if b'"' in data else data
    s = s.translate(None, _NOT_BRACKETS)
    for _ in range(limit):
        if not s:
            return
        peeled = s.replace(b"[]", b"").replace(b"{}", b"")
        if len(peeled) == len(s):
            return  # mismatched: the decoder names the place
        s = peeled
    if s and len(s.replace(b"[]", b"").replace(b"{}", b"")) < len(s):
        raise JSONError(too_deep(), None, name)


def number(v) -> float | None:
    """A JSON value as a float: a number, or a string that spells one; None otherwise (a
    bool is not a number)."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v.strip())
        except ValueError:
            return None
    return None


def _reject_constant(word: str):
    raise ValueError(f"{word} is not JSON")


def loads(data: str | bytes, name: str | None = None, *, strict_constants: bool = False) -> Any:
    """JSON text (str, or UTF-8 bytes) -> data. Raises JSONError (a ValueError) on malformed,
    non-UTF-8 or too deeply nested input, with the line of the problem where there is one.
    `strict_constants` refuses NaN and Infinity, which json.loads accepts and JSON has not."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        try:
            data = bytes(data).decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise JSONError(f"not UTF-8 text (byte {e.start})", None, name) from None
    check_depth(data, budget.DOCUMENT_DEPTH, name)
    try:
        if strict_constants:
            return json.loads(data, parse_constant=_reject_constant)
        return json.loads(data)
    except json.JSONDecodeError as e:
        raise JSONError(e.msg, e.lineno, name) from None
    except RecursionError:  # cannot happen after check_depth; kept as the last guard
        raise JSONError(too_deep(), None, name) from None
    except ValueError as e:  # NaN refused, an integer beyond int_max_str_digits
        text = str(e).splitlines()[0] if str(e) else "invalid JSON"
        raise JSONError(exception_reason(e) if "integer string conversion" in text else text, None, name) from None


_NUM = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")  # one JSON number token


def load_json(text: str) -> tuple[Any, dict[tuple, int]]:
    """JSON -> (data, {path tuple: line}); raises JSONError with the line of the problem.

    Up to budget.JSON_EAGER characters the lines of every path come back in a dict; above it the
    C decoder reads the data and the mapping finds a path's line when asked (`get`, `[]`,
    `in`, `items()`), so a reader pays only for the lines it uses."""
    if len(text) <= budget.JSON_EAGER:
        return _load_eager(text)
    data = loads(text, strict_constants=True)
    return data, LazyLines(text, data)


_WS = " \t\n\r"


class LazyLines:
    """{path: line} of a large JSON document, computed on demand.

    Walking a path scans each container on it only up to the child wanted (the C scanner
    skips the siblings before it) and remembers where it stopped, so asking for every leaf
    of a config costs one pass over its containers, and asking for `("data",)` in
    `{"data": [20 million numbers]}` never looks inside the list. For a key repeated in one
    object the first occurrence's line is given (the value is the last one's, as JSON has it)."""

    def __init__(self, text: str, data: Any):
        self.text = text
        self.data = data
        self._newlines: list[int] | None = None
        self._root: int | None = None
        # container start -> [next position to scan, {key or index: (line position, value position)}, next index]
        self._scan: dict[int, list] = {}
        self._scanner = json.decoder.JSONDecoder().scan_once

    def _line(self, pos: int) -> int:
        if self._newlines is None:
            self._newlines = [m.start() for m in re.finditer("\n", self.text)]
        return bisect.bisect_left(self._newlines, pos) + 1

    def _ws(self, p: int) -> int:
        text, n = self.text, len(self.text)
        while p < n and text[p] in _WS:
            p += 1
        return p

    def _child(self, start: int, step) -> tuple[int, int] | None:
        """(line position, value position) of child `step` of the container at `start`."""
        text = self.text
        state = self._scan.get(start)
        if state is None:
            state = self._scan[start] = [start + 1, {}, 0]
        found = state[1].get(step)
        if found is not None:
            return found
        is_object = text[start] == "{"
        if is_object != isinstance(step, str):
            return None
        p, children, index = state
        while p >= 0:
            p = self._ws(p)
            if p >= len(text) or text[p] in "}]":
                p = -1
                break
            if text[p] == ",":
                p = self._ws(p + 1)
            if is_object:
                key_pos = p
                key, p = json.decoder.scanstring(text, p + 1)
                p = self._ws(p)
                value_pos = self._ws(p + 1)  # past ':'
                here = key
            else:
                key_pos = value_pos = p
                here = index
                index += 1
            children.setdefault(here, (key_pos, value_pos))
            try:
                p = self._scanner(text, value_pos)[1]  # the value's end (the sibling is skipped)
            except StopIteration:  # cannot happen in a document the decoder accepted
                p = -1
            if here == step:
                break
        state[0], state[2] = p, index
        return children.get(step)

    def get(self, path: tuple, default=None):
        if self._root is None:
            self._root = self._ws(0)
        pos = line_pos = self._root
        node = self.data
        for step in path:
            if isinstance(node, dict) and isinstance(step, str) and step in node:
                node = node[step]
            elif isinstance(node, list) and isinstance(step, int) and not isinstance(step, bool) \
                    and 0 <= step < len(node):
                node = node[step]
            else:
                return default
            found = self._child(pos, step)
            if found is None:
                return default
            line_pos, pos = found
        return self._line(line_pos)

    def __getitem__(self, path: tuple) -> int:
        line = self.get(path)
        if line is None:
            raise KeyError(path)
        return line

    def __contains__(self, path) -> bool:
        return isinstance(path, tuple) and self.get(path) is not None

    def setdefault(self, path: tuple, default=None):
        line = self.get(path)
        return default if line is None else line

    def items(self):
        """Every path and its line (a whole walk: for small documents or shallow use)."""
        stack = [((), self.data)]
        while stack:
            path, node = stack.pop()
            line = self.get(path)
            if line is not None:
                yield path, line
            if isinstance(node, dict):
                stack.extend((path + (k,), v) for k, v in reversed(list(node.items())))
            elif isinstance(node, list):
                stack.extend((path + (i,), v) for i, v in reversed(list(enumerate(node))))

    def keys(self):
        return (path for path, _ in self.items())


def spans_json(text: str) -> dict[tuple, tuple[int | None, int, int]]:
    """Where each path of a JSON document is written: path -> (key start or None for a list
    element and the root, value start, value end), character offsets into `text`. For editing
    a config in place (`scriptdiff fix`); raises JSONError as load_json does."""
    out: dict[tuple, tuple[int | None, int, int]] = {}
    _load_eager(text, out)
    return out


def _load_eager(text: str, spans: dict | None = None) -> tuple[Any, dict[tuple, int]]:
    lines: dict[tuple, int] = {}
    n = len(text)
    pos = 0
    newlines = [m.start() for m in re.finditer("\n", text)]

    def line_at(p: int) -> int:
        return bisect.bisect_left(newlines, p) + 1

    def ws(p: int) -> int:
        while p < n and text[p] in _WS:
            p += 1
        return p

    def value(p: int, path: tuple, depth: int, key_at: int | None = None) -> tuple[Any, int]:
        if spans is not None:
            start = ws(p)
            v, end = _value(p, path, depth)
            spans[path] = (key_at, start, end)
            return v, end
        return _value(p, path, depth)

    def _value(p: int, path: tuple, depth: int) -> tuple[Any, int]:
        if depth > budget.DOCUMENT_DEPTH:
            raise JSONError(too_deep(), line_at(p))
        p = ws(p)
        if p >= n:
            raise JSONError("unexpected end of file (truncated?)", line_at(n))
        lines.setdefault(path, line_at(p))
        c = text[p]
        if c == "{":
            out = {}
            p = ws(p + 1)
            if p < n and text[p] == "}":
                return out, p + 1
            while True:
                p = ws(p)
                if p >= n or text[p] != '"':
                    raise JSONError("expected a quoted key", line_at(min(p, n)))
                kline, kat = line_at(p), p
                try:
                    key, p = json.decoder.scanstring(text, p + 1)
                except json.JSONDecodeError as e:
                    raise JSONError(e.msg, kline) from None
                p = ws(p)
                if p >= n or text[p] != ":":
                    raise JSONError("expected ':' after a key", line_at(min(p, n)))
                lines[path + (key,)] = kline
                v, p = value(p + 1, path + (key,), depth + 1, kat)
                lines[path + (key,)] = kline
                out[key] = v
                p = ws(p)
                if p < n and text[p] == ",":
                    p += 1
                    continue
                if p < n and text[p] == "}":
                    return out, p + 1
                raise JSONError("expected ',' or '}'" if p < n else "unexpected end of file (truncated?)",
                                line_at(min(p, n)))
        if c == "[":
            arr = []
            p = ws(p + 1)
            if p < n and text[p] == "]":
                return arr, p + 1
            while True:
                v, p = value(p, path + (len(arr),), depth + 1)
                arr.append(v)
                p = ws(p)
                if p < n and text[p] == ",":
                    p += 1
                    continue
                if p < n and text[p] == "]":
                    return arr, p + 1
                raise JSONError("expected ',' or ']'" if p < n else "unexpected end of file (truncated?)",
                                line_at(min(p, n)))
        if c == '"':
            try:
                return json.decoder.scanstring(text, p + 1)
            except json.JSONDecodeError as e:
                raise JSONError(e.msg, line_at(p)) from None
        for word, val in (("true", True), ("false", False), ("null", None)):
            if text.startswith(word, p):
                return val, p + len(word)
        m = _NUM.match(text, p)
        if m:
            tok = m.group(0)
            return (float(tok) if any(ch in tok for ch in ".eE") else int(tok)), m.end()
        raise JSONError(f"unexpected character {c!r}", line_at(p))

    data, pos = value(0, (), 0)
    pos = ws(pos)
    if pos < n:
        raise JSONError("extra data after the document", line_at(pos))
    return data, lines


# --- streamed documents -------------------------------------------------------------------------

_NUMBER_TAIL = "0123456789.eE+-"
_NOT_WS = re.compile(r"[^ \t\n\r]")  # the next token's first character


class Stream:
    """One JSON document read from a binary file a chunk at a time, its containers walked a
    member at a time; memory follows one member (and a chunk), not the document.

    The caller walks it where it stands: `members()` yields the keys of the object there (the
    top-level object first), and after each key the caller takes its value whole (`value()`),
    walks it (`members()`, `items()`, `each()`, `elements()`), or leaves it (it is then
    skipped: walked, never decoded whole). `items()` and `elements()` give an object's members
    and a list's elements whole (a list of records a chunk's worth at a time); `each()` yields
    a list's indices for the caller to walk each element. `peek()` is the next character.

    Every value is decoded by the C decoder from a buffer that holds at most `limit`
    characters beyond a chunk: a larger value is a JSONError, and so are malformed, non-UTF-8,
    truncated ("the file ends early") and too deeply nested documents, each one line naming
    the character where it happened."""

    def __init__(self, fh, limit: int, chunk: int | None = None):
        self._dec = json.JSONDecoder()
        self._text = io.TextIOWrapper(fh, encoding="utf-8-sig", errors="strict")
        self._limit, self._chunk = limit, chunk or budget.JSON_CHUNK
        self._buf, self._pos, self._eof, self._done = "", 0, False, 0
        self._pending = False  # a key (or index) was yielded whose value nobody took yet
        self._single = -1  # where (in the whole text) elements are read one at a time up to: a run failed there

    def _more(self) -> bool:
        if self._eof:
            return False
        try:
            chunk = self._text.read(self._chunk)
        except UnicodeDecodeError as e:
            raise JSONError(f"not UTF-8 text ({e.reason}) {self.where()}") from None
        self._done += self._pos
        self._buf, self._pos = self._buf[self._pos:] + chunk, 0
        self._eof = not chunk
        return bool(chunk)

    def where(self) -> str:
        return f"at character {self._done + self._pos + 1:,}"

    def peek(self) -> str:
        """The next character that is not white space ("" at the end of the file)."""
        while True:
            m = _NOT_WS.search(self._buf, self._pos)
            if m is not None:
                self._pos = m.start()
                return self._buf[self._pos]
            self._pos = len(self._buf)
            if not self._more():
                return ""

    def _expect(self, chars: str) -> str:
        c = self.peek()
        if not c or c not in chars:
            raise JSONError(f"expected {' or '.join(repr(x) for x in chars)} {self.where()}"
                            + ("" if c else " (the file ends early)"))
        self._pos += 1
        return c

    def value(self) -> Any:
        """The value here, decoded whole."""
        self._pending = False
        self.peek()
        while True:
            try:
                v, end = self._dec.raw_decode(self._buf, self._pos)
            except json.JSONDecodeError as e:
                short = e.msg.startswith("Unterminated string") or e.pos >= len(self._buf) - 1
                at = self._done + e.pos + 1
                if (short or len(self._buf) - e.pos <= 16) and not self._eof:  # a token cut by the chunk's end?
                    if len(self._buf) - self._pos > self._limit:
                        raise JSONError(f"a value of more than {self._limit:,} characters {self.where()}") from None
                    if self._more():
                        continue
                if self._eof and short:  # cut: say where the value it ends in starts
                    raise JSONError(f"the file ends inside the value that starts {self.where()} (cut while it was "
                                    f"written?)") from None
                raise JSONError(f"{e.msg.removesuffix(' at')} at character {at:,}") from None
            except RecursionError:
                raise JSONError(f"{too_deep()} {self.where()}") from None
            except ValueError as e:  # an integer beyond int_max_str_digits
                raise JSONError(f"{exception_reason(e)} ({self.where()})") from None
            if not self._eof and type(v) in (int, float) and not self._buf[end:].strip(_NUMBER_TAIL) \
                    and self._more():  # a number cut by the chunk's end (1.|5e-3): decode it whole
                continue
            self._pos = end
            return v

    def skip(self) -> None:
        """Past the value here, walked (a container is never decoded whole)."""
        self._pending = False
        c = self.peek()
        if c == "{":
            for _k in self.members():
                pass
        elif c == "[":
            for _i in self.each():
                pass
        else:
            self.value()

    def _open(self, c: str) -> bool:
        """Enter the container here (`{` or `[`); False when it is empty (and was left)."""
        self._pending = False
        self._expect(c)
        if self.peek() == ("}" if c == "{" else "]"):
            self._pos += 1
            return False
        return True

    def members(self) -> Iterator[str]:
        """The keys of the object here, one at a time; after each, its value is the caller's
        to take, walk or leave."""
        if not self._open("{"):
            return
        while True:
            self._key()
            self._pending = True
            yield self._last_key
            if self._pending:
                self.skip()
            if self._expect(",}") == "}":
                return

    def _key(self) -> None:
        if self.peek() == '"':  # the common case, without the decoder's dispatch
            try:
                key, end = json.decoder.scanstring(self._buf, self._pos + 1)
            except json.JSONDecodeError:  # cut by the chunk's end, or bad: the whole path says which
                key = self.value()
            else:
                self._pos = end
        else:
            key = self.value()
        if not isinstance(key, str):
            raise JSONError(f"expected a quoted key {self.where()}")
        self._expect(":")
        self._last_key = key

    def each(self) -> Iterator[int]:
        """The indices of the list here, one at a time; after each, its element is the
        caller's to take, walk or leave."""
        if not self._open("["):
            return
        i = 0
        while True:
            self._pending = True
            yield i
            if self._pending:
                self.skip()
            if self._expect(",]") == "]":
                return
            i += 1

    def items(self) -> Iterator[tuple[str, Any]]:
        """The members of the object here, (key, value), each value whole."""
        if not self._open("{"):
            return
        while True:
            self._key()
            yield self._last_key, self.value()
            if self._expect(",}") == "}":
                return

    def elements(self) -> Iterator[Any]:
        """The elements of the list here, each whole (records and strings: a chunk's worth
        decoded at once)."""
        if not self._open("["):
            return
        while True:
            batch = self._records()
            if batch:
                yield from batch
            else:
                yield self.value()
            if self._expect(",]") == "]":
                return

    def _records(self) -> list | None:
        """The list's object (or string) elements whole in the buffer, decoded at once: a slice
        up to an object's end (a string's closing quote) that decodes as the body of a list ends
        where an element does (a cut inside one leaves it unbalanced, or a string open); in the
        buffer that holds the list's end, a body that closes early ends at the list's own "]",
        where the stream is left. None when no whole element is in the buffer; after a slice
        that does not decode, the elements up to its end are read one at a time (one failed
        try per buffer, never one per element)."""
        if self._done + self._pos < self._single:
            return None
        c = self.peek()
        close = "}" if c == "{" else '"' if c == '"' else None
        if close is None:
            return None
        buf, pos = self._buf, self._pos
        cut = buf.rfind(close, pos + 1)
        if close == '"' and buf.count('"', pos, cut + 1) % 2:  # the last quote opens a string cut short
            cut = buf.rfind('"', pos + 1, cut)
        if cut <= pos:
            return None
        body = "[" + buf[pos:cut + 1] + "]"
        try:
            batch, end = self._dec.raw_decode(body)
        except (ValueError, RecursionError):  # value() says why, at its place
            self._single = self._done + cut
            return None
        if not batch:
            return None
        self._pos = cut + 1 if end == len(body) else pos + end - 2  # after the batch, or at "]"
        return batch

    def runs(self, decode, size: int) -> Iterator[tuple[str | None, Any]]:
        """The members of the object here, as items() gives them, with runs of whole members
        offered to `decode` first: `decode(text)` gets an object of several whole members
        ("{...}", at most `size` characters of them) and returns what it made of them, yielded
        as (None, result), or None when it cannot take them all; the members of a run it did
        not take are then yielded one at a time, (key, value), as items() yields them (with
        its errors, at their place in the file). A run is the buffer up to an object's end
        where the brackets balance: a cut inside a member leaves it unbalanced, and a text
        that decodes is whole members (a member cut short does not parse)."""
        if not self._open("{"):
            return
        single = -1  # where (in the whole text) members are read one at a time up to
        while True:
            if self._done + self._pos >= single:
                text, end = self._run(size)
                got = decode(text) if text is not None else None
                if got is not None:
                    self._pos = end
                    yield None, got
                    if self._expect(",}") == "}":
                        return
                    continue
                single = self._done + end  # (one failed try per stretch looked at, never one per member)
            self._key()
            yield self._last_key, self.value()
            if self._expect(",}") == "}":
                return

    def _run(self, size: int) -> tuple[str | None, int]:
        """("{" + whole members from here + "}", where they end in the buffer), or (None, the
        end of the stretch looked at) when no run is there."""
        if not self._eof and len(self._buf) - self._pos < size:
            self._more()  # a run as long as it may be (the buffer keeps what is not read)
        c = self.peek()
        buf, pos = self._buf, self._pos
        stretch = min(len(buf), pos + size)
        if c != '"':
            return None, stretch
        cut = buf.rfind("}", pos, stretch)
        if cut <= pos:
            return None, stretch
        counts = [buf.count(b, pos, cut + 1) for b in "{}[]"]
        while counts[0] != counts[1] or counts[2] != counts[3]:  # cut inside a member: an earlier end
            earlier = buf.rfind("}", pos, cut)
            if earlier <= pos:
                return None, stretch
            counts = [n - buf.count(b, earlier + 1, cut + 1) for n, b in zip(counts, "{}[]")]
            cut = earlier
        return "{" + buf[pos:cut + 1] + "}", cut + 1
