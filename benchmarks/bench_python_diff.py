"""How fast is the Python diff, against the floor of parsing both files with libcst?

Generates a ~2,000-line GPU training module and its NPU port (many expected substitutions:
.cuda() -> .npu(), torch.cuda -> torch.npu, 'nccl' -> 'hccl', device strings, an optimizer
swap, adapter imports) with 10 real differences, then times, median of N runs each:

  floor      libcst.parse_module on both files (in process)
  library    scriptdiff.run.engine.diff_files on the pair (in process, parse cache cleared)
  floor-cmd  a fresh interpreter that imports libcst and parses both files
  command    a fresh `python -m scriptdiff diff GPU NPU --format json --no-cache`

and prints the figures and the ratios library/floor and command/floor-cmd.

    PYTHONPATH=$PWD python benchmarks/bench_python_diff.py [--runs 7] [--keep DIR]

With --tree, the issue-14 measurement instead: 1,000 standard-library Python files per side
(the running interpreter's own library), 50 of which get a small port appended on the NPU
side (an `import torch_npu`, a `.cuda()` -> `.npu()` and an `AdamW(lr=...)`), 3 of those also
changing `lr`. Side by side, interleaved, median of N runs: `git diff --no-index --numstat`,
scriptdiff with a cold cache (a fresh cache folder each run), warm (the same run replayed:
scriptdiff/commands/runmemo.py) and warm-files (the run memo off: per-file results from the
cache, every file read again), with the ratios to git and the peak RSS of one run of each
(/usr/bin/time -v), and the start-up floor of a cold run (a fresh interpreter importing the
diff path: libcst alone is most of it). It exits non-zero unless the 3 planted lr changes are all found, cold and
warm, and the warm output is the cold output.

    PYTHONPATH=$PWD python benchmarks/bench_python_diff.py --tree [--runs 5] [--files 1000]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

HEADER = '''"""Generated benchmark module: a transformer training stack."""
import argparse
import math
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

LR = 3e-4
SEED = 1234


def get_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--weight-decay", type=float, default=0.1)
    parser.add_argument("--clip-grad", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=1234)
    return parser.parse_args()
'''

BLOCK = '''

class Block{i}(nn.Module):
    """Layer {i}: attention and MLP."""

    def __init__(self, dim, heads=8, dropout=0.1):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.proj = nn.Linear(dim, dim, bias=False)
        self.norm1 = nn.LayerNorm(dim, eps=1e-5)
        self.norm2 = nn.LayerNorm(dim, eps=1e-5)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)
        self.drop = nn.Dropout(dropout)

    def attention(self, x, mask=None):
        b, s, d = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.view(b, s, self.heads, d // self.heads).transpose(1, 2)
        k = k.view(b, s, self.heads, d // self.heads).transpose(1, 2)
        v = v.view(b, s, self.heads, d // self.heads).transpose(1, 2)
        att = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d // self.heads)
        if mask is not None:
            att = att.masked_fill(mask, float("-inf"))
        att = self.drop(att.softmax(dim=-1))
        return self.proj(torch.matmul(att, v).transpose(1, 2).reshape(b, s, d))

    def forward(self, x, mask=None):
        x = x + self.attention(self.norm1(x), mask)
        x = x + self.drop(self.fc2(F.gelu(self.fc1(self.norm2(x)))))
        if x.is_cuda and {i} % 4 == 0:
            torch.cuda.synchronize()
        return x


def step_{i}(model, batch, optimizer, scaler, local_rank):
    x = batch["input"].cuda(local_rank, non_blocking=True)
    y = batch["target"].cuda(local_rank, non_blocking=True)
    with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten(), label_smoothing=0.0)
    scaler.scale(loss).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    if local_rank == 0 and {i} % 10 == 0:
        print(f"block {i} loss {{loss.item():.4f}} mem {{torch.cuda.memory_allocated() / 2**20:.0f}}MiB")
    return loss.detach()
'''

FOOTER = '''

def main():
    args = get_args()
    torch.manual_seed(SEED)
    dist.init_process_group(backend="nccl")
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    torch.cuda.set_device(local_rank)
    device = torch.device(f"cuda:{local_rank}")
    model = nn.Sequential(*[Block0(512) for _ in range(4)]).to(device)
    model = DDP(model, device_ids=[local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, betas=(0.9, 0.95), weight_decay=args.weight_decay)
    scaler = torch.cuda.amp.GradScaler(init_scale=2.**16)
    state = torch.load("init.pt", map_location="cuda")
    model.module.load_state_dict(state)
    return model, optimizer, scaler


if __name__ == "__main__":
    main()
'''

NPU_EDITS = [
    ("import torch\n", "import torch\nimport torch_npu\nfrom torch_npu.contrib import transfer_to_npu\n"),
    ("x.is_cuda", "x.is_npu"),
    ("torch.cuda.synchronize()", "torch.npu.synchronize()"),
    (".cuda(local_rank, non_blocking=True)", ".npu(local_rank, non_blocking=True)"),
    ('device_type="cuda"', 'device_type="npu"'),
    ("torch.cuda.memory_allocated()", "torch.npu.memory_allocated()"),
    ('backend="nccl"', 'backend="hccl"'),
    ("torch.cuda.set_device(local_rank)", "torch_npu.npu.set_device(local_rank)"),
    ('f"cuda:{local_rank}"', 'f"npu:{local_rank}"'),
    ("torch.optim.AdamW(", "torch_npu.optim.NpuFusedAdamW("),
    ("torch.cuda.amp.GradScaler(", "torch_npu.npu.amp.GradScaler("),
    ('map_location="cuda"', 'map_location="npu"'),
]

# the 10 real differences (each applied once, to one block or the footer)
REAL_EDITS = [
    ("LR = 3e-4", "LR = 2e-4"),                                              # hyperparameter (SD202)
    ("betas=(0.9, 0.95)", "betas=(0.9, 0.999)"),                             # hyperparameter (SD206)
    ("torch.manual_seed(SEED)", "torch.manual_seed(42)"),                    # hyperparameter (SD207)
    ("init_scale=2.**16", "init_scale=2.**10"),                              # hyperparameter (SD209)
    ("class Block7(nn.Module):\n    \"\"\"Layer 7: attention and MLP.\"\"\"\n\n    def __init__(self, dim, heads=8, dropout=0.1)",
     "class Block7(nn.Module):\n    \"\"\"Layer 7: attention and MLP.\"\"\"\n\n    def __init__(self, dim, heads=8, dropout=0.0)"),
    ("def step_13(model, batch, optimizer, scaler, local_rank):\n    x = batch[\"input\"].npu(local_rank, non_blocking=True)\n    y = batch[\"target\"].npu(local_rank, non_blocking=True)\n    with torch.autocast(device_type=\"npu\", dtype=torch.bfloat16):\n        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten(), label_smoothing=0.0)",
     "def step_13(model, batch, optimizer, scaler, local_rank):\n    x = batch[\"input\"].npu(local_rank, non_blocking=True)\n    y = batch[\"target\"].npu(local_rank, non_blocking=True)\n    with torch.autocast(device_type=\"npu\", dtype=torch.bfloat16):\n        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten(), label_smoothing=0.1)"),
    ("        self.norm1 = nn.LayerNorm(dim, eps=1e-5)\n        self.norm2 = nn.LayerNorm(dim, eps=1e-5)\n        self.fc1 = nn.Linear(dim, 4 * dim)\n        self.fc2 = nn.Linear(4 * dim, dim)\n        self.drop = nn.Dropout(dropout)\n\n    def attention(self, x, mask=None):\n        b, s, d = x.shape",
     "        self.norm1 = nn.LayerNorm(dim, eps=1e-6)\n        self.norm2 = nn.LayerNorm(dim, eps=1e-5)\n        self.fc1 = nn.Linear(dim, 4 * dim)\n        self.fc2 = nn.Linear(4 * dim, dim)\n        self.drop = nn.Dropout(dropout)\n\n    def attention(self, x, mask=None):\n        b, s, d = x.shape"),
    ("model = DDP(model, device_ids=[local_rank])", "model = DDP(model, device_ids=[local_rank], find_unused_parameters=True)"),
    ("    if local_rank == 0 and 21 % 10 == 0:\n", "    if local_rank == 0 and 21 % 5 == 0:\n"),
    ("        x = x + self.attention(self.norm1(x), mask)\n        x = x + self.drop(self.fc2(F.gelu(self.fc1(self.norm2(x)))))\n        if x.is_npu and 30 % 4 == 0:",
     "        x = x + self.attention(self.norm1(x), mask)\n        x = x + self.drop(self.fc2(F.relu(self.fc1(self.norm2(x)))))\n        if x.is_npu and 30 % 4 == 0:"),
]


def generate(target_lines: int = 2000) -> tuple[str, str]:
    blocks, i = [], 0
    text = HEADER
    while text.count("\n") < target_lines - FOOTER.count("\n"):
        blocks.append(BLOCK.replace("{i}", str(i)).replace("{{", "{").replace("}}", "}"))
        text = HEADER + "".join(blocks)
        i += 1
    gpu = text + FOOTER
    npu = gpu
    for a, b in NPU_EDITS:
        npu = npu.replace(a, b)
    for a, b in REAL_EDITS:
        assert a in npu, a[:60]
        npu = npu.replace(a, b, 1)
    return gpu, npu


def median_time(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


PORT_GPU = """

def _port_{i}(model):
    model = model.cuda()
    return torch.optim.AdamW(model.parameters(), lr={lr})
"""


def make_tree(root: Path, files: int, ported: int = 50, changed: int = 3) -> tuple[int, list[str]]:
    """gpu/ and npu/ with `files` standard-library modules each; returns (bytes per side, the
    relative paths whose lr was changed)."""
    import sysconfig

    lib = Path(sysconfig.get_paths()["stdlib"])
    picked = []
    for p in sorted(lib.rglob("*.py")):
        if "site-packages" in p.parts or "test" in p.parts or "tests" in p.parts:
            continue
        try:
            text = p.read_text(encoding="utf-8")
            compile(text, str(p), "exec")
        except (UnicodeDecodeError, SyntaxError, ValueError):
            continue
        picked.append((p.relative_to(lib), text))
        if len(picked) == files:
            break
    size, planted = 0, []
    for i, (rel, text) in enumerate(picked):
        g, n = text, text
        if i % max(1, len(picked) // ported) == 0 and i // max(1, len(picked) // ported) < ported:
            k = i // max(1, len(picked) // ported)
            g = text + "\nimport torch\n" + PORT_GPU.format(i=k, lr="3e-4")
            port = PORT_GPU.format(i=k, lr="1e-4" if k < changed else "3e-4").replace(".cuda()", ".npu()")
            n = text + "\nimport torch\nimport torch_npu\n" + port
            if k < changed:
                planted.append(str(rel).replace("\\", "/"))
        for side, t in (("gpu", g), ("npu", n)):
            out = root / side / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(t, encoding="utf-8")
        size += len(g.encode("utf-8"))
    return size, planted


def peak_rss(cmd: list[str], env: dict) -> float:
    """Peak RSS in MB of one run, from /usr/bin/time -v (nan when it is not installed)."""
    if not Path("/usr/bin/time").exists():
        return float("nan")
    r = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True, env=env)
    for line in r.stderr.splitlines():
        if "Maximum resident set size" in line:
            return int(line.rsplit(":", 1)[1]) / 1024
    return float("nan")


def tree_main(a) -> int:
    import json
    import os
    import shutil

    root = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="sd-bench-tree-"))
    size, planted = make_tree(root, a.files)
    g, n = str(root / "gpu"), str(root / "npu")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cache = root / "cache"
    env["SCRIPTDIFF_CACHE_DIR"] = str(cache)
    cmd = [sys.executable, "-m", "scriptdiff", "diff", g, n, "--format", "json"]

    def found(stdout: str) -> list[str]:
        return sorted({p for f in json.loads(stdout)["findings"] if f["key"] == "lr"
                       for p in planted if p in ((f.get("gpu") or {}).get("path") or "").replace("\\", "/")})

    out = subprocess.run(cmd + ["--no-cache"], capture_output=True, text=True, env=env)
    lr_paths = found(out.stdout)
    print(f"tree: {a.files} files per side, {size / 1e6:.1f} MB per side; planted lr changes: {len(planted)}, "
          f"found: {len(lr_paths)} (exit {out.returncode})")
    if lr_paths != sorted(planted):
        print(f"the planted lr changes were not all found: {sorted(set(planted) - set(lr_paths))}")
        return 1
    git_cmd = ["git", "diff", "--no-index", "--numstat", g, n]
    # warm: the run replayed (commands/runmemo); warm-files: per-file results from the cache,
    # every file read and hashed again (SCRIPTDIFF_NO_RUN_MEMO=1)
    files_env = dict(env, SCRIPTDIFF_NO_RUN_MEMO="1")
    # the floor of any cold run: a fresh interpreter that imports what a Python diff needs
    floor_cmd = [sys.executable, "-c", "import scriptdiff.cli, scriptdiff.api, scriptdiff.lang.python.reader"]
    t = {"git": [], "cold": [], "warm": [], "warm-files": [], "start-up": []}
    time.sleep(2.1)  # files written under 2 s before a run ends are never replayed (racy time stamps)
    subprocess.run(cmd, capture_output=True, env=env)  # the warm cache
    for _ in range(a.runs):  # interleaved: a busy machine slows every column alike
        t["git"].append(median_time(lambda: subprocess.run(git_cmd, capture_output=True), 1))
        shutil.rmtree(cache, ignore_errors=True)
        t["cold"].append(median_time(lambda: subprocess.run(cmd, capture_output=True, env=env), 1))
        t["warm"].append(median_time(lambda: subprocess.run(cmd, capture_output=True, env=env), 1))
        t["warm-files"].append(median_time(lambda: subprocess.run(cmd, capture_output=True, env=files_env), 1))
        t["start-up"].append(median_time(lambda: subprocess.run(floor_cmd, capture_output=True, env=env), 1))
    warm = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if warm.stdout != out.stdout or found(warm.stdout) != sorted(planted):
        print("the warm run's output differs from the cold run's")
        return 1
    rss = {"warm": peak_rss(cmd, env), "warm-files": peak_rss(cmd, files_env)}
    shutil.rmtree(cache, ignore_errors=True)
    rss["cold"] = peak_rss(cmd, env)
    base = statistics.median(t["git"])
    print(f"median of {a.runs} runs (peak RSS of one run):")
    print(f"  git diff --no-index --numstat   {base:8.3f} s")
    for k in ("cold", "warm", "warm-files"):
        m = statistics.median(t[k])
        print(f"  scriptdiff {k:<10}           {m:8.3f} s   {m / base:6.1f}x git   peak RSS {rss[k]:7.1f} MB")
    m = statistics.median(t["start-up"])
    print(f"  start-up (python, import the diff path) {m:5.3f} s   {m / base:6.1f}x git   (part of every cold run)")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--lines", type=int, default=2000)
    ap.add_argument("--keep", help="write the generated pair into this folder")
    ap.add_argument("--tree", action="store_true", help="the 1,000-file standard-library tree (issue 14)")
    ap.add_argument("--files", type=int, default=1000)
    a = ap.parse_args()
    if a.tree:
        return tree_main(a)

    import libcst

    from scriptdiff.run import engine
    from scriptdiff.model import Options
    from scriptdiff.run.pipeline import diff_files
    from scriptdiff.lang.python import cpytree, reader as pylang

    gpu, npu = generate(a.lines)
    root = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="sd-bench-"))
    (root / "gpu").mkdir(parents=True, exist_ok=True)
    (root / "npu").mkdir(parents=True, exist_ok=True)
    gp, np_ = root / "gpu" / "train.py", root / "npu" / "train.py"
    gp.write_text(gpu, encoding="utf-8")
    np_.write_text(npu, encoding="utf-8")

    def floor():
        libcst.parse_module(gp.read_text(encoding="utf-8"))
        libcst.parse_module(np_.read_text(encoding="utf-8"))

    def library():
        pylang._CACHE.clear()
        pylang._PLANS.clear()  # the pair's focus plan (python_focus), as a fresh run has none
        engine._MEMO.clear()  # the per-process memo of parse results, as a fresh run has it
        cpytree.clear()  # CPython's trees of the pair's whole texts, as a fresh run has none
        return diff_files([str(gp)], [str(np_)], Options(use_cache=False))

    report = library()  # warm-up (rule packs load once per process), and the findings
    real = [f for f in report.findings]
    floor()

    env_py = sys.executable
    parse_cmd = [env_py, "-c", f"import libcst; [libcst.parse_module(open(p, encoding='utf-8').read()) for p in {[str(gp), str(np_)]!r}]"]
    diff_cmd = [env_py, "-m", "scriptdiff", "diff", str(gp), str(np_), "--format", "json", "--no-cache"]
    # interleaved, so that a busy machine slows the floor and the measured run alike
    timings = {"floor": [], "library": [], "floor_cmd": [], "cmd": []}
    for _ in range(a.runs):
        timings["floor"].append(median_time(floor, 1))
        timings["library"].append(median_time(library, 1))
        timings["floor_cmd"].append(median_time(lambda: subprocess.run(parse_cmd, check=True, capture_output=True), 1))
        timings["cmd"].append(median_time(lambda: subprocess.run(diff_cmd, capture_output=True), 1))
    t_floor, t_lib, t_floor_cmd, t_cmd = (statistics.median(timings[k]) for k in ("floor", "library", "floor_cmd", "cmd"))

    print(f"pair: {gpu.count(chr(10))} / {npu.count(chr(10))} lines, {len(REAL_EDITS)} real differences injected")
    print(f"findings: {len(real)} ({sum(f.severity == 'error' for f in real)} error, "
          f"{sum(f.severity == 'warning' for f in real)} warning, {sum(f.severity == 'info' for f in real)} info); "
          f"masked: {len(report.masked)}")
    for f in sorted(real, key=lambda f: (f.rule, f.key)):
        print(f"  {f.rule} {f.severity:<7} {f.key}: {f.message}")
    print(textwrap.dedent(f"""\
        median of {a.runs} runs:
          floor (libcst parse of both files, in process)   {t_floor * 1000:8.1f} ms
          library (engine.diff_files, in process)          {t_lib * 1000:8.1f} ms   ratio {t_lib / t_floor:.2f}x
          floor-cmd (fresh python: import libcst, parse)   {t_floor_cmd * 1000:8.1f} ms
          command (python -m scriptdiff diff --format json){t_cmd * 1000:8.1f} ms   ratio {t_cmd / t_floor_cmd:.2f}x"""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
