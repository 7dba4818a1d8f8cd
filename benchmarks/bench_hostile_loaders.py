"""Hostile inputs for the shared loaders: peak memory and time of whole runs.

    python benchmarks/bench_hostile_loaders.py [--runs N] [--mb 40] [--case NAME]

Cases:
  json-list     two config JSON files, each `{"data": [1, 1, ...]}` of about --mb megabytes
                (20 million elements at 40 MB), the last element differing: `scriptdiff diff`
  laughs        a billion-laughs YAML config (8 levels of 9 aliases: 9**8 = 43 million strings in 380 bytes)
  nested        a config JSON nested 100,000 levels deep

Each run is `/usr/bin/time -v python -m scriptdiff diff GPU NPU --no-cache`; the script
prints the median wall time, the peak RSS (maximum resident set size), the exit status and
the size of the report. `--src DIR` runs the package in DIR instead (PYTHONPATH), so the
base and the branch are measured side by side with one environment.
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

LAUGHS = "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},"
    f"*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)}]\n" for i in range(7))


def make(case: str, d: Path, mb: int) -> tuple[Path, Path]:
    g, n = d / "gpu", d / "npu"
    g.mkdir(exist_ok=True)
    n.mkdir(exist_ok=True)
    if case == "json-list":
        count = mb * 1_000_000 // 2
        body = "1," * (count - 1)
        (g / "cfg.json").write_text('{"data": [' + body + "1]}\n")
        (n / "cfg.json").write_text('{"data": [' + body + "2]}\n")
        return g / "cfg.json", n / "cfg.json"
    if case == "laughs":
        (g / "cfg.yaml").write_text("lr: 1\n")
        (n / "cfg.yaml").write_text(LAUGHS)
        return g / "cfg.yaml", n / "cfg.yaml"
    if case == "nested":
        (g / "cfg.json").write_text('{"lr": 1}\n')
        (n / "cfg.json").write_text('{"x": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
        return g / "cfg.json", n / "cfg.json"
    raise SystemExit(f"unknown case {case}")


def run(gpu: Path, npu: Path, out: Path, src: str | None) -> tuple[float, int, int, int]:
    # --max-bytes above the input: the reader itself is measured, not the size cap's refusal
    cmd = ["/usr/bin/time", "-v", sys.executable, "-m", "scriptdiff", "diff", str(gpu), str(npu), "--no-cache",
           "--max-bytes", str(10**9)]
    env = bench_env({"PYTHONPATH": src} if src else None)
    with open(out, "wb") as fh:  # run from the temporary folder: `-m` puts the working folder first on sys.path
        p = subprocess.run(cmd, stdout=fh, stderr=subprocess.PIPE, env=env, text=True, cwd=out.parent)
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", p.stderr)
    h, m, s = wall.groups()
    secs = int(h or 0) * 3600 + int(m) * 60 + float(s)
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1))
    status = int(re.search(r"Exit status: (\d+)", p.stderr).group(1))
    return secs, rss, status, out.stat().st_size


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--mb", type=int, default=40)
    ap.add_argument("--case", action="append", choices=["json-list", "laughs", "nested"])
    ap.add_argument("--src", help="run the scriptdiff package in this folder (e.g. `git archive BASE scriptdiff "
                                   "rules | tar -x -C DIR`); default: the installed one")
    args = ap.parse_args()
    for case in args.case or ["laughs", "nested", "json-list"]:
        with tempfile.TemporaryDirectory() as tmp:
            gpu, npu = make(case, Path(tmp), args.mb)
            results = [run(gpu, npu, Path(tmp) / "report.txt", args.src) for _ in range(args.runs)]
        secs = statistics.median(r[0] for r in results)
        rss = max(r[1] for r in results)
        print(f"{case:10} median {secs:7.2f} s  peak RSS {rss / 1024:8.1f} MB  exit {results[0][2]}  "
              f"report {results[0][3]:,} bytes")


if __name__ == "__main__":
    main()
