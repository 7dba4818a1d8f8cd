"""Launchers and dialects of real training frameworks in launch scripts (issue 13, shell half):
ms-swift (`swift sft`, `megatron sft` with NPROC_PER_NODE/NNODES), Ray (`ray job submit --
python3 -m verl...`), the generic fallback (python/torchrun/accelerate/deepspeed programs),
`--flag ""`, `$(expr ...)`, the expected NPU edits of launch scripts, and the dialect named
in the report. Each launcher: exact findings (rule, key, both values, both lines) and a
faithful port with none."""
from __future__ import annotations

import pytest

from scriptdiff.model import SideContext
from scriptdiff.run.pipeline import diff_files
from scriptdiff.lang import shell
from scriptdiff.model import Options
from scriptdiff.ruleset.rules import code
from scriptdiff.inputs.sources import Source


def pair(tmp_path, gpu: str, npu: str, name: str = "run.sh"):
    for side, text in (("gpu", gpu), ("npu", npu)):
        p = tmp_path / side / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return diff_files([str(tmp_path / "gpu" / name)], [str(tmp_path / "npu" / name)], Options(use_cache=False))


def rows(report, severities=("error", "warning")):
    return sorted((f.rule, f.key, (f.gpu.value if f.gpu else None), (f.npu.value if f.npu else None),
                   (f.gpu.line if f.gpu else None), (f.npu.line if f.npu else None))
                  for f in report.findings if f.severity in severities)


def facts(text: str, side: str = "gpu"):
    ex = shell.extract(Source(name="run.sh", data=text.encode()), SideContext(side))
    return ex, {f.key: f for f in ex.facts}


# --- ms-swift ---------------------------------------------------------------------------------

SWIFT = """nproc_per_node={n}
CUDA_VISIBLE_DEVICES=0,1 \\
NPROC_PER_NODE=$nproc_per_node \\
MASTER_PORT=29500 \\
swift sft \\
    --model Qwen/Qwen2.5-7B-Instruct \\
    --per_device_train_batch_size {bs} \\
    --gradient_accumulation_steps $(expr 16 / $nproc_per_node) \\
    --packing true
"""


def test_swift_sft_reads_options_and_world_size_from_the_environment(tmp_path):
    report = pair(tmp_path, SWIFT.format(n=2, bs=1), SWIFT.format(n=8, bs=1))
    assert rows(report) == [
        ("SD203", "gradient_accumulation_steps", 8, 2, 8, 8),
        ("SD203", "world_size", 2, 8, 1, 1),
    ]
    # computed (world_size / (tp * pp)), not set: it follows from world_size
    assert rows(report, ("info",)) == [("SD230", "data_parallel_size", 2, 8, 1, 1)]
    assert report.errors == [] and all(i.status == "understood" for i in report.inputs)


def test_swift_sft_faithful_port_has_no_finding(tmp_path):
    npu = SWIFT.format(n=2, bs=1).replace("CUDA_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES")
    report = pair(tmp_path, SWIFT.format(n=2, bs=1), npu)
    assert rows(report, ("error", "warning", "info")) == []
    assert [m.rule for m in report.masked] == [code("env-var-renamed")]


def test_swift_facts_name_the_environment_they_came_from():
    ex, f = facts(SWIFT.format(n=4, bs=2))
    assert f["world_size"].value == 4 and f["world_size"].via == "NPROC_PER_NODE * NNODES ($nproc_per_node)"
    assert f["master_port"].value == 29500 and f["master_port"].line == 4
    assert f["micro_batch_size"].value == 2 and f["load"].value == "Qwen/Qwen2.5-7B-Instruct"
    assert f["packing"].value is True  # `--packing true` is the bare flag's value
    # NPROC_PER_NODE and MASTER_PORT became launcher facts, not environment facts as well
    assert "env:NPROC_PER_NODE" not in f and "env:MASTER_PORT" not in f and "env:CUDA_VISIBLE_DEVICES" in f
    assert ex.frameworks == {"hf"} and ex.unread == [] and ex.errors == []


def test_swift_exported_environment_counts_too():
    ex, f = facts("export NPROC_PER_NODE=4\nexport NNODES=2\nswift pt --lr 1e-4\n")
    assert f["world_size"].value == 8 and f["world_size"].line == 1


def test_swift_without_nproc_is_one_process_and_states_no_world_size():
    ex, f = facts("CUDA_VISIBLE_DEVICES=0 swift sft --learning_rate 1e-4\n")
    assert "world_size" not in f and f["lr"].value == 1e-4


MEGATRON = """NNODES=2 \\
NPROC_PER_NODE={n} \\
megatron sft \\
    --model Qwen/Qwen2.5-14B \\
    --tensor_model_parallel_size 2 \\
    --micro_batch_size 1 \\
    --global_batch_size 16 \\
    --recompute_granularity selective \\
    {extra}
"""


def test_megatron_sft_is_megatron_with_swift_bool_form(tmp_path):
    report = pair(tmp_path, MEGATRON.format(n=4, extra="--lr 1e-5"),
                  MEGATRON.format(n=8, extra="--lr 1e-5 \\\n    --no_gradient_accumulation_fusion true"))
    assert rows(report) == [
        ("SD203", "world_size", 8, 16, 2, 2),
        ("SD210", "gradient_accumulation_fusion", True, False, None, 10),
    ]
    # computed, not set (dp = world_size / (tp * pp), gas = 16 / (1 * dp)): they follow from world_size
    assert [r for r in rows(report, ("info",)) if r[0] == "SD230"] == [
        ("SD230", "data_parallel_size", 4, 8, 2, 2), ("SD230", "gradient_accumulation_steps", 4, 2, 2, 2)]


def test_megatron_sft_faithful_port_has_no_finding(tmp_path):
    gpu = "CUDA_VISIBLE_DEVICES=0,1,2,3 \\\n" + MEGATRON.format(n=4, extra="--lr 1e-5")
    npu = "ASCEND_RT_VISIBLE_DEVICES=0,1,2,3 \\\n" + MEGATRON.format(n=4, extra="--lr 1e-5")
    report = pair(tmp_path, gpu, npu)
    assert rows(report, ("error", "warning", "info")) == []


def test_no_flag_false_keeps_the_feature_on():
    ex, f = facts("megatron sft --micro_batch_size 1 --no_masked_softmax_fusion false\n")
    assert f["masked_softmax_fusion"].value is True and ex.frameworks == {"megatron"}


# --- Ray --------------------------------------------------------------------------------------

RAY = """ray job submit --address="http://127.0.0.1:8265" \\
    --runtime-env=verl/trainer/runtime_env.yaml \\
    --no-wait \\
    -- \\
    python3 -m verl.trainer.main_ppo \\
    data.train_batch_size={bs} \\
    actor_rollout_ref.actor.optim.lr=1e-6 \\
    trainer.device={device}
"""


def test_ray_job_submit_reads_the_program_after_the_separator(tmp_path):
    report = pair(tmp_path, RAY.format(bs=1024, device="cuda"), RAY.format(bs=512, device="npu"))
    assert rows(report) == [("SD203", "global_batch_size", 1024, 512, 6, 6)]
    # trainer.device=cuda -> npu is the expected port
    assert [(m.rule, m.gpu.value, m.npu.value, m.npu.line) for m in report.masked] == [
        (code("device-setting-port"), "cuda", "npu", 8)]
    f = next(x for x in report.findings if x.key == "global_batch_size")
    assert f.gpu.via == "verl (Hydra overrides)"  # the report names the dialect


def test_ray_faithful_port_has_no_finding(tmp_path):
    report = pair(tmp_path, RAY.format(bs=1024, device="cuda"), RAY.format(bs=1024, device="npu"))
    assert rows(report, ("error", "warning", "info")) == []


def test_ray_without_a_known_program_is_said_not_silent():
    ex, f = facts("ray job submit --address x -- ./train --lr 1e-4 --seed 3\n")
    assert ex.facts == [] and ex.unread == ["line 1: launcher `train` is not known: its 2 options were not compared"]
    ex, f = facts("ray job submit --address x --lr 1e-4\n")
    assert ex.unread == ["line 1: launcher `ray job` is not known: its 2 options were not compared"]


def test_detected_dialect_is_in_the_input_account(tmp_path):
    report = pair(tmp_path, RAY.format(bs=1024, device="cuda"), RAY.format(bs=1024, device="npu"))
    # (the module it runs, verl/trainer/main_ppo.py, is the program: not in view here)
    assert [(i.side, i.notes) for i in report.inputs] == [
        ("gpu", ["dialect: verl (Hydra overrides) at run.sh:6",
                 "line 5: program verl/trainer/main_ppo.py is not in view; its code defaults were not read"]),
        ("npu", ["dialect: verl (Hydra overrides) at run.sh:6",
                 "line 5: program verl/trainer/main_ppo.py is not in view; its code defaults were not read"])]


# --- parser -----------------------------------------------------------------------------------

def test_explicitly_empty_value_is_an_empty_string_not_a_bare_flag():
    ex, f = facts('torchrun train.py --run_tag "" --seed 3 --vae_fp32\n')
    assert f["run_tag"].value == "" and f["seed"].value == 3 and f["vae_fp32"].value is True


def test_an_empty_expansion_is_no_word_but_a_quoted_one_is():
    ex, f = facts('E=\ntorchrun train.py --a $E --seed 3 --b "$E"\n')
    assert f["a"].value is True and f["b"].value == ""


@pytest.mark.parametrize("expr,value", [("16 / 2", 8), ("7 - 2 \\* 3", 1), ("-7 / 2", -3), ("-7 % 2", -1),
                                        ("$N + 1", 5)])
def test_expr_substitution_on_integers_is_evaluated(expr, value):
    ex, f = facts(f"N=4\ntorchrun train.py --steps $(expr {expr})\n")
    assert f["steps"].value == value and "unresolved" not in f["steps"].meta


@pytest.mark.parametrize("expr", ["1 / 0", "$M + 1", "length abc", "1 +"])
def test_other_expr_stays_unresolved(expr):
    ex, f = facts(f"torchrun train.py --steps $(expr {expr})\n")
    assert f["steps"].value == f"$(expr {expr})" and f["steps"].meta["unresolved"] == [f"$(expr {expr})"]


# --- generic fallback -------------------------------------------------------------------------

@pytest.mark.parametrize("launch", ["python train.py", "python3 -u train.py", "torchrun --nproc_per_node 8 train.py",
                                    "accelerate launch --num_processes 8 train.py",
                                    "deepspeed --num_gpus 8 train.py"])
def test_any_program_has_its_flags_parsed_and_one_sided_bare_flags_reported(tmp_path, launch):
    gpu = f"{launch} --learning_rate 1e-4 --train_fps 18\n"
    npu = f"{launch} --learning_rate 1e-4 --train_fps 16 --vae_fp32\n"
    assert rows(pair(tmp_path, gpu, npu)) == [
        ("SD220", "train_fps", 18, 16, 1, 1),
        ("SD220", "vae_fp32", None, True, None, 1),
    ]
    assert rows(pair(tmp_path, gpu, gpu), ("error", "warning", "info")) == []


# --- expected NPU edits -----------------------------------------------------------------------

def test_jit_compile_on_npu_is_masked(tmp_path):
    gpu = "torchrun pretrain_gpt.py --seq-length 4096\n"
    npu = "torchrun pretrain_gpt.py --seq-length 4096 \\\n    --jit-compile\n"
    report = pair(tmp_path, gpu, npu)
    assert rows(report, ("error", "warning", "info")) == []
    assert [(m.rule, m.gpu, m.npu.value, m.npu.line) for m in report.masked] == [(code("npu-only-launch-flag"), None,
                                                                                   True, 2)]


def test_jit_compile_on_gpu_is_still_compared(tmp_path):
    gpu = "torchrun pretrain_gpt.py --seq-length 4096 --jit-compile\n"
    npu = "torchrun pretrain_gpt.py --seq-length 4096\n"
    assert rows(pair(tmp_path, gpu, npu)) == [("SD210", "jit_compile", True, False, 1, None)]


def test_hydra_device_override_is_masked_and_other_devices_are_not(tmp_path):
    gpu = "python3 -m verl.trainer.main_ppo data.train_batch_size=8 trainer.device=cuda\n"
    report = pair(tmp_path, gpu, gpu.replace("=cuda", "=npu"))
    assert rows(report, ("error", "warning", "info")) == [] and [m.rule for m in report.masked] == [
        code("device-setting-port")]
    report = pair(tmp_path, gpu.replace("=cuda", "=cpu"), gpu.replace("=cuda", "=npu"))
    assert rows(report) == [("SD220", "trainer.device", "cpu", "npu", 1, 1)]


VERL = """python3 -m verl.trainer.main_ppo \\
    data.train_batch_size=256 \\
    actor_rollout_ref.actor.optim.lr=1e-6 \\
{extra}    actor_rollout_ref.rollout.n=5 \\
    trainer.n_gpus_per_node=8
"""


def test_a_verl_setting_one_side_omits_is_compared_with_verls_default(tmp_path):
    """verl's default of a path no vocabulary key spells (rules/verl.yaml raw_defaults: the same in
    every release compared): stated on one side at that value, no difference; at another, compared
    with the default; a path with no default listed stays set on one side only."""
    same = pair(tmp_path / "a", VERL.format(extra="    algorithm.kl_ctrl.kl_coef=0.001 \\\n"), VERL.format(extra=""))
    assert rows(same) == []
    other = pair(tmp_path / "b", VERL.format(extra="    algorithm.kl_ctrl.kl_coef=0.01 \\\n"), VERL.format(extra=""))
    assert rows(other) == [("SD220", "algorithm.kl_ctrl.kl_coef", 0.01, 0.001, 4, None)]
    [f] = other.findings
    assert (f.npu.source, f.npu.via) == ("default", "verl (Hydra overrides) default")
    unlisted = pair(tmp_path / "c", VERL.format(extra="    actor_rollout_ref.rollout.enforce_eager=False \\\n"),
                    VERL.format(extra=""))
    assert [(r[0], r[1], r[2], r[3]) for r in rows(unlisted)] == [
        ("SD220", "actor_rollout_ref.rollout.enforce_eager", False, None)]


def test_the_settings_table_shows_the_verl_default_the_comparison_used(tmp_path):
    """`scriptdiff hparams`: the row of a verl path one side omits holds the default it was compared with."""
    from scriptdiff import api

    for side, extra in (("gpu", "    algorithm.kl_ctrl.kl_coef=0.01 \\\n"), ("npu", "")):
        (tmp_path / side).mkdir()
        (tmp_path / side / "run.sh").write_text(VERL.format(extra=extra), encoding="utf-8")
    rep = api.hparams([str(tmp_path / "gpu" / "run.sh")], [str(tmp_path / "npu" / "run.sh")], Options(use_cache=False))
    [(g, n)] = [(g, n) for k, g, n in rep.table if k == "algorithm.kl_ctrl.kl_coef"]
    assert (g.value, g.line, n.value, n.source, n.via) == (0.01, 4, 0.001, "default", "verl (Hydra overrides) default")
