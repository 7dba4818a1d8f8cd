"""A config written as a mapping type built from one dict literal (`config = EasyDict({...})`,
rules/python.yaml generic_keywords.mapping_types) is read as a module-level dict literal is:
its keys are settings, nested ones too; any other call of a dict is code."""
from __future__ import annotations

from conftest import script_pair

CONFIG = '''from easydict import EasyDict as ed

config = ed({{
    "device_target": "{dev}",
    "batch_size": {bs},
    "optim": ed({{"weight_decay": {wd}}}),
    "epoch_size": 200,
}})
'''


def found(rep) -> list:
    return [(f.rule, f.key, f.gpu and (f.gpu.value, f.gpu.line), f.npu and (f.npu.value, f.npu.line))
            for f in rep.findings if f.severity != "info"]


def test_a_mapping_built_from_a_dict_literal_is_read_as_settings(tmp_path):
    rep = script_pair(tmp_path, CONFIG.format(dev="GPU", bs=4, wd=0.01), CONFIG.format(dev="Ascend", bs=8, wd=0.05),
                      name="config.py")
    assert found(rep) == [("SD203", "micro_batch_size", (4, 5), (8, 5)), ("SD206", "weight_decay", (0.01, 6), (0.05, 6))]


def test_the_same_settings_are_silent(tmp_path):
    rep = script_pair(tmp_path, CONFIG.format(dev="GPU", bs=4, wd=0.01), CONFIG.format(dev="Ascend", bs=4, wd=0.01),
                      name="config.py")
    assert found(rep) == []


def test_another_call_of_a_dict_is_code(tmp_path):
    """A function of the project given a dict builds what its code says: not read as settings."""
    gpu = CONFIG.format(dev="GPU", bs=4, wd=0.01).replace("from easydict import EasyDict as ed", "from kiln import make as ed")
    npu = CONFIG.format(dev="Ascend", bs=8, wd=0.01).replace("from easydict import EasyDict as ed",
                                                              "from kiln import make as ed")
    rep = script_pair(tmp_path, gpu, npu, name="config.py")
    assert [(f[0], f[1]) for f in found(rep)] == [("SD102", "code:config.py:<module>")]
