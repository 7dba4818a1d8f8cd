"""Small helpers shared by the benchmark scripts: time whole commands, print medians."""
from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import time


def bench_env(extra: dict | None = None) -> dict:
    """The environment for timed commands: as a user's shell has it. PYTHONDONTWRITEBYTECODE
    (set in some sandboxes) is dropped, since without .pyc files every run recompiles every
    module, which no installed tool pays."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(extra or {})
    return env


def time_cmd(cmd: list[str], runs: int = 9, warmup: int = 1, **kw) -> list[float]:
    kw.setdefault("env", bench_env())
    for _ in range(warmup):
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)
        out.append(time.perf_counter() - t)
    return out


def time_fn(fn, runs: int = 7, warmup: int = 1) -> list[float]:
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def med(xs: list[float]) -> float:
    return statistics.median(xs)


def row(label: str, xs: list[float], base: float | None = None) -> str:
    m = med(xs)
    s = f"{label:<48} median {m * 1000:8.1f} ms  (min {min(xs) * 1000:.1f}, max {max(xs) * 1000:.1f}, n={len(xs)})"
    if base:
        s += f"  ratio {m / base:.2f}x"
    return s


PY = sys.executable


def measured(cmd: list[str], env: dict | None = None) -> tuple[float, float, int, str]:
    """(seconds, CPU seconds (user + system), peak RSS in KiB, stdout) of one run of `cmd` under
    /usr/bin/time -v. The CPU time is the steadier figure on a shared machine."""
    t = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True, env=env or bench_env())
    dt = time.perf_counter() - t
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
    cpu = sum(float(x) for x in re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)", p.stderr))
    return dt, cpu, int(m.group(1)) if m else -1, p.stdout
