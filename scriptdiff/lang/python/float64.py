"""float64 in the NPU program (docs/fidelity.md, "float64 on the NPU"): torch_npu has no float64
compute; a cast to float64 on the NPU gives float32 (torch_npu's `to` replaces Double with
Float, warning once). Each place the NPU program asks for float64 (`.double()`, `torch.float64`,
`torch.double`: rules/fidelity.yaml `float64`) is one finding at its NPU line, with the GPU
line it stands for (the GPU file's same form, matched by its statement's text, else in order);
a program that never asks for float64 is silent. `torch.cuda.DoubleTensor` under
transfer_to_npu is its mapping's (SD026), not this."""
from __future__ import annotations

import libcst as cst

from ...model import Finding, Side
from ...ruleset.rules import load
from ...run.finding import finding
from .parse import Parsed, node_index, qualified_name
from .transfer import matched_lines


def _places(p: Parsed, spec: dict) -> list[tuple[str, int]]:
    """(form, line) of each float64 request the program runs: a method call in `methods` with
    no argument on anything that is not a module, a qualified name in `names`."""
    methods, names = set(spec.get("methods") or ()), set(spec.get("names") or ())
    found: list[tuple[str, int]] = []
    ix = node_index(p)  # imports left out
    for node in ix.calls:
        f = node.func
        if type(f) is cst.Attribute and f.attr.value in methods and not node.args and qualified_name(p, f) is None:
            line = p.line_of(node)
            if line is not None:
                found.append((f".{f.attr.value}()", line))
    for node in ix.attributes:
        qn = qualified_name(p, node)
        if qn in names:
            line = p.line_of(node)
            if line is not None:
                found.append((qn, line))
    aside = {line for line, _why, _rule in (p.spec.set_aside if p.spec is not None else [])}
    seen, out = set(), []
    for form, line in sorted(found, key=lambda x: x[1]):
        if line not in aside and (form, line) not in seen:
            seen.add((form, line))
            out.append((form, line))
    return out


def account(g: Parsed, n: Parsed) -> list[Finding]:
    """The float64 findings of an NPU program, each with the GPU line it stands for."""
    spec = load().section("float64")
    if not spec or n.module is None:
        return []
    nplaces = _places(n, spec)
    if not nplaces:
        return []
    gplaces = _places(g, spec) if g.module is not None else []
    out = []
    for form in dict.fromkeys(f for f, _line in nplaces):
        nl = [line for f, line in nplaces if f == form]
        gl = [line for f, line in gplaces if f == form]
        pairs = matched_lines(g, gl, n, nl)
        for j, line in enumerate(nl):
            gside = None
            if j in pairs:
                gline = gl[pairs[j]]
                gside = Side(value=form, path=g.name, line=gline, source=g.text_at(gline))
            out.append(finding(spec["rule"], key="dtype:float64", gpu=gside,
                               npu=Side(value=form, path=n.name, line=line, source=n.text_at(line)),
                               message=f"{form} asks for float64 on the NPU: {spec['consequence']}",
                               extra={"source": spec["source"]}))
    return out
