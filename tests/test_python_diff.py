"""The Python diff on fixture pairs modelled on real code: faithful ports are clean, and
injected differences give exactly the expected findings (rule, key, both values, both lines)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from scriptdiff.model import Options
from scriptdiff.run.pipeline import diff_files

ROOT = Path(__file__).resolve().parent.parent
PY = ROOT / "fixtures" / "python"
PAIRS = {
    "hf_trainer": "train.py",
    "ddp_amp": "train.py",
    "megatron_pretrain": "pretrain_gpt.py",
    "flash_attention": "model.py",
    "import_aliases": "train.py",
}


# what each masked port edit keeps (issue 43: SD023 for the fused optimizer and attention swaps,
# SD027 for transfer_to_npu) is tests/test_fidelity.py's; these tests are about everything else
PORT_NOTES = ["SD023", "SD027"]


def run(gpu: Path, npu: Path):
    return diff_files([str(gpu)], [str(npu)], Options(use_cache=False, ignore=PORT_NOTES))


def inject(tmp_path: Path, pair: str, *edits, gpu_edits=()) -> tuple[Path, Path]:
    """Copy a fixture pair to tmp and apply str.replace edits to the NPU (and GPU) text."""
    name = PAIRS.get(pair, "train.py")
    src = PY / pair if pair in PAIRS else ROOT / "fixtures" / pair
    out = {}
    for side, eds in (("gpu", gpu_edits), ("npu", edits)):
        text = (src / side / name).read_text(encoding="utf-8")
        for old, new in eds:
            assert old in text, f"fixture text not found: {old!r}"
            text = text.replace(old, new, 1)
        d = tmp_path / side
        d.mkdir(parents=True, exist_ok=True)
        (d / name).write_text(text, encoding="utf-8")
        out[side] = d / name
    return out["gpu"], out["npu"]


def line_of(path: Path, needle: str) -> int:
    for i, ln in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if needle in ln:
            return i
    raise AssertionError(f"{needle!r} not in {path}")


def serious(report):
    return [f for f in report.findings if f.severity in ("error", "warning")]


def summary(f):
    return (f.rule, f.key, f.gpu.value if f.gpu else None, f.npu.value if f.npu else None,
            f.gpu.line if f.gpu else None, f.npu.line if f.npu else None)


# ------------------------------------------------------------------ faithful ports
@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_faithful_port_has_no_warning_or_error(pair):
    name = PAIRS[pair]
    report = run(PY / pair / "gpu" / name, PY / pair / "npu" / name)
    assert serious(report) == [], [summary(f) for f in serious(report)]
    assert report.errors == []
    assert report.masked, "a port without any masked substitution is not a port"


def test_ddp_port_masks_every_kind_of_substitution():
    r = run(PY / "ddp_amp/gpu/train.py", PY / "ddp_amp/npu/train.py")
    assert {m.rule for m in r.masked} == {"SD001", "SD002", "SD004", "SD005", "SD006", "SD007", "SD009"}
    assert r.findings == []
    # the .cuda() -> .npu() mask names both sides' line and source
    g, n = PY / "ddp_amp/gpu/train.py", PY / "ddp_amp/npu/train.py"
    m = [m for m in r.masked if m.rule == "SD001" and "model.npu" in m.npu.source]
    assert len(m) == 1
    assert (m[0].gpu.line, m[0].npu.line) == (line_of(g, "model = model.cuda(local_rank)"),
                                              line_of(n, "model = model.npu(local_rank)"))
    assert m[0].gpu.source == "model = model.cuda(local_rank)"


def test_ddp_port_reads_hyperparameters_from_argparse_and_calls():
    r = run(PY / "ddp_amp/gpu/train.py", PY / "ddp_amp/npu/train.py")
    table = {k: (g.value if g else None, n.value if n else None) for k, g, n in r.table}
    assert table["lr"] == (0.1, 0.1)
    assert table["sgd_momentum"] == (0.9, 0.9)
    assert table["weight_decay"] == (1e-4, 1e-4)
    assert table["clip_grad"] == (1.0, 1.0)
    assert table["seed"] == (1234, 1234)
    assert table["params_dtype"] == ("fp16", "fp16")  # autocast's dtype is the training precision (issue 27)
    assert table["initial_loss_scale"] == (65536.0, 65536.0)


# -------------------------------------------------------------- injected: DDP + AMP
def test_ddp_argparse_lr_changed(tmp_path):
    g, n = inject(tmp_path, "ddp_amp", ('"--lr", type=float, default=0.1', '"--lr", type=float, default=0.2'))
    r = run(g, n)
    assert [summary(f) for f in r.findings] == [
        ("SD202", "lr", 0.1, 0.2, line_of(g, '"--lr"'), line_of(n, '"--lr"'))]
    assert r.findings[0].severity == "error"


def test_ddp_option_changed_is_a_warning(tmp_path):
    g, n = inject(tmp_path, "ddp_amp", ("broadcast_buffers=False", "broadcast_buffers=True"))
    r = run(g, n)
    assert [summary(f) for f in r.findings] == [
        ("SD102", "code:train.py:main", False, True, line_of(g, "broadcast_buffers"), line_of(n, "broadcast_buffers"))]
    assert r.findings[0].message == "torch.nn.parallel.DistributedDataParallel: argument broadcast_buffers differs"


def test_loss_argument_changed_is_an_error(tmp_path):
    g, n = inject(tmp_path, "ddp_amp", ("label_smoothing=0.1", "label_smoothing=0.0"))
    r = run(g, n)
    assert [summary(f) for f in r.findings] == [
        ("SD101", "code:train.py:train_one_epoch", 0.1, 0.0, line_of(g, "label_smoothing"), line_of(n, "label_smoothing"))]


def test_autocast_dtype_and_grad_scaler(tmp_path):
    g, n = inject(tmp_path, "ddp_amp", ("autocast(dtype=torch.float16)", "autocast(dtype=torch.bfloat16)"),
                  ("GradScaler(init_scale=2.**16)", "GradScaler(init_scale=2.**10)"))
    r = run(g, n)
    assert sorted(summary(f) for f in r.findings) == sorted([
        ("SD205", "params_dtype", "fp16", "bf16", line_of(g, "with autocast"), line_of(n, "with autocast")),
        ("SD209", "initial_loss_scale", 65536.0, 1024.0, line_of(g, "GradScaler(init"), line_of(n, "GradScaler(init")),
    ])


def test_clipping_removed_is_reported_once(tmp_path):
    g, n = inject(tmp_path, "ddp_amp", ("        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip_grad)\n", ""))
    r = run(g, n)
    assert [summary(f) for f in r.findings] == [
        ("SD101", "code:train.py:train_one_epoch",
         "torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip_grad)", None,
         line_of(g, "clip_grad_norm_"), None)]
    assert r.findings[0].message == "statement on GPU only"


def test_seed_call_removed_on_npu(tmp_path):
    # torch.manual_seed(seed) seeds every device's generator: the NPU's manual_seed_all(seed)
    # dropped beside it is the port (rules/devices.yaml device_seeds); torch.manual_seed dropped is not
    g, n = inject(tmp_path, "ddp_amp", ("    torch.npu.manual_seed_all(seed)\n", ""))
    assert run(g, n).findings == []
    g, n = inject(tmp_path / "torch", "ddp_amp", ("    torch.manual_seed(seed)\n", ""))
    r = run(g, n)
    assert [summary(f)[:4] for f in r.findings] == [
        ("SD101", "code:train.py:set_seed", "torch.manual_seed(seed)", None)]


# ------------------------------------------------------------------- HF Trainer
def test_hf_learning_rate_changed(tmp_path):
    g, n = inject(tmp_path, "hf_trainer", ("learning_rate=2e-5", "learning_rate=1e-5"))
    r = run(g, n)
    assert [summary(f) for f in r.findings] == [
        ("SD202", "lr", 2e-5, 1e-5, line_of(g, "learning_rate="), line_of(n, "learning_rate="))]


def test_hf_default_values_are_not_differences(tmp_path):
    # max_grad_norm=1.0 is the TrainingArguments default: leaving it out is the same setting
    g, n = inject(tmp_path, "hf_trainer", ("        max_grad_norm=1.0,\n", ""))
    r = run(g, n)
    assert r.findings == []
    table = {k: (gf, nf) for k, gf, nf in r.table}
    assert table["clip_grad"][1] is None  # no NPU fact: the default was used in the comparison


def test_hf_mixed_precision_and_flash_attention(tmp_path):
    g, n = inject(tmp_path, "hf_trainer", ("bf16=True", "fp16=True"),
                  ('attn_implementation="flash_attention_2"', 'attn_implementation="sdpa"'))
    r = run(g, n)
    assert sorted(summary(f) for f in r.findings) == sorted([
        ("SD205", "params_dtype", "bf16", "fp16", line_of(g, "bf16=True"), line_of(n, "fp16=True")),
        ("SD201", "use_flash_attn", True, "sdpa", line_of(g, "attn_implementation"), line_of(n, "attn_implementation")),
    ])


def test_hf_output_dir_is_info(tmp_path):
    g, n = inject(tmp_path, "hf_trainer", ('output_dir="output/llama2-sft"', 'output_dir="output/llama2-sft-npu"'))
    r = run(g, n)
    assert [(f.rule, f.severity, f.key) for f in r.findings] == [("SD221", "info", "save")]
    assert r.exit_code() == 0


# ---------------------------------------------------------------- flash attention
def test_flash_attention_keep_prob_not_translated(tmp_path):
    g, n = inject(tmp_path, "flash_attention", ("keep_prob=1 - dropout_p", "keep_prob=dropout_p"))
    r = run(g, n)
    assert [summary(f) for f in r.findings] == [
        ("SD207", "attention_dropout", "dropout_p", "dropout_p",
         line_of(g, "flash_attn_func(q"), line_of(n, "keep_prob="))]
    assert "keep_prob must be 1 - dropout_p" in r.findings[0].message


def test_flash_attention_scale_missing_and_wrong_sparse_mode(tmp_path):
    g, n = inject(tmp_path, "flash_attention", ("            scale=self.softmax_scale,\n", ""),
                  ("sparse_mode=3", "sparse_mode=1"))
    r = run(g, n)
    got = sorted((f.rule, f.message) for f in r.findings)
    assert got == [
        ("SD105", "flash attention translation: scale is not given: npu_fusion_attention defaults to 1.0, "
                  "flash_attn to softmax_scale or 1/sqrt(head_dim)"),
        ("SD105", "flash attention translation: sparse_mode 1 is not a causal mode (0, 2, 3)"),
    ]
    sm = [f for f in r.findings if "sparse_mode" in f.message][0]
    assert (sm.gpu.value, sm.npu.value, sm.npu.line) == (True, 1, line_of(n, "sparse_mode="))


def test_dropout_parameter_default_changed(tmp_path):
    g, n = inject(tmp_path, "flash_attention", ("hidden: int, dropout: float = 0.1", "hidden: int, dropout: float = 0.0"))
    r = run(g, n)
    assert [summary(f) for f in r.findings] == [
        ("SD101", "code:model.py:DecoderLayer.__init__", 0.1, 0.0,
         line_of(g, "def __init__(self, dim: int, n_heads: int, hidden"), line_of(n, "def __init__(self, dim: int, n_heads: int, hidden"))]
    assert r.findings[0].message == "def __init__: parameter dropout differs"


def test_flash_attention_swap_is_masked():
    r = run(PY / "flash_attention/gpu/model.py", PY / "flash_attention/npu/model.py")
    assert sorted(m.rule for m in r.masked) == ["SD006", "SD008", "SD008", "SD008"]


# ------------------------------------------------------------------ import aliases
def test_aliases_constant_lr_changed(tmp_path):
    g, n = inject(tmp_path, "import_aliases", ("LR = 3e-4", "LR = 6e-4"))
    r = run(g, n)
    assert [summary(f) for f in r.findings] == [("SD202", "lr", 3e-4, 6e-4, line_of(g, "LR = "), line_of(n, "LR = "))]
    assert r.findings[0].gpu.via == "LR"


def test_aliases_optimizer_betas_reported_once(tmp_path):
    g, n = inject(tmp_path, "import_aliases", ("betas=(0.9, 0.95)", "betas=(0.9, 0.999)"))
    r = run(g, n)
    assert [summary(f) for f in r.findings] == [
        ("SD206", "adam_beta2", 0.95, 0.999, line_of(g, "betas="), line_of(n, "betas="))]


def test_aliases_masks_resolve_qualified_names():
    r = run(PY / "import_aliases/gpu/train.py", PY / "import_aliases/npu/train.py")
    rules = sorted(m.rule for m in r.masked)
    assert rules == ["SD002", "SD004", "SD006", "SD009", "SD009", "SD009"]


def test_aliases_deterministic_removed(tmp_path):
    g, n = inject(tmp_path, "import_aliases", ("    torch.use_deterministic_algorithms(True)\n", ""))
    r = run(g, n)
    assert [summary(f) for f in r.findings] == [
        ("SD207", "deterministic", True, None, line_of(g, "use_deterministic_algorithms"), None)]


# ---------------------------------------------------------------------- Megatron
def test_megatron_loss_changed(tmp_path):
    g, n = inject(tmp_path, "megatron_pretrain",
                  ("return loss[0] * args.context_parallel_size, local_num_tokens",
                   "return loss[0], local_num_tokens"))
    r = run(g, n)
    assert [summary(f) for f in r.findings] == [
        ("SD101", "code:pretrain_gpt.py:loss_func", "loss[0] * args.context_parallel_size", "loss[0]",
         line_of(g, "return loss[0]"), line_of(n, "return loss[0]"))]


def test_megatron_adaptor_import_is_masked():
    r = run(PY / "megatron_pretrain/gpu/pretrain_gpt.py", PY / "megatron_pretrain/npu/pretrain_gpt.py")
    assert [(m.rule, m.gpu, m.npu.source) for m in r.masked if m.rule == "SD006"] == [
        ("SD006", None, "import mindspeed.megatron_adaptor")]


# ------------------------------------------------------------------ README example
def test_readme_example_has_exactly_three_real_findings():
    g, n = ROOT / "fixtures/example/gpu/train.py", ROOT / "fixtures/example/npu/train.py"
    r = run(g, n)
    assert sorted(summary(f) for f in r.findings) == sorted([
        ("SD207", "seed", 42, 1234, line_of(g, "SEED = "), line_of(n, "SEED = ")),
        ("SD201", "use_flash_attn", True, False, line_of(g, "attn_implementation"), line_of(n, "attn_implementation")),
        ("SD206", "adam_beta2", 0.95, 0.999, line_of(g, "betas="), line_of(n, "betas=")),
    ])
    assert len(r.masked) >= 10
    assert r.exit_code() == 1


def test_readme_example_cli(cli):
    code, out, err = cli("diff", "fixtures/example/gpu/train.py", "fixtures/example/npu/train.py", "--format", "json",
                         "--ignore", ",".join(PORT_NOTES))
    assert code == 1
    doc = json.loads(out)
    assert sorted(f["key"] for f in doc["findings"]) == ["adam_beta2", "seed", "use_flash_attn"]
    sd001 = [m for m in doc["masked"] if m["rule"] == "SD001"]
    assert sd001 and sd001[0]["npu"]["source"].startswith("batch = {k: v.npu(")


# ------------------------------------------------------------------- bad input
def test_unparsable_file_is_compared_as_text(tmp_path, cli):
    g, n = inject(tmp_path, "import_aliases", ("def main():\n", "def main(:\n"))
    r = run(g, n)
    assert [e.message for e in r.errors] == [
        f"not valid Python: line {line_of(n, 'def main(:')}: " + r.errors[0].message.split(": ", 2)[2]]
    assert r.errors[0].message.endswith("; compared as text")
    text = [f for f in r.findings if f.rule == "SD108"]
    # nothing is masked in text mode: the alias edits show too, and so does the broken line
    assert (line_of(g, "def main():"), line_of(n, "def main(:")) in [(f.gpu.line, f.npu.line) for f in text]
    # the NPU file's settings are unknown, not absent: no "set on GPU only", the input is not
    # understood and names the GPU settings it left uncompared (never silently equal)
    assert [(f.rule, f.key) for f in r.findings if f.rule != "SD108"] == [("SD154", f"input:{n}")]
    npu = next(a for a in r.inputs if a.side == "npu")
    assert npu.status == "not understood"
    assert npu.unread == [f"its settings were not read (not valid Python: line {line_of(n, 'def main(:')}: invalid "
                          f"syntax)", "10 setting(s) of the other side could not be compared: adam_beta1, adam_beta2, "
                          "adam_eps, clip_grad, deterministic, lr, params_dtype, seed, train_iters, weight_decay"]
    code, out, err = cli("diff", str(g), str(n))
    assert code == 1 and "Traceback" not in out + err


OPTIMIZER = """import torch


def build(model):
    return torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), eps=1e-8,
                             weight_decay=0.1)
"""


def test_a_side_that_does_not_parse_is_unknown_not_absent(tmp_path, cli):
    """Issue 25, reproduction 6: one unclosed bracket on NPU gave "set on GPU only; NPU has no
    value" errors for lr, betas, eps and weight decay, and the account said "2 understood"."""
    g, n = tmp_path / "gpu" / "train.py", tmp_path / "npu" / "train.py"
    g.parent.mkdir()
    n.parent.mkdir()
    g.write_text(OPTIMIZER)
    n.write_text(OPTIMIZER.replace("weight_decay=0.1)", "weight_decay=0.1"))
    r = run(g, n)
    why = "not valid Python: line 5: '(' was never closed"
    uncompared = "5 setting(s) of the other side could not be compared: adam_beta1, adam_beta2, adam_eps, lr, weight_decay"
    assert [(f.rule, f.key, f.gpu.value if f.gpu else None, f.npu.value if f.npu else None)
            for f in r.findings if f.rule != "SD108"] == [
        ("SD154", f"input:{n}", None, f"its settings were not read ({why}); {uncompared}")]
    assert not [f for f in r.findings if f.check == "hyperparameters"]
    assert [(a.side, a.status, a.unread) for a in r.inputs] == [
        ("gpu", "understood", []), ("npu", "not understood", [f"its settings were not read ({why})", uncompared])]
    assert [e.message for e in r.errors] == [f"{why}; compared as text"]  # the keys are listed once, on the account
    assert r.exit_code() == 1
    code, out, _err = cli("diff", str(g), str(n), "--no-cache")
    assert code == 1
    assert out.splitlines()[-1] == f"read 2 files: 1 understood or identical, 1 not: {n} (not understood: its " \
                                   f"settings were not read ({why}))"
    # the faithful negative: both sides parse and agree
    n.write_text(OPTIMIZER)
    assert (run(g, n).findings, run(g, n).exit_code()) == ([], 0)


def test_gbk_comments_are_decoded_and_noted(tmp_path):
    g, n = inject(tmp_path, "import_aliases")
    n.write_bytes(n.read_bytes().replace(b"# ", b"# ").replace(b"SEED = 1234", "SEED = 1234  # 随机种子".encode("gbk")))
    r = run(g, n)
    assert [e.message for e in r.errors] == ["not UTF-8; decoded as gb18030"]
    assert serious(r) == []


@pytest.mark.parametrize("bad", ["missing", "binary"])
def test_missing_or_binary_input_exits_2(tmp_path, cli, bad):
    g = PY / "import_aliases/gpu/train.py"
    n = tmp_path / "train.py"
    if bad == "binary":
        n.write_bytes(b"\x00\x01\x02PK\x03\x04" * 10)
    code, out, err = cli("diff", str(g), str(n))
    assert code == 2
    assert "Traceback" not in out + err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and str(n) in lines[0]


def test_identical_files_have_nothing_to_report(tmp_path):
    g, n = inject(tmp_path, "hf_trainer")
    shutil.copy(g, n)
    r = run(g, n)
    assert r.findings == [] and r.masked == []


def test_python_rule_data_is_validated(tmp_path):
    from scriptdiff.ruleset.rule_validators import check_python
    from scriptdiff.ruleset.rules import RuleError, load_packs

    src = (ROOT / "rules" / "python.yaml").read_text(encoding="utf-8")
    bad = tmp_path / "python.yaml"
    bad.write_text(src.replace("{npu: torch.npu, gpu: torch.cuda, rule: SD002}", "{npu: torch.npu, gpu: torch.cuda, rule: SD101}", 1),
                   encoding="utf-8")
    others = [p for p in (ROOT / "rules").glob("*.yaml") if p.name != "python.yaml"]
    with pytest.raises(RuleError, match=r"^rules/python.yaml:24: python.qualified_renames\[12\].rule: 'SD101' is not a mask rule code$"):
        check_python(load_packs(others + [bad]))  # raises in load_packs, or here if validators were reset


def pair_of(tmp_path, gpu: str, npu: str, name: str = "train.py"):
    (tmp_path / "gpu").mkdir()
    (tmp_path / "npu").mkdir()
    g, n = tmp_path / "gpu" / name, tmp_path / "npu" / name
    g.write_text(gpu, encoding="utf-8")
    n.write_text(npu, encoding="utf-8")
    return g, n, run(g, n)


def test_optimizer_argument_is_reported_once_as_hyperparameter(tmp_path):
    g, n, r = pair_of(tmp_path, "import torch\nopt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1)\n",
                      "import torch\nimport torch_npu\nopt = torch_npu.optim.NpuFusedAdamW(model.parameters(), lr=2e-4, weight_decay=0.1)\n")
    assert [summary(f) for f in r.findings] == [("SD202", "lr", 1e-4, 2e-4, 2, 3)]
    assert sorted(m.rule for m in r.masked) == ["SD006", "SD007"]


def test_positional_optimizer_arguments_and_seeds(tmp_path):
    g, n, r = pair_of(tmp_path,
                      "import random\nimport torch\nrandom.seed(0)\nopt = torch.optim.SGD(params, 0.1, 0.9)\n",
                      "import random\nimport torch\nrandom.seed(1)\nopt = torch.optim.SGD(params, 0.1, 0.8)\n")
    assert sorted(summary(f) for f in r.findings) == [
        ("SD206", "sgd_momentum", 0.9, 0.8, 4, 4), ("SD207", "python_seed", 0, 1, 3, 3)]


def test_missing_optimizer_argument_compared_with_callee_default(tmp_path):
    g, n, r = pair_of(tmp_path, "import torch\nopt = torch.optim.AdamW(p, lr=1e-3, eps=1e-6)\n",
                      "import torch\nopt = torch.optim.AdamW(p, lr=1e-3)\n")
    f = r.findings
    assert [summary(x) for x in f] == [("SD206", "adam_eps", 1e-6, 1e-8, 2, None)]
    assert f[0].npu.source == "default" and f[0].npu.via == "torch.optim.AdamW default"


def test_equal_numbers_spelled_differently(tmp_path):
    g, n, r = pair_of(tmp_path, "import torch\nLR = 1e-4\nopt = torch.optim.AdamW(p, lr=LR, betas=(0.9, 0.95))\n",
                      "import torch\nLR = 0.0001\nopt = torch.optim.AdamW(p, lr=LR, betas=[0.90, 9.5e-1])\n")
    assert r.findings == []


def test_qualified_name_masks_all_import_styles(tmp_path):
    g, n, r = pair_of(tmp_path,
                      "import torch as th\nfrom torch import cuda\nth.cuda.synchronize()\ncuda.empty_cache()\n",
                      "import torch\nimport torch_npu\nfrom torch_npu import npu as cuda\ntorch_npu.npu.synchronize()\ncuda.empty_cache()\n")
    assert r.findings == []
    assert sorted((m.rule, m.npu.line) for m in r.masked) == [("SD002", 3), ("SD002", 4), ("SD006", 2)]


def test_statement_only_on_one_side_and_scope_key(tmp_path):
    src = "class Trainer:\n    def step(self, loss):\n        loss.backward()\n        self.opt.step()\n"
    g, n, r = pair_of(tmp_path, src, src.replace("        self.opt.step()\n", "        self.opt.step()\n        self.opt.step()\n"))
    assert [summary(f) for f in r.findings] == [
        ("SD101", "code:train.py:Trainer.step", None, "self.opt.step()", None, 5)]
    assert r.findings[0].message == "statement on NPU only"


def test_logging_difference_is_info_and_exit_0(tmp_path):
    g, n, r = pair_of(tmp_path, "import logging\nlogger = logging.getLogger(__name__)\nlogger.info('step %d', 1)\n",
                      "import logging\nlogger = logging.getLogger(__name__)\nlogger.info('npu step %d', 1)\n")
    assert [(f.rule, f.severity) for f in r.findings] == [("SD103", "info")]
    assert r.exit_code() == 0


def test_dataclass_field_defaults_are_hyperparameters(tmp_path):
    src = ("from dataclasses import dataclass, field\n\n@dataclass\nclass TrainArgs:\n"
           "    learning_rate: float = field(default=2e-5, metadata={'help': 'lr'})\n    warmup_ratio: float = 0.03\n"
           "    output_dir: str = 'out'\n")
    g, n, r = pair_of(tmp_path, src, src.replace("default=2e-5", "default=1e-5").replace("'out'", "'out-npu'"))
    assert sorted(summary(f) for f in r.findings) == [
        ("SD202", "lr", 2e-5, 1e-5, 5, 5), ("SD221", "save", "out", "out-npu", 7, 7)]


def test_apex_fused_adam_to_npu_fused_adam_changes_weight_decay_kind(tmp_path):
    gsrc = "from apex.optimizers import FusedAdam\nopt = FusedAdam(params, lr=1e-4, weight_decay=0.1)\n"
    nsrc = "from torch_npu.optim import NpuFusedAdam\nopt = NpuFusedAdam(params, lr=1e-4, weight_decay=0.1)\n"
    g, n, r = pair_of(tmp_path, gsrc, nsrc)
    assert [summary(f) for f in r.findings] == [
        ("SD101", "code:train.py:<module>", "apex.optimizers.FusedAdam: decoupled (AdamW) weight decay",
         "torch_npu.optim.NpuFusedAdam: L2 (Adam) weight decay", 2, 2)]
    assert sorted(m.rule for m in r.masked) == ["SD007", "SD007", "SD007"]


def test_apex_fused_adam_in_adam_mode_is_a_faithful_swap(tmp_path):
    gsrc = "from apex.optimizers import FusedAdam\nopt = FusedAdam(params, lr=1e-4, adam_w_mode=False, weight_decay=0.1)\n"
    nsrc = "from torch_npu.optim import NpuFusedAdam\nopt = NpuFusedAdam(params, lr=1e-4, weight_decay=0.1)\n"
    g, n, r = pair_of(tmp_path, gsrc, nsrc)
    # adam_w_mode=False on GPU only is an argument difference (warning), but no weight-decay mismatch
    assert [f.rule for f in r.findings if f.rule == "SD101"] == []


def test_json_output_is_deterministic(cli):
    args = ("diff", "fixtures/python/ddp_amp/gpu/train.py", "fixtures/python/ddp_amp/npu/train.py", "--format", "json",
            "--ignore", ",".join(PORT_NOTES))
    a, b = cli(*args), cli(*args)
    assert a == b and a[0] == 0
    doc = json.loads(a[1])
    assert doc["findings"] == [] and len(doc["masked"]) == 12


def test_end_to_end_python_m_scriptdiff(tmp_path):
    import os
    import subprocess
    import sys

    binf = tmp_path / "model.py"
    binf.write_bytes(b"\x00\x00torch\x00" * 100)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "scriptdiff", "diff", "fixtures/example/gpu/train.py", str(binf)],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "Traceback" not in p.stderr + p.stdout
    assert p.stderr.strip() == f"scriptdiff: {binf}: binary file; not compared"
    p = subprocess.run([sys.executable, "-m", "scriptdiff", "diff", "fixtures/example/gpu/train.py",
                        "fixtures/example/npu/train.py", "--ignore", ",".join(PORT_NOTES)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1
    assert "3 error(s), 0 warning(s), 0 info; 11 expected substitution(s) masked" in p.stdout
