"""scriptdiff rule CODE: one rule's documentation and examples."""
from __future__ import annotations

DESCRIPTION = "Show one rule's documentation and its examples (the tests run them)."


def add_arguments(p) -> None:
    p.add_argument("code", help="rule code, e.g. SD201")


def run(args) -> int:
    from .. import api  # lazy: keeps --help fast
    from ..report.values import safe  # lazy: keeps --help fast

    # a user's pack is input like any other: its text is made safe, a line at a time (its
    # doc keeps its lines; a summary or a note is one line; no ESC reaches the terminal)
    r = api.rule(args.code)
    print(f"{r.code} {safe(r.name)}  [{safe(r.check)}, {r.severity}]  ({safe(r.pack)})")
    doc = "\n".join(safe(line) for line in r.doc.rstrip().split("\n"))
    print(f"\n{safe(r.summary)}\n\n{doc}\n")
    for i, ex in enumerate(r.examples, 1):
        verdict = "fires" if ex.fires else "does not fire"
        print(f"Example {i} ({safe(ex.lang)}, {verdict}){': ' + safe(ex.note) if ex.note else ''}")
        for side, text in (("GPU", ex.gpu), ("NPU", ex.npu)):
            print(f"  {side}:")
            for line in text.rstrip("\n").splitlines() or [""]:
                print(f"    {safe(line)}")
        print()
    return 0
