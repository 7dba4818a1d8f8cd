"""Fixture pairs under fixtures/launch/: a faithful port gives no warning or error; each
injected difference gives exactly the expected finding (rule, key, both values, both lines)."""
from __future__ import annotations

from pathlib import Path

import pytest

from scriptdiff.model import Options
from scriptdiff.run.pipeline import diff_files

# what each masked port edit keeps (issue 43: SD023, SD027) is tests/test_fidelity.py's; not these tests
PORT_NOTES = ["SD023", "SD027"]

ROOT = Path(__file__).resolve().parent.parent / "fixtures" / "launch"


def diff(kind: str, name: str, npu_dir: str = "npu"):
    g = ROOT / kind / "gpu" / name
    n = ROOT / kind / npu_dir / name
    return diff_files([str(g)], [str(n)], Options(use_cache=False, ignore=PORT_NOTES))


def rows(report):
    return sorted((f.rule, f.key, f.gpu.value if f.gpu else None, f.npu.value if f.npu else None,
                   f.gpu.line if f.gpu else None, f.npu.line if f.npu else None, f.derived)
                  for f in report.findings if f.severity in ("error", "warning"))


CASES = [
    ("megatron", "pretrain_llama2_7b.sh"),
    ("deepspeed", "finetune.sh"),
    ("deepspeed", "ds_config_zero2.json"),
    ("verl", "run_qwen2_7b_grpo.sh"),
    ("llamafactory", "llama3_lora_sft.yaml"),
]


@pytest.mark.parametrize("kind,name", CASES)
def test_faithful_port_has_no_warning_or_error(kind, name):
    rep = diff(kind, name)
    assert rows(rep) == []
    assert rep.errors == []
    assert rep.exit_code() == 0


def test_megatron_faithful_port_masks_and_infos():
    rep = diff("megatron", "pretrain_llama2_7b.sh")
    assert sorted(m.rule for m in rep.masked) == ["SD010", "SD010", "SD010", "SD011", "SD012"]
    assert sorted((f.rule, f.key) for f in rep.findings) == [
        ("SD221", "master_port"), ("SD302", "env:HCCL_CONNECT_TIMEOUT"), ("SD302", "env:TASK_QUEUE_ENABLE"),
        ("SD302", "env:source set_env.sh"), ("SD303", "env:NCCL_IB_DISABLE"), ("SD303", "env:NCCL_SOCKET_IFNAME")]


def test_megatron_injected():
    rep = diff("megatron", "pretrain_llama2_7b.sh", "npu_injected")
    assert rows(rep) == [
        ("SD201", "use_flash_attn", True, False, 63, None, False),
        ("SD202", "lr", 1.25e-06, 2.5e-06, 25, 26, False),
        ("SD203", "tensor_model_parallel_size", 2, 4, 23, 24, False),
        ("SD207", "seed", 42, 1234, 73, None, False),
        ("SD306", "env:NCCL_DETERMINISTIC", "1", "false", 6, 7, False),
    ]
    seed = next(f for f in rep.findings if f.key == "seed")
    assert "commented out at line 74" in seed.message
    dp = next(f for f in rep.findings if f.key == "data_parallel_size")
    assert dp.gpu.source == "derived" and "world_size=8" in dp.gpu.via and "tensor_model_parallel_size=4" in dp.npu.via
    # computed from TP and the world size, not set: they follow from TP (SD230, info)
    assert sorted((f.rule, f.key, f.gpu.value, f.npu.value) for f in rep.findings if f.rule == "SD230") == [
        ("SD230", "data_parallel_size", 2, 1), ("SD230", "gradient_accumulation_steps", 32, 64)]
    assert dp.severity == "info" and dp.message.endswith(
        "(tensor_model_parallel_size is 2 on GPU and 4 on NPU)")
    det = next(f for f in rep.findings if f.key == "env:NCCL_DETERMINISTIC")
    assert det.severity == "error"


def test_deepspeed_launcher_with_followed_config_injected():
    rep = diff("deepspeed", "finetune.sh", "npu_injected")
    assert rows(rep) == [
        ("SD201", "use_flash_attn", True, False, 23, 22, False),
        ("SD202", "lr", 2e-05, 1e-05, 16, 15, False),
        ("SD203", "world_size", 8, 4, 8, 26, False),
        ("SD206", "adam_beta2", 0.999, 0.95, 13, 12, False),
        ("SD208", "clip_grad", 1.0, 0.5, 5, 14, False),
        ("SD213", "zero_stage", 2, 3, 19, 8, False),
    ]
    # computed, not set: both follow from world_size (SD230, info)
    assert sorted((f.rule, f.severity, f.key, f.gpu.value, f.npu.value) for f in rep.findings
                  if f.rule == "SD230") == [("SD230", "info", "data_parallel_size", 8, 4),
                                            ("SD230", "info", "global_batch_size", 256, 128)]
    clip = next(f for f in rep.findings if f.key == "clip_grad")
    assert clip.gpu.path.endswith("gpu/ds_config_zero2.json") and clip.npu.path.endswith("npu_injected/ds_config_zero2.json")


def test_deepspeed_json_injected():
    rep = diff("deepspeed", "ds_config_zero2.json", "npu_injected")
    assert rows(rep) == [
        ("SD206", "adam_beta2", 0.999, 0.95, 13, 12, False),
        ("SD208", "clip_grad", 1.0, 0.5, 5, 14, False),
        ("SD213", "zero_stage", 2, 3, 19, 8, False),
    ]


def test_verl_hydra_injected():
    rep = diff("verl", "run_qwen2_7b_grpo.sh", "npu_injected")
    assert rows(rep) == [
        ("SD202", "lr", 1e-06, 5e-06, 9, 19, False),  # the actor's lr: verl dialect (rules/verl.yaml)
        ("SD220", "actor_rollout_ref.rollout.n", 5, 8, 32, 32, False),
    ]
    lr = next(f for f in rep.findings if f.key == "lr")
    assert lr.gpu.via == "verl (Hydra overrides), $ACTOR_LR"  # the dialect, then the variable


def test_llamafactory_yaml_injected():
    rep = diff("llamafactory", "llama3_lora_sft.yaml", "npu_injected")
    assert rows(rep) == [
        ("SD201", "use_flash_attn", True, False, 36, 36, False),
        ("SD204", "lora_rank", 8, 16, 9, 10, False),
        ("SD204", "seq_length", 2048, 1024, 16, 16, False),
        ("SD213", "zero_stage", 0, 2, 8, 8, False),
    ]
