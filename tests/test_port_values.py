"""Issue 39, round 8: a value that is each run's own device or backend is the port, whatever the
setting is called; how a job's processes meet is not what it computes. Made-up names."""
from __future__ import annotations

from conftest import script_pair


def rows(rep):
    return sorted(((f.rule, str(f.severity), f.key, f.gpu.value if f.gpu else None, f.npu.value if f.npu else None,
                    f.gpu.line if f.gpu else None, f.npu.line if f.npu else None) for f in rep.findings), key=repr)


def masked(rep):
    return sorted((m.rule, m.gpu.line if m.gpu else None, m.npu.line if m.npu else None) for m in rep.masked)


LAUNCH = "python fit.py{target} --lr 1e-4\n"


def test_a_setting_whose_value_is_the_sides_own_device_is_the_port(tmp_path):
    rep = script_pair(tmp_path / "alone", LAUNCH.format(target=" --runs_on GPU"), LAUNCH.format(target=""))
    assert rows(rep) == [] and masked(rep) == [("SD015", 1, None)]
    rep = script_pair(tmp_path / "both", LAUNCH.format(target=" --runs_on GPU"),
                      LAUNCH.format(target=" --runs_on Ascend"))
    assert rows(rep) == [] and masked(rep) == [("SD015", 1, 1)]
    # another device on the NPU side is a difference
    rep = script_pair(tmp_path / "cpu", LAUNCH.format(target=" --runs_on GPU"), LAUNCH.format(target=" --runs_on CPU"))
    assert rows(rep) == [("SD220", "warning", "runs_on", "GPU", "CPU", 1, 1)]


ENV = "export KESTREL_COMM={comm}\ntorchrun fit.py --lr 1e-4\n"


def test_an_environment_value_that_is_each_runs_backend_is_the_port(tmp_path):
    rep = script_pair(tmp_path / "port", ENV.format(comm="nccl"), ENV.format(comm="hccl"))
    assert rows(rep) == [] and masked(rep) == [("SD011", 1, 1)]
    rep = script_pair(tmp_path / "gloo", ENV.format(comm="nccl"), ENV.format(comm="gloo"))
    assert rows(rep) == [("SD301", "warning", "env:KESTREL_COMM", "nccl", "gloo", 1, 1)]


MEET = ("import torch.distributed as dist\n\n\ndef join(rank, world):\n"
        "    dist.init_process_group(backend=\"{b}\"{extra}, rank=rank, world_size=world)\n")


def test_how_the_processes_meet_is_not_what_they_compute(tmp_path):
    rep = script_pair(tmp_path / "meet", MEET.format(b="nccl", extra=""),
                      MEET.format(b="hccl", extra=", init_method=\"env://\""), name="boot.py")
    assert rows(rep) == [("SD103", "info", "code:boot.py:join", None, "env://", 5, 5)]
    assert rep.findings[0].message.endswith("reaches nothing training computes (how the job's processes meet)")
    # the job's size given on one side only is still said
    rep = script_pair(tmp_path / "size", MEET.format(b="nccl", extra=""),
                      MEET.format(b="hccl", extra="").replace(", world_size=world", ""), name="boot.py")
    assert rows(rep) == [("SD102", "warning", "code:boot.py:join", "world", None, 5, 5)]


PICK = "from kit.parse import {fn}\n\n\ndef pick(devices):\n    return {fn}(devices{extra})\n"


def test_a_device_named_function_without_its_device_named_keyword_is_the_port(tmp_path):
    rep = script_pair(tmp_path / "port", PICK.format(fn="parse_gpu_ids", extra=", include_cuda=True"),
                      PICK.format(fn="parse_npu_ids", extra=""), name="pick.py")
    assert [r[:2] for r in rows(rep) if r[1] != "info"] == []
    assert [m.rule for m in rep.masked] == ["SD031"]
    rep = script_pair(tmp_path / "other", PICK.format(fn="parse_gpu_ids", extra=", include_cuda=True"),
                      PICK.format(fn="parse_npu_ids", extra=", strict=True"), name="pick.py")
    assert [r for r in rows(rep) if r[1] != "info"] == [
        ("SD102", "warning", "code:pick.py:pick", "parse_gpu_ids(devices, include_cuda=True)",
         "parse_npu_ids(devices, strict=True)", 5, 5)]


SEES = "export {var}={ids}\npython fit.py --lr 1e-4\n"


def test_another_device_as_many_devices_is_placement_another_count_is_said(tmp_path):
    rep = script_pair(tmp_path / "same", SEES.format(var="CUDA_VISIBLE_DEVICES", ids="0"),
                      SEES.format(var="ASCEND_RT_VISIBLE_DEVICES", ids="1"))
    assert rows(rep) == [] and masked(rep) == [("SD022", 1, 1)]
    rep = script_pair(tmp_path / "more", SEES.format(var="CUDA_VISIBLE_DEVICES", ids="0"),
                      SEES.format(var="ASCEND_RT_VISIBLE_DEVICES", ids="1,2"))
    assert rows(rep) == [("SD301", "warning", "env:CUDA_VISIBLE_DEVICES", "0", "1,2", 1, 1)]


COMM = ("import torch\n\n\nclass {name}(object):\n    def __init__(self, group=None):\n        self.group = group\n\n"
        "    def reduce(self, x):\n        return x * {k}\n")


def test_a_class_named_for_each_runs_collective_library_is_the_port(tmp_path):
    """`class RingNcclComm` against `class RingHcclComm`: each accelerator's library in the name,
    the same class; its body still compared, another library's name (gloo) still said."""
    rep = script_pair(tmp_path, COMM.format(name="RingNcclComm", k=2), COMM.format(name="RingHcclComm", k=2),
                      name="comm.py")
    assert rows(rep) == [] and masked(rep) == [("SD022", 4, 4)]
    drift = script_pair(tmp_path / "d", COMM.format(name="RingNcclComm", k=2), COMM.format(name="RingHcclComm", k=3),
                        name="comm.py")
    assert rows(drift) == [("SD102", "warning", "code:comm.py:RingNcclComm.reduce", 2, 3, 9, 9)]
    other = script_pair(tmp_path / "o", COMM.format(name="RingNcclComm", k=2), COMM.format(name="RingGlooComm", k=2),
                        name="comm.py")
    assert rows(other) == [("SD102", "warning", "code:comm.py:RingNcclComm", "RingNcclComm", "RingGlooComm", 4, 4)]


SETUP = ("import torch\nimport torch.distributed as dist\n{imp}\n\ndef setup(local_rank):\n"
         "    {call}\n    dist.init_process_group(backend=\"nccl\")\n    return local_rank\n")


def test_a_function_imported_under_the_device_namespaces_name_stands_in_for_it(tmp_path):
    """`from kit.device import set_device; set_device(r)` against `torch.cuda.set_device(r)`: the
    same function of the run's device (where, not what); another function of that module is not."""
    gpu = SETUP.format(imp="", call="torch.cuda.set_device(local_rank)")
    npu = SETUP.format(imp="from kit.device import set_device\n", call="set_device(local_rank)").replace("nccl", "hccl")
    rep = script_pair(tmp_path, gpu, npu, name="setup.py")
    assert rows(rep) == [("SD104", "info", "code:setup.py:<module>", None, "kit.device.set_device", None, 3)]
    assert masked(rep) == [("SD005", 7, 8), ("SD022", 6, 7)]
    drift = script_pair(tmp_path / "d", gpu, npu.replace("set_device", "seed_all"), name="setup.py")
    assert [r for r in rows(drift) if r[1] != "info"] == [
        ("SD102", "warning", "code:setup.py:setup", "torch.cuda.set_device(local_rank)", "seed_all(local_rank)", 6, 7)]
