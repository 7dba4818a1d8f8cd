"""The published Ascend version tables (rules/ascend_versions.yaml) and the NPU stack advisory
they give (checks/ascend_stack.py): the data is sorted, parses and cites dated sources, and
snapshots written with real version strings from the tables give exact findings."""
from __future__ import annotations

import json
import re

import pytest
from packaging.version import Version

from conftest import FIXTURES
from scriptdiff import api
from scriptdiff.ruleset.ascend_version import cann_key, parse_cann
from scriptdiff.project.checkrun import load_config, run_checks
from scriptdiff.checks.ascend_stack import stack_rows, tables
from scriptdiff.model import Options
from scriptdiff.run.pipeline import diff_files
from scriptdiff.ruleset.rules import load

DATA = load().section("ascend_versions")
NPU_EXAMPLE = FIXTURES / "example" / "env-npu.json"
COMPAT = "Ascend/pytorch COMPATIBILITY.md of 2026-08-10"


def snap(tmp_path, name="npu", cann=None, driver=None, dists=(), platform="npu"):
    versions = {}
    if cann:
        versions["cann"] = {"version": cann}
    if driver:
        versions["driver"] = {"version": driver}
    doc = {"scriptdiff_snapshot": 1, "platform": platform, "python": {"version": "3.10.14"}, "versions": versions,
           "distributions": [{"name": n, "version": v} for n, v in dists]}
    path = tmp_path / name / "snapshot.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    return str(path)


def advice(report):
    return [(f.rule, f.severity, f.key, f.message) for f in report.findings]


# --------------------------------------------------------------------------- the data

def test_every_table_is_dated_and_every_row_cites_one():
    for tid, t in DATA["tables"].items():
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", t["date"]), tid
        assert t["dated_by"] in ("commit", "read") and t["url"].startswith("https://"), tid
        if t["dated_by"] == "commit":
            assert re.fullmatch(r"[0-9a-f]{40}", t["commit"]) and t["commit"] in t["url"], tid
    cited = set()
    for name in ("torch_npu", "cann", "hdk", "mindspeed", "mindspeed_llm"):
        assert DATA[name], name
        for row in DATA[name]:
            assert row["source"] in DATA["tables"], (name, row)
            cited.add(row["source"])
    assert cited == set(DATA["tables"])  # no table is listed without a row that uses it


def test_every_version_parses_and_every_list_is_sorted():
    tn = [Version(r["torch_npu"]) for r in DATA["torch_npu"]]
    assert tn == sorted(tn) and len(set(tn)) == len(tn)
    for r in DATA["torch_npu"]:
        Version(r["torch"])
        assert parse_cann(r["cann"]) is not None, r
    cann = [cann_key(r["release"]) for r in DATA["cann"]]
    assert cann == sorted(cann) and (-1,) not in cann
    for r in DATA["cann"]:
        assert all(parse_cann(v) is not None for v in r["commercial"] + r["community"]), r
    hdk = [cann_key(r["cann"]) for r in DATA["hdk"]]
    assert hdk == sorted(hdk) and all(parse_cann(r["hdk"]) for r in DATA["hdk"])
    ms = [(Version(r["megatron_core"]), r["released"]) for r in DATA["mindspeed"]]
    assert ms == sorted(ms)
    llm = [Version(r["version"]) for r in DATA["mindspeed_llm"]]
    assert llm == sorted(llm)


def test_the_issue_rows_and_the_newest_releases():
    T = tables()
    assert (T.torch_npu_row("2.4.0.post2")["torch"], T.torch_npu_row("2.4.0.post2")["cann"]) == ("2.4.0", "8.0.0")
    assert T.torch_npu_row("2.4.0")["cann"] == "8.0.RC3"
    assert T.torch_npu_row("1.11.0rc2")["cann"] == "6.0.1"  # published as 1.11.0.rc2 (beta)
    assert T.newest_cann() == ("9.1.0", "pta-compat")
    assert T.newest_torch_npu()["torch_npu"] == "2.12.0"
    assert T.cann_release("8.0.0.beta1")[:2] == ("8.0.0", "community")
    assert T.cann_release("8.0.RC3.20")[:2] == ("8.0.0", "commercial")
    assert T.cann_release("8.0.RC3.alpha003")[:2] == ("8.0.RC3", "pre-release")
    assert T.cann_release("9.2.0")[:2] == (None, "unknown")
    assert T.core_lines()["0.8.0"] == ["2.0.0_core_r0.8.0", "2.1.0_core_r0.8.0"]


def test_cann_versions_order_and_releases():
    order = ["6.3.RC3", "6.3.RC3.1", "8.0.RC1", "8.0.RC3.alpha002", "8.0.RC3.beta1", "8.0.RC3", "8.0.RC3.20",
             "8.0.0.beta1", "8.0.0", "8.1.RC1", "9.0.0-beta.2", "9.0.0", "9.1.T1", "9.1.0", "24.1.rc2", "25.0.RC1"]
    assert sorted(reversed(order), key=cann_key) == order
    assert [parse_cann(v).release for v in ("8.0.RC3.beta1", "9.0.0-beta.2", "24.1.rc2", "9.1.T1")] == [
        "8.0.RC3", "9.0.0", "24.1.RC2", "9.1.T1"]
    assert [parse_cann(v).prerelease for v in ("8.0.RC3", "8.0.0.beta1", "9.1.T1")] == [False, True, True]
    assert [parse_cann(v) for v in ("", "8.0", "latest", "8.0.RC", None)] == [None] * 5


# --------------------------------------------------------------------------- findings

def test_community_cann_is_a_warning_naming_the_commercial_build(tmp_path):
    n = snap(tmp_path, cann="8.0.RC3.beta1", dists=[("torch", "2.1.0"), ("torch-npu", "2.1.0.post8")])
    report = api.env([], [n])
    assert advice(report) == [
        ("SD321", "info", "newest:cann",
         f"CANN 8.0.RC3.beta1 is older than CANN 9.1.0, the newest commercial release scriptdiff knows ({COMPAT})"),
        ("SD318", "warning", "release:cann",
         "CANN 8.0.RC3.beta1 is the community edition (社区版) of CANN 8.0.RC3, not a commercial release: install "
         "the commercial CANN 8.0.RC3 (Ascend Extension for PyTorch 6.0.0 release notes, read 2026-12-01)"),
        ("SD321", "info", "newest:torch-npu",
         "torch_npu 2.1.0.post8 is older than 2.1.0.post17, the newest commercial release for PyTorch 2.1.0 (CANN "
         f"8.3.RC1); the newest torch_npu known is 2.12.0 (PyTorch 2.12.0, CANN 9.1.0) ({COMPAT})"),
    ]  # no SD319: the community build of 8.0.RC3 is 8.0.RC3, which torch_npu 2.1.0.post8 belongs to
    f = report.findings[1]
    assert (f.gpu, f.npu.value, f.npu.line, f.extra) == (None, "CANN 8.0.RC3.beta1 (community)", 9,
                                                          {"advisory": "npu-stack"})
    assert report.exit_code() == 1


def test_torch_npu_for_another_cann_is_an_error(tmp_path):
    n = snap(tmp_path, cann="8.0.RC3", dists=[("torch", "2.4.0"), ("torch_npu", "2.4.0.post2")])
    report = api.env([], [n], Options(select=["SD319"]))
    assert advice(report) == [
        ("SD319", "error", "compat:torch-npu-cann",
         "torch_npu 2.4.0.post2 was released for CANN 8.0.0 (PyTorch 2.4.0), but this side has CANN 8.0.RC3; the "
         f"table's torch_npu for PyTorch 2.4.0 with CANN 8.0.RC3 is 2.4.0 ({COMPAT})"),
    ]
    assert report.exit_code() == 1
    ok = snap(tmp_path, "ok", cann="8.0.0", dists=[("torch", "2.4.0"), ("torch_npu", "2.4.0.post2")])
    assert advice(api.env([], [ok], Options(select=["SD319"]))) == []
    # a commercial build that the editions table maps onto another release
    also = snap(tmp_path, "also", cann="8.0.RC3.20", dists=[("torch", "2.4.0"), ("torch_npu", "2.4.0.post2")])
    assert advice(api.env([], [also], Options(select=["SD319"]))) == []


def test_driver_older_than_the_hdk_of_its_cann(tmp_path):
    n = snap(tmp_path, cann="8.2.RC1", driver="24.1.rc2")
    assert advice(api.env([], [n], Options(select=["SD320"]))) == [
        ("SD320", "warning", "compat:driver-cann",
         "Ascend driver 24.1.rc2 is older than Ascend HDK 25.2.0, the driver and firmware release installed with "
         "CANN 8.2.RC1 (ascend-deployer's CANN package list, read 2026-12-01)"),
    ]
    for driver in ("25.2.0", "25.3.RC1"):
        assert advice(api.env([], [snap(tmp_path, driver, cann="8.2.RC1", driver=driver)],
                              Options(select=["SD320"]))) == []
    # the table pairs no HDK with CANN 8.0.RC3: nothing to say
    assert advice(api.env([], [snap(tmp_path, "rc3", cann="8.0.RC3", driver="23.0.0")], Options(select=["SD32"]))) == [
        ("SD321", "info", "newest:cann",
         f"CANN 8.0.RC3 is older than CANN 9.1.0, the newest commercial release scriptdiff knows ({COMPAT})")]


@pytest.mark.parametrize("version,what,target", [
    ("2.5.1.dev20250218", "a development build", "2.5.1.post1 (PyTorch 2.5.1, CANN 8.2.RC1"),
    ("2.10.0rc2", "a pre-release (rc) build", "2.10.0.post4 (PyTorch 2.10.0, CANN 9.1.0"),
    ("2.1.0.rc1", "a pre-release (rc) build", "2.1.0.post17 (PyTorch 2.1.0, CANN 8.3.RC1"),
    ("2.13.0rc1", "a pre-release (rc) build", "2.12.0 (PyTorch 2.12.0, CANN 9.1.0"),
])
def test_torch_npu_rc_and_dev_builds(tmp_path, version, what, target):
    n = snap(tmp_path, cann="9.1.0", dists=[("torch_npu", version)])
    assert advice(api.env([], [n], Options(select=["SD318"]))) == [
        ("SD318", "warning", "release:torch-npu",
         f"torch_npu {version} is {what}, not a commercial release: install torch_npu {target}; {COMPAT})")]


@pytest.mark.parametrize("cann,instead", [("9.0.0-beta.2", "9.0.0"), ("9.2.0.alpha1", "9.1.0"),
                                          ("9.1.T1", "9.1.0")])
def test_cann_pre_releases(tmp_path, cann, instead):
    report = api.env([], [snap(tmp_path, cann=cann)], Options(select=["SD318"]))
    assert [(f.rule, f.key) for f in report.findings] == [("SD318", "release:cann")]
    assert f"install the commercial CANN {instead} (" in report.findings[0].message


def test_mindspeed_pairings(tmp_path):
    n = snap(tmp_path, dists=[("megatron-core", "0.12.1"), ("mindspeed", "0.8.0"), ("mindspeed_llm", "2.3.0")])
    mind = "Ascend/MindSpeed README.md of 2026-07-20"
    assert advice(api.env([], [n])) == [
        ("SD322", "error", "compat:mindspeed-megatron",
         "mindspeed 0.8.0 adapts Megatron core 0.8.0 (release branches 2.0.0_core_r0.8.0, 2.1.0_core_r0.8.0), but "
         f"this side has megatron-core 0.12.1 ({mind})"),
        ("SD323", "error", "compat:mindspeed-llm",
         "MindSpeed-LLM 2.3.0 needs MindSpeed 2.3.0_core_r0.12.1 (mindspeed 0.12.1, Megatron core 0.12.1), but this "
         "side has mindspeed 0.8.0 (Ascend/MindSpeed-LLM README.md of 2026-02-05)"),
    ]
    good = snap(tmp_path, "good", dists=[("megatron-core", "0.12.1"), ("mindspeed", "0.12.1"),
                                         ("mindspeed_llm", "26.0.0dev0")])
    assert advice(api.env([], [good])) == []
    # before 2.2.0 a MindSpeed-LLM source install reports 0.0.1; a mindspeed off the release lines is not checked
    unknown = snap(tmp_path, "unknown", dists=[("megatron-core", "0.12.1"), ("mindspeed", "1.1.0"),
                                               ("mindspeed_llm", "0.0.1")])
    assert advice(api.env([], [unknown])) == []


def test_newest_stack_is_silent(tmp_path):
    n = snap(tmp_path, cann="9.1.0", driver="26.0.RC1",
             dists=[("torch", "2.12.0"), ("torch-npu", "2.12.0"), ("megatron-core", "0.12.1"), ("mindspeed", "0.12.1")])
    report = api.env([], [n])
    assert (report.findings, report.errors, report.exit_code()) == ([], [], 0)
    assert report.details["npu_stack"] == [
        ("CANN", "9.1.0", "commercial", "9.1.0"),
        ("driver", "26.0.RC1", "commercial", "HDK 26.0.RC1 for CANN 9.0.0"),
        ("torch_npu", "2.12.0", "commercial", "2.12.0 for PyTorch 2.12.0"),
        ("torch", "2.12.0", "-", "2.12.0 (with torch_npu)"),
        ("mindspeed", "0.12.1", "release line", "0.12.1 (branch 26.1.0_core_r0.12.1)"),
        ("megatron-core", "0.12.1", "-", "-"),
    ]


def test_package_lists_alone_get_no_advisory(tmp_path):
    """The advisory belongs to the environment check: a side without a snapshot has none."""
    (tmp_path / "g").mkdir()
    (tmp_path / "n").mkdir()
    (tmp_path / "g" / "requirements.txt").write_text("torch==2.1.0\n")
    (tmp_path / "n" / "requirements.txt").write_text("torch==2.1.0\ntorch_npu==2.1.0rc1\n")
    report = diff_files([str(tmp_path / "g" / "requirements.txt")], [str(tmp_path / "n" / "requirements.txt")],
                        Options(use_cache=False))
    assert [f for f in report.findings if f.check == "environment"] == []
    # the same package list next to a snapshot on that side: the snapshot's stack includes it
    n = snap(tmp_path, cann="9.1.0")
    report = api.env([], [n, str(tmp_path / "n" / "requirements.txt")], Options(select=["SD318"]))
    assert [(f.rule, f.key, f.npu.path) for f in report.findings] == [
        ("SD318", "release:torch-npu", str(tmp_path / "n" / "requirements.txt"))]


def test_both_sides_npu_one_finding_each_key(tmp_path):
    a = snap(tmp_path, "gpu", cann="8.0.RC3.beta1")
    b = snap(tmp_path, "npu", cann="8.0.RC3.beta1")
    report = api.env([a], [b], Options(select=["SD318"]))
    assert [(f.rule, f.gpu.value, f.npu.value) for f in report.findings] == [
        ("SD318", "CANN 8.0.RC3.beta1 (community)", "CANN 8.0.RC3.beta1 (community)")]
    assert report.findings[0].message.endswith("(both sides)")


# --------------------------------------------------------------------------- the commands

def test_one_side_cli_on_the_bundled_snapshot(cli):
    code, out, err = cli("env", str(NPU_EXAMPLE), "--color", "never")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[1:10] == [
        f"NPU stack (newest known as of {COMPAT}):",
        "  component      version      kind          newest known",
        "  CANN           8.0.RC3      commercial    9.1.0",
        "  driver         24.1.rc2     commercial    HDK 26.0.RC1 for CANN 9.0.0",
        "  firmware       7.5.0.1.129  -             -",
        "  torch_npu      2.1.0.post8  commercial    2.1.0.post17 for PyTorch 2.1.0; 2.12.0 overall",
        "  torch          2.1.0        -             2.12.0 (with torch_npu)",
        "  mindspeed      0.8.0        release line  0.12.1 (branch 26.1.0_core_r0.12.1)",
        "  megatron-core  0.8.0        -             -",
    ]
    assert "0 error(s), 0 warning(s), 2 info; 0 expected substitution(s) masked" in out
    code, out, err = cli("env", str(NPU_EXAMPLE), "-f", "json")
    doc = json.loads(out)
    assert code == 0 and doc["gpu"] == "(none: one-side mode)"
    assert [(f["rule"], f["key"], f["npu"]["line"], f["gpu"]) for f in doc["findings"]] == [
        ("SD321", "newest:cann", 28, None), ("SD321", "newest:torch-npu", 106, None)]


def test_one_side_bad_inputs(cli, tmp_path):
    (tmp_path / "train.py").write_text("x = 1\n")
    code, _out, err = cli("env", str(tmp_path / "train.py"), "-f", "json")
    assert code == 2 and "not an environment snapshot or package list (a python file); not compared" in err
    code, _out, err = cli("env", str(tmp_path / "missing.json"))
    assert code == 2 and "missing.json" in err and "Traceback" not in err
    bad = tmp_path / "bad.json"
    bad.write_text('{"scriptdiff_snapshot": 1, "versions": [')
    code, _out, err = cli("env", str(bad), "-f", "json")
    assert code == 2 and "not a valid snapshot" in err


def test_check_shows_the_advisory_in_the_environment_verdict():
    report = run_checks(load_config(str(FIXTURES / "example" / "scriptdiff.toml")), Options(use_cache=False))
    assert report.verdicts["environment"] == (
        "pass", "no differences (10 info); NPU stack: SD321 CANN 8.0.RC3 (newest 9.1.0); "
                "SD321 torch_npu 2.1.0.post8 (newest 2.1.0.post17)")


def test_stack_rows_of_a_gpu_snapshot_are_empty(tmp_path):
    g = snap(tmp_path, platform="gpu", dists=[("torch", "2.1.0+cu121")])
    report = api.env([], [g])
    assert (report.findings, report.overview, report.details["npu_stack"]) == ([], [], [])
    assert stack_rows(report.tables[1]) == []
