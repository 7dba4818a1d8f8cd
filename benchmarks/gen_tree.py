"""Generate a GPU/NPU repository pair for the tree-mode benchmark.

About 1,000 Python files and 50 launch scripts and configs per side. About 5% of the
Python files are ported (cuda->npu edits the tool must mask), a few carry real semantic
changes, the rest are identical (as in a real fork).
"""
from __future__ import annotations

import random
from pathlib import Path

MODULE = '''"""Module {name}: part of a generated training codebase."""
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block{idx}(nn.Module):
    def __init__(self, hidden={hidden}, heads={heads}, dropout={dropout}):
        super().__init__()
        self.q = nn.Linear(hidden, hidden)
        self.k = nn.Linear(hidden, hidden)
        self.v = nn.Linear(hidden, hidden)
        self.o = nn.Linear(hidden, hidden)
        self.norm = nn.LayerNorm(hidden, eps=1e-5)
        self.drop = nn.Dropout(dropout)
        self.heads = heads

    def forward(self, x, mask=None):
        b, s, h = x.shape
        q = self.q(x).view(b, s, self.heads, -1).transpose(1, 2)
        k = self.k(x).view(b, s, self.heads, -1).transpose(1, 2)
        v = self.v(x).view(b, s, self.heads, -1).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))
        if mask is not None:
            att = att.masked_fill(mask == 0, float("-inf"))
        att = self.drop(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).reshape(b, s, h)
        return self.norm(x + self.o(y))


def build_{idx}(device="cuda"):
    model = Block{idx}()
    model = model.cuda()
    torch.cuda.synchronize()
    return model


def step_{idx}(model, batch, optimizer, scaler):
    with torch.cuda.amp.autocast(dtype=torch.bfloat16):
        loss = model(batch.cuda()).float().pow(2).mean()
    scaler.scale(loss).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    return loss.item()
'''

SCRIPT = '''#!/bin/bash
export CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
export CUDA_DEVICE_MAX_CONNECTIONS=1
GPUS_PER_NODE=8
NNODES=1
GPT_ARGS="
    --num-layers {layers} \\
    --hidden-size 4096 \\
    --num-attention-heads 32 \\
    --seq-length 4096 \\
    --micro-batch-size 1 \\
    --global-batch-size 64 \\
    --lr {lr} \\
    --min-lr 1e-6 \\
    --use-flash-attn \\
    --bf16
"
torchrun --nproc_per_node $GPUS_PER_NODE --nnodes $NNODES pretrain_gpt.py $GPT_ARGS --seed 1234
'''

CONFIG = '''model_name_or_path: /models/llama-7b
stage: sft
finetuning_type: lora
learning_rate: {lr}
per_device_train_batch_size: 2
gradient_accumulation_steps: 8
cutoff_len: 2048
bf16: true
flash_attn: fa2
seed: 42
'''


def port_python(text: str) -> str:
    text = text.replace("import torch\n", "import torch\nimport torch_npu\n", 1)
    text = text.replace(".cuda()", ".npu()").replace("torch.cuda.", "torch.npu.")
    return text.replace('device="cuda"', 'device="npu"')


def port_script(text: str) -> str:
    text = text.replace("CUDA_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES")
    return text.replace("#!/bin/bash\n", "#!/bin/bash\nsource /usr/local/Ascend/ascend-toolkit/set_env.sh\n")


def generate(root: Path, n_py: int = 1000, n_cfg: int = 50, seed: int = 0) -> dict:
    rng = random.Random(seed)
    gpu, npu = root / "gpu", root / "npu"
    ported = 0
    planted: list[tuple[str, str]] = []  # (NPU path relative to the tree, canonical key) of each semantic edit
    for i in range(n_py):
        pkg = f"pkg{i % 20}/sub{i % 7}"
        text = MODULE.format(name=f"m{i}", idx=i, hidden=rng.choice([512, 1024, 2048]), heads=8,
                             dropout=rng.choice([0.0, 0.1]))
        # repeat a middle chunk so files vary in length (50..300 lines)
        ntext = text
        if i % 20 == 0:
            ntext = port_python(text)
            ported += 1
            if i % 200 == 0:
                ntext = ntext.replace("max_norm=1.0", "max_norm=0.5")
                planted.append((f"{pkg}/m{i}.py", "clip_grad"))
        for side, content in ((gpu, text), (npu, ntext)):
            p = side / pkg / f"m{i}.py"
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(content)
    for j in range(n_cfg):
        if j % 2 == 0:
            text = SCRIPT.format(layers=32, lr="1e-4")
            ntext = port_script(text)
            if j == 10:
                ntext = ntext.replace("    --use-flash-attn \\\n", "")
                planted.append((f"scripts/pretrain_{j}.sh", "use_flash_attn"))
            name = f"scripts/pretrain_{j}.sh"
        else:
            text = CONFIG.format(lr="1.0e-4")
            ntext = text if j != 11 else text.replace("cutoff_len: 2048", "cutoff_len: 1024")
            name = f"configs/sft_{j}.yaml"
            if j == 11:
                planted.append((name, "seq_length"))
        for side, content in ((gpu, text), (npu, ntext)):
            p = side / name
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(content)
    return {"python": n_py, "configs": n_cfg, "ported": ported, "semantic": len(planted), "planted": planted}


def missed(report: dict, planted: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The planted edits a scriptdiff JSON report did not find (warning or error, at the NPU
    file, under the key). A benchmark whose planted differences are not all found measures
    nothing: every benchmark run checks this."""
    found = set()
    for f in report["findings"]:
        if f["severity"] in ("error", "warning"):
            for side in (f["npu"], f["gpu"]):
                if side and side.get("path"):
                    found.add((side["path"].replace("\\", "/").split("/npu/", 1)[-1].split("/gpu/", 1)[-1],
                               f["key"]))
    return [p for p in planted if p not in found]


if __name__ == "__main__":
    import sys

    print(generate(Path(sys.argv[1])))
