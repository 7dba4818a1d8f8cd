"""scriptdiff rules: the rule catalogue."""
from __future__ import annotations

import sys

from ..report import FORMATS as ALL
from .common import OutputError, fail, output_targets, write_text

DESCRIPTION = """List every rule: code, check, severity (masked for expected substitutions) and summary.

--format text (one line per rule), json (a list of objects), markdown (a table) or sarif (a
SARIF 2.1.0 log with the catalogue as tool.driver.rules and no results, for tools that import
rule metadata). github annotations need findings, which the catalogue has none of."""

FORMATS = ("text", "json", "markdown", "sarif")


def add_arguments(p) -> None:
    p.add_argument("--format", "-f", choices=ALL, default="text",
                   help="text, json, markdown or sarif (default: text)")
    p.add_argument("--output", "-o", action="append", default=[], metavar="[FORMAT=]FILE",
                   help="also write the catalogue to FILE (repeatable): FORMAT=FILE, or a FILE whose extension "
                        "says the format (.json, .sarif, .md, .txt)")


def render(catalogue, fmt: str) -> str:
    import json

    if fmt == "json":
        return json.dumps([{"code": r.code, "name": r.name, "check": r.check, "kind": r.kind,
                            "severity": r.severity, "summary": r.summary} for r in catalogue], indent=2) + "\n"
    if fmt == "markdown":
        out = ["| Code | Check | Severity | Name | Summary |", "|---|---|---|---|---|"]
        for r in catalogue:
            summary = " ".join(r.summary.split()).replace("|", "\\|")
            out.append(f"| {r.code} | {r.check} | {r.severity} | `{r.name}` | {summary} |")
        return "\n".join(out) + "\n"
    if fmt == "sarif":
        from .. import api  # lazy: keeps --help fast
        from ..model import Report  # lazy: keeps --help fast

        return api.render(Report(gpu="", npu=""), "sarif")
    return "".join(f"{r.code}  {r.check:<15} {r.severity:<8} {r.name}: {r.summary}\n" for r in catalogue)


def run(args) -> int:
    from .. import api  # lazy: keeps --help fast

    if args.format not in FORMATS:
        return fail(f"rules --format {args.format}: GitHub annotations need findings and the catalogue has none; "
                    f"use {', '.join(FORMATS)}")
    try:
        targets = output_targets(args, FORMATS)
    except OutputError as e:
        return fail(str(e))
    catalogue = api.rules()
    for fmt, path in targets:
        failed = write_text(path, render(catalogue, fmt))
        if failed is not None:
            return failed
    sys.stdout.write(render(catalogue, args.format))
    return 0
