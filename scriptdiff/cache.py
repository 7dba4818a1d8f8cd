"""On-disk cache of per-file results, keyed by content hash.

What a language module extracts from a file (its facts, masks, errors) and what a
structural diff of two files finds depend only on the bytes, the file names shown in the
report, scriptdiff's version and the rule packs. The cache stores them as JSON (never
pickle: a cache folder is not a place to load code from) under
`$SCRIPTDIFF_CACHE_DIR`, else `$XDG_CACHE_HOME/scriptdiff`, else `~/.cache/scriptdiff`.
The folder is safe to delete at any time; `--no-cache` bypasses it.

An entry is never trusted. It is one file, `<key[:2]>/<key>.json`:

    {"scriptdiff_cache": 1, "key": "<key>", "digest": "<blake2b>"}\n<payload JSON>

and it is a hit only when every step passes, else a miss (recomputed and rewritten):
1. `os.lstat` says a regular file (not a link, FIFO or device) of at most MAX_ENTRY_BYTES;
   it is opened without following links and without blocking, and checked again;
2. the header names the key asked for (an entry copied from another file is refused);
3. the digest, a keyed BLAKE2b over the key and the payload bytes, matches: the secret is
   `$SCRIPTDIFF_CACHE_SECRET`, else a random per-user key kept outside the cache folder
   (`$XDG_CONFIG_HOME/scriptdiff/cache.key`, mode 0600; see `secret()`);
4. the payload parses as depth-checked JSON (jsonload.loads);
5. the loader of its kind checks its shape (`validate` against the SHAPES table below):
   every record's length and every field's type.
docs/cache.md says what this does and does not protect against.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import math
import os
import secrets as _secrets
import stat
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any

from . import __version__
from .jsonload import loads as load_json_data
from .model import Extract, Fact, Finding, InputError, Masked, PairResult, Side
from .rulepack import rules_dir

FORMAT = 1
MAX_ENTRY_BYTES = 64 * 1024 * 1024  # larger results are recomputed, not cached
_HEADER_MAX = 512


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


# --- the secret that keys the digests -----------------------------------------------------

def key_file() -> Path:
    xdg = os.environ.get("XDG_CONFIG_HOME")
    return (Path(xdg) if xdg else Path.home() / ".config") / "scriptdiff" / "cache.key"


def secret() -> bytes:
    """The key of the entries' digests: `$SCRIPTDIFF_CACHE_SECRET` (for a cache shared on
    purpose, e.g. between CI jobs), else this user's key file, created on first use with
    32 random bytes. A key file that is not a regular file owned by this user and closed to
    others is not used; without a usable key the digest is unkeyed (it then detects damaged,
    hand-made and copied entries, but not one forged by someone running scriptdiff)."""
    env = os.environ.get("SCRIPTDIFF_CACHE_SECRET")
    if env:
        return hashlib.blake2b(env.encode("utf-8", "surrogatepass"), digest_size=32).digest()
    return _user_secret(str(key_file()))


@lru_cache(maxsize=4)
def _user_secret(path: str) -> bytes:
    for _ in range(2):
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            _create_key_file(path)
            continue
        except OSError:
            return b""
        if not stat.S_ISREG(st.st_mode) or st.st_mode & 0o077 or st.st_size > 256 or \
                (hasattr(os, "getuid") and st.st_uid != os.getuid()):
            return b""
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
            with os.fdopen(fd, "rb") as fh:
                text = fh.read(257).strip()
            return bytes.fromhex(text.decode("ascii")) if len(text) == 64 else b""
        except (OSError, ValueError):
            return b""
    return b""


def _create_key_file(path: str) -> None:
    """Write a new random key atomically (a link of a finished file: a concurrent creator
    either wins or finds the whole key)."""
    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError:
        return
    _write_then(folder, ".cache.key.", (_secrets.token_hex(32) + "\n").encode(), lambda tmp: os.link(tmp, path))


def _write_then(folder, prefix: str, data: bytes, publish) -> None:
    """Write `data` to a fresh temporary file in `folder` (mode 0600), hand its path to
    `publish` (os.replace or os.link to the final name), and never leave the temporary
    behind. Any OSError means the write did not happen: a cache never fails a run."""
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=prefix)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        publish(tmp)
    except OSError:
        pass
    finally:
        if tmp:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def digest(k: str, payload: bytes) -> str:
    h = hashlib.blake2b(key=secret(), digest_size=32)
    h.update(k.encode("ascii", "replace"))
    h.update(b"\x00")
    h.update(payload)
    return h.hexdigest()


# --- entries --------------------------------------------------------------------------------

def _entry_path(k: str) -> Path:
    return cache_dir() / k[:2] / f"{k}.json"


def _read_regular(p: Path, limit: int) -> bytes | None:
    """The bytes of `p` if it is a regular file of at most `limit` bytes; never opens a
    link, FIFO or device (lstat first, then a non-blocking open without following links
    and a second check that it is the same regular file)."""
    try:
        st = os.lstat(p)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
                     | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        st2 = os.fstat(fd)
        if not stat.S_ISREG(st2.st_mode) or (st2.st_ino, st2.st_dev) != (st.st_ino, st.st_dev):
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(limit + 1)
        return data if len(data) <= limit else None
    except OSError:
        return None
    finally:
        os.close(fd)


def get(k: str) -> Any | None:
    """The payload stored under key `k`, or None (a miss) unless the entry passes every check."""
    raw = _read_regular(_entry_path(k), MAX_ENTRY_BYTES)
    if raw is None:
        return None
    head, sep, payload = raw.partition(b"\n")
    if not sep or len(head) > _HEADER_MAX:
        return None
    try:
        header = json.loads(head)
    except (ValueError, RecursionError):
        return None
    if not isinstance(header, dict) or header.get("scriptdiff_cache") != FORMAT or header.get("key") != k \
            or not isinstance(header.get("digest"), str):
        return None
    if not hmac.compare_digest(header["digest"], digest(k, payload)):
        return None
    try:
        return load_json_data(payload)
    except ValueError:
        return None


def put(k: str, value: Any) -> None:
    d = cache_dir() / k[:2]
    try:
        payload = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")
        if len(payload) > MAX_ENTRY_BYTES - _HEADER_MAX:
            return
        header = json.dumps({"scriptdiff_cache": FORMAT, "key": k, "digest": digest(k, payload)},
                            separators=(",", ":")).encode()
        d.mkdir(parents=True, exist_ok=True)
        if not stat.S_ISDIR(os.lstat(d).st_mode):  # a link or a file where the folder should be
            return
    except (OSError, TypeError, ValueError, RecursionError):
        return
    _write_then(d, ".tmp.", header + b"\n" + payload, lambda tmp: os.replace(tmp, d / f"{k}.json"))


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
    "masked": (("rule", STR), ("gpu", "side?"), ("npu", "side?")),
    "error": (("path", OPT_STR), ("message", STR), ("fatal", BOOL)),
}
SHAPES: dict[str, Any] = {
    "extract": {"facts": ["fact"], "errors": ["error"], "masked": ["masked"], "frameworks": [STR],
                "references": [LIST], "findings": ["finding"], "unread": [STR], "understood": BOOL,
                "dialects": [STR]},
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
            "unread": list(ex.unread), "understood": bool(ex.understood), "dialects": sorted(ex.dialects)}


def load_extract(d: dict):
    validate(d, SHAPES["extract"], "extract")
    return Extract(facts=[load_fact(x) for x in d["facts"]], errors=[load_error(x) for x in d["errors"]],
                   masked=[load_masked(x) for x in d["masked"]], frameworks=set(d["frameworks"]),
                   references=[tuple(r) for r in d["references"]], findings=[load_finding(x) for x in d["findings"]],
                   unread=[str(x) for x in d["unread"]], understood=bool(d["understood"]),
                   dialects={str(x) for x in d["dialects"]})


def dump_pair(res) -> dict:
    return {"findings": [dump_finding(f) for f in res.findings], "masked": [dump_masked(m) for m in res.masked],
            "errors": [dump_error(e) for e in res.errors]}


def load_pair(d: dict):
    validate(d, SHAPES["pair"], "pair")
    return PairResult(findings=[load_finding(x) for x in d["findings"]], masked=[load_masked(x) for x in d["masked"]],
                      errors=[load_error(x) for x in d["errors"]])
