"""Issue 39: a branch on the run's communication backend held by the object itself
(`self.comm_backend_name == "nccl"`), each device's implementation of one operation called by
its device-named name (SD031), and a check that the process group is up: the port."""
from __future__ import annotations

from test_python_diff import pair_of

GPU = '''import torch.distributed as dist


class OrbitAdam:
    def __init__(self, mpu, backend="nccl"):
        self.comm_backend_name = backend
        assert dist.is_initialized()
        if self.comm_backend_name == "nccl":
            from orbit.comm.nccl import NcclPacker
            self.packer = NcclPacker(mpu, 8)
        elif self.comm_backend_name == "mpi":
            from orbit.comm.mpi import MpiPacker
            self.packer = MpiPacker(mpu, 8)
        self.lr = 0.1
'''

NPU = '''import torch.distributed as dist


class OrbitAdam:
    def __init__(self, mpu, backend="nccl"):
        self.comm_backend_name = backend
        assert dist.is_initialized() == True, "start the process group first"
        if self.comm_backend_name == "nccl":
            from orbit.comm.nccl import NcclPacker
            self.packer = NcclPacker(mpu, 8)
        elif self.comm_backend_name == "mpi":
            from orbit.comm.mpi import MpiPacker
            self.packer = MpiPacker(mpu, 8)
        elif self.comm_backend_name == "hccl":
            from orbit.comm.hccl import HcclPacker
            self.packer = HcclPacker(mpu, {n})
        self.lr = 0.1
'''


def loud(r):
    return [(f.rule, f.key, f.gpu and f.gpu.line, f.npu and f.npu.line, f.message) for f in r.findings
            if f.severity != "info"]


def test_each_backends_branch_and_its_device_named_call_are_the_port(tmp_path):
    r = pair_of(tmp_path, GPU, NPU.format(n=8), "opt.py")[2]
    assert loud(r) == []
    assert [(m.rule, m.gpu.line, m.npu.line) for m in r.masked if m.rule == "SD031"] == [("SD031", 10, 16)]
    assert [(f.rule, f.gpu.line, f.npu.line, f.message) for f in r.findings if f.rule == "SD103"] == [
        ("SD103", 7, 7, "statement differs (2 places in it); reaches nothing training computes (a device check)")]


def test_another_argument_to_the_npus_implementation_is_a_difference(tmp_path):
    r = pair_of(tmp_path, GPU, NPU.format(n=4), "opt.py")[2]
    assert loud(r) == [("SD101", "code:opt.py:OrbitAdam.__init__", 10, 16,
                        "a different function is called (orbit.comm.nccl.NcclPacker on GPU)")]
    assert not any(m.rule == "SD031" for m in r.masked)


def test_a_check_that_forbids_a_distributed_run_is_no_setup_check(tmp_path):
    """`assert not dist.is_initialized()` dropped by the NPU side lets a distributed run go on
    that the GPU side refuses: it stays loud."""
    gpu = "import torch.distributed as dist\n\n\ndef orbit_eval(cfg):\n    assert not dist.is_initialized()\n" \
          "    return cfg.steps\n"
    npu = "import torch.distributed as dist\n\n\ndef orbit_eval(cfg):\n    return cfg.steps\n"
    r = pair_of(tmp_path, gpu, npu, "ev.py")[2]
    assert loud(r) == [("SD102", "code:ev.py:orbit_eval", 5, None, "statement on GPU only")]
