"""Framework dialects and the generic fallbacks (issue 13): the alias table, verl, accelerate,
Hydra YAML, cosmetic keys, device ports and release-dependent defaults.

Every dialect has a pair with exact findings (rule, key, both values, both lines) and a
faithful port that gives no warning."""
from __future__ import annotations

import pytest

from scriptdiff.api import diff
from scriptdiff.ruleset.vocabulary import canonical_flag, canonical_path, is_cosmetic
from scriptdiff.model import Options
from scriptdiff.ruleset.rules import RuleError, load
from scriptdiff.ruleset.rulepack import RuleSet
from scriptdiff.ruleset.rule_validators import check_aliases, check_vocabulary


def write(tmp_path, name, gpu, npu):
    paths = []
    for side, text in (("gpu", gpu), ("npu", npu)):
        p = tmp_path / side / name
        p.parent.mkdir(exist_ok=True)
        p.write_text(text, encoding="utf-8")
        paths.append(str(p))
    return paths


def rows(rep):
    return sorted((f.rule, f.severity, f.key, f.gpu.value if f.gpu else None, f.npu.value if f.npu else None,
                   f.gpu.line if f.gpu else None, f.npu.line if f.npu else None) for f in rep.findings)


def run(tmp_path, name, gpu, npu):
    return diff(*write(tmp_path, name, gpu, npu), Options(use_cache=False))


# ---------------------------------------------------------------- the alias table

@pytest.mark.parametrize("flag,key", [
    ("train_batch_size", "micro_batch_size"),  # diffusers-style: per device
    ("lr_scheduler", "lr_decay_style"),
    ("lr_warmup_steps", "lr_warmup_iters"),
    ("pretrained", "load"),
    ("model_path", "load"),
    ("data", "data_path"),
    ("mixed_precision", "params_dtype"),
    ("gradient_accumulation_steps", "gradient_accumulation_steps"),
    ("max_train_steps", "train_iters"),
    ("model", "load"),  # ms-swift
    ("dataset", "data_path"),
    ("max_epochs", "num_train_epochs"),
    ("attn_impl", "use_flash_attn"),
    ("max_length", "seq_length"),
    ("train_type", "train_type"),
    ("base_lr", "lr"),
    ("Max-Seq-Len", "seq_length"),  # normalised: case and dashes
    ("num_epochs", "num_train_epochs"),
])
def test_flags_map_through_the_alias_table(flag, key):
    assert canonical_flag(flag, "hf") == key


def test_a_megatron_flag_keeps_its_megatron_meaning():
    assert canonical_flag("lr_warmup_steps", "megatron") == "lr_warmup_iters"
    assert canonical_flag("no_such_flag_at_all") is None


@pytest.mark.parametrize("path,key", [
    ("data_loader.batch_size", "micro_batch_size"),
    ("train.mixed_precision", "params_dtype"),
    ("trainer.max_epochs", "num_train_epochs"),
    ("model.optim.lr", "lr"),
    ("critic.optim.lr", None),  # not a neutral section: kept under its full path
    ("model.params.batch_size", None),
])
def test_nested_keys_map_only_under_neutral_sections(path, key):
    assert canonical_path(path, "hf", []) == key


def test_deepspeed_train_batch_size_stays_global():
    assert canonical_path("train_batch_size", "deepspeed", []) == "global_batch_size"


# ---------------------------------------------------------------- verl

VERL = """data:
  train_batch_size: {gbs}
  max_prompt_length: 512
actor_rollout_ref:
  model:
    path: Qwen/Qwen2-7B
  actor:
    ppo_micro_batch_size_per_gpu: {mbs}
    optim:
      lr: {alr}
  rollout:
    tensor_model_parallel_size: 2
critic:
  optim:
    lr: {clr}
trainer:
  n_gpus_per_node: {gpn}
  nnodes: 1
  project_name: {proj}
  device: {dev}
"""


def verl(gbs=256, mbs=4, alr="1e-6", clr="1e-5", gpn=8, proj="p", dev="cuda"):
    return VERL.format(gbs=gbs, mbs=mbs, alr=alr, clr=clr, gpn=gpn, proj=proj, dev=dev)


def test_verl_yaml_maps_the_actor_not_the_critic(tmp_path):
    rep = run(tmp_path, "ppo.yaml", verl(), verl(gbs=128, mbs=2, alr="5e-8", clr="2e-5", gpn=16, dev="npu"))
    assert rows(rep) == [
        ("SD202", "error", "lr", 1e-06, 5e-08, 10, 10),
        ("SD202", "error", "lr", 1e-05, 2e-05, 15, 15),  # the critic's, as the critic's own setting
        ("SD203", "error", "global_batch_size", 256, 128, 2, 2),
        ("SD203", "error", "micro_batch_size", 4, 2, 8, 8),
        ("SD203", "error", "nproc_per_node", 8, 16, 17, 17),
        ("SD203", "error", "world_size", 8, 16, 17, 17),  # computed: the job's size, loud
        # computed, not set: they follow from the settings above (SD230)
        ("SD230", "info", "data_parallel_size", 8, 16, 17, 17),
        ("SD230", "info", "gradient_accumulation_steps", 8, 4, 2, 2),
    ]
    lr = next(f for f in rep.findings if f.key == "lr" and f.gpu.line == 10)
    assert lr.gpu.via == "actor_rollout_ref.actor.optim.lr, verl (Hydra overrides)"
    critic = next(f for f in rep.findings if f.key == "lr" and f.gpu.line == 15)
    assert critic.message == "learning-rate schedule: critic.optim.lr (lr) is 1e-05 on GPU and 2e-05 on NPU"
    ws = next(f for f in rep.findings if f.key == "world_size")
    assert ws.gpu.via == "nproc_per_node * nnodes with nproc_per_node=8, nnodes=1"
    assert [m.rule for m in rep.masked] == ["SD015"]  # trainer.device cuda -> npu


def test_verl_faithful_port_is_silent(tmp_path):
    rep = run(tmp_path, "ppo.yaml", verl(), verl(proj="npu-run", dev="npu"))
    assert rows(rep) == [("SD221", "info", "trainer.project_name", "p", "npu-run", 19, 19)]
    assert rep.exit_code() == 0


def test_verl_yaml_takes_no_hugging_face_default(tmp_path):
    base = "actor_rollout_ref:\n  actor:\n    clip_ratio: 0.2\n"
    rep = run(tmp_path, "ppo.yaml", base + "    ppo_micro_batch_size_per_gpu: 8\n", base)
    assert rows(rep) == [("SD203", "error", "micro_batch_size", 8, None, 4, None)]
    assert rep.findings[0].message.endswith("NPU has no value and no known default")


def test_verl_overrides_on_the_command_line(tmp_path):
    cmd = ("python3 -m verl.trainer.main_ppo data.train_batch_size={} "
           "actor_rollout_ref.actor.optim.lr={} trainer.n_gpus_per_node={} trainer.nnodes=1 {}\n")
    rep = run(tmp_path, "run.sh", cmd.format(1024, "1e-6", 8, ""),
              cmd.format(256, "1e-6", 8, "trainer.device=npu"))
    assert [(f.rule, f.key, f.gpu.value, f.npu.value) for f in rep.findings if f.key == "global_batch_size"] == [
        ("SD203", "global_batch_size", 1024, 256)]
    assert [m.rule for m in rep.masked] == ["SD015"]


def test_hydra_overrides_file(tmp_path):
    rep = run(tmp_path, "overrides.yaml", "- data.train_batch_size=256\n- trainer.total_epochs=15\n",
              "- data.train_batch_size=256\n- trainer.total_epochs=5\n- trainer.device=npu\n")
    assert rows(rep) == [("SD202", "error", "num_train_epochs", 15, 5, 2, 2)]
    assert [m.rule for m in rep.masked] == ["SD015"]


# ---------------------------------------------------------------- accelerate config

ACC = """compute_environment: LOCAL_MACHINE
distributed_type: FSDP
fsdp_config:
  fsdp_activation_checkpointing: {ckpt}
  fsdp_offload_params: {off}
machine_rank: 0
main_process_ip: {ip}
main_process_port: {port}
mixed_precision: {mp}
num_machines: 1
num_processes: {n}
"""


def acc(ckpt="true", off="false", ip="10.0.0.1", port=29500, mp="bf16", n=8):
    return ACC.format(ckpt=ckpt, off=off, ip=ip, port=port, mp=mp, n=n)


def test_accelerate_config_maps_and_quiets_placement(tmp_path):
    rep = run(tmp_path, "fsdp.yaml", acc(), acc(ckpt="false", off="true", ip="10.0.0.2", port=29501, mp="no", n=16))
    assert rows(rep) == [
        ("SD203", "error", "world_size", 8, 16, 11, 11),
        ("SD205", "error", "params_dtype", "bf16", "fp32", 9, 9),
        ("SD211", "warning", "recompute_granularity", True, False, 4, 4),
        ("SD221", "info", "fsdp_config.fsdp_offload_params", False, True, 5, 5),
        ("SD221", "info", "master_addr", "10.0.0.1", "10.0.0.2", 7, 7),
        ("SD221", "info", "master_port", 29500, 29501, 8, 8),
        ("SD230", "info", "data_parallel_size", 8, 16, 11, 11),  # follows from world_size
    ]
    f = next(f for f in rep.findings if f.key == "world_size")
    assert f.gpu.via == "num_processes, accelerate config"


def test_accelerate_faithful_port_is_silent(tmp_path):
    rep = run(tmp_path, "fsdp.json", '{"compute_environment": "LOCAL_MACHINE", "num_processes": 8, "machine_rank": 0}\n',
              '{"compute_environment": "LOCAL_MACHINE", "num_processes": 8, "machine_rank": 1}\n')
    assert [(f.rule, f.severity, f.key) for f in rep.findings] == [("SD221", "info", "machine_rank")]
    assert rep.exit_code() == 0


def test_fsdp_config_json_on_its_own(tmp_path):
    fs = '{{"fsdp_activation_checkpointing": {}, "fsdp_offload_params": {}, "fsdp_sharding_strategy": "FULL_SHARD"}}\n'
    rep = run(tmp_path, "fsdp.json", fs.format("true", "false"), fs.format("false", "true"))
    assert rows(rep) == [("SD211", "warning", "recompute_granularity", True, False, 1, 1),
                         ("SD221", "info", "fsdp_offload_params", False, True, 1, 1)]
    rc = next(f for f in rep.findings if f.key == "recompute_granularity")
    assert rc.gpu.via == "fsdp_activation_checkpointing, FSDP config"


# ---------------------------------------------------------------- Hydra YAML

HYDRA = """defaults:
{defaults}
train:
  mixed_precision: {mp}
  batch: 4
data_loader:
  batch_size: ${{train.batch}}
"""


def test_hydra_defaults_by_group_and_interpolation(tmp_path):
    g = HYDRA.format(defaults="  - _self_\n  - optimizer: adamw\n  - model: llama", mp="bf16")
    n = HYDRA.format(defaults="  - model: llama\n  - optimizer: sgd\n  - _self_", mp="fp16")
    rep = run(tmp_path, "config.yaml", g, n.replace("batch: 4", "batch: 8"))
    assert rows(rep) == [
        ("SD203", "error", "micro_batch_size", 4, 8, 9, 9),
        ("SD205", "error", "params_dtype", "bf16", "fp16", 6, 6),
        ("SD206", "error", "defaults.optimizer", "adamw", "sgd", 3, 3),  # the optimizer group
        ("SD220", "warning", "train.batch", 4, 8, 7, 7),
    ]


def test_hydra_defaults_reordered_is_no_difference(tmp_path):
    g = HYDRA.format(defaults="  - optimizer: adamw\n  - model: llama", mp="bf16")
    n = HYDRA.format(defaults="  - model: llama\n  - optimizer: adamw", mp="bf16")
    assert rows(run(tmp_path, "config.yaml", g, n)) == []


# ---------------------------------------------------------------- cosmetic names, device ports

@pytest.mark.parametrize("key,cosmetic", [
    ("machine_rank", True), ("main_process_ip", True), ("save_img_path", True), ("trainer.project_name", True),
    ("ddp_timeout", True), ("tensorboard.output_path", True), ("zero_optimization.allgather_bucket_size", True),
    ("zero_optimization.reduce_bucket_size", True), ("zero_optimization.sub_group_size", True),
    ("data.max_response_length", False), ("snr_gamma", False), ("update_freq", False),
    # output words with how many are kept or whether one is written; an input word or another word is not
    ("max_ckpt_num", True), ("use_tensorboard", True), ("keep_last_checkpoints", True), ("workers", True),
    ("max_ckpt_lr", False), ("use_pretrained", False), ("max_num", False), ("use_reward_ckpt", False),
    # a section named by a cosmetic section's word: a profiler's or a logger's settings
    ("global_profiler.tool", True), ("orbit.train_logger.level", True), ("global_optimizer.lr", False),
    ("profiler_model.hidden_size", False),
])
def test_cosmetic_names(key, cosmetic):
    assert is_cosmetic(key) is cosmetic


def test_deepspeed_bucket_sizes_are_info(tmp_path):
    ds = '{{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {{"stage": 2, "reduce_bucket_size": {}}}}}\n'
    rep = run(tmp_path, "zero2.json", ds.format("5e8"), ds.format(536870912))
    assert rows(rep) == [("SD221", "info", "zero_optimization.reduce_bucket_size", 500000000, 536870912, 1, 1)]


def test_an_unknown_key_stays_a_warning(tmp_path):
    rep = run(tmp_path, "cfg.yaml", "snr_gamma: 5.0\n", "snr_gamma: 1.0\n")
    assert rows(rep) == [("SD220", "warning", "snr_gamma", 5.0, 1.0, 1, 1)]


def test_device_port_masks_cuda_to_npu_only(tmp_path):
    rep = run(tmp_path, "cfg.yaml", "train:\n  accelerator: cuda\n", "train:\n  accelerator: npu\n")
    assert rows(rep) == [] and [m.rule for m in rep.masked] == ["SD015"]
    rep = run(tmp_path, "cfg.yaml", "train:\n  accelerator: cpu\n", "train:\n  accelerator: npu\n")
    assert rows(rep) == [("SD220", "warning", "train.accelerator", "cpu", "npu", 2, 2)]


# ---------------------------------------------------------------- defaults by release

def test_a_difference_only_from_a_changed_default_is_info(tmp_path):
    rep = run(tmp_path, "pretrain.sh", "torchrun pretrain_gpt.py --lr 1e-4 --no-use-mcore-models\n",
              "torchrun pretrain_gpt.py --lr 1e-4\n")
    assert rows(rep) == [("SD224", "info", "use_mcore_models", False, True, 1, None)]
    f = rep.findings[0]
    assert f.message == ("model structure: no-use-mcore-models (use_mcore_models) is off for GPU and on for NPU; megatron's default is on since "
                         "core_r0.8.0 and was off before, and the NPU side's megatron version is not known: the "
                         "difference comes only from the default, and the script setting it may be written for an "
                         "older release")


# ---------------------------------------------------------------- validators

def _rs(sections: dict) -> RuleSet:
    base = load()
    return RuleSet(rules=base.rules, sections={**base.sections, **sections},
                   section_origin={k: "rules/test.yaml" for k in sections})


def test_validator_refuses_dotted_alias_and_other_column():
    voc = dict(load().section("vocabulary"))
    bad = {**voc, "lr": {**voc["lr"], "aliases": ["actor.optim.lr"]}}
    with pytest.raises(RuleError, match=r"^rules/test.yaml:1: vocabulary.lr.aliases\[0\]: expected a normalised name \(lower case, _ for -, no dots"):
        check_vocabulary(_rs({"vocabulary": bad}))
    bad = {**voc, "lr": {**voc["lr"], "other": ["x"]}}
    with pytest.raises(RuleError, match="`other` spellings are gone"):
        check_vocabulary(_rs({"vocabulary": bad}))
    bad = {**voc, "micro_batch_size": {**voc["micro_batch_size"], "aliases": ["learning_rate"]}}
    with pytest.raises(RuleError, match="aliases:learning_rate maps to both"):
        check_vocabulary(_rs({"vocabulary": bad}))


def test_validator_refuses_bad_alias_sections():
    with pytest.raises(RuleError, match=r"^rules/test.yaml:1: neutral_sections\[0\]: expected a lower-case section name without dots \(got 'a.b'\)"):
        check_aliases(_rs({"neutral_sections": ["a.b"]}))
    with pytest.raises(RuleError, match=r"^rules/test.yaml:1: device_port: needs non-empty lower-case lists names, gpu and npu$"):
        check_aliases(_rs({"device_port": {"names": ["device"], "gpu": ["cuda"]}}))


MS = ("device_target: {dev}\nenable_modelarts: {ma}\ndata_url: \"{url}\"\nepoch_size: {ep}\namp_level: {amp}\n"
      "batch_size: 32\n")


def test_a_mindspore_recipe_config_reads_its_epochs_and_precision_and_its_places_are_info(tmp_path):
    rep = run(tmp_path, "orbit_config.yaml", MS.format(dev="GPU", ma=0, url="", ep=300, amp="O2"),
              MS.format(dev="Ascend", ma=1, url="s3://bucket/orbit", ep=140, amp="O3"))
    assert [r for r in rows(rep) if r[0] != "SD221"] == [
        ("SD202", "error", "num_train_epochs", 300.0, 140.0, 4, 4), ("SD205", "error", "params_dtype", "o2", "o3", 5, 5)]
    assert sorted(f.key for f in rep.findings if f.rule == "SD221") == ["data_url", "enable_modelarts"]
    (tmp_path / "same").mkdir()
    faithful = run(tmp_path / "same", "orbit_config.yaml", MS.format(dev="GPU", ma=0, url="", ep=300, amp="O2"),
                   MS.format(dev="Ascend", ma=1, url="s3://bucket/orbit", ep=300, amp="O2"))
    assert [f for f in faithful.findings if f.severity != "info"] == []


def test_epoch_size_outside_a_mindspore_recipe_keeps_its_own_key(tmp_path):
    rep = run(tmp_path, "run.yaml", "epoch_size: 1000\nlr: 0.1\n", "epoch_size: 2000\nlr: 0.1\n")
    assert rows(rep) == [("SD220", "warning", "epoch_size", 1000, 2000, 1, 1)]


@pytest.mark.parametrize("flag,key", [
    ("actor_learning_rate", "lr"), ("policy_lr", "lr"), ("actor_weight_decay", "weight_decay"),
    ("critic_learning_rate", None), ("actor_orbit", None),  # a component's own, a word no key has
])
def test_the_trained_models_role_prefix_is_its_key(flag, key):
    from scriptdiff.ruleset.vocabulary import canonical_flag
    assert canonical_flag(flag, "hf") == key
