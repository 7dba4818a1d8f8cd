"""What the editors of `scriptdiff fix` share: the request, an edit, a refusal, the NPU spelling
of a value, and the positions of a text.

An editor (one module per file kind, named by the kind's `fixer` in rules/kinds.yaml) offers
`set_value(req)`, `add(req)`, `remove(req)` and `parses(old, new)`. Each returns the edits
(character spans of the NPU file's text and what replaces them) or raises `Refused` with the
reason in one line. It finds the place from the fact's provenance, as its reader recorded it
(`Fact.meta`): "origin" (Python: where the literal is), "shell" (a launch option's words and
byte spans), "cpath" (a config's path in its file); never by searching the text for the value.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from ..model import Fact
from ..ruleset.rules import load
from ..inputs.sources import Source
from ..ruleset.vocabulary import norm_name, value_ports


@dataclass(frozen=True)
class Edit:
    """`text` replaces the characters start..end of the NPU file `path` (its display name).
    Insertions at one place go in by `order` (the GPU side's order of what they add)."""

    path: str
    start: int
    end: int
    text: str
    order: tuple = ()


class Refused(Exception):
    """A fix that is not safe to make: the reason, one line, saying what to do instead; `why`
    is the kind of reason (WHYS), for counting refusals."""

    def __init__(self, message: str, why: str = "other"):
        super().__init__(message)
        self.why = why


# the kinds of reason a finding is not fixed (docs/fix.md lists them)
WHYS = {
    "not chosen": "not chosen (info, or left out by --select/--ignore)",
    "check": "not a setting of a file (dataset, weights, environment, library, checkpoint): what to do is said",
    "code": "a difference in the code, not a value",
    "derived": "derived from other settings",
    "computed": "computed, not written as one value",
    "environment": "read from the environment",
    "ambiguous": "written or used at two places",
    "outside": "outside the NPU side (another folder, a git revision)",
    "spelling": "no NPU spelling known",
    "no place": "no place found on the NPU side",
    "reference": "another config file is referenced",
    "file": "the file cannot be edited safely (conflict markers, uncommitted changes, does not parse)",
    "unknown": "an input that was not understood",
    "secret": "a secret-looking value",
    "not verified": "the edit did not pass the check (diff after the fix)",
    "other": "other",
}


@dataclass
class Request:
    """One change to the NPU side: `key` gets `value` (the GPU side's).

    `fact` is the NPU fact (for set_value and remove), `gpu` the GPU fact (its spelling, and
    for add its place among its neighbours); `npu_facts`/`gpu_facts` are the facts of the
    comparison scope on each side, `gpu_src` the GPU fact's file."""

    key: str
    value: Any
    src: Source
    kind: str
    fact: Fact | None = None
    gpu: Fact | None = None
    gpu_src: Source | None = None
    npu_facts: list[Fact] = field(default_factory=list)
    gpu_facts: list[Fact] = field(default_factory=list)

    @property
    def written(self) -> str | None:
        """The name the NPU side writes the setting under (its last dotted part), else the GPU's."""
        for f in (self.fact, self.gpu):
            w = f.meta.get("written_key") if f is not None else None
            if w:
                return str(w)
        return None


# ------------------------------------------------------------------------------ spellings

def written_tail(name: str | None) -> str:
    """`actor.optim.lr` -> `lr`, `--use-flash-attn` -> `use_flash_attn`."""
    if not name:
        return ""
    return norm_name(str(name).lstrip("-+~").rsplit(".", 1)[-1])


def spelling(key: str, written: str | None, value: Any, kind: str) -> dict | None:
    """The NPU side's way of writing `key` = `value` under the name `written` in a file of
    `kind` (rules/fix.yaml `fix_spellings`), or None when the table says nothing."""
    name = written_tail(written)
    for e in (load().section("fix_spellings") or {}).get(key) or ():
        if e.get("kinds") and kind not in e["kinds"]:
            continue
        if name not in {norm_name(w) for w in e["written"]}:
            continue
        if _same(e["value"], value):
            return e
    return None


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or (isinstance(a, bool) and isinstance(b, bool) and a == b)
    return a == b or str(a).lower() == str(b).lower()


def ported(key: str) -> bool:
    """A key whose spellings encode its value in words (rules/vocabulary.yaml value_ports)."""
    return key in value_ports()


def copied(key: str) -> bool:
    """A key every value of which runs on the NPU (rules/fix.yaml `fix_copies`): the GPU's word is
    copied where the NPU writes the setting under the GPU's name."""
    return key in (load().section("fix_copies") or {})


def needs_spelling(key: str, raw: Any) -> bool:
    """Whether writing `key` where the NPU side wrote `raw` needs a spelling from the table: a
    key with value ports written as a word (attn_implementation="eager"), not as a boolean."""
    if not ported(key):
        return False
    return not isinstance(raw, bool) and str(raw).strip().strip("'\"").lower() not in ("true", "false")


def refuse_unspelled(key: str, written: str | None, value: Any) -> Refused:
    return Refused(f"scriptdiff knows no NPU spelling of {key} = {shown(value)} for "
                   f"`{written_tail(written) or key}` (rules/fix.yaml fix_spellings); set it by hand", "spelling")


def shown(v: Any) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    return json.dumps(v) if isinstance(v, str) else str(v)


def number_text(v: Any) -> str | None:
    """A number as code and configs write it (1e-05, 0.95, 8), or None for inf/nan."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return repr(v)


# ------------------------------------------------------------------------------ positions

def line_starts(text: str) -> list[int]:
    """Offsets where each line starts (lines end at \\n; a \\r before it belongs to the line)."""
    out = [0]
    i = text.find("\n")
    while i != -1:
        out.append(i + 1)
        i = text.find("\n", i + 1)
    return out


def offset(starts: list[int], text: str, line: int, col: int) -> int:
    """The offset of (1-based line, 0-based column)."""
    if not 0 < line <= len(starts):
        raise Refused(f"line {line} is not in the file any more", "file")
    return min(starts[line - 1] + col, len(text))


def line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def line_bounds(text: str, pos: int) -> tuple[int, int]:
    """(start of the line holding `pos`, end of it: the offset of its \\n, or the text's end)."""
    a = text.rfind("\n", 0, pos) + 1
    b = text.find("\n", pos)
    return a, (len(text) if b == -1 else b)


def char_offset(data: bytes, byte: int) -> int:
    """The character offset of a byte offset of UTF-8 `data`."""
    if data.isascii():
        return byte
    return len(data[:byte].decode("utf-8", "replace"))


CONFLICT_MARKERS = ("<<<<<<< ", "=======", ">>>>>>> ", "||||||| ")


def conflict_line(text: str) -> int | None:
    """The first line that is a merge-conflict marker (`<<<<<<< `, `=======`, `>>>>>>> `), or None."""
    for no, ln in enumerate(text.split("\n"), 1):
        s = ln.rstrip("\r")
        if s == "=======" or s.startswith(("<<<<<<< ", ">>>>>>> ", "||||||| ")) or s in ("<<<<<<<", ">>>>>>>"):
            return no
    return None
