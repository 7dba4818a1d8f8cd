"""Issue 14: the Python diff compares what the code computes, not how it is spelt.

A realistic PPO port (the constants moved into argparse options, an environment variable,
a config dict) is silent where the values are equal, and a changed value is one finding
with both values and where each came from."""
from __future__ import annotations

from pathlib import Path

import pytest

from scriptdiff.model import Options
from scriptdiff.run.pipeline import diff_files

GPU = '''import torch

K_EPOCHS = 80
MAX_EP_LEN = 1000
CONFIG = {"eps_clip": 0.2}
lr_actor = 0.0003
max_training_timesteps = int(3e6)
update_timestep = MAX_EP_LEN * 4
eps_clip = CONFIG["eps_clip"]
gamma = 0.99


def train(policy):
    opt = torch.optim.Adam(policy.parameters(), lr=lr_actor)
    return opt
'''

NPU = '''import argparse
import os

import torch
import torch_npu

parser = argparse.ArgumentParser()
parser.add_argument("--lr_actor", type=float, default=0.0003)
parser.add_argument("--max_ep_len", type=int, default=1000)
args = parser.parse_args()
K_EPOCHS = 80
CONFIG = {"eps_clip": 0.2}
lr_actor = args.lr_actor
max_training_timesteps = 3000000
update_timestep = args.max_ep_len * 4
eps_clip = float(os.environ.get("EPS_CLIP", "0.2"))
gamma = 0.99


def train(policy):
    opt = torch.optim.Adam(policy.parameters(), lr=lr_actor)
    return opt
'''


def run(tmp_path: Path, gpu: str, npu: str):
    (tmp_path / "gpu").mkdir()
    (tmp_path / "npu").mkdir()
    g, n = tmp_path / "gpu" / "ppo.py", tmp_path / "npu" / "ppo.py"
    g.write_text(gpu, encoding="utf-8")
    n.write_text(npu, encoding="utf-8")
    return diff_files([str(g)], [str(n)], Options(use_cache=False))


def loud(r):
    return [f for f in r.findings if f.severity != "info"]


def test_values_moved_into_options_are_not_differences(tmp_path):
    r = run(tmp_path, GPU, NPU)
    assert r.errors == []
    assert loud(r) == []
    got = sorted((f.rule, f.gpu.line if f.gpu else 0, f.npu.line if f.npu else 0, f.message)
                 for f in r.findings if f.rule == "SD103")
    assert got == [
        ("SD103", 0, 7, "configuration on NPU only: ArgumentParser() (its uses are compared by value)"),
        ("SD103", 0, 8, 'configuration on NPU only: option "--lr_actor" (its uses are compared by value)'),
        ("SD103", 0, 9, 'configuration on NPU only: option "--max_ep_len" (its uses are compared by value)'),
        ("SD103", 0, 10, "configuration on NPU only: parse_args() (its uses are compared by value)"),
        ("SD103", 4, 0, "configuration on GPU only: constant MAX_EP_LEN (its uses are compared by value)"),
        ("SD103", 8, 15, "update_timestep: now configurable on NPU through --max_ep_len (same default 4000)"),
        ("SD103", 9, 16, "eps_clip: now configurable on NPU through $EPS_CLIP (same default 0.2)"),
    ]
    # the optimizer's lr resolves on both sides, through the constant and through the option
    lr = [f for f in r.findings if f.key == "lr"]
    assert lr == []


def test_a_moved_value_that_changed_is_one_finding_with_both_values(tmp_path):
    r = run(tmp_path, GPU, NPU.replace('"EPS_CLIP", "0.2"', '"EPS_CLIP", "0.1"'))
    assert [(f.rule, f.severity, f.gpu.value, f.npu.value, f.gpu.line, f.npu.line, f.message) for f in loud(r)] == [
        ("SD101", "error", 0.2, 0.1, 9, 16,
         "eps_clip is 0.2 on GPU and 0.1 on NPU (GPU: through CONFIG['eps_clip']; NPU: through $EPS_CLIP)")]


def test_an_option_default_that_changed_is_the_hyperparameter_finding(tmp_path):
    r = run(tmp_path, GPU, NPU.replace('"--lr_actor", type=float, default=0.0003', '"--lr_actor", type=float, default=0.001'))
    assert [(f.rule, f.key, f.gpu.value, f.npu.value, f.gpu.line, f.npu.line) for f in loud(r)] == [
        ("SD202", "lr", 0.0003, 0.001, 6, 8)]


def test_a_constant_the_other_side_still_reads_is_not_plumbing(tmp_path):
    # GPU reads K from a star import; NPU defines it: the definition may change what GPU computed
    gpu = "from cfg import *\nsteps = K * 2\n"
    npu = "from cfg import *\nK = 3\nsteps = K * 2\n"
    r = run(tmp_path, gpu, npu)
    assert [(f.rule, f.npu.line, f.message) for f in r.findings] == [("SD102", 2, "statement on NPU only")]


def test_faithful_port_with_identical_values_is_silent(tmp_path):
    r = run(tmp_path, GPU, GPU.replace("import torch\n", "import torch\nimport torch_npu\n", 1))
    assert r.findings == []


def test_a_moved_vocabulary_setting_that_changed_lands_on_its_key(tmp_path):
    gpu = "n_layer = 12\nblock_size = 1024\n"
    npu = ("import argparse\np = argparse.ArgumentParser()\np.add_argument('--depth', type=int, default=24)\n"
           "args = p.parse_args()\nn_layer = args.depth\nblock_size = 1024\n")
    r = run(tmp_path, gpu, npu)
    # a module-level setting is a fact (issue 27): reported where its value is set, through the option
    assert [(f.rule, f.check, f.key, f.gpu.value, f.npu.value, f.gpu.line, f.npu.line, f.npu.via, f.message)
            for f in loud(r)] == [
        ("SD204", "hyperparameters", "num_layers", 12, 24, 1, 3, "--depth",
         "model structure: n_layer (num_layers) is 12 on GPU and 24 on NPU")]


def test_a_setting_written_at_several_call_sites_is_compared_at_each(tmp_path):
    """clip_grad_norm_ in every step function: the last call agrees, an earlier one does not.
    "Last one wins" is right for overrides, not for call sites: the differing site is found."""
    step = ("\n\ndef step_{i}(model, opt):\n    torch.nn.utils.clip_grad_norm_(model.parameters(), {v})\n"
            "    opt.step()\n")
    gpu = "import torch\n" + "".join(step.format(i=i, v=1.0) for i in range(3))
    npu = "import torch\n" + "".join(step.format(i=i, v=0.5 if i == 1 else 1.0) for i in range(3))
    r = run(tmp_path, gpu, npu)
    assert [(f.rule, f.key, f.gpu.value, f.npu.value, f.gpu.line, f.npu.line) for f in r.findings] == [
        ("SD208", "clip_grad", 1.0, 0.5, 10, 10)]
    (tmp_path / "same").mkdir()
    assert run(tmp_path / "same", gpu, gpu).findings == []


OPTS = '''\
import argparse


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--learning_rate", type=float, default=1e-4)
    parser.add_argument("--noise_snr", type=float, default=None)
    parser.add_argument("--hflip_aug", action="store_true", default=False)
    parser.add_argument("--mix_alpha", type=float, default=0.2)
    return parser.parse_args()
'''


@pytest.mark.parametrize("old,new,want", [
    ('"--noise_snr", type=float, default=None', '"--noise_snr", type=float, default=40',
     ("SD220", "noise_snr", None, 40, '"--noise_snr"')),
    ('action="store_true", default=False', 'action="store_true", default=True',
     ("SD220", "hflip_aug", False, True, '"--hflip_aug"')),
    ("default=0.2", "default=0.4", ("SD220", "mix_alpha", 0.2, 0.4, '"--mix_alpha"')),
])
def test_an_option_no_vocabulary_names_is_a_setting_under_its_own_name(tmp_path, old, new, want):
    """An argparse option the vocabulary does not know is compared under its dest, with both
    defaults and lines (not as a code difference of add_argument); the same defaults are silent."""
    npu = OPTS.replace(old, new)
    rule, key, gv, nv, needle = want
    at = OPTS[:OPTS.index(needle)].count("\n") + 1
    got = [(f.rule, f.key, f.gpu.value, f.npu.value, f.gpu.line, f.npu.line)
           for f in run(tmp_path, OPTS, npu).findings if f.severity in ("warning", "error")]
    assert got == [(rule, key, gv, nv, at, at)]
    (tmp_path / "same").mkdir()
    assert [f for f in run(tmp_path / "same", OPTS, OPTS).findings] == []


def test_an_option_one_side_alone_defines_is_said_once_as_before(tmp_path):
    npu = OPTS.replace('    return parser', '    parser.add_argument("--holdout_ratio", type=float, default=0.9)\n    return parser')
    got = [(f.rule, f.severity, f.message) for f in run(tmp_path, OPTS, npu).findings]
    assert got == [("SD103", "info", 'configuration on NPU only: option "--holdout_ratio" (its uses are compared by value)')]


def test_options_pair_by_their_names_not_their_places(tmp_path):
    """An option added on the NPU before another (`--device_id` before `--device`): each option
    is compared with the option of its name, the added one said once (SD103), the one whose
    default changed found with both defaults and lines."""
    gpu = OPTS.replace('    return parser', '    parser.add_argument("--device", type=str, choices=["cpu", "cuda"], default="cpu")\n'
                                            '    return parser')
    npu = OPTS.replace('    return parser', '    parser.add_argument("--device_id", type=int, default=0)\n'
                                            '    parser.add_argument("--device", type=str, choices=["cpu", "cuda"], default="cuda")\n'
                                            '    return parser')
    got = [(f.rule, f.severity, f.gpu.value if f.gpu else None, f.npu.value if f.npu else None,
            f.gpu.line if f.gpu else None, f.npu.line if f.npu else None)
           for f in run(tmp_path, gpu, npu).findings]
    at = gpu.count("\n", 0, gpu.index('"--device"')) + 1
    assert sorted(got, key=str) == sorted([
        ("SD102", "warning", "cpu", "cuda", at, at + 1),
        ("SD103", "info", None, 'parser.add_argument("--device_id", type=int, default=0)', None, at)], key=str)


HEADS = '''\
def split_heads(q, k, out, b, t, h, d):
    q = q.view(b, t, h, d)
    k = k.view(b, t, h, d)
    out = out.transpose(1, 2).contiguous().view(b, t, -1)
    return q, k, out
'''


@pytest.mark.parametrize("npu,want", [
    (HEADS.replace("q.view(", "q.reshape(").replace("k.view(", "k.reshape(")
     .replace(".contiguous().view(b, t, -1)", ".reshape(b, t, -1)"), []),
    (HEADS.replace("q.view(b, t, h, d)", "q.reshape(b, h, t, d)"),
     [("SD102", "warning", "q.view(b, t, h, d)", "q.reshape(b, h, t, d)", 2, 2)]),
    (HEADS.replace("k.view(b, t, h, d)", "k.permute(b, t, h, d)"),
     [("SD102", "warning", "k.view(b, t, h, d)", "k.permute(b, t, h, d)", 3, 3)]),
])
def test_view_and_reshape_give_the_same_values(tmp_path, npu, want):
    """`x.view(s)` against `x.reshape(s)` (and `.contiguous().view(s)`): the same values
    (rules/python.yaml same_values); another shape or another method is still a difference."""
    got = [(f.rule, f.severity, f.gpu.value, f.npu.value, f.gpu.line, f.npu.line)
           for f in run(tmp_path, HEADS, npu).findings]
    assert got == want
