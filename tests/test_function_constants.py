"""Constants a function sets at its top level (`def main(): batch_size = 32`) are settings under
the keys their names spell, as module-level ones are: a changed one is said once, under its key;
a name assigned more than once there, or given a computed value, stays code."""
from __future__ import annotations

from conftest import script_pair

GPU = """import torch
from sketchlab.data import make_loader, make_net


def main():
    batch_size = 32
    epochs = 10
    loader = make_loader(batch_size)
    model = make_net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(epochs):
        for x in loader:
            loss = model(x.cuda()).mean()
            loss.backward()
            opt.step()
"""


def found(rep) -> list:
    return [(f.rule, f.key, f.gpu and (f.gpu.line, f.gpu.value), f.npu and (f.npu.line, f.npu.value))
            for f in rep.findings if f.severity != "info"]


def test_a_constant_of_a_function_is_its_setting(tmp_path):
    npu = GPU.replace("batch_size = 32", "batch_size = 16").replace("x.cuda()", "x.npu()")
    rep = script_pair(tmp_path, GPU, npu, name="train.py")
    assert found(rep) == [("SD203", "micro_batch_size", (6, 32), (6, 16))]


def test_a_constant_removed_on_one_side_is_the_setting_set_on_one_side(tmp_path):
    npu = GPU.replace("    epochs = 10\n", "").replace("range(epochs)", "range(10)").replace("x.cuda()", "x.npu()")
    rep = script_pair(tmp_path, GPU, npu, name="train.py")
    assert found(rep)[0] == ("SD202", "num_train_epochs", (7, 10.0), None)


def test_a_constant_that_names_no_setting_stays_code(tmp_path):
    gpu = GPU.replace("    epochs = 10\n", "    epochs = 10\n    arch = 'small'\n").replace("make_net()", "make_net(arch)")
    npu = gpu.replace("arch = 'small'", "arch = 'large'").replace("x.cuda()", "x.npu()")
    rep = script_pair(tmp_path, gpu, npu, name="train.py")
    assert [(f[0], f[1]) for f in found(rep)] == [("SD102", "code:train.py:main")]
