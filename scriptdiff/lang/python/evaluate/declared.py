"""What a file declares its values to be: module constants, argparse options, absl's and
TensorFlow's flags (`flags.DEFINE_float(name, default, help)`) and dataclass fields with their
defaults, and the constants written in a parser's declaration.

The value face reads `LR` through the module's constants and `args.lr` through the default of
the one option or field called lr (`option_default`); the facts reader reads each option's and
field's default as a setting, and the command-line reader (cmdline.py) each option's names, all
through the declarations read here.
"""
from __future__ import annotations

import libcst as cst

from ....inputs import flags
from ..parse import Parsed, dotted
from .kinds import CONSTANTS, MISSING


def constant(node):
    """The value of a node written as a constant: True, False, None, or a string (its evaluated
    value); MISSING for anything else (`allow_abbrev=False`, `init=False`, `"--lr"`)."""
    t = type(node)
    if t is cst.Name:
        return CONSTANTS.get(node.value, MISSING)
    if t in (cst.SimpleString, cst.ConcatenatedString):
        v = node.evaluated_value
        return MISSING if v is None else v
    return MISSING


def module_consts(p: Parsed) -> None:
    """Fill p.consts (module-level name -> the value node of its last assignment) and
    p.reassigned (the names assigned more than once)."""
    for s in p.body:
        if s.kind != "simple":
            continue
        for small in s.node.body:
            t = type(small)
            if t is cst.Assign and len(small.targets) == 1 and type(small.targets[0].target) is cst.Name:
                name = small.targets[0].target.value
            elif t is cst.AnnAssign and small.value is not None and type(small.target) is cst.Name:
                name = small.target.value
            else:
                continue
            if name in p.consts:
                p.reassigned.add(name)
            p.consts[name] = small.value


# ------------------------------------------------------------------------------ dataclasses
def is_dataclass(cls: cst.ClassDef) -> bool:
    return any((dotted(d.decorator.func if type(d.decorator) is cst.Call else d.decorator) or "")
               .rsplit(".", 1)[-1] == "dataclass" for d in cls.decorators)


def fields(cls: cst.ClassDef) -> list[tuple[cst.AnnAssign, str, cst.CSTNode | None, dict]]:
    """(statement, name, default node or None, keywords of its `field(...)`) of each annotated
    field of a class body: `lr: float = 1e-4`, `lr: float = field(default=1e-4)` (its default=),
    `lr: float` (no default)."""
    out = []
    for stmt in (cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()):
        for small in (stmt.body if type(stmt) is cst.SimpleStatementLine else ()):
            if type(small) is not cst.AnnAssign or type(small.target) is not cst.Name:
                continue
            value, kws = small.value, {}
            if type(value) is cst.Call and (dotted(value.func) or "").rsplit(".", 1)[-1] == "field":
                kws = {a.keyword.value: a.value for a in value.args if a.keyword is not None}
                value = kws.get("default")
            out.append((small, small.target.value, value, kws))
    return out


# ------------------------------------------------------------------------------ argparse
def add_argument(call: cst.Call) -> tuple[list[str], dict, object]:
    """An `add_argument` call as written: its option strings (the positional string literals),
    its keywords (name -> Arg) and its dest (argparse's: `dest=`, else from the option strings;
    None when there is none)."""
    strings, kws = [], {}
    for a in call.args:
        if a.keyword is not None:
            kws[a.keyword.value] = a
        elif type(a.value) is cst.SimpleString:
            s = a.value.evaluated_value
            if isinstance(s, str):
                strings.append(s)
    if "dest" in kws and type(kws["dest"].value) is cst.SimpleString:
        return strings, kws, kws["dest"].value.evaluated_value
    return strings, kws, flags.dest(strings)


# absl's and TensorFlow's flags: DEFINE_<type>(name, default, help, ...); the other DEFINE_s
# (an alias, a flag object, a validator) define no new value
_NOT_A_FLAG = ("DEFINE_alias", "DEFINE_flag", "DEFINE_validator", "DEFINE_multi_flag")


def flag_define(call: cst.Call) -> tuple[list[str], dict, object] | None:
    """A flag definition as `add_argument` gives one (option strings, keywords as Args, dest):
    `flags.DEFINE_float("learning_rate", 1e-3, "...")` is option `--learning_rate` whose default
    is 1e-3 (positional or `name=`/`default=`); None for any other call. A flag is a flag by the
    callee's words: a `DEFINE_...` reached through a module named `flags`."""
    callee = dotted(call.func) or ""
    parts = callee.split(".")
    if len(parts) < 2 or not (parts[-2] == "flags" or parts[-2].endswith("_flags")) \
            or not parts[-1].startswith("DEFINE_") or parts[-1] in _NOT_A_FLAG:
        return None
    pos = [a for a in call.args if a.keyword is None and a.star == ""]
    kws = {a.keyword.value: a for a in call.args if a.keyword is not None}
    name = kws["name"].value if "name" in kws else pos[0].value if pos else None
    if type(name) is not cst.SimpleString or not isinstance(name.evaluated_value, str):
        return None
    dest = name.evaluated_value
    if "default" not in kws and len(pos) > 1:
        kws = {**kws, "default": pos[1]}
    return ["--" + dest], kws, dest


def option_default(p: Parsed, node) -> tuple[str, cst.CSTNode] | None:
    """`args.lr_actor` (any receiver that is not an import): ('--lr_actor', its default node)
    when exactly one argparse option or dataclass field of the file is called lr_actor."""
    if type(node) is not cst.Attribute or type(node.value) not in (cst.Name, cst.Attribute):
        return None
    if p.options is None:
        p.options = _options(p)
    return p.options.get(node.attr.value)


def _options(p: Parsed) -> dict:
    found: dict[str, list] = {}
    dead = p.spec.dead_calls if p.spec is not None else ()
    for c in p.state.calls if p.state is not None else ():
        if id(c) in dead:
            continue
        f = c.func
        if type(f) is not cst.Attribute:
            continue
        defined = add_argument(c) if f.attr.value == "add_argument" else flag_define(c)
        if defined is None:
            continue
        _strings, kws, dest = defined
        if "default" in kws and isinstance(dest, str):
            found.setdefault(dest, []).append(("--" + dest, kws["default"].value))
    for st in p.body:
        if st.kind != "compound" or type(st.node) is not cst.ClassDef or not is_dataclass(st.node):
            continue
        for _small, name, v, _kws in fields(st.node):
            if v is not None:
                found.setdefault(name, []).append((f"{st.node.name.value}.{name}", v))
    return {k: v[0] for k, v in found.items() if len(v) == 1}
