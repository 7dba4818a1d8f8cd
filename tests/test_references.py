"""A referenced config found nowhere (issue 25, item 5): one finding per pair of sides, info
when both sides name the same missing file, and what it leaves uncompared is exactly what a
file of its kind can set (rules/kinds.yaml `sets`, less what the referring run fills in
itself: `filled_by`); the search tries beside the file, the repository root, and the working
directory only inside that repository (scriptdiff/inputs/references.py)."""
from __future__ import annotations

import os

from conftest import write_files

from scriptdiff.model import Options
from scriptdiff.run.pipeline import diff_files
from scriptdiff.inputs.references import resolve
from scriptdiff.ruleset.registry import kind_can_set


write = write_files


def run(tmp_path, main: str):
    return diff_files([str(tmp_path / "gpu" / main)], [str(tmp_path / "npu" / main)], Options(use_cache=False))


def rows(report):
    """(rule, key, GPU value, NPU value, GPU line, NPU line) of every finding, in report order."""
    return [(f.rule, f.key, f.gpu.value if f.gpu else None, f.npu.value if f.npu else None,
             f.gpu.line if f.gpu else None, f.npu.line if f.npu else None) for f in report.sorted().findings]


LF_GPU = """model_name_or_path: meta-llama/Llama-2-7b-hf
stage: sft
finetuning_type: full
deepspeed: examples/deepspeed/ds_z3_config.json
learning_rate: 1.0e-5
per_device_train_batch_size: 1
"""


def test_llamafactory_yaml_missing_deepspeed_still_reports_weight_decay(tmp_path):
    """The issue's reproduction: both YAMLs name a DeepSpeed JSON that is not there; the NPU
    side adds weight_decay: 0.1. Under the HF Trainer a DeepSpeed config cannot decide the
    weight decay (the Trainer fills it and stops on a mismatch), so it is compared."""
    write(tmp_path, {"gpu/train.yaml": LF_GPU, "npu/train.yaml": LF_GPU + "weight_decay: 0.1\n"})
    rep = run(tmp_path, "train.yaml")
    g, n = tmp_path / "gpu", tmp_path / "npu"
    assert rows(rep) == [
        ("SD158", "reference:deepspeed",
         f"examples/deepspeed/ds_z3_config.json not found (tried {g / 'examples/deepspeed/ds_z3_config.json'}, "
         f"{g / 'ds_z3_config.json'})",
         f"examples/deepspeed/ds_z3_config.json not found (tried {n / 'examples/deepspeed/ds_z3_config.json'}, "
         f"{n / 'ds_z3_config.json'})", 4, 4),
        ("SD206", "weight_decay", 0.0, 0.1, None, 7)]
    info = rep.findings[0]
    assert info.severity == "info" and info.message.startswith(
        f"both sides reference ds_z3_config.json (GPU {g / 'train.yaml'}:4, NPU {n / 'train.yaml'}:4) and neither "
        f"has it: the same file on both sides")
    assert rep.exit_code() == 1
    # the account still says the reference was not read, on each side
    assert sorted(a.status for a in rep.inputs) == ["not understood", "not understood"]


def test_same_missing_file_on_both_sides_is_info_and_exit_0(tmp_path):
    write(tmp_path, {"gpu/train.yaml": LF_GPU, "npu/train.yaml": LF_GPU.replace("1.0e-5", "1e-5")})
    rep = run(tmp_path, "train.yaml")
    assert [(r[0], r[1], r[4], r[5]) for r in rows(rep)] == [("SD158", "reference:deepspeed", 4, 4)]
    assert rep.findings[0].severity == "info" and rep.exit_code() == 0


def test_the_device_one_side_names_is_not_left_uncompared_by_a_missing_config(tmp_path):
    """Both launchers name the same config, found nowhere; the GPU one also names its device
    (`--device_target=GPU`), the NPU one leaves it to the default: the device is the port, so no
    setting had to be left uncompared for the missing file (SD158, info), unlike a batch size."""
    launch = "python train_orbit.py --config_path=../orbit_config.yaml{extra} --learning_rate 0.1\n"
    write(tmp_path, {"gpu/run.sh": launch.format(extra=' --device_target="GPU"'), "npu/run.sh": launch.format(extra="")})
    rep = run(tmp_path, "run.sh")
    assert [(r[0], r[1], r[4], r[5]) for r in rows(rep)] == [("SD158", "reference:config_path", 1, 1)]
    write(tmp_path / "b", {"gpu/run.sh": launch.format(extra=" --batch_size=32"), "npu/run.sh": launch.format(extra="")})
    rep = run(tmp_path / "b", "run.sh")
    assert [(r[0], r[1], r[4], r[5]) for r in rows(rep)] == [("SD154", "reference:config_path", 1, 1)]
    assert rep.findings[0].message.endswith("1 setting(s) of the GPU side could not be compared: micro_batch_size")


LF_DS_GPU = """stage: sft
finetuning_type: full
deepspeed: ds_z3_config.json
learning_rate: 1.0e-5
per_device_train_batch_size: 1
overwrite_cache: true
max_steps: 1000
flash_attn: fa2
"""
LF_DS_NPU = """stage: sft
finetuning_type: full
deepspeed: ds_z3_config.json
learning_rate: 1.0e-5
per_device_train_batch_size: 1
"""
DS_Z3 = '{"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 3}, "bf16": {"enabled": "auto"}}'


def test_missing_deepspeed_withholds_only_what_deepspeed_can_set(tmp_path):
    """The issue's second reproduction: the NPU side's DeepSpeed config is missing; it used to
    withhold overwrite_cache, train_iters and use_flash_attn, which no DeepSpeed config can set.
    Now they are compared; the ZeRO stage, which it can set, is read from its name (issue 27:
    ds_z3 says stage 3) and compared, so nothing is left uncompared."""
    write(tmp_path, {"gpu/sft.yaml": LF_DS_GPU, "gpu/ds_z3_config.json": DS_Z3, "npu/sft.yaml": LF_DS_NPU})
    rep = run(tmp_path, "sft.yaml")
    n = tmp_path / "npu"
    assert rows(rep) == [  # the missing file said once, by SD154 (no SD222 for the same reference)
        ("SD220", "overwrite_cache", True, None, 6, None),
        ("SD202", "train_iters", 1000, None, 7, None),
        ("SD201", "use_flash_attn", True, None, 8, None),
        ("SD154", "reference:deepspeed", None, f"ds_z3_config.json not found (tried {n / 'ds_z3_config.json'})",
         None, 3)]
    assert rep.findings[-1].message == (
        f"referenced config ds_z3_config.json was not found on NPU ({n / 'sft.yaml'}:3): its settings were not "
        f"compared")
    npu = next(a for a in rep.inputs if a.side == "npu")
    assert npu.unread == [f"line 3: referenced config ds_z3_config.json was not found (tried {n / 'ds_z3_config.json'}): "
                          f"its settings were not compared"]
    assert not [f for f in rep.findings if f.key == "zero_stage"]  # 3 from the file on GPU, 3 from the name on NPU
    assert rep.exit_code() == 1


def test_missing_deepspeed_faithful_negative(tmp_path):
    """The same references, nothing else differs: the only finding is the missing file."""
    write(tmp_path, {"gpu/sft.yaml": LF_DS_NPU, "gpu/ds_z3_config.json": DS_Z3, "npu/sft.yaml": LF_DS_NPU})
    rep = run(tmp_path, "sft.yaml")
    assert [(r[0], r[1]) for r in rows(rep)] == [("SD154", "reference:deepspeed")]  # said once
    assert "could not be compared" not in rep.findings[-1].message  # the stage is read from the name


def test_two_names_missing_is_one_finding_for_the_pair(tmp_path):
    write(tmp_path, {"gpu/run.sh": "deepspeed train.py --deepspeed ds_z2.json --learning_rate 1\n",
                     "npu/run.sh": "deepspeed train.py --deepspeed ds_z3.json --learning_rate 1\n"})
    rep = run(tmp_path, "run.sh")
    g, n = tmp_path / "gpu", tmp_path / "npu"
    assert rows(rep) == [  # the two names said once (no SD222 beside it)
        ("SD154", "reference:deepspeed", f"ds_z2.json not found (tried {g / 'ds_z2.json'})",
         f"ds_z3.json not found (tried {n / 'ds_z3.json'})", 1, 1),
        ("SD213", "zero_stage", 2, 3, 1, 1)]  # the stages the two names state (issue 27)
    assert rep.findings[0].message == (
        f"referenced configs found on neither side: ds_z2.json on GPU ({g / 'run.sh'}:1), ds_z3.json on NPU "
        f"({n / 'run.sh'}:1); their settings were not compared")
    assert rep.exit_code() == 1


def test_accelerate_config_missing_withholds_the_launcher_settings_not_the_program_options(tmp_path):
    """`accelerate launch --config_file` names an accelerate config (rules/shell.yaml `config`):
    found nowhere, it leaves the world size (and what derives from it) unknown, never the
    program's own --max_height."""
    write(tmp_path, {
        "gpu/train.sh": "accelerate launch --config_file zero2.yaml --num_processes 8 train.py --max_height 352 "
                        "--learning_rate 1e-4\n",
        "npu/train.sh": "accelerate launch --config_file zero2.yaml train.py --learning_rate 1e-4\n"})
    rep = run(tmp_path, "train.sh")
    got = rows(rep)
    assert got[:1] == [("SD220", "max_height", 352, None, 1, None)]
    assert [(r[0], r[1], r[4], r[5]) for r in got[1:]] == [("SD154", "reference:config_file", 1, 1)]
    assert rep.findings[1].message.endswith(
        "the same file on both sides, but settings one side sets could come from it on the other: "
        "2 setting(s) of the GPU side could not be compared: data_parallel_size, world_size")


def test_kind_can_set_follows_the_declarations():
    assert kind_can_set("deepspeed", "zero_stage") and kind_can_set("deepspeed", "weight_decay")
    assert not kind_can_set("deepspeed", "weight_decay", ("hf",))  # the HF Trainer fills it
    assert kind_can_set("deepspeed", "zero_stage", ("hf",))
    assert not any(kind_can_set("deepspeed", k) for k in ("train_iters", "use_flash_attn", "overwrite_cache"))
    assert kind_can_set("yaml", "max_height")  # any YAML config: anything
    assert not kind_can_set("yaml", "max_height", dialect="accelerate")
    assert kind_can_set("yaml", "world_size", dialect="accelerate")
    assert kind_can_set("yaml", "initial_loss_scale", dialect="accelerate")  # its DeepSpeed config's


# --- where a reference is looked for ---------------------------------------------------------

def test_working_directory_outside_the_repository_is_not_searched(tmp_path, monkeypatch):
    """The result never depends on where the command runs: a working directory outside the
    side's repository (or with no repository at all) holding a file of that name is ignored."""
    write(tmp_path, {"elsewhere/ds.json": '{"zero_optimization": {"stage": 3}}',
                     "proj/gpu/run.sh": "deepspeed train.py --deepspeed ds.json --lr 1e-4\n"})
    monkeypatch.chdir(tmp_path / "elsewhere")
    res = resolve("ds.json", str(tmp_path / "proj/gpu/run.sh"))
    assert res.path is None and res.tried == [str(tmp_path / "proj/gpu/ds.json")]
    (tmp_path / "proj" / ".git").mkdir()  # a repository: its top is searched, still not the working directory
    res = resolve("ds.json", str(tmp_path / "proj/gpu/run.sh"))
    assert res.path is None and res.tried == [str(tmp_path / "proj/gpu/ds.json"), str(tmp_path / "proj/ds.json")]


def test_search_order_beside_root_then_working_directory_inside(tmp_path, monkeypatch):
    write(tmp_path, {"proj/.git/HEAD": "ref: refs/heads/main\n", "proj/sub/configs/ds.json": "{}",
                     "proj/gpu/run.sh": "deepspeed train.py --deepspeed configs/ds.json\n"})
    monkeypatch.chdir(tmp_path / "proj" / "sub")
    res = resolve("configs/ds.json", str(tmp_path / "proj/gpu/run.sh"))
    assert (res.path, res.how) == (str(tmp_path / "proj/sub/configs/ds.json"), "relative to the working directory")
    assert res.tried == [str(tmp_path / p) for p in ("proj/gpu/configs/ds.json", "proj/gpu/ds.json",
                                                     "proj/configs/ds.json", "proj/sub/configs/ds.json")]
    write(tmp_path, {"proj/configs/ds.json": "{}"})  # the repository root comes first
    res = resolve("configs/ds.json", str(tmp_path / "proj/gpu/run.sh"))
    assert (res.path, res.how) == (str(tmp_path / "proj/configs/ds.json"), "relative to the repository root")
    # a side's root given on the command line is the repository: the working directory inside it counts
    res = resolve("configs/ds.json", str(tmp_path / "proj/gpu/run.sh"), root=str(tmp_path / "proj" / "sub"))
    assert res.how == "relative to the repository root" and res.path == str(tmp_path / "proj/sub/configs/ds.json")


def test_found_at_the_repository_root_from_any_working_directory(tmp_path, monkeypatch):
    write(tmp_path, {".git/HEAD": "ref: refs/heads/main\n", "configs/ds.json": '{"zero_optimization": {"stage": 2}}',
                     "gpu/run.sh": "deepspeed train.py --deepspeed configs/ds.json --lr 1e-4\n",
                     "npu/run.sh": "deepspeed train.py --deepspeed configs/ds.json --lr 1e-4\n"})
    for where in (tmp_path, tmp_path / "gpu", "/"):
        monkeypatch.chdir(where)
        rep = diff_files([str(tmp_path / "gpu/run.sh")], [str(tmp_path / "npu/run.sh")], Options(use_cache=False))
        assert rep.findings == [] and rep.exit_code() == 0, where
        notes = [n for a in rep.inputs for n in a.notes if "ds.json" in n]
        assert notes == [f"line 1: referenced config configs/ds.json found relative to the repository root "
                         f"({tmp_path / 'configs' / 'ds.json'})"] * 2
    assert os.getcwd() == "/"
