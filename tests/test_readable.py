"""Readable reports (issue 16): the same kind of difference gets the same rule, findings show
the user's own spelling, snapshot lines are quoted, review hunks and the hparams table fit."""
from __future__ import annotations

from pathlib import Path

import pytest

from scriptdiff.engine import Options, diff_files

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
