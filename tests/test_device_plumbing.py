"""Device plumbing is the port (issue 39, docs/devices.md): two statements equal once every value
of the device kind is one abstract device are masked (SD022), whatever the helpers are called;
whatever is not device plumbing is still found.

Each shape has a faithful NPU port (silent: no warning or error, the plumbing listed as masked)
and a drifted one (its one finding, exact: rule, key, both values, both lines). The scripts and
their helpers are made up (`accel_env`, `get_comm_backend`, `wrap_replica`, ...)."""
from __future__ import annotations

import pytest
from test_device_branches import edit, line_of, loud, pair

GPU = '''\
"""Train a small classifier on one node with DDP (a made-up script)."""
import argparse
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def get_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--accel", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--lr", type=float, default=3e-4)
    return parser.parse_args()


def setup(local_rank):
    torch.cuda.set_device(local_rank)
    dist.init_process_group(backend="nccl")
    n_gpus = torch.cuda.device_count()
    return n_gpus


def train(model, loader, local_rank, n_gpus, args):
    model = DDP(model.cuda(), device_ids=[local_rank])
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    for batch in loader:
        batch = batch.to("cuda")
        with torch.cuda.amp.autocast(dtype=torch.bfloat16):
            loss = model(batch).mean() / n_gpus
        loss.backward()
        opt.step()
        opt.zero_grad()
    torch.cuda.empty_cache()


def main():
    args = get_args()
    local_rank = int(os.environ["LOCAL_RANK"])
    n_gpus = setup(local_rank)
    train(build_model(), build_loader(), local_rank, n_gpus, args)
'''


def plumbing(report) -> list:
    """(GPU line, NPU line) of each SD022 mask."""
    return sorted(((m.gpu.line if m.gpu else None, m.npu.line if m.npu else None)
                   for m in report.masked if m.rule == "SD022"), key=str)


# Each shape: the faithful NPU edits, the drift planted on top of them, and the drifted finding
# as (rule, key, GPU value, NPU value, GPU needle, NPU needle): the needles give the lines.
SHAPES = {
    "a device string against an object's device attribute": (
        [("import torch.distributed as dist\n", "import torch.distributed as dist\nfrom accel_env import platform\n"),
         ('batch = batch.to("cuda")', "batch = batch.to(platform.device_type)")],
        ("batch.to(platform.device_type)", 'batch.to("cpu")'),
        ("SD101", "code:train.py:train", "cuda", "cpu", 'batch.to("cuda")', 'batch.to("cpu")')),
    "a device string against f\"npu:{rank}\"": (
        [('batch = batch.to("cuda")', 'batch = batch.to(f"npu:{local_rank}")')],
        ('batch.to(f"npu:{local_rank}")', 'batch.to(f"cpu:{local_rank}")'),
        ("SD101", "code:train.py:train", "cuda", 'f"cpu:{local_rank}"', 'batch.to("cuda")', "batch.to(f")),
    "the backend against a helper of the file returning it": (
        [("def setup(local_rank):", 'def get_comm_backend():\n    return "hccl"\n\n\ndef setup(local_rank):'),
         ('dist.init_process_group(backend="nccl")', "dist.init_process_group(backend=get_comm_backend())")],
        ('return "hccl"', 'return "gloo"'),
        ("SD102", "code:train.py:setup", "nccl", "get_comm_backend()", 'backend="nccl"', "backend=get_comm_backend()")),
    "a device count renamed with the device": (
        [("n_gpus", "n_npus")] * 0 + [("    n_gpus = torch.cuda.device_count()\n    return n_gpus\n",
                                       "    n_npus = torch.npu.device_count()\n    return n_npus\n"),
                                      ("def train(model, loader, local_rank, n_gpus, args):",
                                       "def train(model, loader, local_rank, n_npus, args):"),
                                      ("loss = model(batch).mean() / n_gpus", "loss = model(batch).mean() / n_npus"),
                                      ("    n_gpus = setup(local_rank)\n    train(build_model(), build_loader(), local_rank, n_gpus, args)",
                                       "    n_npus = setup(local_rank)\n    train(build_model(), build_loader(), local_rank, n_npus, args)")],
        ("loss = model(batch).mean() / n_npus", "loss = model(batch).mean() / (2 * n_npus)"),
        ("SD101", "code:train.py:train", "n_gpus", "2 * n_npus)", "/ n_gpus", "/ (2 * n_npus)")),
    "DDP with device_ids against DDP without": (
        [("model = DDP(model.cuda(), device_ids=[local_rank])", "model = DDP(model.npu())")],
        ("model = DDP(model.npu())", "model = DDP(model.npu(), find_unused_parameters=True)"),
        ("SD102", "code:train.py:train", None, True, "model = DDP(", "model = DDP(")),
    "set_device moved after the process group": (
        [("    torch.cuda.set_device(local_rank)\n    dist.init_process_group(backend=\"nccl\")\n",
          "    dist.init_process_group(backend=\"hccl\")\n    torch.npu.set_device(local_rank)\n")],
        ("    return n_gpus\n", "    return n_gpus * 2\n"),
        ("SD102", "code:train.py:setup", "n_gpus", "n_gpus * 2", "return n_gpus", "return n_gpus * 2")),
    "an assert on the device count": (
        [("    n_gpus = torch.cuda.device_count()\n", "    n_gpus = torch.cuda.device_count()\n"
                                                    "    assert torch.npu.device_count() >= 1, \"no NPU visible\"\n")],
        ("    assert torch.npu.device_count() >= 1, \"no NPU visible\"\n", "    n_gpus = max(n_gpus, 2)\n"),
        ("SD102", "code:train.py:setup", None, "n_gpus = max(n_gpus, 2)", None, "n_gpus = max")),
    "a device added to a parser's choices": (
        [('choices=["cuda", "cpu"]', 'choices=["cuda", "npu", "cpu"]')],
        ('choices=["cuda", "npu", "cpu"]', 'choices=["cuda", "npu", "cpu", "mps"]'),
        ("SD102", "code:train.py:get_args", ["cuda", "cpu"], ["cuda", "npu", "cpu", "mps"], "choices=", "choices=")),
    "autocast in the cuda namespace against torch.autocast(device_type=...)": (
        [("with torch.cuda.amp.autocast(dtype=torch.bfloat16):",
          'with torch.autocast(device_type="npu", dtype=torch.bfloat16):')],
        ('with torch.autocast(device_type="npu", dtype=torch.bfloat16):',
         'with torch.autocast(device_type="npu", dtype=torch.bfloat16, enabled=False):'),
        ("SD102", "code:train.py:train", None, False, "with torch.", "with torch.")),
    "a device call through another object": (
        [("import torch.distributed as dist\n", "import torch.distributed as dist\nfrom accel_env import platform\n"),
         ("torch.cuda.set_device(local_rank)", "platform.set_device(local_rank)"),
         ("torch.cuda.empty_cache()", "platform.empty_cache()")],
        ("platform.set_device(local_rank)", "platform.manual_seed(local_rank)"),
        ("SD101", "code:train.py:setup", "torch.cuda.set_device(local_rank)", "platform.manual_seed(local_rank)",
         "torch.cuda.set_device", "platform.manual_seed")),
    "a factory that takes the device for the wrapper it stands for": (
        [("from torch.nn.parallel import DistributedDataParallel as DDP\n",
          "from torch.nn.parallel import DistributedDataParallel as DDP\nfrom accel_env import build_ddp, get_run_device\n"),
         ("model = DDP(model.cuda(), device_ids=[local_rank])",
          "model = build_ddp(model, device=get_run_device(), device_ids=[local_rank])")],
        ("device_ids=[local_rank])\n", "device_ids=[local_rank], broadcast_buffers=False)\n"),
        ("SD101", "code:train.py:train", "DDP(model.cuda(), device_ids=[local_rank])",
         "build_ddp(model, device=get_run_device(), device_ids=[local_rank], broadcast_buffers=False)",
         "model = DDP(", "model = build_ddp(")),
    ".cuda() against .to(f\"npu:{rank}\")": (
        [("model = DDP(model.cuda(), device_ids=[local_rank])",
          'model = DDP(model.to(f"npu:{local_rank}"), device_ids=[local_rank])')],
        ('model.to(f"npu:{local_rank}")', "model.to(torch.float16)"),
        ("SD101", "code:train.py:train", "model.cuda()", "model.to(torch.float16)", "model = DDP(", "model = DDP(")),
    "a helper only the NPU side defines, returning a try-import flag": (
        [("from torch.nn.parallel import DistributedDataParallel as DDP\n",
          "from torch.nn.parallel import DistributedDataParallel as DDP\n\ntry:\n    import torch_npu\n"
          "    _ACCEL_OK = True\nexcept ImportError:\n    _ACCEL_OK = False\n\n\ndef accel_is_npu():\n"
          "    return _ACCEL_OK\n"),
         ("    torch.cuda.set_device(local_rank)\n", "    if accel_is_npu():\n        torch.npu.set_device(local_rank)\n"
                                                  "    else:\n        torch.cuda.set_device(local_rank)\n")],
        ("        torch.npu.set_device(local_rank)\n", "        torch.npu.manual_seed(local_rank)\n"),
        ("SD101", "code:train.py:setup", "torch.cuda.set_device(local_rank)", "torch.npu.manual_seed(local_rank)",
         "torch.cuda.set_device", "torch.npu.manual_seed")),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_device_plumbing_is_the_port_and_a_drift_beside_it_is_found(tmp_path, shape):
    edits, drift, (rule, key, gv, nv, gneedle, nneedle) = SHAPES[shape]
    faithful = edit(GPU, *edits)
    r = pair(tmp_path / "faithful", GPU, faithful)
    assert loud(r) == []
    assert plumbing(r) or any(m.rule in ("SD001", "SD002", "SD004", "SD005", "SD016") for m in r.masked)
    drifted = edit(faithful, drift)
    got = loud(pair(tmp_path / "drifted", GPU, drifted))
    want = (rule, key, gv, nv, line_of(GPU, gneedle) if gneedle else None, line_of(drifted, nneedle))
    assert got == [want]


UTILS = '''\
"""Placement helpers of a made-up trainer."""
import torch
import torch.distributed as dist

BACKENDS = {"cuda": "nccl", "cpu": "gloo"}


class Prefetcher:
    def __init__(self, loader, device):
        self.loader = loader
        self.is_cuda = torch.cuda.is_available() and device.type == "cuda"

    def __iter__(self):
        for batch in self.loader:
            if self.is_cuda:
                torch.cuda.current_stream().synchronize()
            yield batch


def place(module, state, device="cuda"):
    assert torch.cuda.is_available(), "CUDA is not available"
    module = module.cuda()
    buf = torch.zeros(8, device=torch.cuda.current_device())
    if state.buf.device.type == "cuda":
        state.scale = 2.0
    return module, buf


def step(model, batch, scale):
    return model(batch) * scale
'''

UTILS_NPU = '''\
"""Placement helpers of a made-up trainer."""
import torch
import torch.distributed as dist
from accel_env import get_current_device

BACKENDS = {"cuda": "nccl", "cpu": "gloo", "npu": "hccl"}


class Prefetcher:
    def __init__(self, loader, device):
        self.loader = loader
        self.is_cuda = torch.cuda.is_available() and device.type == "cuda"
        self.is_npu = torch.npu.is_available() and device.type == "npu"

    def __iter__(self):
        for batch in self.loader:
            if self.is_cuda:
                torch.cuda.current_stream().synchronize()
            elif self.is_npu:
                torch.npu.current_stream().synchronize()
            yield batch


def place(module, state, device=None):
    if device is None:
        device = get_current_device()
    assert torch.npu.is_available(), "Ascend NPU is not available"
    module = getattr(module, "npu")()
    buf = torch.zeros(8, device=get_current_device())
    if state.buf.device.type in ["cuda", "npu"]:
        state.scale = 2.0
    return module, buf


def step(model, batch, scale, device=None):
    return model(batch) * scale
'''


def test_placement_helpers_spelt_for_the_npu_are_the_port(tmp_path):
    """A device-keyed table gaining its NPU entry, a device flag kept on self and decided in the
    class's other methods, a placement parameter whose default became None (the function then
    finds the device), an assert on the device with its own message, getattr(m, "npu")(), a
    helper returning the current device, a device type tested against a list of devices, a
    placement parameter added: all masked, nothing loud."""
    r = pair(tmp_path, UTILS, UTILS_NPU, "utils.py")
    assert loud(r) == []
    lines = plumbing(r)
    for gneedle, nneedle in (('BACKENDS = {', 'BACKENDS = {'), ("assert torch.cuda", "assert torch.npu"),
                             ("module.cuda()", 'getattr(module, "npu")()'), ("device=torch.cuda", "device=get_current"),
                             ('state.buf.device.type == "cuda"', "state.buf.device.type in")):
        assert (line_of(UTILS, gneedle), line_of(UTILS_NPU, nneedle)) in lines, (gneedle, lines)
    assert (None, line_of(UTILS_NPU, "self.is_npu =")) in lines


@pytest.mark.parametrize("old,new,want", [
    ('"npu": "hccl"}', '"npu": "gloo"}', ("SD102", "code:utils.py:<module>", '{"cuda": "nccl", "cpu": "gloo"}',
                                         '{"cuda": "nccl", "cpu": "gloo", "npu": "gloo"}', "BACKENDS", "BACKENDS")),
    ('getattr(module, "npu")()', 'getattr(module, "cpu")()', ("SD102", "code:utils.py:place", "module.cuda()",
                                                            'getattr(module, "cpu")()', "module = ", "module = ")),
    ('state.buf.device.type in ["cuda", "npu"]', 'state.buf.device.type in ["cuda", "cpu"]',
     [("SD102", "code:utils.py:place", "==", "in", "if state.buf", "if state.buf"),
      ("SD102", "code:utils.py:place", "cuda", ["cuda", "cpu"], "if state.buf", "if state.buf")]),
    ("def step(model, batch, scale, device=None):", "def step(model, batch, scale, eps=None):",
     ("SD101", "code:utils.py:step", "model, batch, scale", "model, batch, scale, eps=None", "def step", "def step")),
])
def test_what_is_not_placement_beside_it_is_still_found(tmp_path, old, new, want):
    npu = edit(UTILS_NPU, (old, new))
    got = loud(pair(tmp_path, UTILS, npu, "utils.py"))
    assert got == [(rule, key, gv, nv, line_of(UTILS, gneedle), line_of(npu, nneedle))
                   for rule, key, gv, nv, gneedle, nneedle in (want if isinstance(want, list) else [want])]


SCHED = '''\
import ray
import torch
from workers import pool_size


@ray.remote(num_gpus=1)
class Learner:
    def __init__(self, lr):
        self.device = torch.device("cuda")
        self.lr = lr


@ray.remote(num_gpus=1)
class Scorer:
    def score(self, batch):
        return batch.sum()


def launch(count, opts, lr=0.001):
    backend = getattr(opts, "comm_backend_name", "nccl")
    bundles = [{"GPU": 1, "CPU": 1} for _ in range(count)]
    actors = [Learner.options(num_gpus=1, num_cpus=4).remote(lr) for _ in range(count)]
    return backend, bundles, actors
'''

SCHED_NPU = '''\
import ray
import torch
import torch_npu
from workers import pool_size
from workers import CURRENT_ACCELERATOR_TYPE


@ray.remote(resources={"NPU": 1})
class Learner:
    def __init__(self, lr):
        self.device = torch.device("npu")
        self.lr = lr


@ray.remote
class Scorer:
    def score(self, batch):
        return batch.sum()


def launch(count, opts, lr=0.001):
    if CURRENT_ACCELERATOR_TYPE == "GPU":
        backend = getattr(opts, "comm_backend_name", "nccl")
    elif CURRENT_ACCELERATOR_TYPE == "NPU":
        backend = "hccl"
    bundles = [{CURRENT_ACCELERATOR_TYPE: 1, "CPU": 1} for _ in range(count)]
    actors = [Learner.options(resources={"NPU": 1}, num_cpus=4).remote(lr) for _ in range(count)]
    return backend, bundles, actors
'''


def test_a_schedulers_device_request_spelt_for_the_npu_is_the_port(tmp_path):
    """`num_gpus=1` of `ray.remote` / `.options` against `resources={"NPU": 1}` (or no request at
    all), an accelerator-type name tested against "GPU" and "NPU", and a backend read with the
    GPU's backend as its fallback against the NPU's own: masked, nothing loud, and no world size
    read from an actor's request."""
    r = pair(tmp_path, SCHED, SCHED_NPU, "sched.py")
    assert loud(r) == []
    lines = plumbing(r)
    for gneedle, nneedle in (("@ray.remote(num_gpus=1)\nclass Learner", '@ray.remote(resources={"NPU": 1})'),
                             ("@ray.remote(num_gpus=1)\nclass Scorer", "@ray.remote\nclass Scorer"),
                             ("actors = ", "actors = ")):
        assert (line_of(SCHED, gneedle), line_of(SCHED_NPU, nneedle)) in lines, (gneedle, lines)
    assert not [f for f in r.findings if f.key in ("world_size", "data_parallel_size")]


@pytest.mark.parametrize("old,new,want", [
    ('Learner.options(resources={"NPU": 1}', 'Learner.options(resources={"NPU": 2}',
     ("SD102", "code:sched.py:launch", 1, 2, "actors = ", "actors = ")),
    ('backend = "hccl"', 'backend = "gloo"',
     ("SD102", "code:sched.py:launch", 'getattr(opts, "comm_backend_name", "nccl")', "gloo", "backend = getattr",
      'backend = "gloo"')),
    ('@ray.remote\nclass Scorer', '@ray.remote(num_cpus=2)\nclass Scorer',
     ("SD102", "code:sched.py:Scorer", None, 2, "@ray.remote(num_gpus=1)\nclass Scorer", "@ray.remote(num_cpus=2)")),
])
def test_a_request_that_is_not_the_same_is_still_found(tmp_path, old, new, want):
    npu = edit(SCHED_NPU, (old, new))
    got = loud(pair(tmp_path, SCHED, npu, "sched.py"))
    assert got == [(rule, key, gv, nv, line_of(SCHED, gneedle), line_of(npu, nneedle))
                   for rule, key, gv, nv, gneedle, nneedle in [want]]


SEEDS = '''\
import random

import numpy as np
import torch


def fix_seeds(seed, strict=False):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)
    if strict:
        torch.use_deterministic_algorithms(True)
    return seed
'''

SEEDS_NPU = edit(SEEDS, ("import torch\n", "import torch\nimport torch_npu\n"),
                 ("    torch.cuda.manual_seed_all(seed)\n",
                  "    torch_npu.npu.manual_seed_all(seed)\n    torch_npu.npu.manual_seed(seed)\n"),
                 ("        torch.use_deterministic_algorithms(True)\n",
                  "        torch.backends.cudnn.deterministic = True\n        torch.backends.cudnn.benchmark = False\n"
                  "        torch.use_deterministic_algorithms(True)\n"))


def test_a_device_generator_seeded_like_all_of_them_and_cuda_switches_on_the_npu_are_no_difference(tmp_path):
    """`torch_npu.npu.manual_seed(seed)` where `torch.manual_seed(seed)` already seeds every
    device's generator: masked; `cudnn.deterministic` set on the NPU path only does nothing on the
    NPU: info (SD107), nothing loud."""
    r = pair(tmp_path, SEEDS, SEEDS_NPU, "seeds.py")
    assert loud(r) == []
    lines = plumbing(r)
    assert (None, line_of(SEEDS_NPU, "torch_npu.npu.manual_seed(seed)")) in lines
    assert sorted((f.rule, f.severity, f.npu.line) for f in r.findings) == [
        ("SD107", "info", line_of(SEEDS_NPU, "cudnn.deterministic")),
        ("SD107", "info", line_of(SEEDS_NPU, "cudnn.benchmark"))]


def test_a_device_generator_seeded_with_another_seed_is_still_found(tmp_path):
    npu = edit(SEEDS_NPU, ("torch_npu.npu.manual_seed(seed)", "torch_npu.npu.manual_seed(seed + 1)"))
    assert loud(pair(tmp_path, SEEDS, npu, "seeds.py")) == [
        ("SD101", "code:seeds.py:fix_seeds", None, "torch_npu.npu.manual_seed(seed + 1)", None,
         line_of(npu, "manual_seed(seed + 1)"))]


AGENT = '''\
import torch

from agents.base import OnPolicyBase
from agents.nets import ValueActor


class Trainer(OnPolicyBase):
    """A made-up agent."""

    def __init__(self, env, device="cuda", lr=3e-4):
        super().__init__(env=env, device=device, lr=lr)
        self.actor = ValueActor(env.obs_shape, hidden=256)

    def update(self, obs, action):
        q = self.critic(obs, action)
        return q.mean()
'''

AGENT_NPU = edit(AGENT, ("from agents.nets import ValueActor", "from agents.nets import NpuValueActor"),
                 ("class Trainer(OnPolicyBase):", "class NpuTrainer(OnPolicyBase):"),
                 ("device=device, lr=lr)", "device=device, lr=lr, use_npu=True)"),
                 ("ValueActor(env.obs_shape", "NpuValueActor(env.obs_shape"),
                 ("self.critic(obs, action)", "self.critic(obs, action.to(self.device))"))


def test_the_npus_own_variant_of_a_class_and_its_flag_are_the_port(tmp_path):
    """`class NpuTrainer` against `class Trainer`, `NpuValueActor(...)` against `ValueActor(...)`
    with the same arguments, `use_npu=True` given on the NPU only, an argument moved to the run's
    device (`action.to(self.device)` against `action`): masked, nothing loud."""
    r = pair(tmp_path, AGENT, AGENT_NPU, "agent.py")
    assert loud(r) == []
    lines = plumbing(r)
    for needle in ("class ", "super().__init__", "self.critic("):
        assert any(g == line_of(AGENT, needle) or n == line_of(AGENT_NPU, needle) for g, n in lines), (needle, lines)


@pytest.mark.parametrize("old,new,want", [
    ("class NpuTrainer(OnPolicyBase):", "class NpuTrainerV2(OnPolicyBase):",
     ("SD102", "code:agent.py:Trainer", "Trainer", "NpuTrainerV2", "class Trainer", "class NpuTrainerV2")),
    ("lr=lr, use_npu=True)", "lr=lr, use_npu=False)",
     ("SD101", "code:agent.py:Trainer.__init__", None, False, "super().__init__", "super().__init__")),
    ("action.to(self.device))", "action.to(torch.float16))",
     ("SD101", "code:agent.py:Trainer.update", "action", "action.to(torch.float16)", "q = ", "q = ")),
])
def test_a_variant_or_flag_that_is_not_the_port_is_still_found(tmp_path, old, new, want):
    npu = edit(AGENT_NPU, (old, new))
    got = loud(pair(tmp_path, AGENT, npu, "agent.py"))
    rule, key, gv, nv, gneedle, nneedle = want
    assert got == [(rule, key, gv, nv, line_of(AGENT, gneedle), line_of(npu, nneedle))]


def test_a_variable_named_for_the_npu_is_not_its_gpu_namesake(tmp_path):
    """Only a class's name has an NPU variant: `scale_npu` may hold another value than `scale`."""
    gpu = "def step(x, scale, scale_npu):\n    return x * scale\n"
    npu = "def step(x, scale, scale_npu):\n    return x * scale_npu\n"
    assert loud(pair(tmp_path, gpu, npu, "step.py")) == [
        ("SD102", "code:step.py:step", "scale", "scale_npu", 2, 2)]


SWITCHED = '''\
import torch


def step(cfg, model, batch, opt):
    sync = cfg.norm == "sync" and (cfg.use_gpu or cfg.use_xla) and cfg.ranks > 1
    if sync:
        model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)
    with torch.autocast("cuda", enabled=cfg.use_gpu or cfg.use_xla):
        loss = model(batch).mean()
    loss.backward()
    opt.step()
'''

SWITCHED_NPU = edit(SWITCHED, ("import torch\n", "import torch\nimport torch_npu\n"),
                    ("(cfg.use_gpu or cfg.use_xla)", "(cfg.use_gpu or cfg.use_npu or cfg.use_xla)"),
                    ('torch.autocast("cuda", enabled=cfg.use_gpu or cfg.use_xla)',
                     'torch.autocast("npu", enabled=cfg.use_gpu or cfg.use_npu or cfg.use_xla)'))


def test_a_settings_device_switches_that_each_run_answers_alike_are_the_port(tmp_path):
    """`cfg.use_gpu or cfg.use_xla` against `cfg.use_gpu or cfg.use_npu or cfg.use_xla`: on each
    run its own device's switch is on and another device's off, so both are true (a keyword's
    value, and a test's device part, are each run's answer: nothing differs). A test true on the GPU run
    only is still found, written otherwise or the same (`enabled=cfg.use_gpu or cfg.use_xla` on
    both sides: on on the GPU run, off on the NPU run), and so is a word that is no switch."""
    r = pair(tmp_path, SWITCHED, SWITCHED_NPU, "step.py")
    assert loud(r) == []
    (tmp_path / "off").mkdir()
    off = edit(SWITCHED_NPU, ("enabled=cfg.use_gpu or cfg.use_npu or cfg.use_xla", "enabled=cfg.use_xla"))
    assert loud(pair(tmp_path / "off", SWITCHED, off, "step.py")) == [
        ("SD102", "code:step.py:step", True, False, line_of(SWITCHED, "with torch."), line_of(off, "with torch."))]
    (tmp_path / "same").mkdir()  # the same text, not the same value: the GPU's switch is off on the NPU run
    same = edit(SWITCHED_NPU, ("enabled=cfg.use_gpu or cfg.use_npu or cfg.use_xla", "enabled=cfg.use_gpu or cfg.use_xla"))
    assert loud(pair(tmp_path / "same", SWITCHED, same, "step.py")) == [
        ("SD102", "code:step.py:step", True, False, line_of(SWITCHED, "with torch."), line_of(same, "with torch."))]
    (tmp_path / "graph").mkdir()
    graph = edit(SWITCHED_NPU, ("enabled=cfg.use_gpu or cfg.use_npu or cfg.use_xla",
                                "enabled=cfg.use_gpu or cfg.use_npu_graph or cfg.use_xla"))
    assert loud(pair(tmp_path / "graph", SWITCHED, graph, "step.py")) == [
        ("SD102", "code:step.py:step", True, "cfg.use_npu_graph", line_of(SWITCHED, "with torch."),
         line_of(graph, "with torch."))]


CALLBACK = '''\
import torch


class FitCallback:
    def make_batch(self, batch):
        inputs, target = batch
        if self.config.cuda:
            inputs, target = inputs.cuda(), target.cuda()
        return inputs, target

    def before_train(self):
        if self.config.cuda:
            self.runner._init_cuda_state()
        self.runner.lr = 0.1
'''

CALLBACK_NPU = edit(CALLBACK, ("import torch\n", "import torch\nfrom orbitkit.hw import is_gpu_device, is_npu_device\n"),
                    ("        if self.config.cuda:\n            inputs, target = inputs.cuda(), target.cuda()\n",
                     "        if is_gpu_device():\n            inputs, target = inputs.cuda(), target.cuda()\n"
                     "        elif is_npu_device():\n            inputs, target = inputs.npu(), target.npu()\n"),
                    ("        if self.config.cuda:\n            self.runner._init_cuda_state()\n",
                     "        if is_gpu_device() or is_npu_device():\n            self.runner._init_state()\n"))


def test_a_setting_named_after_the_device_and_a_helper_made_general_are_the_port(tmp_path):
    """`if self.config.cuda:` (a setting named after the device alone) against the NPU's own
    device tests, and `self.runner._init_cuda_state()` against `._init_state()` (the GPU helper
    made general: the same words without the GPU's): silent. Another name is still found."""
    assert loud(pair(tmp_path, CALLBACK, CALLBACK_NPU, "callback.py")) == []
    (tmp_path / "other").mkdir()
    other = edit(CALLBACK_NPU, ("self.runner._init_state()", "self.runner._init_state_twice()"))
    assert loud(pair(tmp_path / "other", CALLBACK, other, "callback.py")) == [
        ("SD101", "code:callback.py:FitCallback.before_train", "self.runner._init_cuda_state()",
         "self.runner._init_state_twice()", line_of(CALLBACK, "_init_cuda_state"), line_of(other, "_init_state_twice"))]


ROLLOUT = '''\
import torch


def generate(model, batch):
    with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
        out = model(batch)
    return out
'''

ROLLOUT_NPU = edit(ROLLOUT, ("import torch\n", "import torch\nfrom orbitkit.hw import autocast\n"),
                   ('torch.autocast(device_type="cuda", dtype=torch.bfloat16)', "autocast(dtype=torch.bfloat16)"))


def test_a_projects_autocast_helper_is_torch_autocast_on_the_run_device(tmp_path):
    """`autocast(dtype=...)` imported from a project's device module against
    `torch.autocast(device_type="cuda", dtype=...)`: one autocast (masked), its dtype the
    precision on both sides; another dtype is the precision's finding."""
    assert loud(pair(tmp_path, ROLLOUT, ROLLOUT_NPU, "rollout.py")) == []
    (tmp_path / "fp16").mkdir()
    half = edit(ROLLOUT_NPU, ("autocast(dtype=torch.bfloat16)", "autocast(dtype=torch.float16)"))
    assert loud(pair(tmp_path / "fp16", ROLLOUT, half, "rollout.py")) == [
        ("SD205", "params_dtype", "bf16", "fp16", 5, 6)]


PICK = '''\
import torch
from orbitkit.dist import Kind


def pick(device, n, kind, loss, aux):
    known = set(["cuda", "cpu"] + [f"cuda:{i}" for i in range(n)] + ["mps"])
    assert kind in [Kind.FSDP, Kind.MULTI_GPU], "unsupported"
    total = loss + aux
    return device in known, total
'''

PICK_NPU = edit(PICK, ('+ ["mps"])', '+ ["mps"] + [f"npu:{i}" for i in range(n)])'),
                ("[Kind.FSDP, Kind.MULTI_GPU]", "[Kind.FSDP, Kind.MULTI_GPU, Kind.MULTI_NPU]"))


def test_a_collection_that_gains_the_npus_entries_is_the_port(tmp_path):
    """A device list extended with `[f"npu:{i}" ...]`, an enum list with `Kind.MULTI_NPU`: the
    port (silent). An entry for another device, or a sum gaining a term named after the NPU, is
    still found."""
    assert loud(pair(tmp_path, PICK, PICK_NPU, "pick.py")) == []
    (tmp_path / "mlu").mkdir()
    mlu = edit(PICK_NPU, ('[f"npu:{i}" for i in range(n)]', '[f"mlu:{i}" for i in range(n)]'))
    got = loud(pair(tmp_path / "mlu", PICK, mlu, "pick.py"))  # the sums aligned part by part: three sites
    assert got == [("SD102", "code:pick.py:pick", ["cuda", "cpu"], '["cuda", "cpu"] + [f"cuda:{i}" for i in range(n)]', 6, 6),
                   ("SD102", "code:pick.py:pick", '[f"cuda:{i}" for i in range(n)]', ["mps"], 6, 6),
                   ("SD102", "code:pick.py:pick", ["mps"], '[f"mlu:{i}" for i in range(n)]', 6, 6)]
    (tmp_path / "sum").mkdir()
    summed = edit(PICK_NPU, ("total = loss + aux", "total = loss + aux + npu_aux"))
    r = pair(tmp_path / "sum", PICK, summed, "pick.py")  # two places of one statement: one finding for it
    assert loud(r) == [("SD102", "code:pick.py:pick", "loss", "loss + aux", 8, 8)]
    assert [f.message for f in r.findings if f.key == "code:pick.py:pick"] == ["statement differs (2 places in it)"]


PADDED = '''\
import torch
from fastlib.pad import pad_input, unpad_input


def forward(model, x, mask):
    flat, idx = unpad_input(x, mask)
    return pad_input(model(flat), idx)
'''

PADDED_NPU = edit(PADDED, ("from fastlib.pad import pad_input, unpad_input\n",
                           "try:\n    from fastlib.pad import pad_input, unpad_input\n    PAD_OK = True\n"
                           "except ImportError:\n    pad_input = unpad_input = None\n    PAD_OK = False\n"))


def test_the_same_import_made_optional_is_the_port(tmp_path):
    """`try: from fastlib.pad import ...; PAD_OK = True` / `except ImportError: ... = None` on the
    NPU side, the GPU importing the same names: the same objects where the import succeeds
    (masked). A fallback that binds another function, or an import the GPU side does not make, is
    found."""
    r = pair(tmp_path, PADDED, PADDED_NPU, "model.py")
    assert loud(r) == [] and (None, 2) in plumbing(r)
    (tmp_path / "other").mkdir()
    other = edit(PADDED_NPU, ("    pad_input = unpad_input = None\n", "    pad_input = unpad_input = slow_pad\n"))
    assert [(rule, key, nl) for rule, key, _g, _n, _gl, nl in loud(pair(tmp_path / "other", PADDED, other, "model.py"))] \
        == [("SD102", "code:model.py:<module>", 2)]
    (tmp_path / "new").mkdir()
    new = edit(PADDED_NPU, ("    PAD_OK = True\n", "    PAD_OK = True\n    from fastlib.fused import fused_norm\n"))
    assert [(rule, key, nl) for rule, key, _g, _n, _gl, nl in loud(pair(tmp_path / "new", PADDED, new, "model.py"))] \
        == [("SD102", "code:model.py:<module>", 2)]


def test_a_keyword_made_of_a_setting_named_after_the_device_is_each_runs_answer(tmp_path):
    """`autocast(enabled=self.config.cuda)` written the same on both sides: on on the GPU run,
    off on the NPU run (the look before the switch reads its names from the rule data)."""
    gpu = ('import torch\n\n\nclass Fit:\n    def step(self, x):\n'
           '        with torch.autocast("cuda", enabled=self.config.cuda):\n            return self.net(x)\n')
    npu = gpu.replace('"cuda", enabled', '"npu", enabled').replace("import torch\n", "import torch\nimport torch_npu\n")
    assert loud(pair(tmp_path, gpu, npu, "fit.py")) == [("SD102", "code:fit.py:Fit.step", True, False, 6, 7)]


def test_an_enum_member_named_after_the_device_is_no_switch(tmp_path):
    """`attn_type=Kind.NPU` against `attn_type=Kind.FA` is a choice of kernel, not a setting's
    switch: compared as written (both members named), never as each run's True or False."""
    gpu = "from orbitkit.attn import Kind, SeqAttention\n\nattn = SeqAttention(group, attn_type=Kind.FA)\n"
    npu = gpu.replace("Kind.FA", "Kind.NPU")
    assert loud(pair(tmp_path, gpu, npu, "attn.py")) == [("SD101", "code:attn.py:<module>", "Kind.FA", "Kind.NPU", 3, 3)]


@pytest.mark.parametrize("npu_place", ['f"npu:{local_rank}"', 'torch.device("npu", local_rank)',
                                      'torch.device(f"npu:{local_rank}")'])
def test_a_bare_rank_is_the_run_device_of_that_index(tmp_path, npu_place):
    """`x.to(local_rank)` places on the run's own accelerator at that index: the NPU's
    `x.to(f"npu:{local_rank}")` is the same device."""
    gpu = edit(GPU, ('batch = batch.to("cuda")', "batch = batch.to(local_rank)"))
    npu = edit(GPU, ('batch = batch.to("cuda")', f"batch = batch.to({npu_place})"))
    rep = pair(tmp_path, gpu, npu)
    assert loud(rep) == []
    at = line_of(gpu, "batch.to(local_rank)")
    assert (at, at) in plumbing(rep)


def test_a_device_indexed_by_another_value_is_not_the_rank(tmp_path):
    gpu = edit(GPU, ('batch = batch.to("cuda")', "batch = batch.to(local_rank)"))
    npu = edit(GPU, ('batch = batch.to("cuda")', 'batch = batch.to(f"npu:{local_rank + 1}")'))
    at = line_of(gpu, "batch.to(local_rank)")
    assert loud(pair(tmp_path, gpu, npu)) == [("SD101", "code:train.py:train", "local_rank", 'f"npu:{local_rank + 1}"', at, at)]


KIT_GPU = '''import torch


class Trainer:
    def __init__(self, config):
        self.config = config
        self.use_acc = torch.cuda.is_available() and config["use_gpu"]
        self.config["device"] = torch.device("cuda", config["local_rank"]) if self.use_acc else torch.device("cpu")
        self.scaler = torch.cuda.amp.GradScaler(enabled=self.use_acc and config["amp"])
'''
KIT_NPU = '''import torch
from orbit.devkit import detect_kind, has_accel_available, make_device


class Trainer:
    def __init__(self, config):
        self.config = config
        device_type = detect_kind()
        self.use_acc = has_accel_available(device_type) and config["use_gpu"]
        self.config["device"] = make_device(device_type, config["local_rank"]) if self.use_acc else torch.device("cpu")
        self.scaler = torch.cuda.amp.GradScaler(enabled=self.use_acc and config["amp"])
'''


def test_helpers_of_a_module_not_read_that_ask_for_and_make_the_run_device_are_the_port(tmp_path):
    """`has_accel_available(device_type)` of a module not in view asks whether the run's own
    device is there (true on each run, as `torch.cuda.is_available()` on the GPU), and
    `make_device(device_type, rank)` makes that device (as `torch.device("cuda", rank)`)."""
    assert loud(pair(tmp_path, KIT_GPU, KIT_NPU, "trainer.py")) == []
    # the same helpers asked something else: found, at their lines
    drift = edit(KIT_NPU, ('has_accel_available(device_type) and config["use_gpu"]',
                           'has_accel_available(device_type) and config["use_amp_gpu"]'),
                 ('make_device(device_type, config["local_rank"])', 'make_device("cpu")'))
    got = loud(pair(tmp_path / "d", KIT_GPU, drift, "trainer.py"))
    assert [(r[0], r[4], r[5]) for r in got] == [("SD101", 7, 9), ("SD101", 8, 10)]
    assert got[0][2:4] == ("use_gpu", "use_amp_gpu")
    # a keyword the GPU test does not have is not the run's device: compared as written
    kw = edit(KIT_NPU, ("has_accel_available(device_type)", "has_accel_available(device_type, strict=True)"))
    assert [(r[0], r[4], r[5]) for r in loud(pair(tmp_path / "k", KIT_GPU, kw, "trainer.py"))] == [("SD101", 7, 9)]


def test_the_device_generic_grad_scaler_is_the_cuda_one(tmp_path):
    """`torch.amp.GradScaler` (its device defaults to "cuda"), imported with a fallback to the
    CUDA one, is `torch.cuda.amp.GradScaler`: masked (SD009); its arguments are still compared."""
    gpu = "from torch.cuda import amp\n\n\ndef scaler(on):\n    return amp.GradScaler(enabled=on, init_scale=1024)\n"
    npu = ("try:\n    from torch.amp import GradScaler\nexcept ImportError:\n    from torch.cuda.amp import GradScaler\n\n\n"
           "def scaler(on):\n    return GradScaler(enabled=on, init_scale=1024)\n")
    rep = pair(tmp_path, gpu, npu, "amp_kit.py")
    assert loud(rep) == [] and "SD009" in {m.rule for m in rep.masked}
    got = loud(pair(tmp_path / "d", gpu, npu.replace("enabled=on", "enabled=False"), "amp_kit.py"))
    assert got == [("SD102", "code:amp_kit.py:scaler", "on", False, 5, 8)]


DIST_GPU = '''import torch
import torch.distributed as dist


def init_dist(args, rank):
    if args.split:
        dist.init_process_group(backend="cpu:gloo,cuda:nccl" if args.mixed else "nccl")
    device = torch.device("cuda", rank % torch.cuda.device_count())
    torch.cuda.set_device(device)
    return device
'''
DIST_NPU = '''import torch
import torch.distributed as dist
from orbit.hosts import HostCpu, accel_host


def init_dist(args, rank):
    accel_full_backend = accel_host.full_comm_backend
    cpu_full_backend = HostCpu.full_comm_backend
    backend = f"{cpu_full_backend},{accel_full_backend}" if args.mixed else accel_host.comm_backend
    if args.split:
        dist.init_process_group(backend=backend)
    device = torch.device("npu", rank % torch.npu.device_count())
    torch.npu.set_device(device)
    return device
'''


def test_backends_spelt_per_device_and_through_a_platform_object_are_the_port(tmp_path):
    """`"cpu:gloo,cuda:nccl"` against `f"{cpu_full_backend},{accel_full_backend}"`, and
    `"nccl"` against a platform object's `comm_backend`: the run's backends either way."""
    assert loud(pair(tmp_path, DIST_GPU, DIST_NPU, "dist_kit.py")) == []
    # the CPU's backend a parameter named for it, not bound in the file: still the CPU's
    unbound = edit(DIST_NPU, ("    cpu_full_backend = HostCpu.full_comm_backend\n", ""),
                   ("def init_dist(args, rank):", "def init_dist(args, rank, cpu_full_backend):"))
    gpu_unbound = edit(DIST_GPU, ("def init_dist(args, rank):", "def init_dist(args, rank, cpu_full_backend):"))
    assert loud(pair(tmp_path / "u", gpu_unbound, unbound, "dist_kit.py")) == []
    drift = edit(DIST_NPU, ("else accel_host.comm_backend", 'else "gloo"'))
    assert loud(pair(tmp_path / "d", DIST_GPU, drift, "dist_kit.py")) == [  # the backend chosen, not the run's
        ("SD102", "code:dist_kit.py:init_dist", None,
         'backend = f"{cpu_full_backend},{accel_full_backend}" if args.mixed else "gloo"', None, 9)]


def test_selecting_the_run_device_by_name_on_one_side_is_the_port(tmp_path):
    """`paddle.set_device("npu:0")` added on the NPU (its framework picks the GPU by default
    on the other): the run's device selected; so is an index of it (which accelerator of the
    run's kind, as an index given two ways already was); the CPU selected on one side is found."""
    gpu = "import paddle\n\n\ndef main():\n    model = build()\n    fit(model, lr=1e-3)\n"
    npu = gpu.replace("def main():\n", 'def main():\n    paddle.set_device("npu:0")\n')
    rep = pair(tmp_path, gpu, npu, "fit.py")
    assert loud(rep) == [] and [m.rule for m in rep.masked] == ["SD022"]
    for i, arg in enumerate(("local_rank", "0", "ids[0]")):
        by_index = gpu.replace("def main():\n", f"def main():\n    paddle.set_device({arg})\n")
        rep = pair(tmp_path / f"i{i}", gpu, by_index, "fit.py")
        assert loud(rep) == [] and [(m.rule, m.npu.line) for m in rep.masked] == [("SD022", 5)]
    on_cpu = gpu.replace("def main():\n", 'def main():\n    paddle.set_device("cpu")\n')
    assert loud(pair(tmp_path / "d", gpu, on_cpu, "fit.py")) == [("SD102", "code:fit.py:main", None,
                                                                   'paddle.set_device("cpu")', None, 5)]
