"""transfer_to_npu as a port of its own (docs/fidelity.md): an NPU program that imports
torch_npu.contrib.transfer_to_npu keeps the GPU's CUDA spelling and torch_npu maps it at run
time. Each CUDA name left in it is a masked mapping (rules/fidelity.yaml `transfer_to_npu`:
SD028, its target's fidelity), and the side effects that hold for the whole program are one
finding at the import (SD027)."""
from __future__ import annotations

import difflib

from ...model import Finding, Masked, Side
from ...ruleset.fidelity import t2n
from ...run.finding import finding
from .parse import Parsed, import_items, node_index, qualified_name


def _chains(p: Parsed) -> list:
    """The outermost Name/Attribute chains of the module (imports skipped), by line."""
    return sorted(node_index(p).chains, key=lambda x: p.line_of(x) or 0)


def _imports(p: Parsed, names: tuple[str, ...]) -> int | None:
    """The line of the first import of one of `names` the file runs, else None."""
    found = [p.line_of(node) for node in node_index(p).imports
             if any(qn in names for _bound, qn in import_items(node))]
    aside = {line for line, _why, _rule in (p.spec.set_aside if p.spec is not None else [])}
    live = [line for line in found if line is not None and line not in aside]
    return min(live) if live else None


def may_import(data: bytes) -> bool:
    """The cheap test before a whole parse: the file's bytes name a module whose import runs it."""
    m = t2n()
    return m is not None and any(name.rsplit(".", 1)[-1].encode() in data for name in m.imports)


def account(p: Parsed, side: str) -> tuple[list[Masked], list[Finding]]:
    """The mappings and the notice of an NPU program that imports transfer_to_npu, else nothing."""
    m = t2n()
    if side != "npu" or m is None or p.module is None:
        return [], []
    at = _imports(p, m.imports)
    if at is None:
        return [], []
    here = Side(value="transfer_to_npu", path=p.name, line=at, source=p.text_at(at))
    notice = finding(m.notice, key="port:transfer_to_npu", npu=here,
                     message="transfer_to_npu ports the GPU code at run time: " + "; ".join(m.side_effects))
    aside = {line for line, _why, _rule in (p.spec.set_aside if p.spec is not None else [])}
    masked, seen = [], set()
    for node in _chains(p):
        qn = qualified_name(p, node)
        target = m.target(qn) if qn else None
        line = p.line_of(node)
        if target is None or line is None or line in aside or (line, target) in seen:
            continue
        seen.add((line, target))
        masked.append(Masked(rule=m.rule, gpu=None, npu=Side(value=qn, path=p.name, line=line, source=p.text_at(line)),
                             target=target))
    return masked, [notice]


def counterparts(g: Parsed, n: Parsed) -> list[Masked]:
    """The mappings of an NPU program that imports transfer_to_npu, each with the GPU line it
    stands for: the GPU file's occurrence of the same CUDA name, matched by its statement's text
    where the two agree, else in order. The run keeps these in place of the NPU-only ones."""
    masked, _notice = account(n, "npu")
    if not masked or g.module is None:
        return []
    m = t2n()
    gocc: dict[str, list[int]] = {}
    for node in _chains(g):
        qn = qualified_name(g, node)
        line = g.line_of(node)
        if qn and line is not None and m.target(qn) is not None and line not in gocc.setdefault(qn, []):
            gocc[qn].append(line)
    nocc: dict[str, list[Masked]] = {}
    for mk in masked:
        nocc.setdefault(mk.npu.value, []).append(mk)
    out = []
    for qn, ms in nocc.items():
        glines = gocc.get(qn, [])
        pairs = matched_lines(g, glines, n, [mk.npu.line for mk in ms])
        for j, mk in enumerate(ms):
            if j in pairs:
                line = glines[pairs[j]]
                out.append(Masked(rule=mk.rule, gpu=Side(value=qn, path=g.name, line=line, source=g.text_at(line)),
                                  npu=mk.npu, target=mk.target))
    return out


def matched_lines(g: Parsed, glines: list[int], n: Parsed, nlines: list[int]) -> dict[int, int]:
    """Which GPU line each NPU line stands for (index to index), for occurrences of one name in
    order: by their statements' text where the two agree, the others in order."""
    gtext = [g.text_at(line).strip() for line in glines]
    ntext = [n.text_at(line).strip() for line in nlines]
    pairs: dict[int, int] = {}
    sm = difflib.SequenceMatcher(None, gtext, ntext, autojunk=False)
    for a, b, size in sm.get_matching_blocks():
        for d in range(size):
            pairs[b + d] = a + d
    left_g = [i for i in range(len(glines)) if i not in pairs.values()]
    for j in range(len(nlines)):
        if j not in pairs and left_g:
            pairs[j] = left_g.pop(0)
    return pairs
