"""Time and peak memory of `scriptdiff weights` on two generated 2 GB safetensors checkpoints.

The GPU checkpoint holds bf16 and fp32 tensors, the largest 256 MiB; the NPU checkpoint is
the same with a few tensors perturbed (so their statistics are computed, the largest
among them) and one cast to another dtype. Each run is a fresh process; its peak resident
memory comes from wait4(). A run on two tiny checkpoints gives the fixed cost of the
interpreter and imports, so "beyond start-up" is the memory the comparison itself used,
set against the aim: under 0.5 GB beyond the largest tensor. The same session times
`sha256sum` over both files as a reading/hashing baseline. Files are deleted at the end.

    PYTHONPATH=$PWD python benchmarks/bench_weights.py [--size-gb 2] [--runs 3]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MiB = 1024 * 1024


def layout(total: int) -> list[tuple[str, str, list[int]]]:
    """(name, dtype, shape): one 256 MiB bf16 embedding, then 64 MiB fp32/bf16 layers up to `total`."""
    out = [("embed.weight", "BF16", [32768, 4096])]  # 256 MiB
    size = 256 * MiB
    i = 0
    while size < total:
        if i % 2 == 0:
            out.append((f"layers.{i // 2}.mlp.weight", "F32", [4096, 4096]))  # 64 MiB
        else:
            out.append((f"layers.{i // 2}.attn.weight", "BF16", [8192, 4096]))  # 64 MiB
        size += 64 * MiB
        i += 1
    return out


ITEM = {"BF16": 2, "F32": 4, "F16": 2}


def write_checkpoint(path: str, tensors, perturb: set[str], cast: dict[str, str]) -> None:
    """Stream a safetensors file without holding it in memory; same seed per tensor on both sides."""
    import numpy as np

    header, off = {}, 0
    plan = []
    for name, dtype, shape in tensors:
        dt = cast.get(name, dtype)
        n = int(np.prod(shape)) * ITEM[dt]
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + n]}
        plan.append((name, dtype, dt, shape))
        off += n
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(h)) + h)
        for idx, (name, dtype, dt, shape) in enumerate(plan):
            rng = np.random.default_rng(idx)
            left = int(np.prod(shape))
            while left:
                k = min(left, 8 * MiB)
                v = rng.standard_normal(k, dtype=np.float32) * np.float32(0.02)
                if name in perturb:
                    v = v + np.float32(1e-3)
                if dt == "F32":
                    fh.write(v.tobytes())
                elif dt == "F16":
                    fh.write(v.astype(np.float16).tobytes())
                else:  # bf16 by truncation
                    fh.write((v.view(np.uint32) >> 16).astype(np.uint16).tobytes())
                left -= k


def run(cmd: list[str], env) -> tuple[float, int, int]:
    """(seconds, peak RSS in bytes, exit status) of one fresh process."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    p.stdout.close()
    run.last_out = out
    return time.perf_counter() - t, ru.ru_maxrss * 1024, p.returncode


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-gb", type=float, default=2.0)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    total = int(args.size_gb * 1024 ** 3)
    tmp = tempfile.mkdtemp(prefix="scriptdiff-bench-weights-")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    try:
        tensors = layout(total)
        perturb = {"embed.weight", "layers.0.mlp.weight", "layers.3.attn.weight"}
        cast = {"layers.5.mlp.weight": "F16"}
        g, n = os.path.join(tmp, "gpu.safetensors"), os.path.join(tmp, "npu.safetensors")
        t = time.perf_counter()
        write_checkpoint(g, tensors, set(), {})
        write_checkpoint(n, tensors, perturb, cast)
        largest = max(int(__import__("math").prod(s)) * ITEM[d] for _, d, s in tensors)
        print(f"generated 2 x {os.path.getsize(g) / 1024 ** 3:.2f} GiB ({len(tensors)} tensors, largest "
              f"{largest / MiB:.0f} MiB) in {time.perf_counter() - t:.1f} s; cpus: {os.cpu_count()}")
        tiny_g, tiny_n = os.path.join(tmp, "tg.safetensors"), os.path.join(tmp, "tn.safetensors")
        write_checkpoint(tiny_g, [("w", "F32", [4])], set(), {})
        write_checkpoint(tiny_n, [("w", "F32", [4])], {"w"}, {})
        cmd = [sys.executable, "-m", "scriptdiff", "weights", "--format", "json"]
        base = [run(cmd + [tiny_g, tiny_n], env) for _ in range(args.runs)]
        full = [run(cmd + [g, n], env) for _ in range(args.runs)]
        doc = json.loads(run.last_out)
        rules = sorted((f["rule"], f["key"]) for f in doc["findings"])
        sha = []
        for _ in range(args.runs):
            t = time.perf_counter()
            subprocess.run(["sha256sum", g, n], check=True, stdout=subprocess.DEVNULL)
            sha.append(time.perf_counter() - t)
        b3 = []
        if shutil.which("b3sum"):
            for _ in range(args.runs):
                t = time.perf_counter()
                subprocess.run(["b3sum", g, n], check=True, stdout=subprocess.DEVNULL)
                b3.append(time.perf_counter() - t)
        base_rss = statistics.median(r[1] for r in base)
        peak = max(r[1] for r in full)
        med = statistics.median(r[0] for r in full)
        print(f"findings: {rules}")
        print(f"exit status: {full[0][2]}")
        print(f"scriptdiff weights, 2 checkpoints:  median {med:.2f} s over {args.runs} runs "
              f"({2 * os.path.getsize(g) / 1024 ** 3 / med:.2f} GiB/s read)")
        print(f"start-up only (tiny checkpoints): median {statistics.median(r[0] for r in base):.2f} s, "
              f"peak RSS {base_rss / MiB:.0f} MiB")
        print(f"peak RSS of the comparison:       {peak / MiB:.0f} MiB; beyond start-up {(peak - base_rss) / MiB:.0f} MiB")
        beyond = peak - base_rss - largest
        print(f"beyond start-up and the largest tensor ({largest / MiB:.0f} MiB): {beyond / MiB:.0f} MiB "
              f"(aim: under 512 MiB) -> {'met' if beyond < 512 * MiB else 'NOT met'}")
        print(f"sha256sum of both files: median {statistics.median(sha):.2f} s; ratio {statistics.median(sha) / med:.2f}x"
              f" (above 1: scriptdiff weights is faster)")
        if b3:
            print(f"b3sum of both files: median {statistics.median(b3):.2f} s; ratio {statistics.median(b3) / med:.2f}x")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
