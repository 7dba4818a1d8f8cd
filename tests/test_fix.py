"""`scriptdiff fix` (issue 29): on every fixture pair, the NPU side brought back to the GPU side.

Each pair is copied to a temporary folder and fixed there; then `diff` runs again and must
report none of the fixed findings (and nothing new), every edited file must parse, the masked
substitutions must be as many as before, each edit must touch only the lines the finding's
value is written on (or, for a one-sided flag or key, add or remove its own line), and a second
`fix` must change nothing. The findings fixed and refused are asserted exactly."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from scriptdiff import api
from scriptdiff.model import Options
from scriptdiff.ruleset.registry import detect

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures"


def copy_pair(tmp: Path, gpu: Path, npu: Path) -> tuple[str, str]:
    """The pair under tmp/gpu and tmp/npu (files or folders), as the fix edits them."""
    out = []
    for side, src in (("gpu", gpu), ("npu", npu)):
        dest = tmp / side
        if src.is_dir():
            shutil.copytree(src, dest)
            out.append(str(dest))
        else:
            dest.mkdir()
            shutil.copy(src, dest / src.name)
            out.append(str(dest / src.name))
    return out[0], out[1]


def ident(f) -> tuple:
    return (f.rule, f.key, f.gpu.path if f.gpu else None, f.npu.path if f.npu else None)


def loud(report) -> set:
    return {ident(f) for f in report.findings if f.severity in ("error", "warning")}


def edited_lines(text: str, start: int, end: int) -> set[int]:
    """The lines of `text` an edit of start..end replaces (none for an insertion)."""
    if start == end:
        return set()
    return set(range(text.count("\n", 0, start) + 1, text.count("\n", 0, max(start, end - 1)) + 2))


def provenance_lines(d) -> set[int]:
    """The lines where the finding's NPU value is written: its line, the line of the literal or
    variable it comes from, and for a removal the line before (whose `\\` may go)."""
    f = d.finding
    fact = f.npu.fact
    lines = {f.npu.line}
    o = fact.meta.get("origin")
    if isinstance(o, dict) and o.get("pos"):
        lines.add(o["pos"][0])
    return lines | ({ln - 1 for ln in lines} if d.action == "remove" else set())


# (gpu, npu) fixture pairs -> ({(rule, key) fixed}, {(rule, key): why not fixed, for the loud ones})
PAIRS = {
    "example": (("example/gpu", "example/npu"), {("SD201", "use_flash_attn"), ("SD206", "adam_beta2"), ("SD207", "seed")}, {}),
    "megatron": (("launch/megatron/gpu", "launch/megatron/npu"), set(), {}),
    "megatron-injected": (
        ("launch/megatron/gpu", "launch/megatron/npu_injected"),
        {("SD203", "tensor_model_parallel_size"), ("SD202", "lr"), ("SD201", "use_flash_attn"), ("SD207", "seed")},
        {("SD306", "env:NCCL_DETERMINISTIC"): "check"}),  # dp and gas are computed: SD230, info
    "deepspeed": (("launch/deepspeed/gpu", "launch/deepspeed/npu"), set(), {}),
    "deepspeed-injected": (
        ("launch/deepspeed/gpu", "launch/deepspeed/npu_injected"),
        {("SD208", "clip_grad"), ("SD206", "adam_beta2"), ("SD213", "zero_stage"), ("SD203", "world_size"),
         ("SD202", "lr"), ("SD201", "use_flash_attn")},
        {}),  # dp and the global batch are computed from world_size: SD230, info
    "llamafactory": (("launch/llamafactory/gpu", "launch/llamafactory/npu"), set(), {}),
    "llamafactory-injected": (
        ("launch/llamafactory/gpu", "launch/llamafactory/npu_injected"),
        {("SD213", "zero_stage"), ("SD204", "lora_rank"), ("SD204", "seq_length")},
        {("SD201", "use_flash_attn"): "spelling"}),
    "verl": (("launch/verl/gpu", "launch/verl/npu"), set(), {}),
    "verl-injected": (("launch/verl/gpu", "launch/verl/npu_injected"),
                      {("SD202", "lr"), ("SD220", "actor_rollout_ref.rollout.n")}, {}),
    "megatron-log": (("launch/megatron_log/gpu_train.log", "launch/megatron_log/npu_train.log"), set(),
                     {("SD207", "seed"): "no place"}),
    "toml": (("toml/gpu", "toml/npu"), set(), {}),
    **{f"python-{p.name}": ((f"python/{p.name}/gpu", f"python/{p.name}/npu"), set(), {})
       for p in sorted((FIX / "python").iterdir()) if p.is_dir()},
}


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_fix_on_every_fixture_pair(name, tmp_path):
    (g, n), want_fixed, want_refused = PAIRS[name]
    gpu, npu = copy_pair(tmp_path, FIX / g, FIX / n)
    before = api.diff(gpu, npu, Options(keep_facts=True))
    result = api.fix(gpu, npu, Options())
    fixed = {(d.finding.rule, d.finding.key) for d in result.fixed}
    refused = {(d.finding.rule, d.finding.key): d.why for d in result.refused}
    assert (fixed, refused) == (want_fixed, want_refused)
    assert result.written == bool(want_fixed)
    after = api.diff(gpu, npu, Options())
    # none of the fixed findings is left, nothing new came, the refused ones are still there
    # (but a derived one, which follows its fixed inputs)
    assert not {ident(d.finding) for d in result.fixed} & {ident(f) for f in after.findings}
    left = loud(before) - {ident(d.finding) for d in result.fixed}
    assert loud(after) <= left
    assert {ident(d.finding) for d in result.refused if d.why != "derived"} & left <= loud(after)
    assert len(after.masked) == len(before.masked) == result.masked[0] == result.masked[1]
    assert [e.message for e in after.errors] == [e.message for e in before.errors]
    for name_, change in result.files.items():
        text = Path(change.src.origin).read_text(encoding="utf-8")
        assert text == change.new and text != change.old
        assert detect(change.src).fixer_module().parses(change.old, text) is None
    for d in result.fixed:  # each edit stays on the lines of the value it fixes
        for e in d.edits:
            old = result.files[e.path].old
            if d.action == "add":
                assert e.start == e.end, (d.finding.key, e)
            else:
                assert edited_lines(old, e.start, e.end) <= provenance_lines(d), (d.finding.key, e)
    again = api.fix(gpu, npu, Options(), write=False)
    assert again.files == {} and again.unified() == ""
    assert not any(d.edits for d in again.decisions)


EXAMPLE_DIFF = '''\
--- fixtures/example/npu/pretrain.sh
+++ fixtures/example/npu/pretrain.sh
@@ -9,5 +9,6 @@
     --global-batch-size 64 \\
     --lr 1.0e-4 \\
     --min-lr 1e-06 \\
+    --use-flash-attn \\
     --bf16 \\
     --deepspeed ds_config.json
--- fixtures/example/npu/train.py
+++ fixtures/example/npu/train.py
@@ -18,7 +18,7 @@
 from torch.utils.data import DataLoader, Dataset, DistributedSampler
 from transformers import AutoModelForCausalLM, AutoTokenizer, get_cosine_schedule_with_warmup
 
-SEED = 1234
+SEED = 42
 
 
 class JsonlDataset(Dataset):
@@ -83,7 +83,7 @@
     model = AutoModelForCausalLM.from_pretrained(
         args.model,
         torch_dtype=torch.bfloat16,
-        attn_implementation="eager",
+        attn_implementation="flash_attention_2",
     )
     model.gradient_checkpointing_enable()
     return model.to(device)
@@ -99,7 +99,7 @@
         {"params": decay, "weight_decay": args.weight_decay},
         {"params": no_decay, "weight_decay": 0.0},
     ]
-    return torch_npu.optim.NpuFusedAdamW(groups, lr=args.lr, betas=(0.9, 0.999), eps=1e-8)
+    return torch_npu.optim.NpuFusedAdamW(groups, lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
 
 
 def main():
'''


def test_fix_diff_on_the_example_prints_the_diff_and_writes_nothing(cli, monkeypatch):
    monkeypatch.chdir(ROOT)
    before = (FIX / "example/npu/train.py").read_bytes()
    code, out, err = cli("fix", "--diff", "fixtures/example/gpu", "fixtures/example/npu")
    assert (code, out) == (1, EXAMPLE_DIFF)
    assert err == ("scriptdiff: would fix 3 of 3 chosen finding(s); 3 not chosen; 2 file(s) would change: "
                   "fixtures/example/npu/pretrain.sh, fixtures/example/npu/train.py; 12 expected substitution(s) masked, as before\n")
    assert (FIX / "example/npu/train.py").read_bytes() == before


def test_the_readme_shows_fix_diff_on_the_bundled_example():
    # its output is checked against the real one by tests/test_doc_samples.py, as every sample is;
    # the sample moved from the README to docs/fix.md with the README's fix section (issue 41)
    text = (ROOT / "docs" / "fix.md").read_text(encoding="utf-8")
    marker = "<!-- sample: scriptdiff fix --diff fixtures/example/gpu fixtures/example/npu -->\n```\n"
    assert marker + EXAMPLE_DIFF + "```\n" in text


def test_fix_writes_and_says_what_it_changed(tmp_path, cli):
    gpu, npu = copy_pair(tmp_path, FIX / "example/gpu", FIX / "example/npu")
    code, out, err = cli("fix", gpu, npu)
    name = f"{npu}/train.py"
    assert (code, err) == (0, "")
    assert out == (f"scriptdiff fix: GPU {gpu}  vs  NPU {npu}\n"
                   f"fixed      SD201 use_flash_attn  (set)\n"
                   f'    {name}:86  "eager" -> "flash_attention_2"\n'
                   f"    {npu}/pretrain.sh:11  (nothing) -> \\ --use-flash-attn\n"
                   f"fixed      SD207 seed  (set)\n"
                   f"    {name}:21  1234 -> 42\n"
                   f"fixed      SD206 adam_beta2  (set)\n"
                   f"    {name}:102  0.999 -> 0.95\n"
                   f"fixed 3 of 3 chosen finding(s); 3 not chosen; 2 file(s) changed: {npu}/pretrain.sh, {name}; "
                   f"12 expected substitution(s) masked, as before\n")
    code, out, _err = cli("fix", "--diff", gpu, npu)  # a second fix changes nothing
    assert (code, out) == (0, "")
    code, out, _err = cli("diff", gpu, npu)
    assert code == 0 and "SD201" not in out and "SD206" not in out and "SD207" not in out and "12 expected substitution(s) masked" in out


def test_fix_json_lists_every_finding_fixed_or_why_not(cli, monkeypatch):
    monkeypatch.chdir(ROOT)
    code, out, _err = cli("fix", "--diff", "-f", "json", "fixtures/example/gpu", "fixtures/example/npu")
    doc = json.loads(out)
    assert code == 1 and doc["command"] == "fix" and doc["written"] is False
    assert [(f["rule"], f["key"], f["fix"]["fixed"], f["fix"]["why"]) for f in doc["findings"]] == [
        ("SD201", "use_flash_attn", True, None), ("SD207", "seed", True, None), ("SD206", "adam_beta2", True, None),
        ("SD023", "port:torch_npu.optim.NpuFusedAdamW", False, "not chosen"),  # issue 43: info, never chosen
        ("SD027", "port:transfer_to_npu", False, "not chosen"),
        ("SD302", "env:source set_env.sh", False, "not chosen")]
    assert doc["findings"][0]["fix"]["edits"] == [  # the program's keyword and the flag its launch passes
        {"path": "fixtures/example/npu/train.py", "line": 86, "old": '"eager"', "new": '"flash_attention_2"'},
        {"path": "fixtures/example/npu/pretrain.sh", "line": 11, "old": "", "new": " \\\n    --use-flash-attn"}]
    assert doc["findings"][3]["fix"]["reason"] == "not chosen: info cannot change numerics (--select its code to fix it)"
    assert doc["summary"] == {"fixed": 3, "not_fixed": 3, "by_reason": {"not chosen": 3},
                              "masked": {"before": 12, "after": 12}}


def test_select_and_ignore_choose_the_rules(cli, monkeypatch):
    monkeypatch.chdir(ROOT)
    code, out, _err = cli("fix", "--diff", "--select", "SD206", "fixtures/example/gpu", "fixtures/example/npu")
    assert code == 1 and "betas=(0.9, 0.95)" in out and "flash_attention_2" not in out
    code, out, _err = cli("fix", "--diff", "--ignore", "SD2", "fixtures/example/gpu", "fixtures/example/npu")
    assert (code, out) == (0, "")
    code, out, err = cli("fix", "--diff", "--select", "SD999", "fixtures/example/gpu", "fixtures/example/npu")
    assert code == 2 and "SD999" in err


def test_exit_status_says_whether_every_chosen_finding_was_fixed(tmp_path, cli):
    gpu, npu = copy_pair(tmp_path, FIX / "launch/llamafactory/gpu", FIX / "launch/llamafactory/npu_injected")
    code, out, _err = cli("fix", gpu, npu)
    assert code == 1  # flash_attn: no NPU spelling known, refused
    assert "not fixed  SD201 use_flash_attn  scriptdiff knows no NPU spelling of use_flash_attn = on for " \
           "`flash_attn` (rules/fix.yaml fix_spellings); set it by hand" in out
    code, out, _err = cli("fix", "--diff", gpu, npu)
    assert (code, out) == (0, "")  # nothing fixable is left


# ------------------------------------------------------------------------------ editors

def _pair(tmp: Path, name: str, gpu: str, npu: str) -> tuple[str, str]:
    (tmp / "gpu").mkdir()
    (tmp / "npu").mkdir()
    (tmp / "gpu" / name).write_text(gpu, encoding="utf-8")
    (tmp / "npu" / name).write_text(npu, encoding="utf-8")
    return str(tmp / "gpu" / name), str(tmp / "npu" / name)


def _fixed_text(tmp: Path, name: str, gpu: str, npu: str, **kw) -> tuple[str, object]:
    g, n = _pair(tmp, name, gpu, npu)
    result = api.fix(g, n, Options(**kw))
    assert result.refused == [], [(d.finding.key, d.reason) for d in result.refused]
    after = api.diff(g, n, Options())
    assert loud(after) == set()
    return Path(n).read_text(encoding="utf-8"), result


def test_shell_flags_are_added_and_removed_next_to_their_neighbours(tmp_path):
    gpu = ("#!/bin/bash\n"
           "torchrun --nproc_per_node 8 pretrain_gpt.py \\\n"
           "    --micro-batch-size 2 \\\n"
           "    --use-flash-attn \\\n"
           "    --lr 1e-4 \\\n"
           "    --bf16\n")
    npu = ("#!/bin/bash\n"
           "# comment kept\n"
           "torchrun --nproc_per_node 8 pretrain_gpt.py \\\n"
           "    --micro-batch-size 2 \\\n"
           "    --lr 1e-4 \\\n"
           "    --bf16 \\\n"
           "    --use-fused-rmsnorm\n")
    text, _r = _fixed_text(tmp_path, "pretrain.sh", gpu, npu)
    assert text == ("#!/bin/bash\n"
                    "# comment kept\n"
                    "torchrun --nproc_per_node 8 pretrain_gpt.py \\\n"
                    "    --micro-batch-size 2 \\\n"
                    "    --use-flash-attn \\\n"
                    "    --lr 1e-4 \\\n"
                    "    --bf16\n")


def test_checkpoint_switches_are_settings_and_paths_are_not(tmp_path):
    gpu = "torchrun pretrain_gpt.py --load /ckpt/gpu --finetune --lr 1e-4\n"
    npu = "torchrun pretrain_gpt.py --load /ckpt/npu --lr 1e-4 --no-load-optim\n"
    g, n = _pair(tmp_path, "pretrain.sh", gpu, npu)
    result = api.fix(g, n, Options())
    assert sorted((d.finding.key, d.fixed, d.why) for d in result.decisions) == [
        ("finetune", True, None), ("load", False, "check"), ("no_load_optim", True, None)]
    assert Path(n).read_text() == "torchrun pretrain_gpt.py --load /ckpt/npu --finetune --lr 1e-4\n"


def test_shell_values_keep_their_quotes_and_variables_are_fixed_where_they_are_set(tmp_path):
    gpu = 'LR=1e-4\nDATA="a b"\ntorchrun train.py --lr "$LR" --seed 42 --weight-decay=0.1\n'
    npu = 'LR="2e-4"  # tuned\nDATA="a b"\ntorchrun train.py --lr "$LR" --seed 7 --weight-decay=0.01\n'
    text, _r = _fixed_text(tmp_path, "run.sh", gpu, npu)
    assert text == 'LR="1e-4"  # tuned\nDATA="a b"\ntorchrun train.py --lr "$LR" --seed 42 --weight-decay=0.1\n'


def test_shell_inline_flags_and_hydra_overrides(tmp_path):
    run = "python3 -m verl.trainer.main_ppo data.train_batch_size={}\n".format
    text, _r = _fixed_text(tmp_path, "run.sh",
                           run("1024 actor_rollout_ref.actor.optim.lr=1e-6 trainer.total_epochs=15"),
                           run("256 trainer.device=npu actor_rollout_ref.model.use_remove_padding=False"))
    # both added after the override the GPU command has before them (train_batch_size), in the GPU's order
    assert text == run("1024 actor_rollout_ref.actor.optim.lr=1e-6 trainer.total_epochs=15 trainer.device=npu")


def test_yaml_keys_are_set_added_and_removed_keeping_comments_and_quotes(tmp_path):
    gpu = "### method\nstage: sft\nlora_rank: 8\nlearning_rate: 1.0e-4\nwarmup_ratio: 0.1\ntemplate: 'llama3'\n"
    npu = ("### method  (NPU port)\nstage: sft\nlora_rank: 16   # bigger on NPU\nlearning_rate: 2.0e-4\n"
           "template: 'qwen'\nuse_kernels: true\n")
    text, _r = _fixed_text(tmp_path, "sft.yaml", gpu, npu)
    assert text == ("### method  (NPU port)\nstage: sft\nlora_rank: 8   # bigger on NPU\nlearning_rate: 1.0e-4\n"
                    "warmup_ratio: 0.1\ntemplate: 'llama3'\n")


def test_json_keys_are_set_added_and_removed_keeping_layout(tmp_path):
    gpu = '{\n  "train_micro_batch_size_per_gpu": 2,\n  "gradient_clipping": 1.0,\n  "zero_optimization": ' \
          '{"stage": 2, "overlap_comm": true}\n}\n'
    npu = '{\n  "train_micro_batch_size_per_gpu": 4,\n  "steps_per_print": 1,\n  "zero_optimization": {"stage": 3, ' \
          '"overlap_comm": true, ' \
          '"reduce_scatter": false},\n  "gradient_accumulation_steps": 4\n}\n'
    text, _r = _fixed_text(tmp_path, "ds_config.json", gpu, npu, select=["SD2"])  # reduce_scatter is info (SD221)
    assert text == ('{\n  "train_micro_batch_size_per_gpu": 2,\n  "gradient_clipping": 1.0,\n  "zero_optimization": '
                    '{"stage": 2, "overlap_comm": true}\n}\n')


def test_a_value_is_copied_as_written_only_from_a_gpu_file_the_same_editor_edits(tmp_path):
    """The GPU's text of a value (`1.0e-4`) is kept where the GPU file is of a kind the NPU
    file's editor edits (rules/kinds.yaml `fixer`: YAML for YAML, JSON for a DeepSpeed config
    or a plain JSON one); from a YAML file into a JSON one the value is written anew."""
    for gname, gpu, written in (("train.yaml", "learning_rate: 1.0e-4\n", "0.0001"),
                                ("ds.json", '{"learning_rate": 1.0e-4}\n', "1.0e-4")):
        g, n = tmp_path / "gpu" / gname, tmp_path / "npu" / (gname.split(".")[0] + ".json")
        for path, text in ((g, gpu), (n, '{\n  "learning_rate": 2.0e-4\n}\n')):
            path.parent.mkdir(exist_ok=True)
            path.write_text(text, encoding="utf-8")
        assert api.fix(str(g), str(n), Options()).refused == []
        assert n.read_text(encoding="utf-8") == '{\n  "learning_rate": %s\n}\n' % written


@pytest.mark.parametrize("name,gpu,npu,fixed", [
    # HF-style switches, both written on both sides: the pair flips together
    ("train.yaml", "lr: 1.0e-4\nbf16: true\nfp16: false\n", "lr: 1.0e-4\nbf16: false\nfp16: true\n",
     "lr: 1.0e-4\nbf16: true\nfp16: false\n"),
    # the NPU file lacks the GPU's switch: added beside its GPU neighbour, its own turned off
    ("train.yaml", "lr: 1.0e-4\nbf16: true\nwarmup_steps: 10\n", "lr: 1.0e-4\nfp16: true\nwarmup_steps: 10\n",
     "lr: 1.0e-4\nbf16: true\nfp16: false\nwarmup_steps: 10\n"),
    # DeepSpeed's bf16.enabled / fp16.enabled
    ("ds_config.json", '{\n  "train_batch_size": 8,\n  "bf16": {"enabled": true}\n}\n',
     '{\n  "train_batch_size": 8,\n  "fp16": {"enabled": true},\n  "bf16": {"enabled": false}\n}\n',
     '{\n  "train_batch_size": 8,\n  "fp16": {"enabled": false},\n  "bf16": {"enabled": true}\n}\n'),
    # one key spelled the same way on both sides, a word fix_spellings does not give: the GPU's word
    ("cfg.json", '{\n  "lr": 0.0001,\n  "precision": "bf16"\n}\n', '{\n  "lr": 0.0001,\n  "precision": "fp16"\n}\n',
     '{\n  "lr": 0.0001,\n  "precision": "bf16"\n}\n'),
    ("train.yaml", "precision: bf16-mixed\n", "precision: '16-mixed'\n", "precision: 'bf16-mixed'\n"),
])
def test_bf16_to_fp16_is_fixed_in_both_spellings(tmp_path, name, gpu, npu, fixed):
    """Issue 41: the most common drift, bf16 -> fp16, as switches (`bf16: false` / `fp16: true`)
    and as one key both sides spell alike (`"precision": "bf16"`): fixed, then diff is clean."""
    text, result = _fixed_text(tmp_path, name, gpu, npu)
    assert [(d.finding.rule, d.finding.key, d.fixed) for d in result.decisions] == [("SD205", "params_dtype", True)]
    assert text == fixed


def test_a_word_that_may_not_run_on_ascend_is_still_not_copied(tmp_path):
    """fix_copies lists dtypes only: LLaMA-Factory's flash_attn word is refused, not copied."""
    g, n = _pair(tmp_path, "sft.yaml", "flash_attn: fa2\n", "flash_attn: disabled\n")
    [d] = api.fix(g, n, Options()).decisions
    assert (d.fixed, d.why) == (False, "spelling")


def test_toml_keys_are_set_added_and_removed(tmp_path):
    gpu = "[optimizer]\nname = \"AdamW\"\nlr = 8e-4\neps = 1e-8\n\n[training]\nsteps = 1000\nmax_norm = 1.0\n"
    npu = "# NPU\n[optimizer]\nname = 'AdamW'\nlr = 3e-4  # lower on NPU\n\n[training]\nsteps = 1000\nmax_norm = 1.0\n" \
          "seed = 7\n"
    text, _r = _fixed_text(tmp_path, "train.toml", gpu, npu)
    assert text == ("# NPU\n[optimizer]\nname = 'AdamW'\nlr = 8e-4  # lower on NPU\neps = 1e-8\n\n[training]\n"
                    "steps = 1000\nmax_norm = 1.0\n")


TRAIN = """import argparse
import torch{npu_import}

WD = {wd}


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument('--lr', type=float, default={lr}){note}
    return p.parse_args()


def build(model, args):
    return {opt}(model.parameters(), lr=args.lr,
{pad}betas={betas}, weight_decay=WD{eps})
"""


def test_python_literals_constants_defaults_and_keywords(tmp_path):
    def npu(**kw):
        return TRAIN.format(**{"npu_import": "\nimport torch_npu", "opt": "torch_npu.optim.NpuFusedAdamW",
                               "pad": " " * 41, "note": "  # faster", **kw})

    gpu = TRAIN.format(npu_import="", wd="0.1", lr="1e-4", note="", opt="torch.optim.AdamW", pad=" " * 29,
                       betas="(0.9, 0.95)", eps=", eps=1e-6")
    text, _r = _fixed_text(tmp_path, "train.py", gpu,
                           npu(wd="0.01  # NPU", lr="3e-4", betas="(0.9, 0.999)", eps=""))
    # the constant where it is set, the argparse default, one element of the tuple, the keyword added:
    # the comments stay where they were
    assert text == npu(wd="0.1  # NPU", lr="1e-4", betas="(0.9, 0.95)", eps=", eps=1e-6")


def test_python_attention_and_dtype_are_written_the_npu_way(tmp_path):
    gpu = ("import torch as th\nfrom transformers import AutoModelForCausalLM\n\n"
           "m = AutoModelForCausalLM.from_pretrained('x', torch_dtype=th.bfloat16, "
           "attn_implementation='flash_attention_3')\n")
    npu = ("import torch as th\nimport torch_npu\nfrom transformers import AutoModelForCausalLM\n\n"
           "m = AutoModelForCausalLM.from_pretrained('x', torch_dtype=th.float16, attn_implementation='eager')\n")
    text, result = _fixed_text(tmp_path, "train.py", gpu, npu)
    # flash_attention_3 has no Ascend kernel: the NPU way is flash_attention_2 (rules/fix.yaml)
    assert text.splitlines()[-1] == ("m = AutoModelForCausalLM.from_pretrained('x', torch_dtype=th.bfloat16, "
                                     "attn_implementation='flash_attention_2')")


def test_one_file_that_runs_on_both_devices_gets_its_npu_branch_fixed(tmp_path):
    (tmp_path / "train.py").write_text(
        "import torch\nfrom transformers import is_torch_npu_available\n\n"
        "LR = 2e-4 if is_torch_npu_available() else 1e-4  # tuned apart\n\n\n"
        "def build(model):\n    return torch.optim.AdamW(model.parameters(), lr=LR)\n", encoding="utf-8")
    path = str(tmp_path / "train.py")
    result = api.fix(path, None, Options())
    assert [(d.finding.rule, d.finding.key, d.fixed) for d in result.decisions] == [("SD202", "lr", True)]
    assert Path(path).read_text(encoding="utf-8").splitlines()[3] == \
        "LR = 1e-4 if is_torch_npu_available() else 1e-4  # tuned apart"
    assert loud(api.diff(path, None, Options())) == set()
