"""Every edge case of the nearest existing tool (msprobe config_check, anchor section 3), done right.

Each test writes a GPU and an NPU file, runs the real pipeline and asserts the exact findings
(rule, key, both values, both lines), or their absence.
"""
from __future__ import annotations

import json

from scriptdiff.model import Options
from scriptdiff.run.pipeline import diff_files


def run(tmp_path, gpu: str, npu: str, gname="pretrain.sh", nname=None):
    g = tmp_path / "gpu" / gname
    n = tmp_path / "npu" / (nname or gname)
    g.parent.mkdir(parents=True, exist_ok=True)
    n.parent.mkdir(parents=True, exist_ok=True)
    g.write_text(gpu)
    n.write_text(npu)
    return diff_files([str(g)], [str(n)], Options(use_cache=False))


def rows(report, severities=("error", "warning")):
    return sorted((f.rule, f.key, f.gpu.value if f.gpu else None, f.npu.value if f.npu else None,
                   f.gpu.line if f.gpu else None, f.npu.line if f.npu else None)
                  for f in report.findings if f.severity in severities)


def table(report, side=0):
    return {k: (g if side == 0 else n) for k, g, n in report.table}


def test_one_line_args_string_keeps_every_flag(tmp_path):
    # msprobe: "use-flash-attn": "--bf16", and bf16 is lost
    script = 'GPT_ARGS="--use-flash-attn --bf16 --lr 1e-4"\ntorchrun pretrain_gpt.py $GPT_ARGS\n'
    rep = run(tmp_path, script, script.replace("--bf16 ", ""))
    t = table(rep)
    assert t["use_flash_attn"].value is True and t["params_dtype"].value == "bf16"
    assert rows(rep) == [("SD205", "params_dtype", "bf16", "fp32", 1, None)]


def test_variable_names_are_anchored(tmp_path):
    # msprobe: $LR resolved to 1e-6 because LR= also matched MIN_LR=
    script = "LR=1e-4\nMIN_LR=1e-6\ntorchrun pretrain_gpt.py --lr $LR --min-lr $MIN_LR\n"
    rep = run(tmp_path, script, script)
    t = table(rep)
    assert t["lr"].value == 1e-4 and t["lr"].line == 1 and t["lr"].via == "$LR"
    assert t["min_lr"].value == 1e-6 and t["min_lr"].line == 2
    assert rows(rep) == []


def test_key_equals_value(tmp_path):
    # msprobe: --micro-batch-size=2 became true
    rep = run(tmp_path, "torchrun pretrain_gpt.py --micro-batch-size=2\n", "torchrun pretrain_gpt.py --micro-batch-size 4\n")
    assert rows(rep) == [("SD203", "micro_batch_size", 2, 4, 1, 1)]


def test_braces_arrays_python_and_deepspeed_launchers_are_read(tmp_path):
    # msprobe: ${GPT_ARGS}, bash arrays, python train.py and deepspeed were skipped
    gpu = 'GPT_ARGS="--lr 1e-4"\nARR=(--seed 7)\ntorchrun pretrain_gpt.py ${GPT_ARGS} "${ARR[@]}"\n'
    npu = 'GPT_ARGS="--lr 2e-4"\nARR=(--seed 8)\ntorchrun pretrain_gpt.py ${GPT_ARGS} "${ARR[@]}"\n'
    assert rows(run(tmp_path / "a", gpu, npu)) == [("SD202", "lr", 1e-4, 2e-4, 1, 1), ("SD207", "seed", 7, 8, 2, 2)]
    rep = run(tmp_path / "b", "python train.py --learning_rate 1e-5\n", "deepspeed train.py --learning_rate 2e-5\n")
    assert rows(rep) == [("SD202", "lr", 1e-5, 2e-5, 1, 1)]


def test_yml_config_is_read(tmp_path):
    # msprobe: ValueError: Invalid parser type for .yml
    rep = run(tmp_path, "learning_rate: 1.0e-4\n", "learning_rate: 2.0e-4\n", gname="cfg.yml")
    assert rows(rep) == [("SD202", "lr", 1e-4, 2e-4, 1, 1)]
    assert rep.errors == []


def test_value_that_looks_like_a_flag_never_crashes(tmp_path):
    # msprobe: RuntimeError "Malicious value [--bf16]" when a value was "--bf16"
    rep = run(tmp_path, "torchrun pretrain_gpt.py --use-flash-attn --bf16\n", "torchrun pretrain_gpt.py --use-flash-attn --fp16\n")
    assert rows(rep) == [("SD205", "params_dtype", "bf16", "fp16", 1, 1)]
    json.dumps(rep.to_json())


def test_missing_pp_is_compared_with_the_default_not_fuzzily_matched(tmp_path):
    # msprobe: KeyError when bench has TP and PP and cmp only TP
    gpu = "torchrun pretrain_gpt.py --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2\n"
    npu = "torchrun pretrain_gpt.py --tensor-model-parallel-size 2\n"
    assert rows(run(tmp_path, gpu, npu)) == [("SD203", "pipeline_model_parallel_size", 2, 1, 1, None)]


def test_pp_and_tp_hidden_and_ffn_are_never_paired(tmp_path):
    # msprobe: PASS with 0 rows ("fuzzy matched pipeline to tensor, similarity 0.81")
    gpu = "torchrun pretrain_gpt.py --pipeline-model-parallel-size 2 --hidden-size 4096\n"
    npu = "torchrun pretrain_gpt.py --tensor-model-parallel-size 2 --ffn-hidden-size 4096\n"
    assert rows(run(tmp_path, gpu, npu)) == [
        ("SD203", "pipeline_model_parallel_size", 2, 1, 1, None),
        ("SD203", "tensor_model_parallel_size", 1, 2, None, 1),
        ("SD204", "ffn_hidden_size", None, 4096, None, 1),
        ("SD204", "hidden_size", 4096, None, 1, None),
    ]


def test_nested_yaml_keys_are_compared_section_by_section(tmp_path):
    # msprobe: actor.optim.lr collapsed to lr and hidden behind critic.optim.lr
    gpu = "actor:\n  optim:\n    lr: 1.0e-6\ncritic:\n  optim:\n    lr: 1.0e-5\n"
    npu = "critic:\n  optim:\n    lr: 1e-5\nactor:\n  optim:\n    lr: 5e-6\n"
    rep = run(tmp_path, gpu, npu, gname="ppo.yaml")
    # each section's lr lands on lr as that section's setting (issue 27): the actor's compared
    # with the actor's, the critic's with the critic's, neither hidden behind the other
    assert rows(rep) == [("SD202", "lr", 1e-6, 5e-6, 3, 6)]
    assert [f.message for f in rep.findings] == ["learning-rate schedule: actor.optim.lr (lr) is 1e-06 on GPU and 5e-06 on NPU"]


def test_no_env_vars_anywhere_passes(tmp_path):
    # msprobe: env check shows warnings (HCCL_INTRA_ROCE rows) and can never pass
    rep = run(tmp_path, "torchrun pretrain_gpt.py --lr 1e-4\n", "torchrun pretrain_gpt.py --lr 1e-4\n")
    assert rep.findings == [] and rep.exit_code() == 0


def test_side_without_hyperparameters_is_said(tmp_path):
    # msprobe: the hyperparameters row silently disappears
    rep = run(tmp_path, "torchrun pretrain_gpt.py --lr 1e-4\n", "echo nothing to launch here\n")
    assert [e.message for e in rep.errors] == [
        "no launcher command (torchrun, deepspeed, accelerate launch, msrun, python) found; "
        "only environment exports were read"]
    # said, not invented: the NPU side is not understood, and the lr it leaves uncompared is named
    assert [(f.rule, f.npu.value) for f in rep.findings] == [
        ("SD154", "no settings could be read from it; 1 setting(s) of the other side could not be compared: lr")]
    assert rep.exit_code() == 1


def test_numerically_equal_values_and_switch_spellings_are_equal(tmp_path):
    # msprobe: min-lr 1.0e-6 vs 1e-6 was an error; NCCL_DETERMINISTIC=1 vs HCCL_DETERMINISTIC=true an error
    gpu = "export NCCL_DETERMINISTIC=1\ntorchrun pretrain_gpt.py --min-lr 1.0e-6\n"
    npu = "export HCCL_DETERMINISTIC=true\ntorchrun pretrain_gpt.py --min-lr 1e-6\n"
    rep = run(tmp_path, gpu, npu)
    assert rep.findings == []
    assert [m.rule for m in rep.masked] == ["SD010"]


def test_nccl_to_hccl_is_masked_and_flash_attention_is_an_error(tmp_path):
    # msprobe: nccl -> hccl was an error, and a flash-attention mismatch only a warning
    gpu = "torchrun pretrain_gpt.py --distributed-backend nccl --use-flash-attn\n"
    npu = "torchrun pretrain_gpt.py --distributed-backend hccl\n"
    rep = run(tmp_path, gpu, npu)
    assert rows(rep) == [("SD201", "use_flash_attn", True, False, 1, None)]
    assert [f.severity for f in rep.findings] == ["error"]
    assert [m.rule for m in rep.masked] == ["SD011"]


def test_launcher_options_are_not_model_arguments(tmp_path):
    # msprobe mixed nproc_per_node / master_addr into the model arguments
    gpu = "torchrun --nproc_per_node 8 --master_addr 10.0.0.1 --master_port 6000 pretrain_gpt.py --lr 1e-4\n"
    npu = "torchrun --nproc_per_node=8 --master_addr=10.0.0.2 --master_port=6001 pretrain_gpt.py --lr 1e-4\n"
    rep = run(tmp_path, gpu, npu)
    assert rows(rep) == []
    assert sorted((f.rule, f.key) for f in rep.findings) == [("SD221", "master_addr"), ("SD221", "master_port")]
    assert table(rep)["world_size"].value == 8


def test_the_fake_pack_of_section_3(tmp_path):
    # the whole pack msprobe was run on: LR 1e-4 vs 0.0002, min-lr 1.0e-6 vs 1e-6, flash attention on GPU only,
    # NPU adds --use-fused-rmsnorm --use-mcore-models, nccl vs hccl, NCCL_DETERMINISTIC=1 vs HCCL_DETERMINISTIC=true
    gpu = ("export NCCL_DETERMINISTIC=1\nLR=1e-4\nGPT_ARGS=\"--num-layers 32 --use-flash-attn --min-lr 1.0e-6\"\n"
           "torchrun --nproc_per_node 8 pretrain_llama.py $GPT_ARGS --lr $LR --distributed-backend nccl\n")
    npu = ("export HCCL_DETERMINISTIC=true\nLR=0.0002\nGPT_ARGS=\"--num-layers 32 --min-lr 1e-6 --use-fused-rmsnorm "
           "--use-mcore-models\"\ntorchrun --nproc_per_node 8 pretrain_llama.py $GPT_ARGS --lr $LR --distributed-backend hccl\n")
    rep = run(tmp_path, gpu, npu, gname="pretrain_llama.sh")
    assert rows(rep, ("error", "warning", "info")) == [
        ("SD201", "use_flash_attn", True, False, 3, None),
        ("SD202", "lr", 1e-4, 2e-4, 2, 2),
        ("SD210", "use_fused_rmsnorm", False, True, None, 3),
    ]
    assert sorted(m.rule for m in rep.masked) == ["SD010", "SD011"]
    # --use-mcore-models is Megatron's default since core 0.8: the same setting, no finding
    assert table(rep, 1)["use_mcore_models"].value is True
