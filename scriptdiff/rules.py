"""The rule packs in rules/*.yaml, loaded and validated once per process.

The format and its checks live in `rulepack` (parse, RuleSet) and `rule_validators` (one
validator per data section); this module loads the packs shipped with this build, caches
the validated RuleSet, and resolves rule names to their stable codes: code refers to a rule
by the name written next to its code in the pack (`code("unused-suppression")` is SD152),
so each code is written exactly once, in rules/.
"""
from __future__ import annotations

from dataclasses import asdict
from functools import lru_cache

from . import cache, rule_validators  # noqa: F401  (rule_validators registers the section validators)
# the rule-pack format's names, for callers that load packs themselves (tests, tools)
from .rulepack import Example, Rule, RuleError, RuleSet, load_packs, parse_pack, rules_dir  # noqa: F401


@lru_cache(maxsize=1)
def load() -> RuleSet:
    """The rule packs, parsed and validated. A validated RuleSet is kept in the parse cache
    (JSON, keyed by the packs' bytes, the version and the code), since parsing the YAML
    costs more than the rest of a small run; a stale or corrupt entry is simply re-parsed."""
    key = cache.key("ruleset")
    hit = cache.get(key)
    if hit is not None:
        try:
            return _from_json(hit)
        except (KeyError, TypeError, ValueError):
            pass
    rs = load_packs(sorted(rules_dir().glob("*.yaml")))
    cache.put(key, _to_json(rs))
    return rs


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


@lru_cache(maxsize=None)
def _codes_by_name() -> dict[str, str]:
    return {r.name: r.code for r in load().rules.values()}


def code(name: str) -> str:
    """The stable code of the rule called `name` in rules/*.yaml (RuleError if there is none)."""
    try:
        return _codes_by_name()[name]
    except KeyError:
        raise RuleError(f"rules/: no rule is named {name!r}") from None
