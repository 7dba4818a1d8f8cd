"""Device plumbing: what an expression is for the run, whatever it is called (issue 39).

A port respells where and how a program runs without changing what it computes: the device
(`"cuda"` -> `"npu"`, `torch.device(f"npu:{rank}")`, `platform.device_type`,
`get_current_device()`), the process-group backend (`"nccl"` -> `"hccl"`, a helper of the file
returning "hccl"), the functions of the device namespace (`torch.cuda.set_device` ->
`platform.set_device`). `role(p, node)` says which of these an expression is, from its value
with its kind (the evaluator's `read`: through constants, locals, class attributes, dicts,
f-strings and the file's functions) or, when its value is not known statically, from its words
(rules/devices.yaml `devices.python.plumbing`: `get_current_device` holds a device, `dist_backend`
a backend, `local_rank` a rank). The structural diff (lang/python/plumbing.py) then takes two
expressions of the same role for one abstract device.
"""
from __future__ import annotations

from typing import NamedTuple

import libcst as cst

from .... import budget
from ....ruleset.devices import family_of
from ..parse import Parsed, canon_qn, dotted, kids, qualified_name
from . import read
from .device import device_test, fstring_device
from .kinds import DevStr, Kind, named, plumbing_table, words
from .static import Values, env_read

DEVICE, BACKEND, RANK = "device", "backend", "rank"

_EXPRESSIONS = (cst.Name, cst.Attribute, cst.Call, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString,
                cst.Subscript, cst.IfExp, cst.BooleanOperation)


class Role(NamedTuple):
    """What an expression is for the run: `what` (device, backend, rank), and whether its value
    is known (`"npu"`, a helper returning "hccl") or only named (`current_device`)."""

    what: str
    known: bool


def _last(node) -> str | None:
    """The identifier an expression ends in: a name, an attribute, a call's function."""
    if type(node) is cst.Call:
        node = node.func
    if type(node) is cst.Name:
        return node.value
    if type(node) is cst.Attribute:
        return node.attr.value
    return None


def _fallback(p: Parsed, call: cst.Call):
    """The default of a read that falls back to it (`getattr(obj, "name", DEFAULT)`, `m.get("k",
    DEFAULT)`), else None: what the read holds when the setting is not given."""
    args = [a for a in call.args if a.keyword is None and not a.star]
    if len(args) != len(call.args):
        return None
    f = call.func
    if type(f) is cst.Name and f.value == "getattr" and "getattr" not in p.aliases and len(args) == 3:
        return args[2].value
    if type(f) is cst.Attribute and f.attr.value == "get" and len(args) == 2:
        return args[1].value
    return None


def role(p: Parsed, node, depth: int = 0) -> Role | None:
    """What `node` is for the run (module doc): the run's device (of either family: `"cuda"`,
    `"npu:0"`, `f"npu:{rank}"`, `torch.device(...)` of one, the run's device held in a name), its
    process-group backend, a rank; None for anything else (`"cpu"`, `"gloo"`, a number)."""
    node = p.live_of(node)  # `d if d in ["cuda", "xpu"] else "cpu"`: the operand this device evaluates
    t = type(node)
    if t not in _EXPRESSIONS or depth > budget.CALL_DEPTH:
        return None
    if t in (cst.Name, cst.Attribute):  # dev = torch.device(f"npu:{rank}"); Env.DEVICE: what it is bound to
        bound = Values(p).binding(node)
        if bound is not None:
            got = role(p, bound, depth + 1)
            if got is not None:
                return got
    if t in (cst.SimpleString, cst.ConcatenatedString):
        v = node.evaluated_value
        return of_value(v) if isinstance(v, str) else None
    if t is cst.FormattedString:
        v = fstring_device(node)
        if v is None and _fstring_backends(p, node, depth):
            return Role(BACKEND, False)  # f"{cpu_backend},{accel_backend}": the run's backends, spelt per device
        return Role(DEVICE, True) if v is not None and family_of(v) in ("cuda", "npu") else None
    if t is cst.Call:
        qn = qualified_name(p, node.func)
        q = canon_qn(qn, None) if qn else None
        if q is not None and q in plumbing_table().device_calls:
            return Role(DEVICE, True)
        f = node.func
        if type(f) is cst.Attribute and f.attr.value in ("get", "pop", "setdefault") and node.args \
                and type(node.args[0].value) is cst.SimpleString:  # kwargs.get("device", "cuda"): its key says
            what = named(node.args[0].value.evaluated_value or "")
            if what is not None:
                return Role(what, False)
        fallback = _fallback(p, node)  # getattr(args, "sync_backend", "nccl"), cfg.get("k", "cuda")
        if fallback is not None:
            inner = role(p, fallback, depth + 1)
            if inner is not None:
                return Role(inner.what, False)
        builtin_str = type(node.func) is cst.Name and node.func.value == "str" and "str" not in p.aliases
        if (q == "torch.device" or builtin_str) and node.args and node.args[0].keyword is None:
            inner = role(p, node.args[0].value, depth + 1)  # torch.device("npu", rank), str(device)
            return inner if inner is not None and inner.what == DEVICE else None
    if t is cst.IfExp:  # `get_device() if cfg.device is None else cfg.device`: both the device
        a, b = role(p, node.body, depth + 1), role(p, node.orelse, depth + 1)
        return Role(a.what, a.known and b.known) if a is not None and b is not None and a.what == b.what else None
    if t is cst.Attribute and node.attr.value == "type":  # x.device.type, torch.device(...).type
        inner = role(p, node.value, depth + 1)
        if inner is not None and inner.what == DEVICE:
            return inner
    got = read(p, node)
    v, kind = got.value, got.kind
    if kind is Kind.BACKEND or kind is Kind.DEVICE:
        r = of_value(v) if isinstance(v, str) else None
        if r is not None:
            return r
    if kind is Kind.RANK:
        return Role(RANK, False)
    var = env_read(p, node)  # int(os.environ["LOCAL_RANK"]): what the variable's words say
    if var is not None and named(var) in (DEVICE, RANK, BACKEND):
        return Role(named(var), False)
    if kind not in (Kind.UNKNOWN, Kind.NAME) or isinstance(v, (bool, int, float)):
        return None  # a value of another kind: a dtype, a number, "cpu"
    if t is cst.Call and any(type(a.value) is cst.SimpleString and family_of(a.value.evaluated_value or "") == "other"
                             for a in node.args):
        return None  # make_device("cpu"): named for a device, asked for another one
    if t in (cst.Name, cst.Attribute, cst.Call):
        what = named(_last(node))
        if what is not None:
            return Role(what, False)
    return None


def _fstring_backends(p: Parsed, node: cst.FormattedString, depth: int) -> bool:
    """An f-string made of backends joined by commas (`f"{cpu_backend},{accel_backend}"`), one
    of them at least the run's device's."""
    parts = node.parts
    exprs = [x for x in parts if type(x) is cst.FormattedStringExpression]
    if len(exprs) < 2 or any(type(x) is cst.FormattedStringText and x.value.strip(" ,") for x in parts):
        return False
    roles = [role(p, x.expression, depth + 1) for x in exprs]
    return any(r is not None and r.what == BACKEND for r in roles) and all(
        r is not None and r.what == BACKEND or _other_device_backend(x.expression) for r, x in zip(roles, exprs))


def _other_device_backend(node) -> bool:
    """A name whose words say it is the backend of a device that is not an accelerator
    (`cpu_backend`: a device word of rules/devices.yaml `families.other`, the rest a backend's
    name by the plumbing's words)."""
    d = dotted(node)
    if d is None:
        return False
    ws = words(d.rsplit(".", 1)[-1])
    rest = [w for w in ws if family_of(w) != "other"]
    return len(rest) < len(ws) and named("_".join(rest)) == BACKEND


def _composite_backend(v: str) -> bool:
    """`cpu:gloo,cuda:nccl`: backends per device, the accelerator's a known one, the others for
    devices that are not accelerators (rules/devices.yaml `families.other`)."""
    parts = [x.strip() for x in v.lower().split(",")]
    if len(parts) < 2:
        return False
    accel = False
    for x in parts:
        dev, _, b = x.rpartition(":")
        if b in plumbing_table().backends and (not dev or family_of(dev) in ("cuda", "npu")):
            accel = True
        elif family_of(dev) != "other":  # `cpu:gloo`: a backend for another device than the accelerator
            return False
    return accel


def of_value(v: str) -> Role | None:
    """The role a string value has: the run's device, its backend, or None."""
    if family_of(v) in ("cuda", "npu"):
        return Role(DEVICE, True)
    if v.lower() in plumbing_table().backends or _composite_backend(v):
        return Role(BACKEND, True)
    if isinstance(v, DevStr) and family_of(v) in ("cuda", "npu"):
        return Role(DEVICE, True)
    return None


def _in_namespace(p: Parsed, call: cst.Call) -> str | None:
    """What a call names inside the device namespace, spelt through it (torch.npu renames to it):
    `torch.cuda.memory.x(...)` -> "memory.x"; None outside it."""
    qn = qualified_name(p, call.func)
    if qn is None:
        return None
    q = canon_qn(qn, None)
    return next((q[len(ns) + 1:] for ns in plumbing_table().namespaces if q.startswith(ns + ".")), None)


def namespace_call(p: Parsed, call: cst.Call) -> str | None:
    """The device namespace's function a call is (`torch.cuda.set_device(r)`: "set_device") when it
    only places, waits, frees or measures (plumbing `calls`), else None."""
    name = _in_namespace(p, call)
    calls = plumbing_table().calls
    if name is not None and (name in calls or any(c.endswith(".*") and name.startswith(c[:-1]) for c in calls)):
        return name
    return None


def namespace_function(p: Parsed, call: cst.Call) -> str | None:
    """Any function of the device namespace a call is (`torch.cuda.set_rng_state(s)`:
    "set_rng_state"), else None."""
    name = _in_namespace(p, call)
    return name if name is not None and "." not in name else None


def same_method(p: Parsed, call: cst.Call, name: str) -> bool:
    """The function `name` of an object the file does not import from torch (`platform.init()`,
    `current_platform.set_rng_state(s)`): the device namespace's function, the run's own device's."""
    f = call.func
    if type(f) is not cst.Attribute or f.attr.value != name:
        return False
    qn = qualified_name(p, f)
    return qn is None or not qn.startswith("torch.")


def stand_in(p: Parsed, call: cst.Call, name: str) -> bool:
    """A call that stands in for the device namespace's `name` (module doc): the same function of
    another object the file does not import from a known library (`platform.set_device(r)`,
    `get_accelerator().synchronize()`), a function of that name imported from elsewhere (`from
    kit.device import set_device`), or a helper whose words end in its words
    (`torch_set_device(r)`, `get_device_count()`)."""
    f = call.func
    last = _last(call)
    if last is None:
        return False
    if type(f) is cst.Attribute and last == name:
        qn = qualified_name(p, f)
        return qn is None or not qn.startswith("torch.")
    if type(f) is cst.Name and last == name and f.value in p.aliases:
        return not canon_qn(p.aliases[f.value], None).startswith("torch.")
    ws, want = words(last), words(name)
    return len(ws) > len(want) and ws[-len(want):] == want and all(w in plumbing_table().prefixes for w in ws[:-len(want)])


def is_count(p: Parsed, node) -> bool:
    """An expression that counts or checks the run's devices (`torch.cuda.device_count()`,
    `torch.npu.is_available()`, inside a comparison)."""
    stack = [node]
    while stack:
        x = stack.pop()
        if type(x) is cst.Call:
            qn = qualified_name(p, x.func)
            if qn is not None and (canon_qn(qn, None) in plumbing_table().counts or device_test(qn)):
                return True  # torch.cuda.device_count(), is_npu_available()
            if qn is None and dotted(x.func) is not None and any(stand_in(p, x, c.rsplit(".", 1)[-1])
                                                                 for c in plumbing_table().counts):
                return True
        if type(x) in (cst.Comparison, cst.BooleanOperation, cst.UnaryOperation, cst.Call, cst.Arg,
                       cst.ComparisonTarget):
            stack.extend(kids(x))
    return False
