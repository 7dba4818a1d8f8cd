"""The `check` hooks of the `dumps` check (rules/kinds.yaml): each side's configured `dumps`
folder is opened in place (its ranks found, each dump.json read through once), and both
sides are compared when the engine meets the two facts.

measure(path) -> Extract   one fact `dumps` holding the opened side (value: its ranks and
                           calls; `force` makes the engine hand the pair to `classify` even
                           when the texts match); a path that holds no readable dump is a
                           fatal input error (the verdict is then "not checked", never a pass)
classify(key, g, n, rs)    every finding of the comparison and its masked substitutions (a
                           rank that could not be read while it was compared is not comparable)
"""
from __future__ import annotations

from ..run.finding import finding
from ..model import Extract, Fact, InputError
from ..inputs.sources import shown_path
from .findings import CHECK, findings, key_of, side_errors
from .reader import DumpError
from .run import compare_sides, describe_side, open_side

KEY = "dumps"


def measure(path: str, **_options) -> Extract:
    shown = shown_path(path)
    try:
        side = open_side(shown)
    except DumpError as e:
        msg = str(e)
        return Extract(errors=[InputError(shown, msg[len(shown) + 2:] if msg.startswith(f"{shown}: ") else msg,
                                          fatal=True)])
    ex = Extract(errors=side_errors(side))
    if not side.headers:
        return ex
    ex.facts.append(Fact(key=KEY, value=describe_side(side), check=CHECK, path=shown, line=None,
                         source="msprobe dump", meta={"side": side, "force": True}))
    ex.understood = True
    return ex


def classify(key: str, g: Fact | None, n: Fact | None, rs):
    if g is None or n is None or "side" not in g.meta or "side" not in n.meta:
        return None  # a side without a dump was said when it was measured
    res = compare_sides(g.meta["side"], n.meta["side"])
    found, masked, errors = findings(res)
    for e in errors:  # a rank changed or broke between the survey and the comparison
        found.append(finding("dump-not-comparable", key=key_of(e.path, "read"), gpu=None, npu=None,
                             message=f"{e.path}: {e.message}; that rank was not compared"))
    return found + masked
