"""A port's own helpers are followed where they are called (issue 39, docs/devices.md): a call
of a function of the file stands for what that function does on its side's device, its
arguments bound (`pick_accel(local, kind)` with `kind = probe()` is `torch.npu.set_device(local)`),
and a helper defined on one side only is masked once every call of it was found the port. A
device test evaluated on each side (`non_blocking=device.type == "cuda"` against `!= "cuda"`), a
raised error's words and a `try` that only lets identical statements fail are not numerics.

Each shape has a faithful port (silent: no warning or error) and a drifted one (its findings,
exact). The scripts and their helpers are made up (`probe`, `pick_accel`, `kestrel`, ...)."""
from __future__ import annotations

from test_device_branches import edit, line_of, loud, pair

GPU = '''\
import os

import torch
from torch.distributed import init_process_group


def setup_kestrel(cfg):
    rank = int(os.environ["RANK"])
    local = rank % torch.cuda.device_count()
    torch.cuda.set_device(local)
    init_process_group(backend=cfg.backend, rank=rank)
    return local


def build_kestrel(model):
    model = model.to(torch.bfloat16)
    return torch.optim.AdamW(model.parameters(), lr=1e-4)
'''

NPU = '''\
import os

import torch
from torch.distributed import init_process_group


def probe():
    """which accelerator this machine has"""
    try:
        import torch_npu
        if torch.npu.is_available():
            return "npu"
    except ImportError:
        pass
    if torch.cuda.is_available():
        return "cuda"
    return "cpu"


def count_accel(kind=None):
    if kind is None:
        kind = probe()
    if kind == "npu":
        return torch.npu.device_count()
    elif kind == "cuda":
        return torch.cuda.device_count()
    return 1


def pick_accel(index, kind=None):
    if kind is None:
        kind = probe()
    if kind == "npu":
        torch.npu.set_device(index)
    elif kind == "cuda":
        torch.cuda.set_device(index)


def half_kind(kind):
    if kind == "npu":
        return torch.bfloat16
    return torch.float16


def setup_kestrel(cfg):
    kind = probe()
    rank = int(os.environ["RANK"])
    local = rank % count_accel(kind)
    pick_accel(local, kind)
    init_process_group(backend=cfg.backend, rank=rank)
    return local


def build_kestrel(model):
    model = model.to(half_kind(probe()))
    return torch.optim.AdamW(model.parameters(), lr=1e-4)
'''


def test_helpers_that_do_the_port_are_followed_and_masked(tmp_path):
    report = pair(tmp_path, GPU, NPU)
    assert loud(report) == []
    masked = {(m.rule, m.gpu.line if m.gpu else None, m.npu.line if m.npu else None) for m in report.masked}
    # each call stands for what its helper does on the NPU; each helper is then masked
    assert ("SD022", line_of(GPU, "torch.cuda.set_device(local)"), line_of(NPU, "pick_accel(local, kind)")) in masked
    assert ("SD022", line_of(GPU, "torch.bfloat16"), line_of(NPU, "half_kind(probe())")) in masked
    assert ("SD022", None, line_of(NPU, "def half_kind")) in masked
    assert ("SD022", None, line_of(NPU, "def pick_accel")) in masked


def test_a_helper_that_does_something_else_on_the_npu_is_found(tmp_path):
    npu = edit(NPU, ('        return torch.bfloat16\n', '        return torch.float16\n'))
    report = pair(tmp_path, GPU, npu)
    assert loud(report) == [
        ("SD101", "code:train.py:build_kestrel", "torch.bfloat16", "half_kind(probe())",
         line_of(GPU, "torch.bfloat16"), line_of(npu, "half_kind(probe())")),
        ("SD102", "code:train.py:half_kind", None, "def half_kind(kind):", None, line_of(npu, "def half_kind")),
    ]


def test_a_helper_that_is_called_with_a_value_not_known_is_not_followed(tmp_path):
    npu = edit(NPU, ("    model = model.to(half_kind(probe()))\n", "    model = model.to(half_kind(model.kind))\n"))
    report = pair(tmp_path, GPU, npu)
    assert [(r[0], r[1], r[5]) for r in loud(report)] == [
        ("SD101", "code:train.py:build_kestrel", line_of(npu, "half_kind(model.kind)")),
        ("SD102", "code:train.py:half_kind", line_of(npu, "def half_kind"))]


NB_GPU = '''\
import torch


def move(batch, device):
    return {k: v.to(device, non_blocking=device.type == "cuda") for k, v in batch.items()}


def check(name):
    if name not in ("cuda", "cpu"):
        raise ValueError(f"Unknown device {name}: cuda or cpu")
    return name


def reseed(seed):
    torch.manual_seed(seed)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
'''


def test_device_tests_errors_and_tolerated_failures_are_the_port(tmp_path):
    npu = edit(NB_GPU, ('non_blocking=device.type == "cuda"', 'non_blocking=device.type != "cuda"'),
               ('("cuda", "cpu")', '("cuda", "cpu", "npu")'),
               ("Unknown device {name}: cuda or cpu", "Unknown device {name}: cuda, cpu or npu"),
               ("    torch.backends.cudnn.benchmark = False\n    torch.backends.cudnn.deterministic = True\n",
                "    try:\n        torch.backends.cudnn.benchmark = False\n        torch.backends.cudnn.deterministic = True\n"
                "    except AttributeError:\n        pass\n"))
    report = pair(tmp_path, NB_GPU, npu)
    assert loud(report) == []
    said = {f.message.split(";")[0]: f.severity for f in report.findings}
    assert said.get("statement on NPU only") == "info"  # the try: one finding, info, saying why


def test_what_a_port_leaves_unported_or_changes_is_still_found(tmp_path):
    # the NPU run moves without non_blocking (device.type is "npu" there), a try that does more
    # than let the statements fail, and a check whose test (not only its words) changed
    npu = edit(NB_GPU, ("    torch.backends.cudnn.benchmark = False\n    torch.backends.cudnn.deterministic = True\n",
                        "    try:\n        torch.backends.cudnn.benchmark = False\n"
                        "        torch.backends.cudnn.deterministic = True\n"
                        "    except AttributeError:\n        torch.use_deterministic_algorithms(False)\n"),
               ("Unknown device {name}: cuda or cpu", "Unknown device {name}"))
    report = pair(tmp_path, NB_GPU, npu)
    assert [(r[0], r[1], r[5]) for r in loud(report)] == [
        ("SD207", "deterministic", line_of(npu, "use_deterministic_algorithms")),
        ("SD102", "code:train.py:reseed", line_of(npu, "    try:"))]
    # a test true on the GPU run and false on the NPU run is a difference (here of placement: info)
    npu = edit(NB_GPU, ('non_blocking=device.type == "cuda"', 'non_blocking=False'))
    report = pair(tmp_path / "2", NB_GPU, npu)
    assert loud(report) == []
    assert [(f.rule, f.gpu.value, f.npu.value, f.gpu.line) for f in report.findings] == [
        ("SD103", 'device.type == "cuda"', False, line_of(NB_GPU, "non_blocking"))]
