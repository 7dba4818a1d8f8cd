"""Issue 14, row 3: known device refactors of real ports. `.cuda(X)` -> `.to(device)` and a
removed torch.backends.mps branch are masked; torch.cuda.device_count() -> a rank-size
environment variable is reported with why it can change numerics."""
from __future__ import annotations

from test_python_values import run

HEAD = "import os\n\nimport torch\n\n\ndef build(args, device):\n"


def test_cuda_with_an_index_to_to_device_is_masked(tmp_path):
    r = run(tmp_path, HEAD + "    model = Net()\n    model = model.cuda(args.gpu)\n    x = x.cuda(args.gpu, non_blocking=True)\n",
            HEAD + "    model = Net()\n    model = model.to(device)\n    x = x.to(device, non_blocking=True)\n")
    assert r.findings == []
    assert [(m.rule, m.gpu.line, m.npu.line) for m in r.masked] == [("SD016", 8, 8), ("SD016", 9, 9)]


def test_to_a_dtype_or_the_cpu_is_not_a_device_move(tmp_path):
    r = run(tmp_path, HEAD + "    a = a.cuda(args.gpu)\n    b = b.cuda()\n",
            HEAD + "    a = a.to(torch.float16)\n    b = b.to('cpu')\n")
    assert r.masked == []
    assert [(f.rule, f.gpu.line, f.npu.line, f.message) for f in r.findings] == [
        ("SD101", 7, 7, "a different function is called (a.cuda on GPU)"),
        ("SD101", 8, 8, "a different function is called (b.cuda on GPU)")]


def test_device_count_to_rank_size_says_why_it_can_differ(tmp_path):
    r = run(tmp_path, HEAD + "    ngpus = torch.cuda.device_count()\n",
            HEAD + "    ngpus = int(os.environ['RANK_SIZE'])\n")
    assert [(f.rule, f.severity, f.gpu.line, f.npu.line, f.message) for f in r.findings] == [
        ("SD102", "warning", 7, 7,
         "torch.cuda.device_count() became $RANK_SIZE: equal on one node with every device visible, but RANK_SIZE "
         "counts the whole job, so what is derived from it (per-device batch, learning-rate scaling) can differ")]


def test_device_count_to_another_variable_is_a_plain_difference(tmp_path):
    r = run(tmp_path, HEAD + "    ngpus = torch.cuda.device_count()\n",
            HEAD + "    ngpus = int(os.environ['NODE_RANK'])\n")
    assert [(f.rule, f.message) for f in r.findings] == [
        ("SD102", "a different function is called (torch.cuda.device_count on GPU)")]


MPS_GPU = '''import torch

if torch.backends.mps.is_available():
    torch.mps.manual_seed(0)
if torch.cuda.is_available():
    device = "cuda"
elif torch.backends.mps.is_available():
    device = "mps"
else:
    device = "cpu"
'''


def test_removed_mps_branches_are_masked(tmp_path):
    npu = MPS_GPU.replace('if torch.backends.mps.is_available():\n    torch.mps.manual_seed(0)\n', '') \
        .replace('elif torch.backends.mps.is_available():\n    device = "mps"\n', '')
    r = run(tmp_path, MPS_GPU, npu)
    assert r.findings == []
    # the mps branches keep their mask; the cpu fallback after torch.cuda.is_available() is a
    # branch for another device on both sides (SD019, docs/devices.md)
    assert [(m.rule, m.gpu and m.gpu.line, m.npu and m.npu.line) for m in r.masked] == [
        ("SD017", 3, None), ("SD017", 4, None), ("SD017", 7, None), ("SD017", 8, None),
        ("SD019", 9, None), ("SD019", 10, None), ("SD019", None, 5), ("SD019", None, 6)]


def test_a_removed_branch_that_is_not_mps_is_reported(tmp_path):
    """`if use_ema:` tests no device: its branch removed is reported. `if use_xpu:` is a switch
    for another device (off on both runs, docs/devices.md): its branch removed is not."""
    gpu = MPS_GPU.replace("torch.backends.mps.is_available()", "use_ema")
    npu = gpu.replace('if use_ema:\n    torch.mps.manual_seed(0)\n', '')
    (tmp_path / "ema").mkdir()
    r = run(tmp_path / "ema", gpu, npu)
    assert not any(m.rule == "SD017" for m in r.masked)
    assert [(f.rule, f.gpu.line, f.message) for f in r.findings] == [("SD101", 3, "statement on GPU only")]
    gpu = MPS_GPU.replace("torch.backends.mps.is_available()", "use_xpu")
    (tmp_path / "xpu").mkdir()
    r = run(tmp_path / "xpu", gpu, gpu.replace('if use_xpu:\n    torch.mps.manual_seed(0)\n', ''))
    assert [(f.rule, f.severity) for f in r.findings if f.severity != "info"] == []
