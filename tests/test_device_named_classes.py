"""A class defined on one side only whose name names that side's own device (`class
NPUAccelerator(Accelerator)` on the NPU side) is its implementation for that device: info,
its uses compared where they are written; any other class on one side only keeps its grade."""
from __future__ import annotations

from conftest import script_pair

GPU = """import lightning as L
from sketchlab.nets import Net


def main(cfg):
    trainer = L.Trainer(accelerator="gpu", devices=8, max_epochs=cfg.epochs)
    trainer.fit(Net(cfg))
"""

NPU = """import lightning as L
from lightning.pytorch.accelerators import Accelerator
from sketchlab.nets import Net


class NPUAccelerator(Accelerator):
    def setup_device(self, device):
        self.device = device

    def teardown(self):
        self.device = None


def main(cfg):
    trainer = L.Trainer(accelerator=NPUAccelerator(), devices=8, max_epochs=cfg.epochs)
    trainer.fit(Net(cfg))
"""


def rows(rep) -> list:
    return [(f.rule, f.key, f.gpu and f.gpu.line, f.npu and f.npu.line) for f in rep.findings]


def test_a_class_named_for_the_npu_on_the_npu_side_alone_is_info(tmp_path):
    rep = script_pair(tmp_path, GPU, NPU, name="fit.py")
    assert [r for r in rows(rep) if r[0] != "SD104"] == [
        ("SD102", "code:fit.py:main", 6, 15),  # its use: accelerator="gpu" against NPUAccelerator()
        ("SD103", "code:fit.py:NPUAccelerator", None, 6)]
    assert next(f for f in rep.findings if f.rule == "SD103").message.startswith(
        "class on NPU only: NPUAccelerator: named for the NPU's own device")


def test_another_class_on_one_side_keeps_its_grade(tmp_path):
    npu = NPU.replace("NPUAccelerator", "FastAccelerator")
    rep = script_pair(tmp_path, GPU, npu, name="fit.py")
    assert ("SD102", "code:fit.py:FastAccelerator", None, 6) in rows(rep)
