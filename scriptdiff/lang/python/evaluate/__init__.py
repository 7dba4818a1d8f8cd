"""The one evaluator of Python values: what an expression of a file is, on one device, without
running anything.

Every reader of Python that needs a value asks here: specialisation (which branch of a device
test this device runs, what `DEVICE` or `get_device()` is: the device face), the facts reader
(a setting's value through constants, option defaults, dicts and arithmetic: the value face),
the command-line reader (the constants a parser's declaration is written with, its options'
names and dests, dataclass fields), and the pair checks (an assignment's value, an optimizer's
switch, a `.to()` argument).

- kinds.py: the value model: `Kind` (device, backend, rank, world size, path, number, dtype,
  secret, flag, text, name, unknown), `kind_of`, `Value`, the value types that carry their kind
  (`DevStr`, `QName`) and the sentinels (UNDECIDED, MISSING; `NotLiteral`);
- device.py: the device face (`DeviceEval`, the rules/devices.yaml table it works from);
- static.py: the value face (`Values`, metered by scriptdiff/budget.py);
- declared.py: what a file declares: module constants, argparse options, dataclass fields.

`value(p, node)` is a value of the file `p` (NotLiteral when it is not known statically);
`read(p, node)` is a `Value`: the value (UNDECIDED when unknown), its kind, the names it was
read through. A kind can be known when the value is not: `int(os.environ["RANK"])` is a rank.
"""
from __future__ import annotations

import libcst as cst

from ....ruleset.devices import family_of
from ....ruleset.rules import code, load
from ....ruleset.secrets import is_secret
from ..parse import Parsed, dotted, qualified_name, rules
from .declared import add_argument, constant, fields, flag_define, is_dataclass, module_consts, option_default
from .device import DeviceEval, device_test, family_entry, prepared, switch, truth, tuning
from .kinds import (MISSING, MODULE, SPEC, UNDECIDED, DevStr, DictRef, Env, FuncRef, Kind, NotLiteral, QName, Value,
                    kind_of, number, plumbing_table)
from .static import Values, clip, device_key, device_value, env_read, environment, literal

__all__ = ["MISSING", "MODULE", "SPEC", "UNDECIDED", "DevStr", "DeviceEval", "DictRef", "Env", "FuncRef", "Kind",
           "NotLiteral", "QName", "Value", "Values", "add_argument", "clip", "constant", "device_key", "device_test",
           "device_value", "env_read", "environment", "family_entry", "fields", "flag_define", "is_dataclass", "kind_of", "literal",
           "module_consts", "number", "option_default", "prepared", "read", "switch", "truth", "tuning", "value"]

# the parameters whose environment default (rules/signatures.yaml `env_defaults`) is of a kind
_ENV_KINDS = {"rank": Kind.RANK, "world_size": Kind.WORLD_SIZE}


def value(p: Parsed, node, used: list | None = None):
    """The value of `node` in file `p` on its device; `used` gets (name, node) for each name it
    was read through. Raises NotLiteral when it is not known statically."""
    return Values(p).evaluate(node, [] if used is None else used)


def read(p: Parsed, node) -> Value:
    """`node`'s value with its kind (module doc)."""
    used: list = []
    try:
        v = value(p, node, used)
    except Exception:  # NotLiteral, and whatever a hostile value raises: unknown
        v = UNDECIDED
    via = tuple(name for name, _node in used)
    return Value(v, _kind(p, node, v, via), via)


def _kind(p: Parsed, node, v, via: tuple) -> Kind:
    if isinstance(v, str) and is_secret(dotted(node) or (via[-1] if via else None), v):
        return Kind.SECRET
    if isinstance(v, str) and v.lower() in plumbing_table().backends:
        return Kind.BACKEND
    if isinstance(v, str) and family_of(v) is not None:  # "npu:0", the run's device (DEVICE, get_device())
        return Kind.DEVICE
    read_from = _read_from(p, node)
    if read_from is not None:
        return read_from
    return kind_of(v)


def _read_from(p: Parsed, node) -> Kind | None:
    """The kind of a value by where it is read: an environment variable a call's parameter
    defaults to (`int(os.environ["RANK"])`: a rank), or a device count
    (`torch.cuda.device_count()`: a world size); through a module constant once."""
    if type(node) is cst.Name and node.value in p.consts:
        node = p.consts[node.value]
    var = env_read(p, node)
    if var is not None:
        for entry in (load().section("call_signatures", {}) or {}).values():
            for param, name in ((entry or {}).get("env_defaults") or {}).items():
                if name == var and param in _ENV_KINDS:
                    return _ENV_KINDS[param]
        counts = ((rules().raw.get("device_refactors") or {}).get("device_count") or {})
        return Kind.WORLD_SIZE if var in (counts.get("env") or ()) else None
    if type(node) is cst.Call:
        counts = ((rules().raw.get("device_refactors") or {}).get("device_count") or {})
        if qualified_name(p, node.func) in (counts.get("gpu") or ()):
            return Kind.WORLD_SIZE
    return None
