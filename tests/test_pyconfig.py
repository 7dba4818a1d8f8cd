"""Python configs written as dict(...) assignments (lang/pyconfig.py, rules/pyconfig.yaml), and
package lists recognised by content (checks/libraries.looks_like_package_list)."""
from __future__ import annotations

from scriptdiff.api import diff
from scriptdiff.model import SideContext
from scriptdiff.lang import pyconfig
from scriptdiff.model import Options
from scriptdiff.ruleset.registry import detect_kind
from scriptdiff.inputs.sources import Source

CFG = '''"""schedule"""
max_epochs = {ep}
optim_wrapper = dict(type='AmpOptimWrapper', optimizer=dict(type='AdamW', lr={lr}, betas=(0.9, 0.999)))
train_cfg = dict(by_epoch=True, max_epochs=max_epochs)
train_dataloader = dict(batch_size=2, num_workers={nw})
work_dir = './work_dirs/{wd}'
'''


def cfg(ep=12, lr="1e-4 * 2", nw=4, wd="a"):
    return CFG.format(ep=ep, lr=lr, nw=nw, wd=wd)


def pair(tmp_path, gpu, npu, name="sched.py"):
    out = []
    for side, text in (("gpu", gpu), ("npu", npu)):
        p = tmp_path / side / "configs" / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
        out.append(str(p))
    return diff(*out, Options(use_cache=False))


def kind(text: str, name: str) -> str:
    return detect_kind(Source(name=name, data=text.encode()))


def test_detection_by_content():
    assert kind(cfg(), "sched.py") == "pyconfig"
    assert kind("model = dict(type='X')\ndef build():\n    return model\n", "cfg.py") == "python"
    assert kind("import torch\nmodel = dict(a=1)\ntorch.manual_seed(1)\n", "cfg.py") == "python"
    assert kind("lr = 1e-4\nepochs = 3\n", "cfg.py") == "python"  # no dict: a plain module
    assert kind("with read_base():\n    from .base import *\nmodel = dict(a=1)\n", "cfg.py") == "pyconfig"


def test_changed_lr_and_epochs_with_lines(tmp_path):
    rep = pair(tmp_path, cfg(), cfg(ep=24, lr="1e-4", nw=8, wd="b"))
    got = sorted((f.rule, f.severity, f.key, f.gpu.value, f.npu.value, f.gpu.line, f.npu.line) for f in rep.findings)
    assert got == [
        ("SD202", "error", "lr", 0.0002, 0.0001, 3, 3),
        ("SD202", "error", "num_train_epochs", 12.0, 24.0, 4, 4),
        ("SD221", "info", "save", "./work_dirs/a", "./work_dirs/b", 6, 6),
        ("SD221", "info", "train_dataloader.num_workers", 4, 8, 5, 5),
    ]
    lr = next(f for f in rep.findings if f.key == "lr")
    assert lr.gpu.via == "optim_wrapper.optimizer.lr, mmengine config (Python)"


def test_faithful_port_is_silent(tmp_path):
    rep = pair(tmp_path, cfg(), cfg(lr="0.0002"))
    assert rep.findings == [] and rep.exit_code() == 0


def test_old_mmcv_style_maps_through_aliases(tmp_path):
    text = "optimizer = dict(type='SGD', lr={}, momentum=0.9)\ndata = dict(samples_per_gpu=2)\ntotal_epochs = 12\n"
    rep = pair(tmp_path, text.format(0.02), text.format(0.01), name="faster_rcnn.py")
    assert [(f.rule, f.key, f.gpu.value, f.npu.value, f.gpu.line) for f in rep.findings] == [
        ("SD202", "lr", 0.02, 0.01, 1)]


def test_base_configs_are_said_not_merged(tmp_path):
    text = "_base_ = ['../_base_/models/a.py']\noptimizer = dict(lr={})\n"
    rep = pair(tmp_path, text.format(0.02), text.format(0.01), name="child.py")
    said = "line 1: inherits _base_ config(s) ../_base_/models/a.py: their settings are not merged or compared"
    assert [(a.status, a.unread) for a in rep.inputs] == [("not understood", [said])] * 2
    assert sorted((f.rule, f.key) for f in rep.findings) == [
        ("SD154", f"input:{a.path}") for a in rep.inputs] + [("SD202", "lr")]


def test_broken_file_is_one_line_error():
    ex = pyconfig.extract(Source(name="bad.py", data=b"model = dict(\n"), SideContext("gpu"))
    assert [(e.message, e.fatal) for e in ex.errors] == [
        ("not valid Python: line 1: '(' was never closed; not compared", True)]


def test_null_bytes_are_one_line_error():
    ex = pyconfig.extract(Source(name="bad.py", data=b"m = dict(a=1)\x00\n"), SideContext("gpu"))
    assert [(e.message, e.fatal) for e in ex.errors] == [
        ("not valid Python: source code string cannot contain null bytes; not compared", True)]


def test_non_literal_values_are_kept_as_text():
    ex = pyconfig.extract(Source(name="c.py", data=b"import os\nmodel = dict(root=os.path.join('a', 'b'), n=-3)\n"),
                          SideContext("gpu"))
    assert sorted((f.key, f.value, f.line) for f in ex.facts) == [
        ("model.n", -3, 2), ("model.root", "os.path.join('a', 'b')", 2)]


# ---------------------------------------------------------------- package lists by content

def test_package_lists_recognised_by_content():
    freeze = "torch==2.1.0\nnumpy==1.26.4\ntransformers==4.40.0\n"
    assert kind(freeze, "env_gpu.txt") == "requirements"
    assert kind("$ pip freeze\n" + freeze + "accelerate==0.30.0\n", "freeze.log") == "requirements"
    assert kind("------------------------ arguments ------------------------\n  lr ...... 1e-4\n", "train.log") == "log"
    assert kind("step 1 loss 2.3\nstep 2 loss 2.1\n", "train.log") == "log"
    assert kind("some notes\nabout the run\n", "notes.txt") == "text"
    assert kind("$ pip freeze\ntorch==2.1.0\n", "pip_session.log") == "log"  # one pin is not a package list
