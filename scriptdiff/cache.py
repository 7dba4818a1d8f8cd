"""On-disk cache of per-file results, keyed by content hash.

What a language module extracts from a file (its facts, masks, errors) and what a
structural diff of two files finds depend only on the bytes, the file names shown in the
report, scriptdiff's version and the rule packs. The cache stores them as JSON (never
pickle: a cache folder is not a place to load code from) under
`$SCRIPTDIFF_CACHE_DIR`, else `$XDG_CACHE_HOME/scriptdiff`, else `~/.cache/scriptdiff`.
The folder is safe to delete at any time; `--no-cache` bypasses it. A corrupt or
unreadable entry is a miss, never an error.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any

from . import __version__
from .model import Extract, Fact, Finding, InputError, Masked, PairResult, Side
from .rulepack import rules_dir


def cache_dir() -> Path:
    env = os.environ.get("SCRIPTDIFF_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg) / "scriptdiff" if xdg else Path.home() / ".cache" / "scriptdiff"


@lru_cache(maxsize=1)
def salt() -> str:
    """Changes whenever scriptdiff's version or any rule pack changes."""
    h = hashlib.blake2b(__version__.encode(), digest_size=16)
    for p in sorted(rules_dir().glob("*.yaml")):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    # the code itself: a development checkout changes without a version bump
    pkg = Path(__file__).resolve().parent
    for p in sorted(pkg.rglob("*.py")):
        st = p.stat()
        h.update(f"{p.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()


def key(*parts: str | bytes) -> str:
    h = hashlib.blake2b(salt().encode(), digest_size=20)
    for p in parts:
        h.update(p if isinstance(p, bytes) else p.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()


def get(k: str) -> Any | None:
    p = cache_dir() / k[:2] / f"{k}.json"
    try:
        with open(p, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def put(k: str, value: Any) -> None:
    d = cache_dir() / k[:2]
    try:
        d.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=d, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(value, fh, separators=(",", ":"))
        os.replace(tmp, d / f"{k}.json")
    except (OSError, TypeError, ValueError):
        try:
            os.unlink(tmp)  # type: ignore[possibly-undefined]
        except (OSError, NameError):
            pass


# --- (de)serialisation of the model -------------------------------------------------------

def enc(v):
    """A value as JSON, keeping what JSON would lose: tuples, sets, non-string keys, inf/nan."""
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
    return Finding(rule=x[0], check=x[1], severity=x[2], key=x[3], gpu=_unside(x[4]), npu=_unside(x[5]),
                   message=x[6], derived=x[7], extra=dec(x[8]) or {})


def dump_masked(m: Masked) -> list:
    return [m.rule, _side(m.gpu), _side(m.npu)]


def load_masked(x: list) -> Masked:
    return Masked(rule=x[0], gpu=_unside(x[1]), npu=_unside(x[2]))


def dump_error(e: InputError) -> list:
    return [e.path, e.message, e.fatal]


def load_error(x: list) -> InputError:
    return InputError(path=x[0], message=x[1], fatal=x[2])


def dump_extract(ex) -> dict:
    return {"facts": [dump_fact(f) for f in ex.facts], "errors": [dump_error(e) for e in ex.errors],
            "masked": [dump_masked(m) for m in ex.masked], "frameworks": sorted(ex.frameworks),
            "references": [list(r) for r in ex.references], "findings": [dump_finding(f) for f in ex.findings],
            "unread": list(ex.unread), "understood": bool(ex.understood)}


def load_extract(d: dict):
    return Extract(facts=[load_fact(x) for x in d["facts"]], errors=[load_error(x) for x in d["errors"]],
                   masked=[load_masked(x) for x in d["masked"]], frameworks=set(d["frameworks"]),
                   references=[tuple(r) for r in d["references"]], findings=[load_finding(x) for x in d["findings"]],
                   unread=[str(x) for x in d["unread"]], understood=bool(d["understood"]))


def dump_pair(res) -> dict:
    return {"findings": [dump_finding(f) for f in res.findings], "masked": [dump_masked(m) for m in res.masked],
            "errors": [dump_error(e) for e in res.errors]}


def load_pair(d: dict):
    return PairResult(findings=[load_finding(x) for x in d["findings"]], masked=[load_masked(x) for x in d["masked"]],
                      errors=[load_error(x) for x in d["errors"]])
