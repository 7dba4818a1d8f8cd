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


# --- issue 30: the GPU side linked, whole-file results, URIs from the inputs' repository --------

def test_the_message_links_the_related_side_and_escapes_brackets(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()
    r = sample_report(tmp_path)
    r.findings.append(Finding("SD603", "weights", "error", "weights:b", Side({"shape": [2], "dtype": "F32"}, "g.st", None,
                                                                                "safetensors"),
                              Side({"shape": [3], "dtype": "F32"}, "n.st", None, "safetensors"),
                              "tensor b has shape [2] on GPU and [3] on NPU"))
    doc = json.loads(render(r, "sarif"))
    validate(doc)
    res = {x["ruleId"]: x for x in doc["runs"][0]["results"]}
    assert res["SD108"]["message"]["text"] == "lines differ ([GPU side](1): lr=1; NPU: lr=2)"
    assert [x["id"] for x in res["SD108"]["relatedLocations"]] == [1]
    assert res["SD150"]["message"]["text"] == "shell file on NPU only (GPU: (absent); NPU: prep.sh)"  # nothing to link
    assert res["SD152"]["message"]["text"] == "unused (GPU: # scriptdiff: ignore; NPU: (absent))"
    assert res["SD603"]["message"]["text"] == ("tensor b has shape \\[2\\] on GPU and \\[3\\] on NPU ([GPU side](1): "
                                               "shape \\[2\\] · dtype F32; NPU: shape \\[3\\] · dtype F32)")
    # a tensor of a checkpoint is about the whole file: a location without a region (file-level)
    assert res["SD603"]["locations"][0]["physicalLocation"] == {"artifactLocation": {"uri": "n.st",
                                                                                     "uriBaseId": "%SRCROOT%"}}


def test_curve_and_weight_results_are_file_level_and_relative_to_the_inputs_repository(tmp_path, monkeypatch, cli):
    """Absolute inputs inside a repository, the command run from outside any: the URIs are
    relative to that repository's root (%SRCROOT%), never absolute file URIs."""
    repo, elsewhere = tmp_path / "repo", tmp_path / "elsewhere"
    (repo / ".git").mkdir(parents=True)
    elsewhere.mkdir()
    for side, f in (("g", 1.0), ("n", 1.08)):
        (repo / side).mkdir()
        (repo / side / "metrics.csv").write_text(
            "step,loss\n" + "".join(f"{i},{(3.0 - i * 0.01) * (f if i < 5 else 1.0):.5f}\n" for i in range(1, 101)))
    ex = Path(__file__).resolve().parent.parent / "fixtures" / "example"
    (repo / "g.safetensors").write_bytes((ex / "init-gpu.safetensors").read_bytes())
    data = (ex / "init-npu.safetensors").read_bytes()
    (repo / "n.safetensors").write_bytes(data[:-4] + b"\x00\x00\x80\x3f")  # the last element changed
    monkeypatch.chdir(elsewhere)
    for argv, rule, npu_uri, gpu_uri in (
            (["curves", str(repo / "g"), str(repo / "n")], "SD701", "n/metrics.csv", "g/metrics.csv"),
            (["weights", str(repo / "g.safetensors"), str(repo / "n.safetensors")], "SD605", "n.safetensors",
             "g.safetensors")):
        code, out, err = cli(*argv, "-f", "sarif")
        doc = json.loads(out)
        validate(doc)
        run = doc["runs"][0]
        assert code == 1 and [x["ruleId"] for x in run["results"]] == [rule], err
        res = run["results"][0]
        finding = json.loads(cli(*argv, "-f", "json")[1])["findings"][0]
        for loc, side, uri in ((res["locations"][0], finding["npu"], npu_uri),
                               (res["relatedLocations"][0], finding["gpu"], gpu_uri)):
            phys = loc["physicalLocation"]
            assert phys["artifactLocation"] == {"uri": uri, "uriBaseId": "%SRCROOT%"}
            # a region where the finding has a line, else file-level: no region, the whole artifact
            assert phys.get("region", {}).get("startLine") == side["line"]
        if rule == "SD605":  # a tensor of a checkpoint has no line
            assert "region" not in res["locations"][0]["physicalLocation"]
        assert "[GPU side](1): " in res["message"]["text"] and res["relatedLocations"][0]["id"] == 1
        assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == repo.as_uri() + "/"
