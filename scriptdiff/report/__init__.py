"""Report writers: one per output format, all reading the same Report.

`render(report, fmt, **options) -> str`. Writers are imported when used, so `--help`
stays fast.
"""
from __future__ import annotations

FORMATS = ("text", "json", "sarif", "markdown", "github")


def render(report, fmt: str, **options) -> str:
    if fmt == "json":
        from .json_writer import render as r
    elif fmt == "text":
        from .text import render as r
    elif fmt == "sarif":
        from .sarif import render as r
    elif fmt == "markdown":
        from .markdown import render as r
    elif fmt == "github":
        from .github import render as r
    else:
        raise ValueError(f"unknown format {fmt!r}")
    return r(report, **options)
