"""Which part of a large pair the structural parser reads: the differing top-level statements
and what they depend on (issue 14: the cost of a diff follows the size of the change).

libcst reads about 0.35 MB/s, CPython's own parser (`ast`) some ten times that. For a pair of
large files that differ in a few places, `plan` parses both sides with `ast`, cuts each into
top-level statements (a decorated def from its first decorator; statements sharing a line are
one), and aligns the two sequences on their source text. A statement in an aligned, identical
run is unchanged; the others are the change. What the structural reader then keeps, on each
side:

- the changed statements;
- every top-level import (qualified names are resolved through them);
- what the kept statements depend on, to a fixed point: the statements that bind or mutate a
  name they read (`LR = 3e-4`, `parser = ArgumentParser()`, `parser.add_argument(...)`,
  `def get_args()`), so that values resolve as in the whole file;
- what depends on the change, to a fixed point: the statements that read a name a changed
  statement binds (its value changed, or it moved past them);
- the statements that call a callee whose call yields a hyperparameter in a changed statement
  (`AdamW(...)` elsewhere in the file), so that a setting written twice is compared whole;
- in a pair that names the NPU, every statement that may test the device (`device_words`):
  written alike on both sides, it still runs differently on each (lang/python/specialise.py).

The kept statements are joined into one text per side (libcst then reads no blank lines
for what is left out), with the file line of each of its lines, which the parse maps its
node positions back through. The statements left out are identical on both sides and read nothing
that changed: their facts are equal and their code is equal, so they add no finding.

`plan` returns None where a whole parse is the better choice: a small pair, one CPython
cannot parse (the whole-file path then says why), lone carriage returns (CPython and `str`
would disagree on line numbers), or a change that covers most of the file.
"""
from __future__ import annotations

import ast
import difflib
import hashlib
import re
import warnings

from ...ruleset.devices import may_branch
from ...ruleset.rules import RuleSet, derived
from . import cpytree

MIN_BYTES = 2_000  # below this (both sides together) a whole parse costs little
MAX_SHARE = 0.6  # keeping more than this share of the lines: parse the whole files
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # identifier-like words: candidates, confirmed by the tree


class _Whole(Exception):
    """The kept part has grown past MAX_SHARE: parse the whole files."""


class Chunk:
    """One top-level statement (or several sharing a line): its lines, text and names."""

    __slots__ = ("first", "last", "text", "nodes", "binds", "_loads", "is_import")

    def __init__(self, first: int, last: int, text: str, nodes: list):
        self.first, self.last, self.text, self.nodes = first, last, text, nodes
        self.binds = set()
        for n in nodes:
            _binds(n, self.binds)
        self._loads = None
        self.is_import = all(type(n) in (ast.Import, ast.ImportFrom) for n in nodes)

    def moved(self, delta: int) -> "Chunk":
        """The same statement `delta` lines further down (its twin on the other side)."""
        c = Chunk.__new__(Chunk)
        c.first, c.last, c.text, c.nodes = self.first + delta, self.last + delta, self.text, self.nodes
        c.binds, c._loads, c.is_import = self.binds, self._loads, self.is_import
        return c

    @property
    def loads(self) -> set:
        if self._loads is None:
            out = set()
            for n in nodes_walk(self.nodes):
                if type(n) is ast.Name:
                    out.add(n.id)
            self._loads = out
        return self._loads


def nodes_walk(nodes):
    for n in nodes:
        yield from ast.walk(n)


def _root(node) -> str | None:
    while type(node) in (ast.Attribute, ast.Subscript, ast.Call, ast.Starred):
        node = node.func if type(node) is ast.Call else node.value
    return node.id if type(node) is ast.Name else None


def _targets(t, out: set) -> None:
    if type(t) in (ast.Tuple, ast.List):
        for e in t.elts:
            _targets(e, out)
    else:
        r = _root(t)
        if r:
            out.add(r)


def _binds(node, out: set) -> None:
    """The module-level names a top-level statement binds or mutates (shallow: not inside defs)."""
    t = type(node)
    if t in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
        out.add(node.name)
    elif t is ast.Assign:
        for x in node.targets:
            _targets(x, out)
    elif t in (ast.AugAssign, ast.AnnAssign):
        _targets(node.target, out)
    elif t in (ast.Import, ast.ImportFrom):
        for a in node.names:
            out.add((a.asname or a.name).split(".")[0])
    elif t is ast.Expr:  # parser.add_argument(...), cfg.update(...): a mutation of parser, cfg
        r = _root(node.value)
        if r and type(node.value) is ast.Call and type(node.value.func) is ast.Attribute:
            out.add(r)
    elif t in (ast.For, ast.AsyncFor):
        _targets(node.target, out)
    elif t in (ast.With, ast.AsyncWith):
        for it in node.items:
            if it.optional_vars is not None:
                _targets(it.optional_vars, out)
    elif t is ast.Global:
        out.update(node.names)
    if t in (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try) or \
            t.__name__ in ("TryStar", "Match"):
        for field in ("body", "orelse", "finalbody"):
            for s in getattr(node, field, ()) or ():
                _binds(s, out)
        for h in getattr(node, "handlers", ()) or ():
            if h.name:
                out.add(h.name)
            for s in h.body:
                _binds(s, out)
        for c in getattr(node, "cases", ()) or ():
            for s in c.body:
                _binds(s, out)


def chunks(text: str, lines: list[str], offset: int = 0) -> list[Chunk] | None:
    """The top-level statements of `text`, whose first line is line `offset + 1` of `lines`
    (a whole file's tree is kept for the pair's other readers: cpytree.py)."""
    try:
        if offset == 0 and len(lines) == text.count("\n") + 1:  # the whole file
            tree = cpytree.whole(text)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None
    out: list[Chunk] = []
    for node in tree.body:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())]) + offset
        last = (node.end_lineno or node.lineno) + offset
        if out and first <= out[-1].last:  # `a = 1; b = 2`: one chunk
            c = out[-1]
            out[-1] = Chunk(c.first, max(c.last, last), "", c.nodes + [node])
            continue
        out.append(Chunk(first, last, "", [node]))
    for c in out:
        c.text = "\n".join(lines[c.first - 1:c.last])
    return out


def other_side(gc: list[Chunk], glines: list[str], nlines: list[str]) -> list[Chunk] | None:
    """The NPU side's statements, given the GPU side's: the statements in the lines both sides
    share at their start and at their end are the GPU side's (moved by the difference in
    length); only the lines between are parsed. They start after a whole top-level statement
    and end before one, where the tokenizer is in the same state as in the whole file, so
    their statements are the whole file's. Where they do not parse alone (a string or a
    bracket opened there and closed in the shared lines would do that), the whole side is
    parsed instead. Halves the parsing of a pair that differs in one place."""
    n, m = len(glines), len(nlines)
    pre = 0
    while pre < min(n, m) and glines[pre] == nlines[pre]:
        pre += 1
    suf = 0
    while suf < min(n, m) - pre and glines[n - 1 - suf] == nlines[m - 1 - suf]:
        suf += 1
    delta = m - n
    head = [c for c in gc if c.last <= pre]
    tail = [c for c in gc if c.first > n - suf and (not head or c.first > head[-1].last)]
    start = head[-1].last if head else 0  # the region: lines start+1 .. end (NPU numbering)
    end = (tail[0].first - 1 if tail else n) + delta
    if end < start:  # cannot happen for a well-formed cut; parse the whole side rather than guess
        return chunks("\n".join(nlines), nlines)
    middle = chunks("\n".join(nlines[start:end]), nlines, offset=start)
    if middle is None or any(c.first <= start or c.last > end for c in middle):
        return chunks("\n".join(nlines), nlines)
    return head + middle + [c.moved(delta) for c in tail]


def _callees(rules_names: tuple[set, tuple], c: Chunk) -> set:
    """The last names of the calls in a chunk that the fact table can match."""
    exact, suffixes = rules_names
    out = set()
    for n in nodes_walk(c.nodes):
        if type(n) is ast.Call:
            f = n.func
            name = f.attr if type(f) is ast.Attribute else (f.id if type(f) is ast.Name else None)
            if name and (name in exact or name.endswith(suffixes) or name == "add_argument"):
                out.add(name)
    return out


def plan(gtext: str, ntext: str, fact_names: tuple[set, tuple] = (set(), ("\0",)),
         min_bytes: int | None = None) -> tuple[tuple, tuple, int, int] | None:
    """((GPU text, its lines' numbers in the file), the same for NPU, lines kept, lines in all),
    or None for the whole files."""
    if len(gtext) + len(ntext) < (MIN_BYTES if min_bytes is None else min_bytes):
        return None
    for t in (gtext, ntext):
        if "\r" in t and t.count("\r") != t.count("\r\n"):
            return None
    glines, nlines = gtext.split("\n"), ntext.split("\n")
    gc = chunks(gtext, glines)
    nc = None if gc is None else other_side(gc, glines, nlines)
    if gc is None or nc is None:
        return None
    sm = difflib.SequenceMatcher(None, [c.text for c in gc], [c.text for c in nc], autojunk=False)
    sides = (gc, nc)
    changed: tuple[set, set] = (set(), set())
    twin: tuple[dict, dict] = ({}, {})  # an unchanged statement's counterpart on the other side
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            for d in range(i2 - i1):
                twin[0][i1 + d], twin[1][j1 + d] = j1 + d, i1 + d
        else:
            changed[0].update(range(i1, i2))
            changed[1].update(range(j1, j2))
    if may_branch(gtext.encode("utf-8", "surrogatepass")) or may_branch(ntext.encode("utf-8", "surrogatepass")):
        for side in (0, 1):  # the same text, two programs: a device test reads per device
            changed[side].update(i for i, c in enumerate(sides[side]) if device_words(c.text))
    total = len(glines) + len(nlines)
    if sum(cs[i].last - cs[i].first + 1 for cs, ch in zip(sides, changed) for i in ch) > MAX_SHARE * total:
        return None  # the change is most of the files
    kept: tuple[set, set] = (set(), set())
    todo: list[tuple[int, int]] = []

    budget = [MAX_SHARE * total]  # lines that may still be kept (past it, a whole parse is better)

    def keep(side: int, i: int) -> None:
        """Keep a statement, and an unchanged one on both sides: what is read is read alike."""
        for s_, j in ((side, i), (1 - side, twin[side].get(i))):
            if j is not None and j not in kept[s_]:
                kept[s_].add(j)
                todo.append((s_, j))
                budget[0] -= sides[s_][j].last - sides[s_][j].first + 1
        if budget[0] < 0:
            raise _Whole

    try:
        changed_binds: set = set()
        callees: set = set()
        for side in (0, 1):
            for i in changed[side]:
                changed_binds |= sides[side][i].binds
                callees |= _callees(fact_names, sides[side][i])
        for side in (0, 1):
            for i, c in enumerate(sides[side]):
                if i in changed[side] or c.is_import:
                    keep(side, i)
        # forward: what reads a name the change binds, to a fixed point. Candidates are the
        # statements whose text holds the name (a substring test; past a few names, an index of
        # the identifiers of every statement's text), confirmed on the syntax tree
        users: tuple[dict, dict] | None = None
        queue, seen = sorted(changed_binds), set(changed_binds)
        done = 0
        while queue:
            name = queue.pop()
            done += 1
            if users is None and done > 16:
                users = ({}, {})
                for side in (0, 1):
                    for i, c in enumerate(sides[side]):
                        for w in set(_WORD.findall(c.text)):
                            users[side].setdefault(w, []).append(i)
            for side in (0, 1):
                cands = users[side].get(name, ()) if users is not None else \
                    [i for i, c in enumerate(sides[side]) if name in c.text]
                for i in cands:
                    c = sides[side][i]
                    if i not in kept[side] and name in c.loads:
                        keep(side, i)
                        for b in c.binds - seen:
                            seen.add(b)
                            queue.append(b)
        # the same settings written elsewhere (another AdamW(...)): compared whole
        if callees:
            for side in (0, 1):
                for i, c in enumerate(sides[side]):
                    if i not in kept[side] and any(x in c.text for x in callees) \
                            and _callees(fact_names, c) & callees:
                        keep(side, i)
        # backward: what the kept statements read, to a fixed point
        binders: tuple[dict, dict] = ({}, {})
        for side in (0, 1):
            for i, c in enumerate(sides[side]):
                for b in c.binds:
                    binders[side].setdefault(b, []).append(i)
        while todo:
            side, i = todo.pop()
            for name in sides[side][i].loads:
                for j in binders[side].get(name, ()):
                    keep(side, j)
    except _Whole:
        return None
    kept_lines = sum(cs[i].last - cs[i].first + 1 for cs, k in zip(sides, kept) for i in k)
    if kept_lines > MAX_SHARE * total:
        return None
    return _compact(glines, gc, kept[0]), _compact(nlines, nc, kept[1]), kept_lines, total


def _compact(lines: list[str], cs: list[Chunk], kept: set) -> tuple[str, list[int]]:
    """The kept statements' lines, in order, and the file line of each (1-based)."""
    out: list[str] = []
    where: list[int] = []
    for i in sorted(kept):
        c = cs[i]
        out.extend(lines[c.first - 1:c.last])
        where.extend(range(c.first, c.last + 1))
    return "\n".join(out) + "\n", where


@derived
def fact_callee_names(rs: RuleSet) -> tuple[set, tuple]:
    """The last name of every callee the fact table can match (exact names, and the endings
    of `*` patterns): the cheap prefilter of the callees a changed statement writes."""
    exact, suffixes = set(), []
    for e in (rs.section("python", {}) or {}).get("fact_calls", []):
        for pat in e["match"]:
            last = pat.rsplit(".", 1)[-1]
            if "*" in last:
                suffixes.append(last.replace("*", ""))
            else:
                exact.add(last)
    return exact, tuple(suffixes) or ("\0",)


def device_words(text: str) -> bool:
    """A statement that may test the device: it names the NPU, asks whether a device is
    available, or compares with the name "cuda" or "gpu" (a cheap prefilter: the
    specialisation decides on the syntax tree)."""
    low = text.lower()
    return may_branch(low.encode("utf-8", "surrogatepass")) or "is_available" in low or any(
        q + w + q in low for w in ("cuda", "gpu") for q in ("'", '"'))


def source_text(src) -> str:
    """A Python source's text with its line endings as Python reads them: CPython's tokenizer
    takes `\\r\\n` and a lone `\\r` as `\\n` (in string literals too), so a file saved with
    Windows line endings is the same program, and compares as one; so is a last line without its
    newline. The lines keep their numbers."""
    t = src.text
    if "\r" in t:
        t = t.replace("\r\n", "\n").replace("\r", "\n")
    return t + "\n" if t and not t.endswith("\n") else t


def pair_key(gdata: bytes, ndata: bytes) -> tuple[bytes, bytes]:
    return hashlib.blake2b(gdata, digest_size=16).digest(), hashlib.blake2b(ndata, digest_size=16).digest()


# --- ahead of the reader (rules/kinds.yaml `ahead`) -------------------------------------------
# This module imports neither libcst nor the reader, so the parent of a folder diff can plan
# pairs while its reader process is still importing them (scriptdiff/run/zygote.py); the plans
# travel with the work, and the reader takes a given plan instead of computing it again.

_GIVEN: dict = {}


def ahead(gsrc, nsrc) -> tuple[tuple, object]:
    """(key, plan) of a pair, as the reader would compute it (lang/python.focus_text)."""
    return pair_key(gsrc.data, nsrc.data), plan(source_text(gsrc), source_text(nsrc), fact_callee_names())


def given(plans: dict) -> None:
    """Plans computed ahead, by pair key."""
    _GIVEN.update(plans)


NOT_GIVEN = object()  # take()'s answer for a pair nobody planned ahead (a plan may be None)


def take(key: tuple):
    """A plan given for this pair (removed: each is read once), or NOT_GIVEN."""
    return _GIVEN.pop(key, NOT_GIVEN)
