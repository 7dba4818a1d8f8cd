"""A Python file saved with Windows line endings (`\\r\\n`) on one side is the same program:
CPython reads `\\r\\n` and a lone `\\r` as a newline, in string literals too. The port is
silent, a function moved is still the same function, and a drift is found at its lines.
Made-up names."""
from __future__ import annotations

from conftest import script_pair

GPU = ('import os\n\n\ndef free_port():\n    return int(os.environ.get("PORT_HINT", "0"))\n\n\n'
       'def worker(rank, lr=3e-4):\n    return rank, lr\n\n\n'
       'def launch(fn):\n    return fn(free_port())\n')
# the NPU file: free_port moved after its caller, every line ended by \r\n, no newline at the end
NPU = ('import os\n\n\ndef worker(rank, lr=3e-4):\n    return rank, lr\n\n\n'
       'def launch(fn):\n    return fn(free_port())\n\n\n'
       'def free_port():\n    return int(os.environ.get("PORT_HINT", "0"))').replace("\n", "\r\n")


def rows(rep):
    return sorted((f.rule, str(f.severity), f.message, f.gpu.value if f.gpu else None, f.npu.value if f.npu else None,
                   f.gpu.line if f.gpu else None, f.npu.line if f.npu else None) for f in rep.findings)


def test_windows_line_endings_on_one_side_are_no_difference(tmp_path):
    rep = script_pair(tmp_path, GPU, NPU, name="launch.py")
    assert [(f.rule, str(f.severity), f.gpu.line, f.npu.line) for f in rep.findings] == [("SD103", "info", 4, 12)]
    assert rep.findings[0].message.startswith("statement moved")
    same = script_pair(tmp_path / "same", GPU, GPU.replace("\n", "\r\n"), name="launch.py")
    assert same.findings == []


def test_a_drift_in_a_file_with_windows_line_endings_is_found_at_its_line(tmp_path):
    rep = script_pair(tmp_path, GPU, NPU.replace("lr=3e-4", "lr=1e-4"), name="launch.py")
    loud = [r for r in rows(rep) if r[1] != "info"]
    assert loud == [("SD101", "error", "def worker: parameter lr differs", 0.0003, 0.0001, 8, 4)]
