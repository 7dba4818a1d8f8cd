"""Long chains through the Python evaluator (issue 40): time and peak memory of whole runs.

    python benchmarks/bench_values.py [--runs N] [--case NAME] [--size N] [--src DIR]

Cases (each one file that runs on both devices, `scriptdiff diff FILE --no-cache`):
  aliases   a device chosen by a test, then `D1 = D0`, `D2 = D1`, ... 20,000 names deep, used
            in `.to(D19999)`: read in linear time (was 40 s: every statement against every other)
  helpers   5,000 functions each returning the one before, the first a device test, tested by
            `if h4999():`: followed to budget.CALL_DEPTH, the test then left as written and said
            in the account (was a RecursionError: "nested too deeply to analyse")
  lr        the same 5,000 helpers returning a learning rate chosen by the device, read as a
            setting (`AdamW(lr=h4999())`): unknown past the call depth, said once
  elif      an `if`/`elif` chain on the device as deep as the structural parser takes (190
            branches), and one of 10,000 (refused by the parser's guard at once, with its reason)

Prints, per case, the median wall time, the peak RSS, the exit status and the last lines of
the report (so the result is checked by eye: no timed assertion anywhere). `--src DIR` runs the
package in DIR instead (PYTHONPATH), to measure a base and a branch side by side.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
from _timing import bench_env  # noqa: E402

HEAD = "import torch\nfrom transformers import is_torch_npu_available\n\n"


def make(case: str, d: Path, size: int | None) -> list[Path]:
    out = []
    if case == "aliases":
        n = size or 20_000
        lines = ['D0 = "npu" if is_torch_npu_available() else "cuda"'] + [f"D{i} = D{i - 1}" for i in range(1, n)]
        lines.append(f"x = torch.zeros(3).to(D{n - 1})")
        out.append(("aliases.py", HEAD + "\n".join(lines) + "\n"))
    elif case in ("helpers", "lr"):
        n = size or 5_000
        first = "is_torch_npu_available()" if case == "helpers" else "2e-4 if is_torch_npu_available() else 1e-4"
        lines = [f"def h0():\n    return {first}\n"] + [f"def h{i}():\n    return h{i - 1}()\n" for i in range(1, n)]
        tail = f"if h{n - 1}():\n    x = 1\nelse:\n    x = 2\n" if case == "helpers" else \
            f"\ndef main(model):\n    return torch.optim.AdamW(model.parameters(), lr=h{n - 1}())\n"
        out.append((f"{case}.py", HEAD + "\n\n".join(lines) + "\n" + tail))
    elif case == "elif":
        for n in (size or 190, 10_000):
            lines = ['DEVICE = "npu" if is_torch_npu_available() else "cuda"', "if DEVICE == 'd0':", "    x = 0"]
            lines += [f"elif DEVICE == 'd{i}':\n    x = {i}" for i in range(1, n)]
            lines += ["else:", "    x = -1"]
            out.append((f"elif{n}.py", HEAD + "\n".join(lines) + "\n"))
    paths = []
    for name, text in out:
        p = d / name
        p.write_text(text, encoding="utf-8")
        paths.append(p)
    return paths


def run(path: Path, runs: int, src: str | None) -> tuple[float, float, int, str]:
    env = bench_env({"PYTHONPATH": src} if src else None)
    times, rss, code, report = [], [], 0, ""
    for _ in range(runs):
        r = subprocess.run(["/usr/bin/time", "-v", sys.executable, "-m", "scriptdiff", "diff", str(path), "--no-cache"],
                           capture_output=True, text=True, env=env)
        wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", r.stderr)
        mem = re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr)
        if wall:
            h, m, s = wall.groups()
            times.append((int(h or 0) * 60 + int(m)) * 60 + float(s))
        if mem:
            rss.append(int(mem.group(1)) / 1024)
        code, report = r.returncode, r.stdout
    return statistics.median(times), max(rss) if rss else 0.0, code, report


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--case", choices=("aliases", "helpers", "lr", "elif"), action="append")
    ap.add_argument("--size", type=int, default=None, help="chain length (the case's own by default)")
    ap.add_argument("--src", default=None, help="run the package in this folder (PYTHONPATH)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for case in a.case or ("aliases", "helpers", "lr", "elif"):
            for path in make(case, Path(tmp), a.size):
                wall, rss, code, report = run(path, a.runs, a.src)
                tail = " | ".join(line.strip() for line in report.strip().splitlines()[-2:])
                print(f"{path.name:14} {wall:7.2f} s  {rss:7.0f} MB  exit {code}  {tail[:160]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
