"""A string (or an f-string with the same expressions) that differs only by the device it
names as a word of its own (`"bash run.sh GPU 4"` against `"bash run.sh Ascend 4"`) is the port;
any other word that differs keeps it a difference."""
from __future__ import annotations

from conftest import script_pair

GPU = 'import os\n\n\ndef stage(path):\n    rc = os.system(f"bash {path}/run.sh GPU 4")\n    return os.system("bash check.sh gpu")\n'
NPU = 'import os\n\n\ndef stage(path):\n    rc = os.system(f"bash {path}/run.sh Ascend 4")\n    return os.system("bash check.sh npu")\n'


def test_a_command_naming_each_sides_device_is_the_port(tmp_path):
    rep = script_pair(tmp_path, GPU, NPU, name="stage.py")
    assert [f.rule for f in rep.findings] == []
    assert sorted((m.gpu.line, m.npu.line) for m in rep.masked) == [(5, 5), (6, 6)]


def test_another_word_or_expression_is_a_difference(tmp_path):
    npu = NPU.replace("Ascend 4", "Ascend 8").replace("bash check.sh npu", "bash check.sh cpu")
    rep = script_pair(tmp_path, GPU, npu, name="stage.py")
    assert [(f.rule, f.gpu.line, f.npu.line, f.gpu.value, f.npu.value) for f in rep.findings] == [
        ("SD102", 5, 5, 'f"bash {path}/run.sh GPU 4"', 'f"bash {path}/run.sh Ascend 8"'),
        ("SD102", 6, 6, "bash check.sh gpu", "bash check.sh cpu")]
    rep = script_pair(tmp_path / "x", GPU, NPU.replace("{path}", "{path.parent}"), name="stage.py")
    assert [(f.rule, f.gpu.line) for f in rep.findings] == [("SD102", 5)]
