"""On-disk cache of per-file results, keyed by content hash.

What a language module extracts from a file (its facts, masks, errors) and what a
structural diff of two files finds depend only on the bytes, the file names shown in the
report, scriptdiff's version and the rule packs. The cache stores them as JSON (never
pickle: a cache folder is not a place to load code from) under
`$SCRIPTDIFF_CACHE_DIR`, else `$XDG_CACHE_HOME/scriptdiff`, else `~/.cache/scriptdiff`.
The folder is safe to delete at any time; `--no-cache` bypasses it.

An entry is never trusted. It is one file, `<key>.json` in the cache folder:

    {"scriptdiff_cache": 1, "key": "<key>", "digest": "<blake2b>"}\n<payload JSON>

and it is a hit only when every step passes, else a miss (recomputed and rewritten):
1. `os.lstat` says a regular file (not a link, FIFO or device) of at most budget.CACHE_ENTRY_BYTES;
   it is opened without following links and without blocking, and checked again;
2. the header names the key asked for (an entry copied from another file is refused);
3. the digest, a keyed BLAKE2b over the key and the payload bytes, matches: the secret is
   `$SCRIPTDIFF_CACHE_SECRET`, else a random per-user key kept outside the cache folder
   (`$XDG_CONFIG_HOME/scriptdiff/inputs/cache.key`, mode 0600; see `secret()`);
4. the payload parses as depth-checked JSON (jsonload.loads);
5. the loader of its kind checks its shape (`validate` against the SHAPES table below):
   every record's length and every field's type.
docs/cache.md says what this does and does not protect against.
"""
from __future__ import annotations

import math
from typing import Any

from ..model import Extract, Fact, Finding, InputError, Masked, PairResult, Severity, Side
from .store import (  # noqa: F401  (the storage, shared with runmemo; names kept here)
    FORMAT,
    cache_dir,
    salt,
    key,
    key_file,
    secret,
    _user_secret,
    _create_key_file,
    write_then,
    quiesce,
    digest,
    _entry_path,
    _read_regular,
    get,
    put,
)


# --- (de)serialisation of the model -------------------------------------------------------

_SCALARS = frozenset((str, int, bool, type(None)))
_NUMBERS = frozenset((int, float, bool))


def _plain(items) -> bool:
    """A list of JSON scalars that encode and decode as themselves (C-speed checks, so a
    config's 20-million-element list is not walked element by element)."""
    types = set(map(type, items))
    if types <= _SCALARS:
        return True
    try:
        return types <= _NUMBERS and all(map(math.isfinite, items))
    except OverflowError:  # an int beyond float range: finite, but take the slow path
        return False


def enc(v):
    """A value as JSON, keeping what JSON would lose: tuples, sets, non-string keys, inf/nan."""
    if type(v) in _SCALARS:  # most values: a string, an int, a flag, nothing
        return v
    if type(v) is list and _plain(v):
        return list(v)
    if isinstance(v, tuple):
        return {"__t": [enc(x) for x in v]}
    if isinstance(v, (set, frozenset)):
        return {"__s": sorted((enc(x) for x in v), key=repr)}
    if isinstance(v, list):
        return [enc(x) for x in v]
    if isinstance(v, dict):
        if all(isinstance(k, str) for k in v) and not ({"__t", "__s", "__d", "__f"} & set(v)):
            return {k: enc(x) for k, x in v.items()}
        return {"__d": [[enc(k), enc(x)] for k, x in v.items()]}
    if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
        return {"__f": repr(v)}
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    raise TypeError(f"cannot cache a {type(v).__name__}")


def dec(v):
    if type(v) in _SCALARS:
        return v
    if type(v) is list and _plain(v):
        return list(v)
    if isinstance(v, list):
        return [dec(x) for x in v]
    if isinstance(v, dict):
        if "__t" in v and len(v) == 1:
            return tuple(dec(x) for x in v["__t"])
        if "__s" in v and len(v) == 1:
            return set(dec(x) for x in v["__s"])
        if "__d" in v and len(v) == 1:
            return {dec(k): dec(x) for k, x in v["__d"]}
        if "__f" in v and len(v) == 1:
            return float(v["__f"])
        return {k: dec(x) for k, x in v.items()}
    return v


# --- the shape of every record, checked before anything is built from an entry -----------
#
# A shape is a tuple of types (isinstance; bool never passes for int), a record name
# (a positional list as dump_<name> writes it; "name?" also allows null), [shape] (a list of
# that shape) or {field: shape} (a mapping with exactly those fields). A field added to a
# dump_* function is added here too: an entry of the old layout then fails and is recomputed.

ANY = (object,)
STR = (str,)
OPT_STR = (str, type(None))
INT = (int,)
OPT_INT = (int, type(None))
BOOL = (bool,)
DICT = (dict,)
LIST = (list,)

RECORDS: dict[str, tuple[tuple[str, Any], ...]] = {
    "side": (("value", ANY), ("path", OPT_STR), ("line", OPT_INT), ("source", OPT_STR), ("via", OPT_STR)),
    "fact": (("key", STR), ("value", ANY), ("check", STR), ("path", OPT_STR), ("line", OPT_INT),
             ("source", OPT_STR), ("origin", STR), ("via", OPT_STR), ("rank", INT), ("note", OPT_STR),
             ("meta", DICT)),
    "finding": (("rule", STR), ("check", STR), ("severity", STR), ("key", STR), ("gpu", "side?"),
                ("npu", "side?"), ("message", STR), ("derived", BOOL), ("extra", DICT)),
    "masked": (("rule", STR), ("gpu", "side?"), ("npu", "side?"), ("target", STR)),
    "error": (("path", OPT_STR), ("message", STR), ("fatal", BOOL)),
    "command_line": (("kind", STR), ("complete", BOOL), ("why", OPT_STR), ("line", OPT_INT), ("parse", OPT_STR),
                     ("parse_line", OPT_INT), ("stops", BOOL), ("abbrev", BOOL), ("refusal", STR),
                     ("options", ["option"])),
    "option": (("strings", [STR]), ("dest", STR), ("line", OPT_INT)),
    "launch": (("program", STR), ("line", OPT_INT), ("invocation", INT), ("options", ["passed"])),
    "passed": (("name", STR), ("line", OPT_INT), ("value", STR), ("source", STR)),
}
COMMAND_LINE = tuple(name for name, _shape in RECORDS["command_line"])
SHAPES: dict[str, Any] = {
    "extract": {"facts": ["fact"], "errors": ["error"], "masked": ["masked"], "frameworks": [STR],
                "references": [LIST], "findings": ["finding"], "unread": [STR], "understood": BOOL,
                "dialects": [STR], "notes": [STR], "sourced": [LIST], "command_line": "command_line?", "launches": ["launch"],
                "probes": [LIST], "hides": [LIST], "unknowns": [LIST]},
    "pair": {"findings": ["finding"], "masked": ["masked"], "errors": ["error"]},
}


class ShapeError(ValueError):
    """A cache entry that is not what its loader writes: a miss, recomputed."""


def validate(value: Any, shape: Any, where: str = "entry") -> None:
    """Raise ShapeError unless `value` has `shape` (see above), at any depth."""
    if isinstance(shape, tuple):
        if not isinstance(value, shape) or (isinstance(value, bool) and bool not in shape and object not in shape):
            raise ShapeError(f"{where}: {type(value).__name__} where {'/'.join(t.__name__ for t in shape)} belongs")
    elif isinstance(shape, str):
        if value is None and shape.endswith("?"):
            return
        fields = RECORDS[shape.rstrip("?")]
        if not isinstance(value, list) or len(value) != len(fields):
            raise ShapeError(f"{where}: not a {shape.rstrip('?')} record of {len(fields)} fields")
        for (name, sub), v in zip(fields, value):
            validate(v, sub, f"{where}.{name}")
    elif isinstance(shape, list):
        if not isinstance(value, list):
            raise ShapeError(f"{where}: not a list")
        for i, v in enumerate(value):
            validate(v, shape[0], f"{where}[{i}]")
    else:
        if not isinstance(value, dict) or set(value) != set(shape):
            raise ShapeError(f"{where}: not a mapping of {', '.join(sorted(shape))}")
        for name, sub in shape.items():
            validate(value[name], sub, f"{where}.{name}")


def _side(s: Side | None):
    return None if s is None else [enc(s.value), s.path, s.line, s.source, s.via]


def _unside(x) -> Side | None:
    return None if x is None else Side(value=dec(x[0]), path=x[1], line=x[2], source=x[3], via=x[4])


def dump_fact(f: Fact) -> list:
    return [f.key, enc(f.value), f.check, f.path, f.line, f.source, f.origin, f.via, f.rank, f.note, enc(f.meta)]


def load_fact(x: list) -> Fact:
    return Fact(key=x[0], value=dec(x[1]), check=x[2], path=x[3], line=x[4], source=x[5], origin=x[6], via=x[7],
                rank=x[8], note=x[9], meta=dec(x[10]) or {})


def dump_finding(f: Finding) -> list:
    return [f.rule, f.check, f.severity, f.key, _side(f.gpu), _side(f.npu), f.message, f.derived, enc(f.extra)]


def load_finding(x: list) -> Finding:
    return Finding(rule=x[0], check=x[1], severity=Severity(x[2]), key=x[3], gpu=_unside(x[4]), npu=_unside(x[5]),
                   message=x[6], derived=x[7], extra=dec(x[8]) or {})


def dump_masked(m: Masked) -> list:
    return [m.rule, _side(m.gpu), _side(m.npu), m.target]


def load_masked(x: list) -> Masked:
    return Masked(rule=x[0], gpu=_unside(x[1]), npu=_unside(x[2]), target=x[3])


def dump_error(e: InputError) -> list:
    return [e.path, e.message, e.fatal]


def load_error(x: list) -> InputError:
    return InputError(path=x[0], message=x[1], fatal=x[2])


def dump_extract(ex) -> dict:
    return {"facts": [dump_fact(f) for f in ex.facts], "errors": [dump_error(e) for e in ex.errors],
            "masked": [dump_masked(m) for m in ex.masked],
            # a framework only guessed from spellings (Extract.guessed) is written with a trailing `?`
            "frameworks": sorted(f + "?" if f in ex.guessed else f for f in ex.frameworks),
            "references": [list(r) for r in ex.references], "findings": [dump_finding(f) for f in ex.findings],
            "unread": list(ex.unread), "understood": bool(ex.understood), "dialects": sorted(ex.dialects),
            "notes": list(ex.notes), "sourced": [list(x) for x in ex.sourced],
            "command_line": None if ex.command_line is None else [ex.command_line[k] for k in COMMAND_LINE],
            "launches": [list(x) for x in ex.launches], "probes": [list(x) for x in ex.probes],
            "hides": [[k, *v] for k, v in ex.hides.items()],
            "unknowns": [[k, *v] for k, v in ex.unknowns.items()]}


def load_extract(d: dict, checked: bool = True):
    """An Extract from its dumped form; `checked=False` only for what this run computed itself
    (the engine's memo: its own results and its workers'), never for what was read from disk."""
    if checked:
        validate(d, SHAPES["extract"], "extract")
    return Extract(facts=[load_fact(x) for x in d["facts"]], errors=[load_error(x) for x in d["errors"]],
                   masked=[load_masked(x) for x in d["masked"]], frameworks={f.rstrip("?") for f in d["frameworks"]},
                   guessed={f[:-1] for f in d["frameworks"] if f.endswith("?")},
                   references=[tuple(r) for r in d["references"]], findings=[load_finding(x) for x in d["findings"]],
                   unread=[str(x) for x in d["unread"]], understood=bool(d["understood"]),
                   dialects={str(x) for x in d["dialects"]}, notes=[str(x) for x in d["notes"]],
                   sourced=[tuple(x) for x in d["sourced"]],
                   command_line=None if d["command_line"] is None else dict(zip(COMMAND_LINE, d["command_line"])),
                   launches=[list(x) for x in d["launches"]], probes=[tuple(x) for x in d["probes"]],
                   hides={str(x[0]): [str(k) for k in x[1:]] for x in d["hides"] if x},
                   unknowns={str(x[0]): [str(k) for k in x[1:]] for x in d["unknowns"] if x})


def dump_pair(res) -> dict:
    return {"findings": [dump_finding(f) for f in res.findings], "masked": [dump_masked(m) for m in res.masked],
            "errors": [dump_error(e) for e in res.errors]}


def load_pair(d: dict, checked: bool = True):
    """A PairResult from its dumped form (`checked` as for load_extract)."""
    if checked:
        validate(d, SHAPES["pair"], "pair")
    return PairResult(findings=[load_finding(x) for x in d["findings"]], masked=[load_masked(x) for x in d["masked"]],
                      errors=[load_error(x) for x in d["errors"]])
