"""`scriptdiff collect` on fake install trees (--root), and what a snapshot never contains."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from conftest import FIXTURES, ROOT
from scriptdiff.project.collect import Reader, collect, dumps, looks_secret, env_policy
from scriptdiff.ruleset.registry import detect_kind
from scriptdiff.ruleset.secrets import withheld
from scriptdiff.inputs.sources import Source

_spec = importlib.util.spec_from_file_location("env_layout", FIXTURES / "env" / "layout.py")
layout = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(layout)

NPU_ENV = {"ASCEND_HOME_PATH": "/usr/local/Ascend/ascend-toolkit/latest", "HCCL_DETERMINISTIC": "true",
           "ASCEND_RT_VISIBLE_DEVICES": "0,1,2,3", "TASK_QUEUE_ENABLE": "2", "OMP_NUM_THREADS": "8",
           "HOME": "/root", "PATH": "/usr/bin"}


def test_ascend_tree_versions(tmp_path):
    layout.npu_machine(tmp_path)
    snap = collect(root=str(tmp_path), environ=NPU_ENV)
    v = snap["versions"]
    assert {k: e["version"] for k, e in v.items()} == {
        "cann": "8.0.RC3", "cann_kernels": "8.0.RC3", "nnal": "8.0.RC3", "hccl": None, "driver": "24.1.rc2",
        "firmware": "7.5.0.1.129", "nvidia_driver": None, "cuda": None, "cudnn": None, "nccl": None}
    # the toolkit was found through ASCEND_HOME_PATH's `latest` (an absolute symlink, followed under --root)
    assert v["cann"]["source"] == "/usr/local/Ascend/ascend-toolkit/latest/toolkit/version.info"
    assert v["cann"]["home"] == "/usr/local/Ascend/ascend-toolkit/8.0.RC3"
    assert v["cann"]["version_dir"] == "8.0.RC3" and v["cann"]["timestamp"] == "20240930_000000001"
    assert v["driver"]["source"] == "/usr/local/Ascend/driver/version.info"
    assert v["nnal"]["source"] == "/usr/local/Ascend/nnal/atb/latest/version.info"
    assert "/usr/local/Ascend/ascend-toolkit/latest/hccl/version.info" in v["hccl"]["tried"]
    assert snap["platform"] == "npu"
    assert snap["commands_run"] == [] and snap["npu_smi"] is None  # nothing is run under --root
    assert snap["os"]["name"] == "openEuler 22.03 (LTS-SP1)"
    assert snap["root"] == str(tmp_path)
    # under --root, architecture and Python are the tree's (inferred), not those of the Python running collect
    assert snap["arch"] == "aarch64"
    assert snap["python"] == {"version": "3.10", "inferred_from": "/usr/local/lib/python3.10/site-packages"}
    assert snap["os"]["kernel"] is None


def test_ascend_install_root_from_install_info(tmp_path):
    """/etc/ascend_install.info says where the driver went; the toolkit default follows it."""
    layout.ascend_tree(tmp_path, install_root="/opt/Ascend", cann="8.0.RC2", driver="24.1.rc1", firmware=None)
    snap = collect(root=str(tmp_path), environ={})
    v = snap["versions"]
    assert v["driver"]["version"] == "24.1.rc1" and v["driver"]["source"] == "/opt/Ascend/driver/version.info"
    assert v["cann"]["version"] == "8.0.RC2"
    assert v["cann"]["source"] == "/opt/Ascend/ascend-toolkit/latest/toolkit/version.info"
    assert v["firmware"] == {"version": None, "tried": ["/opt/Ascend/firmware/version.info"]}


def test_toolkit_install_info_when_version_info_missing(tmp_path):
    layout.ascend_tree(tmp_path, arch="x86_64")
    os.remove(tmp_path / "usr/local/Ascend/ascend-toolkit/8.0.RC3/toolkit/version.info")
    snap = collect(root=str(tmp_path), environ={})
    assert snap["versions"]["cann"]["version"] == "8.0.RC3"
    assert snap["versions"]["cann"]["source"] == ("/usr/local/Ascend/ascend-toolkit/latest/x86_64-linux/"
                                                  "ascend_toolkit_install.info")
    assert snap["arch"] == "x86_64"  # the tree's, whatever machine reads it


def test_nvidia_tree_versions(tmp_path):
    layout.gpu_machine(tmp_path)
    snap = collect(root=str(tmp_path), environ={"CUDA_VISIBLE_DEVICES": "0,1"})
    v = snap["versions"]
    assert {k: e["version"] for k, e in v.items() if e["version"]} == {
        "nvidia_driver": "535.104.05", "cuda": "12.1.1", "cudnn": "8.9.2", "nccl": "2.18.1"}
    assert v["nvidia_driver"]["source"] == "/proc/driver/nvidia/version"
    assert v["cuda"] == {"version": "12.1.1", "source": "/usr/local/cuda/version.json", "home": "/usr/local/cuda-12.1"}
    assert v["cudnn"]["source"] == "/usr/include/cudnn_version.h"
    assert v["nccl"]["source"] == "distribution nvidia-nccl-cu12"  # no nccl.h: the wheel's version
    assert snap["platform"] == "gpu"
    assert snap["env"] == {"CUDA_VISIBLE_DEVICES": "0,1"}
    assert snap["arch"] == "x86_64"  # from the driver's version line


def test_old_cuda_version_txt_and_cuda_home(tmp_path):
    layout.nvidia_tree(tmp_path, cuda="11.8.0", old_cuda_txt=True, cudnn=None)
    os.rename(tmp_path / "usr/local/cuda-11.8", tmp_path / "opt-cuda")
    snap = collect(root=str(tmp_path), environ={"CUDA_HOME": "/opt-cuda"})
    assert snap["versions"]["cuda"]["version"] == "11.8.0"
    assert snap["versions"]["cuda"]["source"] == "/opt-cuda/version.txt"
    assert snap["versions"]["cudnn"]["version"] is None


def test_distributions_installer_and_sources(tmp_path):
    layout.dist(tmp_path, "torch", "2.1.0+cu121")
    layout.dist(tmp_path, "Megatron_Core", "0.8.0", direct_url={
        "url": "https://oauth2:ghp_SECRETVALUE@github.com/NVIDIA/Megatron-LM.git",
        "vcs_info": {"vcs": "git", "commit_id": "a" * 40, "requested_revision": "core_r0.8.0"}})
    layout.dist(tmp_path, "mindspeed", "0.8.0", installer=None,
                direct_url={"url": "file:///home/me/MindSpeed", "dir_info": {"editable": True}})
    layout.dist(tmp_path, "numpy", "1.26.4", installer="conda")
    snap = collect(root=str(tmp_path), environ={})
    assert snap["distributions"] == [
        {"name": "Megatron_Core", "version": "0.8.0", "installer": "pip",
         "source": {"url": f"https://{withheld('oauth2:ghp_SECRETVALUE')}@github.com/NVIDIA/Megatron-LM.git",
                    "vcs": "git", "commit": "a" * 40, "requested_revision": "core_r0.8.0"}},
        {"name": "mindspeed", "version": "0.8.0", "source": {"url": "file:///home/me/MindSpeed", "editable": True}},
        {"name": "numpy", "version": "1.26.4", "installer": "conda"},
        {"name": "torch", "version": "2.1.0+cu121", "installer": "pip"},
    ]
    assert "SECRETVALUE" not in dumps(snap)  # a token in a git URL is withheld (the host and path stay)


def test_secret_looking_variables_never_recorded(tmp_path):
    env = {
        "MY_SECRET_TOKEN": "s3cr3t-one",        # not allowlisted, secret-looking
        "HF_TOKEN": "hf_s3cr3t-two",            # allowlisted prefix HF_, secret-looking
        "ASCEND_API_KEY": "s3cr3t-three",       # allowlisted prefix ASCEND_
        "NCCL_AUTH_PASSWD": "s3cr3t-four",
        "TORCH_CREDENTIALS_FILE": "/s3cr3t-five",
        "HCCL_ACCESSKEY": "s3cr3t-six",
        "DS_PASSWORD": "s3cr3t-seven",
        "MASTER_ADDR": "https://user:s3cr3t-eight@host",  # credentials in an allowlisted value
        "TOKENIZERS_PARALLELISM": "false",      # a word TOKENIZERS, not TOKEN: kept
        "NCCL_DEBUG": "INFO",
        "AWS_SECRET_ACCESS_KEY": "s3cr3t-nine",
    }
    snap = collect(root=str(tmp_path), environ=env)
    text = dumps(snap)
    assert snap["env"] == {"NCCL_DEBUG": "INFO", "TOKENIZERS_PARALLELISM": "false"}
    assert snap["env_withheld"] == 7  # allowlisted names held back (AWS_* and MY_* are not allowlisted at all)
    for name, value in env.items():
        if name not in snap["env"]:
            assert name not in text and value not in text
    assert "s3cr3t" not in text


@pytest.mark.parametrize("name,secret", [
    ("HF_TOKEN", True), ("GITHUB_TOKEN", True), ("HCCL_KEY", True), ("API_KEY", True), ("OPENAI_APIKEY", True),
    ("DB_PASSWORD", True), ("MY_CREDENTIALS", True), ("BASIC_AUTH", True), ("AUTHORIZATION", True),
    ("CLIENT_SECRET", True), ("TOKENIZERS_PARALLELISM", False), ("NCCL_IB_HCA", False), ("KEYBOARD", False),
    ("CUDA_VISIBLE_DEVICES", False), ("HCCL_BUFFSIZE", False), ("PYTORCH_CUDA_ALLOC_CONF", False),
])
def test_looks_secret(name, secret):
    assert looks_secret(name, env_policy()[2]) is secret


def test_env_allowlist_covers_the_env_map(tmp_path):
    env = {"NCCL_DETERMINISTIC": "1", "NCCL_IB_TIMEOUT": "22", "CUBLAS_WORKSPACE_CONFIG": ":4096:8",
           "TASK_QUEUE_ENABLE": "2", "INF_NAN_MODE_ENABLE": "1", "PYTHONHASHSEED": "0", "EDITOR": "vim",
           "LANG": "C.UTF-8", "HOSTNAME": "node1"}
    snap = collect(root=str(tmp_path), environ=env)
    assert snap["env"] == {"CUBLAS_WORKSPACE_CONFIG": ":4096:8", "INF_NAN_MODE_ENABLE": "1", "NCCL_DETERMINISTIC": "1",
                           "NCCL_IB_TIMEOUT": "22", "PYTHONHASHSEED": "0", "TASK_QUEUE_ENABLE": "2"}


def test_snapshot_is_detected_and_versioned(tmp_path):
    layout.npu_machine(tmp_path / "tree")
    text = dumps(collect(root=str(tmp_path / "tree"), environ=NPU_ENV))
    assert '"scriptdiff_snapshot": 1' in text[:2000]
    assert json.loads(text)["scriptdiff_snapshot"] == 1
    assert detect_kind(Source(name="npu-node3.json", data=text.encode())) == "snapshot"


def test_reader_keeps_absolute_links_inside_root(tmp_path):
    (tmp_path / "etc").mkdir()
    os.symlink("/etc/passwd", tmp_path / "etc" / "link")
    rd = Reader(str(tmp_path))
    assert rd.path("/etc/link") == str(tmp_path / "etc" / "passwd")
    assert rd.text("/etc/link") is None  # not the host's /etc/passwd
    assert rd.path("/../../etc/x") == str(tmp_path / "etc" / "x")


def test_cli_collect_root(tmp_path, cli):
    layout.npu_machine(tmp_path / "tree")
    out = tmp_path / "snap.json"
    code, stdout, stderr = cli("collect", "--root", str(tmp_path / "tree"), "-o", str(out))
    assert code == 0 and stdout == ""
    assert "11 distributions, platform npu" in stderr
    snap = json.loads(out.read_text())
    assert snap["versions"]["cann"]["version"] == "8.0.RC3"
    assert [d["name"] for d in snap["distributions"]][:3] == ["apex", "deepspeed", "hccl"]


def test_cli_collect_bad_root(tmp_path, cli):
    code, _, stderr = cli("collect", "--root", str(tmp_path / "nope"))
    assert code == 2 and "not a directory" in stderr


def test_collect_imports_nothing_heavy():
    """On the real machine: reads distributions without importing torch, numpy, libcst or rich."""
    code = ("import sys; from scriptdiff.project.collect import collect; s = collect(run_commands=False); "
            "print(len(s['distributions'])); "
            "print(sorted(m for m in ('torch', 'numpy', 'libcst', 'rich', 'safetensors', 'torch_npu') if m in sys.modules))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert res.returncode == 0, res.stderr
    count, heavy = res.stdout.splitlines()
    assert int(count) > 5
    assert heavy == "[]"
