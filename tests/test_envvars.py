"""Environment exports in launch scripts: GPU<->NPU names mapped, roles decide the rule."""
from __future__ import annotations

import pytest

from scriptdiff.checks import envvars
from scriptdiff.model import Options
from scriptdiff.run.pipeline import diff_files
from scriptdiff.model import Fact, Masked
from scriptdiff.ruleset.rules import load


def run(tmp_path, gpu: str, npu: str):
    for side, text in (("gpu", gpu), ("npu", npu)):
        (tmp_path / side).mkdir()
        (tmp_path / side / "run.sh").write_text(text + "torchrun pretrain_gpt.py --lr 1\n")
    return diff_files([str(tmp_path / "gpu" / "run.sh")], [str(tmp_path / "npu" / "run.sh")], Options(use_cache=False))


def got(rep):
    return sorted((f.rule, f.severity, f.key, f.gpu.value if f.gpu else None, f.npu.value if f.npu else None,
                   f.gpu.line if f.gpu else None, f.npu.line if f.npu else None) for f in rep.findings)


@pytest.mark.parametrize("gpu,npu,expected", [
    ("export CUDA_VISIBLE_DEVICES=0,1\n", "export ASCEND_RT_VISIBLE_DEVICES=0,1\n", []),
    ("export NCCL_DETERMINISTIC=1\n", "export HCCL_DETERMINISTIC=True\n", []),
    ("export NCCL_DETERMINISTIC=1\n", "export HCCL_DETERMINISTIC=0\n",
     [("SD306", "error", "env:NCCL_DETERMINISTIC", "1", "0", 1, 1)]),
    ("export NCCL_DETERMINISTIC=1\n", "",
     [("SD306", "error", "env:NCCL_DETERMINISTIC", "1", None, 1, None)]),
    ("export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n", "export PYTORCH_NPU_ALLOC_CONF=max_split_size_mb:128\n",
     [("SD301", "warning", "env:PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True", "max_split_size_mb:128", 1, 1)]),
    ("", "export TASK_QUEUE_ENABLE=2\nexport HCCL_CONNECT_TIMEOUT=600\n",
     [("SD302", "info", "env:HCCL_CONNECT_TIMEOUT", None, "600", None, 2),
      ("SD302", "info", "env:TASK_QUEUE_ENABLE", None, "2", None, 1)]),
    ("export NCCL_IB_HCA=mlx5_0\nexport NCCL_SOCKET_IFNAME=eth0\n", "",
     [("SD303", "info", "env:NCCL_IB_HCA", "mlx5_0", None, 1, None),
      ("SD303", "info", "env:NCCL_SOCKET_IFNAME", "eth0", None, 2, None)]),
    ("", "export INF_NAN_MODE_ENABLE=0\n", [("SD304", "warning", "env:INF_NAN_MODE_ENABLE", None, "0", None, 1)]),
    ("export WANDB_MODE=offline\n", "", [("SD305", "info", "env:WANDB_MODE", "offline", None, 1, None)]),
    ("export OMP_NUM_THREADS=4\n", "export OMP_NUM_THREADS=8\n",
     [("SD301", "warning", "env:OMP_NUM_THREADS", "4", "8", 1, 1)]),
    ("export CUDA_DEVICE_MAX_CONNECTIONS=1\n", "export CUDA_DEVICE_MAX_CONNECTIONS=1\n", []),
    ("export DS_ACCELERATOR=cuda\n", "export DS_ACCELERATOR=npu\n", []),
    ("export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$LD_LIBRARY_PATH\n",
     "export LD_LIBRARY_PATH=/usr/local/Ascend/driver/lib64:$LD_LIBRARY_PATH\n",
     [("SD305", "info", "env:LD_LIBRARY_PATH", "/usr/local/cuda/lib64:$LD_LIBRARY_PATH",
       "/usr/local/Ascend/driver/lib64:$LD_LIBRARY_PATH", 1, 1)]),
])
def test_env_rules(tmp_path, gpu, npu, expected):
    assert got(run(tmp_path, gpu, npu)) == expected


def test_renamed_variable_is_masked_with_both_lines(tmp_path):
    rep = run(tmp_path, "export CUDA_VISIBLE_DEVICES=0\n", "X=1\nexport ASCEND_RT_VISIBLE_DEVICES=0\n")
    assert [(m.rule, m.gpu.line, m.npu.line) for m in rep.masked] == [("SD010", 1, 2)]


def test_non_env_key_without_environment_module_is_a_generic_warning():
    rs = load()
    g = Fact(key="version:cann", value="8.0", check="environment")
    n = Fact(key="version:cann", value="8.1", check="environment")
    f = envvars.classify("version:cann", g, n, rs)
    try:
        from scriptdiff.checks import environment  # noqa: F401  (another engineer's module)
    except ImportError:
        assert f.rule == "SD305" and f.severity == "warning" and "8.0" in f.message
    else:
        assert f is not None


def test_same_value_rules():
    assert envvars.same_value("X", "1", "true") and envvars.same_value("X", "on", "1")
    assert not envvars.same_value("X", "1", "0") and not envvars.same_value("X", "2", "1")
    assert isinstance(envvars.classify_env("env:CUDA_VISIBLE_DEVICES",
                                           Fact("env:CUDA_VISIBLE_DEVICES", "0", "environment", meta={"name": "CUDA_VISIBLE_DEVICES"}),
                                           Fact("env:CUDA_VISIBLE_DEVICES", " 0", "environment",
                                                meta={"name": "ASCEND_RT_VISIBLE_DEVICES", "mask": "SD010"}), load()), Masked)


@pytest.mark.parametrize("npu,expected", [
    ("export HCCL_DEBUG=INFO\n", []),
    ("export HCCL_DEBUG=WARN\n", [("SD303", "info", "env:NCCL_DEBUG", "INFO", "WARN", 1, 1)]),
])
def test_the_nccl_and_hccl_debug_twins_are_one_setting(tmp_path, npu, expected):
    """Issue 41: NCCL_DEBUG and HCCL_DEBUG were two one-sided findings (the *_DETERMINISTIC twins
    are paired): they are paired as data (env_map.pairs), equal values masked, different ones a
    tuning difference."""
    rep = run(tmp_path, "export NCCL_DEBUG=INFO\n", npu)
    assert got(rep) == expected
    assert [(m.rule, m.gpu.line, m.npu.line) for m in rep.masked if m.rule == "SD010"] == ([("SD010", 1, 1)]
                                                                                          if not expected else [])


def yaml_env(lines: str) -> str:
    """A launcher's YAML whose `env_vars:` section holds `lines` (`NAME=value` per line)."""
    body = "".join(f"  {ln.split('=', 1)[0]}: \"{ln.split('=', 1)[1]}\"\n" for ln in lines.splitlines() if ln)
    return "run:\n  lr: 0.001\n" + ("env_vars:\n" + body if body else "")


@pytest.mark.parametrize("gpu,npu", [
    ("NCCL_DETERMINISTIC=1\n", "HCCL_DETERMINISTIC=0\n"),
    ("NCCL_IB_HCA=mlx5_0\nNCCL_SOCKET_IFNAME=eth0\n", "HCCL_SOCKET_IFNAME=bond0\nHCCL_CONNECT_TIMEOUT=600\n"),
    ("OMP_NUM_THREADS=4\n", "OMP_NUM_THREADS=8\n"),
    ("CUDA_VISIBLE_DEVICES=0,1\n", "ASCEND_RT_VISIBLE_DEVICES=0,1\n"),
    ("", "INF_NAN_MODE_ENABLE=0\n"),
])
def test_a_configs_environment_section_reads_as_the_exports_it_sets(tmp_path, gpu, npu):
    """`env_vars: {NCCL_IB_HCA: ...}` in a config is compared as the variables it sets: the same
    rule, severity, key and values as the launch script exporting them (one verdict whatever the
    file), each at its line in the YAML (the section starts at line 3: its n-th entry is line 3 + n)."""
    (tmp_path / "sh").mkdir()
    exported = got(run(tmp_path / "sh", "".join(f"export {ln}\n" for ln in gpu.splitlines()),
                       "".join(f"export {ln}\n" for ln in npu.splitlines())))
    for side, text in (("gpu", yaml_env(gpu)), ("npu", yaml_env(npu))):
        (tmp_path / "y" / side).mkdir(parents=True)
        (tmp_path / "y" / side / "launch.yaml").write_text(text)
    rep = diff_files([str(tmp_path / "y" / "gpu" / "launch.yaml")], [str(tmp_path / "y" / "npu" / "launch.yaml")],
                     Options(use_cache=False))
    shifted = [(r, s, k, gv, nv, gl + 3 if gl else None, nl + 3 if nl else None)
               for r, s, k, gv, nv, gl, nl in exported]
    assert got(rep) == shifted
    assert exported or [(m.rule, m.gpu.line, m.npu.line) for m in rep.masked] == [("SD010", 4, 4)]


def test_an_upper_case_key_outside_an_environment_section_is_a_setting(tmp_path):
    """Only a section named for the environment (rules/environment.yaml env_map.sections) holds
    variables: `model: {NCCL_IB_HCA: ...}` stays a setting of the file."""
    for side, v in (("gpu", "mlx5_0"), ("npu", "mlx5_1")):
        (tmp_path / side).mkdir()
        (tmp_path / side / "c.yaml").write_text(f"model:\n  NCCL_IB_HCA: {v}\n")
    rep = diff_files([str(tmp_path / "gpu" / "c.yaml")], [str(tmp_path / "npu" / "c.yaml")], Options(use_cache=False))
    assert got(rep) == [("SD220", "warning", "model.NCCL_IB_HCA", "mlx5_0", "mlx5_1", 2, 2)]


@pytest.mark.parametrize("gpu,npu,expected", [
    ("export TRAIN_DEVICE=gpu\n", "export TRAIN_DEVICE=npu\n", []),
    ("export TRAIN_DEVICE=cuda\n", "export TRAIN_DEVICE=NPU\n", []),
    ("export TRAIN_DEVICE=gpu\n", "export TRAIN_DEVICE=cpu\n",
     [("SD301", "warning", "env:TRAIN_DEVICE", "gpu", "cpu", 1, 1)]),
    ("export TRAIN_DEVICE=npu\n", "export TRAIN_DEVICE=gpu\n",
     [("SD301", "warning", "env:TRAIN_DEVICE", "npu", "gpu", 1, 1)]),
])
def test_a_variable_naming_each_sides_own_device_is_the_port(tmp_path, gpu, npu, expected):
    """A variable set to the run's device on each side (gpu against npu) is the port (SD022,
    masked); another device, or the two swapped, is a difference."""
    rep = run(tmp_path, gpu, npu)
    assert got(rep) == expected
    assert [m.rule for m in rep.masked] == ([] if expected else ["SD022"])
