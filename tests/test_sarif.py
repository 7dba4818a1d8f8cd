"""SARIF 2.1.0 output, validated against the standard's JSON schema (tests/data)."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from scriptdiff.model import Finding, InputError, Report, Side
from scriptdiff.report import render

SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text())


def validate(doc):
    jsonschema.Draft4Validator(SCHEMA).validate(doc)


def sample_report(root: Path) -> Report:
    r = Report(gpu="gpu", npu="npu")
    r.findings = [
        Finding("SD108", "script", "warning", "code:notes.txt:lines",
                Side("lr=1", str(root / "gpu" / "notes.txt"), 2, "lr=1"),
                Side("lr=2", "npu/notes.txt", 2, "lr=2"), "lines differ"),
        Finding("SD150", "script", "warning", "file:prep.sh", None,
                Side("prep.sh", "npu/prep.sh", None, "shell"), "shell file on NPU only"),
        Finding("SD152", "script", "info", "suppress:x", Side("# scriptdiff: ignore", "gpu/a.py", 3, "#"), None,
                "unused"),
    ]
    r.errors = [InputError("npu/broken.py", "not valid Python; compared as text")]
    r.compared = 1
    return r


def test_sarif_validates_and_has_code_scanning_fields(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()  # the repository root that URIs are relative to
    doc = json.loads(render(sample_report(tmp_path), "sarif"))
    validate(doc)
    assert doc["version"] == "2.1.0"
    run = doc["runs"][0]
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert {"SD108", "SD150", "SD151", "SD152", "SD153"} <= set(rules)
    assert rules["SD150"]["shortDescription"]["text"].startswith("A script, config")
    assert rules["SD150"]["fullDescription"]["text"] and rules["SD150"]["help"]["text"]
    assert rules["SD150"]["defaultConfiguration"]["level"] == "warning"
    assert rules["SD152"]["defaultConfiguration"]["level"] == "note"
    res = {x["ruleId"]: x for x in run["results"]}
    assert sorted((x["ruleId"], x["level"]) for x in res.values()) == [("SD108", "warning"), ("SD150", "warning"),
                                                                       ("SD152", "note")]
    sd108 = res["SD108"]
    loc = sd108["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "npu/notes.txt", "uriBaseId": "%SRCROOT%"}
    assert loc["region"]["startLine"] == 2
    rel = sd108["relatedLocations"][0]["physicalLocation"]
    assert rel["artifactLocation"]["uri"] == "gpu/notes.txt"  # absolute path made repository-relative
    assert rel["region"]["startLine"] == 2
    assert run["tool"]["driver"]["rules"][sd108["ruleIndex"]]["id"] == "SD108"
    assert "region" not in res["SD150"]["locations"][0]["physicalLocation"]  # a file without a line
    assert "relatedLocations" not in res["SD150"]  # the GPU side is absent
    assert res["SD152"]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "gpu/a.py"
    assert run["invocations"][0]["toolExecutionNotifications"][0]["message"]["text"].startswith("npu/broken.py")
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.as_uri() + "/"


def test_sarif_from_cli_on_folders_validates(tmp_path, cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()
    for side, text in (("gpu", "a\n1\n"), ("npu", "a\n2\n")):
        (tmp_path / side).mkdir()
        (tmp_path / side / "x.txt").write_text(text)
    (tmp_path / "npu" / "only.sh").write_text("echo\n")
    code, out, _ = cli("diff", "gpu", "npu", "-f", "sarif")
    doc = json.loads(out)
    validate(doc)
    assert code == 1
    assert [(r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"])
            for r in doc["runs"][0]["results"]] == [("SD108", "npu/x.txt"), ("SD150", "npu/only.sh")]


def test_sarif_git_names_are_repository_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = Report(gpu="gpu", npu="npu")
    r.findings = [Finding("SD108", "script", "warning", "k", Side("a", "gpu:conf/x.txt", 1, "a"),
                          Side("b", "npu-branch:conf/x.txt", 1, "b"), "m")]
    doc = json.loads(render(r, "sarif"))
    validate(doc)
    assert doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "conf/x.txt"


def test_empty_report_validates(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    doc = json.loads(render(Report(gpu="a", npu="b"), "sarif"))
    validate(doc)
    assert doc["runs"][0]["results"] == []


def test_schema_rejects_a_broken_document():
    with pytest.raises(jsonschema.ValidationError):
        validate({"version": "2.1.0", "runs": [{"tool": {"driver": {}}}]})
