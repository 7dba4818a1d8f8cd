"""Issue 14, row 4: common spellings in plain argparse scripts land on their vocabulary keys,
and an attention change in code lands on its hyperparameter key with the exact diagnosis."""
from __future__ import annotations

import pytest
from test_python_values import run

ARGS = '''import argparse

parser = argparse.ArgumentParser()
parser.add_argument("--{name}", type={type}, default={value})
args = parser.parse_args()
'''

SPELLINGS = [
    ("batch_size", "int", 12, 16, "micro_batch_size", "SD203"),
    ("per_device_train_batch_size", "int", 8, 4, "micro_batch_size", "SD203"),
    ("attn_pdrop", "float", 0.1, 0.0, "attention_dropout", "SD207"),
    ("resid_pdrop", "float", 0.1, 0.0, "hidden_dropout", "SD207"),
    ("embd_pdrop", "float", 0.1, 0.0, "embedding_dropout", "SD207"),
    ("n_layer", "int", 12, 24, "num_layers", "SD204"),
    ("n_head", "int", 12, 16, "num_attention_heads", "SD204"),
    ("n_embd", "int", 768, 1024, "hidden_size", "SD204"),
    ("block_size", "int", 1024, 2048, "seq_length", "SD204"),
    ("grad_accum", "int", 40, 8, "gradient_accumulation_steps", "SD203"),
    ("warmup_iters", "int", 2000, 200, "lr_warmup_iters", "SD202"),
    ("lr_decay_iters", "int", 600000, 5000, "lr_decay_iters", "SD202"),
    ("min_lr", "float", 6e-5, 6e-6, "min_lr", "SD202"),
]


@pytest.mark.parametrize("name,type_,gv,nv,key,rule", SPELLINGS)
def test_argparse_spellings_land_on_their_keys(tmp_path, name, type_, gv, nv, key, rule):
    r = run(tmp_path, ARGS.format(name=name, type=type_, value=gv), ARGS.format(name=name, type=type_, value=nv))
    assert [(f.rule, f.key, f.gpu.value, f.npu.value, f.gpu.line, f.npu.line) for f in r.findings] == [
        (rule, key, gv, nv, 4, 4)]


def test_same_spelling_same_value_is_silent(tmp_path):
    src = ARGS.format(name="n_layer", type="int", value=12)
    assert run(tmp_path, src, src).findings == []


ATT_GPU = '''import torch
from flash_attn import flash_attn_func


def attend(q, k, v, scores):
    probs = torch.softmax(scores.float(), dim=-1).type_as(q)
    out = flash_attn_func(q, k, v, dropout_p=0.1, causal=True)
    return out, probs
'''


def test_eager_attention_and_half_softmax_land_on_their_keys(tmp_path):
    npu = ATT_GPU.replace("from flash_attn import flash_attn_func\n", "import torch_npu\n") \
        .replace("scores.float()", "scores") \
        .replace("flash_attn_func(q, k, v, dropout_p=0.1, causal=True)",
                 "torch.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=0.1, is_causal=True)")
    r = run(tmp_path, ATT_GPU, npu)
    assert [(f.rule, f.check, f.key, f.gpu.value, f.npu.value, f.gpu.line, f.npu.line, f.message)
            for f in r.findings] == [
        ("SD205", "hyperparameters", "attention_softmax_in_fp32", True, False, 6, 6,
         "torch.softmax is computed in fp32 on GPU only: in the input's precision on NPU"),
        ("SD201", "hyperparameters", "use_flash_attn", True, False, 7, 7,
         "attention kernel: flash_attn.flash_attn_func on GPU, eager attention on NPU "
         "(torch.nn.functional.scaled_dot_product_attention)")]


def test_softmax_in_fp32_on_both_sides_is_silent(tmp_path):
    npu = ATT_GPU.replace("scores.float()", "scores.to(torch.float32)")
    assert run(tmp_path, ATT_GPU, npu).findings == []


APEX = '''import torch
from apex import amp


def setup(model, opt):
    model, opt = amp.initialize(model, opt, opt_level="O2", loss_scale=64)
    return model, opt
'''


def test_apex_opt_level_is_the_precision(tmp_path):
    """NVIDIA apex `amp.initialize(opt_level=...)` sets the training precision (params_dtype):
    O1 against O2 is one finding with both lines; the same level on both sides is silent."""
    (tmp_path / "differs").mkdir()
    r = run(tmp_path / "differs", APEX, APEX.replace('"O2"', '"O1"'))
    assert [(f.rule, f.key, f.gpu.value, f.npu.value, f.gpu.line, f.npu.line) for f in r.findings
            if f.severity != "info"] == [("SD205", "params_dtype", "o2", "o1", 6, 6)]
    (tmp_path / "same").mkdir()
    r = run(tmp_path / "same", APEX, APEX.replace("import torch\n", "import torch\nimport torch_npu\n"))
    assert [f for f in r.findings if f.severity != "info"] == []
