"""Every rule's own examples, run through the real pipeline (Fixit-style).

A rule must carry at least one example that fires and one that does not (the loader
enforces it); scriptdiff/project/rule_examples.py writes each example to a GPU and an NPU file and
runs it the way its rule needs (`example_modes`, rules/check.yaml), and the rule must appear
among the findings or masked substitutions exactly when the example says. A user's pack
runs its own examples the same way: `scriptdiff rules --test DIR` (tests/test_user_packs.py).
Every finding must carry its rule's severity (one severity per code).
"""
from __future__ import annotations

import pytest

from scriptdiff.project.rule_examples import report_for, wrong_severities
from scriptdiff.ruleset.rules import load

CASES = [(r.code, i, ex) for r in load().rules.values() for i, ex in enumerate(r.examples)]


@pytest.mark.parametrize("code,index,example", CASES, ids=[f"{c}-{i}" for c, i, _ in CASES])
def test_rule_example(tmp_path, code, index, example):
    report = report_for(tmp_path, example, code)
    got = {f.rule for f in report.findings} | {m.rule for m in report.masked}
    if example.fires:
        assert code in got, f"{code} example {index + 1} should fire; got {sorted(got)}"
    else:
        assert code not in got, f"{code} example {index + 1} should not fire; got {sorted(got)}"
    # one severity per code: the rule's, whatever made the finding (and every other finding's too)
    rs = load()
    assert wrong_severities(report) == []
    if example.fires and rs.rule(code).kind == "finding":
        assert {f.severity for f in report.findings if f.rule == code} == {rs.severity(code)}


def test_every_rule_has_both_kinds_of_example():
    for r in load().rules.values():
        assert any(e.fires for e in r.examples) and not all(e.fires for e in r.examples), r.code
        assert r.doc.strip() and r.summary.strip(), r.code
