"""What a value read from Python is: the evaluator's value model.

Every value the evaluator gives is a plain Python value (a number, a string, a bool, None, a
list) or one of the types below, and each has a *kind*, what it is for a run: a device, a
distributed backend, a rank or a world size, a path, a number, a dtype, a secret, a flag, a
piece of text, a name the imports resolve, or unknown. `kind_of(value)` says which. A value
whose kind the reading already knows carries it (`DevStr` is a device, `QName` a dtype or a
name); `Value` is a value with its kind and the names it was read through, as `read` gives
it, where a kind can be known when the value is not (`int(os.environ["RANK"])` is a rank).

Sentinels: UNDECIDED (the device face: a value that cannot be decided, kind unknown), MISSING
(nothing there), SPEC (what `find_spec` returns for an installed module), MODULE (a module a
try-import binds on this device). `NotLiteral` is raised by the value face for a value that is
not known without running the program.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from typing import NamedTuple

from .... import budget
from ....ruleset.devices import name_words, plumbing_role, table
from ....ruleset.rules import RuleSet, derived
from ..parse import rules


class Kind(str, Enum):
    """What a value is for a run (the kinds issue 39's value model flows through the program)."""

    DEVICE = "device"  # "npu:0", torch.device("cuda", r), the run's device
    BACKEND = "backend"  # "hccl", "nccl"
    RANK = "rank"  # $RANK, $LOCAL_RANK
    WORLD_SIZE = "world size"  # $WORLD_SIZE, $RANK_SIZE, torch.cuda.device_count()
    PATH = "path"
    NUMBER = "number"
    DTYPE = "dtype"  # torch.bfloat16
    SECRET = "secret"  # a credential: never shown
    FLAG = "flag"  # True / False (a device test's answer among them)
    TEXT = "text"
    NAME = "name"  # a dotted name the imports resolve (a function, a class, a module's constant)
    NONE = "none"
    LIST = "list"
    UNKNOWN = "unknown"  # not known without running the program


class _Sentinel:
    __slots__ = ("_name",)

    def __init__(self, name: str):
        self._name = name

    def __repr__(self) -> str:
        return self._name


UNDECIDED = _Sentinel("UNDECIDED")
MISSING = _Sentinel("MISSING")
SPEC = _Sentinel("SPEC")  # what find_spec returns for an installed module (truthy, not None)
MODULE = _Sentinel("MODULE")  # a module imported by a try-import that succeeds on this device


class NotLiteral(Exception):
    """The value is not known without running the program."""


class Unknown(NotLiteral):
    """A value that cannot be followed (a helper that calls itself, helpers nested past the
    bound): unknown, and said once in the input's account (static.Values.evaluate)."""


CONSTANTS = {"True": True, "False": False, "None": None}  # the names that are values


@lru_cache(maxsize=budget.NUMBER_MEMO)
def number(text: str):
    """An Integer or Float literal's value (`1_000` is 1000); cached: a constant repeated
    a hundred thousand times is parsed once."""
    return ast.literal_eval(text.replace("_", ""))


class DevStr(str):
    """A device name as the program holds it: a literal ("npu:0"), or only its type known
    (the run's device, `f"npu:{rank}"`): `exact` is False then. Its kind is DEVICE."""

    exact: bool = True
    kind = Kind.DEVICE

    @classmethod
    def of(cls, s: str, exact: bool) -> "DevStr":
        v = cls(s)
        v.exact = exact
        return v


class QName(str):
    """A dotted name that resolved through the imports (torch.bfloat16): a dtype when its
    last part is one of rules/python.yaml `dtype_names`, else a name."""

    @property
    def kind(self) -> Kind:
        names = {n for ns in (rules().raw.get("dtype_names") or {}).values() for n in ns}
        return Kind.DTYPE if self in names or self.rsplit(".", 1)[-1] in names else Kind.NAME


class Value(NamedTuple):
    """A value as `read` gives it: the value (UNDECIDED when unknown), its kind, and the names it
    was read through (module constants, `--options`, `$VARIABLES`, `D['key']`)."""

    value: object
    kind: Kind
    via: tuple = ()


class FuncRef:
    """A function of the file bound to a name (the device face follows what it returns)."""

    __slots__ = ("node",)

    def __init__(self, node):
        self.node = node


class DictRef:
    """A dict literal bound to a name (`DTYPES = {"npu": torch.float16, "cuda": torch.bfloat16}`)."""

    __slots__ = ("node",)

    def __init__(self, node):
        self.node = node


class Env:
    """Names bound in one scope (module, function), each (value, the idiom it came from)."""

    __slots__ = ("vars", "parent", "cls")

    def __init__(self, parent: "Env | None" = None, cls: bool = False):
        self.vars: dict[str, tuple] = {}
        self.parent = parent
        self.cls = cls  # a class body: its methods' `self.X = ...` flags are bound here as "self.X"

    def get(self, name: str):
        e = self
        while e is not None:
            if name in e.vars:
                return e.vars[name]
            e = e.parent
        return MISSING


def kind_of(v) -> Kind:
    """What a value is: its own kind when it carries one, else by its Python type."""
    k = getattr(v, "kind", None)
    if isinstance(k, Kind):
        return k
    if v is UNDECIDED or v is MISSING:
        return Kind.UNKNOWN
    if isinstance(v, bool) or v is SPEC or v is MODULE:
        return Kind.FLAG
    if v is None:
        return Kind.NONE
    if isinstance(v, (int, float)):
        return Kind.NUMBER
    if isinstance(v, (list, tuple)):
        return Kind.LIST
    if isinstance(v, str):
        return Kind.TEXT
    return Kind.UNKNOWN


# ------------------------------------------------------------------ kinds by name


@dataclass
class Plumbing:
    """rules/devices.yaml `devices.python.plumbing`, with the backends' names (the strings the
    backend port masks): what the value model knows of device plumbing (evaluate/plumbing.py)."""

    prefixes: frozenset
    names: dict  # role -> [tuple of words]
    flag_words: frozenset
    switch_names: frozenset
    switch_words: frozenset
    device_calls: frozenset
    namespaces: tuple
    calls: frozenset
    counts: frozenset
    parameters: frozenset
    autocast: dict
    backends: frozenset
    requests: dict  # resource_requests: calls, count, resources
    seeds: dict  # device_seeds: all, device
    moves: dict  # moves: words, verbs (a helper named for a move of a value to the device)


@derived
def plumbing_table(rs: RuleSet) -> Plumbing:
    py = (table(rs).get("python") or {}).get("plumbing") or {}
    rule = next((c for c, r in rs.rules.items() if r.name == "nccl-to-hccl"), None)
    return Plumbing(
        prefixes=frozenset(py.get("prefixes") or ()),
        names={k: [tuple(w) for w in v] for k, v in (py.get("names") or {}).items()},
        flag_words=frozenset(py.get("flag_words") or ()), switch_names=frozenset(py.get("switch_names") or ()),
        switch_words=frozenset(py.get("switch_words") or ()),
        device_calls=frozenset(py.get("device_calls") or ()),
        namespaces=tuple(py.get("namespaces") or ()),
        calls=frozenset(py.get("calls") or ()),
        counts=frozenset(py.get("counts") or ()),
        parameters=frozenset(py.get("parameters") or ()),
        autocast=dict(py.get("autocast") or {}),
        backends=frozenset(s.lower() for npu, (gpu, r) in rules(rs).whole.items() if r == rule for s in (npu, gpu)),
        requests={k: tuple(v) for k, v in (py.get("resource_requests") or {}).items()},
        seeds={k: frozenset(v) for k, v in (py.get("device_seeds") or {}).items()},
        moves={k: frozenset(v) for k, v in (py.get("moves") or {}).items()})


words = name_words  # an identifier's words (ruleset/devices.py)


def named(name: str | None) -> str | None:
    """What a name whose value is not known holds, by its words: "device", "backend" or "rank"
    (ruleset/devices.py `plumbing_role`); None for any other name."""
    return plumbing_role(name)


def switch_family(name: str) -> str | None:
    """The device family a setting's switch turns on by its name alone (`cfg.use_npu`,
    `args.use_gpu`, `self.cfg.use_mlu`: npu, cuda, other): its last part says `use` and one
    family's name (plumbing `switch_words`), and every other word is one of its `flag_words` (`use_cuda_graph`
    is no such switch; `x.is_cuda`, a tensor's own attribute, is a device test of its own), or
    an attribute named after the device alone, in lower case (plumbing `switch_names`:
    `self.config.cuda`; not `args.gpu`, which is often the device's index, nor an enum's member
    `AttnType.NPU`); else None."""
    ws = words(name.rsplit(".", 1)[-1])
    flags = plumbing_table().flag_words
    fams = {f for f, names in (table().get("families") or {}).items() if set(names) & set(ws)}
    last = name.rsplit(".", 1)[-1]
    if len(fams) == 1 and "." in name and len(ws) == 1 and ws[0] in plumbing_table().switch_names and last.islower():
        return next(iter(fams))  # `self.config.cuda`, `args.npu`: a setting named after the device alone
    if len(fams) != 1 or not plumbing_table().switch_words & set(ws):
        return None
    names = set((table().get("families") or {}).get(next(iter(fams))) or ())
    return next(iter(fams)) if all(w in flags or w in names for w in ws) else None


def may_name_switch(text: str) -> bool:
    """The cheap look before `switch_family`: the text holds a switch word or a switch name."""
    t = plumbing_table()
    low = text.lower()
    return any(w in low for w in t.switch_words | t.switch_names)


def flag_family(name: str) -> str | None:
    """The device family a flag's words test (`TORCH_NPU_AVAILABLE`, `HAS_NPU`, `is_cuda`,
    `IS_MLU_AVAILABLE`: npu, npu, cuda, other): one family's name among its words and one of the
    plumbing's `flag_words`; else None."""
    ws = words(name.rsplit(".", 1)[-1])
    if not plumbing_table().flag_words & set(ws):
        return None
    fams = {f for f, names in (table().get("families") or {}).items() if set(names) & set(ws)}
    return fams.pop() if len(fams) == 1 else None  # "other" (IS_MLU_AVAILABLE): false on both sides
