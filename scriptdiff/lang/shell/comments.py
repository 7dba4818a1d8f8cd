"""Flags written in comments (`# --seed 42`, `#--use-flash-attn \\`): commented out on this side.

A flag found only in a comment becomes a fact with no value and a note, so a flag that one
side comments out and the other sets is reported as such, not as simply missing.
"""
from __future__ import annotations

from ...inputs import flags
from ...model import Fact
from ...ruleset.vocabulary import canonical_flag
from .record import Record


def commented_flags(root, data: bytes) -> dict[str, int]:
    """Canonical key -> first line, of every flag in a comment (or in a `#` line of a
    multi-line string holding flags) under tree-sitter node `root` of script bytes `data`."""
    commented: dict[str, int] = {}
    stack = [root]
    while stack:
        n = stack.pop()
        if n.type == "comment":
            _comment_flags(commented, data[n.start_byte:n.end_byte].decode("utf-8", "replace").lstrip("#"),
                           n.start_point[0] + 1)
        elif n.type in ("string", "raw_string"):
            # multi-line strings holding flags: a line starting with # is a comment there
            for i, ln in enumerate(data[n.start_byte:n.end_byte].decode("utf-8", "replace").split("\n")):
                s = ln.strip().lstrip("'\"")
                if s.startswith("#"):
                    _comment_flags(commented, s.lstrip("#"), n.start_point[0] + 1 + i)
        stack.extend(n.children)
    return commented


def _comment_flags(commented: dict[str, int], text: str, line: int) -> None:
    toks = text.replace("\\", " ").split()
    for tok in toks:
        f = flags.split(tok)
        if f is not None and f.long:
            dest = f.dest
            if dest in ("bf16", "fp16"):
                key = "params_dtype"
            else:
                key = canonical_flag(dest) or canonical_flag(dest, "hf") or dest
            commented.setdefault(key, line)


def commented_facts(rec: Record, commented: dict[str, int]) -> list[Fact]:
    """A fact for each commented-out flag that the script does not also set."""
    have = {f.key for f in rec.facts}
    out = []
    for key, line in sorted(commented.items()):
        if key in have:
            continue
        out.append(Fact(key=key, value=None, path=rec.src.name, line=line, source=rec.src_line(line),
                        rank=-1, note=f"commented out at {rec.at(line)}", meta={"commented": True}))
    return out
