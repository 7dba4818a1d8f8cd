"""What every writer does to file-derived text before it is shown: one place for both.

- `safe(text)`: control characters (the ESC that starts a terminal sequence, BEL, backspace,
  C1 controls such as 0x9b and U+0085, newline and carriage return, the Unicode line and
  paragraph separators U+2028/U+2029, bidirectional overrides and marks) become visible
  escapes (`\\x1b`, `\\n`, `\\u2028`), so a comment, a value or a file name in a scanned
  input cannot retitle or clear the terminal, recolour the report, reorder what is shown or
  start a line of its own (a forged `::error` workflow command, a forged report line). Tabs
  stay. A byte of a file name that is not UTF-8 (held as a surrogate escape, U+DC80-U+DCFF)
  is shown as `\\xNN`, its byte. Used by every writer on each piece of text taken from the
  inputs (a writer adds its own line breaks around them), by the hparams table, and by the
  commands' plain `scriptdiff: path: message` lines.
- `shown(value)` and `clip(text)`: a long value shows its head and "… (N more items)" or
  "… (N more characters)"; lists are cut before they are turned into text, so a
  20-million-element value costs its first items, not 60 MB of string.
- `json_side(side_dict)`, `json_text(doc)`: the same limits for the JSON formats, with a
  marker field next to what was cut (`"value_truncated": {"total_items": N}`), C1,
  bidirectional and line-separator controls written as \\u escapes (json already escapes C0
  controls), and a file name's non-UTF-8 byte written as the text `\\xNN` (as `safe` shows
  it), so that the document is valid UTF-8 JSON.
- `html_text(s)`, `md_cell(s)`, `md_code(s)`: the same text made safe for a static part of an
  html page, a markdown cell and a markdown code span.

`full=True` (the commands' `--full-values`) turns the cutting off; the escaping stays.
This module imports only the bounds (budget.py) at import time: the CLI uses `safe` on its
error lines without loading the rule packs (`error_line`, for an input's error, loads them
to withhold secrets).
"""
from __future__ import annotations

import html
import json
import re
from typing import Any

from .. import budget


# C0 controls but tab, DEL, C1 controls, the line and paragraph separators, bidirectional
# marks, embeddings, overrides and isolates; surrogates (a file name's bytes that are not UTF-8)
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e"
                      "\u2066-\u2069\ud800-\udfff]")
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_NAMED = {0x0a: "\\n", 0x0d: "\\r"}


def _escape(m: re.Match) -> str:
    c = ord(m.group())
    if c in _NAMED:
        return _NAMED[c]
    if 0xdc80 <= c <= 0xdcff:  # a byte that was not UTF-8 (surrogateescape): the byte itself
        return f"\\x{c - 0xdc00:02x}"
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def _json_escape(m: re.Match) -> str:
    c = ord(m.group())
    if 0xd800 <= c <= 0xdfff:  # never a lone surrogate in the JSON text: the text `\xNN` (json-escaped)
        return "\\" + _escape(m)
    return f"\\u{c:04x}"


def safe(text: Any) -> str:
    """`text` with every control character but tab shown as an escape (newlines too: one
    piece of text taken from an input never starts a line of its own)."""
    s = "" if text is None else str(text)
    return _CONTROL.sub(_escape, s) if _CONTROL.search(s) else s


def error_line(path: Any, message: Any, label: str = "") -> str:
    """One input error as a command prints it on standard error (`scriptdiff: path:
    message`): no secret in it (scriptdiff.ruleset.secrets, as every writer), made safe."""
    from ..ruleset.secrets import redact_text  # lazy: keeps --help fast (loads the rule packs)

    return f"scriptdiff: {label}{safe(redact_text(str(path)))}: {safe(redact_text(str(message)))}"


def clip(text: Any, limit: int = budget.SHOWN_CHARS, full: bool = False) -> str:
    """`text` cut to `limit` characters with "… (N more characters)", and made safe."""
    s = "" if text is None else str(text)
    if not full and len(s) > limit:
        s = f"{s[:limit]}… ({len(s) - limit:,} more characters)"
    return safe(s)


def shown(value: Any, full: bool = False) -> str:
    """A fact's value as the text writers show it (compare.show), cut and made safe."""
    from ..run.compare import show  # lazy: keeps --help fast (compare loads the rule packs)

    if not full and isinstance(value, (list, tuple, set, frozenset, dict)) and len(value) > budget.SHOWN_ITEMS:
        more = len(value) - budget.SHOWN_ITEMS
        if isinstance(value, dict):
            head = show(dict(list(value.items())[:budget.SHOWN_ITEMS]))
        elif isinstance(value, (set, frozenset)):
            head = "{" + show(sorted(value, key=repr)[:budget.SHOWN_ITEMS])[1:-1] + "}"
        else:
            head = show(type(value)(value[:budget.SHOWN_ITEMS]) if isinstance(value, tuple) else value[:budget.SHOWN_ITEMS])
        return clip(head[:-1], budget.SHOWN_CHARS) + f", … ({more:,} more items){head[-1]}"
    return clip(show(value), budget.SHOWN_CHARS, full)


# --------------------------------------------------------------------------- records

# checks whose values are records (a data file's size, hash, mode; a tensor's shape, dtype,
# hash): shown as a short table, never as a Python dict
RECORD_CHECKS = ("dataset", "weights")
HASH_CHARS = 12


def _field(name: str, v: Any) -> str:
    if isinstance(v, str) and name.endswith("hash") and len(v) > HASH_CHARS:
        return safe(v[:HASH_CHARS]) + "…"
    if isinstance(v, bool) or v is None:
        return "-" if v is None else str(v).lower()
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, (list, tuple)):
        return clip("[" + ", ".join(str(x) for x in v) + "]", 40)
    return clip(v, 40)


def record_rows(check: str, values: list) -> list[list[str]] | None:
    """A short table of record values (one row per value; None for an absent side): the
    header row, then one row per value, each a list of cells. None when the values are not
    records (not a dataset or weights value, or a value that is not a flat mapping)."""
    present = [v for v in values if v is not None]
    if check not in RECORD_CHECKS or not present or not all(
            isinstance(v, dict) and len(v) <= budget.SHOWN_ITEMS and not any(isinstance(x, dict) for x in v.values())
            for v in present):
        return None
    keys: list[str] = []
    for v in present:
        keys += [str(k) for k in v if str(k) not in keys]
    rows = [[safe(k) for k in keys]]
    for v in values:
        rows.append(["(absent)"] + [""] * (len(keys) - 1) if v is None else [_field(k, v.get(k)) for k in keys])
    return rows


def record_line(check: str, value: Any) -> str | None:
    """One record value on one line ("shape [4, 4] · dtype F32 · hash 4d006976636a…"), for
    writers with one cell per value (markdown, GitHub, SARIF); None when not a record."""
    rows = record_rows(check, [value])
    if rows is None or value is None:
        return None
    return " · ".join(f"{k} {c}" for k, c in zip(rows[0], rows[1]))


# --------------------------------------------------------------------------- JSON formats

def _cut(value: Any) -> tuple[Any, bool]:
    """A JSON value with every list and mapping cut to budget.SHOWN_ITEMS and every string to
    budget.SHOWN_CHARS, at any depth; and whether anything was cut."""
    if isinstance(value, str):
        return (value[:budget.SHOWN_CHARS], True) if len(value) > budget.SHOWN_CHARS else (value, False)
    if isinstance(value, (list, dict)):
        cut = len(value) > budget.SHOWN_ITEMS
        pairs = list(value.items())[:budget.SHOWN_ITEMS] if isinstance(value, dict) else list(enumerate(value[:budget.SHOWN_ITEMS]))
        out = {}
        for k, x in pairs:
            out[k], c = _cut(x)
            cut = cut or c
        return (out if isinstance(value, dict) else list(out.values())), cut
    return value, False


def json_side(side: dict | None, full: bool = False) -> dict | None:
    """One side of a finding as the JSON contract has it (Side.to_json), its value and
    source line cut, with `value_truncated` / `source_truncated` saying how large they were:
    `total_characters` of a string, `total_items` of a list or mapping, and
    `elements_cut: true` when elements inside it were cut too."""
    if full or not side:
        return side
    value = side.get("value")
    short, cut = _cut(value)
    if cut:
        side["value"] = short
        if isinstance(value, str):
            side["value_truncated"] = {"total_characters": len(value)}
        else:
            marker: dict = {"total_items": len(value)}
            if short != (value[:budget.SHOWN_ITEMS] if isinstance(value, list) else dict(list(value.items())[:budget.SHOWN_ITEMS])):
                marker["elements_cut"] = True
            side["value_truncated"] = marker
    source = side.get("source")
    if isinstance(source, str) and len(source) > budget.SHOWN_SOURCE:
        side["source"] = source[:budget.SHOWN_SOURCE]
        side["source_truncated"] = {"total_characters": len(source)}
    return side


def _cut_message(entry: dict) -> None:
    msg = entry.get("message")
    if isinstance(msg, str) and len(msg) > 2 * budget.SHOWN_CHARS:
        entry["message"] = msg[:2 * budget.SHOWN_CHARS]
        entry["message_truncated"] = {"total_characters": len(msg)}


def json_report(doc: dict, full: bool = False) -> dict:
    """A Report.to_json document with long values, sources and messages cut (markers say so)."""
    if full:
        return doc
    for f in doc.get("findings", []):
        json_side(f.get("gpu"))
        json_side(f.get("npu"))
        _cut_message(f)
    for m in doc.get("masked", []):
        json_side(m.get("gpu"))
        json_side(m.get("npu"))
    for e in doc.get("errors", []):
        _cut_message(e)
    return doc


def json_text(doc: Any) -> str:
    """`doc` as indented JSON, with C1 and bidirectional controls as \\u escapes (valid JSON,
    the same data; json.dumps escapes C0 controls itself)."""
    text = _indented(doc)
    return _JSON_UNSAFE.sub(_json_escape, text) + "\n"


def _indented(doc: Any) -> str:
    """json.dumps(doc, indent=2, ensure_ascii=False), byte for byte, in a third of the time:
    json's C encoder writes the document compact (with indent it falls back to Python), and
    msgspec re-indents the text without reading its numbers or strings again (so floats keep
    json's spelling). A document that is no strict JSON (NaN) takes json's own path."""
    compact = json.dumps(doc, ensure_ascii=False)
    try:
        import msgspec.json  # lazy: only a JSON report re-indents

        data = msgspec.json.format(compact.encode("utf-8", "surrogatepass"), indent=2)
        return data.decode("utf-8", "surrogatepass")
    except Exception:  # NaN or Infinity (msgspec reads strict JSON): json indents it itself
        return json.dumps(doc, indent=2, ensure_ascii=False)


# what GitHub-flavoured Markdown could read as markup in a table cell: HTML and autolinks (< >),
# links and images ([ ]), code (`), emphasis (*), entities (&), the table's | and the escape
# itself; escaped with a backslash (CommonMark lets any ASCII punctuation be escaped). An
# underscore inside a word is never emphasis in GFM: identifiers stay readable
_MARKUP = {c: "\\" + c for c in "\\`*[]<>|&"}
_ESCAPE = str.maketrans(_MARKUP)


def html_text(s) -> str:
    """HTML: text from the inputs in a static part of a page: control characters escaped (`safe`),
    then HTML-escaped (quotes too: safe in an attribute)."""
    return html.escape(safe(s), quote=True)


def md_cell(s) -> str:
    """Markdown: plain text from the inputs, in a table cell or a list item: shown as written; its own
    line breaks as <br> (the cell stays one line of the output)."""
    lines = ("" if s is None else str(s)).replace("\r\n", "\n").split("\n")
    return "<br>".join(safe(line).translate(_ESCAPE) for line in lines)


def md_code(s) -> str:
    """Markdown: text in a code span (no markup is read inside one): a fence longer than any run of
    backticks in it; `|` escaped, as a table needs even there."""
    s = safe("" if s is None else str(s)).replace("|", "\\|")
    if not s:
        return ""
    run = longest = 0
    for c in s:
        run = run + 1 if c == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if longest or s.startswith(" ") or s.endswith(" ") else ""
    return f"{fence}{pad}{s}{pad}{fence}"
