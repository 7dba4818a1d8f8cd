"""The shape of the rule packs' data sections, written as data: a small schema language, the
one checker that walks a section with its schema, and the merge of a section given by
several packs.

A schema is built from a few node types:

  Str / Name        a string (Name: non-empty); `test=` and `expect=` for a narrower one
  Int, Num, Bool    a whole number (optionally in a range), any number, true/false
  Enum(a, b, ...)   one of these values
  Spec              a "module:function" reference under scriptdiff/
  ListOf(X)         a list of X (NAMES: a list of names); `nonempty=True`
  Record({f: X})    a mapping with these known fields; `required=`, `need=` (how missing
                    fields are said: one text, or one per field), `gone=` (a field that was
                    removed, with what to do instead)
  Table(X)          a mapping of names (keys: `key=`, Name by default) to X; `once=True`: an
                    entry is defined by one pack only
  OneOf(X, Y), Any  either shape; anything; Null: YAML's null
  Shipped(X, why)   X, given by the shipped packs only: a user's pack that gives it is refused
                    with `why` (what would weaken a guarantee: an exemption from withholding)

`check(value, schema, path, positions, complete)` reports the first node that does not fit
as `pack.yaml:LINE: dotted.path[index].field: expected a list of names (got 'x')`, at the
line of that node (`Positions`: where each node came from, built from the YAML loader's line
table). `complete=False` checks shapes only (one pack's own part of a section); the complete
check, on the merged section, also wants required fields and non-empty lists.

Merging (`merge`): a section several packs give is one value. Lists extend; a Record merges
field by field; a Table adds its entries, and an entry two packs both give is an error
naming both files when the table is `once` (a file kind, a check, a category: one
definition), else merges like a Record (a vocabulary key: a pack may add spellings to a
shipped key, never change its type or category); a scalar given by two packs is an error
naming both files.
"""
from __future__ import annotations

from typing import Any as _Any

_MISSING = object()


class RuleError(Exception):
    """A rule pack is malformed. str() is one line: file:line: reason (scriptdiff.ruleset.rulepack
    re-exports it: every pack error, of shape or of meaning, is one)."""


SchemaError = RuleError  # a node that does not fit its schema


def dotted(path: tuple) -> str:
    """("launchers", "entries", 2, "commands") -> launchers.entries[2].commands"""
    out = ""
    for p in path:
        if isinstance(p, int) and not isinstance(p, bool):
            out += f"[{p}]"
        else:
            out += ("." if out else "") + str(p)
    return out


def got(v) -> str:
    text = repr(v)
    return f" (got {text if len(text) <= 60 else text[:57] + '...'})"


class Positions:
    """Where each node of some data came from: its path -> (pack, line, its path in that pack).
    Built from the YAML loader's line table of one pack; merged sections graft the incoming
    pack's positions under their merged paths (a list extended by a second pack keeps each
    item's own file, line and index)."""

    def __init__(self, pack: str = "", lines: dict | None = None):
        self.pack = pack
        self.table: dict[tuple, tuple[str, int, tuple]] = {}
        for path, line in (lines or {}).items():
            self.table[path] = (pack, line, path)
        # prefix length -> prefix -> the (path, position) pairs under it: what `graft` takes
        # from this table, found without reading the whole table once per key merged (a pack
        # of 200,000 keys was quadratic); made on first use, dropped when the table changes
        self._under: dict[int, dict[tuple, list]] = {}

    def _below(self, src: tuple) -> list:
        n = len(src)
        index = self._under.get(n)
        if index is None:
            index = self._under[n] = {}
            for path, pos in self.table.items():
                if len(path) >= n:
                    index.setdefault(path[:n], []).append((path, pos))
        return index.get(src, [])

    def of(self, path: tuple) -> tuple[str, int, tuple]:
        """(pack, line, path in that pack) of the node at `path`, or of its nearest ancestor
        (a missing field is reported where its mapping is)."""
        p = tuple(path)
        while p and p not in self.table:
            p = p[:-1]
        hit = self.table.get(p)
        if hit is None:
            return self.pack or "rules/?", 1, tuple(path)
        pack, line, local = hit
        return pack, line, local + tuple(path[len(p):])

    def where(self, path: tuple) -> str:
        pack, line, _ = self.of(path)
        return f"{pack}:{line}"

    def error(self, path: tuple, message: str, at: tuple | None = None) -> SchemaError:
        """The error about the node at `path`, reported at the line of `at` (default: the
        node's own; a mapping's unknown field is reported at that field's line)."""
        pack, line, local = self.of(path)
        if at is not None:
            line = self.of(at)[1]
        return SchemaError(f"{pack}:{line}: {dotted(local)}: {message}" if local else f"{pack}:{line}: {message}")

    def graft(self, other: "Positions", src: tuple, dst: tuple, offset: int = 0) -> None:
        """Take `other`'s positions of the node at `src` (and below) as those of `dst`; with
        `offset`, `src` is a list whose items become items offset.. of the list at `dst`."""
        n = len(src)
        self._under.clear()
        for path, pos in other._below(src):
            rest = path[n:]
            if offset:
                if not rest:
                    continue  # the list itself keeps its first position
                rest = (rest[0] + offset,) + rest[1:]
            self.table[dst + rest] = pos


class Walk:
    """One checking pass: the positions to report at, and whether it is the complete check."""

    def __init__(self, positions: Positions, complete: bool, user: bool = False):
        self.positions = positions
        self.complete = complete
        self.user = user  # the pack walked is a user's (--rules, [tool.scriptdiff] rules)

    def fail(self, path: tuple, message: str, at: tuple | None = None):
        raise self.positions.error(path, message, at)


class Merge:
    """One pack's section merged into the section so far: positions of both."""

    def __init__(self, merged: Positions, incoming: Positions):
        self.merged = merged
        self.incoming = incoming

    def take(self, value, dst: tuple, src: tuple):
        self.merged.graft(self.incoming, src, dst)
        return value

    def twice(self, dst: tuple, src: tuple):
        raise self.incoming.error(src, f"defined twice (also in {self.merged.where(dst)})")


# ----------------------------------------------------------------------------- the node types

class Schema:
    expect = "a value"

    def accepts(self, v) -> bool:
        return True

    def walk(self, v, path: tuple, w: Walk) -> None:
        if not self.accepts(v):
            w.fail(path, f"expected {self.expect}{got(v)}")

    def merge(self, old, new, dst: tuple, src: tuple, m: Merge):
        m.twice(dst, src)


class Any(Schema):
    pass


class Null(Schema):
    expect = "null"

    def accepts(self, v) -> bool:
        return v is None


class Str(Schema):
    def __init__(self, expect: str = "a string", nonempty: bool = False, test=None):
        self.expect = expect
        self.nonempty = nonempty
        self.test = test

    def accepts(self, v) -> bool:
        return isinstance(v, str) and (not self.nonempty or bool(v.strip())) and (self.test is None or self.test(v))


def Name(expect: str = "a name (a non-empty string)", test=None) -> Str:
    return Str(expect, nonempty=True, test=test)


class Int(Schema):
    def __init__(self, lo: int | None = None, hi: int | None = None):
        self.lo, self.hi = lo, hi
        self.expect = "a whole number" + (f" from {lo}" if lo is not None else "") + \
            (f" to {hi}" if hi is not None else "")

    def accepts(self, v) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and (self.lo is None or v >= self.lo) \
            and (self.hi is None or v <= self.hi)


class Num(Int):
    def __init__(self, lo: float | None = None, hi: float | None = None):
        super().__init__(lo, hi)
        self.expect = self.expect.replace("a whole number", "a number")

    def accepts(self, v) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and (self.lo is None or v >= self.lo) \
            and (self.hi is None or v <= self.hi)


class Bool(Schema):
    expect = "true or false"

    def accepts(self, v) -> bool:
        return isinstance(v, bool)


class Enum(Schema):
    def __init__(self, *values):
        self.values = values
        self.expect = "one of " + ", ".join(str(x) for x in values)

    def accepts(self, v) -> bool:
        return isinstance(v, (str, int, float, bool)) and v in self.values


def is_spec(value) -> bool:
    """A "module:function" reference under scriptdiff/."""
    if not isinstance(value, str):
        return False
    mod, sep, fn = value.partition(":")
    return bool(sep) and all(p.isidentifier() for p in mod.split(".")) and fn.isidentifier()


Spec = Str('"module:function" (a function of a module under scriptdiff/)', test=is_spec)


class OneOf(Schema):
    def __init__(self, *options: Schema, expect: str | None = None):
        self.options = options
        self.expect = expect or " or ".join(o.expect for o in options)

    def walk(self, v, path, w) -> None:
        for o in self.options:
            try:
                o.walk(v, path, w)
                return
            except SchemaError:
                continue
        w.fail(path, f"expected {self.expect}{got(v)}")


class Shipped(Schema):
    def __init__(self, inner: Schema, why: str):
        self.inner = inner
        self.why = why
        self.expect = inner.expect

    def walk(self, v, path, w) -> None:
        if w.user:
            w.fail(path, self.why)
        self.inner.walk(v, path, w)

    def merge(self, old, new, dst, src, m):
        return self.inner.merge(old, new, dst, src, m)


class ListOf(Schema):
    def __init__(self, item: Schema, nonempty: bool = False, expect: str | None = None):
        self.item = item
        self.nonempty = nonempty
        self.expect = expect or f"a list of {_plural(item.expect)}"

    def walk(self, v, path, w) -> None:
        if not isinstance(v, list):
            w.fail(path, f"expected {'a non-empty ' + self.expect[2:] if self.nonempty else self.expect}{got(v)}")
        if w.complete and self.nonempty and not v:
            w.fail(path, f"expected a non-empty {self.expect[2:]}")
        for i, x in enumerate(v):
            self.item.walk(x, path + (i,), w)

    def merge(self, old, new, dst, src, m):
        m.merged.graft(m.incoming, src, dst, offset=len(old))
        return old + new


def _plural(expect: str) -> str:
    """"a name (a non-empty string)" -> "names"; "a mapping" -> "mappings"."""
    head = expect.split(" (", 1)[0]
    for art in ("a ", "an "):
        if head.startswith(art):
            head = head[len(art):]
            break
    words = head.split(" ")
    # the noun is the last word before a qualifier ("name of a module", "string with")
    for i, word in enumerate(words):
        if word in ("of", "with", "that", "joined", "from", "to"):
            words[i - 1] += "s"
            return " ".join(words)
    return head + "s"


NAMES = ListOf(Name(), expect="a list of names")


class Record(Schema):
    expect = "a mapping"

    def __init__(self, fields: dict[str, Schema], required: tuple = (), need: str | dict | None = None,
                 gone: dict[str, str] | None = None):
        self.fields = fields
        self.required = required
        self.need = need
        self.gone = gone or {}

    def walk(self, v, path, w) -> None:
        if not isinstance(v, dict):
            w.fail(path, f"expected {self.expect} with {', '.join(self.fields)}{got(v)}"
                   if len(self.fields) <= 4 else f"expected {self.expect}{got(v)}")
        for k in v:
            if k in self.gone:
                w.fail(path + (k,), self.gone[k])
        unknown = [k for k in v if k not in self.fields]
        if unknown:
            w.fail(path, f"unknown field(s) {', '.join(sorted(map(str, unknown)))} "
                         f"(known: {', '.join(self.fields)})", at=path + (unknown[0],))
        if w.complete:
            missing = [f for f in self.required if f not in v]
            if missing:
                if isinstance(self.need, dict):
                    said = [self.need.get(f, f) for f in missing]
                    w.fail(path, "needs " + (", ".join(said[:-1]) + " and " + said[-1] if len(said) > 1 else said[0]))
                w.fail(path, f"needs {self.need or ', '.join(missing)}")
        for k, x in v.items():
            self.fields[k].walk(x, path + (k,), w)

    def merge(self, old, new, dst, src, m):
        out = dict(old)
        for k, x in new.items():
            if k in out:
                out[k] = self.fields[k].merge(out[k], x, dst + (k,), src + (k,), m)
            else:
                out[k] = m.take(x, dst + (k,), src + (k,))
        return out


class Table(Schema):
    expect = "a mapping of names"

    def __init__(self, value: Schema, key: Schema | None = None, once: bool = True, nonempty: bool = False,
                 expect: str | None = None, need: str | None = None):
        self.value = value
        self.key = key or Name()
        self.once = once
        self.nonempty = nonempty
        self.expect = expect or self.expect
        self.need = need

    def walk(self, v, path, w) -> None:
        if not isinstance(v, dict):
            w.fail(path, f"expected {self.expect}{got(v)}")
        if w.complete and self.nonempty and not v:
            w.fail(path, f"needs {self.need or 'at least one entry'}")
        for k, x in v.items():
            if not self.key.accepts(k):
                w.fail(path + (k,), f"expected {self.key.expect} as the key{got(k)}")
            self.value.walk(x, path + (k,), w)

    def merge(self, old, new, dst, src, m):
        out = dict(old)
        for k, x in new.items():
            if k not in out:
                out[k] = m.take(x, dst + (k,), src + (k,))
            elif self.once:
                m.twice(dst + (k,), src + (k,))
            else:
                out[k] = self.value.merge(out[k], x, dst + (k,), src + (k,), m)
        return out


def check(value: _Any, schema: Schema, path: tuple, positions: Positions, complete: bool = True,
          user: bool = False) -> None:
    """Raise SchemaError at the first node of `value` (found at `path`) that `schema` refuses
    (`user`: `value` is a user's pack's part, where a `Shipped` node is refused)."""
    schema.walk(value, path, Walk(positions, complete, user))
