"""Issue 27: keys for what is already found, on frameworks nobody named.

Each pattern the development corpus teaches (tests/corpus: xtuner config classes, FlagPerf
vendor configs, torchtitan TOMLs, Centroids-reid's YACS config and its ModelZoo port) is
written here as synthetic files: a changed setting is one finding under its canonical key
(rule, key, both values, both lines), and the faithful counterpart is silent."""
from __future__ import annotations

from pathlib import Path

import pytest

from scriptdiff import api
from scriptdiff.model import Options
from scriptdiff.run.pipeline import diff_files
from scriptdiff.ruleset.secrets import is_secret_name, is_secret_value


def write(path: Path, text: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return str(path)


def pair(tmp_path: Path, name: str, gpu: str, npu: str):
    g, n = write(tmp_path / "gpu" / name, gpu), write(tmp_path / "npu" / name, npu)
    return diff_files([g], [n], Options(use_cache=False))


def rows(report, severities=("error", "warning", "info")):
    return sorted((f.rule, f.key, f.gpu.value if f.gpu else None, f.npu.value if f.npu else None,
                   f.gpu.line if f.gpu else None, f.npu.line if f.npu else None)
                  for f in report.findings if f.severity in severities)


def loud(report):
    return rows(report, ("error", "warning"))


# ------------------------------------------------------------- 1. configs written as code

XTUNER = '''import os

from xtuner.v1.config import AdamWConfig, FSDPConfig
from xtuner.v1.model.moe.qwen3 import Qwen3MoE30BA3Config
from xtuner.v1.train import TrainerConfig

moe_cfg = Qwen3MoE30BA3Config(compile_cfg={compile})
optim_cfg = AdamWConfig(lr=6e-05)
fsdp_cfg = FSDPConfig(
    cpu_offload=False,{tp}
)
trainer = TrainerConfig(
    model_cfg=moe_cfg,
    optim_cfg=optim_cfg,
    fsdp_cfg=fsdp_cfg,
    global_batch_size={gbs},
    work_dir=f"{{os.environ['WORK_DIR']}}",
    seed=0,{backend}
)
'''


def xtuner(compile="True", tp="", gbs=16, backend=""):
    return XTUNER.format(compile=compile, tp=tp, gbs=gbs, backend=backend)


def test_config_class_keywords_land_on_their_keys(tmp_path):
    r = pair(tmp_path, "cfg.py", xtuner(),
             xtuner(compile="False", tp="\n    tp_size=4,", gbs=64, backend='\n    dist_backend="npu:hccl",'))
    assert rows(r) == [
        ("SD203", "global_batch_size", 16, 64, 16, 17),
        ("SD203", "tensor_model_parallel_size", None, 4, None, 11),
        ("SD210", "torch_compile", True, False, 7, 7),
    ]
    f = {x.key: x for x in r.findings}
    assert f["torch_compile"].message == "fused kernels: compile_cfg (torch_compile) is on for GPU and off for NPU"
    assert f["tensor_model_parallel_size"].message == (
        "tp_size (tensor_model_parallel_size) = 4 is set on NPU only; GPU has no value and no known default")
    # no second, code finding for the same arguments; the backend named on the NPU is the port
    assert not [x for x in r.findings if x.check == "script"]
    assert [m.rule for m in r.masked] == ["SD011"]


def test_config_class_faithful_port_is_silent(tmp_path):
    r = pair(tmp_path, "cfg.py", xtuner(), xtuner(backend='\n    dist_backend="npu:hccl",'))
    assert r.findings == []
    assert r.exit_code() == 0


def test_module_constants_of_a_vendor_config(tmp_path):
    """FlagPerf: a config module of constants; train_steps spells train_iters, the MFU constant is info."""
    gpu = 'tokenizer_path = "llama3_70b_hf"\nlocalbs = 1\ntrain_steps = 300\ntheoryflops = 989000000000000.0\n'
    npu = 'tokenizer_path = "llama3_70b_hf"\nlocalbs = 1\ntrain_steps = 30\ntheoryflops = 752000000000000.0\n'
    r = pair(tmp_path, "config_H100x8x8.py", gpu, npu)
    assert rows(r) == [("SD103", "code:config_H100x8x8.py:<module>", 989000000000000.0, 752000000000000.0, 4, 4),
                       ("SD202", "train_iters", 300, 30, 3, 3)]
    assert pair(tmp_path / "same", "config_H100x8x8.py", gpu,
                gpu.replace("989000000000000.0", "752000000000000.0")).exit_code() == 0


def test_yacs_attributes_and_dict_keys(tmp_path):
    """_C.SOLVER.BASE_LR and _C.DATASETS.NAMES (a section word: the dataset's names), and the
    keys of a module-level dict literal."""
    gpu = ('from yacs.config import CfgNode as CN\n_C = CN()\n_C.SOLVER = CN()\n_C.SOLVER.BASE_LR = 1e-4\n'
           '_C.DATASETS = CN()\n_C.DATASETS.NAMES = "market1501"\nCONFIG = {"optim": {"weight_decay": 0.01}}\n')
    npu = gpu.replace("1e-4", "3e-4").replace("market1501", "DukeMTMC-reID").replace("0.01", "0.05")
    r = pair(tmp_path, "defaults.py", gpu, npu)
    assert rows(r) == [("SD202", "lr", 1e-4, 3e-4, 4, 4),
                       ("SD206", "weight_decay", 0.01, 0.05, 7, 7),
                       ("SD212", "data_path", "market1501", "DukeMTMC-reID", 6, 6)]
    # a module of assignments with a dict is a config (pyconfig): its paths drop the config object's name
    assert {f.key: f.message for f in r.findings}["lr"] == \
        "learning-rate schedule: SOLVER.BASE_LR (lr) is 0.0001 on GPU and 0.0003 on NPU"
    # in a script (a function beside it) the same assignments are read as code
    r = pair(tmp_path / "code", "defaults.py", gpu + "\n\ndef get():\n    return _C\n",
             npu + "\n\ndef get():\n    return _C\n")
    assert rows(r) == [("SD202", "lr", 1e-4, 3e-4, 4, 4),
                       ("SD206", "weight_decay", 0.01, 0.05, 7, 7),
                       ("SD212", "data_path", "market1501", "DukeMTMC-reID", 6, 6)]
    assert {f.key: f.message for f in r.findings}["lr"] == \
        "learning-rate schedule: _C.SOLVER.BASE_LR (lr) is 0.0001 on GPU and 0.0003 on NPU"


def test_generic_keywords_keep_their_meaning_in_code(tmp_path):
    """eps= of a LayerNorm is no Adam epsilon, dtype= of a tensor factory no training precision:
    such arguments stay code differences."""
    gpu = ("import torch\nimport torch.nn as nn\nnorm = nn.LayerNorm(64, eps=1e-5)\n"
           "mask = torch.zeros(4, 4, dtype=torch.float16)\n")
    npu = gpu.replace("1e-5", "1e-6").replace("float16", "float32")
    r = pair(tmp_path, "m.py", gpu, npu)
    assert {f.key for f in r.findings} == {"code:m.py:<module>"}
    assert sorted((f.gpu.line, f.message) for f in r.findings) == [
        (3, "torch.nn.LayerNorm: argument eps differs"), (4, "torch.zeros: argument dtype differs")]


def test_pipeline_call_and_its_generator_seed(tmp_path):
    gpu = ('import torch\nfrom diffusers import QwenImagePipeline\n\n'
           'pipe = QwenImagePipeline.from_pretrained("Qwen/Qwen-Image", torch_dtype=torch.bfloat16).to("cuda")\n'
           'image = pipe("a cat", num_inference_steps=50, height=1328,\n'
           '             generator=torch.Generator(device="cuda").manual_seed(42)).images[0]\n')
    npu = gpu.replace('"cuda"', '"npu"').replace("=50", "=40").replace("(42)", "(0)")
    r = pair(tmp_path, "infer.py", gpu, npu)
    assert rows(r) == [("SD101", "code:infer.py:<module>", 50, 40, 5, 5),
                       ("SD207", "seed", 42, 0, 6, 6)]
    assert {f.key: f.message for f in r.findings}["code:infer.py:<module>"] == \
        "pipe: argument num_inference_steps differs"
    assert pair(tmp_path / "same", "infer.py", gpu, gpu.replace('"cuda"', '"npu"')).findings == []


def test_a_device_setting_named_in_a_call_is_the_port(tmp_path):
    gpu = 'from xtuner.v1.ray.base import AcceleratorResourcesConfig\nres = AcceleratorResourcesConfig(accelerator="GPU", num_workers=8)\n'
    r = pair(tmp_path, "rl.py", gpu, gpu.replace('"GPU"', '"NPU"').replace("=8", "=16"))
    # xtuner's num_workers is the number of accelerators (rules/python.yaml fact_calls), not loader workers
    assert rows(r) == [("SD203", "world_size", 8, 16, 2, 2),
                       ("SD230", "data_parallel_size", 8, 16, 2, 2)]  # computed: follows from world_size
    assert [m.rule for m in r.masked] == ["SD004"]
    assert pair(tmp_path / "same", "rl.py", gpu, gpu.replace('"GPU"', '"NPU"')).findings == []


# --------------------------------------------------- 2. nested keys by their last segments

def test_nested_keys_of_a_framework_without_dialect(tmp_path):
    gpu = ("algo:\n  actor:\n    ppo_mini_batch_size: 256\n  rollout:\n    tensor_model_parallel_size: 2\n"
           "trainer:\n  precision: bf16-mixed\nfsdp_config:\n  fsdp_version: 1\ncompile:\n  enable: false\n")
    npu = gpu.replace("256", "32").replace(": 2", ": 4").replace("bf16-mixed", "16-mixed") \
        .replace("fsdp_version: 1", "fsdp_version: 2").replace("enable: false", "enable: true")
    r = pair(tmp_path, "run.yaml", gpu, npu)
    assert rows(r) == [
        ("SD203", "ppo_mini_batch_size", 256, 32, 3, 3),
        ("SD203", "tensor_model_parallel_size", 2, 4, 5, 5),
        ("SD205", "params_dtype", "bf16", "fp16", 7, 7),  # Lightning's precision strings
        ("SD210", "torch_compile", False, True, 11, 11),
        ("SD213", "fsdp_version", 1, 2, 9, 9),
    ]
    assert {f.key: f.message for f in r.findings}["tensor_model_parallel_size"] == (
        "batch size and parallelism: algo.rollout.tensor_model_parallel_size (tensor_model_parallel_size) "
        "is 2 on GPU and 4 on NPU")
    assert pair(tmp_path / "same", "run.yaml", gpu, gpu).findings == []


def test_two_settings_of_one_key_do_not_hide_each_other(tmp_path):
    """--block-size and --max-length both say seq_length: the one read last no longer hides
    the other; each is compared with its own spelling on the other side."""
    gpu = "torchrun train.py --max-length 2048 --block-size 1024\n"
    npu = "torchrun train.py --max-length 1024 --block-size 1024\n"
    r = pair(tmp_path, "run.sh", gpu, npu)
    assert rows(r) == [("SD204", "seq_length", 2048, 1024, 1, 1)]
    assert r.findings[0].message == "model structure: max-length (seq_length) is 2048 on GPU and 1024 on NPU"
    assert pair(tmp_path / "same", "run.sh", gpu, gpu).findings == []


def test_a_section_setting_is_compared_with_the_same_section(tmp_path):
    gpu = "actor:\n  optim:\n    lr: 1.0e-6\ncritic:\n  optim:\n    lr: 1.0e-5\n"
    npu = "critic:\n  optim:\n    lr: 2.0e-5\nactor:\n  optim:\n    lr: 1.0e-6\n"
    r = pair(tmp_path, "ppo.yaml", gpu, npu)
    assert rows(r) == [("SD202", "lr", 1e-5, 2e-5, 6, 3)]
    assert r.findings[0].message == "learning-rate schedule: critic.optim.lr (lr) is 1e-05 on GPU and 2e-05 on NPU"


# ------------------------------------------------------------------------------ 3. idioms

ATTN = '''import torch


def attention(q, k, v):
    scores = q @ k.transpose(-2, -1)
    probs = {first}
    return probs @ v


def attention2(q, k, v):
    scores = q @ k.transpose(-2, -1)
    probs = {second}
    return probs @ v
'''


def test_softmax_in_fp32_with_its_cast_back(tmp_path):
    gpu = ATTN.format(first="torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)",
                      second="scores.float().softmax(-1).type_as(q)")
    npu = ATTN.format(first="torch.softmax(scores, dim=-1)", second="scores.softmax(-1)")
    r = pair(tmp_path, "attn.py", gpu, npu)
    assert rows(r) == [("SD205", "attention_softmax_in_fp32", True, False, 6, 6),
                       ("SD205", "attention_softmax_in_fp32", True, False, 12, 12)]
    assert sorted(f.message for f in r.findings) == [
        "scores.float().softmax is computed in fp32 on GPU only: in the input's precision on NPU",
        "torch.softmax is computed in fp32 on GPU only: in the input's precision on NPU"]
    same = ATTN.format(first="torch.softmax(scores, dim = -1, dtype=torch.float32).to(q.dtype)",
                       second="scores.float().softmax(-1).type_as(q)  # fp32")
    assert pair(tmp_path / "same", "attn.py", gpu, same).findings == []


def test_autocast_is_the_training_precision(tmp_path):
    """autocast's dtype lands on params_dtype, as Lightning's precision string does."""
    gpu = ('import torch\nimport lightning as L\ntrainer = L.Trainer(precision="bf16-mixed")\n'
           'with torch.autocast("cuda", dtype=torch.bfloat16):\n    y = model(x)\n')
    npu = gpu.replace('"bf16-mixed"', '"16-mixed"').replace("torch.bfloat16", "torch.float16").replace('"cuda"', '"npu"')
    r = pair(tmp_path, "fit.py", gpu, npu)
    assert rows(r) == [("SD205", "params_dtype", "bf16", "fp16", 3, 3),
                       ("SD205", "params_dtype", "bf16", "fp16", 4, 4)]
    assert sorted(f.message for f in r.findings) == [
        "compute dtype: dtype (params_dtype) is bf16 on GPU and fp16 on NPU",
        "compute dtype: precision (params_dtype) is bf16 on GPU and fp16 on NPU"]
    r = pair(tmp_path / "same", "fit.py", gpu, gpu.replace('"cuda"', '"npu"'))
    assert r.findings == []


def test_set_compile_mode_is_npu_tuning_wherever_it_stands(tmp_path):
    gpu = "import torch\n\ndef main(args):\n    torch.manual_seed(0)\n    torch.cuda.set_device(args.local_rank)\n    model = build()\n"
    npu = ("import torch\nimport torch_npu\n\ndef main(args):\n    torch.manual_seed(0)\n"
           "    torch.npu.set_compile_mode(jit_compile=False)\n    model = build()\n")
    r = pair(tmp_path, "train.py", gpu, npu)
    # never paired with the GPU statement it happens to stand in for: that one is the GPU's own
    # device selected (SD022), the tuning the NPU's (SD020)
    assert r.findings == []
    assert sorted((m.rule, m.gpu.line if m.gpu else None, m.npu.line if m.npu else None) for m in r.masked) == [
        ("SD006", None, 2), ("SD020", None, 6), ("SD022", 5, None)]
    npu2 = ('import torch\n\nif torch.__version__ >= "1.8":\n    import torch_npu\n'
            '    torch.npu.set_compile_mode(jit_compile=False)\n\ndef main(args):\n    model = build()\n')
    r = pair(tmp_path / "if", "train.py", "import torch\n\ndef main(args):\n    model = build()\n", npu2)
    assert r.findings == []
    assert sorted((m.rule, m.npu.line) for m in r.masked) == [("SD006", 4), ("SD020", 5)]


def test_an_unused_mask_buffer_follows_from_the_attention_change(tmp_path):
    gpu = '''import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.register_buffer("bias", torch.tril(torch.ones(n, n)).view(1, 1, n, n))

    def forward(self, q, k, v):
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :4, :4] == 0, float("-inf"))
        return F.softmax(att, dim=-1) @ v
'''
    npu = gpu.replace('        self.register_buffer("bias", torch.tril(torch.ones(n, n)).view(1, 1, n, n))\n', "")
    npu = npu.replace('        att = att.masked_fill(self.bias[:, :, :4, :4] == 0, float("-inf"))\n', "")
    r = pair(tmp_path, "model.py", gpu, npu)
    buf = [f for f in r.findings if f.gpu is not None and f.gpu.line == 11]
    assert [(f.rule, f.severity, f.message) for f in buf] == [
        ("SD103", "info", "statement on GPU only: buffer 'bias', which the NPU side never reads; it follows from "
                          "the change of its uses (read at line 15, compared there)")]
    # the change itself is reported where it is: the masking removed
    assert [(f.rule, f.gpu.line) for f in r.findings if f.severity == "error"] == [("SD101", 15)]


def test_init_process_group_with_the_env_values_is_the_default(tmp_path):
    gpu = 'import os\nimport torch.distributed as dist\n\ndef main():\n    dist.init_process_group("nccl")\n'
    npu = ('import os\nimport torch.distributed as dist\n\ndef main():\n    rank = int(os.environ["RANK"])\n'
           '    world_size = int(os.environ["WORLD_SIZE"])\n'
           '    dist.init_process_group(backend="hccl", rank=rank, world_size=world_size)\n')
    r = pair(tmp_path, "dist.py", gpu, npu)
    assert [(f.rule, f.npu.line, f.message) for f in r.findings] == [
        ("SD103", 5, "configuration on NPU only: $RANK read into rank (its uses are compared by value)"),
        ("SD103", 6, "configuration on NPU only: $WORLD_SIZE read into world_size (its uses are compared by value)")]
    assert r.exit_code() == 0
    # another rank is still a difference
    r = pair(tmp_path / "other", "dist.py", gpu, npu.replace('int(os.environ["RANK"])', "0"))
    assert sorted((f.rule, f.message) for f in r.findings if f.severity != "info") == [
        ("SD102", "statement on NPU only"),
        ("SD102", "torch.distributed.init_process_group: argument rank is given on NPU only")]


# ------------------------------------------------------------------ 4. cosmetic by shape

def test_cosmetic_settings_by_their_words(tmp_path):
    gpu = ("wandb:\n  entity: team-a\n  project: gpu-runs\nwork_dir: /ckpt/gpu\nlog_level: INFO\n"
           "ssh_port: 60022\ntheoryflops: 989.0e12\nsave_tb_folder: tb_gpu\nlr: 1.0e-4\n")
    npu = ("wandb:\n  entity: team-b\n  project: npu-runs\nwork_dir: /ckpt/npu\nlog_level: DEBUG\n"
           "ssh_port: 8888\ntheoryflops: 752.0e12\nsave_tb_folder: tb_npu\nlr: 1.0e-4\n")
    r = pair(tmp_path, "run.yaml", gpu, npu)
    assert loud(r) == []
    assert {(f.rule, f.key) for f in r.findings} == {
        ("SD221", "wandb.entity"), ("SD221", "wandb.project"), ("SD221", "work_dir"), ("SD221", "log_level"),
        ("SD221", "ssh_port"), ("SD221", "theoryflops"), ("SD221", "save_tb_folder")}


def test_notes_for_people_are_cosmetic_and_a_setting_beside_them_is_not(tmp_path):
    """A `notes:` list or a `comment` only the NPU config writes is text for people (SD221,
    info); a rate set beside them on the NPU only is still loud."""
    gpu = "model: tiny\nlr: 1.0e-4\n"
    npu = ("model: tiny\nlr: 1.0e-4\nnotes:\n  - install the toolkit first\n  - smoke-test before long runs\n"
           "comment: ported by hand\nmix_ratio: 0.3\n")
    r = pair(tmp_path, "hw.yaml", gpu, npu)
    assert sorted((f.rule, f.severity, f.key, f.npu.line) for f in r.findings) == [
        ("SD220", "warning", "mix_ratio", 7), ("SD221", "info", "comment", 6), ("SD221", "info", "notes", 3)]


def test_data_loader_workers_however_named_are_throughput(tmp_path):
    """`workers_per_gpu`, `loader_workers`: how many processes load the data, not what they
    load (SD221 info); a batch size beside them is still loud."""
    gpu = "data:\n  samples_per_gpu: 8\n  workers_per_gpu: 3\n  loader_workers: 2\n"
    npu = "data:\n  samples_per_gpu: 16\n  workers_per_gpu: 8\n  loader_workers: 4\n"
    r = pair(tmp_path, "det.yaml", gpu, npu)
    assert sorted((f.rule, f.severity, f.key, f.gpu.value, f.npu.value) for f in r.findings) == [
        ("SD203", "error", "micro_batch_size", 8, 16),
        ("SD221", "info", "data.loader_workers", 2, 4), ("SD221", "info", "data.workers_per_gpu", 3, 8)]


def test_a_path_moved_between_machines_is_info_another_model_is_not(tmp_path):
    gpu = "torchrun pretrain_gpt.py --load /data/models/Qwen2.5-7B --data-path /data/sets/alpaca_text_document\n"
    npu = ("torchrun pretrain_gpt.py --load /home/ma-user/work/models/Qwen2.5-7B "
           "--data-path /home/ma-user/sets/alpaca_text_document\n")
    r = pair(tmp_path, "pretrain.sh", gpu, npu)
    assert rows(r) == [
        ("SD227", "data_path", "/data/sets/alpaca_text_document", "/home/ma-user/sets/alpaca_text_document", 1, 1),
        ("SD227", "load", "/data/models/Qwen2.5-7B", "/home/ma-user/work/models/Qwen2.5-7B", 1, 1)]
    assert {f.key: f.message for f in r.findings}["load"] == (
        "data and initial checkpoint: load is /data/models/Qwen2.5-7B on GPU and /home/ma-user/work/models/Qwen2.5-7B "
        "on NPU: the same models/Qwen2.5-7B in another place (a path moved between machines)")
    r = pair(tmp_path / "other", "pretrain.sh", gpu, npu.replace("Qwen2.5-7B", "Qwen2-7B"))
    assert [(f.rule, f.key) for f in r.findings if f.severity != "info"] == [("SD212", "load")]
    r = pair(tmp_path / "ckpt", "pretrain.sh", "torchrun pretrain_gpt.py --load /a/exp1/checkpoint\n",
             "torchrun pretrain_gpt.py --load /b/exp2/checkpoint\n")
    assert [(f.rule, f.key) for f in r.findings] == [("SD212", "load")]  # "checkpoint" names nothing by itself


def test_tensor_names_and_output_paths_are_not_withheld(tmp_path):
    assert not is_secret_name("blocks.0.attn.key") and not is_secret_name("model.dist_token")
    assert is_secret_name("hub_token") and is_secret_name("secrets.0.password")
    assert not is_secret_value("outputs/8f3e2a9b7c6d5e4f3a2b1c0d9e8f7a6b1234")
    assert is_secret_value("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")  # a base64 key with slashes stays one
    gpu = "output_dir: outputs/8f3e2a9b7c6d5e4f3a2b1c0d9e8f7a6b1234\nfreeze:\n  vit.blocks.0.attn.key: true\n"
    npu = "output_dir: outputs/1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f\nfreeze:\n  vit.blocks.0.attn.key: false\n"
    r = pair(tmp_path, "sft.yaml", gpu, npu)
    got = {f.key: (f.gpu.value, f.npu.value) for f in r.findings}
    assert got["save"] == ("outputs/8f3e2a9b7c6d5e4f3a2b1c0d9e8f7a6b1234", "outputs/1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f")
    assert got["freeze.vit.blocks.0.attn.key"] == (True, False)


# ------------------------------------------------------------ 5. defaults by framework version

def megatron_tree(root: Path, minor: int, flag: str) -> None:
    write(root / "pretrain.sh", f"torchrun pretrain_gpt.py --lr 1e-4{flag}\n")
    write(root / "megatron" / "core" / "package_info.py",
          f"MAJOR = 0\nMINOR = {minor}\nPATCH = 0\n__package_name__ = 'megatron_core'\n")


def test_a_default_is_that_of_the_sides_release(tmp_path):
    megatron_tree(tmp_path / "a" / "gpu", 7, " --no-use-mcore-models")
    megatron_tree(tmp_path / "a" / "npu", 7, "")
    r = api.diff(str(tmp_path / "a" / "gpu"), str(tmp_path / "a" / "npu"), Options(use_cache=False))
    assert r.findings == [] and r.exit_code() == 0  # Megatron core 0.7 defaults to the legacy models
    megatron_tree(tmp_path / "b" / "gpu", 7, " --no-use-mcore-models")
    megatron_tree(tmp_path / "b" / "npu", 12, "")
    r = api.diff(str(tmp_path / "b" / "gpu"), str(tmp_path / "b" / "npu"), Options(use_cache=False))
    assert rows(r) == [("SD204", "use_mcore_models", False, True, 1, None),
                       ("SD401", "pkg:megatron-core", "0.7.0", "0.12.0", 1, 1)]
    f = next(x for x in r.findings if x.key == "use_mcore_models")
    assert f.npu.via == "megatron 0.12.0 default"


def test_an_unknown_release_names_both_defaults(tmp_path):
    r = pair(tmp_path, "pretrain.sh", "torchrun pretrain_gpt.py --lr 1e-4 --no-use-mcore-models\n",
             "torchrun pretrain_gpt.py --lr 1e-4\n")
    assert rows(r) == [("SD224", "use_mcore_models", False, True, 1, None)]
    assert "megatron's default is on since core_r0.8.0 and was off before, and the NPU side's megatron " \
           "version is not known" in r.findings[0].message


# ------------------------------------------------------------- 6. a config known by its name

def test_a_deepspeed_config_named_but_absent_says_its_stage(tmp_path):
    gpu = "deepspeed --num_gpus 8 src/train.py \\\n    --deepspeed examples/deepspeed/ds_z3_config.json \\\n    --lr 1e-5\n"
    r = pair(tmp_path, "run.sh", gpu, gpu.replace("ds_z3", "ds_z0"))
    zs = [f for f in r.findings if f.key == "zero_stage"]
    assert [(f.rule, f.gpu.value, f.npu.value, f.gpu.line, f.npu.line, f.gpu.via, f.message) for f in zs] == [
        ("SD213", 3, 0, 2, 2, "file name ds_z3_config.json",
         "distributed optimizer and ZeRO: deepspeed (zero_stage) is 3 on GPU and 0 on NPU (read from the file "
         "name, the config was not found)")]
    # the names say nothing when both configs are read: their contents are compared
    for side, stage in (("gpu", 3), ("npu", 0)):
        write(tmp_path / "cfgs" / side / "examples" / "deepspeed" / f"ds_z{stage}_config.json",
              '{"zero_optimization": {"stage": %d}}' % stage)
    g = write(tmp_path / "cfgs" / "gpu" / "run.sh", gpu)
    n = write(tmp_path / "cfgs" / "npu" / "run.sh", gpu.replace("ds_z3", "ds_z0"))
    r = diff_files([g], [n], Options(use_cache=False))
    assert [(f.rule, f.gpu.value, f.npu.value, f.gpu.via) for f in r.findings if f.key == "zero_stage"] == [
        ("SD213", 3, 0, "zero_optimization.stage")]


def test_a_deepspeed_preset_says_its_stage(tmp_path):
    base = "NPROC_PER_NODE=2 swift sft --model Qwen/Qwen2.5-7B --deepspeed {}\n"
    r = pair(tmp_path, "sft.sh", base.format("zero3"), base.format("zero2"))
    assert rows(r) == [("SD213", "zero_stage", 3, 2, 1, 1)]  # and no finding of its own for the preset's name
    assert r.findings[0].message == ("distributed optimizer and ZeRO: deepspeed (zero_stage) is 3 on GPU and 2 on "
                                     "NPU (read from the preset name)")
    assert pair(tmp_path / "same", "sft.sh", base.format("zero3"), base.format("zero3")).findings == []


# ------------------------------------------------------------------------ the version file

def test_version_file_kind_reads_its_release_and_says_what_it_cannot(tmp_path):
    from scriptdiff.ruleset.registry import detect_kind
    from scriptdiff.inputs.sources import Source

    text = "MAJOR = 0\nMINOR = 8\nPATCH = 0\nPRE_RELEASE = 'rc0'\n__package_name__ = 'megatron_core'\n"
    assert detect_kind(Source(name="megatron/core/package_info.py", data=text.encode())) == "versionfile"
    assert detect_kind(Source(name="package_info.py", data=b"VERSION = '1.0'\n")) == "python"
    r = pair(tmp_path, "package_info.py", text, text.replace("MINOR = 8", "MINOR = 9"))
    assert rows(r) == [("SD401", "pkg:megatron-core", "0.8.0rc0", "0.9.0rc0", 1, 1)]
    assert pair(tmp_path / "same", "package_info.py", text, text).findings == []
    r = pair(tmp_path / "bad", "package_info.py", text, "MAJOR = (\n__package_name__ = 'megatron_core'\n")
    assert [(e.path.rsplit("/", 1)[-1], e.message) for e in r.errors] == [
        ("package_info.py", "not valid Python (SyntaxError); its version was not read")]


@pytest.mark.parametrize("gpu,npu,want", [
    ("use_npu: false\n", "", []),
    ("", "use_npu: true\n", []),
    ("use_cuda: true\n", "use_cuda: false\n", []),
    ("use_npu: true\n", "", [("SD220", "use_npu", True, None, 2, None)]),
    ("", "use_npu: false\n", [("SD220", "use_npu", None, False, None, 2)]),
])
def test_a_device_flag_saying_the_sides_own_device_is_the_port(tmp_path, gpu, npu, want):
    """A switch named by a device (`use_npu`, `use_cuda`) whose written values say each side's
    own device is the port (SD015, masked); one that says the other device is a difference."""
    r = pair(tmp_path, "launch.yaml", "lr: 1.0e-4\n" + gpu, "lr: 1.0e-4\n" + npu)
    assert [(f, k, gv, nv, gl, nl) for f, k, gv, nv, gl, nl in loud(r)] == want
    assert [m.rule for m in r.masked] == ([] if want else ["SD015"])


def test_the_gpu_named_on_the_gpu_side_alone_is_the_port(tmp_path):
    """`--device_target=GPU` in the GPU launch, none in the NPU one (the framework's default there):
    the run's own device said (SD015, masked); a launch that asks for the CPU is a difference."""
    gpu = "python train.py --device_target=GPU --lr 0.1\n"
    npu = "python train.py --lr 0.1\n"
    r = pair(tmp_path, "run.sh", gpu, npu)
    assert [f for f in r.findings if f.severity != "info"] == []
    assert [(m.rule, m.gpu.line, m.npu) for m in r.masked] == [("SD015", 1, None)]
    r = pair(tmp_path / "cpu", "run.sh", gpu.replace("GPU", "CPU"), npu)
    assert [(f.rule, f.key, f.gpu.value, f.gpu.line) for f in r.findings if f.severity != "info"] == [
        ("SD220", "device_target", "CPU", 1)]


def test_which_device_by_its_index_is_placement(tmp_path):
    """`--gpu 0` on the GPU side, `--device-id 3` on the NPU side: which device the one process
    uses (SD221 info each); the batch size beside them is still loud."""
    gpu = "python train.py --gpu 0 --batch-size 32\n"
    npu = "python train.py --device-id 3 --batch-size 16\n"
    r = pair(tmp_path, "run.sh", gpu, npu)
    assert sorted((f.rule, f.severity, f.key) for f in r.findings) == [
        ("SD203", "error", "micro_batch_size"), ("SD221", "info", "device_id"), ("SD221", "info", "gpu")]


def test_a_config_of_several_yaml_documents_is_read_whole(tmp_path):
    """Settings, then `---` and their descriptions (a model zoo's config): the first document's
    settings under their keys, each later document's under `document_K`, with their lines; one
    such file was "not valid YAML" before."""
    gpu = "device_target: GPU\nbatch_size: 150\nlr_max: 0.8\n---\nbatch_size: 'images a step'\nlr_max: 'peak lr'\n"
    npu = "device_target: Ascend\nbatch_size: 256\nlr_max: 0.8\n---\nbatch_size: 'images a step'\nlr_max: 'the peak lr'\n"
    r = pair(tmp_path, "default_config.yaml", gpu, npu)
    assert r.errors == []
    assert sorted((f.rule, f.key, f.gpu.value, f.npu.value, f.gpu.line, f.npu.line) for f in r.findings) == [
        ("SD203", "micro_batch_size", 150, 256, 2, 2),
        ("SD220", "document_2.lr_max", "peak lr", "the peak lr", 6, 6)]
    assert [m.rule for m in r.masked] == ["SD015"]  # device_target GPU -> Ascend
