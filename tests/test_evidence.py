"""Claims against evidence (issue 44): each side's scripts against what its own run reports
(rules/evidence.yaml `run_logs`, checks/evidence.py), with the setting in and out of effect."""
from __future__ import annotations

import pytest

from scriptdiff import api
from scriptdiff.inputs.sources import Source
from scriptdiff.lang import runlog
from scriptdiff.model import Options, SideContext

MEGATRON = ("x\n------------------------ arguments ------------------------\n"
            "  lr .............................................. 0.0003\n"
            "  params_dtype .................................... torch.bfloat16\n"
            "  use_flash_attn .................................. {flash}\n"
            "-------------------- end of arguments ---------------------\n")
HF = ("[INFO|trainer.py:100] >> Training/evaluation parameters TrainingArguments(\n_n_gpu=1,\nbf16={bf16},\n"
      "fp16={fp16},\nlearning_rate=2e-05,\nlr_scheduler_type=SchedulerType.COSINE,\noutput_dir=/tmp/out,\n"
      "per_device_train_batch_size=4,\nseed=42,\n)\n")
DEEPSPEED = ("[2024-01-01 10:00:00,000] [INFO] [config.py:988:print] DeepSpeedEngine configuration:\n"
             "[2024-01-01 10:00:00,000] [INFO] [config.py:992:print]   bfloat16_enabled ............. True\n"
             "[2024-01-01 10:00:00,000] [INFO] [config.py:992:print]   gradient_clipping ............ 1.0\n"
             "[2024-01-01 10:00:00,000] [INFO] [config.py:992:print]   zero_optimization_stage ...... {stage}\n"
             "[2024-01-01 10:00:00,000] [INFO] [config.py:992:print]   json = {{\n"
             "    \"zero_optimization\": {{\"stage\": {stage}}}\n}}\n")


def _side(tmp_path, side: str, files: dict[str, str]) -> list[str]:
    d = tmp_path / side
    d.mkdir(exist_ok=True)
    for name, text in files.items():
        (d / name).write_text(text)
    return [str(d / name) for name in files]


def _run(tmp_path, gpu: dict[str, str], npu: dict[str, str]):
    g, n = _side(tmp_path, "gpu", gpu), _side(tmp_path, "npu", npu)
    return api.diff(g, n, Options(use_cache=False)), tmp_path


def _sd228(report, tmp_path):
    return [(f.key, f.message.replace(f"{tmp_path}/", ""), "gpu" if f.gpu else "npu",
             (f.gpu or f.npu).line, f.extra["run_says"]["line"]) for f in report.findings if f.rule == "SD229"]


def _note(report, tmp_path, name):
    return next(a.evidence for a in report.every_input() if a.path == str(tmp_path / name))


MEG_SH = "torchrun pretrain_gpt.py \\\n  --lr 0.0003 \\\n  --bf16 \\\n  --use-flash-attn\n"


def test_megatron_arguments_block_out_of_effect_on_one_side(tmp_path):
    report, _ = _run(tmp_path, {"run.sh": MEG_SH, "train.log": MEGATRON.format(flash=False)},
                     {"run.sh": MEG_SH, "train.log": MEGATRON.format(flash=True)})
    assert _sd228(report, tmp_path) == [
        ("use_flash_attn", "use_flash_attn on in gpu/run.sh:4; the run's arguments block says off at gpu/train.log:5: "
                           "the setting was not in effect on GPU", "gpu", 4, 5)]
    assert _note(report, tmp_path, "gpu/train.log") == [
        "evidence for 3 of 3 setting(s) the GPU scripts set; in effect: lr, params_dtype; not in effect: use_flash_attn"]
    assert _note(report, tmp_path, "npu/train.log") == [
        "evidence for 3 of 3 setting(s) the NPU scripts set; in effect: lr, params_dtype, use_flash_attn"]


def test_megatron_arguments_block_in_effect_on_both_sides(tmp_path):
    report, _ = _run(tmp_path, {"run.sh": MEG_SH, "train.log": MEGATRON.format(flash=True)},
                     {"run.sh": MEG_SH, "train.log": MEGATRON.format(flash=True)})
    assert report.findings == []


def test_a_finding_on_the_npu_side_whatever_the_gpu_does(tmp_path):
    """The GPU has no log at all: the NPU run's own word still contradicts its script."""
    report, _ = _run(tmp_path, {"run.sh": MEG_SH.replace("  --use-flash-attn\n", "  --use-flash-attn\n")},
                     {"run.sh": MEG_SH, "train.log": MEGATRON.format(flash=False).replace("0.0003", "0.0001")})
    assert sorted(_sd228(report, tmp_path)) == [
        ("lr", "lr 0.0003 in npu/run.sh:2; the run's arguments block says 0.0001 at npu/train.log:3: "
               "the setting was not in effect on NPU", "npu", 2, 3),
        ("use_flash_attn", "use_flash_attn on in npu/run.sh:4; the run's arguments block says off at "
                           "npu/train.log:5: the setting was not in effect on NPU", "npu", 4, 5)]


HF_SH = "python train.py --learning_rate 2e-5 --bf16 --per_device_train_batch_size 4 --seed 42\n"


@pytest.mark.parametrize("fp16, ran, line", [(True, "fp16", 4), (False, "fp32", 3)])
def test_hf_training_arguments_out_of_effect(tmp_path, fp16, ran, line):
    """bf16 on the command line, the Trainer ran fp16 (or, every precision switch printed off, fp32)."""
    report, _ = _run(tmp_path, {"run.sh": HF_SH, "train.log": HF.format(bf16=False, fp16=fp16)},
                     {"run.sh": HF_SH, "train.log": HF.format(bf16=True, fp16=False)})
    assert _sd228(report, tmp_path) == [
        ("params_dtype", f"params_dtype bf16 in gpu/run.sh:1; the run's printed TrainingArguments says {ran} at "
                         f"gpu/train.log:{line}: the setting was not in effect on GPU", "gpu", 1, line)]
    assert _note(report, tmp_path, "npu/train.log") == [
        "evidence for 4 of 4 setting(s) the NPU scripts set; in effect: lr, micro_batch_size, params_dtype, seed"]


def test_hf_training_arguments_in_effect(tmp_path):
    report, _ = _run(tmp_path, {"run.sh": HF_SH, "train.log": HF.format(bf16=True, fp16=False)},
                     {"run.sh": HF_SH, "train.log": HF.format(bf16=True, fp16=False)})
    assert [f.rule for f in report.findings] == []


DS_JSON = '{"zero_optimization": {"stage": 2}, "gradient_clipping": 1.0, "bf16": {"enabled": true}}\n'


def test_deepspeed_configuration_out_of_effect(tmp_path):
    """The DeepSpeed config says ZeRO 2; the engine printed stage 3 (another file won)."""
    report, _ = _run(tmp_path, {"ds_config.json": DS_JSON, "train.log": DEEPSPEED.format(stage=3)},
                     {"ds_config.json": DS_JSON, "train.log": DEEPSPEED.format(stage=2)})
    assert _sd228(report, tmp_path) == [
        ("zero_stage", "zero_stage 2 in gpu/ds_config.json:1; DeepSpeed's printed configuration says 3 at "
                       "gpu/train.log:4: the setting was not in effect on GPU", "gpu", 1, 4)]
    assert _note(report, tmp_path, "npu/train.log") == [
        "evidence for 3 of 3 setting(s) the NPU scripts set; in effect: clip_grad, params_dtype, zero_stage"]


def test_deepspeed_configuration_in_effect(tmp_path):
    report, _ = _run(tmp_path, {"ds_config.json": DS_JSON, "train.log": DEEPSPEED.format(stage=2)},
                     {"ds_config.json": DS_JSON, "train.log": DEEPSPEED.format(stage=2)})
    assert report.findings == []


def test_settings_without_evidence_are_listed():
    """A setting the scripts set that no block reports is said on the log's account, not guessed."""
    from scriptdiff.checks.evidence import audit
    from scriptdiff.model import Fact
    from scriptdiff.run.compare import FactTable

    t = FactTable()
    t.extend([Fact(key="seed", value=1, path="run.sh", line=1), Fact(key="lr", value=0.1, path="run.sh", line=2),
              Fact(key="lr", value=0.1, path="t.log", line=9, rank=30, meta={"evidence": "the run's arguments block"}),
              Fact(key="log_interval", value=1, path="run.sh", line=3)])
    assert audit(t, "npu") == ([], [("t.log", "evidence for 1 of 2 setting(s) the NPU scripts set; in effect: lr; "
                                              "no evidence: seed")])


def test_the_blocks_read_as_typed_facts():
    text = HF.format(bf16=True, fp16=False) + DEEPSPEED.format(stage=3) + \
        "trainable params: 4,194,304 || all params: 6,742,609,920 || trainable%: 0.0622\n"
    ex = runlog.extract(Source(name="x.log", data=text.encode()), SideContext("gpu"))
    got = [(f.key, f.value, f.line) for f in ex.facts]
    assert got == [("params_dtype", "bf16", 3), ("lr", 2e-05, 5), ("lr_decay_style", "cosine", 6),
                   ("save", "/tmp/out", 7), ("micro_batch_size", 4, 8), ("seed", 42, 9),
                   ("params_dtype", "bf16", 12), ("clip_grad", 1.0, 13), ("zero_stage", 3, 14),
                   ("model:trainable_params", 4194304, 18), ("model:all_params", 6742609920, 18)]
    assert ex.frameworks == {"hf", "deepspeed"} and ex.errors == []


# ---------------------------------------------------------------- model structure identity

def _sharded(folder, layers: int, width: int = 4):
    """A sharded safetensors checkpoint (index and two shards) of `layers` layers."""
    import json

    import numpy as np
    from safetensors.numpy import save_file

    folder.mkdir()
    t = {"model.embed_tokens.weight": np.zeros((8, width), np.float32)}
    for i in range(layers):
        t[f"model.layers.{i}.mlp.up_proj.weight"] = np.full((width, width), i, np.float32)
    names = sorted(t)
    parts = {"model-00001-of-00002.safetensors": names[:1], "model-00002-of-00002.safetensors": names[1:]}
    wmap = {}
    for fname, keys in parts.items():
        save_file({k: t[k] for k in keys}, str(folder / fname))
        wmap.update({k: fname for k in keys})
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": wmap}))
    return folder


def test_structure_from_a_sharded_index(tmp_path):
    g, n = _sharded(tmp_path / "gpu", 2), _sharded(tmp_path / "npu", 4)
    report = api.weights(str(g), str(n))
    got = [(f.rule, f.key, f.message) for f in report.findings if f.rule == "SD606"]
    assert got == [("SD606", "model:layers", "the NPU model has 2 more layers than the GPU model (2 on GPU, 4 on NPU)")]
    assert sorted(f.key for f in report.findings if f.rule == "SD602") == [
        "weights:model.layers.2.mlp.up_proj.weight", "weights:model.layers.3.mlp.up_proj.weight"]


def test_the_same_structure_is_no_structure_finding(tmp_path):
    g, n = _sharded(tmp_path / "gpu", 3), _sharded(tmp_path / "npu", 3)
    assert [f.rule for f in api.weights(str(g), str(n)).findings] == []


def test_layer_count_from_tensor_names():
    from scriptdiff.checks.structure import human, layers

    assert layers(["transformer.h.0.attn.c_attn.weight", "transformer.h.11.mlp.c_fc.weight", "transformer.wte.weight",
                   "transformer.h.11.ln_1.weight"]) == 2
    assert layers(["embed.weight", "norm.weight"]) == 0
    assert (human(12_582_912), human(25_165_824), human(6_742_609_920), human(999)) == ("12.6M", "25.2M", "6.74B", "999")


PEFT = "trainable params: {t} || all params: {a} || trainable%: 0.19\n"


def test_structure_from_peft_counts(tmp_path):
    report, _ = _run(tmp_path, {"train.log": PEFT.format(t="12,582,912", a="6,750,000,000")},
                     {"train.log": PEFT.format(t="25,165,824", a="6,750,000,000")})
    assert [(f.rule, f.check, f.key, f.message, f.gpu.line, f.npu.line) for f in report.findings] == [
        ("SD606", "hyperparameters", "model:trainable_params",
         "the GPU run trains 12.6M parameters, the NPU run 25.2M (12,582,912 vs 25,165,824)", 1, 1)]


def test_peft_counts_equal_or_on_one_side_only(tmp_path):
    report, _ = _run(tmp_path, {"train.log": PEFT.format(t="12,582,912", a="6,750,000,000")},
                     {"train.log": PEFT.format(t="12,582,912", a="6,750,000,000")})
    assert report.findings == []
    report, _ = _run(tmp_path / "x" if (tmp_path / "x").mkdir() is None else tmp_path,
                     {"train.log": PEFT.format(t="12,582,912", a="6,750,000,000")},
                     {"run.sh": "torchrun pretrain_gpt.py --lr 0.1\n"})
    assert [f.key for f in report.findings if f.key.startswith("model:")] == []


# ---------------------------------------------------------------- a noise floor (curves --floor)

def _curve(path, factor, steps: int = 100):
    """A Megatron log of a falling loss, each point multiplied by factor(step)."""
    path.write_text("".join(f" iteration {s:8d}/     100 | lm loss: {(10 - 5 * s / steps) * factor(s):.8E} | "
                            f"grad norm: 1.000 |\n" for s in range(1, steps + 1)))
    return str(path)


def _floor_runs(tmp_path, gap: float):
    gpu = _curve(tmp_path / "gpu.log", lambda s: 1.0)
    gpu2 = _curve(tmp_path / "gpu2.log", lambda s: 1.018 if s % 2 else 0.982)  # the GPU-to-GPU spread: 1.8%
    npu = _curve(tmp_path / "npu.log", lambda s: 1 + gap)
    return gpu, gpu2, npu


def test_a_gap_within_the_spread_of_two_gpu_runs_is_no_finding(tmp_path):
    gpu, gpu2, npu = _floor_runs(tmp_path, 0.015)
    assert [f.rule for f in api.curves(gpu, npu).findings] == ["SD701"]  # 1.5% against the default 1%
    report = api.curves(gpu, npu, floor=gpu2)
    assert report.findings == []
    res = report.details["curves"]
    assert res.verdict == "equal"
    assert "loss: 1.50% between GPU and NPU, within the GPU-to-GPU spread (1.80%)" in res.evidence
    assert report.overview[2] == ("floor: the GPU-to-GPU spread of two runs sets each metric's tolerance (at least "
                                  "1.00%): loss 1.80%, grad_norm 0.00%")
    assert report.json_extra["curves"]["settings"]["floor"] == {"side": "gpu", "spread": {
        "grad_norm": 0.0, "loss": res.settings.floor["loss"]}}
    assert round(res.settings.floor["loss"], 6) == 0.018


def test_a_gap_beyond_the_spread_is_a_finding_with_its_margin(tmp_path):
    gpu, gpu2, npu = _floor_runs(tmp_path, 0.05)
    report = api.curves(gpu, npu, floor=gpu2)
    assert [f.rule for f in report.findings] == ["SD701"]
    msg = report.findings[0].message
    assert msg.startswith("first-step difference: loss differs from the first steps: mean relative error 5.00% over "
                          "the first 10 points (tolerance 1.80%; loss: 5.00% between GPU and NPU, beyond the "
                          "GPU-to-GPU spread (1.80%) by 3.20 points (2.8x)); at step 1"), msg


def test_the_page_and_the_plot_draw_the_band(tmp_path):
    from scriptdiff.report.curves import chart_data

    gpu, gpu2, npu = _floor_runs(tmp_path, 0.015)
    res = api.curves(gpu, npu, floor=gpu2).details["curves"]
    data = {s["name"]: s for s in chart_data(res)["series"]}
    assert round(data["loss"]["floor"], 6) == 0.018 and data["grad_norm"]["floor"] == 0.0
    assert "floor" not in chart_data(api.curves(gpu, npu).details["curves"])["series"][0]


def test_a_floor_run_with_no_curves_is_an_error(tmp_path):
    gpu, _gpu2, npu = _floor_runs(tmp_path, 0.05)
    (tmp_path / "empty.log").write_text("nothing here\n")
    report = api.curves(gpu, npu, floor=str(tmp_path / "empty.log"))
    assert report.findings == [] and any(e.fatal for e in report.errors)


def test_a_long_name_printed_without_dots_is_read():
    text = DEEPSPEED.format(stage=2).replace(
        "   gradient_clipping ............ 1.0", "   train_micro_batch_size_per_gpu  2")
    ex = runlog.extract(Source(name="x.log", data=text.encode()), SideContext("gpu"))
    assert [(f.key, f.value, f.line) for f in ex.facts] == [("params_dtype", "bf16", 2), ("micro_batch_size", 2, 3),
                                                            ("zero_stage", 2, 4)]


def test_the_bundled_example_shows_one_claim_not_in_effect():
    from pathlib import Path

    from scriptdiff.project.checkrun import load_config, run_checks

    report = run_checks(load_config(str(Path(__file__).parents[1] / "fixtures/example-logs/scriptdiff.toml")),
                        Options(use_cache=False))
    got = [(f.key, f.npu.path.rsplit("example/", 1)[-1], f.npu.line, f.extra["run_says"]["line"],
            f.message.split(";")[1].split(" at ")[0]) for f in report.findings if f.rule == "SD229"]
    assert got == [("params_dtype", "npu/pretrain.sh", 12, 3, " DeepSpeed's printed configuration says fp16")]
    lines = [x.split("fixtures/", 1)[-1] for x in report.evidence_lines()]
    assert [x.split("; no evidence")[0] for x in lines] == [
        "example-logs/train-gpu.log: evidence for 5 of 21 setting(s) the GPU scripts set; in effect: clip_grad, "
        "gradient_accumulation_steps, micro_batch_size, params_dtype, zero_stage",
        "example-logs/train-npu.log: evidence for 5 of 21 setting(s) the NPU scripts set; in effect: clip_grad, "
        "gradient_accumulation_steps, micro_batch_size, zero_stage; not in effect: params_dtype"]


# --- the floor in `check`: two log paths for one side ------------------------------------------------

def _check_logs(tmp_path, gpu: list[str], npu: list[str]):
    from scriptdiff.project.checkrun import load_config, run_checks

    lines = ["[gpu]", f"logs = {gpu!r}".replace("'", '"'), "[npu]", f"logs = {npu!r}".replace("'", '"')]
    (tmp_path / "scriptdiff.toml").write_text("\n".join(lines) + "\n")
    return run_checks(load_config(str(tmp_path / "scriptdiff.toml")), Options(use_cache=False))


def test_two_gpu_logs_in_check_set_the_floor_a_gap_within_it_passes(tmp_path):
    gpu, gpu2, npu = _floor_runs(tmp_path, 0.015)
    alone = _check_logs(tmp_path, [gpu], [npu])
    assert [f.rule for f in alone.findings if f.check == "process"] == ["SD701"]
    report = _check_logs(tmp_path, [gpu, gpu2], [npu])
    assert [f.rule for f in report.findings if f.check == "process"] == []
    assert report.verdicts["process"] == ("pass", "no differences")
    res = report.details["curves"]
    assert "loss: 1.50% between GPU and NPU, within the GPU-to-GPU spread (1.80%)" in res.evidence
    assert round(res.settings.floor["loss"], 6) == 0.018 and res.settings.floor_side == "gpu"


def test_two_npu_logs_in_check_a_gap_beyond_the_floor_is_a_finding_with_its_margin(tmp_path):
    npu, npu2, gpu = _floor_runs(tmp_path, 0.05)  # the NPU's two runs 1.8% apart, the GPU 5% away
    report = _check_logs(tmp_path, [gpu], [npu, npu2])
    (f,) = [f for f in report.findings if f.check == "process"]
    assert (f.rule, f.key) == ("SD701", "curve:loss")
    assert f.message.startswith(
        "first-step difference: loss differs from the first steps: mean relative error 4.76% over the first 10 points "
        "(tolerance 1.80%; loss: 4.76% between GPU and NPU, beyond the NPU-to-NPU spread (1.80%) by 2.96 points "
        "(2.6x)); at step 1"), f.message


def test_two_logs_of_one_run_that_do_not_overlap_set_no_floor(tmp_path):
    """A run's log in two parts (steps 1-30, then a resumed 31-60) is no second run."""
    gpu, _gpu2, npu = _floor_runs(tmp_path, 0.015)
    part = tmp_path / "gpu-resumed.log"
    part.write_text("".join(f" iteration {s:8d}/     100 | lm loss: {5.0:.8E} | grad norm: 1.000 |\n"
                            for s in range(500, 530)))
    report = _check_logs(tmp_path, [gpu, str(part)], [npu])
    assert report.details["curves"].settings.floor == {}


def test_the_floor_from_the_command_line(tmp_path, monkeypatch, cli):
    """`--gpu logs=A --gpu logs=B`: the existing way to give a side two inputs."""
    _floor_runs(tmp_path, 0.015)
    monkeypatch.chdir(tmp_path)
    _code, alone, _err = cli("check", "--gpu", "logs=gpu.log", "--npu", "logs=npu.log")
    _code, out, _err = cli("check", "--gpu", "logs=gpu.log", "--gpu", "logs=gpu2.log", "--npu", "logs=npu.log")
    assert "== process [differences]" in alone and "SD701" in alone
    assert "== process [pass]" in out and "SD701" not in out


def test_diff_dir_dir_audits_the_logs_it_finds_beside_the_runs(tmp_path):
    """A log in a folder is a pair of its own in `diff DIR DIR`; it is still evidence for its
    side's run (the launch script beside it)."""
    _side(tmp_path, "gpu", {"run.sh": MEG_SH, "train.log": MEGATRON.format(flash=True)})
    _side(tmp_path, "npu", {"run.sh": MEG_SH, "train.log": MEGATRON.format(flash=False)})
    report = api.diff([str(tmp_path / "gpu")], [str(tmp_path / "npu")], Options(use_cache=False))
    assert _sd228(report, tmp_path) == [
        ("use_flash_attn", "use_flash_attn on in npu/run.sh:4; the run's arguments block says off at npu/train.log:5: "
                           "the setting was not in effect on NPU", "npu", 4, 5)]
    assert _note(report, tmp_path, "gpu/train.log") == [
        "evidence for 3 of 3 setting(s) the GPU scripts set; in effect: lr, params_dtype, use_flash_attn"]


def test_diff_dir_dir_with_logs_in_effect_adds_nothing(tmp_path):
    _side(tmp_path, "gpu", {"run.sh": MEG_SH, "train.log": MEGATRON.format(flash=True)})
    _side(tmp_path, "npu", {"run.sh": MEG_SH, "train.log": MEGATRON.format(flash=True).replace("x\n", "y\n")})
    report = api.diff([str(tmp_path / "gpu")], [str(tmp_path / "npu")], Options(use_cache=False))
    assert [f.rule for f in report.findings] == []
