"""Package lists: parsing (requirements, pip freeze, pip list, pip JSON, conda), PEP 503/440
comparison, and every GPU<->NPU counterpart rule, with exact findings."""
from __future__ import annotations

import pytest

from scriptdiff.checks.libraries import (looks_like_requirements, normalize_name, parse_conda, parse_pip_json,
                                         parse_requirements, version_level)
from scriptdiff.model import Options
from scriptdiff.run.pipeline import diff_files
from scriptdiff.ruleset.registry import detect_kind
from scriptdiff.inputs.sources import Source


def write(tmp_path, side, name, text):
    p = tmp_path / side / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return str(p)


def run(tmp_path, gpu, npu, name="requirements.txt", npu_name=None, **opts):
    g = write(tmp_path, "gpu", name, gpu)
    n = write(tmp_path, "npu", npu_name or name, npu)
    return diff_files([g], [n], Options(checks={"libraries", "environment"}, **opts))


def findings(report):
    def side(s):
        return None if s is None else (s.value, s.line)

    return [(f.rule, f.key, side(f.gpu), side(f.npu)) for f in report.findings]


def masks(report):
    return sorted(((m.rule, m.gpu.line if m.gpu else None, m.npu.line if m.npu else None) for m in report.masked),
                  key=lambda t: (t[0], t[1] or 0, t[2] or 0))


@pytest.mark.parametrize("raw,norm", [("Megatron_Core", "megatron-core"), ("torch_npu", "torch-npu"),
                                      ("flash.attn", "flash-attn"), ("PyYAML", "pyyaml"), ("a--_.b", "a-b")])
def test_pep503_names(raw, norm):
    assert normalize_name(raw) == norm


@pytest.mark.parametrize("a,b,level", [
    ("2.1.0", "2.1", "equal"), ("2.1.0+cu121", "2.1.0", "local"), ("2.1.0+cu121", "2.1.0+cpu", "local"),
    ("2.1.0", "2.2.0", "minor"), ("1.26.4", "2.0.0", "major"), ("0.14.0", "0.14.4", "patch"),
    ("2.1.0.post6", "2.1.0.post8", "patch"), ("4.40.0rc1", "4.40.0", "patch"), ("1.0.0", "1.0.0.dev1", "patch"),
    ("24.1.rc2", "24.1.RC2", "equal"), ("weird-1", "weird-2", "unparsed"), ("weird-1", "WEIRD-1", "equal"),
])
def test_version_levels(a, b, level):
    assert version_level(a, b) == level
    assert version_level(b, a) == level


def test_cann_rc_is_a_release():
    assert version_level("8.0.RC2", "8.0.RC3", rc_is_release=True) == "minor"
    assert version_level("8.0.RC2", "8.0.RC3") == "patch"


def test_conda_fuzzy_version_matches_its_prefix():
    assert version_level("1.26", "1.26.4", fuzzy_a=True) == "equal"
    assert version_level("1.26", "1.27.0", fuzzy_a=True) == "minor"


def test_parse_pip_freeze_forms():
    text = ("# a comment\n"
            "torch==2.1.0+cu121  # inline comment\n"
            "numpy >= 1.24, <2 ; python_version >= '3.9'\n"
            "megatron-core @ git+https://user:tok@github.com/NVIDIA/Megatron-LM@0123456789abcdef0123456789abcdef01234567\n"
            "-e git+https://github.com/Ascend/MindSpeed.git@abcdef1234567#egg=mindspeed\n"
            "# Editable install with no version control (my_pkg==0.3.0)\n"
            "-e /home/me/my_pkg\n"
            "--index-url https://example.org/simple\n"
            "transformers==\\\n"
            "    4.40.2\n"
            "not a requirement !!\n")
    entries, problems, strict = parse_requirements(text)
    got = [(e.name, e.line, e.version, e.spec, e.url, e.commit, e.editable) for e in entries]
    assert got == [
        ("torch", 2, "2.1.0+cu121", "==2.1.0+cu121", None, None, False),
        ("numpy", 3, None, "<2,>=1.24", None, None, False),
        ("megatron-core", 4, None, "", "git+https://github.com/NVIDIA/Megatron-LM@0123456789abcdef0123456789abcdef01234567",
         "0123456789abcdef0123456789abcdef01234567", False),
        ("mindspeed", 5, None, "", "git+https://github.com/Ascend/MindSpeed.git@abcdef1234567", "abcdef1234567", True),
        ("my_pkg", 6, "0.3.0", "==0.3.0", "file:///home/me/my_pkg", None, True),
        ("transformers", 9, "4.40.2", "==4.40.2", None, None, False),
    ]
    assert problems and problems[0].startswith("line 11: not a requirement")
    assert strict is False
    assert "tok@" not in repr(entries)


def test_parse_pip_list_columns():
    text = "Package    Version     Editable project location\n---------- ----------- ---------\ntorch      2.1.0\nmine       0.1  /src/mine\n"
    entries, problems, _ = parse_requirements(text)
    assert [(e.name, e.version, e.line, e.editable) for e in entries] == [("torch", "2.1.0", 3, False),
                                                                        ("mine", "0.1", 4, True)]
    assert problems == []


def test_parse_pip_json_with_lines():
    text = '[\n  {"name": "torch", "version": "2.1.0"},\n  {"name": "mine", "version": "0.1", "editable_project_location": "/src/mine"},\n  {"oops": 1}\n]'
    entries, problems = parse_pip_json(text)
    assert [(e.name, e.version, e.line, e.editable) for e in entries] == [("torch", "2.1.0", 2, False),
                                                                        ("mine", "0.1", 3, True)]
    assert problems == ["item 3: not a {name, version} object; skipped"]


def test_parse_conda_environment():
    text = ("name: train\nchannels: [pytorch, nvidia, conda-forge]\ndependencies:\n"
            "  - python=3.10\n  - pytorch::pytorch=2.1.0=py3.10_cuda12.1_cudnn8.9.2_0\n  - pytorch-cuda=12.1\n"
            "  - numpy==1.26.4\n  - pip\n  - pip:\n      - transformers==4.40.2\n      - flash-attn==2.5.6\n")
    entries, problems, python, pyline = parse_conda(text)
    assert [(e.name, e.version, e.line, e.installer, e.fuzzy) for e in entries] == [
        ("torch", "2.1.0", 5, "conda", True), ("numpy", "1.26.4", 7, "conda", False),
        ("transformers", "4.40.2", 10, "pip", False), ("flash-attn", "2.5.6", 11, "pip", False)]
    assert (python, pyline) == ("3.10", 4) and problems == []


def test_conda_against_pip_freeze(tmp_path):
    conda = ("name: train\nchannels: [conda-forge]\ndependencies:\n  - python=3.10\n  - pytorch=2.1\n"
             "  - pip:\n      - transformers==4.40.2\n")
    report = run(tmp_path, conda, "torch==2.1.0\ntransformers==4.41.1\n", name="environment.yml",
                 npu_name="pip-freeze.txt")
    assert findings(report) == [("SD401", "pkg:transformers", ("4.40.2", 7), ("4.41.1", 2))]


def test_detect_kinds(tmp_path):
    freeze = "torch==2.1.0\nnumpy==1.26.4\n"
    assert detect_kind(Source("npu/packages.txt", freeze.encode())) == "requirements"
    assert detect_kind(Source("npu/notes.txt", b"torch 2.1 is what we used\n")) == "text"
    assert detect_kind(Source("env/environment.yml", b"name: x\nchannels: [defaults]\ndependencies:\n  - numpy=1.26\n")) == "conda"
    assert detect_kind(Source("pip.json", b'[{"name": "torch", "version": "2.1.0"}]')) == "pipjson"
    assert looks_like_requirements("Package Version\n------- -------\ntorch 2.1.0\n")


def test_faithful_requirements_port_is_silent(tmp_path):
    gpu = ("torch==2.1.0+cu121\nflash-attn==2.5.6\nmegatron-core==0.8.0\ndeepspeed==0.14.0\n"
           "transformers==4.40.2\napex==0.1\nnvidia-nccl-cu12==2.18.1\n")
    npu = ("torch==2.1.0\ntorch_npu==2.1.0.post8\nMegatron_Core==0.8.0\nmindspeed==0.8.0\ndeepspeed==0.14\n"
           "deepspeed-npu==0.1\ntransformers==4.40.2\napex==0.1+ascend\nte==0.4.0\n")
    report = run(tmp_path, gpu, npu)
    assert findings(report) == []
    assert masks(report) == [("SD420", 2, 2), ("SD421", 3, 4), ("SD422", 4, 6), ("SD423", 1, 2), ("SD424", None, 9),
                             ("SD424", 7, None), ("SD425", 6, 8), ("SD426", 1, 1)]
    assert report.exit_code() == 0


def test_flash_attn_without_torch_npu(tmp_path):
    report = run(tmp_path, "torch==2.1.0\nflash-attn==2.5.6\n", "torch==2.1.0\n")
    assert findings(report) == [("SD409", "pkg:flash-attn", ("2.5.6", 2), None)]


def test_flash_attn_on_both_sides_is_compared(tmp_path):
    report = run(tmp_path, "flash-attn==2.5.6\n", "flash-attn==2.6.3\ntorch-npu==2.1.0\n")
    assert findings(report) == [("SD403", "pkg:flash-attn", ("2.5.6", 1), ("2.6.3", 1))]


def test_megatron_core_compared_next_to_mindspeed(tmp_path):
    report = run(tmp_path, "megatron-core==0.8.0\n", "megatron-core==0.7.0\nmindspeed==0.7.0\n")
    assert findings(report) == [("SD401", "pkg:megatron-core", ("0.8.0", 1), ("0.7.0", 1))]
    assert masks(report) == [("SD421", 1, 2)]


def test_mindspeed_without_megatron_on_gpu_is_reported(tmp_path):
    report = run(tmp_path, "torch==2.1.0\n", "torch==2.1.0\nmindspeed==0.8.0\n")
    assert findings(report) == [("SD404", "pkg:mindspeed", None, ("0.8.0", 2))]


def test_megatron_lm_distribution_counts_as_megatron(tmp_path):
    report = run(tmp_path, "megatron-lm==0.8.0\n", "mindspeed==0.8.0\n")
    assert ("SD421", 1, 1) in masks(report)
    assert findings(report) == [("SD405", "pkg:megatron-lm", ("0.8.0", 1), None)]


def test_deepspeed_npu_plugin(tmp_path):
    report = run(tmp_path, "deepspeed==0.9.2\n", "deepspeed==0.10.0\ndeepspeed_npu==0.1\n")
    assert findings(report) == [("SD401", "pkg:deepspeed", ("0.9.2", 1), ("0.10.0", 1))]
    assert masks(report) == [("SD422", 1, 2)]


def test_torch_npu_must_match_torch_release(tmp_path):
    report = run(tmp_path, "torch==2.1.0\n", "torch==2.1.0\ntorch-npu==2.2.0rc1\n")
    assert [(f.rule, f.key, f.npu.value, f.npu.line, f.severity) for f in report.findings] == [
        ("SD410", "compat:torch-npu", "torch_npu 2.2.0rc1 with torch 2.1.0", None, "error")]
    assert report.findings[0].npu.path.endswith("npu/requirements.txt")
    assert "belongs to torch 2.2.0" in report.findings[0].message


def test_torch_npu_post_release_with_its_torch_is_fine(tmp_path):
    report = run(tmp_path, "torch==2.1.0\n", "torch==2.1.0+cpu\ntorch-npu==2.1.0.post8\n")
    assert findings(report) == []


def test_ascend_apex(tmp_path):
    report = run(tmp_path, "apex==0.1\n", "apex==0.1+ascend.20240101\n", strict_local=True)
    assert findings(report) == [] and masks(report) == [("SD425", 1, 1)]


def test_local_tag_ignored_unless_strict(tmp_path):
    assert findings(run(tmp_path / "a", "torch==2.1.0+cu121\n", "torch==2.1.0+cpu\n")) == []
    report = run(tmp_path / "b", "torch==2.1.0+cu121\n", "torch==2.1.0+cpu\n", strict_local=True)
    assert findings(report) == [("SD406", "pkg:torch", ("2.1.0+cu121", 1), ("2.1.0+cpu", 1))]


def test_one_side_only_follows_importance(tmp_path):
    report = run(tmp_path, "numpy==1.26.4\nwandb==0.16.0\n", "\n")
    assert findings(report) == [("SD404", "pkg:numpy", ("1.26.4", 1), None),
                                ("SD405", "pkg:wandb", ("0.16.0", 2), None)]
    assert [f.severity for f in report.findings] == ["error", "info"]


def test_unpinned_and_sources(tmp_path):
    gpu = "transformers>=4.40\npeft\nmegatron-core @ git+https://github.com/NVIDIA/Megatron-LM@1111111\n"
    npu = "transformers==4.40.2\npeft\nmegatron-core @ git+https://github.com/NVIDIA/Megatron-LM@2222222\n"
    report = run(tmp_path, gpu, npu)
    assert findings(report) == [
        ("SD407", "pkg:transformers", (">=4.40", 1), ("4.40.2", 1)),
        ("SD408", "pkg:megatron-core", ("git+https://github.com/NVIDIA/Megatron-LM@1111111", 3),
         ("git+https://github.com/NVIDIA/Megatron-LM@2222222", 3)),
    ]


def test_bad_lines_are_reported_and_the_rest_compared(tmp_path):
    report = run(tmp_path, "torch==2.1.0\n???\n", "torch==2.2.0\n")
    assert findings(report) == [("SD401", "pkg:torch", ("2.1.0", 1), ("2.2.0", 1))]
    assert len(report.errors) == 1 and report.errors[0].message.startswith("line 2: not a requirement")
    assert not report.errors[0].fatal


def test_unreadable_pip_json_is_one_line_error(tmp_path):
    report = run(tmp_path, '[{"name": "torch", "version": "2.1.0"}', '[{"name": "torch", "version": "2.1.0"}]',
                 name="pip-list.json")
    assert [(e.message.split(":")[0], e.fatal) for e in report.errors] == [("not valid JSON", True)]
