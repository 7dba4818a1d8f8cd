"""`scriptdiff env` on snapshots collected from fake install trees: exact findings, both ways."""
from __future__ import annotations

import importlib.util
import json

import pytest

from conftest import FIXTURES
from scriptdiff.checks import environment
from scriptdiff.project.collect import collect, dumps
from scriptdiff.model import Options, SideContext
from scriptdiff.run.pipeline import diff_files
from scriptdiff.inputs.sources import Source

_spec = importlib.util.spec_from_file_location("env_layout", FIXTURES / "env" / "layout.py")
layout = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(layout)

GPU_ENV = {"CUDA_VISIBLE_DEVICES": "0,1", "OMP_NUM_THREADS": "8"}
NPU_ENV = {"ASCEND_HOME_PATH": "/usr/local/Ascend/ascend-toolkit/latest", "ASCEND_RT_VISIBLE_DEVICES": "0,1",
           "OMP_NUM_THREADS": "8"}


def snapshot(tmp_path, name, machine, env, **kw):
    tree = tmp_path / f"tree-{name}"
    machine(tree, **kw)
    path = tmp_path / name / "snapshot.json"
    path.parent.mkdir(parents=True)
    path.write_text(dumps(collect(root=str(tree), environ=env)), encoding="utf-8")
    return path


def rows(report):
    def val(s):
        return None if s is None else s.value

    return sorted((f.rule, f.severity, f.key, val(f.gpu), val(f.npu)) for f in report.findings)


def masked(report):
    return sorted(((m.rule, m.gpu.source if m.gpu else None, m.npu.source if m.npu else None) for m in report.masked),
                  key=lambda t: tuple(x or "" for x in t))


def test_faithful_port_has_no_warning_or_error(tmp_path):
    g = snapshot(tmp_path, "gpu", layout.gpu_machine, GPU_ENV)
    n = snapshot(tmp_path, "npu", layout.npu_machine, NPU_ENV)
    report = diff_files([str(g)], [str(n)], Options(checks={"environment", "libraries"}))
    assert report.errors == []
    assert rows(report) == [
        # the NPU-only CANN path variable is shown, as info (checks.envvars)
        ("SD302", "info", "env:ASCEND_HOME_PATH", None, "/usr/local/Ascend/ascend-toolkit/latest"),
        ("SD310", "info", "version:accelerator_driver", "NVIDIA 535.104.05", "Ascend 24.1.rc2 (firmware 7.5.0.1.129)"),
        ("SD310", "info", "version:accelerator_toolkit", "CUDA 12.1.1", "CANN 8.0.RC3"),
        ("SD310", "info", "version:torch_backend", "torch 2.1.0+cu121 (CUDA build cu121)", "torch_npu 2.1.0.post8"),
        ("SD316", "info", "version:arch", "x86_64", "aarch64"),
        ("SD316", "info", "version:os", "Ubuntu 22.04.3 LTS", "openEuler 22.03 (LTS-SP1)"),
        # the NPU stack against the Ascend tables (checks.ascend_stack): newer releases are known
        ("SD321", "info", "newest:cann", None, "CANN 8.0.RC3 (newest 9.1.0)"),
        ("SD321", "info", "newest:torch-npu", None, "torch_npu 2.1.0.post8 (newest 2.1.0.post17)"),
    ]
    # the snapshot's own line of a variable is quoted, not NAME=value rebuilt from the value
    assert masked(report) == sorted([
        ("SD010", '"CUDA_VISIBLE_DEVICES": "0,1",', '"ASCEND_RT_VISIBLE_DEVICES": "0,1",'),
        ("SD420", "flash-attn==2.5.6", "torch-npu==2.1.0.post8"),
        ("SD421", "megatron-core==0.8.0", "mindspeed==0.8.0"),
        ("SD423", "torch==2.1.0+cu121", "torch-npu==2.1.0.post8"),
        ("SD424", "nvidia-cudnn-cu12==8.9.2.26", None),
        ("SD424", "nvidia-nccl-cu12==2.18.1", None),
        ("SD424", "triton==2.1.0", None),
        ("SD424", None, "hccl==0.1.0"),
        ("SD424", None, "te==0.4.0"),
        ("SD425", "apex==0.1", "apex==0.1+ascend"),
        ("SD426", "torch==2.1.0+cu121", "torch==2.1.0"),
    ], key=lambda t: tuple(x or "" for x in t))
    assert report.exit_code() == 0
    # both sides' file and line are reported: the toolkit pair points at each snapshot's version line
    f = next(f for f in report.findings if f.key == "version:accelerator_toolkit")
    glines = (g.read_text().splitlines())
    nlines = (n.read_text().splitlines())
    assert glines[f.gpu.line - 2:f.gpu.line] == ['    "cuda": {', '      "version": "12.1.1",'] and f.gpu.path == str(g)
    assert nlines[f.npu.line - 2:f.npu.line] == ['    "cann": {', '      "version": "8.0.RC3",'] and f.npu.path == str(n)
    assert (f.gpu.source, f.npu.source) == ('"version": "12.1.1",', '"version": "8.0.RC3",')


def test_drifted_port_exact_findings(tmp_path):
    gd = [d for d in layout.GPU_DISTS if d[0] != "flash-attn"] + [("flash-attn", "2.5.6"), ("peft", "0.10.0")]
    nd = [("torch", "2.2.0"), ("torch-npu", "2.1.0.post8"), ("megatron-core", "0.9.0"), ("deepspeed", "0.14.4"),
          ("deepspeed-npu", "0.1"), ("transformers", "4.40.2"), ("apex", "0.1+ascend"), ("numpy", "1.26.4"),
          ("tqdm", "4.66.4")]
    g = snapshot(tmp_path, "gpu", layout.gpu_machine, GPU_ENV, dists=gd)
    n = snapshot(tmp_path, "npu", layout.npu_machine, NPU_ENV, dists=nd)
    report = diff_files([str(g)], [str(n)], Options(checks={"environment", "libraries"}))
    got = [r for r in rows(report) if r[0] not in ("SD310", "SD316")]
    assert sorted(got) == sorted([
        ("SD302", "info", "env:ASCEND_HOME_PATH", None, "/usr/local/Ascend/ascend-toolkit/latest"),
        ("SD401", "error", "pkg:megatron-core", "0.8.0", "0.9.0"),
        ("SD401", "error", "pkg:torch", "2.1.0+cu121", "2.2.0"),
        ("SD402", "warning", "pkg:deepspeed", "0.14.0", "0.14.4"),
        ("SD403", "info", "pkg:tqdm", "4.66.1", "4.66.4"),
        ("SD404", "error", "pkg:peft", "0.10.0", None),
        ("SD410", "error", "compat:torch-npu", None, "torch_npu 2.1.0.post8 with torch 2.2.0"),
        ("SD321", "info", "newest:cann", None, "CANN 8.0.RC3 (newest 9.1.0)"),
        ("SD321", "info", "newest:torch-npu", None, "torch_npu 2.1.0.post8 (newest 2.1.0.post17)"),
    ])
    # deepspeed-npu next to deepspeed is the older stacks' plugin: masked, not reported
    assert ("SD422", "deepspeed==0.14.0", "deepspeed-npu==0.1") in masked(report)
    assert report.exit_code() == 1


def test_npu_vs_npu_compares_cann_driver_firmware(tmp_path):
    a = snapshot(tmp_path, "gpu", layout.npu_machine, NPU_ENV)
    b = snapshot(tmp_path, "npu", layout.npu_machine, NPU_ENV, cann="8.0.RC2", driver="24.1.rc1", firmware=None)
    report = diff_files([str(a)], [str(b)], Options(checks={"environment", "libraries"}))
    assert rows(report) == [
        ("SD311", "error", "version:cann", "8.0.RC3", "8.0.RC2"),
        ("SD311", "error", "version:cann_kernels", "8.0.RC3", "8.0.RC2"),
        ("SD311", "error", "version:nnal", "8.0.RC3", "8.0.RC2"),
        ("SD313", "warning", "version:driver", "24.1.rc2", "24.1.rc1"),
        ("SD317", "warning", "version:firmware", "7.5.0.1.129", None),
        # the Ascend tables: torch_npu 2.1.0.post8 is CANN 8.0.RC3's, so it is wrong on the side with 8.0.RC2
        ("SD319", "error", "compat:torch-npu-cann", None, "torch_npu 2.1.0.post8 with CANN 8.0.RC2"),
        ("SD321", "info", "newest:cann", "CANN 8.0.RC3 (newest 9.1.0)", "CANN 8.0.RC2 (newest 9.1.0)"),
        ("SD321", "info", "newest:torch-npu", "torch_npu 2.1.0.post8 (newest 2.1.0.post17)",
         "torch_npu 2.1.0.post8 (newest 2.1.0.post17)"),
    ]
    by_key = {f.key: f.message for f in report.findings}
    assert by_key["compat:torch-npu-cann"] == (
        "torch_npu 2.1.0.post8 was released for CANN 8.0.RC3 (PyTorch 2.1.0), but this side has CANN 8.0.RC2; the "
        "table's torch_npu for PyTorch 2.1.0 with CANN 8.0.RC2 is 2.1.0.post6 (Ascend/pytorch COMPATIBILITY.md of "
        "2026-08-10)")
    assert by_key["newest:torch-npu"].endswith("(both sides)")
    assert by_key["newest:cann"] == (
        "CANN 8.0.RC2 is older than CANN 9.1.0, the newest commercial release scriptdiff knows (Ascend/pytorch "
        "COMPATIBILITY.md of 2026-08-10); GPU side: CANN 8.0.RC3 is older than CANN 9.1.0, the newest commercial "
        "release scriptdiff knows (Ascend/pytorch COMPATIBILITY.md of 2026-08-10)")


def test_gpu_vs_gpu_patch_levels(tmp_path):
    a = snapshot(tmp_path, "gpu", layout.gpu_machine, GPU_ENV)
    tree = tmp_path / "tree-b"
    layout.nvidia_tree(tree, driver="550.54.14", cuda="12.1.0", cudnn=(8, 9, 7))
    for name, ver in layout.GPU_DISTS:
        layout.dist(tree, name, ver if name != "nvidia-nccl-cu12" else "2.19.3")
    b = tmp_path / "npu" / "snapshot.json"
    b.parent.mkdir()
    b.write_text(dumps(collect(root=str(tree), environ=GPU_ENV)))
    report = diff_files([str(a)], [str(b)], Options(checks={"environment", "libraries"}))
    assert rows(report) == [
        ("SD312", "warning", "version:cuda", "12.1.1", "12.1.0"),
        ("SD312", "warning", "version:cudnn", "8.9.2", "8.9.7"),
        ("SD313", "warning", "version:nvidia_driver", "535.104.05", "550.54.14"),
        ("SD314", "warning", "version:nccl", "2.18.1", "2.19.3"),
        ("SD403", "info", "pkg:nvidia-nccl-cu12", "2.18.1", "2.19.3"),
    ]


def test_strict_local_cli(tmp_path, cli):
    g = snapshot(tmp_path, "gpu", layout.gpu_machine, GPU_ENV)
    n = snapshot(tmp_path, "npu", layout.npu_machine, NPU_ENV)
    code, out, _ = cli("env", str(g), str(n), "--strict-local", "-f", "json")
    doc = json.loads(out)
    assert code == 1
    got = [(f["rule"], f["key"], f["gpu"]["value"], f["npu"]["value"]) for f in doc["findings"]
           if f["severity"] != "info"]
    assert got == [("SD406", "pkg:torch", "2.1.0+cu121", "2.1.0")]
    # Ascend apex's +ascend stays an expected substitution even when strict
    assert any(m["rule"] == "SD425" for m in doc["masked"])
    code, out, _ = cli("env", str(g), str(n), "-f", "json")
    assert code == 0


def test_snapshot_env_var_facts(tmp_path):
    """Variables become env:<GPU name> facts; an NPU name mapped onto its GPU name carries the SD010 mask."""
    n = snapshot(tmp_path, "npu", layout.npu_machine, {**NPU_ENV, "HCCL_DETERMINISTIC": "true",
                                                       "TASK_QUEUE_ENABLE": "2"})
    src = Source(name="npu/snapshot.json", data=n.read_bytes())
    ex = environment.extract(src, SideContext("npu"))
    env = {f.key: (f.value, f.meta, f.line is not None) for f in ex.facts if f.key.startswith("env:")}
    assert env == {
        "env:ASCEND_HOME_PATH": ("/usr/local/Ascend/ascend-toolkit/latest",
                                 {"name": "ASCEND_HOME_PATH", "role": "npu_tuning"}, True),
        "env:CUDA_VISIBLE_DEVICES": ("0,1", {"name": "ASCEND_RT_VISIBLE_DEVICES", "role": "paired", "mask": "SD010"},
                                     True),
        "env:NCCL_DETERMINISTIC": ("true", {"name": "HCCL_DETERMINISTIC", "role": "paired", "mask": "SD010"}, True),
        "env:OMP_NUM_THREADS": ("8", {"name": "OMP_NUM_THREADS", "role": "plain"}, True),
        "env:TASK_QUEUE_ENABLE": ("2", {"name": "TASK_QUEUE_ENABLE", "role": "npu_tuning"}, True),
    }
    assert all(f.check == "environment" for f in ex.facts if f.key.startswith(("env:", "version:")))


def test_snapshot_with_requirements_on_the_same_side(tmp_path):
    """A snapshot (what is installed) outranks a requirements file (what was asked) on one side."""
    g = snapshot(tmp_path, "gpu", layout.gpu_machine, GPU_ENV)
    req = tmp_path / "gpu" / "requirements.txt"
    req.write_text("transformers==4.38.0\n")
    n = snapshot(tmp_path, "npu", layout.npu_machine, NPU_ENV)
    report = diff_files([str(g), str(req)], [str(n)], Options(checks={"libraries"}))
    assert [r for r in rows(report)] == []


@pytest.mark.parametrize("text,message,fatal", [
    ('{"scriptdiff_snapshot": 1, "versions": ', "not a valid snapshot: not valid JSON", True),
    ('{"scriptdiff_snapshot": "one"}', "snapshot schema must be an integer", True),
    ('{"scriptdiff_snapshot": 9, "python": {"version": "3.10.1"}}', "snapshot schema 9 is newer", False),
])
def test_bad_snapshots_one_line_errors(tmp_path, cli, text, message, fatal):
    g = snapshot(tmp_path, "gpu", layout.gpu_machine, GPU_ENV)
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    report = diff_files([str(g)], [str(bad)], Options())
    assert [e.path for e in report.errors] == [str(bad)]
    assert report.errors[0].message.startswith(message)
    assert "\n" not in report.errors[0].message and report.errors[0].fatal is fatal
    code, out, err = cli("env", str(g), str(bad))
    assert "Traceback" not in err and message in err


def test_missing_input_exit_2(tmp_path, cli):
    code, out, err = cli("env", str(tmp_path / "no.json"), str(tmp_path / "nope.json"))
    assert code == 2 and "no such file" in err


def test_bundled_example_pair(fixtures, cli):
    """fixtures/env/{gpu,npu}/snapshot.json (the README's example): a port with two real drifts."""
    g, n = fixtures / "env/gpu/snapshot.json", fixtures / "env/npu/snapshot.json"
    code, out, err = cli("env", str(g), str(n), "-f", "json")
    doc = json.loads(out)
    assert code == 1 and doc["errors"] == []
    got = [(f["rule"], f["key"], f["gpu"] and f["gpu"]["value"], f["npu"] and f["npu"]["value"],
            f["gpu"] and f["gpu"]["line"], f["npu"] and f["npu"]["line"]) for f in doc["findings"]
           if f["severity"] != "info"]
    assert got == [("SD404", "pkg:peft", "0.10.0", None, 104, None),
                   ("SD401", "pkg:transformers", "4.40.2", "4.41.2", 107, 108)]
    lines = g.read_text().splitlines()
    assert '"name": "peft"' in lines[103] and '"name": "transformers"' in lines[106]
    pair = next(f for f in doc["findings"] if f["key"] == "version:accelerator_toolkit")
    assert (pair["severity"], pair["gpu"]["value"], pair["npu"]["value"]) == ("info", "CUDA 12.1.1", "CANN 8.0.RC3")
    assert pair["gpu"]["source"] == '"version": "12.1.1",'  # the snapshot's own line, quoted


def test_requirements_against_snapshot_is_asymmetric(tmp_path):
    """Named in the GPU requirements but not installed on NPU: a difference. Installed on NPU
    (as a dependency, say) but not named by the GPU requirements: info only (SD411)."""
    req = tmp_path / "gpu" / "requirements.txt"
    req.parent.mkdir()
    req.write_text("torch==2.1.0\ntransformers==4.40.2\npeft==0.10.0\n")
    n = snapshot(tmp_path, "npu", layout.npu_machine, NPU_ENV)
    report = diff_files([str(req)], [str(n)], Options(checks={"libraries"}))
    assert rows(report) == [
        ("SD404", "error", "pkg:peft", "0.10.0", None),
        ("SD411", "info", "pkg:apex", None, "0.1+ascend"),
        ("SD411", "info", "pkg:deepspeed", None, "0.14.0"),
        ("SD411", "info", "pkg:megatron-core", None, "0.8.0"),
        ("SD411", "info", "pkg:mindspeed", None, "0.8.0"),
        ("SD411", "info", "pkg:numpy", None, "1.26.4"),
        ("SD411", "info", "pkg:tqdm", None, "4.66.1"),
    ]


def test_no_package_list_on_the_other_side(tmp_path):
    """A snapshot without distributions against a package list: packages are not compared."""
    g = tmp_path / "gpu" / "snapshot.json"
    g.parent.mkdir()
    g.write_text('{"scriptdiff_snapshot": 1, "platform": "gpu", "versions": {"cuda": {"version": "12.1.1"}}}')
    req = tmp_path / "npu" / "requirements.txt"
    req.parent.mkdir()
    req.write_text("torch==2.1.0\nnumpy==1.26.4\n")
    report = diff_files([str(g)], [str(req)], Options(checks={"libraries", "environment"}))
    assert rows(report) == []


def test_cli_several_files_per_side(tmp_path, cli):
    g = snapshot(tmp_path, "gpu", layout.gpu_machine, GPU_ENV)
    req = tmp_path / "gpu" / "requirements.txt"
    req.write_text("peft==0.10.0\n")
    n = snapshot(tmp_path, "npu", layout.npu_machine, NPU_ENV)
    code, out, err = cli("env", f"{g},{req}", str(n), "-f", "json")
    doc = json.loads(out)
    assert code == 1 and doc["errors"] == []
    assert [(f["rule"], f["key"], f["gpu"]["path"], f["gpu"]["line"]) for f in doc["findings"]
            if f["severity"] == "error"] == [("SD404", "pkg:peft", str(req), 1)]
