"""GitHub Actions workflow commands: one annotation per finding on the changed (NPU) file.

`::error file=npu/train.py,line=12,title=SD201 use_flash_attn::message`. Severity maps to
error / warning / notice. Paths are repository-relative (see sarif.repo_relative). Every piece
of text from the inputs is made safe first (report.values.safe: a newline in a value or a
file name is shown as `\\n`), so no input can start a line, hence no workflow command, of its
own; the annotation's own line breaks are encoded as %0A.
"""
from __future__ import annotations

from .. import budget
from ..model import Severity
from .sarif import repo_relative, repo_root
from .values import clip, record_line, safe, shown
from ..ruleset.fidelity import said as masked_said


def _data(s: str) -> str:
    """A workflow command's message, whose pieces from the inputs were made safe (no line
    break of theirs is left): % and the writer's own line breaks encoded."""
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(s: str) -> str:
    """A property (file, title): made safe, then encoded."""
    return _data(safe(s)).replace(":", "%3A").replace(",", "%2C")


def render(report, root: str | None = None, full_values: bool = False, **_options) -> str:
    report.sorted()
    root = root or repo_root()
    out = []
    for f in report.findings:
        side = f.npu if (f.npu is not None and f.npu.path) else f.gpu
        props = []
        path = repo_relative(side.path, root) if side is not None else None
        if path and not path.startswith("file://"):
            props.append(f"file={_prop(path)}")
            if side.line:
                props.append(f"line={int(side.line)}")
        props.append(f"title={_prop(f'{f.rule} {f.key}')}")
        g = "(absent)" if f.gpu is None else record_line(f.check, f.gpu.value) or shown(f.gpu.value, full_values)
        n = "(absent)" if f.npu is None else record_line(f.check, f.npu.value) or shown(f.npu.value, full_values)
        where = ""
        if f.gpu is not None and f.gpu.path:
            where = f" [GPU at {safe(f.gpu.path)}{':' + str(f.gpu.line) if f.gpu.line else ''}]"
        msg = f"{clip(f.message, 2 * budget.SHOWN_CHARS, full_values)}\nGPU: {g}\nNPU: {n}{where}"
        out.append(f"::{Severity(f.severity).github} {','.join(props)}::{_data(msg)}")
    for e in report.errors:
        out.append(f"::{e.severity.github} title=scriptdiff input::{_data(f'{safe(e.path)}: {safe(e.message)}')}")
    out.append(f"scriptdiff: {Severity.tally(report.findings)}; "
               f"{masked_said(report.masked)}")
    return "\n".join(out) + "\n"
