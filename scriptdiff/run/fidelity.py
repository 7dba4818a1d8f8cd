"""What each masked port edit keeps, said (docs/fidelity.md): every masked edit gets its class
(`Masked.fidelity`), and one that is not exact becomes a finding naming the edit, what it maps
to and why the numerics agree (SD023, info) or what changes (SD024, info; SD026, a warning,
when the NPU computes in a lower precision)."""
from __future__ import annotations

from dataclasses import replace

from ..model import Finding, Masked, Side
from ..ruleset.fidelity import of, t2n
from ..ruleset.rules import code, load
from .finding import finding


def annotate(masked: list[Masked]) -> list[Finding]:
    """Set each masked edit's class; the findings of those that are not exact."""
    rs = load()
    tm = t2n()
    out = []
    for m in masked:
        fid = of(m, rs)
        m.fidelity = fid.cls
        if fid.cls == "exact":
            continue
        rule = rs.rules.get(m.rule)
        name = rule.name if rule is not None else m.rule
        what = fid.kernel or m.target
        edit = f"port edit {name} ({m.rule})" + (f" to {what}" if what else "")
        if fid.cls == "equivalent":
            which, message = "masked-edit-equivalent", f"{edit} is equivalent, not exact: {fid.why}"
        else:
            which = "masked-edit-lowers-precision" if fid.lowers_precision else "masked-edit-changes"
            message = f"{edit} changes numerics: {fid.why}"
        extra = {"fidelity": fid.cls, "source": fid.source, "maps_to": what or None}
        gpu = _shown(m.gpu)
        if tm is not None and m.rule == tm.rule and m.gpu is not None:
            # a run-time mapping happens in the NPU program: said at its NPU line, the GPU line
            # it stands for in the extra (and with the masked edit)
            extra["stands_for"] = {"path": m.gpu.path, "line": m.gpu.line}
            gpu = None
        out.append(finding(code(which), key=f"port:{m.target or name}", gpu=gpu, npu=_shown(m.npu),
                           message=message,
                           check=rule.check if rule is not None else None,
                           extra=extra, rs=rs))
    return out


def _shown(s: Side | None) -> Side | None:
    """A masked edit's side as a finding shows it: its value, else its source line."""
    return s if s is None or s.value is not None else replace(s, value=s.source)


def joined(masked: list[Masked]) -> list[Masked]:
    """The masked edits, an edit the pair found the other side of (a transfer_to_npu mapping with
    the GPU line it stands for) in place of the same edit read on one side only."""
    both = {(m.rule, m.npu.path, m.npu.line, m.target) for m in masked if m.gpu is not None and m.npu is not None}
    return [m for m in masked
            if not (m.gpu is None and m.npu is not None and (m.rule, m.npu.path, m.npu.line, m.target) in both)]
