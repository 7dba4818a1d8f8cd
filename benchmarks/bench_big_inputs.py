"""Benchmark: peak memory and wall time of `scriptdiff diff` on huge and hostile inputs.

Generates, in a temporary folder, one GPU/NPU pair per case:

  chain8000     `x = a and a and ...` of 8,000 terms (48 KB, valid Python): libcst's native
                parser overflowed its stack on it (a segmentation fault)
  py-typical    ~480 KB of training code (the fixtures' scripts, renamed and concatenated),
                the NPU side ported (.cuda() -> .npu(), torch.cuda -> torch.npu, ...)
  py-800k       the same at ~800 KB (over the 500 KB default now: compared as text)
  py-dense      a 200 KB literal list of 100,000 numbers (500 syntax nodes per KB)
  py-assign     216 KB of short assignments (885 syntax nodes per KB: over the node budget)
  sh-oneline    a 157 KB one-line launch script of 10,000 flags, every value changed on NPU

and runs each through `/usr/bin/time -v python -m scriptdiff diff --no-cache -f json`,
printing the exit status, peak RSS (MB) and wall time (s), median of --runs runs. With
`--baseline DIR` (a checkout of an older scriptdiff, e.g. `git worktree add /tmp/base
<rev>`), the same cases run against it too, side by side: before / after.

    PYTHONPATH=$PWD python benchmarks/bench_big_inputs.py [--runs 1] [--baseline DIR] [--only CASE]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks._timing import bench_env  # noqa: E402


def _fixtures_python() -> str:
    parts = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "fixtures" / "python").glob("*/gpu/*.py"))]
    return "\n\n".join(parts)


def _port(text: str) -> str:
    return "import torch_npu\n" + text.replace("torch.cuda", "torch.npu").replace(".cuda()", ".npu()") \
        .replace('"nccl"', '"hccl"').replace("lr=3e-4", "lr=1e-4", 3)


def _training_code(size: int) -> str:
    base = _fixtures_python()
    out, i, total = [], 0, 0
    while total < size:
        chunk = base.replace("def ", f"def v{i}_").replace("class ", f"class V{i}_")
        out.append(chunk)
        total += len(chunk) + 2
        i += 1
    return "\n\n".join(out)


def cases() -> dict[str, tuple[str, str, list[str]]]:
    """name -> (GPU text, NPU text, extra arguments)"""
    typical = _training_code(480_000)
    big = _training_code(800_000)
    flags = " ".join(f"--opt-{i} {i}" for i in range(10_000))
    nflags = " ".join(f"--opt-{i} {i + 1}" for i in range(10_000))
    return {
        "chain8000": ("x = 1\n", "x = " + " and ".join(["a"] * 8000) + "\n", []),
        "py-typical": (typical, _port(typical), []),
        "py-800k": (big, _port(big), []),
        "py-dense": ("x = [" + ",".join(["1"] * 100_000) + "]\n", "x = [" + ",".join(["1"] * 99_999) + ",2]\n", []),
        "py-assign": ("".join(f"a{i}=b.c(d,e)[f]\n" for i in range(12_000)),
                      "".join(f"a{i}=b.c(d,e)[f]\n" for i in range(11_999)) + "z=1\n", []),
        "sh-oneline": (f"#!/bin/bash\ntorchrun --nproc_per_node 8 train.py {flags}\n",
                       f"#!/bin/bash\ntorchrun --nproc_per_node 8 train.py {nflags}\n",
                       []),
    }


def measure(cmd: list[str], env: dict, cwd: str) -> tuple[int, float, float]:
    """(exit status, peak RSS in MB, wall seconds) of one run under /usr/bin/time -v."""
    r = subprocess.run(["/usr/bin/time", "-v", *cmd], cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    rss = wall = 0.0
    for line in r.stderr.splitlines():
        line = line.strip()
        if line.startswith("Maximum resident set size"):
            rss = int(line.rsplit(":", 1)[1]) / 1024
        elif line.startswith("Elapsed (wall clock)"):
            t = line.rsplit(" ", 1)[1].split(":")
            wall = sum(float(x) * 60 ** i for i, x in enumerate(reversed(t)))
    status = r.returncode
    if "Command terminated by signal" in r.stderr:
        status = -int(r.stderr.split("Command terminated by signal", 1)[1].split()[0])
    return status, rss, wall


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--baseline", help="a checkout of an older scriptdiff to compare with")
    ap.add_argument("--only", action="append", help="run only this case (repeatable)")
    args = ap.parse_args(argv)
    trees = [("after", str(ROOT))] + ([("before", args.baseline)] if args.baseline else [])
    print(f"{'case':12} {'tree':7} {'exit':>5} {'peak RSS MB':>12} {'wall s':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, (gtext, ntext, extra) in cases().items():
            if args.only and name not in args.only:
                continue
            suffix = ".sh" if name.startswith("sh-") else ".py"
            d = Path(tmp) / name
            d.mkdir()
            (d / f"g{suffix}").write_text(gtext, encoding="utf-8")
            (d / f"n{suffix}").write_text(ntext, encoding="utf-8")
            for label, tree in trees:
                env = bench_env({"PYTHONPATH": tree})
                cmd = [sys.executable, "-m", "scriptdiff", "diff", "--no-cache", "-f", "json", *extra,
                       f"g{suffix}", f"n{suffix}"]
                runs = [measure(cmd, env, str(d)) for _ in range(args.runs)]
                status = runs[-1][0]
                rss = statistics.median(r[1] for r in runs)
                wall = statistics.median(r[2] for r in runs)
                print(f"{name:12} {label:7} {status:>5} {rss:>12.0f} {wall:>8.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
