"""Plain-text comparison: the fallback for files that do not parse or are too large.

Lines are compared with difflib after stripping trailing whitespace and line-ending
differences (CRLF vs LF is not a difference), the common head and tail cut first; each
changed hunk becomes one SD108 finding with both sides' first line.
"""
from __future__ import annotations

import bisect
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
    if max(len(gm), len(nm)) > budget.PRECISE_DIFF_LINES:
        # a long middle: anchored on the lines that occur once on each side (a patience diff),
        # difflib only between two anchors: difflib alone is quadratic on long files whose
        # changed lines repeat (6,000 `.cuda()` lines took 90 s), its autojunk no cure for that
        raw = _opcodes_of(_anchored_blocks(gm, nm), len(gm), len(nm))
    else:
        raw = difflib.SequenceMatcher(a=gm, b=nm, autojunk=False).get_opcodes()
    ops = [(tag, i1 + head, i2 + head, j1 + head, j2 + head) for tag, i1, i2, j1, j2 in raw
           if not (whole and i1 == i2 and j1 == j2)]
    if whole:
        ops = ([("equal", 0, head, 0, head)] if head else []) + ops + (
            [("equal", len(g) - tail, len(g), len(n) - tail, len(n))] if tail else [])
    return ops


def _anchored_blocks(a: list, b: list) -> list[tuple[int, int, int]]:
    """Matching blocks (i, j, size) of `a` and `b`, as difflib's get_matching_blocks gives them
    (ascending, the last one (len(a), len(b), 0)): lines that occur once on each side and keep
    their order (the longest increasing run of their positions) are anchors; each stretch
    between two anchors is matched by difflib when it is small (budget.PRECISE_DIFF_LINES lines
    a side) and anchored again on its own unique lines otherwise, else left unmatched. Linear in
    the lines but for the small stretches and the n log n of the increasing run."""
    blocks: list[tuple[int, int, int]] = []
    todo = [(0, len(a), 0, len(b))]
    while todo:
        alo, ahi, blo, bhi = todo.pop()
        while alo < ahi and blo < bhi and a[alo] == b[blo]:  # a common head
            blocks.append((alo, blo, 1))
            alo, blo = alo + 1, blo + 1
        k = 0
        while ahi - k > alo and bhi - k > blo and a[ahi - 1 - k] == b[bhi - 1 - k]:
            k += 1
        if k:
            blocks.append((ahi - k, bhi - k, k))
            ahi, bhi = ahi - k, bhi - k
        if alo == ahi or blo == bhi:
            continue
        if max(ahi - alo, bhi - blo) <= budget.PRECISE_DIFF_LINES:
            sm = difflib.SequenceMatcher(a=a[alo:ahi], b=b[blo:bhi], autojunk=False)
            blocks += [(alo + i, blo + j, m) for i, j, m in sm.get_matching_blocks() if m]
            continue
        anchors = _unique_in_order(a, alo, ahi, b, blo, bhi)
        if not anchors:
            continue  # nothing to hold on to in a long stretch: one changed block
        pi, pj = alo, blo
        for i, j in anchors:
            blocks.append((i, j, 1))
            todo.append((pi, i, pj, j))
            pi, pj = i + 1, j + 1
        todo.append((pi, ahi, pj, bhi))
    blocks.sort()
    merged: list[tuple[int, int, int]] = []
    for i, j, m in blocks:  # adjacent blocks joined, as difflib's are
        if merged and merged[-1][0] + merged[-1][2] == i and merged[-1][1] + merged[-1][2] == j:
            merged[-1] = (merged[-1][0], merged[-1][1], merged[-1][2] + m)
        else:
            merged.append((i, j, m))
    return merged + [(len(a), len(b), 0)]


def _unique_in_order(a: list, alo: int, ahi: int, b: list, blo: int, bhi: int) -> list[tuple[int, int]]:
    """The lines once in a[alo:ahi] and once in b[blo:bhi], as (i, j) pairs in the longest run
    whose j increase with i (patience sorting)."""
    count: dict = {}
    for i in range(alo, ahi):
        c = count.get(a[i])
        count[a[i]] = [i, None, 1] if c is None else [c[0], None, c[2] + 1]
    for j in range(blo, bhi):
        c = count.get(b[j])
        if c is not None:
            c[1] = j if c[1] is None else -1
    pairs = sorted((c[0], c[1]) for c in count.values() if c[2] == 1 and c[1] is not None and c[1] >= 0)
    tails: list[int] = []  # tails[k]: the smallest j ending an increasing run of length k + 1
    at: list[int] = []  # at[k]: the index in pairs of that end
    back = [-1] * len(pairs)
    for x, (_i, j) in enumerate(pairs):
        k = bisect.bisect_left(tails, j)
        if k == len(tails):
            tails.append(j)
            at.append(x)
        else:
            tails[k], at[k] = j, x
        back[x] = at[k - 1] if k else -1
    run, x = [], at[-1] if at else -1
    while x != -1:
        run.append(pairs[x])
        x = back[x]
    return run[::-1]


def _opcodes_of(blocks: list[tuple[int, int, int]], na: int, nb: int) -> list[tuple[str, int, int, int, int]]:
    """difflib's opcodes from matching blocks (the same construction as SequenceMatcher's)."""
    ops, i, j = [], 0, 0
    for ai, bj, size in blocks:
        tag = "replace" if i < ai and j < bj else "delete" if i < ai else "insert" if j < bj else ""
        if tag:
            ops.append((tag, i, ai, j, bj))
        i, j = ai + size, bj + size
        if size:
            ops.append(("equal", ai, i, bj, j))
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
