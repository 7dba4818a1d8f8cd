"""Issue 39, round 7: what a process is given to run on, in Python.

An environment variable's NPU twin written into `os.environ` is the GPU variable (as a launch
script's export is, SD010); the entry that says which devices a process sees is placement when
it is computed (the ids a scheduler gave), a setting when it is written as a literal; a
scheduler's device request is the same request when the NPU side asks for no GPUs and names
its accelerator through a constant whose name says it is the run's device. Made-up names."""
from __future__ import annotations

from conftest import script_pair


def pair(tmp_path, name: str, gpu: str, npu: str):
    return script_pair(tmp_path, gpu, npu, name=name)


def rows(rep):
    return sorted(((f.rule, f.severity, f.key, f.gpu.value if f.gpu else None, f.npu.value if f.npu else None,
                    f.gpu.line if f.gpu else None, f.npu.line if f.npu else None) for f in rep.findings), key=repr)


def masked(rep):
    return sorted((m.rule, m.gpu.line if m.gpu else None, m.npu.line if m.npu else None) for m in rep.masked)


ENV_GPU = 'import os\nos.environ["CUDA_VISIBLE_DEVICES"] = "0,1"\nos.environ["NCCL_DEBUG"] = "{dbg}"\n'
ENV_NPU = 'import os\nos.environ["ASCEND_RT_VISIBLE_DEVICES"] = "0,1"\nos.environ["HCCL_DEBUG"] = "{dbg}"\n'


def test_an_environment_twin_in_python_is_the_gpu_variable(tmp_path):
    rep = pair(tmp_path, "boot.py", ENV_GPU.format(dbg="INFO"), ENV_NPU.format(dbg="INFO"))
    assert rows(rep) == []
    assert masked(rep) == [("SD010", 2, 2), ("SD010", 3, 3)]


def test_an_environment_twin_with_another_value_is_said(tmp_path):
    rep = pair(tmp_path, "boot.py", ENV_GPU.format(dbg="INFO"), ENV_NPU.format(dbg="WARN"))
    assert rows(rep) == [("SD102", "warning", "code:boot.py:<module>", "INFO", "WARN", 3, 3)]


VISIBLE_GPU = ("import os\nimport ray\n\n\ndef pin(ids):\n"
               "    os.environ[\"CUDA_VISIBLE_DEVICES\"] = {gpu}\n")
VISIBLE_NPU = ("import os\nimport ray\n\n\ndef pin(ids):\n"
               "    os.environ[\"ASCEND_RT_VISIBLE_DEVICES\"] = {npu}\n")


def test_visible_devices_a_scheduler_gave_are_placement_a_literal_list_a_setting(tmp_path):
    rep = pair(tmp_path / "ids", "pin.py", VISIBLE_GPU.format(gpu="str(ray.get_gpu_ids()[0])"),
               VISIBLE_NPU.format(npu="str(ray.get_runtime_context().get_accelerator_ids()['NPU'][0])"))
    assert rows(rep) == [("SD103", "info", "code:pin.py:pin", "ray.get_gpu_ids()",
                          "ray.get_runtime_context().get_accelerator_ids()['NPU']", 6, 6)]
    assert "placement" in rep.findings[0].message
    rep = pair(tmp_path / "literal", "pin.py", VISIBLE_GPU.format(gpu='"0,1,2,3"'), VISIBLE_NPU.format(npu='"0,1"'))
    assert rows(rep) == [("SD102", "warning", "code:pin.py:pin", "0,1,2,3", "0,1", 6, 6)]
    # as many devices, other ids: which devices, not how many (as a launch script's export is read)
    rep = pair(tmp_path / "as-many", "pin.py", VISIBLE_GPU.format(gpu='"0,1"'), VISIBLE_NPU.format(npu='"2,3"'))
    assert rows(rep) == [] and masked(rep) == [("SD010", 6, 6), ("SD022", 6, 6)]


REQUEST_GPU = ("import ray\n\n\ndef start(worker, count):\n"
               "    return worker.options(num_gpus=count).remote()\n")
REQUEST_NPU = ("import ray\nfrom kestrel.platform import ACCELERATOR_KIND\n\n\ndef start(worker, count):\n"
               "    return worker.options(num_gpus=count if ACCELERATOR_KIND == \"GPU\" else 0,\n"
               "                          resources=None if ACCELERATOR_KIND == \"GPU\" "
               "else {{ACCELERATOR_KIND: {n}}}).remote()\n")


def test_a_device_request_through_the_runs_device_constant_is_the_same_request(tmp_path):
    rep = pair(tmp_path, "pool.py", REQUEST_GPU, REQUEST_NPU.format(n="count"))
    assert [r for r in rows(rep) if r[1] != "info"] == []


def test_a_device_request_of_another_count_is_said(tmp_path):
    rep = pair(tmp_path, "pool.py", REQUEST_GPU, REQUEST_NPU.format(n="count * 2"))
    assert [r for r in rows(rep) if r[1] != "info"] == [
        ("SD102", "warning", "code:pool.py:start", "count", "count * 2", 5, 7)]


SETUP = "from mindspore import context\n\n\ndef setup(tgt):\n    context.set_context(device_target={t}, mode=context.{m})\n"


def test_the_device_a_framework_is_told_to_target_is_placement(tmp_path):
    rep = pair(tmp_path / "target", "setup.py", SETUP.format(t='"GPU"', m="GRAPH_MODE"),
               SETUP.format(t="tgt", m="GRAPH_MODE"))
    assert rows(rep) == [("SD103", "info", "code:setup.py:setup", "GPU", "tgt", 5, 5)]
    rep = pair(tmp_path / "mode", "setup.py", SETUP.format(t='"GPU"', m="GRAPH_MODE"),
               SETUP.format(t="tgt", m="PYNATIVE_MODE"))
    assert rows(rep) == [("SD102", "warning", "code:setup.py:setup", "context.GRAPH_MODE", "context.PYNATIVE_MODE", 5, 5),
                         ("SD103", "info", "code:setup.py:setup", "GPU", "tgt", 5, 5)]


RESTORE_GPU = "import torch\n\n\ndef restore(state):\n    torch.cuda.init()\n    torch.cuda.set_rng_state(state[\"dev_rng\"])\n"
RESTORE_NPU = ("import torch\nfrom kestrel.platforms import accel_host\n\n\ndef restore(state):\n    accel_host.init()\n"
               "    accel_host.set_rng_state(state[\"{key}\"])\n")


def test_a_device_function_called_through_a_platform_object_is_the_same_call(tmp_path):
    rep = pair(tmp_path / "same", "restore.py", RESTORE_GPU, RESTORE_NPU.format(key="dev_rng"))
    assert [r for r in rows(rep) if r[1] != "info"] == [] and len(rep.masked) == 2
    rep = pair(tmp_path / "other", "restore.py", RESTORE_GPU, RESTORE_NPU.format(key="host_rng"))
    assert [r for r in rows(rep) if r[1] != "info"] == [
        ("SD102", "warning", "code:restore.py:restore", "dev_rng", "host_rng", 6, 7)]
