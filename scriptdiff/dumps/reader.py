"""msprobe dumps read from disk, a call at a time.

msprobe's PrecisionDebugger writes, per step and rank, `dump_path/stepN/rankR/` (`procPID/`
when torch.distributed is not initialised):

  dump.json        {"task", "level", "framework", "dump_data_dir", "data": {call: record}}:
                   one record per API or module call in call order (`Functional.linear.0.forward`,
                   `Tensor.__add__.3.backward`, `Module.layers.0.attn.SelfAttention.forward.0`,
                   `Module.layers.0.fc1.Linear.parameters_grad.0`); a record holds `input_args`,
                   `input_kwargs`, `output` (backward: `input`, `output`), each tensor as
                   dtype, shape, Max, Min, Mean, Norm (task statistics), an md5 (summary md5)
                   and, with task tensor, the `data_name` of its file in dump_tensor_data/
  stack.json       the Python stack of each group of calls: {"0": [[call, ...], [frame, ...]]}
                   (older releases: {call: [frame, ...]}), a frame being
                   "File PATH, line N, in FUNC, \\n SOURCE"
  construct.json   {call: the module call it ran in, or null}
  dump_tensor_data/  the saved tensors (task tensor): .pt (PyTorch), .npy (MindSpore)

A side given on the command line is a dump folder, a step folder, a rank folder or a
dump.json; its ranks are found by name (stepN, rankR, procPID), never by walking
dump_tensor_data. dump.json is streamed (jsonload.Stream): memory follows one call. Saved
tensors are read only through safe loaders: .npy by its header (an object array is refused,
nothing is unpickled), safetensors by its header, .pt through torch.load(weights_only=True)
(checks/checkpoints.py, `pip install 'scriptdiff[torch]'`).
"""
from __future__ import annotations

import json
import math
import os
import sys
import threading
import warnings
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

from .. import budget
from ..inputs.jsonload import JSONError, Stream, number
from ..inputs.sources import SourceError, check_regular, open_regular

DIRECTIONS = ("forward", "backward", "parameters_grad")
STATS = ("Max", "Min", "Mean", "Norm")
HEADER = ("task", "level", "framework", "dump_data_dir")
MODULE_KINDS = ("Module", "Cell")


class DumpError(Exception):
    """A dump that cannot be read: one line naming the file and the reason."""


# ------------------------------------------------------------------------------ where

@dataclass
class Rank:
    """One rank of one step: the folder holding its dump.json."""

    label: str  # relative to the side given: "step0/rank0", "rank1", "" (the folder itself)
    folder: str  # as shown
    dump: str  # dump.json
    stack: str | None = None
    construct: str | None = None
    data_dir: str | None = None  # dump_tensor_data/
    order: tuple = ()  # (step, rank) numbers, for execution order across ranks

    @property
    def step(self) -> str:
        return self.label.split("/", 1)[0] if "/" in self.label else ""


def _number(name: str, prefix: str) -> int | None:
    rest = name[len(prefix):]
    return int(rest) if name.startswith(prefix) and rest.isdigit() and len(rest) < 10 else None


def _is_rank(name: str) -> bool:
    return name == "rank" or _number(name, "rank") is not None or _number(name, "proc") is not None


def _rank(folder: str, label: str, order: tuple) -> Rank:
    def there(name: str) -> str | None:
        p = os.path.join(folder, name)
        return p if os.path.isfile(p) else None

    data = os.path.join(folder, "dump_tensor_data")
    return Rank(label=label, folder=folder, dump=os.path.join(folder, "dump.json"), stack=there("stack.json"),
                construct=there("construct.json"), data_dir=data if os.path.isdir(data) else None, order=order)


def _children(folder: str) -> list[str]:
    try:
        return sorted(e.name for e in os.scandir(folder) if e.is_dir(follow_symlinks=True))
    except OSError as e:
        raise DumpError(f"{folder}: cannot read folder: {e.strerror or e}") from None


def locate(spec: str) -> list[Rank]:
    """The ranks of one side: a dump.json, a rank folder, a step folder (rankR/ or procPID/
    inside) or a dump folder (stepN/ inside). A step's only procPID/ folder is labelled
    `proc` (a process id does not pair two runs); a step with several keeps their names."""
    spec = spec.rstrip("/") or "/"
    if os.path.isfile(spec):
        folder = os.path.dirname(spec) or "."
        r = _rank(folder, "", (0, 0))
        r.dump = spec
        return [r]
    if not os.path.isdir(spec):
        raise DumpError(f"{spec}: no such file or directory")
    if os.path.isfile(os.path.join(spec, "dump.json")):
        return [_rank(spec, "", (0, 0))]
    out: list[Rank] = []

    def ranks(step_dir: str, step_label: str, step_no: int) -> None:
        names = [n for n in _children(step_dir) if _is_rank(n) and os.path.isfile(os.path.join(step_dir, n, "dump.json"))]
        procs = [n for n in names if n.startswith("proc")]
        for n in names:
            no = _number(n, "rank")
            label = "proc" if n.startswith("proc") and len(procs) == 1 else n
            out.append(_rank(os.path.join(step_dir, n), f"{step_label}/{label}".strip("/"),
                             (step_no, no if no is not None else 0)))

    steps = [n for n in _children(spec) if _number(n, "step") is not None]
    for n in steps:
        ranks(os.path.join(spec, n), n, _number(n, "step"))
    if not steps:
        ranks(spec, "", 0)
    if not out:
        raise DumpError(f"{spec}: no msprobe dump here (a dump.json, or stepN/rankR/dump.json folders)")
    return sorted(out, key=lambda r: (r.order, r.label))


# ------------------------------------------------------------------------------- calls

class Tensor:
    """One tensor as the dump describes it; `bad`: its fields that are there but not of their
    type, as (field, what: `is {"a": 1}, not a number`), which are not compared (stats.py says so)."""

    __slots__ = ("dtype", "shape", "stats", "md5", "data_name", "bad")

    def __init__(self, dtype, shape, stats, md5, data_name, bad=()):
        self.dtype, self.shape, self.stats, self.md5, self.data_name = dtype, shape, stats, md5, data_name
        self.bad = bad

    def nonfinite(self) -> bool:
        return any(v is not None and not math.isfinite(v) for v in self.stats)

    def shown(self) -> str:
        vals = ", ".join(f"{k} {_g(v)}" for k, v in zip(STATS, self.stats) if v is not None)
        return f"{_dtype(self.dtype)} {list(self.shape) if self.shape is not None else '?'}" + (f" ({vals})" if vals else "")


def _g(v: float) -> str:
    return f"{v:.6g}"


def _dtype(d) -> str:
    return str(d).replace("torch.", "") if d is not None else "?"


class Scalar:
    """A value that is not a tensor (an int, a float, a dtype, a device, a string, a slice)."""

    __slots__ = ("type", "value")

    def __init__(self, type_, value):
        self.type, self.value = type_, value

    def shown(self) -> str:
        v = self.value
        if isinstance(v, str):
            return repr(v)
        if isinstance(v, float):
            r = repr(v)
            return r if len(r) <= 12 else f"{v:.10g}"
        return str(v)


class Call:
    """One API or module call of one rank, as the dump has it (a plain class with slots: a
    dump has hundreds of thousands of them)."""

    __slots__ = ("name", "api", "op", "module", "direction", "index", "phase", "slots", "dropped", "malformed",
                 "form", "token")

    def __init__(self, name: str, api: str, op: str, module: str | None, direction: str, index: int, phase: int,
                 slots: dict | None = None, dropped: int = 0, malformed: list | None = None, form: str | None = None):
        self.name = name
        self.api = api  # Functional.linear | Module.layers.0.attn.qkv.Linear
        self.op = op  # linear | Linear (a module's class)
        self.module = module  # a module call's path: layers.0.attn.qkv
        self.direction = direction  # forward | backward | parameters_grad
        self.index = index  # position in its dump
        self.phase = phase  # 0 forward pass, 1 backward pass, 2 after it (the optimizer)
        # "input.0", "output.0", "parameters_grad.weight.0" -> Tensor | Scalar | None
        self.slots = {} if slots is None else slots
        self.dropped = dropped  # slots past the budget
        self.malformed = [] if malformed is None else malformed  # what of its record is not of its type
        self.form = form  # a port form the stack gave it (an optimizer's calls)
        self.token = f"{api}:{direction}"  # what the matcher pairs calls by

    @property
    def is_module(self) -> bool:
        return self.module is not None

    def __repr__(self) -> str:
        return f"Call({self.name!r}, {len(self.slots)} slots)"


def parse_name(name: str) -> tuple[str, str, str | None, str]:
    """(api, op, module path, direction) of a dumped call name."""
    head, _sep, direction = name.rpartition(".")
    if direction in DIRECTIONS:  # an API's call, `Functional.linear.12.forward`: the usual name, told at once
        api, _sep, number = head.rpartition(".")
        if number.isdigit() and "." in api:
            return api, api.partition(".")[2], None, direction
    parts = name.split(".")
    if parts[0] in MODULE_KINDS and len(parts) >= 5 and parts[-1].isdigit() and parts[-2] in DIRECTIONS:
        path = ".".join(parts[1:-3])
        return f"{parts[0]}.{path}.{parts[-3]}", parts[-3], path, parts[-2]
    if len(parts) >= 4 and parts[-1] in DIRECTIONS and parts[-2].isdigit():
        return ".".join(parts[:-2]), ".".join(parts[1:-2]), None, parts[-1]
    if len(parts) >= 2 and parts[-1] in DIRECTIONS:
        return ".".join(parts[:-1]), parts[-2], None, parts[-1]
    return name, parts[-1], None, "forward"


def _num(v) -> float | None:
    return v if type(v) is float else number(v)


def said(v) -> str:
    """A field's value as a message quotes it: its JSON, cut short."""
    try:
        text = json.dumps(v, ensure_ascii=False)
    except (TypeError, ValueError):
        text = type(v).__name__
    return text if len(text) <= 40 else text[:37] + "..."


def _leaf(d: dict):
    if type(d) is _Leaf:
        return _typed_leaf(d)
    t = d.get("type")
    if isinstance(t, str) and ("Tensor" in t or "ndarray" in t or "Parameter" in t) or ("dtype" in d and "shape" in d):
        get = d.get
        shape, md5, name, dtype = get("shape"), get("md5"), get("data_name"), get("dtype")
        raw = (get("Max"), get("Min"), get("Mean"), get("Norm"))
        stats = (_num(raw[0]), _num(raw[1]), _num(raw[2]), _num(raw[3]))
        bad: list = []  # a field there but not of its type: not compared, and said (never agreement)
        sizes = None
        if type(shape) is list:
            for x in shape:  # a loop, not all(): this runs for every tensor of a dump
                if type(x) is not int or x < 0:
                    break
            else:
                sizes = tuple(shape)
        if sizes is None and shape is not None:
            bad.append(("shape", f"is {said(shape)}, not a list of sizes"))
        shape = sizes
        if dtype is not None and type(dtype) is not str:
            bad.append(("dtype", f"is {said(dtype)}, not a name"))
            dtype = None
        if md5 is not None and type(md5) is not str:
            bad.append(("md5", f"is {said(md5)}, not a digest"))
            md5 = None
        if None in stats:
            bad += [(k, f"is {said(r)}, not a number") for k, r, v in zip(STATS, raw, stats) if v is None and r is not None]
        return Tensor(dtype, shape, stats, md5, name if type(name) is str else None, tuple(bad))
    value = d.get("value")
    if isinstance(value, list):
        value = tuple(value)
    elif isinstance(value, dict):
        value = repr(value)[:budget.DUMP_DICT_CHARS]
    return Scalar(str(t), value)


def _is_leaf(v) -> bool:
    return type(v) is dict and ("type" in v or ("dtype" in v and "shape" in v)) or type(v) is _Leaf


def _typed_leaf(d) -> "Tensor | Scalar":
    """_leaf of a leaf the compiled reader decoded (typed_runs): the same Tensor or Scalar, from
    fields already of their types (an absent one is UNSET, read as `d.get` reads it: None)."""
    unset = _UNSET
    t, dtype, shape = d.type, d.dtype, d.shape
    if isinstance(t, str) and ("Tensor" in t or "ndarray" in t or "Parameter" in t) or \
            (dtype is not unset and shape is not unset):
        stats = (d.Max, d.Min, d.Mean, d.Norm)
        if unset in stats:
            stats = tuple(None if v is unset else v for v in stats)
        md5, name = d.md5, d.data_name
        return Tensor(None if dtype is unset else dtype, tuple(shape) if type(shape) is list else None,
                      stats, None if md5 is unset else md5, None if name is unset else name)
    value = d.value
    if value is unset:
        value = None
    elif isinstance(value, list):
        value = tuple(value)
    elif isinstance(value, dict):
        value = repr(value)[:budget.DUMP_DICT_CHARS]
    return Scalar(str(None if t is unset else t), value)


def _flatten(value, prefix: str, out: dict, call: Call) -> None:
    """Each leaf of a record's section under msprobe's name (`input.0`, `input.dim`,
    `output.0.1`), walked without recursion, at most budget.DUMP_SLOTS leaves and
    budget.DUMP_DEPTH levels per call (more is counted, not kept)."""
    if type(value) is list and len(out) + len(value) <= budget.DUMP_SLOTS and all(map(_is_leaf, value)):
        for i, v in enumerate(value):  # the usual section: a list of tensors and values
            out[f"{prefix}.{i}"] = _leaf(v)
        return
    stack = [(value, prefix, 0)]
    while stack:
        v, name, depth = stack.pop()
        if _is_leaf(v) or not isinstance(v, (dict, list)):
            if len(out) >= budget.DUMP_SLOTS:
                call.dropped += 1
                continue
            if _is_leaf(v) or v is None:
                out[name] = None if v is None else _leaf(v)
            else:  # msprobe describes every value ({"type": "int", "value": 3}): a bare one is not its
                out[name] = Scalar(type(v).__name__, v)
                call.malformed.append(f"{name} is {said(v)}, not a described value")
        elif depth < budget.DUMP_DEPTH:
            items = list(v.items()) if isinstance(v, dict) else list(enumerate(v))
            stack.extend((x, f"{name}.{k}", depth + 1) for k, x in reversed(items))
        else:  # deeper than the budget
            call.dropped += 1


SECTIONS = (("input_args", "input"), ("input_kwargs", "input"), ("input", "input"), ("output", "output"),
            ("parameters", "parameters"))


def make_call(name: str, rec, index: int, phase: int, parsed: tuple | None = None) -> Call:
    api, op, module, direction = parsed or parse_name(name)
    call = Call(name, api, op, module, direction, index, phase)
    if not isinstance(rec, dict):
        call.malformed.append(f"its record is {said(rec)}, not an object")
        return call
    slots = call.slots
    if direction == "parameters_grad":
        _flatten(rec, "parameters_grad", slots, call)
        return call
    for key, prefix in SECTIONS:
        v = rec.get(key, _NO)
        if v is _NO or (not v and type(v) in (list, dict)):  # (an empty section has no slots)
            continue
        if type(v) is list and len(slots) + len(v) <= budget.DUMP_SLOTS and all(map(_is_leaf, v)):
            for i, x in enumerate(v):  # the usual section: a list of tensors and values (_flatten's first case)
                slots[f"{prefix}.{i}"] = _leaf(x)
        elif v is None or isinstance(v, (list, dict)):
            _flatten(v, prefix, slots, call)
        else:  # a section is a list or an object of tensors and values
            call.malformed.append(f"{key} is {said(v)}, not a list")
    return call


_NO = object()


@dataclass
class Header:
    """What a dump.json says of itself."""

    task: str | None = None
    level: str | None = None
    framework: str | None = None
    calls: int = 0


@contextmanager
def _document(path: str, what: str):
    """A JSON file of the dump opened as a Stream at its top-level object; every way it can
    fail is a DumpError, one line naming the file."""
    try:
        fh = open_regular(path, path)
    except SourceError as e:
        raise DumpError(str(e)) from None
    try:
        with fh:
            doc = Stream(fh, budget.DUMP_RECORD)
            if doc.peek() != "{":
                raise DumpError(f"{path}: not an msprobe {what} (not a JSON object)")
            yield doc
    except JSONError as e:
        raise DumpError(f"{path}: not valid JSON: {e}") from None
    except OSError as e:
        raise DumpError(f"{path}: cannot read: {e.strerror or e}") from None


def survey(rank: Rank) -> Header:
    """A rank's dump.json read through once: its header and its number of calls (every call
    decoded, none kept); raises DumpError as `calls` does."""
    h = Header()
    for _ in calls(rank, h, build=False):
        pass
    return h


def calls(rank: Rank, header: Header, build: bool = True, typed: bool = True) -> Iterator[Call]:
    """The calls of one rank's dump.json in order, streamed; raises DumpError (one line) for
    a file that cannot be read or is not a dump. Without `build`, each call is decoded (so
    a damaged file is found) and None yielded. Runs of calls are decoded by the compiled
    reader where it can take them (`typed`: typed_runs, the same calls; counted_runs without
    `build`), the others one at a time by json's."""
    seen = False
    phase = 0
    i = 0
    decode = (typed_runs() if build else counted_runs()) if typed else None
    with _document(rank.dump, "dump.json") as doc:
        for key in doc.members():
            if key in HEADER:
                v = doc.value()
                if isinstance(v, str) and key != "dump_data_dir":
                    setattr(header, key, v)
                continue
            if key != "data":
                continue
            seen = True
            if doc.peek() != "{":
                raise DumpError(f"{rank.dump}: \"data\" is not an object of calls; not read")
            members = doc.runs(decode, budget.DUMP_RUN) if decode is not None else doc.items()
            for name, rec in members:
                for name, rec in (rec if name is None else ((name, rec),)):  # a run: its calls, made
                    header.calls = i + 1
                    if not build:
                        i += 1
                        yield None
                        continue
                    if type(rec) is Call:
                        call, direction = rec, rec.direction
                    else:
                        parsed = parse_name(name)
                        call, direction = make_call(name, rec, i, 0, parsed), parsed[3]
                    if direction != "forward":
                        phase = 1
                    elif phase:
                        phase = 2
                    call.index, call.phase = i, phase if direction == "forward" else 1
                    i += 1
                    yield call
    if not seen:
        raise DumpError(f"{rank.dump}: no \"data\" object: not an msprobe dump.json")


# -------------------------------------------------------------------- the compiled reader

_Leaf = None  # the compiled reader's leaf type (typed_runs), once it is made
_UNSET = None  # and its mark of an absent field (msgspec.UNSET)


_COUNT = threading.local()  # .members: calls of the run at hand, counted one by one (a name given
# twice is two) by each thread that reads a dump


def typed_runs():
    """`decode(text) -> [(name, Call), ...] | None` for jsonload.Stream.runs: a run of dump.json's
    calls ("{name: record, ...}") decoded by msgspec into typed leaves (a tensor's statistics read
    as numbers there) and made into the very Calls make_call makes of json's dicts. It takes only
    what it reads exactly as json does; anything else is None and those calls are read one at a
    time by json's decoder: JSON that msgspec refuses (NaN, a lone surrogate, a number out of
    range: json's errors and values then apply), a field not of its type (a shape of -1, a
    statistic spelled as a string: make_call says so), a record or section that is not an
    object or list, an object in a section that is not a leaf, and a call name given twice (a
    dict keeps one; json's items() gives both: the run's members are counted). None without
    msgspec (a dependency, imported here: only reading a dump's calls pays for it)."""
    global _Leaf, _UNSET
    try:
        import msgspec
    except ImportError:  # pragma: no cover - kept optional for a partial install: json reads every call
        return None
    _Leaf, section, member = _types()
    _UNSET = msgspec.UNSET
    decode = msgspec.json.Decoder(dict[str, dict[str, section]]).decode
    members = msgspec.json.Decoder(dict[str, member]).decode

    def run(text: str):
        if _long_digits(text):
            return None  # a number json refuses (int_max_str_digits) where msgspec skips a field unread
        try:
            recs = decode(text)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            return None  # (nested past the interpreter's depth: json says so at its place)
        _COUNT.members = 0
        members(text)  # (a tenth of the decoding's time: it makes nothing)
        if _COUNT.members != len(recs):
            return None  # a name given twice
        out = []
        for name, rec in recs.items():
            call = make_call(name, rec, 0, 0, parse_name(name))
            if call.malformed or call.dropped:
                return None  # what is not of its place is said by make_call over json's values
            out.append((name, call))
        return out

    return run


def counted_runs():
    """`decode(text) -> [(None, None)] * calls | None` for jsonload.Stream.runs without `build`
    (survey): a run of calls checked and counted by msgspec, nothing made (its records are
    walked as json's decoder walks them: what json refuses, msgspec refuses or _long_digits
    finds; a record that is not an object, NaN, a lone surrogate go to json as in typed_runs)."""
    try:
        import msgspec
    except ImportError:  # pragma: no cover - kept optional for a partial install: json reads every call
        return None
    members = msgspec.json.Decoder(dict[str, _types()[2]]).decode

    def run(text: str):
        if _long_digits(text):
            return None
        _COUNT.members = 0
        try:
            members(text)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            return None
        return [(None, None)] * _COUNT.members

    return run


def _long_digits(text: str) -> bool:
    """Whether `text` may hold a run of more digits than int() converts (sys.int_max_str_digits),
    which json refuses in any field and msgspec skips in a field it does not read. Such a run
    covers 8 characters in a row of the text taken every (limit + 1) // 8 characters: those are
    looked for first, then only the stretch around them is searched."""
    limit = sys.get_int_max_str_digits()
    if not limit or len(text) <= limit:
        return False
    step = (limit + 1) // 8
    sample = text[::step].translate(_DIGIT_MARKS)
    at = sample.find("11111111")
    while at >= 0:
        if "1" * (limit + 1) in text[max(0, (at - 1) * step):(at + 9) * step].translate(_DIGIT_MARKS):
            return True
        at = sample.find("11111111", at + 1)
    return False


_DIGIT_MARKS = {c: ("1" if chr(c).isascii() and chr(c).isdigit() else "0") for c in range(128)}


def _types():
    """(Leaf, a section's type, a member that counts itself): what typed_runs decodes into, made
    once (two ranks' calls are read at once, and a leaf is told by its type's identity)."""
    global _TYPES
    if _TYPES is None:
        _TYPES = _make_types()
    return _TYPES


_TYPES = None


def _make_types():
    from typing import Annotated, Union

    import msgspec

    unset, Unset = msgspec.UNSET, msgspec.UnsetType
    Stat = Union[float, None, Unset]
    Name = Union[str, None, Unset]

    def checked(self):
        if self.type is unset and (self.dtype is unset or self.shape is unset):
            raise ValueError("an object that is not a described value")  # its keys are walked: json's

    def counted(self):
        _COUNT.members += 1

    # a described value: a tensor (its statistics numbers) or a scalar; other fields are not
    # read (as _leaf reads none). Made by defstruct: this module's annotations are strings.
    Leaf = msgspec.defstruct("Leaf", [
        ("type", Name, unset), ("dtype", Name, unset),
        ("shape", Union[list[Annotated[int, msgspec.Meta(ge=0)]], None, Unset], unset),
        ("Max", Stat, unset), ("Min", Stat, unset), ("Mean", Stat, unset), ("Norm", Stat, unset),
        ("md5", Name, unset), ("data_name", Name, unset), ("value", Any, unset)],
        namespace={"__post_init__": checked})
    Member = msgspec.defstruct("Member", [], namespace={"__post_init__": counted})

    elem = Union[Leaf, list, None]
    return Leaf, Union[list[elem], dict[str, elem], None], Member


# ------------------------------------------------------------------------------- stacks

@dataclass(frozen=True)
class Frame:
    path: str
    line: int | None
    function: str
    source: str

    def to_json(self) -> list:
        return [self.path, self.line, self.function, self.source]


def parse_frame(text) -> Frame | None:
    """msprobe's "File PATH, line N, in FUNC, \\n SOURCE" (split, never pattern-matched)."""
    if not isinstance(text, str) or not text.startswith("File "):
        return None
    head, _sep, source = text[5:].partition(", \n")
    rest, _sep, func = head.rpartition(", in ")
    path, _sep, line = rest.rpartition(", line ")
    if not path:
        return None
    return Frame(path, int(line) if line.strip().isdigit() else None, func.strip(), source.strip())


def _frames(value) -> list[Frame]:
    if isinstance(value, str):  # one string holding every frame (older releases)
        value = ["File " + p for p in value.split("File ") if p.strip()]
    if not isinstance(value, list):
        return []
    return [f for f in (parse_frame(x) for x in value[:budget.DUMP_FRAMES]) if f is not None]


def scan_stacks(path: str | None, wanted: set[str], test=None) -> tuple[dict[str, list[Frame]], dict[str, str]]:
    """One pass over a stack.json: the frames of the calls `wanted`, and for every call whose
    frames `test(frames)` labels (the optimizers' files: ports.py), that label. Streamed: a
    group's list of calls is read name by name, its frames only when needed. Raises DumpError."""
    found: dict[str, list[Frame]] = {}
    labels: dict[str, str] = {}
    if path is None:
        return found, labels
    with _document(path, "stack.json") as doc:
        for key in doc.members():
            if doc.peek() != "[":
                continue
            if key.isdigit():  # {"0": [[call, ...], [frame, ...]]}
                names: list[str] = []
                frames: list[Frame] | None = None
                for i in doc.each():
                    if i == 0 and doc.peek() == "[":
                        names = [n for n in doc.elements() if isinstance(n, str) and (n in wanted or test is not None)]
                    elif i == 1:
                        frames = _frames(doc.value())
                _take(names, frames or [], wanted, test, found, labels)
            else:  # {call: [frame, ...]}
                _take([key], _frames(doc.value()), wanted, test, found, labels)
    return found, labels


def _take(names, frames, wanted, test, found, labels) -> None:
    label = test(frames) if test is not None and frames else None
    for n in names:
        if n in wanted:
            found[n] = frames
        if label:
            labels[n] = label


def parents(path: str | None, wanted: set[str]) -> dict[str, str]:
    """The module call each wanted call ran in (construct.json), streamed; {} without one."""
    out: dict[str, str] = {}
    if path is None or not wanted:
        return out
    try:
        with _document(path, "construct.json") as doc:
            for name, parent in doc.items():
                if name in wanted and isinstance(parent, str):
                    out[name] = parent
    except DumpError:
        return out  # the module path is a detail of the report, never its verdict
    return out


# ------------------------------------------------------------------------------ tensors

def tensor_ref(rank: Rank, data_name: str):
    """A saved tensor as a safetensors_io.TensorRef, read only through a safe loader; raises
    DumpError (one line) when it cannot be."""
    from ..checks import safetensors_io as st  # lazy: keeps --help fast (numpy)
    from ..checks import checkpoints  # lazy: keeps --help fast

    if rank.data_dir is None:
        raise DumpError(f"{rank.folder}: no dump_tensor_data folder; {data_name} not read")
    if os.path.basename(data_name) != data_name or data_name in ("", ".", ".."):
        raise DumpError(f"{rank.folder}: data_name {data_name!r} is not a file name; not read")
    path = os.path.join(rank.data_dir, data_name)
    display = f"{rank.folder}/dump_tensor_data/{data_name}"
    low = data_name.lower()
    try:
        # a regular file only, before anything opens it: a FIFO (or a link to /proc/kmsg) named
        # t.pt would block the first reader that opens it (zipfile.is_zipfile did)
        if check_regular(path, display).st_size > budget.DUMP_TENSOR_BYTES:
            raise DumpError(f"{display}: larger than {budget.DUMP_TENSOR_BYTES:,} bytes; not read")
        if low.endswith(".npy"):
            return _npy_ref(path, display)
        if low.endswith(".safetensors"):
            refs, _meta = st.list_safetensors(path, display)
        elif low.endswith(checkpoints.TORCH_SUFFIXES):
            with open_regular(path, display) as fh:
                zipped = zipfile.is_zipfile(fh)
            if not zipped:  # torch.save writes a zip archive (since 1.6): a bare pickle is not one
                raise DumpError(f"{display}: not a PyTorch zip archive (a bare pickle?); never unpickled, not read")
            with warnings.catch_warnings():  # torch's own (pickle protocol) warnings are not the user's
                warnings.simplefilter("ignore")
                refs = checkpoints.torch_tensors(path, display)
        else:
            raise DumpError(f"{display}: not a .npy, .safetensors or PyTorch file; not read")
    except (st.WeightsError, SourceError) as e:
        raise DumpError(str(e)) from None
    except OSError as e:
        raise DumpError(f"{display}: cannot read: {e.strerror or e}") from None
    if len(refs) != 1:
        raise DumpError(f"{display}: holds {len(refs)} tensors, not one; not read")
    return refs[0]


_NPY = {"f2": "F16", "f4": "F32", "f8": "F64", "i1": "I8", "i2": "I16", "i4": "I32", "i8": "I64", "u1": "U8",
        "u2": "U16", "u4": "U32", "u8": "U64", "b1": "BOOL"}


def _npy_ref(path: str, display: str):
    """A .npy file by its header (numpy.lib.format): C-ordered little-endian numbers only; an
    object array (which np.load would unpickle) is refused."""
    import numpy as np

    from ..checks import safetensors_io as st  # lazy: keeps --help fast

    try:
        with open_regular(path, display) as fh:
            version = np.lib.format.read_magic(fh)
            if version not in ((1, 0), (2, 0)):
                raise ValueError(f"format version {version[0]}.{version[1]} is not read")
            read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, fortran, dtype = read(fh)
            start = fh.tell()
    except SourceError as e:
        raise DumpError(str(e)) from None
    except (ValueError, OSError, SyntaxError) as e:
        raise DumpError(f"{display}: not a .npy file: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
    code = _NPY.get(dtype.str[1:]) if dtype.byteorder in "<|=" else None
    if dtype.hasobject or code is None or (fortran and len(shape) > 1):
        raise DumpError(f"{display}: a .npy of {dtype} {'(Fortran order) ' if fortran else ''}is not read "
                        f"(only C-ordered numbers; an object array would need unpickling)")
    count = 1
    for x in shape:
        count *= int(x)
    held = os.path.getsize(path) - start
    if count * dtype.itemsize > held:
        raise DumpError(f"{display}: its header says {count:,} values of {dtype} ({count * dtype.itemsize:,} bytes) "
                        f"and the file holds {held:,} bytes after it (truncated?); not read")
    return st.TensorRef(name=os.path.basename(path), dtype=code, shape=tuple(int(x) for x in shape), display=display,
                        nbytes=count * dtype.itemsize, path=path, start=start)


def stats_of(ref) -> tuple:
    """Max, Min, Mean, Norm of a saved tensor, chunk by chunk (float64)."""
    import numpy as np

    from ..checks import safetensors_io as st  # lazy: keeps --help fast

    hi, lo, total, sq, n = -math.inf, math.inf, 0.0, 0.0, 0
    with st.Reader() as rd, np.errstate(all="ignore"):
        for part in rd.chunks(ref, budget.STAT_ELEMS * st.DTYPES[ref.dtype][1]):
            a = st.to_float64(part, ref.dtype)
            if not a.size:
                continue
            hi, lo = max(hi, float(a.max())), min(lo, float(a.min()))
            total += float(a.sum())
            sq += float(a @ a)
            n += a.size
    if not n:
        return (None, None, None, None)
    return (hi, lo, total / n, math.sqrt(sq))


def diff_stats(g, n) -> dict:
    """max |diff|, relative L2 and cosine of two saved tensors (safetensors_io.tensor_stats)."""
    from ..checks import safetensors_io as st  # lazy: keeps --help fast

    with st.Reader() as rg, st.Reader() as rn:
        return st.tensor_stats(rg, g, rn, n)


def header_info(h: Header) -> str:
    bits = [f"task {h.task}" if h.task else None, f"level {h.level}" if h.level else None,
            h.framework or None]
    return ", ".join(b for b in bits if b) or "no header"


def as_json(v: Any):
    if isinstance(v, Tensor):
        return {"dtype": v.dtype, "shape": list(v.shape) if v.shape is not None else None,
                **{k: v.stats[i] for i, k in enumerate(STATS) if v.stats[i] is not None},
                **({"md5": v.md5} if v.md5 else {})}
    if isinstance(v, Scalar):
        return {"type": v.type, "value": v.value if not isinstance(v.value, float) or math.isfinite(v.value)
                else str(v.value)}
    return None
