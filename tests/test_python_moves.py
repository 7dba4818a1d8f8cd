"""Issue 14, row 5: a statement moved within its block is one finding, not a removal and an
addition: an info when nothing it crossed depends on it, else one finding naming the line."""
from __future__ import annotations

from test_python_values import run

GPU = '''import torch


def main(args):
    log_dir = args.out
    torch.manual_seed(0)
    model = Net()
    opt = make(model)
    return opt, log_dir
'''


def summary(r):
    return [(f.rule, f.severity, f.gpu.line, f.npu.line, f.message) for f in r.findings]


def test_a_move_nothing_depends_on_is_one_info(tmp_path):
    npu = GPU.replace("    log_dir = args.out\n", "").replace("    opt = make(model)\n",
                                                              "    opt = make(model)\n    log_dir = args.out\n")
    assert summary(run(tmp_path, GPU, npu)) == [
        ("SD103", "info", 5, 8, "statement moved (line 5 on GPU, 8 on NPU); nothing it crossed depends on it")]


def test_a_seed_moved_after_the_model_is_one_warning(tmp_path):
    npu = GPU.replace("    torch.manual_seed(0)\n    model = Net()\n", "    model = Net()\n    torch.manual_seed(0)\n")
    assert summary(run(tmp_path, GPU, npu)) == [
        ("SD102", "warning", 7, 6, "statement moved past line 6 on GPU (torch.manual_seed(0)), which depends on "
                                    "it or on whose effects it depends: the order changed")]


def test_a_move_past_a_reader_of_its_name_is_reported(tmp_path):
    gpu = "def f(a):\n    x = a + 1\n    y = x * 2\n    return y\n"
    npu = "def f(a):\n    y = x * 2\n    x = a + 1\n    return y\n"
    assert [(f.rule, f.message) for f in run(tmp_path, gpu, npu).findings] == [
        ("SD102", "statement moved past line 2 on GPU (x = a + 1), which depends on it or on whose effects "
                  "it depends: the order changed")]


def test_reordered_functions_are_info(tmp_path):
    gpu = "def a():\n    return b()\n\n\ndef b():\n    return 1\n"
    npu = "def b():\n    return 1\n\n\ndef a():\n    return b()\n"
    assert [(f.rule, f.gpu.line, f.npu.line) for f in run(tmp_path, gpu, npu).findings] == [("SD103", 5, 1)]


def test_no_move_no_finding(tmp_path):
    assert run(tmp_path, GPU, GPU).findings == []
