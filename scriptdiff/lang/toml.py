"""TOML configs: a torchtitan-style training TOML and the [tool.*] tables of pyproject.toml.

Values come from the standard library's TOML parser (tomllib; tomli on Python 3.10), which
keeps no positions, so `line_map` walks the file's line structure once (table headers,
arrays of tables, `key = value` lines, multi-line strings and arrays) to give each dotted
path the line it was written on. Each leaf becomes a fact: a path that a framework dialect
of rules/toml.yaml maps (torchtitan `optimizer.lr` -> `lr`) under its canonical key (its `via`
naming the path and the dialect), any other
path exactly as a YAML config key would be (lang/config.py), so nothing read is dropped.
"""
from __future__ import annotations

import fnmatch

from ..inputs.jsonload import JSONError, check_depth
from ..model import RANK_CONFIG, Extract, Fact, InputError
from ..ruleset.registry import dialects_for
from ..run.suppress import comment_of
from ..ruleset.vocabulary import convert
from .config import dotted, empty, facts_for, leaves

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

KIND = "toml"


def extract(src, ctx) -> Extract:
    ex = empty(src)
    if ex is not None:
        return ex
    ex = Extract()
    text = src.text
    try:
        check_depth(text)  # tomllib recurses: deep arrays or inline tables are refused first
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, JSONError) as e:
        ex.errors.append(InputError(src.name, f"not valid TOML: {str(e).splitlines()[0]}; not compared", fatal=True))
        return ex
    lines = line_map(text)
    src_lines = text.splitlines()
    dialects = list(dialects_for(KIND).values())
    for path, value in leaves(data):
        if not path:
            continue
        line = lines.get(path) or lines.get(path[:-1])
        facts = _facts(path, value, dialects, src, line, src_lines, ex)
        for f in facts:  # where it is written in this file (`scriptdiff fix` edits it there)
            f.meta["cpath"] = list(path)
        ex.facts.extend(facts)
    return ex


def _facts(path: tuple, value, dialects: list[dict], src, line, src_lines, ex) -> list[Fact]:
    dp = dotted(path)
    for d in dialects:
        if any(dp.startswith(p) for p in d.get("skip") or []):
            return []
    for d in dialects:
        pattern = d.get("strip_prefix")
        if pattern and len(path) > 2 and fnmatch.fnmatchcase(f"{path[0]}.{path[1]}.", pattern):
            path = path[2:]
            dp = dotted(path)
            break
    for d in dialects:
        key = (d.get("paths") or {}).get(dp)
        if key is None:
            continue
        conv = convert(key, value)
        if conv is None:
            return []
        source = src_lines[line - 1].strip() if line and 0 < line <= len(src_lines) else ""
        return [Fact(key=conv[0], value=conv[1], path=src.name, line=line, source=source, rank=RANK_CONFIG,
                     via=f"{dp}, {d['title']}" if d.get("title") else (dp if conv[0] != dp else None),
                     meta={"dialect": d["title"]} if d.get("title") else {})]
    return facts_for(path, value, "hf", src, line, src_lines, ex)


# --- positions ---------------------------------------------------------------------------------

def line_map(text: str) -> dict[tuple, int]:
    """Dotted path (as a tuple; array-of-tables elements by index) -> the line it is set on."""
    out: dict[tuple, int] = {}
    table: tuple = ()
    arrays: dict[tuple, int] = {}
    pending = None  # an open multi-line string delimiter, or None
    depth = 0  # open [ and { of a multi-line value
    for no, raw in enumerate(text.splitlines(), 1):
        if pending is not None or depth > 0:
            pending, depth = _scan_value(raw, pending, depth)
            continue
        s = raw.strip()
        if not s or s.startswith("#"):
            continue
        if s.startswith("[["):
            name = _keys(s[2:s.find("]]")] if "]]" in s else s[2:])
            arrays[name] = arrays.get(name, -1) + 1
            table = name + (arrays[name],)
            out.setdefault(name, no)
            out[table] = no
            continue
        if s.startswith("["):
            table = _keys(s[1:_close(s)])
            out.setdefault(table, no)
            continue
        eq = _equals(s)
        if eq < 0:
            continue
        out[table + _keys(s[:eq])] = no
        pending, depth = _scan_value(s[eq + 1:], None, 0)
    return out


def value_spans(text: str) -> dict[tuple, dict]:
    """Where each `key = value` of a TOML file is written, for editing it in place (`scriptdiff
    fix`): dotted path -> {"key": (start, end) of the key, "value": (start, end) of a value
    written on one line (None for a multi-line one), "line": (start, end) of its whole line(s)
    with the newline, "table": the table it is in}, character offsets into `text`; and each
    table's path -> {"table": its path, "end": where its last entry's line ends}. The same
    walk over the line structure as `line_map`."""
    out: dict[tuple, dict] = {}
    table: tuple = ()
    arrays: dict[tuple, int] = {}
    pending, depth = None, 0
    open_entry: dict | None = None
    out[()] = {"table": (), "end": 0}
    pos = 0
    for raw in text.splitlines(keepends=True):
        start, pos = pos, pos + len(raw)
        body = raw.rstrip("\r\n")
        if pending is not None or depth > 0:
            pending, depth = _scan_value(body, pending, depth)
            if open_entry is not None:
                open_entry["line"] = (open_entry["line"][0], pos)
                out[open_entry["table"]]["end"] = pos
            continue
        open_entry = None
        s = body.strip()
        if not s or s.startswith("#"):
            continue
        indent = len(body) - len(body.lstrip())
        if s.startswith("[["):
            name = _keys(s[2:s.find("]]")] if "]]" in s else s[2:])
            arrays[name] = arrays.get(name, -1) + 1
            table = name + (arrays[name],)
            out[table] = {"table": table, "end": pos}
            continue
        if s.startswith("["):
            table = _keys(s[1:_close(s)])
            out.setdefault(table, {"table": table, "end": pos})
            continue
        eq = _equals(s)
        if eq < 0:
            continue
        key = table + _keys(s[:eq])
        rest = s[eq + 1:]
        vs = start + indent + eq + 1 + (len(rest) - len(rest.lstrip()))
        pending, depth = _scan_value(rest, None, 0)
        value = None
        if pending is None and depth == 0:
            ve = vs + len(_value_text(rest.lstrip()))
            value = (vs, ve)
        entry = {"key": (start + indent, start + indent + len(s[:eq].rstrip())), "value": value,
                 "line": (start, pos), "table": table}
        out[key] = entry
        out.setdefault(table, {"table": table, "end": pos})["end"] = pos
        if value is None:
            open_entry = entry
    return out


def _value_text(s: str) -> str:
    """A one-line TOML value without its trailing comment and spaces."""
    comment = comment_of(s)
    return (s[:len(s) - len(comment)] if comment else s).rstrip()


def _outside_quotes(s: str, char: str, start: int = 0) -> int:
    """Index of the first `char` not inside a quoted key, or -1."""
    quote = None
    for i in range(start, len(s)):
        c = s[i]
        if quote:
            quote = None if c == quote else quote
        elif c in "\"'":
            quote = c
        elif c == char:
            return i
    return -1


def _close(s: str) -> int:
    """Index of the `]` that ends a table header (quoted keys may hold brackets)."""
    i = _outside_quotes(s, "]", 1)
    return len(s) if i < 0 else i


def _equals(s: str) -> int:
    """Index of the `=` after a (possibly quoted, dotted) key, or -1."""
    return _outside_quotes(s, "=")


def _keys(s: str) -> tuple:
    """`a."b.c".d` -> ("a", "b.c", "d")."""
    parts, cur, quote = [], "", None
    for c in s:
        if quote:
            if c == quote:
                quote = None
            else:
                cur += c
        elif c in "\"'":
            quote = c
        elif c == ".":
            parts.append(cur.strip())
            cur = ""
        else:
            cur += c
    parts.append(cur.strip())
    return tuple(p for p in parts if p != "" or len(parts) == 1)


def _scan_value(s: str, pending: str | None, depth: int) -> tuple[str | None, int]:
    """Follow a value over one line: (open multi-line string delimiter, open bracket depth)."""
    i = 0
    while i < len(s):
        if pending is not None:
            j = s.find(pending, i)
            if j < 0:
                return pending, depth
            i, pending = j + 3, None
            continue
        c = s[i]
        if s.startswith('"""', i) or s.startswith("'''", i):
            pending, i = s[i:i + 3], i + 3
            continue
        if c in "\"'":
            j = i + 1
            while j < len(s) and s[j] != c:
                j += 2 if (c == '"' and s[j] == "\\") else 1
            i = j + 1
            continue
        if c == "#":
            break
        if c in "[{":
            depth += 1
        elif c in "]}":
            depth = max(0, depth - 1)
        i += 1
    return pending, depth
