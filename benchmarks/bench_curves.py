"""Throughput and peak memory of `scriptdiff curves` on two generated 1 GB Megatron logs.

The GPU and NPU logs (--size-gb each, default 1) are Megatron-LM iteration lines with
MindSpeed-style timestamps, one per step; the NPU loss drifts away from step DRIFT_AT on
(+4% over DRIFT_LEN steps). Each run of `scriptdiff curves GPU NPU -f json` is a fresh
process under /usr/bin/time -v (peak RSS); the baseline is `grep -c iteration` over the
same two files, so the ratio is what parsing costs beyond reading the bytes. Every run must
find the planted divergence (verdict "long-term difference", first persistent divergence
within DRIFT_TOLERANCE steps of where the drift crosses the 1% tolerance): a fast wrong
answer fails the benchmark. Files are deleted at the end.

    PYTHONPATH=$PWD python benchmarks/bench_curves.py [--size-gb 1] [--runs 3] [--keep DIR]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DRIFT_FRACTION = 0.6  # the drift starts at 60% of the run
DRIFT_LEN = 200_000  # steps to reach +4%
GBS = 1024


def write_log(path: str, size: int, npu: bool) -> tuple[int, int]:
    """A Megatron log of about `size` bytes; returns (steps, drift start)."""
    rnd = random.Random("npu" if npu else "gpu")
    line_len = 330
    steps = size // line_len
    drift_at = int(steps * DRIFT_FRACTION)
    buf = []
    written = 0
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("------------------------ arguments ------------------------\n"
                 "  global_batch_size ............................... 1024\n"
                 "-------------------- end of arguments ---------------------\n")
        for t in range(1, steps + 1):
            base = 2.0 + 8.0 * math.exp(-t / 20000)
            loss = base * (1 + rnd.gauss(0, 0.003))
            if npu and t > drift_at:
                loss *= 1 + 0.04 * min(1.0, (t - drift_at) / DRIFT_LEN)
            sec = t * 2
            buf.append(f" [2024-06-01 {sec // 3600 % 24:02d}:{sec // 60 % 60:02d}:{sec % 60:02d}] iteration "
                       f"{t:9d}/{steps:9d} | consumed samples: {t * GBS:14d} | elapsed time per iteration (ms): "
                       f"{1300 + rnd.random() * 50:.1f} | learning rate: {3e-4:.6E} | global batch size: {GBS:5d} | "
                       f"lm loss: {loss:.6E} | loss scale: 1.0 | grad norm: {0.4 + rnd.random() * 0.01:.3f} | "
                       f"number of skipped iterations:   0 | number of nan iterations:   0 |\n")
            if len(buf) >= 10000:
                s = "".join(buf)
                fh.write(s)
                written += len(s)
                buf = []
        if buf:
            fh.write("".join(buf))
    return steps, drift_at


def timed(cmd: list[str]) -> tuple[float, int, str]:
    """(seconds, peak RSS in KiB, stdout) of one run under /usr/bin/time -v."""
    t = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": ROOT})
    dt = time.perf_counter() - t
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
    return dt, int(m.group(1)) if m else -1, p.stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-gb", type=float, default=1.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--keep", metavar="DIR", help="generate into DIR and keep the files (reused when present)")
    args = ap.parse_args()
    d = args.keep or tempfile.mkdtemp(prefix="bench-curves-")
    os.makedirs(d, exist_ok=True)
    g, n = os.path.join(d, "gpu.log"), os.path.join(d, "npu.log")
    size = int(args.size_gb * (1 << 30))
    try:
        t = time.perf_counter()
        if not (args.keep and os.path.exists(g) and os.path.exists(n)):
            write_log(g, size, npu=False)
            write_log(n, size, npu=True)
        steps = size // 330
        drift_at = int(steps * DRIFT_FRACTION)
        crossing = drift_at + DRIFT_LEN / 4  # +1% (the tolerance) a quarter of the way up the 4% drift
        total = os.path.getsize(g) + os.path.getsize(n)
        print(f"two Megatron logs, {total / (1 << 30):.2f} GiB, {steps} steps each "
              f"(written in {time.perf_counter() - t:.0f} s); planted drift from step {drift_at}, "
              f"crossing 1% near step {crossing:.0f}")
        grep = []
        for _ in range(args.runs):
            dt, rss, _out = timed(["grep", "-c", "iteration", g, n])
            grep.append((dt, rss))
        cur = []
        for _ in range(args.runs):
            dt, rss, out = timed([sys.executable, "-m", "scriptdiff", "curves", g, n, "-f", "json"])
            doc = json.loads(out)
            c = doc["curves"]
            div = c["series"]["loss"]["divergence"]
            ok = c["verdict"] == "long-term difference" and div is not None and abs(div - crossing) <= 0.05 * steps
            print(f"  curves run: {dt:.1f} s, peak RSS {rss / 1024:.0f} MiB, verdict {c['verdict']!r}, "
                  f"divergence at step {div} ({'found' if ok else 'NOT FOUND'})")
            if not ok:
                print("FAIL: the planted divergence was not found", file=sys.stderr)
                return 1
            cur.append((dt, rss))
        gm = statistics.median(x[0] for x in grep)
        cm = statistics.median(x[0] for x in cur)
        print(f"grep -c iteration  median {gm:.2f} s  ({total / gm / (1 << 20):.0f} MiB/s), "
              f"peak RSS {statistics.median(x[1] for x in grep) / 1024:.0f} MiB")
        print(f"scriptdiff curves  median {cm:.2f} s  ({total / cm / (1 << 20):.0f} MiB/s), "
              f"peak RSS {statistics.median(x[1] for x in cur) / 1024:.0f} MiB")
        print(f"ratio curves/grep: {cm / gm:.1f}x")
    finally:
        if not args.keep:
            shutil.rmtree(d, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
