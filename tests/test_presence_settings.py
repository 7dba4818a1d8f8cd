"""A call that is a setting by being made (`torch.compile(model)`: rules/python.yaml fact_calls
`present`) is that setting's fact; against no such call it is said once, under its key, not
again as code; both sides making it are compared argument by argument."""
from __future__ import annotations

from conftest import script_pair

GPU = "import torch\n\n\ndef build(net):\n    model = torch.compile(net, dynamic=False)\n    return model\n"


def found(rep) -> list:
    return [(f.rule, f.key, f.gpu and (f.gpu.line, f.gpu.value), f.npu and (f.npu.line, f.npu.value))
            for f in rep.findings]


def test_a_model_compiled_on_one_side_only_is_the_setting(tmp_path):
    rep = script_pair(tmp_path, GPU, GPU.replace("torch.compile(net, dynamic=False)", "net"), name="build.py")
    assert found(rep) == [("SD210", "torch_compile", (5, True), None)]


def test_both_compiled_compare_their_arguments(tmp_path):
    rep = script_pair(tmp_path, GPU, GPU.replace("dynamic=False", "dynamic=True"), name="build.py")
    assert found(rep) == [("SD102", "code:build.py:build", (5, False), (5, True))]
    assert found(script_pair(tmp_path / "same", GPU, GPU, name="build.py")) == []
