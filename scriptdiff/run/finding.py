"""The one place a finding is made: its severity (and, by default, its check) come from its rule.

A rule code carries one severity, written once in its pack's `rules:` catalogue; nothing
else picks one. `finding("rule-name" or code, key=, gpu=, npu=, message=)` builds every
Finding of the package (model.Finding itself stays the plain type that is serialised and
read back: cache.py, baselines). A case that deserves another severity is another rule, with
its own code, doc and examples. `reclassified(f, rule)` is the same finding under another
rule (a classifier that reads a difference again: a cosmetic name, the worst of several places);
`rule_of(severity, family)` is the rule of a family (one rule per severity) that has a severity.

No secret leaves the factory: the finding's values, source lines, message, key and extra
text go through scriptdiff.ruleset.secrets.withhold_finding (a secret-looking value withheld whole,
each secret part of a line or message replaced by `<withheld>`), so no writer can show one.

`check` defaults to the rule's; a finding about an input (SD154 input not understood, SD155
check not configured) names the check whose input it is, so that check's verdict sees it.
"""
from __future__ import annotations

from typing import Any

from ..model import Fact, Finding, Severity, Side
from ..ruleset.rules import RuleError, RuleSet, code, load
from ..ruleset.secrets import withhold_finding


def rule_code(rule: str, rs: RuleSet | None = None) -> str:
    """The code of a rule given by code or by name (RuleError if there is no such rule)."""
    rs = rs or load()
    if rule in rs.rules:
        return rule
    if rs is load():
        return code(rule)
    for r in rs.rules.values():
        if r.name == rule:
            return r.code
    raise RuleError(f"rules/: no rule is named {rule!r}")


def rule_of(severity: Severity | str, family: tuple[str, ...], rs: RuleSet | None = None) -> str:
    """The code of the rule of `family` (rule names, one rule per severity) whose severity is
    `severity`: a classifier that grades a difference reports it under the rule of its grade,
    and each rule's severity stays written once, in its pack. RuleError when none has it."""
    rs = rs or load()
    for name in family:
        c = rule_code(name, rs)
        if rs.severity(c) == severity:
            return c
    raise RuleError(f"rules/: none of {', '.join(family)} has severity {Severity(severity)}")


def _side(x: Side | Fact | None) -> Side | None:
    return x.side() if isinstance(x, Fact) else x


def finding(rule: str, *, key: str, message: str, gpu: Side | Fact | None = None, npu: Side | Fact | None = None,
            check: str | None = None, derived: bool = False, extra: dict[str, Any] | None = None,
            rs: RuleSet | None = None) -> Finding:
    """A Finding of `rule` (a name or a code), with the severity its rule declares. `gpu` and
    `npu` are the sides (a Fact stands for its side); `check` defaults to the rule's."""
    rs = rs or load()
    r = rs.rules[rule_code(rule, rs)]
    if r.kind != "finding":
        raise RuleError(f"{r.pack}:{r.line or 1}: {r.code} is a mask: it is never a finding")
    key, message, g, n, extra = withhold_finding(key, message, _side(gpu), _side(npu), extra if extra is not None else {})
    return Finding(rule=r.code, check=check or r.check, severity=Severity(r.severity), key=key, gpu=g, npu=n,
                   message=message, derived=derived, extra=extra)


def reclassified(f: Finding, rule: str, message: str | None = None, rs: RuleSet | None = None) -> Finding:
    """`f` under another rule (and its severity), its check kept; optionally a new message."""
    return finding(rule, key=f.key, message=f.message if message is None else message, gpu=f.gpu, npu=f.npu,
                   check=f.check, derived=f.derived, extra=f.extra, rs=rs)
