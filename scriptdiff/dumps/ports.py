"""What rules/dumps.yaml says about dumps, as the matcher and the cause finder use it.

  forms      each port's ways of making one computation (dump_ports): a call, an eager block
             of calls, a module's calls, the calls under an optimizer's frames; `found` tells
             which form starts at the head of a queue of calls, and how many calls it takes
  expected   whether an NPU form is the port's expected substitution for a GPU form
  depends    the settings a diverging call depends on (dump_depends)
  library    whether a stack frame is a library's, not the training scripts' (dump_frames)
  same_value argument values equal up to the port (`cuda:0` and `npu:0`, dump_values)
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass

from ..ruleset.rules import RuleSet, derived


@dataclass(frozen=True)
class Form:
    port: str
    name: str
    title: str
    calls: frozenset = frozenset()
    sequence: tuple = ()  # of frozensets (anchors)
    gap: int = 0
    modules: tuple = ()
    frames: tuple = ()

    @property
    def label(self) -> str:
        return f"{self.port}/{self.name}"


@dataclass(frozen=True)
class Port:
    name: str
    title: str
    forms: tuple  # of Form
    stands_for: dict  # NPU form -> frozenset of GPU forms


@derived
def ports(rs: RuleSet) -> dict[str, Port]:
    out = {}
    for name, p in (rs.section("dump_ports") or {}).items():
        forms = tuple(Form(port=name, name=f, title=d.get("title", f), calls=frozenset(d.get("calls", ())),
                           sequence=tuple(frozenset(a) for a in d.get("sequence", ())), gap=d.get("gap", 0),
                           modules=tuple(x.lower() for x in d.get("modules", ())), frames=tuple(d.get("frames", ())))
                      for f, d in p["forms"].items())
        out[name] = Port(name=name, title=p.get("title", name), forms=forms,
                         stands_for={k: frozenset(v) for k, v in (p.get("stands_for") or {}).items()})
    return out


def form(label: str) -> Form | None:
    port, _, name = label.partition("/")
    p = ports().get(port)
    return next((f for f in p.forms if f.name == name), None) if p else None


def expected(port: str, gform: str, nform: str) -> bool:
    """The NPU form is the port's expected substitution for the GPU form."""
    p = ports().get(port)
    return p is not None and gform in p.stands_for.get(nform, ())


@derived
def _frame_forms(rs: RuleSet) -> tuple:
    return tuple((pat, f) for p in ports(rs).values() for f in p.forms for pat in f.frames)


def frames_form(frames) -> str | None:
    """The label of the frames form the innermost matching frame belongs to (an optimizer's
    step), for reader.scan_stacks."""
    pats = _frame_forms()
    for fr in frames:
        path = fr.path.replace("\\", "/")
        for pat, f in pats:
            if fnmatch.fnmatchcase(path, pat):
                return f.label
    return None


def _glue(call, direction: str) -> bool:
    return not call.is_module and call.direction == direction


def found(queue, start: int, limit: int) -> list[tuple[Form, int]]:
    """The forms whose pattern starts at queue[start] (a call, an eager block, a module's
    calls, an optimizer's calls): (form, number of calls it takes from start), longest first.
    Only the first `limit` calls of the queue are looked at."""
    if start >= len(queue):
        return []
    head = queue[start]
    out: list[tuple[Form, int]] = []
    for p in ports().values():
        for f in p.forms:
            n = 0
            if f.calls:
                n = 1 if not head.is_module and head.op in f.calls else 0
            elif f.sequence:
                n = _sequence(queue, start, limit, f)
            elif f.modules:
                n = _module_body(queue, start, limit, f)
            elif f.frames:
                if head.form == f.label:
                    n = 1
                    while start + n < min(len(queue), limit) and queue[start + n].form == f.label:
                        n += 1
            if n:
                out.append((f, n))
    return sorted(out, key=lambda x: -x[1])


def sequence_at(queue, start: int, f: Form) -> int:
    """The calls an eager block of form `f` takes from queue[start] (0: none starts there)."""
    return _sequence(queue, start, len(queue), f) if queue[start].op in f.sequence[0] else 0


def _sequence(queue, start: int, limit: int, f: Form) -> int:
    """Calls from start to the last anchor of an eager block (anchors in order, reversed in
    the backward pass, at most f.gap other calls before and between them), or 0."""
    head = queue[start]
    if head.is_module:
        return 0
    direction = head.direction
    anchors = f.sequence if direction == "forward" else tuple(reversed(f.sequence))
    i, k, gap = start, 0, 0
    end = min(len(queue), limit)
    while i < end and k < len(anchors):
        c = queue[i]
        if not _glue(c, direction):
            return 0
        if c.op in anchors[k]:
            k += 1
            gap = 0
        else:
            gap += 1
            if gap > f.gap:
                return 0
        i += 1
    return i - start if k == len(anchors) else 0


def _module_body(queue, start: int, limit: int, f: Form) -> int:
    """The API calls from start up to the module call they ran in (a dump at level mix or L0
    lists a module's calls before its own), when that module's class matches the form; the
    module's parameters_grad entries on the way are skipped. 0 when another module call, or
    none within `limit`, comes first."""
    direction = queue[start].direction if not queue[start].is_module else None
    if direction is None:
        return 0
    end = min(len(queue), limit)
    for i in range(start, end):
        c = queue[i]
        if not c.is_module:
            if c.direction != direction:
                return 0
            continue
        if c.direction == "parameters_grad":
            continue
        if c.direction == direction and any(fnmatch.fnmatchcase(c.op.lower(), pat) for pat in f.modules):
            return i - start
        return 0
    return 0


# ------------------------------------------------------------------------ depends, frames

@derived
def _depends(rs: RuleSet) -> tuple:
    return tuple(rs.section("dump_depends") or ())


def depends(op: str, port: str | None, phase: int, first: bool, kind: str) -> list[tuple[str, tuple]]:
    """(title, keys) of each dependency entry the diverging call matches."""
    out = []
    phases = {0: "forward", 1: "backward", 2: "after_backward"}
    for d in _depends():
        if (op in d.get("calls", ()) or (port is not None and d.get("port") == port)
                or d.get("phase") == phases.get(phase) or (first and d.get("first"))
                or d.get("kind") == kind):
            out.append((d["title"], tuple(d["keys"])))
    return out


@derived
def _library(rs: RuleSet) -> tuple:
    return tuple((rs.section("dump_frames") or {}).get("library", ()))


def library(path: str) -> bool:
    p = path.replace("\\", "/")
    return any(fnmatch.fnmatchcase(p, pat) for pat in _library())


@derived
def _value_ports(rs: RuleSet) -> tuple:
    return tuple((d["gpu"], d["npu"]) for d in rs.section("dump_values") or ())


def same_value(g, n) -> bool:
    """Equal, or equal once the GPU word of a port is the NPU's (`cuda:0` and `npu:0`)."""
    if g == n:
        return True
    if isinstance(g, str) and isinstance(n, str):
        for gw, nw in _value_ports():
            for a, b in ((g, n), (g.lower(), n.lower())):
                if (a == gw and b == nw) or (a.startswith(gw + ":") and b == nw + a[len(gw):]):
                    return True
    return False
