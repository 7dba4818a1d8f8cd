"""JSON with line numbers: the loader every JSON reader shares (configs, snapshots).

A small line-tracking parser (the standard library's string decoder for string tokens)
that returns the data and, for every path, the line it starts on, as yamlload does for
YAML; malformed input raises JSONError naming the line.
"""
from __future__ import annotations

import json
import re
from typing import Any


class JSONError(Exception):
    def __init__(self, msg: str, line: int):
        super().__init__(f"line {line}: {msg}")
        self.line = line


_NUM = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")  # one JSON number token
_WS = " \t\n\r"


def load_json(text: str) -> tuple[Any, dict[tuple, int]]:
    """JSON -> (data, {path tuple: line}); raises JSONError with the line of the problem."""
    lines: dict[tuple, int] = {}
    n = len(text)
    pos = 0
    newlines = [i for i, c in enumerate(text) if c == "\n"]

    def line_at(p: int) -> int:
        import bisect

        return bisect.bisect_left(newlines, p) + 1

    def ws(p: int) -> int:
        while p < n and text[p] in _WS:
            p += 1
        return p

    def value(p: int, path: tuple, depth: int) -> tuple[Any, int]:
        if depth > 200:
            raise JSONError("nested too deeply", line_at(p))
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
                kline = line_at(p)
                try:
                    key, p = json.decoder.scanstring(text, p + 1)
                except json.JSONDecodeError as e:
                    raise JSONError(e.msg, kline) from None
                p = ws(p)
                if p >= n or text[p] != ":":
                    raise JSONError("expected ':' after a key", line_at(min(p, n)))
                lines[path + (key,)] = kline
                v, p = value(p + 1, path + (key,), depth + 1)
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
