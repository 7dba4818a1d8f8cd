"""Issue 14, row 6: the same difference at several call sites is one decision: one finding
at its first place, listing the other places' lines."""
from __future__ import annotations

from test_python_values import run

GPU = '''import torch


def train(model, batches):
    for x in batches:
        loss = model(x.cuda(0))
        print("loss", loss)
    for x in batches:
        acc = model(x.cuda(0))
        print("loss", loss)
    return acc
'''


def test_the_same_difference_at_three_sites_is_one_finding(tmp_path):
    npu = GPU.replace(".cuda(0)", ".npu(1)").replace('print("loss", loss)', 'print("npu loss", loss)')
    r = run(tmp_path, GPU, npu.replace("import torch\n", "import torch\nimport torch_npu\n"))
    assert [(f.rule, f.gpu.line, f.npu.line, f.gpu.value, f.npu.value, f.message, f.extra.get("also"))
            for f in r.findings] == [
        ("SD101", 6, 7, 0, 1, "x.cuda: argument 1 differs; the same at 1 more place(s), GPU/NPU lines 9/10",
         [[9, 10]]),
        ("SD103", 7, 8, "loss", "npu loss", "print: argument 1 differs; the same at 1 more place(s), "
                                            "GPU/NPU lines 10/11", [[10, 11]])]


def test_different_values_at_two_sites_stay_two_findings(tmp_path):
    npu = GPU.replace(".cuda(0)", ".npu(1)", 1).replace(".cuda(0)", ".npu(2)", 1)
    r = run(tmp_path, GPU, npu)
    assert [(f.gpu.line, f.npu.value, f.message) for f in r.findings] == [
        (6, 1, "x.cuda: argument 1 differs"), (9, 2, "x.cuda: argument 1 differs")]
