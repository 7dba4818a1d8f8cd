"""A device name's type cut from its index (`paddle.get_device().split(":")[0] == "npu"`, the
device name being "npu:0") is a device test, decided for each side: a backend chosen by it is
the port; another backend chosen so stays a difference."""
from __future__ import annotations

from conftest import script_pair

GPU = """import paddle
from orbit.p2p import batch_guard


def send(x):
    with batch_guard("NCCL"):
        paddle.distributed.send(x)
"""

NPU = """import paddle
from orbit.p2p import batch_guard


def send(x):
    backend = "NCCL"
    if paddle.get_device().split(":")[0] == "npu":
        backend = "HCCL"
    with batch_guard(backend):
        paddle.distributed.send(x)
"""


def test_a_backend_chosen_by_the_device_type_is_the_port(tmp_path):
    rep = script_pair(tmp_path, GPU, NPU, name="comm.py")
    assert [f.rule for f in rep.findings] == []
    npu = next(a for a in rep.inputs if a.side == "npu")
    assert any("1 decided" in n for n in npu.notes)


def test_another_backend_chosen_so_is_a_difference(tmp_path):
    rep = script_pair(tmp_path, GPU, NPU.replace('backend = "HCCL"', 'backend = "GLOO"'), name="comm.py")
    assert [(f.rule, f.gpu.line, f.npu.line) for f in rep.findings if f.severity != "info"] == [("SD109", 5, 5)]
