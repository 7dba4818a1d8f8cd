"""The same method called with the same arguments on a value each side names for its device
(`total_norm_cuda[0].item()` against `total_norm_npu[0].item()`) is the port; what else differs
in the receiver is reported where it differs, not as "a different function"."""
from __future__ import annotations

from conftest import script_pair

GPU = """import torch


def clip(total_norm, group):
    total_norm_cuda = torch.cuda.FloatTensor([float(total_norm)])
    torch.distributed.all_reduce(total_norm_cuda, group=group)
    total_norm = total_norm_cuda[0].item()
    return total_norm
"""

NPU = """import torch
import torch_npu


def clip(total_norm, group):
    total_norm_npu = torch.npu.FloatTensor([float(total_norm)])
    torch.distributed.all_reduce(total_norm_npu, group=group)
    total_norm = total_norm_npu[0].item()
    return total_norm
"""


def found(rep) -> list:
    return [(f.rule, f.key, f.gpu and (f.gpu.line, f.gpu.value), f.npu and (f.npu.line, f.npu.value), f.message)
            for f in rep.findings]


def test_a_method_of_a_value_named_for_each_device_is_the_port(tmp_path):
    rep = script_pair(tmp_path, GPU, NPU, name="norms.py")
    assert found(rep) == []
    assert (7, 8) in [(m.gpu and m.gpu.line, m.npu and m.npu.line) for m in rep.masked]


def test_another_index_is_reported_where_it_differs(tmp_path):
    rep = script_pair(tmp_path, GPU, NPU.replace("total_norm_npu[0].item()", "total_norm_npu[1].item()"), name="norms.py")
    assert found(rep) == [("SD101", "code:norms.py:clip", (7, 0), (8, 1), "statement differs")]


def test_another_value_is_a_difference(tmp_path):
    npu = NPU.replace("total_norm = total_norm_npu[0].item()", "total_norm = group_norm[0].item()")
    rep = script_pair(tmp_path, GPU, npu, name="norms.py")
    assert [(f.rule, f.gpu.line, f.npu.line, f.gpu.value, f.npu.value) for f in rep.findings if f.severity != "info"] \
        == [("SD101", 7, 8, "total_norm_cuda", "group_norm")]
