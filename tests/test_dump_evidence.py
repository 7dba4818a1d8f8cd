"""Claims against a dump (issue 44): what a side's scripts set, checked against what its own
msprobe dump shows (rules/dumps.yaml `dump_evidence`, scriptdiff/dumps/evidence.py): the
precision of the compute calls, and which attention path ran."""
from __future__ import annotations

import json
import os

import pytest

from scriptdiff.model import Options
from scriptdiff.project.checkrun import load_config, run_checks

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FX = os.path.join(ROOT, "fixtures", "dumps")


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # paths are shown relative to the working folder


def _tensor(dtype: str) -> dict:
    return {"type": "torch.Tensor", "dtype": dtype, "shape": [2, 4], "Max": 1.0, "Min": -1.0, "Mean": 0.1,
            "Norm": 2.0, "requires_grad": False}


ATT = "Module.layers.{i}.attn.SelfAttention.forward.0"


def _layer(i: int, dtype: str, out: str, attention: str) -> list[tuple[str, str, str, str | None]]:
    """One layer's forward calls, msprobe's names (name, input dtype, output dtype, module call)."""
    qkv = f"Module.layers.{i}.attn.qkv.Linear.forward.0"
    calls = [(f"Functional.linear.{2 * i}.forward", dtype, out, qkv), (qkv, dtype, out, ATT.format(i=i))]
    if attention == "eager":
        calls += [(f"Torch.matmul.{2 * i}.forward", out, out, ATT.format(i=i)),
                  (f"Tensor.__truediv__.{i}.forward", out, out, ATT.format(i=i)),
                  (f"Torch.softmax.{i}.forward", out, out, ATT.format(i=i)),
                  (f"Torch.matmul.{2 * i + 1}.forward", out, out, ATT.format(i=i))]
    else:
        calls += [(f"{attention}.{i}.forward", out, out, ATT.format(i=i))]
    return calls + [(ATT.format(i=i), dtype, out, None), (f"Functional.linear.{2 * i + 1}.forward", out, out, None)]


def _dump(folder, dtype="torch.float32", out=None, attention="eager", layers=2) -> str:
    """A dump of `layers` attention layers in msprobe's layout (dump/step0/rank0/), each compute
    call's inputs in `dtype` and outputs in `out` (autocast: float32 in, bfloat16 out)."""
    rank = folder / "dump" / "step0" / "rank0"
    rank.mkdir(parents=True)
    calls = [c for i in range(layers) for c in _layer(i, dtype, out or dtype, attention)]
    data = {name: {"input_args": [_tensor(i)], "input_kwargs": {}, "output": [_tensor(o)]} for name, i, o, _p in calls}
    data["Functional.linear.0.backward"] = {"input": [_tensor("torch.float32")], "output": [_tensor("torch.float32")]}
    (rank / "dump.json").write_text(json.dumps({"task": "statistics", "level": "mix", "framework": "pytorch",
                                                "dump_data_dir": None, "data": data}))
    (rank / "construct.json").write_text(json.dumps({name: p for name, _i, _o, p in calls}))
    return str(folder / "dump")


MEG_SH = "torchrun pretrain_gpt.py \\\n  --lr 0.0003 \\\n  --bf16 \\\n  --use-flash-attn\n"


def _check(tmp_path, gpu: dict, npu: dict):
    """`check` with each side's launch script and dump (a side: {"launch": text, "dump": path}),
    run in tmp_path (the paths shown are relative to it)."""
    lines = []
    for side, given in (("gpu", gpu), ("npu", npu)):
        (tmp_path / side).mkdir(exist_ok=True)
        (tmp_path / side / "run.sh").write_text(given.get("launch", MEG_SH))
        lines += [f"[{side}]", f'launch = ["{side}/run.sh"]', f'dumps = ["{given["dump"]}"]']
    (tmp_path / "scriptdiff.toml").write_text("\n".join(lines) + "\n")
    return run_checks(load_config(str(tmp_path / "scriptdiff.toml")), Options(use_cache=False))


def _sd229(report, tmp_path):
    return [(f.key, f.message.replace(f"{tmp_path}/", ""), "gpu" if f.gpu else "npu", (f.gpu or f.npu).line,
             f.extra["run_says"]["value"]) for f in report.findings if f.rule == "SD229"]


def _notes(report, tmp_path=None):
    """Each dump's account of the settings its side's scripts set (a note of the run)."""
    return sorted((e.path, e.message) for e in report.errors if e.is_note and e.message.startswith("evidence"))


def test_dumps_whose_attention_calls_show_the_eager_path_while_the_script_asks_for_flash(tmp_path, monkeypatch):
    """The real msprobe dumps of fixtures/dumps: the GPU script asks for flash_attention_2, the
    GPU dump given is the eager run's (matmul, softmax, matmul in each SelfAttention). The NPU
    script asks for eager and its dump holds scaled_dot_product_attention: sdpa is "off" in the
    vocabulary and a fused call in a dump, so that is no evidence either way."""
    monkeypatch.chdir(ROOT)
    cfg = tmp_path / "scriptdiff.toml"
    cfg.write_text(f'[gpu]\nscripts = ["{FX}/flash/scripts"]\ndumps = ["{FX}/base/dump"]\n'
                   f'[npu]\nscripts = ["{FX}/base/scripts"]\ndumps = ["{FX}/flash/dump"]\n')
    report = run_checks(load_config(str(cfg)), Options(use_cache=False))
    found = [(f.rule, f.key, f.gpu.path, f.gpu.line, f.gpu.value, f.npu, f.message)
             for f in report.findings if f.rule == "SD229"]
    assert found == [
        ("SD229", "use_flash_attn", "fixtures/dumps/flash/scripts/train.py", 18, "flash_attention_2", None,
         "use_flash_attn flash_attention_2 in fixtures/dumps/flash/scripts/train.py:18; the msprobe dump says off at "
         "fixtures/dumps/base/dump/step0/rank0/dump.json (the attention ran the eager path, matmul-softmax-matmul "
         "2 time(s) in layers.0.attn, layers.1.attn, and no fused attention call): the setting was not in effect "
         "on GPU")]
    assert _notes(report) == [
        ("fixtures/dumps/base/dump", "evidence for 1 of 1 setting(s) the GPU scripts set; not in effect: "
                                     "use_flash_attn"),
        ("fixtures/dumps/flash/dump", "evidence for 0 of 1 setting(s) the NPU scripts set; no evidence: "
                                      "use_flash_attn")]


def test_the_eager_dump_of_an_eager_script_is_no_finding(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    cfg = tmp_path / "scriptdiff.toml"
    cfg.write_text(f'[gpu]\nscripts = ["{FX}/base/scripts"]\ndumps = ["{FX}/base/dump"]\n'
                   f'[npu]\nscripts = ["{FX}/flash/scripts"]\ndumps = ["{FX}/flash/dump"]\n')
    report = run_checks(load_config(str(cfg)), Options(use_cache=False))
    assert [f for f in report.findings if f.rule == "SD229"] == []
    assert _notes(report) == [
        ("fixtures/dumps/base/dump", "evidence for 1 of 1 setting(s) the GPU scripts set; in effect: use_flash_attn"),
        ("fixtures/dumps/flash/dump", "evidence for 1 of 1 setting(s) the NPU scripts set; in effect: use_flash_attn")]


def test_bf16_set_while_the_calls_compute_in_float32(tmp_path):
    """--bf16 and --use-flash-attn on both sides; the NPU dump's compute calls are float32 in and
    out (the NPU run's precision switch was not in effect), the GPU's bfloat16; each side's
    attention is a fused call (flash_attn_func, npu_fusion_attention)."""
    report = _check(tmp_path, {"dump": _dump(tmp_path / "g", "torch.bfloat16", attention="Functional.flash_attn_func")},
                    {"dump": _dump(tmp_path / "n", "torch.float32", attention="NPU.npu_fusion_attention")})
    assert _sd229(report, tmp_path) == [
        ("params_dtype", "params_dtype bf16 in npu/run.sh:3; the msprobe dump says fp32 at "
                         "n/dump/step0/rank0/dump.json (4 of its 4 compute calls in the forward pass run in fp32: "
                         "float32 4): the setting was not in effect on NPU", "npu", 3, "fp32")]
    assert _notes(report) == [
        ("g/dump", "evidence for 2 of 2 setting(s) the GPU scripts set; in effect: params_dtype, use_flash_attn"),
        ("n/dump", "evidence for 2 of 2 setting(s) the NPU scripts set; in effect: use_flash_attn; "
                   "not in effect: params_dtype")]


def test_autocast_outputs_in_bf16_are_the_precision_in_effect(tmp_path):
    """Under autocast a linear layer's inputs are float32 and its output bfloat16: in effect."""
    report = _check(tmp_path, {"dump": _dump(tmp_path / "g", "torch.float32", "torch.bfloat16", "NPU.npu_fusion_attention")},
                    {"dump": _dump(tmp_path / "n", "torch.bfloat16", attention="NPU.npu_fusion_attention")})
    assert _sd229(report, tmp_path) == []


def test_both_not_in_effect_on_one_side_whatever_the_other_does(tmp_path):
    report = _check(tmp_path, {"dump": _dump(tmp_path / "g", "torch.bfloat16", attention="NPU.npu_fusion_attention")},
                    {"dump": _dump(tmp_path / "n", "torch.float32", layers=3)})
    assert _sd229(report, tmp_path) == [
        ("params_dtype", "params_dtype bf16 in npu/run.sh:3; the msprobe dump says fp32 at "
                         "n/dump/step0/rank0/dump.json (12 of its 12 compute calls in the forward pass run in fp32: "
                         "float32 12): the setting was not in effect on NPU", "npu", 3, "fp32"),
        ("use_flash_attn", "use_flash_attn on in npu/run.sh:4; the msprobe dump says off at "
                           "n/dump/step0/rank0/dump.json (the attention ran the eager path, matmul-softmax-matmul 3 "
                           "time(s) in layers.0.attn, layers.1.attn, layers.2.attn, and no fused attention call): "
                           "the setting was not in effect on NPU", "npu", 4, False)]


def test_a_script_that_sets_neither_gets_no_word_from_the_dump(tmp_path):
    plain = "torchrun pretrain_gpt.py --lr 0.0003\n"
    report = _check(tmp_path, {"launch": plain, "dump": _dump(tmp_path / "g")},
                    {"launch": plain, "dump": _dump(tmp_path / "n")})
    assert _sd229(report, tmp_path) == [] and _notes(report) == []


def test_a_dump_without_attention_calls_is_no_evidence_for_the_kernel(tmp_path):
    report = _check(tmp_path, {"dump": _dump(tmp_path / "g", "torch.bfloat16", attention="Tensor.__add__")},
                    {"dump": _dump(tmp_path / "n", "torch.bfloat16", attention="Tensor.__add__")})
    assert _sd229(report, tmp_path) == []
    assert _notes(report) == [
        ("g/dump", "evidence for 1 of 2 setting(s) the GPU scripts set; in effect: params_dtype; "
                   "no evidence: use_flash_attn"),
        ("n/dump", "evidence for 1 of 2 setting(s) the NPU scripts set; in effect: params_dtype; "
                   "no evidence: use_flash_attn")]


# --- modules frozen on one side only (SD811), from the dumps' gradient records ----------------------

def _model_dump(folder, trained: list[str]) -> str:
    """An embedding and a head, run forward on this side, with parameters_grad for `trained`."""
    rank = folder / "step0" / "rank0"
    rank.mkdir(parents=True)
    data = {}
    for mod, cls in (("model.embed_tokens", "Embedding"), ("lm_head", "Linear")):
        data[f"Module.{mod}.{cls}.forward.0"] = {"input_args": [_tensor("torch.float32")], "input_kwargs": {},
                                                 "output": [_tensor("torch.float32")]}
    for mod, cls in (("lm_head", "Linear"), ("model.embed_tokens", "Embedding")):
        if mod in trained:
            data[f"Module.{mod}.{cls}.parameters_grad.0"] = {"weight": [_tensor("torch.float32")]}
    (rank / "dump.json").write_text(json.dumps({"task": "statistics", "level": "mix", "framework": "pytorch",
                                                "dump_data_dir": None, "data": data}))
    return folder.name


def _frozen(report):
    return [(f.rule, f.key, f.gpu.value, f.npu.value, f.gpu.path, f.npu.path, f.message)
            for f in report.findings if f.rule == "SD811"]


def test_the_embeddings_frozen_on_npu_only(tmp_path):
    from scriptdiff import api

    g = _model_dump(tmp_path / "g", ["model.embed_tokens", "lm_head"])
    n = _model_dump(tmp_path / "n", ["lm_head"])
    report = api.dumps(g, n, Options(use_cache=False))
    assert _frozen(report) == [
        ("SD811", "dump:frozen:npu", "gradients", "no gradients", "g/step0/rank0/dump.json", "n/step0/rank0/dump.json",
         "frozen on NPU only: model.embed_tokens (1 module(s)) run on both sides, and their parameters get gradients "
         "in the GPU dump (parameters_grad) and none in the NPU dump")]
    assert report.findings[0].extra["frozen"] == {"side": "npu", "modules": ["model.embed_tokens"]}


def test_modules_trained_on_both_sides_or_no_gradients_dumped_say_nothing(tmp_path):
    from scriptdiff import api

    both = [_model_dump(tmp_path / s, ["model.embed_tokens", "lm_head"]) for s in ("g", "n")]
    assert _frozen(api.dumps(*both, Options(use_cache=False))) == []
    none = [_model_dump(tmp_path / s, []) for s in ("g0", "n0")]
    assert _frozen(api.dumps(*none, Options(use_cache=False))) == []
    # one side dumped no gradient at all (a forward-only dump): no evidence, not "frozen"
    assert _frozen(api.dumps(both[0], none[1], Options(use_cache=False))) == []


def test_a_module_frozen_in_the_real_msprobe_dump(tmp_path):
    """fixtures/dumps/base with layers.0.fc1's gradient record taken out of the NPU copy."""
    import shutil

    shutil.copytree(os.path.join(FX, "base", "dump"), tmp_path / "n")
    dump = tmp_path / "n" / "step0" / "rank0" / "dump.json"
    doc = json.loads(dump.read_text())
    del doc["data"]["Module.layers.0.fc1.Linear.parameters_grad.0"]
    dump.write_text(json.dumps(doc))
    from scriptdiff import api

    report = api.dumps(os.path.relpath(os.path.join(FX, "base", "dump")), "n", Options(use_cache=False))
    assert [f[-1] for f in _frozen(report)] == [
        "frozen on NPU only: layers.0.fc1 (1 module(s)) run on both sides, and their parameters get gradients in the "
        "GPU dump (parameters_grad) and none in the NPU dump"]
