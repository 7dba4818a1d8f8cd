"""msprobe dumps that are hostile as files (issue 40): a saved tensor that is a FIFO (or a link
to a kernel file) is refused before anything opens it (zipfile.is_zipfile opened it first and
blocked), and a dump.json holding a 100,000-digit integer is one line naming the file, not an
internal error. Field types of dumped statistics are another branch's (h40-secrets)."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fuzz"))
from classes_dumps import _tensor  # noqa: E402  (the fuzzer's dumped tensor: one shape for both)

BASE = Path(__file__).resolve().parent.parent / "fixtures" / "dumps" / "base" / "dump" / "step0" / "rank0"


def _tensor_dump(folder: Path, mx: float, name: str) -> None:
    (folder / "dump_tensor_data").mkdir(parents=True)
    calls = {"Functional.linear.0.forward": {"input_args": [_tensor(1.0)], "input_kwargs": {},
                                             "output": [_tensor(mx, name)]}}
    (folder / "dump.json").write_text(json.dumps({"task": "tensor", "level": "L1", "framework": "pytorch",
                                                  "dump_data_dir": None, "data": calls}))


def test_a_fifo_saved_tensor_is_refused_unopened(tmp_path, cli):
    for side, mx in (("gpu", 1.0), ("npu", 9.0)):
        _tensor_dump(tmp_path / side, mx, "t.pt")
    os.mkfifo(tmp_path / "gpu" / "dump_tensor_data" / "t.pt")  # nothing ever writes to it
    (tmp_path / "npu" / "dump_tensor_data" / "t.pt").write_bytes(b"not a zip")
    code, out, err = cli("dumps", str(tmp_path / "gpu"), str(tmp_path / "npu"))
    assert code == 1
    assert (f"scriptdiff: {tmp_path / 'gpu'}/dump_tensor_data/t.pt: is a FIFO (named pipe), not a regular file (only "
            f"regular files are read: save its content to a file and give that file)") in err.splitlines()
    assert "SD801 dump:Functional.linear.0.forward" in out  # the statistics still compared


def test_a_saved_tensor_linked_to_a_kernel_file_is_refused_unopened(tmp_path, cli):
    for side, mx in (("gpu", 1.0), ("npu", 9.0)):
        _tensor_dump(tmp_path / side, mx, "t.pt")
        os.symlink("/proc/kmsg" if os.path.exists("/proc/kmsg") else "/proc/self/status",
                   tmp_path / side / "dump_tensor_data" / "t.pt")
    code, out, err = cli("dumps", str(tmp_path / "gpu"), str(tmp_path / "npu"))
    assert code == 1
    assert (f"scriptdiff: {tmp_path / 'gpu'}/dump_tensor_data/t.pt: is a kernel interface on the proc "
            f"pseudo-filesystem, not a regular file (reading it may block) (only regular files are read: save its "
            f"content to a file and give that file)") in err.splitlines()


def test_a_hundred_thousand_digit_integer_names_the_dump_in_one_line(tmp_path, cli):
    for side in ("gpu", "npu"):
        (tmp_path / side).mkdir()
        for name in ("dump.json", "stack.json"):
            (tmp_path / side / name).write_bytes((BASE / name).read_bytes())
    text = (tmp_path / "npu" / "dump.json").read_text()
    at = text.index('"Max":') + len('"Max":')
    (tmp_path / "npu" / "dump.json").write_text(text[:at] + "1" * 100_000 + ',"x":' + text[at:])
    call = text.index('{"input_args"')  # where the call that holds it starts
    code, out, err = cli("dumps", str(tmp_path / "gpu"), str(tmp_path / "npu"))
    assert code == 2
    assert "internal error" not in err and "set_int_max_str_digits" not in err
    assert err.splitlines()[0] == (f"scriptdiff: {tmp_path / 'npu'}/dump.json: not valid JSON: holds a number of "
                                   f"100,000 digits, longer than the 4,300 digits a number may have; shorten it, or "
                                   f"quote it if it is not meant as a number (at character {call + 1})")
