"""The rule packs in rules/*.yaml, loaded and validated once per process.

The format and its checks live in `rulepack` (parse, merge, RuleSet) and `rule_validators`
(each data section's schema and validator); this module loads the packs shipped with this
build and the user's own (`use_packs`: `--rules DIR`, or `rules = [...]` in [tool.scriptdiff]),
caches the validated RuleSet (one per selection of packs), and resolves rule names to their
stable codes: code refers to a rule by the name written next to its code in the pack
(`code("unused-suppression")` is SD152), so each code is written exactly once, in rules/.

A table derived from the packs (the launcher table, the spelling index, the kind registry) is
a view of the rule set in use: `@derived` makes `build(rs)` a function built once per RuleSet
(RuleSet.view), so a user's pack changes it in the same process and nothing else is reset.
"""
from __future__ import annotations

import marshal
import os
import sys
from dataclasses import asdict
from functools import lru_cache, wraps
from pathlib import Path
from typing import Callable, TypeVar

from ..inputs import cache  # noqa: F401  (rule_validators registers the section validators)
from . import rule_validators  # noqa: F401  (rule_validators registers the section validators)
# the rule-pack format's names, for callers that load packs themselves (tests, tools)
from ..inputs import store
from ..model import UsageError
from ..inputs.store import write_then
from .rulepack import Example, Rule, RuleError, RuleSet, load_packs, parse_pack, rules_dir  # noqa: F401


_GIVEN: RuleSet | None = None  # the parent's RuleSet, handed to a reader process (zygote.py)
T = TypeVar("T")


def load() -> RuleSet:
    """The rule packs in use (the shipped ones, then the user's: use_packs), parsed and
    validated. A validated RuleSet is kept in the parse cache (JSON, keyed by the packs' bytes,
    the version and the code), since parsing the YAML costs more than the rest of a small run;
    a stale or corrupt entry is simply re-parsed."""
    return _GIVEN if _GIVEN is not None else _load(store.user_salt())


def derived(build: Callable[[RuleSet], T]) -> Callable[..., T]:
    """A table derived from the rule packs: `build(rs)` made once per RuleSet (RuleSet.view).
    The function returned takes the rule set (default: the one in use, `load()`), so the
    table follows the user's packs: another selection is another RuleSet, with views of its
    own, and going back to a selection finds its views again."""
    @wraps(build)
    def of(rs: RuleSet | None = None) -> T:
        return (rs or load()).view(build)

    of.build = build  # type: ignore[attr-defined]
    return of


def given(rs: RuleSet) -> None:
    """Use `rs`, the RuleSet this process's parent loaded, instead of loading the packs again."""
    global _GIVEN
    _GIVEN = rs


def use_packs(dirs: list[str], add: bool = False) -> None:
    """Load the user's rule packs too: every *.yaml of each folder in `dirs` (a pack file may
    be named itself), in that order, after the shipped packs; sections merge with theirs
    (rulepack.load_packs). The rule set in use is then the one of this selection (`load`: its
    key is the packs' names and bytes), and so is every table derived from it (`derived`).
    UsageError for a folder that is not there or holds no pack; RuleError, at the first load,
    for a broken one. `add`: keep the packs already in use, these after them."""
    files: list[Path] = list(store.user_packs()) if add else []
    for d in dirs:
        p = Path(d)
        if p.is_file():
            found = [p]
        elif p.is_dir():  # regular files only: a FIFO named x.yaml would never end its read
            found = [f for f in sorted(p.glob("*.yaml")) + sorted(p.glob("*.yml")) if f.is_file()]
        elif p.exists():
            raise UsageError(f"--rules {d}: not a folder or a rule pack file")
        else:
            raise UsageError(f"--rules {d}: no such folder")
        if not found:
            raise UsageError(f"--rules {d}: no rule pack (*.yaml) in it")
        files += [f for f in found if f not in files]
    store.set_user_packs(files)  # their salt is read again: the same packs edited are another selection


def check_profile(name: str | None) -> None:
    """UsageError unless `name` (`--profile NAME`, `profile = "NAME"`) is a profile of the packs in
    use (the `profiles` section: rules/alignment.yaml ships `alignment`; a team's pack adds its own)."""
    if name is None:
        return
    known = load().section("profiles") or {}
    if name not in known:
        raise UsageError(f"--profile {name}: no such profile (known: {', '.join(sorted(known)) or 'none'}; "
                         f"a pack of --rules may add one under `profiles`)")


def user_packs() -> tuple[Path, ...]:
    """The user's pack files loaded after the shipped ones (use_packs), in order."""
    return store.user_packs()


@lru_cache(maxsize=8)
def _load(selection: str = "") -> RuleSet:
    """The rule set of one selection of packs: `selection` is the user's packs' salt
    (store.user_salt: their names and bytes; "" for the shipped packs alone), the key this
    memo keeps a few rule sets by (a process that switches packs, as `rules --test DIR` and
    the tests do, loads each selection and builds its views once)."""
    key = cache.key("ruleset")  # the salt covers the user's packs: their bytes and names
    user = store.user_packs()
    # with the user's packs, the content cache only: the snapshot beside the code is the
    # shipped packs' (one per key: writing another would remove it for the next plain run)
    for where, read in (("cache", cache.get),) if user else (("snapshot", _snapshot), ("cache", cache.get)):
        hit = read(key)  # in turn: the cache is read only without a usable snapshot
        if hit is not None:
            try:
                rs = _from_json(hit)
            except (KeyError, TypeError, ValueError):
                continue
            if where == "cache" and not user:
                _write_snapshot(key, hit)
            return rs
    rs = load_packs(sorted(rules_dir().glob("*.yaml")), user=list(user))
    rs.positions = None  # only validation needs them (and a reader process is sent the set)
    data = _to_json(rs)
    cache.put(key, data)
    if not user:
        _write_snapshot(key, data)
    return rs


# The validated rule packs are also kept beside the code, as Python keeps compiled modules:
# scriptdiff/__pycache__/ruleset.<key>.marshal, written where Python would write its .pyc
# files (not under PYTHONDONTWRITEBYTECODE or a read-only install). Whoever can write there
# can already change the code Python runs, so it is read without the cache's checks (marshal
# of plain data: no code is loaded) and costs a millisecond, where parsing the packs costs
# about forty; a first run on an empty cache then starts like any other. Its name carries the
# key (version, packs, code), so an edit never reads an old one.
_SNAPSHOT_DIR = Path(__file__).resolve().parent / "__pycache__"


def _snapshot(key: str) -> dict | None:
    try:
        data = marshal.loads((_SNAPSHOT_DIR / f"ruleset.{key}.marshal").read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return None
    return data if isinstance(data, dict) else None


def _write_snapshot(key: str, data: dict) -> None:
    if sys.dont_write_bytecode:
        return
    name = f"ruleset.{key}.marshal"
    try:
        blob = marshal.dumps(data)
        _SNAPSHOT_DIR.mkdir(exist_ok=True)
        for old in _SNAPSHOT_DIR.glob("ruleset.*.marshal"):  # one per key; older ones are dead
            if old.name != name:
                old.unlink()
    except (OSError, ValueError):
        return
    write_then(_SNAPSHOT_DIR, ".ruleset.", blob, lambda tmp: os.replace(tmp, _SNAPSHOT_DIR / name))


def _to_json(rs: RuleSet) -> dict:
    return {"rules": [asdict(r) for r in rs.rules.values()], "sections": cache.enc(rs.sections),
            "origin": rs.section_origin}


def _from_json(d: dict) -> RuleSet:
    rules = {}
    for r in d["rules"]:
        r = dict(r)
        r["examples"] = [Example(**e) for e in r["examples"]]
        rules[r["code"]] = Rule(**r)
    return RuleSet(rules=rules, sections=cache.dec(d["sections"]), section_origin=dict(d["origin"]))


@derived
def _codes_by_name(rs: RuleSet) -> dict[str, str]:
    return {r.name: r.code for r in rs.rules.values()}


def code(name: str) -> str:
    """The stable code of the rule called `name` in rules/*.yaml (RuleError if there is none)."""
    try:
        return _codes_by_name()[name]
    except KeyError:
        raise RuleError(f"rules/: no rule is named {name!r}") from None


def unknown_selector(selector: str) -> str | None:
    """None when `selector` names rule codes (a whole code, or a prefix of one such as SD2);
    else a one-line message that names it and suggests the nearest code."""
    codes = sorted(load().rules)
    s = selector.strip().upper()
    if any(c.startswith(s) for c in codes) and s:
        return None
    # the usual typos first: letter O for zero, I or l for one, a missing SD
    digits = s[2:] if s.startswith("SD") else s
    fixed = "SD" + digits.replace("O", "0").replace("I", "1").replace("L", "1")
    near = fixed if any(c.startswith(fixed) for c in codes) else nearest(s, codes)
    hint = f"; did you mean {near}?" if near else f" (codes run from {codes[0]} to {codes[-1]}; `scriptdiff rules` lists them)"
    return f"unknown rule code or prefix {selector!r}{hint}"


def edit_distance(a: str, b: str) -> int:
    """Damerau-Levenshtein distance (optimal string alignment): insertions, deletions,
    substitutions and transpositions of two adjacent characters each cost one, so SD260 is
    one edit from SD206."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[len(b)]


def nearest(typo: str, codes: list[str], most: int = 2) -> str | None:
    """The code nearest `typo` by edit distance (at most `most` edits), else None. Among codes
    equally near, one with the same characters (a swap: SD260 -> SD206) comes first, then one
    the typo starts with (SD1061 -> SD106), then one in the same hundred (the same check),
    then the lowest."""
    best = None
    for c in codes:
        d = edit_distance(typo, c)
        if d <= most:
            key = (d, sorted(c) != sorted(typo), not typo.startswith(c), c[:3] != typo[:3], c)
            best = min(best, key) if best else key
    return best[-1] if best else None


def check_selectors(selectors: list[str] | None, where: str) -> None:
    """Refuse unknown codes in --select/--ignore/configuration (ruff does the same): a typo must
    not turn a gate green. Raises UsageError naming `where`."""
    for s in selectors or []:
        msg = unknown_selector(s)
        if msg:
            raise UsageError(f"{where}: {msg}")
