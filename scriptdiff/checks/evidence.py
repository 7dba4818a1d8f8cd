"""Claims against evidence (issue 44): what a side's scripts set, checked against what the
run itself reports in that side's logs (lang/runlog.py reads the blocks of rules/evidence.yaml
`run_logs`; each fact it makes carries `meta["evidence"]`, the block's title).

audit(table, side) -> (findings, notes)
    one SD229 finding for each setting the side's scripts write (a launch flag, a config
    value, a script's keyword: an explicit fact at a line, not from a log) whose value the
    run reports otherwise, with both places; and, for each log that reported settings, one
    note for its input account: which of the settings the scripts set it confirmed, which it
    contradicted and which it did not report (no evidence). Cosmetic settings are left out.
    The other side plays no part: a setting not in effect is a finding whatever it does.

claim_of(facts), not_in_effect(...), account(...)
    what a side's scripts set of a key, the SD229 finding and a piece of evidence's account
    line, shared with the dumps' evidence (dumps/evidence.py)
"""
from __future__ import annotations

from ..model import ORIGIN_EXPLICIT, RANK_LOG, Fact, Finding
from ..run.compare import FactTable, equal, show
from ..run.finding import finding
from ..ruleset.rules import code
from ..ruleset.vocabulary import category, is_cosmetic


def claim_of(facts: list[Fact]) -> Fact | None:
    """The setting the scripts make of a key: the strongest explicit fact at a line not read
    from a log (the last one read among equals, as FactTable.get)."""
    mine = [(i, f) for i, f in enumerate(facts) if not f.meta.get("evidence") and f.origin == ORIGIN_EXPLICIT
            and f.path and f.line and f.rank < RANK_LOG and not f.meta.get("sectioned")]
    return max(mine, key=lambda ix: (ix[1].rank, ix[0]))[1] if mine else None


def _written(v) -> str:
    """A value as text without its punctuation: a launch flag's `949,50,1` and the log's
    `(949, 50, 1)` or `['949', '50', '1']` are one value."""
    if isinstance(v, (list, tuple)):
        return ",".join(_written(x) for x in v)
    return str(v).strip().strip("()[]'\"").replace(" ", "").replace("'", "").replace('"', "")


def _cosmetic(key: str) -> bool:
    return category(key).rule == code("cosmetic-setting-differs") or is_cosmetic(key)


def audit(table: FactTable, side: str) -> tuple[list[Finding], list[tuple[str, str]]]:
    found: list[Finding] = []
    said: dict[str, dict[str, list[str]]] = {}  # log path -> confirmed / contradicted
    logs = sorted({f.path for fs in table.facts.values() for f in fs if f.meta.get("evidence")})
    if not logs:
        return [], []
    unproven: list[str] = []
    for key in sorted(table.facts):
        facts = table.facts[key]
        claim = claim_of(facts)
        if claim is None or ":" in key or _cosmetic(key):
            continue
        shown = [f for f in facts if f.meta.get("evidence")]
        if not shown:
            unproven.append(key)
            continue
        ev = shown[-1]
        if equal(claim.value, ev.value) or _written(claim.value) == _written(ev.value):
            said.setdefault(ev.path, {}).setdefault("confirmed", []).append(key)
            continue
        said.setdefault(ev.path, {}).setdefault("contradicted", []).append(key)
        found.append(not_in_effect(key, claim, side, ev.value, ev.meta["evidence"], ev.path, ev.line, ev.source))
    notes = []
    for path in logs if said or unproven else ():  # the scripts set nothing a run could report: nothing to say
        got = said.get(path, {})
        notes.append((path, account(side, got.get("confirmed", []), got.get("contradicted", []), unproven)))
    return found, notes


def not_in_effect(key: str, claim: Fact, side: str, value, block: str, path: str, line: int | None, source: str = "",
                  why: str = "") -> Finding:
    """The SD229 finding of a setting `claim` makes that its run's `block` reports as `value`
    (at path:line; `why`: what in it says so, in a few words)."""
    at = f"{path}:{line}" if line else path
    return finding(
        "setting-not-in-effect", key=key, **{side: claim.side(), ("npu" if side == "gpu" else "gpu"): None},
        message=f"{key} {show(claim.value)} in {claim.path}:{claim.line}; {block} says {show(value)} at {at}"
                f"{f' ({why})' if why else ''}: the setting was not in effect on {side.upper()}",
        extra={"run_says": {"side": side, "value": value, "path": path, "line": line, "source": source,
                            "block": block}})


def account(side: str, ok: list[str], bad: list[str], unproven: list[str]) -> str:
    """One input's account of the settings its side's scripts set: in effect, not, no evidence."""
    parts = [f"evidence for {len(ok) + len(bad)} of {len(ok) + len(bad) + len(unproven)} setting(s) the "
             f"{side.upper()} scripts set"]
    if ok:
        parts.append(f"in effect: {', '.join(ok)}")
    if bad:
        parts.append(f"not in effect: {', '.join(bad)}")
    if unproven:
        parts.append(f"no evidence: {', '.join(unproven)}")
    return "; ".join(parts)
