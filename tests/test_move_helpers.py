"""A function imported from another module and named for a move to the device
(`place_on_device(x, device)`, rules/devices.yaml `plumbing.moves`) is the port of `x.cuda()`:
masked when it moves the same value to the run's device, compared as before otherwise."""
from __future__ import annotations

from conftest import script_pair

GPU = """import torch


def evaluate(model, loader, args):
    model.eval()
    total = 0.0
    for images, texts, masks in loader:
        images = images.cuda(non_blocking=True)
        texts = texts.cuda(non_blocking=True)
        masks = masks.cuda(non_blocking=True).unsqueeze(1)
        out = model(images, texts)
        total += float((out - masks).abs().mean())
        total += float(out.sum())
        total += float(out.max())
        total += float(out.min())
        total += float(out.mean())
    return total
"""

NPU = """import torch
import torch_npu
from sketchlab.runtime import pick_accelerator, place_on_device


def evaluate(model, loader, args):
    device = pick_accelerator(int(getattr(args, "npu", 0)))
    model.eval()
    total = 0.0
    for images, texts, masks in loader:
        images = place_on_device(images, device)
        texts = place_on_device(texts, device=device, non_blocking=True)
        masks = place_on_device(masks, device).unsqueeze(1)
        out = model(images, texts)
        total += float((out - masks).abs().mean())
        total += float(out.sum())
        total += float(out.max())
        total += float(out.min())
        total += float(out.mean())
    return total
"""


def found(rep) -> list:
    return [(f.rule, f.severity, f.key, f.gpu and (f.gpu.line, f.gpu.value), f.npu and (f.npu.line, f.npu.value))
            for f in rep.findings]


def test_a_move_helper_with_the_same_value_and_the_run_device_is_the_port(tmp_path):
    rep = script_pair(tmp_path, GPU, NPU, name="engine.py")
    assert [(m.rule, m.gpu.line, m.npu.line) for m in rep.masked if m.gpu is not None] == \
        [("SD022", 8, 11), ("SD022", 9, 12), ("SD022", 10, 13)]
    assert [f for f in found(rep) if f[1] != "info"] == []


def test_another_value_or_no_device_is_still_a_difference(tmp_path):
    npu = NPU.replace("place_on_device(images, device)", "place_on_device(images, torch.float16)").replace(
        "place_on_device(masks, device)", "place_on_device(texts, device)")
    rep = script_pair(tmp_path, GPU, npu, name="engine.py")
    assert [f for f in found(rep) if f[1] != "info"] == [
        ("SD102", "warning", "code:engine.py:evaluate", (8, "images.cuda(non_blocking=True)"),
         (11, "place_on_device(images, torch.float16)")),
        ("SD102", "warning", "code:engine.py:evaluate", (10, "masks.cuda(non_blocking=True)"),
         (13, "place_on_device(texts, device)"))]


def test_a_helper_of_the_file_is_read_not_named(tmp_path):
    """Defined in the file, its body says what it does (here: a cast), never its name."""
    npu = NPU.replace("from sketchlab.runtime import pick_accelerator, place_on_device\n",
                      "from sketchlab.runtime import pick_accelerator\n\n\ndef place_on_device(x, device):\n"
                      "    return x.half()\n")
    rep = script_pair(tmp_path, GPU, npu, name="engine.py")
    assert [(f[0], f[1], f[3] and f[3][0], f[4] and f[4][0]) for f in found(rep) if f[1] != "info"] == [
        ("SD102", "warning", 8, 15), ("SD102", "warning", 9, 16), ("SD102", "warning", 10, 17),
        ("SD101", "error", None, 6)]
