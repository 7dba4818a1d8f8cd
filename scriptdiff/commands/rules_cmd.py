"""scriptdiff rules: the rule catalogue."""
from __future__ import annotations

DESCRIPTION = "List every rule: code, check, severity (masked for expected substitutions) and summary."


def add_arguments(p) -> None:
    p.add_argument("--format", "-f", choices=("text", "json"), default="text")


def run(args) -> int:
    import json

    from ..rules import load

    rs = load()
    if args.format == "json":
        print(json.dumps([{"code": r.code, "name": r.name, "check": r.check, "kind": r.kind,
                           "severity": r.severity, "summary": r.summary} for r in rs.rules.values()], indent=2))
        return 0
    for r in rs.rules.values():
        print(f"{r.code}  {r.check:<15} {r.severity:<8} {r.name}: {r.summary}")
    return 0
