"""Plain-text comparison: the fallback for files that do not parse or are too large.

Lines are compared with difflib after stripping trailing whitespace and line-ending
differences (CRLF vs LF is not a difference), the common head and tail cut first; each
changed hunk becomes one SD108 finding with both sides' first line.
"""
from __future__ import annotations

import difflib

from .. import budget
from ..run.finding import finding
from ..model import Extract, PairResult, Side


def extract(src, ctx):
    return Extract()


def _lines(src) -> list[str]:
    return [ln.rstrip() for ln in src.text.splitlines()]


def opcodes(g: list, n: list, whole: bool = False) -> list[tuple[str, int, int, int, int]]:
    """difflib's opcodes for two lists (of lines, or of any hashable keys), with the common head
    and tail cut first (a port changes a few places in a long file: the matcher sees only the
    middle); `whole`: with the head and tail as "equal" opcodes, so the opcodes cover both lists."""
    head = 0
    while head < len(g) and head < len(n) and g[head] == n[head]:
        head += 1
    tail = 0
    while tail < len(g) - head and tail < len(n) - head and g[-1 - tail] == n[-1 - tail]:
        tail += 1
    gm, nm = g[head:len(g) - tail], n[head:len(n) - tail]
    # above budget.PRECISE_DIFF_LINES lines left after the common head and tail are cut,
    # difflib treats lines that recur in more than 1% of the file as junk (its autojunk
    # heuristic): a little less precise on long repetitive files, but no longer quadratic in them
    sm = difflib.SequenceMatcher(a=gm, b=nm, autojunk=max(len(gm), len(nm)) > budget.PRECISE_DIFF_LINES)
    ops = [(tag, i1 + head, i2 + head, j1 + head, j2 + head) for tag, i1, i2, j1, j2 in sm.get_opcodes()
           if not (whole and i1 == i2 and j1 == j2)]
    if whole:
        ops = ([("equal", 0, head, 0, head)] if head else []) + ops + (
            [("equal", len(g) - tail, len(g), len(n) - tail, len(n))] if tail else [])
    return ops


def diff_pair(gsrc, nsrc, opts=None, reason: str | None = None):
    g, n = _lines(gsrc), _lines(nsrc)
    res = PairResult()
    for tag, i1, i2, j1, j2 in opcodes(g, n):
        if tag == "equal":
            continue
        gtext = "\n".join(g[i1:i2])
        ntext = "\n".join(n[j1:j2])
        gside = Side(value=gtext or None, path=gsrc.name, line=i1 + 1 if i2 > i1 else None,
                     source=g[i1] if i2 > i1 else "")
        nside = Side(value=ntext or None, path=nsrc.name, line=j1 + 1 if j2 > j1 else None,
                     source=n[j1] if j2 > j1 else "")
        what = {"replace": "lines differ", "delete": "lines on GPU only", "insert": "lines on NPU only"}[tag]
        msg = f"{what} (compared as text{': ' + reason if reason else ''})"
        res.findings.append(finding("text-fallback-difference", key=f"code:{gsrc.basename}:lines",
                                    gpu=gside if i2 > i1 else None, npu=nside if j2 > j1 else None, message=msg))
    return res
