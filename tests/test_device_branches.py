"""Code that branches on the device, read once per device (issue 26; docs/devices.md).

Four styles of real dual-device training scripts: a transformers Trainer script, an
accelerate loop, a diffusers training script and a hand-written DDP script. Each is given as
the GPU script upstream had, and the edit its "NPU support" commit makes (the dual-device
file). A faithful dual file gives no warning or error, compared with the GPU script (a pair)
and with itself (its GPU run against its NPU run); each planted difference inside a device
branch gives exactly one warning or error, under its key, with both sides' value and line.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from scriptdiff import api
from scriptdiff.model import Options
from scriptdiff.run.pipeline import diff_files

OPTS = dict(use_cache=False)


def one_file(tmp_path: Path, text: str, name: str = "train.py"):
    p = tmp_path / "one" / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return api.diff(str(p), None, Options(**OPTS))


def pair(tmp_path: Path, gpu: str, npu: str, name: str = "train.py"):
    for side, text in (("gpu", gpu), ("npu", npu)):
        (tmp_path / side).mkdir(parents=True, exist_ok=True)
        (tmp_path / side / name).write_text(text, encoding="utf-8")
    return diff_files([str(tmp_path / "gpu" / name)], [str(tmp_path / "npu" / name)], Options(**OPTS))


def loud(report) -> list:
    """(rule, key, GPU value, NPU value, GPU line, NPU line) of each warning and error."""
    return [(f.rule, f.key, f.gpu.value if f.gpu else None, f.npu.value if f.npu else None,
             f.gpu.line if f.gpu else None, f.npu.line if f.npu else None)
            for f in report.findings if f.severity in ("warning", "error")]


def line_of(text: str, needle: str, nth: int = 0) -> int:
    at = -1
    for _ in range(nth + 1):
        at = text.index(needle, at + 1)
    return text[:at].count("\n") + 1


def edit(text: str, *pairs: tuple[str, str]) -> str:
    for old, new in pairs:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text


# --------------------------------------------------------------------------- transformers
HF_GPU = '''"""Fine-tune a causal language model with the Trainer (transformers example style)."""
import argparse
import logging

import torch
from datasets import load_dataset
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    DataCollatorForLanguageModeling,
    Trainer,
    TrainingArguments,
    set_seed,
)

logger = logging.getLogger(__name__)


def parse_args():
    parser = argparse.ArgumentParser(description="Fine-tune a causal LM")
    parser.add_argument("--model_name_or_path", type=str, default="Qwen/Qwen2.5-0.5B")
    parser.add_argument("--dataset_name", type=str, default="wikitext")
    parser.add_argument("--learning_rate", type=float, default=2e-5)
    parser.add_argument("--num_train_epochs", type=int, default=3)
    parser.add_argument("--per_device_train_batch_size", type=int, default=8)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--output_dir", type=str, default="out")
    return parser.parse_args()


def main():
    args = parse_args()
    set_seed(args.seed)
    tokenizer = AutoTokenizer.from_pretrained(args.model_name_or_path)
    model = AutoModelForCausalLM.from_pretrained(
        args.model_name_or_path,
        torch_dtype=torch.bfloat16,
        attn_implementation="flash_attention_2",
    )
    raw = load_dataset(args.dataset_name, "wikitext-2-raw-v1")
    tokenized = raw.map(lambda b: tokenizer(b["text"]), batched=True, remove_columns=["text"])
    training_args = TrainingArguments(
        output_dir=args.output_dir,
        learning_rate=args.learning_rate,
        num_train_epochs=args.num_train_epochs,
        per_device_train_batch_size=args.per_device_train_batch_size,
        bf16=True,
        seed=args.seed,
        logging_steps=10,
    )
    trainer = Trainer(
        model=model,
        args=training_args,
        train_dataset=tokenized["train"],
        data_collator=DataCollatorForLanguageModeling(tokenizer, mlm=False),
    )
    trainer.train()


if __name__ == "__main__":
    main()
'''

HF = edit(HF_GPU, ("    set_seed,\n)\n", """    set_seed,
)
from transformers.utils import is_torch_npu_available

if is_torch_npu_available():
    import torch_npu  # noqa: F401
"""), ("    args = parse_args()\n    set_seed(args.seed)\n", """    args = parse_args()
    set_seed(args.seed)
    if is_torch_npu_available():
        torch.npu.set_compile_mode(jit_compile=False)
        torch.npu.config.allow_internal_format = False
"""))

# --------------------------------------------------------------------------- accelerate
ACC_GPU = '''"""Fine-tune BERT on GLUE MRPC with Accelerate (accelerate nlp_example style)."""
import argparse

import evaluate
import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from datasets import load_dataset
from torch.optim import AdamW
from torch.utils.data import DataLoader
from transformers import AutoModelForSequenceClassification, AutoTokenizer, get_linear_schedule_with_warmup


def get_dataloaders(accelerator, batch_size=16):
    tokenizer = AutoTokenizer.from_pretrained("bert-base-cased")
    datasets = load_dataset("glue", "mrpc")
    tokenized = datasets.map(lambda e: tokenizer(e["sentence1"], e["sentence2"], truncation=True), batched=True)
    train = DataLoader(tokenized["train"], shuffle=True, batch_size=batch_size)
    evald = DataLoader(tokenized["validation"], shuffle=False, batch_size=32)
    return train, evald


def training_function(args):
    accelerator = Accelerator(cpu=args.cpu, mixed_precision=args.mixed_precision)
    set_seed(args.seed)
    train_dataloader, eval_dataloader = get_dataloaders(accelerator, args.batch_size)
    metric = evaluate.load("glue", "mrpc")
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased", return_dict=True)
    model = model.to(accelerator.device)
    optimizer = AdamW(params=model.parameters(), lr=args.learning_rate)
    lr_scheduler = get_linear_schedule_with_warmup(
        optimizer=optimizer,
        num_warmup_steps=100,
        num_training_steps=len(train_dataloader) * args.num_epochs,
    )
    model, optimizer, train_dataloader, eval_dataloader, lr_scheduler = accelerator.prepare(
        model, optimizer, train_dataloader, eval_dataloader, lr_scheduler
    )
    for epoch in range(args.num_epochs):
        model.train()
        for step, batch in enumerate(train_dataloader):
            outputs = model(**batch)
            loss = outputs.loss
            accelerator.backward(loss)
            optimizer.step()
            lr_scheduler.step()
            optimizer.zero_grad()
        model.eval()
        for step, batch in enumerate(eval_dataloader):
            with torch.no_grad():
                outputs = model(**batch)
            predictions = outputs.logits.argmax(dim=-1)
            predictions, references = accelerator.gather_for_metrics((predictions, batch["labels"]))
            metric.add_batch(predictions=predictions, references=references)
        accelerator.print(f"epoch {epoch}:", metric.compute())


def main():
    parser = argparse.ArgumentParser(description="Simple example of training script.")
    parser.add_argument("--mixed_precision", type=str, default="bf16", choices=["no", "fp16", "bf16", "fp8"])
    parser.add_argument("--cpu", action="store_true", help="If passed, will train on the CPU.")
    parser.add_argument("--learning_rate", type=float, default=2e-5)
    parser.add_argument("--num_epochs", type=int, default=3)
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    training_function(args)


if __name__ == "__main__":
    main()
'''

ACC = edit(ACC_GPU, ("from accelerate.utils import set_seed\n", "from accelerate.utils import is_npu_available, set_seed\n"),
           ("""    optimizer = AdamW(params=model.parameters(), lr=args.learning_rate)
""", """    if accelerator.device.type == "npu":
        import torch_npu

        optimizer = torch_npu.optim.NpuFusedAdamW(params=model.parameters(), lr=args.learning_rate)
    else:
        optimizer = AdamW(params=model.parameters(), lr=args.learning_rate)
"""), ("""        accelerator.print(f"epoch {epoch}:", metric.compute())
""", """        accelerator.print(f"epoch {epoch}:", metric.compute())
        if is_npu_available():
            torch.npu.empty_cache()
        elif torch.cuda.is_available():
            torch.cuda.empty_cache()
"""))

# --------------------------------------------------------------------------- diffusers
DIFF_GPU = '''"""Fine-tune Stable Diffusion on an image-caption dataset (diffusers train_text_to_image style)."""
import argparse
import gc
import logging
import math

import torch
import torch.nn.functional as F
from accelerate import Accelerator
from accelerate.utils import ProjectConfiguration, set_seed
from diffusers import AutoencoderKL, DDPMScheduler, UNet2DConditionModel
from diffusers.optimization import get_scheduler
from transformers import CLIPTextModel, CLIPTokenizer

logger = logging.getLogger(__name__)


def free_memory():
    """Runs garbage collection, then clears the cache of the available accelerator."""
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    elif torch.backends.mps.is_available():
        torch.mps.empty_cache()
    elif hasattr(torch, "xpu") and torch.xpu.is_available():
        torch.xpu.empty_cache()


def parse_args():
    parser = argparse.ArgumentParser(description="Simple example of a training script.")
    parser.add_argument("--pretrained_model_name_or_path", type=str, default="stabilityai/stable-diffusion-2-1")
    parser.add_argument("--output_dir", type=str, default="sd-model-finetuned")
    parser.add_argument("--learning_rate", type=float, default=1e-4)
    parser.add_argument("--adam_beta1", type=float, default=0.9)
    parser.add_argument("--adam_beta2", type=float, default=0.999)
    parser.add_argument("--adam_weight_decay", type=float, default=1e-2)
    parser.add_argument("--adam_epsilon", type=float, default=1e-08)
    parser.add_argument("--max_train_steps", type=int, default=15000)
    parser.add_argument("--mixed_precision", type=str, default="fp16", choices=["no", "fp16", "bf16"])
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--enable_xformers_memory_efficient_attention", action="store_true")
    return parser.parse_args()


def main():
    args = parse_args()
    accelerator = Accelerator(
        mixed_precision=args.mixed_precision,
        project_config=ProjectConfiguration(project_dir=args.output_dir),
    )
    if args.seed is not None:
        set_seed(args.seed)
    noise_scheduler = DDPMScheduler.from_pretrained(args.pretrained_model_name_or_path, subfolder="scheduler")
    tokenizer = CLIPTokenizer.from_pretrained(args.pretrained_model_name_or_path, subfolder="tokenizer")
    text_encoder = CLIPTextModel.from_pretrained(args.pretrained_model_name_or_path, subfolder="text_encoder")
    vae = AutoencoderKL.from_pretrained(args.pretrained_model_name_or_path, subfolder="vae")
    unet = UNet2DConditionModel.from_pretrained(args.pretrained_model_name_or_path, subfolder="unet")
    vae.requires_grad_(False)
    text_encoder.requires_grad_(False)
    if args.enable_xformers_memory_efficient_attention:
        unet.enable_xformers_memory_efficient_attention()
    if torch.cuda.is_available():
        torch.backends.cuda.matmul.allow_tf32 = True
    optimizer = torch.optim.AdamW(
        unet.parameters(),
        lr=args.learning_rate,
        betas=(args.adam_beta1, args.adam_beta2),
        weight_decay=args.adam_weight_decay,
        eps=args.adam_epsilon,
    )
    lr_scheduler = get_scheduler("constant", optimizer=optimizer, num_warmup_steps=500)
    unet, optimizer, lr_scheduler = accelerator.prepare(unet, optimizer, lr_scheduler)
    weight_dtype = torch.float32
    if accelerator.mixed_precision == "fp16":
        weight_dtype = torch.float16
    elif accelerator.mixed_precision == "bf16":
        weight_dtype = torch.bfloat16
    text_encoder.to(accelerator.device, dtype=weight_dtype)
    vae.to(accelerator.device, dtype=weight_dtype)
    for step in range(args.max_train_steps):
        latents = torch.randn(1, 4, 64, 64, device=accelerator.device, dtype=weight_dtype)
        noise = torch.randn_like(latents)
        timesteps = torch.randint(0, noise_scheduler.config.num_train_timesteps, (1,), device=latents.device)
        noisy = noise_scheduler.add_noise(latents, noise, timesteps)
        model_pred = unet(noisy, timesteps, text_encoder(torch.zeros(1, 77, dtype=torch.long))[0]).sample
        loss = F.mse_loss(model_pred.float(), noise.float(), reduction="mean")
        accelerator.backward(loss)
        optimizer.step()
        lr_scheduler.step()
        optimizer.zero_grad()
    free_memory()
    logger.info("steps per epoch %d", math.ceil(args.max_train_steps))


if __name__ == "__main__":
    main()
'''

DIFF = edit(DIFF_GPU, ("from diffusers.optimization import get_scheduler\n", """from diffusers.optimization import get_scheduler
from diffusers.utils.import_utils import is_torch_npu_available
"""), ("logger = logging.getLogger(__name__)\n", """if is_torch_npu_available():
    import torch_npu

    torch.npu.config.allow_internal_format = False

logger = logging.getLogger(__name__)
"""), ("""    elif torch.backends.mps.is_available():
        torch.mps.empty_cache()
""", """    elif torch.backends.mps.is_available():
        torch.mps.empty_cache()
    elif is_torch_npu_available():
        torch_npu.npu.empty_cache()
"""), ("""    parser.add_argument("--enable_xformers_memory_efficient_attention", action="store_true")
""", """    parser.add_argument("--enable_xformers_memory_efficient_attention", action="store_true")
    parser.add_argument("--enable_npu_flash_attention", action="store_true", help="Enable Flash Attention for NPU")
"""), ("""    if args.enable_xformers_memory_efficient_attention:
""", """    if args.enable_npu_flash_attention:
        if is_torch_npu_available():
            logger.info("npu flash attention enabled.")
            unet.enable_npu_flash_attention()
        else:
            raise ValueError("npu flash attention requires torch_npu extensions and is supported only on npu devices.")
    if args.enable_xformers_memory_efficient_attention:
"""))

# --------------------------------------------------------------------------- hand-written
HAND_GPU = '''"""Pretrain a small GPT on one node with DDP (a hand-written training script)."""
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

from model import GPT, GPTConfig


@dataclass
class TrainConfig:
    lr: float = 6e-4
    weight_decay: float = 0.1
    seed: int = 1337
    dropout: float = 0.0
    batch_size: int = 12
    max_iters: int = 5000


def init_dist(rank):
    dist.init_process_group(backend="nccl")
    torch.cuda.set_device(rank)


def main():
    cfg = TrainConfig()
    rank = int(os.environ.get("LOCAL_RANK", "0"))
    init_dist(rank)
    torch.manual_seed(cfg.seed)
    torch.use_deterministic_algorithms(True)
    device = torch.device("cuda", rank)
    model = GPT(GPTConfig(dropout=cfg.dropout)).to(device, dtype=torch.bfloat16)
    model = DDP(model, device_ids=[rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    loss_fn = nn.CrossEntropyLoss()
    for it in range(cfg.max_iters):
        x = torch.randint(0, 50304, (cfg.batch_size, 1024), device=device)
        logits = model(x)
        loss = loss_fn(logits.view(-1, logits.size(-1)), x.view(-1))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if it % 100 == 0 and rank == 0:
            print(f"iter {it}: loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
'''

HAND = '''"""Pretrain a small GPT on one node with DDP (a hand-written training script)."""
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

from model import GPT, GPTConfig

try:
    import torch_npu  # noqa: F401
    _NPU = True
except ImportError:
    _NPU = False


def get_device_type():
    if _NPU:
        return "npu"
    if torch.backends.mps.is_available():
        return "mps"
    return "cuda"


DEVICE = get_device_type()
DTYPES = {"cuda": torch.bfloat16, "npu": torch.bfloat16}


@dataclass
class TrainConfig:
    lr: float = 6e-4
    weight_decay: float = 0.1
    seed: int = 1337
    dropout: float = 0.0
    batch_size: int = 12
    max_iters: int = 5000


def init_dist(rank):
    if _NPU:
        dist.init_process_group(backend="hccl")
        torch.npu.set_device(rank)
    else:
        dist.init_process_group(backend="nccl")
        torch.cuda.set_device(rank)


def main():
    cfg = TrainConfig()
    rank = int(os.environ.get("LOCAL_RANK", "0"))
    init_dist(rank)
    torch.manual_seed(cfg.seed)
    torch.use_deterministic_algorithms(True)
    device = torch.device(DEVICE, rank)
    model = GPT(GPTConfig(dropout=cfg.dropout)).to(device, dtype=DTYPES[DEVICE])
    model = DDP(model, device_ids=[rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    loss_fn = nn.CrossEntropyLoss()
    for it in range(cfg.max_iters):
        x = torch.randint(0, 50304, (cfg.batch_size, 1024), device=device)
        logits = model(x)
        loss = loss_fn(logits.view(-1, logits.size(-1)), x.view(-1))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if it % 100 == 0 and rank == 0:
            print(f"iter {it}: loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
'''

STYLES = {"transformers": (HF_GPU, HF), "accelerate": (ACC_GPU, ACC), "diffusers": (DIFF_GPU, DIFF),
          "hand-written": (HAND_GPU, HAND)}


@pytest.mark.parametrize("style", STYLES)
def test_a_faithful_dual_device_file_is_silent_in_a_pair_and_against_itself(tmp_path, style):
    gpu, dual = STYLES[style]
    assert loud(pair(tmp_path / "pair", gpu, dual)) == []
    assert loud(one_file(tmp_path, dual)) == []


def test_the_branches_each_device_does_not_run_are_masked_with_their_lines(tmp_path):
    r = one_file(tmp_path, HAND)
    aside = sorted((m.rule, "gpu" if m.gpu else "npu", (m.gpu or m.npu).line) for m in r.masked
                   if m.rule in ("SD017", "SD019") and (m.gpu or m.npu).value == "branch for another device")
    hccl, nccl = line_of(HAND, 'backend="hccl"'), line_of(HAND, 'backend="nccl"')
    # the GPU run sets the NPU branch of init_dist aside, the NPU run the CUDA one (else: and its body)
    assert ("SD019", "gpu", hccl) in aside and ("SD019", "gpu", hccl - 1) in aside
    assert ("SD019", "npu", nccl - 1) in aside and ("SD019", "npu", nccl) in aside and ("SD019", "npu", nccl + 1) in aside
    assert ("SD019", "gpu", nccl) not in aside and ("SD019", "npu", hccl) not in aside
    # the mps branch of get_device_type is dead on the GPU, under its own mask; on the NPU it is
    # not even reached (`if _NPU: return "npu"` returns before it)
    mps = line_of(HAND, "torch.backends.mps.is_available()")
    assert ("SD017", "gpu", mps) in aside
    assert [(m.rule, m.npu.value) for m in r.masked if m.npu and m.npu.line == mps] == [
        ("SD019", "not reached on this device (the branch before it returns)")]
    # what is left is the port: hccl for nccl, torch.npu for torch.cuda, masked with both lines
    assert [(m.rule, m.gpu.line, m.npu.line) for m in r.masked if m.rule in ("SD002", "SD005")] == [
        ("SD005", nccl, hccl), ("SD002", nccl + 1, hccl + 1)]


def test_the_account_says_which_device_tests_were_decided(tmp_path):
    r = one_file(tmp_path, DIFF)
    notes = {a.side: a.notes for a in r.inputs}
    # the module's `if is_torch_npu_available()`, free_memory's elif chain, the NPU flash-attention
    # branch and `if torch.cuda.is_available()`; each with the idioms its test met on that device
    assert notes["npu"] == ["device tests read for the NPU: 4 decided (by is_npu_available() 3, "
                            "torch.backends.mps.is_available() 1, torch.cuda.is_available() 2)"]
    assert notes["gpu"] == ["device tests read for the GPU: 4 decided (by is_npu_available() 2, "
                            "torch.cuda.is_available() 2)"]


# ----------------------------------------------------------------- planted differences
def _planted(tmp_path, gpu: str, dual: str, planted: str, expected: tuple, pair_expected: tuple | None = None):
    """One finding in the dual file against itself, and in the pair with the GPU script."""
    assert planted != dual
    assert loud(one_file(tmp_path, planted)) == [expected]
    got = loud(pair(tmp_path / "pair", gpu, planted))
    assert got == [pair_expected or expected]


def test_a_dtype_chosen_by_the_device_transformers(tmp_path):
    planted = edit(HF, ("torch_dtype=torch.bfloat16,", "torch_dtype=torch.float16 if is_torch_npu_available() else torch.bfloat16,"))
    at = line_of(planted, "torch_dtype=")
    _planted(tmp_path, HF_GPU, HF, planted, ("SD205", "load_dtype", "bf16", "fp16", at, at),
             ("SD205", "load_dtype", "bf16", "fp16", line_of(HF_GPU, "torch_dtype="), at))


def test_mixed_precision_flags_written_with_the_device_test_transformers(tmp_path):
    planted = edit(HF, ("        bf16=True,\n", "        bf16=not is_torch_npu_available(),\n        fp16=is_torch_npu_available(),\n"))
    _planted(tmp_path, HF_GPU, HF, planted,
             ("SD205", "params_dtype", "bf16", "fp16", line_of(planted, "bf16=not"), line_of(planted, "fp16=is_torch")),
             ("SD205", "params_dtype", "bf16", "fp16", line_of(HF_GPU, "bf16=True"), line_of(planted, "fp16=is_torch")))


def test_an_attention_implementation_chosen_by_the_device_transformers(tmp_path):
    planted = edit(HF, ('attn_implementation="flash_attention_2",',
                        'attn_implementation="eager" if is_torch_npu_available() else "flash_attention_2",'))
    at = line_of(planted, "attn_implementation=")
    _planted(tmp_path, HF_GPU, HF, planted, ("SD201", "use_flash_attn", True, False, at, at),
             ("SD201", "use_flash_attn", True, False, line_of(HF_GPU, "attn_implementation="), at))


def test_an_argparse_default_written_with_the_device_test_transformers(tmp_path):
    planted = edit(HF, ('parser.add_argument("--learning_rate", type=float, default=2e-5)',
                        'parser.add_argument("--learning_rate", type=float, default=1e-5 if is_torch_npu_available() else 2e-5)'))
    at = line_of(planted, '"--learning_rate"')
    _planted(tmp_path, HF_GPU, HF, planted, ("SD202", "lr", 2e-5, 1e-5, at, at),
             ("SD202", "lr", 2e-5, 1e-5, line_of(HF_GPU, '"--learning_rate"'), at))


def test_a_seed_in_the_npu_branch_transformers(tmp_path):
    planted = edit(HF, ("        torch.npu.config.allow_internal_format = False\n", """        torch.npu.config.allow_internal_format = False
        torch.npu.manual_seed_all(args.seed + 1)
    else:
        torch.cuda.manual_seed_all(args.seed)
"""))
    # the GPU run seeds CUDA with --seed (42), the NPU run with 43
    _planted(tmp_path, HF_GPU, HF, planted,
             ("SD207", "device_seed", 42, 43, line_of(planted, '"--seed"'), line_of(planted, "args.seed + 1")),
             ("SD207", "device_seed", None, 43, None, line_of(planted, "args.seed + 1")))


def test_a_learning_rate_in_the_npu_branch_accelerate(tmp_path):
    planted = edit(ACC, ("NpuFusedAdamW(params=model.parameters(), lr=args.learning_rate)",
                         "NpuFusedAdamW(params=model.parameters(), lr=1e-5)"))
    _planted(tmp_path, ACC_GPU, ACC, planted,
             ("SD202", "lr", 2e-5, 1e-5, line_of(planted, '"--learning_rate"'), line_of(planted, "lr=1e-5")),
             ("SD202", "lr", 2e-5, 1e-5, line_of(ACC_GPU, '"--learning_rate"'), line_of(planted, "lr=1e-5")))


def test_a_seed_chosen_by_the_device_accelerate(tmp_path):
    planted = edit(ACC, ("    set_seed(args.seed)\n", "    set_seed(1234 if is_npu_available() else args.seed)\n"))
    _planted(tmp_path, ACC_GPU, ACC, planted,
             ("SD207", "seed", 42, 1234, line_of(planted, '"--seed"'), line_of(planted, "set_seed(1234")),
             ("SD207", "seed", 42, 1234, line_of(ACC_GPU, '"--seed"'), line_of(planted, "set_seed(1234")))


def test_mixed_precision_default_chosen_by_the_device_diffusers(tmp_path):
    planted = edit(DIFF, ('default="fp16", choices', 'default="bf16" if is_torch_npu_available() else "fp16", choices'))
    at = line_of(planted, '"--mixed_precision"')
    _planted(tmp_path, DIFF_GPU, DIFF, planted, ("SD205", "params_dtype", "fp16", "bf16", at, at),
             ("SD205", "params_dtype", "fp16", "bf16", line_of(DIFF_GPU, '"--mixed_precision"'), at))


def test_a_determinism_switch_kept_only_on_the_gpu_path_diffusers(tmp_path):
    planted = edit(DIFF, ("        torch.backends.cuda.matmul.allow_tf32 = True\n", """        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
"""))
    r = one_file(tmp_path, planted)
    switch, test = line_of(planted, "cudnn.deterministic"), line_of(planted, "if torch.cuda.is_available():\n        torch.backends")
    assert loud(r) == [("SD106", "code:train.py:main",
                        "torch.backends.cudnn.deterministic = True, torch.backends.cudnn.benchmark = False", None,
                        switch, test)]
    f = next(f for f in r.findings if f.rule == "SD106")
    assert "the NPU way is torch.use_deterministic_algorithms(True), with HCCL_DETERMINISTIC=true" in f.message
    assert f"the NPU takes the branch at line {test} instead" in f.message
    # against the GPU script that set them unconditionally: the port dropped them on its NPU path
    gpu = edit(DIFF_GPU, ("    if torch.cuda.is_available():\n        torch.backends.cuda.matmul.allow_tf32 = True\n",
                          """    if torch.cuda.is_available():
        torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.deterministic = True
"""))
    assert loud(pair(tmp_path / "pair", gpu, planted)) == [
        ("SD106", "code:train.py:main", "torch.backends.cudnn.deterministic = True", None,
         line_of(gpu, "cudnn.deterministic"), None)]


def test_tf32_on_the_gpu_path_is_info_with_its_numerics_note(tmp_path):
    r = one_file(tmp_path, DIFF)
    tf32 = [(f.rule, f.severity, f.gpu.line, f.npu) for f in r.findings]
    assert tf32 == [("SD107", "info", line_of(DIFF, "allow_tf32"), None)]
    assert "the NPU runs fp32 matmuls unless torch.npu.matmul.allow_hf32 = True (default off)" in r.findings[0].message


def test_a_dtype_in_a_dict_indexed_by_the_device_hand_written(tmp_path):
    planted = edit(HAND, ('DTYPES = {"cuda": torch.bfloat16, "npu": torch.bfloat16}',
                          'DTYPES = {"cuda": torch.bfloat16, "npu": torch.float16}'))
    at = line_of(planted, "DTYPES = ")
    _planted(tmp_path, HAND_GPU, HAND, planted, ("SD101", "code:train.py:main", "torch.bfloat16", "torch.float16", at, at),
             ("SD101", "code:train.py:main", "torch.bfloat16", "torch.float16", line_of(HAND_GPU, "dtype=torch.bfloat16"), at))


def test_a_dataclass_default_written_with_the_flag_hand_written(tmp_path):
    planted = edit(HAND, ("    lr: float = 6e-4\n", "    lr: float = 3e-4 if _NPU else 6e-4\n"))
    at = line_of(planted, "lr: float")
    _planted(tmp_path, HAND_GPU, HAND, planted, ("SD202", "lr", 6e-4, 3e-4, at, at),
             ("SD202", "lr", 6e-4, 3e-4, line_of(HAND_GPU, "lr: float"), at))


def test_a_seed_compared_with_the_device_name_hand_written(tmp_path):
    planted = edit(HAND, ("    seed: int = 1337\n", '    seed: int = 1234 if DEVICE == "npu" else 1337\n'))
    at = line_of(planted, "seed: int")
    _planted(tmp_path, HAND_GPU, HAND, planted, ("SD207", "seed", 1337, 1234, at, at),
             ("SD207", "seed", 1337, 1234, line_of(HAND_GPU, "seed: int"), at))


def test_a_determinism_call_kept_only_on_the_gpu_path_hand_written(tmp_path):
    planted = edit(HAND, ("    torch.use_deterministic_algorithms(True)\n",
                          "    if not _NPU:\n        torch.use_deterministic_algorithms(True)\n"))
    _planted(tmp_path, HAND_GPU, HAND, planted,
             ("SD207", "deterministic", True, None, line_of(planted, "torch.use_deterministic_algorithms"), None),
             ("SD207", "deterministic", True, None, line_of(HAND_GPU, "torch.use_deterministic_algorithms"), None))


def test_a_backend_that_is_not_the_port_hand_written(tmp_path):
    planted = edit(HAND, ('dist.init_process_group(backend="hccl")', 'dist.init_process_group(backend="gloo")'))
    _planted(tmp_path, HAND_GPU, HAND, planted,
             ("SD102", "code:train.py:init_dist", "nccl", "gloo", line_of(planted, 'backend="nccl"'),
              line_of(planted, 'backend="gloo"')),
             ("SD102", "code:train.py:init_dist", "nccl", "gloo", line_of(HAND_GPU, 'backend="nccl"'),
              line_of(planted, 'backend="gloo"')))


def test_a_pair_read_by_its_difference_still_reads_the_statements_that_test_the_device(tmp_path, monkeypatch):
    """A large pair that differs in one place is parsed in part (lang/python/focus.py); a device
    test written alike on both sides still runs differently on each, so it is read too."""
    from scriptdiff.lang.python import focus

    monkeypatch.setattr(focus, "MIN_BYTES", 0)
    blocks = "".join(f"\n\ndef step_{i}(model, batch):\n    loss = model(batch).mean()\n    loss.backward()\n"
                     f"    return loss\n" for i in range(80))
    base = edit(HAND, ('DTYPES = {', 'torch.manual_seed(1234 if DEVICE == "npu" else 1337)\nDTYPES = {')) + blocks
    gpu = base
    npu = edit(base, ("def step_70(model, batch):\n    loss = model(batch).mean()",
                      "def step_70(model, batch):\n    loss = model(batch).sum()"))
    plan = focus.plan(gpu, npu, focus.fact_callee_names())
    assert plan is not None and plan[2] < plan[3] / 2  # read in part
    seed, step = line_of(base, "torch.manual_seed(1234"), line_of(gpu, "def step_70") + 1
    for side, text in (("gpu", gpu), ("npu", npu)):  # two folders: a pair compared on its own is read by its difference
        (tmp_path / side).mkdir()
        (tmp_path / side / "train.py").write_text(text, encoding="utf-8")
    from scriptdiff.run.folders import diff_trees

    assert sorted(loud(diff_trees(str(tmp_path / "gpu"), str(tmp_path / "npu"), Options(use_cache=False, jobs=1)))) == [
        ("SD101", "code:train.py:step_70", "model(batch).mean()", "model(batch).sum()", step, step),
        ("SD207", "seed", 1337, 1234, seed, seed)]


# ----------------------------------------------------------------- every idiom, one file
IDIOM_HEAD = """import argparse
import importlib.util

import torch
from accelerate import Accelerator
from accelerate.utils import is_npu_available
from deepspeed.accelerator import get_accelerator

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cuda")
args = parser.parse_args()
accelerator = Accelerator()
device = accelerator.device
DEVICE = "npu" if is_npu_available() else "cuda"
try:
    import torch_npu  # noqa: F401
    HAS_NPU = True
except ImportError:
    HAS_NPU = False
"""
IDIOM_TAIL = """if {test}:
    LR = 1e-4
else:
    LR = 2e-4
model = torch.nn.Linear(8, 8)
optimizer = torch.optim.AdamW(model.parameters(), lr=LR)
"""
IDIOMS = ["is_npu_available()", "torch.npu.is_available()", 'hasattr(torch, "npu")',
          'importlib.util.find_spec("torch_npu") is not None', 'accelerator.device.type == "npu"',
          'args.device == "npu"', '"npu" in str(device)', 'get_accelerator().device_name() == "npu"',
          'DEVICE == "npu"', "HAS_NPU", "not torch.cuda.is_available()", 'device.type != "cuda"']


@pytest.mark.parametrize("test", IDIOMS)
def test_each_idiom_decides_the_branch_for_each_device(tmp_path, test):
    text = IDIOM_HEAD + IDIOM_TAIL.format(test=test)
    assert loud(one_file(tmp_path, text)) == [("SD202", "lr", 2e-4, 1e-4, line_of(text, "LR = 2e-4"),
                                                line_of(text, "LR = 1e-4"))]


def test_a_conditional_device_string_is_the_expected_port(tmp_path):
    text = IDIOM_HEAD + 'x = torch.zeros(4).to("npu:0" if is_npu_available() else "cuda:0")\n'
    r = one_file(tmp_path, text)
    at, dev = line_of(text, "x = torch.zeros"), line_of(text, "DEVICE = ")
    # "cuda:0" on the GPU against "npu:0" on the NPU (and DEVICE's "cuda" against "npu"): the port
    assert loud(r) == [] and [(m.rule, m.gpu.line, m.npu.line) for m in r.masked if m.rule == "SD004"] == [
        ("SD004", dev, dev), ("SD004", at, at)]


def test_under_transfer_to_npu_the_cuda_path_runs_on_the_npu(tmp_path):
    text = ("import torch\nimport torch_npu\nfrom torch_npu.contrib import transfer_to_npu  # noqa: F401\n"
            "from accelerate.utils import is_npu_available\n"
            + IDIOM_TAIL.format(test="torch.cuda.is_available()"))
    # transfer_to_npu makes torch.cuda.is_available() true on the NPU: both runs take LR = 1e-4
    assert loud(one_file(tmp_path, text)) == []
