"""A collective backend passed by position on one side only (`init("nccl")` against `init()`,
whose default is the run's own device's backend) is device plumbing, masked; another backend
(`gloo`, the host's) stays a difference."""
from __future__ import annotations

from conftest import script_pair

GPU = 'from orbit.comm import start_group\nimport orbit\n\nstart_group("nccl")\norbit.configure(workers=8)\n'
NPU = 'from orbit.comm import start_group\nimport orbit\n\nstart_group()\norbit.configure(workers=8)\n'


def test_this_sides_backend_given_by_position_is_plumbing(tmp_path):
    rep = script_pair(tmp_path, GPU, NPU, name="launch.py")
    assert [f.rule for f in rep.findings] == []
    assert [(m.rule, m.gpu.line, m.npu and m.npu.line) for m in rep.masked] == [("SD022", 4, None)]


def test_another_backend_stays_a_difference(tmp_path):
    rep = script_pair(tmp_path, GPU.replace('"nccl"', '"gloo"'), NPU, name="launch.py")
    assert [(f.rule, f.key, f.gpu.line, f.gpu.value, f.npu.value, f.message) for f in rep.findings] == [
        ("SD102", "code:launch.py:<module>", 4, "gloo", None, "orbit.comm.start_group: argument 1 is given on GPU only")]
