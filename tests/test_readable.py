"""Readable reports (issue 16): the same kind of difference gets the same rule, findings show
the user's own spelling, snapshot lines are quoted, review hunks and the hparams table fit."""
from __future__ import annotations

from pathlib import Path

import pytest

from scriptdiff.model import Options
from scriptdiff.run.pipeline import diff_files

ROOT = Path(__file__).resolve().parent.parent


def run(tmp_path: Path, name: str, gpu: str, npu: str):
    for side, text in (("gpu", gpu), ("npu", npu)):
        (tmp_path / side).mkdir(exist_ok=True)
        (tmp_path / side / name).write_text(text, encoding="utf-8")
    return diff_files([str(tmp_path / "gpu" / name)], [str(tmp_path / "npu" / name)], Options(use_cache=False))


def summary(f):
    return (f.rule, f.key, f.gpu.value if f.gpu else None, f.npu.value if f.npu else None,
            f.gpu.line if f.gpu else None, f.npu.line if f.npu else None)


# ------------------------------------------------------------ one rule for flash attention
FLASH = {
    "run.sh": ("torchrun --nproc_per_node 8 train.py \\\n    --use_flash_attention_2 True \\\n    --lr 1e-5\n",
               "torchrun --nproc_per_node 8 train.py \\\n    --attn_implementation eager \\\n    --lr 1e-5\n", 2),
    "sft.yaml": ("lr: 1.0e-5\nuse_flash_attention_2: true\n", "lr: 1.0e-5\nattn_implementation: eager\n", 2),
    "model.py": ("from transformers import AutoModelForCausalLM\n"
                 "model = AutoModelForCausalLM.from_pretrained('llama', use_flash_attention_2=True)\n",
                 "from transformers import AutoModelForCausalLM\n"
                 "model = AutoModelForCausalLM.from_pretrained('llama', attn_implementation='eager')\n", 2),
}


@pytest.mark.parametrize("name", sorted(FLASH))
def test_use_flash_attention_2_lands_on_the_flash_attention_rule(tmp_path, name):
    gpu, npu, line = FLASH[name]
    r = run(tmp_path, name, gpu, npu)
    assert [summary(f) for f in r.findings] == [("SD201", "use_flash_attn", True, False, line, line)]
    assert [f.message for f in r.findings] == [
        "attention kernel: use_flash_attention_2 / attn_implementation (use_flash_attn) is on for GPU and off for NPU"]


# ------------------------------------------------------------ the user's own spelling
@pytest.mark.parametrize("name, gpu, npu", [
    ("sft.yaml", "gradient_checkpointing: true\n", "gradient_checkpointing: false\n"),
    ("run.sh", "torchrun train.py --gradient_checkpointing True\n", "torchrun train.py --gradient_checkpointing False\n"),
    ("train.py", "from transformers import TrainingArguments\nargs = TrainingArguments(gradient_checkpointing=True)\n",
     "from transformers import TrainingArguments\nargs = TrainingArguments(gradient_checkpointing=False)\n"),
])
def test_finding_names_the_written_spelling_next_to_the_key(tmp_path, name, gpu, npu):
    r = run(tmp_path, name, gpu, npu)
    line = gpu.count("\n")
    assert [summary(f) for f in r.findings] == [("SD211", "recompute_granularity", True, False, line, line)]
    assert [f.message for f in r.findings] == [
        "recomputation and memory: gradient_checkpointing (recompute_granularity) is on for GPU and off for NPU"]


def test_canonical_spelling_is_named_once(tmp_path):
    r = run(tmp_path, "run.sh", "torchrun pretrain_gpt.py --lr 1e-4\n", "torchrun pretrain_gpt.py --lr 2e-4\n")
    assert [(f.key, f.message) for f in r.findings] == [
        ("lr", "learning-rate schedule: lr is 0.0001 on GPU and 0.0002 on NPU")]


def test_one_sided_finding_names_the_written_spelling(tmp_path):
    r = run(tmp_path, "run.sh", "torchrun train.py --learning_rate 1e-4 --use_flash_attention_2 True\n",
            "torchrun train.py --learning_rate 1e-4\n")
    assert [(f.rule, f.key, f.message) for f in r.findings] == [
        ("SD201", "use_flash_attn", "use_flash_attention_2 (use_flash_attn) = on is set on GPU only; "
         "NPU has no value and no known default")]


# ------------------------------------------------------------ snapshot lines are quoted
def test_snapshot_source_is_the_real_json_line():
    ex = ROOT / "fixtures" / "example"
    r = diff_files([str(ex / "env-gpu.json")], [str(ex / "env-npu.json")], Options(use_cache=False))
    f = next(f for f in r.findings if f.key == "version:os")
    assert (f.gpu.line, f.gpu.source) == (16, '"name": "Ubuntu 22.04.3 LTS",')
    assert (f.npu.line, f.npu.source) == (16, '"name": "openEuler 22.03 (LTS-SP1)",')
    assert (ex / "env-gpu.json").read_text().splitlines()[15].strip() == f.gpu.source
    arch = next(f for f in r.findings if f.key == "version:arch")
    assert (arch.gpu.line, arch.gpu.source) == (21, '"arch": "x86_64",')


# ------------------------------------------------------------ review hunks as blocks
def test_review_hunk_lines_are_an_indented_block(cli, tmp_path):
    import difflib

    old = "import torch\nlr=1e-4\nbatch=8\nsteps=10\nseed=1\n" + "".join(f"k{i}=1\n" for i in range(10))
    new = "import torch\nlr=2e-4\nbatch=16\nsteps=20\nseed=1\n" + "".join(f"k{i}=2\n" for i in range(10))
    p = tmp_path / "p.diff"
    p.write_text("".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), "a/c.txt", "b/c.txt")))
    code, out, _ = cli("review", str(p), "--no-cache", "--color", "never", "--by-hunk")
    assert code == 1
    body = out.split("== script ", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    assert body == [
        "warning SD153 hunk:c.txt  hunk @@ -1,15 +1,15 @@ changes semantics: SD108 lines differ (compared as text); "
        "SD108 lines differ (compared as text)",
        "    GPU: 13 lines  at c.txt:2",
        "          | lr=1e-4", "          | batch=8", "          | steps=10",
        *[f"          | k{i}=1" for i in range(5)],
        "          | … (5 more lines)",
        "    NPU: 13 lines  at c.txt:2",
        "          | lr=2e-4", "          | batch=16", "          | steps=20",
        *[f"          | k{i}=2" for i in range(5)],
        "          | … (5 more lines)",
    ]
    code, out, _ = cli("review", str(p), "--no-cache", "--color", "never", "--full-values", "--by-hunk")
    assert "          | k9=2\n" in out and "more lines" not in out


# ------------------------------------------------------------ the hparams table fits
MEG = ROOT / "fixtures" / "launch" / "megatron"


def test_hparams_table_fits_100_columns_when_piped(cli):
    code, out, _ = cli("hparams", str(MEG / "gpu/pretrain_llama2_7b.sh"), str(MEG / "npu_injected/pretrain_llama2_7b.sh"),
                       "--color", "never", "--no-cache")
    assert code == 1
    table = [x for x in out.splitlines() if x[:1] in "┏┃┡│└"]
    assert len(table) > 60 and {len(x) for x in table} == {100}
    # keys and values keep their width (never folded); the location column wraps, without "at "
    rows = [[c.strip() for c in x.strip("│").split("│")] for x in table if x.startswith("│")]
    lr = next(i for i, r in enumerate(rows) if r[1] == "lr")
    assert rows[lr][:3] == ["E SD202", "lr", "1.25e-06"] and rows[lr][3].startswith("pretrain_llama")
    assert "gradient_accumulation_steps" in [r[1] for r in rows]


def test_hparams_table_fits_the_terminal(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = cli("hparams", str(MEG / "gpu/pretrain_llama2_7b.sh"), str(MEG / "npu_injected/pretrain_llama2_7b.sh"),
                       "--color", "always", "--no-cache")
    import re

    lines = [re.sub(r"\x1b\[[0-9;]*m", "", x) for x in out.splitlines()]
    assert {len(x) for x in lines if x[:1] in "┏┃┡│└"} == {80}


def test_hparams_markdown(cli, tmp_path):
    (tmp_path / "g.sh").write_text("torchrun train.py --learning_rate 1e-4 --use_flash_attention_2 True\n")
    (tmp_path / "n.sh").write_text("torchrun train.py --learning_rate 2e-4 --attn_implementation 'a|b'\n")
    code, out, _ = cli("hparams", str(tmp_path / "g.sh"), str(tmp_path / "n.sh"), "-f", "markdown", "--no-cache")
    lines = out.splitlines()
    assert code == 1
    assert lines[0] == f"## scriptdiff hparams: GPU {tmp_path / 'g.sh'} vs NPU {tmp_path / 'n.sh'}"
    assert lines[2:4] == ["| | key | GPU | GPU origin | NPU | NPU origin |", "|---|---|---|---|---|---|"]
    assert "| E SD202 | `lr` | 0.0001 | at g.sh:1 | 0.0002 | at n.sh:1 |" in lines
    assert "| E SD201 | `use_flash_attn` | on | at g.sh:1 | a\\|b | at n.sh:1 |" in lines
    assert lines[-1].endswith("expected substitution(s) masked") and lines[-2] == ""
