"""One severity per rule code: whatever produced it, a finding has its rule's severity.

Every fixture pair under fixtures/ goes through the real pipeline (folder diffs of each
gpu/ against its npu*/ folders, the Megatron logs, the environment snapshots, `check` on
the bundled example, `review` of the example's port as a patch, `curves` on the generated
logs of every kind), and each finding's severity must be the one its rule declares in the
catalogue (`rules.load().severity(code)`), which is also SARIF's defaultConfiguration.level.
"""
from __future__ import annotations

import difflib
import importlib.util
import json

import pytest

from conftest import FIXTURES
from scriptdiff import api
from scriptdiff.model import Options
from scriptdiff.run.pipeline import diff_files
from scriptdiff.report import render
from scriptdiff.ruleset.rules import load
from scriptdiff.run.folders import diff_trees

_spec = importlib.util.spec_from_file_location("curves_gen", FIXTURES / "curves" / "gen.py")
gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen)


def folder_pairs() -> list[tuple[str, str]]:
    """(gpu folder, npu folder) for every fixture case with a gpu/ and one or more npu*/ folders."""
    out = []
    for gpu in sorted(FIXTURES.rglob("gpu")):
        if gpu.is_dir():
            out += [(str(gpu), str(npu)) for npu in sorted(gpu.parent.glob("npu*")) if npu.is_dir()]
    return out


PAIRS = folder_pairs()


def wrong_severities(report) -> list[tuple[str, str, str, str]]:
    rs = load()
    return [(f.rule, f.key, f.severity, rs.severity(f.rule)) for f in report.findings
            if f.severity != rs.severity(f.rule)]


def test_the_fixtures_hold_pairs():
    names = {tuple(p.split("fixtures/", 1)[1] for p in pair) for pair in PAIRS}
    assert ("launch/megatron/gpu", "launch/megatron/npu_injected") in names
    assert ("python/ddp_amp/gpu", "python/ddp_amp/npu") in names
    assert ("env/gpu", "env/npu") in names and len(PAIRS) >= 15


@pytest.mark.parametrize("gpu,npu", PAIRS, ids=[p[1].split("fixtures/", 1)[1] for p in PAIRS])
def test_every_fixture_pair_finding_has_its_rules_severity(gpu, npu):
    report = diff_trees(gpu, npu, Options(use_cache=False))
    assert report.inputs and report.errors == [], "the pair is read"
    assert wrong_severities(report) == []


def test_the_fixture_pairs_give_findings_of_every_severity():
    seen = set()
    for gpu, npu in PAIRS:
        seen |= {f.severity for f in diff_trees(gpu, npu, Options(use_cache=False)).findings}
    assert seen == {"error", "warning", "info"}


def test_the_megatron_logs_and_snapshots():
    logs = FIXTURES / "launch" / "megatron_log"
    report = diff_files([str(logs / "gpu_train.log")], [str(logs / "npu_train.log")], Options(use_cache=False))
    env = api.env([str(FIXTURES / "env/gpu/snapshot.json")], [str(FIXTURES / "env/npu/snapshot.json")])
    assert report.findings and env.findings
    assert wrong_severities(report) == [] and wrong_severities(env) == []


def test_check_on_the_example_covers_every_check():
    report = api.check(str(FIXTURES / "example" / "scriptdiff.toml"), options=Options(use_cache=False))
    assert set(report.verdicts) >= {"script", "hyperparameters", "environment", "libraries", "dataset", "weights"}
    assert {f.check for f in report.findings} >= {"hyperparameters", "environment", "libraries"}
    assert wrong_severities(report) == []
    # SARIF: each result's level is its rule's defaultConfiguration.level
    sarif = json.loads(render(report, "sarif"))["runs"][0]
    level = {r["id"]: r["defaultConfiguration"]["level"] for r in sarif["tool"]["driver"]["rules"]}
    assert sarif["results"] and all(r["level"] == level[r["ruleId"]] for r in sarif["results"])
    assert {"error", "note"} <= {r["level"] for r in sarif["results"]}  # info is "note"


def test_review_of_the_example_port():
    ex = FIXTURES / "example"
    old = (ex / "gpu/train.py").read_text(encoding="utf-8").splitlines(keepends=True)
    new = (ex / "npu/train.py").read_text(encoding="utf-8").splitlines(keepends=True)
    patch = "".join(difflib.unified_diff(old, new, "a/train.py", "b/train.py")).encode()
    report = api.review(patch, "port.patch", Options(use_cache=False), root=None)
    assert report.findings
    assert wrong_severities(report) == []


@pytest.mark.parametrize("kind", gen.KINDS)
def test_curves_of_every_kind(tmp_path, kind):
    g, n = gen.write(str(tmp_path), "megatron", kind, steps=1200)
    report = api.curves(g, n, Options(use_cache=False))
    assert wrong_severities(report) == []


def test_a_code_class_is_reported_by_the_rule_of_that_severity():
    """rules/python.yaml `classes` sorts a code difference into error, warning or info; each
    class has its rule (lang/python/classify.py), whose severity must be that class."""
    pytest.importorskip("libcst")
    from scriptdiff.lang.python.classify import SEVERITY_RULES, severity_rule

    assert {cls: load().severity(severity_rule(cls)) for cls in SEVERITY_RULES} == {
        "error": "error", "warning": "warning", "info": "info"}
