"""How long `scriptdiff collect` takes on this machine, as a whole command.

Runs `python -m scriptdiff collect -o FILE` several times (with and without the npu-smi /
nvidia-smi / nvcc commands it runs when they are on PATH), and `python -c pass` as the
baseline of starting Python itself, in the same session; prints the medians, the ratio, and
how many distributions the snapshot read.

    PYTHONPATH=$PWD python benchmarks/bench_collect.py [--runs 15]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(argv: list[str], runs: int, env: dict) -> list[float]:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(argv, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        out.append(time.perf_counter() - t)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    with tempfile.TemporaryDirectory() as tmp:
        snap = Path(tmp) / "snapshot.json"
        py = sys.executable
        timed([py, "-c", "pass"], 2, env)  # warm the file cache
        base = timed([py, "-c", "pass"], args.runs, env)
        full = timed([py, "-m", "scriptdiff", "collect", "-o", str(snap)], args.runs, env)
        doc = json.loads(snap.read_text())
        files_only = timed([py, "-m", "scriptdiff", "collect", "--no-commands", "-o", str(snap)], args.runs, env)
        doc2 = json.loads(snap.read_text())
    mb, mf, mn = statistics.median(base), statistics.median(full), statistics.median(files_only)
    print(f"python -c pass                       median {mb * 1000:7.1f} ms  (min {min(base) * 1000:.1f}, {args.runs} runs)")
    print(f"scriptdiff collect                   median {mf * 1000:7.1f} ms  (min {min(full) * 1000:.1f}) "
          f"= {mf / mb:.1f}x baseline, {(mf - mb) * 1000:.1f} ms over it; commands run: {doc['commands_run'] or 'none'}")
    print(f"scriptdiff collect --no-commands     median {mn * 1000:7.1f} ms  (min {min(files_only) * 1000:.1f}) "
          f"= {mn / mb:.1f}x baseline, {(mn - mb) * 1000:.1f} ms over it")
    print(f"distributions read: {len(doc2['distributions'])}; env variables recorded: {len(doc2['env'])}; "
          f"platform: {doc2['platform']}; in-process collect time {doc2['collect_seconds'] * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
