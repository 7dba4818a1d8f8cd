"""scriptdiff rule CODE: one rule's documentation and examples."""
from __future__ import annotations

DESCRIPTION = "Show one rule's documentation and its examples (the tests run them)."


def add_arguments(p) -> None:
    p.add_argument("code", help="rule code, e.g. SD201")


def run(args) -> int:
    from .. import api  # lazy: keeps --help fast

    r = api.rule(args.code)
    print(f"{r.code} {r.name}  [{r.check}, {r.severity}]  ({r.pack})")
    print(f"\n{r.summary}\n\n{r.doc.rstrip()}\n")
    for i, ex in enumerate(r.examples, 1):
        verdict = "fires" if ex.fires else "does not fire"
        print(f"Example {i} ({ex.lang}, {verdict}){': ' + ex.note if ex.note else ''}")
        for side, text in (("GPU", ex.gpu), ("NPU", ex.npu)):
            print(f"  {side}:")
            for line in text.rstrip("\n").splitlines() or [""]:
                print(f"    {line}")
        print()
    return 0
