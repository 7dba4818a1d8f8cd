"""scriptdiff rules: the rule catalogue."""
from __future__ import annotations

DESCRIPTION = "List every rule: code, check, severity (masked for expected substitutions) and summary."


def add_arguments(p) -> None:
    p.add_argument("--format", "-f", choices=("text", "json"), default="text")


def run(args) -> int:
    import json

    from .. import api  # lazy: keeps --help fast

    catalogue = api.rules()
    if args.format == "json":
        print(json.dumps([{"code": r.code, "name": r.name, "check": r.check, "kind": r.kind,
                           "severity": r.severity, "summary": r.summary} for r in catalogue], indent=2))
        return 0
    for r in catalogue:
        print(f"{r.code}  {r.check:<15} {r.severity:<8} {r.name}: {r.summary}")
    return 0
