"""What an alignment profile may ask of a Python file besides its settings (rules/alignment.yaml
`probes`, run/alignment.py): each place a probe matches, as (probe, line, source line) in
`Extract.probes`. `unseeded_shuffle`: a DataLoader whose `shuffle` is True and that is given no
generator, sampler or batch sampler, so its order comes from torch's default generator."""
from __future__ import annotations

import libcst as cst

from ...ruleset.rules import load
from .evaluate import value
from .parse import Parsed, canon_qn, node_index, qualified_name


def probes(p: Parsed) -> list[tuple[str, int | None, str]]:
    """The places of `p` each probe of the rule packs matches, in line order."""
    spec = load().section("probes") or {}
    if not spec or p.module is None:
        return []
    found: list[tuple[str, int | None, str]] = []
    for node in node_index(p).calls:
        qn = qualified_name(p, node.func)
        if qn is None:
            continue
        qn = canon_qn(qn, None)
        for name, probe in spec.items():
            if qn in probe["calls"] and _matches(p, node, probe):
                line = p.line_of(node)
                found.append((name, line, p.text_at(line).strip() if line is not None else ""))
    aside = {line for line, _why, _rule in (p.spec.set_aside if p.spec is not None else [])}
    return sorted((x for x in found if x[1] not in aside), key=lambda x: (x[1] or 0, x[0]))


def _matches(p: Parsed, call: cst.Call, probe: dict) -> bool:
    """The call sets the probe's keyword (or its position) to True and gives none of `unless`."""
    unless = set(probe.get("unless") or ())
    arg, pos = None, 0
    for a in call.args:
        if a.star:
            return False  # arguments not known statically: nothing said
        if a.keyword is not None:
            if a.keyword.value in unless:
                return False
            if a.keyword.value == probe["keyword"]:
                arg = a
        else:
            if probe.get("position") is not None and pos == probe["position"]:
                arg = a
            pos += 1
    if arg is None:
        return False
    try:
        return value(p, arg.value) is True
    except Exception:
        return False
