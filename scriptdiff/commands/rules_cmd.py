"""scriptdiff rules: the rule catalogue, and `--test DIR`: a user's pack's own examples."""
from __future__ import annotations

import sys

from ..report import FORMATS as ALL
from .common import OutputError, add_output_option, fail, output_targets, write_text

DESCRIPTION = """List every rule: code, check, severity (masked for expected substitutions),
summary and the pack it comes from (rules/NAME.yaml for the shipped packs, the file's path
for a pack of yours loaded with --rules DIR).

--format text (one line per rule), json (a list of objects), markdown (a table) or sarif (a
SARIF 2.1.0 log with the catalogue as tool.driver.rules and no results, for tools that import
rule metadata). github annotations need findings and the html page files and findings, which
the catalogue has none of: those two are refused with that reason.

--test DIR loads the packs in DIR (after the shipped ones) and runs the examples of their
rules through the real pipeline, as the tests run the shipped packs' examples: one line per
example, PASS or FAIL; exit 0 when all pass, 1 when one fails, 2 when a pack is broken
(docs/rule-packs.md)."""

FORMATS = ("text", "json", "markdown", "sarif")
# the formats a report has and the catalogue cannot have, and why
CANNOT = {"github": "GitHub annotations are findings on lines, and the catalogue has no findings",
          "html": "the review page shows files side by side with their findings, and the catalogue has neither"}


def add_arguments(p) -> None:
    p.add_argument("--format", "-f", choices=ALL, default="text",
                   help="text, json, markdown or sarif (default: text)")
    add_output_option(p, FORMATS, "the catalogue")
    p.add_argument("--test", action="append", default=[], metavar="DIR",
                   help="run the examples of the rules in the packs of DIR (repeatable); exit 1 if one fails")


def rule_dirs(args) -> list[str]:
    """The packs this command loads besides --rules: those it tests."""
    return list(args.test)


def render(catalogue, fmt: str) -> str:
    import json

    from ..report.values import safe  # lazy: keeps --help fast

    # a user's pack is input like any other: its names, summaries and path are made safe

    if fmt == "json":
        return json.dumps([{"code": r.code, "name": r.name, "check": r.check, "kind": r.kind,
                            "severity": r.severity, "summary": r.summary, "pack": r.pack,
                            "origin": "user" if r.user else "shipped"} for r in catalogue], indent=2) + "\n"
    if fmt == "markdown":
        out = ["| Code | Check | Severity | Name | Summary | Pack |", "|---|---|---|---|---|---|"]
        for r in catalogue:
            summary = safe(" ".join(r.summary.split())).replace("|", "\\|")
            out.append(f"| {r.code} | {safe(r.check)} | {r.severity} | `{safe(r.name)}` | {summary} | "
                       f"{safe(_origin(r)).replace('|', chr(92) + '|')} |")
        return "\n".join(out) + "\n"
    if fmt == "sarif":
        from .. import api  # lazy: keeps --help fast
        from ..model import Report  # lazy: keeps --help fast

        return api.render(Report(gpu="", npu=""), "sarif")
    return "".join(f"{r.code}  {safe(r.check):<15} {r.severity:<8} {safe(r.name)}: {safe(r.summary)}  "
                   f"[{safe(_origin(r))}]\n" for r in catalogue)


def _origin(r) -> str:
    return f"yours: {r.pack}" if r.user else r.pack


def run(args) -> int:
    from .. import api  # lazy: keeps --help fast

    if args.test:
        return run_tests(args)
    if args.format not in FORMATS:
        return fail(f"rules --format {args.format}: {CANNOT[args.format]}; use {', '.join(FORMATS)}")
    try:
        targets = output_targets(args, FORMATS, "rules", CANNOT)
    except OutputError as e:
        return fail(str(e))
    catalogue = api.rules()
    for fmt, path in targets:
        failed = write_text(path, render(catalogue, fmt))
        if failed is not None:
            return failed
    sys.stdout.write(render(catalogue, args.format))
    return 0


def run_tests(args) -> int:
    """--test DIR: each example of the packs' rules, PASS or FAIL, and a count."""
    from .. import api  # lazy: keeps --help fast
    from ..report.values import safe  # lazy: keeps --help fast

    if args.format != "text" or args.output:
        return fail("rules --test prints one line per example: --format and --output do not apply")
    results = api.test_rules(args.test)
    if not results:
        print(f"scriptdiff: no rules with examples in {', '.join(args.test)} (its sections loaded and are valid)")
        return 0
    for res in results:
        ex = res.example
        said = "fires" if ex.fires else "does not fire"
        where = safe(f"{res.rule.pack}:{ex.line}" if ex.line else res.rule.pack)
        head = f"{'PASS' if res.passed else 'FAIL'}  {res.rule.code} example {res.index} ({ex.lang}, {said})  {where}"
        if res.passed:
            print(head)
        elif res.error:
            print(f"{head}: the run failed: {safe(res.error)}")
        else:
            others = ", ".join(sorted(res.got - {res.rule.code})) or "nothing else"
            print(f"{head}: {'did not fire' if ex.fires else 'fired'} (also reported: {others})")
    failed = sum(not r.passed for r in results)
    print(f"{len(results)} example(s): {len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0
