"""Config files (lang/config.py): line-tracking JSON, safe YAML, DeepSpeed/HF mapping, references."""
from __future__ import annotations

from pathlib import Path

import pytest

from scriptdiff.model import Options, SideContext
from scriptdiff.run.pipeline import diff_files
from scriptdiff.lang import config
from scriptdiff.inputs.sources import Source


def facts(text: str, name: str = "ds_config.json"):
    ex = config.extract(Source(name=name, data=text.encode()), SideContext("gpu"))
    return ex, {f.key: f for f in ex.facts}


def test_json_loader_lines():
    data, lines = config.load_json('{\n  "a": 1,\n  "b": {\n    "c": [1,\n 2.5e-3]\n  },\n  "d": "x\\"y"\n}\n')
    assert data == {"a": 1, "b": {"c": [1, 0.0025]}, "d": 'x"y'}
    assert lines[("a",)] == 2 and lines[("b",)] == 3 and lines[("b", "c")] == 4 and lines[("b", "c", 1)] == 5
    assert lines[("d",)] == 7


@pytest.mark.parametrize("text,where", [
    ('{"a": 1,\n "b": }', "line 2"),
    ('{"a": 1', "line 1: unexpected end of file"),
    ('{"a": 1,}\n', "line 1: expected a quoted key"),
    ('{"a": tru}', "line 1"),
    ('{"a": 1} x', "line 1: extra data"),
])
def test_malformed_json_is_one_line_error(text, where):
    ex, f = facts(text)
    assert f == {} and len(ex.errors) == 1
    msg = ex.errors[0].message
    assert msg.startswith("not valid JSON: ") and where in msg and "\n" not in msg


def test_malformed_yaml_is_one_line_error():
    ex, f = facts("a: 1\nb: [1, 2\n", name="cfg.yaml")
    assert f == {} and ex.errors[0].message.startswith("not valid YAML: line 3") and "\n" not in ex.errors[0].message


def test_yaml_is_loaded_safely():
    ex, f = facts("a: !!python/object/apply:os.system ['echo hi']\nb: !!python/name:os.system\n", name="cfg.yaml")
    # tags are never constructed: the values stay plain data, or the file is refused
    assert all(isinstance(x.value, (str, int, float, bool, list, type(None))) for x in f.values())


def test_deepspeed_mapping():
    text = ('{"train_micro_batch_size_per_gpu": 2, "train_batch_size": 64, "gradient_clipping": 1.0,\n'
            ' "fp16": {"enabled": true, "initial_scale_power": 16, "loss_scale": 0, "loss_scale_window": 500},\n'
            ' "optimizer": {"type": "AdamW", "params": {"lr": 3e-4, "betas": [0.9, 0.95], "eps": 1e-8}},\n'
            ' "zero_optimization": {"stage": 3, "overlap_comm": true}}\n')
    ex, f = facts(text)
    assert ex.frameworks == {"deepspeed"}
    assert f["micro_batch_size"].value == 2 and f["global_batch_size"].value == 64
    assert f["params_dtype"].value == "fp16" and f["initial_loss_scale"].value == 65536.0
    assert "loss_scale" not in f  # 0 = dynamic, the default
    assert f["adam_beta1"].value == 0.9 and f["adam_beta2"].value == 0.95 and f["adam_beta2"].line == 3
    assert f["zero_stage"].value == 3 and f["optimizer"].value == "AdamW"
    assert f["zero_optimization.overlap_comm"].value is True  # full path, not 'overlap_comm'


@pytest.mark.parametrize("text,deepspeed", [
    ('{"train_batch_size": 64, "gradient_clipping": 1.0, "base_lr": 0.1}', True),  # two of DeepSpeed's keys
    ('{"zero_optimization": {"stage": 2}, "base_lr": 0.1}', True),  # a key DeepSpeed alone has
    ('{"train_batch_size": 64, "base_lr": 0.1}', False),  # a model zoo's config with a batch size of its own
])
def test_a_deepspeed_config_is_told_by_its_own_keys(text, deepspeed):
    """DeepSpeed spells the learning rate under optimizer.params only: in its config a top-level
    `base_lr` is its own key; in any other config it is the learning rate."""
    ex, f = facts(text)
    assert (ex.frameworks == {"deepspeed"}) == deepspeed
    assert ("lr" in f) != deepspeed and ("base_lr" in f) == deepspeed
    if not deepspeed:
        assert f["lr"].value == 0.1 and f["micro_batch_size"].value == 64


def test_auto_values_are_left_to_the_trainer():
    ex, f = facts('{"train_micro_batch_size_per_gpu": "auto", "gradient_clipping": "auto", "zero_optimization": {"stage": 2}}')
    assert set(f) == {"zero_stage"}


@pytest.mark.parametrize("value,expected", [("fa2", True), ("disabled", False), ("auto", "auto"), ("sdpa", False)])
def test_llamafactory_flash_attn(value, expected):
    ex, f = facts(f"flash_attn: {value}\n", name="sft.yaml")
    assert f["use_flash_attn"].value == expected


@pytest.mark.parametrize("value,expected", [("flash_attention_2", True), ("eager", False), ("sdpa", False)])
def test_attn_implementation(value, expected):
    ex, f = facts(f"attn_implementation: {value}\n", name="sft.yaml")
    assert f["use_flash_attn"].value is expected


def test_hf_yaml_keys_and_dtypes():
    ex, f = facts("learning_rate: 1.0e-4\ncutoff_len: 1024\nbf16: true\nfp16: false\nseed: 3\n", name="sft.yaml")
    assert ex.frameworks == {"hf"}
    assert (f["lr"].value, f["seq_length"].value, f["params_dtype"].value, f["seed"].value) == (1e-4, 1024, "bf16", 3)
    ex, f = facts("mixed_precision: bf16\nnum_processes: 8\ndeepspeed_config:\n  zero_stage: 2\n", name="accelerate.yaml")
    assert f["params_dtype"].value == "bf16" and f["world_size"].value == 8
    zs = f["zero_stage"]  # by its last segment, as the deepspeed_config section's own setting
    assert (zs.value, zs.line, zs.meta.get("sectioned"), zs.meta["written_key"]) == (2, 4, True, "deepspeed_config.zero_stage")


def test_key_order_ignored_and_numbers_normalised(tmp_path):
    (tmp_path / "g").mkdir()
    (tmp_path / "n").mkdir()
    (tmp_path / "g" / "ds.json").write_text('{"gradient_clipping": 1.0, "zero_optimization": {"stage": 2}}')
    (tmp_path / "n" / "ds.json").write_text('{"zero_optimization": {"stage": 2}, "gradient_clipping": 1}')
    rep = diff_files([str(tmp_path / "g" / "ds.json")], [str(tmp_path / "n" / "ds.json")], Options(use_cache=False))
    assert rep.findings == [] and rep.errors == []


def _pair(tmp_path, gfiles: dict, nfiles: dict, main: str):
    for side, files in (("gpu", gfiles), ("npu", nfiles)):
        (tmp_path / side).mkdir()
        for name, text in files.items():
            (tmp_path / side / name).write_text(text)
    return diff_files([str(tmp_path / "gpu" / main)], [str(tmp_path / "npu" / main)], Options(use_cache=False))


def test_reference_followed_from_yaml(tmp_path):
    rep = _pair(tmp_path, {"sft.yaml": "deepspeed: ds.json\nlearning_rate: 1e-4\n", "ds.json": '{"zero_optimization": {"stage": 2}}'},
                {"sft.yaml": "deepspeed: ds.json\nlearning_rate: 1e-4\n", "ds.json": '{"zero_optimization": {"stage": 3}}'},
                "sft.yaml")
    assert [(f.rule, f.key, f.gpu.value, f.npu.value, f.gpu.line, f.npu.line) for f in rep.findings] == [
        ("SD213", "zero_stage", 2, 3, 1, 1)]
    assert rep.findings[0].gpu.path.endswith("ds.json")


def test_missing_reference_that_differs_is_reported(tmp_path):
    rep = _pair(tmp_path, {"run.sh": "deepspeed train.py --deepspeed ds_z2.json --learning_rate 1\n"},
                {"run.sh": "deepspeed train.py --deepspeed ds_z3.json --learning_rate 1\n"}, "run.sh")
    # the pair of unresolved references is one warning that lists the paths tried on each side,
    # said once: not again as a differing reference (SD222)
    assert [f for f in rep.findings if f.rule == "SD222"] == []
    unresolved = [(f.rule, f.key, f.gpu.value, f.npu.value) for f in rep.findings if f.rule == "SD154"]
    assert unresolved == [("SD154", "reference:deepspeed", f"ds_z2.json not found (tried {tmp_path / 'gpu' / 'ds_z2.json'})",
                           f"ds_z3.json not found (tried {tmp_path / 'npu' / 'ds_z3.json'})")]
    assert rep.exit_code() == 1


def test_missing_reference_on_one_side_only(tmp_path):
    rep = _pair(tmp_path, {"run.sh": "deepspeed train.py --deepspeed ds.json --learning_rate 1\n",
                           "ds.json": '{"zero_optimization": {"stage": 2}}'},
                {"run.sh": "deepspeed train.py --deepspeed ds.json --learning_rate 1\n"}, "run.sh")
    got = sorted((f.rule, f.key, f.gpu.value if f.gpu else None, f.npu.value if f.npu else None) for f in rep.findings)
    # the NPU side's config is unknown, not unset: zero_stage is named as not compared, not
    # reported as "set on GPU only"; said once (SD154, not again as SD222)
    assert got == [("SD154", "reference:deepspeed", None, f"ds.json not found (tried {tmp_path / 'npu' / 'ds.json'})")]
    said = next(f for f in rep.findings if f.rule == "SD154").message
    assert said == (f"referenced config ds.json was not found on NPU ({tmp_path / 'npu' / 'run.sh'}:1): its settings "
                    f"were not compared; 1 setting(s) of the GPU side could not be compared: zero_stage")


def test_empty_and_non_mapping():
    ex, f = facts("", name="a.yaml")
    assert ex.errors[0].message == "empty file; nothing compared"
    ex, f = facts("[1, 2]")
    assert "not a mapping" in ex.errors[0].message


def test_random_json_never_raises():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=200, deadline=None, database=None)
    @given(st.text(alphabet='{}[]":,0123456789.eE-+ truefalsn\\\n', max_size=80))
    def check(text):
        try:
            config.load_json(text)
        except config.JSONError as e:
            assert str(e).startswith("line ") and "\n" not in str(e)

    check()


def test_json_loader_agrees_with_stdlib():
    import json

    from hypothesis import given, settings
    from hypothesis import strategies as st

    leaf = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=5)
    doc = st.recursive(leaf, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3),
                       max_leaves=10)

    @settings(max_examples=150, deadline=None, database=None)
    @given(doc, st.sampled_from([None, 2]))
    def check(d, indent):
        text = json.dumps(d, indent=indent)
        assert config.load_json(text)[0] == json.loads(text)

    check()


def test_switch_spellings_agree_between_script_and_yaml(tmp_path):
    (tmp_path / "gpu").mkdir()
    (tmp_path / "npu").mkdir()
    (tmp_path / "gpu" / "run.sh").write_text("python train.py --gradient_checkpointing True --bf16 True --learning_rate 1e-5\n")
    (tmp_path / "npu" / "sft.yaml").write_text("gradient_checkpointing: true\nbf16: true\nlearning_rate: 1.0e-5\n")
    rep = diff_files([str(tmp_path / "gpu" / "run.sh")], [str(tmp_path / "npu" / "sft.yaml")], Options(use_cache=False))
    assert rep.findings == []
    assert {k: (g.value, n.value) for k, g, n in rep.table} == {
        "recompute_granularity": (True, True), "params_dtype": ("bf16", "bf16"), "lr": (1e-5, 1e-5)}
