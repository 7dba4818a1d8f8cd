"""One severity per rule code: whatever produced it, a finding has its rule's severity; and the
one Severity type (model.Severity) that orders severities and spells them for every output.

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
import pickle
from types import SimpleNamespace

import pytest

from conftest import FIXTURES
from scriptdiff import api
from scriptdiff.model import SEVERITIES, InputError, Options, Severity
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
    from scriptdiff.lang.python.classify import severity_rule
    from scriptdiff.model import Severity as SEVERITY_RULES  # the classes: every severity (model.Severity)

    assert {cls: load().severity(severity_rule(cls)) for cls in SEVERITY_RULES} == {
        "error": "error", "warning": "warning", "info": "info"}


# ------------------------------------------------------------------ the Severity type

def test_severities_rank_most_severe_first():
    assert [s.value for s in Severity] == ["error", "warning", "info"] == list(SEVERITIES)
    assert [s.rank for s in Severity] == [0, 1, 2]
    assert [s.value for s in Severity.ascending()] == ["info", "warning", "error"]
    assert Severity.worst(["info", "error", "warning"]) is Severity.ERROR
    assert Severity.worst([Severity.INFO, "warning", "info"]) is Severity.WARNING
    assert [s.at_least("warning") for s in Severity] == [True, True, False]
    assert [s.at_least(Severity.INFO) for s in Severity] == [True, True, True]
    assert [s.loud for s in Severity] == [True, True, False]  # what fails a run and what fix edits unasked


def test_each_output_spells_a_severity_its_own_way():
    spelled = {s.value: (s.style, s.table_style, s.mark, s.look, s.html_class, s.markdown, s.sarif, s.github,
                         s.counted) for s in Severity}
    assert spelled == {
        "error": ("bold red", "red", "E", "E", "sev-error", "🔴 error", "error", "error", "error(s)"),
        "warning": ("yellow", "yellow", "W", "W", "sev-warning", "🟡 warning", "warning", "warning", "warning(s)"),
        "info": ("cyan", "cyan", "i", "I", "sev-info", "🔵 info", "note", "notice", "info"),
    }


def test_a_severity_is_the_string_it_spells():
    s = Severity.WARNING
    assert s == "warning" and "warning" == s and Severity("warning") is s and Severity(s) is s
    assert f"{s:<8}|" == "warning |" and str(s) == "warning" and "%s" % s == "warning"
    assert json.dumps({"severity": s, s: 1}) == '{"severity": "warning", "warning": 1}'
    assert {"warning": 1}[s] == 1 and {"error": ["eps"]}.get(Severity.ERROR) == ["eps"]  # YAML's keys, as written
    assert pickle.loads(pickle.dumps(s)) is s  # findings cross to worker processes
    with pytest.raises(ValueError):
        Severity("fatal")


def test_counts_and_the_summary_line():
    found = [SimpleNamespace(severity=x) for x in ("info", "error", Severity.INFO)]
    assert Severity.counts(found) == {Severity.ERROR: 1, Severity.WARNING: 0, Severity.INFO: 2}
    assert list(Severity.counts(found)) == list(Severity)
    assert Severity.tally(found) == "1 error(s), 0 warning(s), 2 info"
    assert Severity.tally([]) == "0 error(s), 0 warning(s), 0 info"


def test_an_input_error_is_graded_as_sarif_and_github_grade_findings():
    graded = [InputError("a", "m", fatal=True), InputError("a", "m"), InputError("a", "m", level="note")]
    assert [e.severity for e in graded] == [Severity.ERROR, Severity.WARNING, Severity.INFO]
    assert [(e.severity.sarif, e.severity.github) for e in graded] == [
        ("error", "error"), ("warning", "warning"), ("note", "notice")]


def test_a_finding_made_or_read_back_carries_the_type():
    from scriptdiff.inputs.cache import dump_finding, load_finding
    from scriptdiff.run.finding import finding

    f = finding("cosmetic-code-differs", key="x", message="m")
    assert f.severity is Severity(load().severity(f.rule))
    back = load_finding(json.loads(json.dumps(dump_finding(f))))
    assert back.severity is f.severity and back.to_json()["severity"] == f.severity.value
    assert type(f.to_json()["severity"]) is str


def test_severity_filters_what_is_shown():
    from scriptdiff.run.engine import filter_findings

    found = [SimpleNamespace(severity=s, rule="SD201", check="hyperparameters") for s in ("info", "warning", "error")]
    assert [f.severity for f in filter_findings(found, Options(min_severity="warning"))] == ["warning", "error"]
    assert [f.severity for f in filter_findings(found, Options(min_severity="error"))] == ["error"]
    assert len(filter_findings(found, Options(min_severity="info"))) == len(filter_findings(found, Options())) == 3


def test_each_rule_family_has_one_rule_per_severity():
    """A classifier that grades a difference reports it under the rule of its grade: the rule of
    the family whose severity (written once, in its pack) is that grade."""
    pytest.importorskip("libcst")
    from scriptdiff.lang.python.classify import CODE_RULES
    from scriptdiff.ruleset.rules import RuleError, code
    from scriptdiff.run.finding import rule_of
    from scriptdiff.run.review import HUNK_RULES

    for family in (CODE_RULES, HUNK_RULES):
        assert [rule_of(s, family) for s in Severity] == [code(name) for name in family]
        assert [load().severity(rule_of(s, family)) for s in Severity] == list(SEVERITIES)
    with pytest.raises(RuleError, match="has severity error"):
        rule_of("error", ("cosmetic-code-differs",))
