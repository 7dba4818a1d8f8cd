"""Plain-text comparison: the fallback for files that do not parse or are too large.

Lines are compared with difflib after stripping trailing whitespace and line-ending
differences (CRLF vs LF is not a difference); each changed hunk becomes one SD108 finding
with both sides' first line.
"""
from __future__ import annotations

import difflib

from ..model import Extract, Finding, PairResult, Side
from ..rules import code, load


def extract(src, ctx):
    return Extract()


def _lines(src) -> list[str]:
    return [ln.rstrip() for ln in src.text.splitlines()]


def diff_pair(gsrc, nsrc, opts=None, reason: str | None = None):
    rule = code("text-fallback-difference")
    severity = load().severity(rule)
    g, n = _lines(gsrc), _lines(nsrc)
    res = PairResult()
    sm = difflib.SequenceMatcher(a=g, b=n, autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
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
        res.findings.append(Finding(rule=rule, check="script", severity=severity,
                                    key=f"code:{gsrc.basename}:lines",
                                    gpu=gside if i2 > i1 else None, npu=nside if j2 > j1 else None,
                                    message=msg))
    return res
