"""A call on one side only of the project's own helper named for that side's device, given
nothing and its result unused (`require_npu()`, `clear_npu_overflow_flag()`), is that device's
setup: info. Given an argument, or a library's function, it keeps its grade."""
from __future__ import annotations

from conftest import script_pair

GPU = """import torch
from sketchlab.amp import scale_loss


def step(model, batch, opt):
    loss = model(batch.cuda()).mean()
    scale_loss(loss).backward()
    opt.step()
"""

NPU = """import torch
import torch_npu
from sketchlab.amp import scale_loss
from sketchlab.device import reset_npu_status


def step(model, batch, opt):
    reset_npu_status()
    loss = model(batch.npu()).mean()
    scale_loss(loss).backward()
    opt.step()
"""


def rows(rep) -> list:
    return [(f.rule, f.severity, f.gpu and f.gpu.line, f.npu and f.npu.line) for f in rep.findings if f.rule != "SD104"]


def test_a_bare_call_of_a_helper_named_for_the_npu_is_its_setup(tmp_path):
    rep = script_pair(tmp_path, GPU, NPU, name="loop.py")
    assert rows(rep) == [("SD103", "info", None, 8)]


def test_given_an_argument_it_keeps_its_grade(tmp_path):
    rep = script_pair(tmp_path, GPU, NPU.replace("reset_npu_status()", "reset_npu_status(opt)"), name="loop.py")
    assert rows(rep) == [("SD102", "warning", None, 8)]
