"""Hashing throughput of `scriptdiff data fingerprint` on a generated 2 GB file.

Compared, in the same session and on the same file, with b3sum when it is installed and
with sha256sum (coreutils) otherwise or as well. Each tool runs several times; the median
is printed with the ratio scriptdiff / baseline (above 1: scriptdiff is faster). The file
is written first, so all runs read it from the page cache: this measures hashing, not the
disk. The generated file lives in a temporary folder that is deleted at the end.

    PYTHONPATH=$PWD python benchmarks/bench_hash.py [--size-gb 2] [--runs 5]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_file(path: str, size: int) -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    chunk = 64 * 1024 * 1024
    with open(path, "wb") as fh:
        left = size
        while left:
            n = min(chunk, left)
            fh.write(rng.integers(0, 256, n, dtype=np.uint8).tobytes())
            left -= n


def timed(cmd: list[str], runs: int, env=None) -> list[float]:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
        out.append(time.perf_counter() - t)
    return out


def interleaved(cmds: list[tuple[list[str], dict | None]], runs: int) -> list[list[float]]:
    """Each command timed `runs` times, taking turns, so that a change of load on the shared
    machine falls on all of them alike."""
    out: list[list[float]] = [[] for _ in cmds]
    for _ in range(runs):
        for i, (cmd, env) in enumerate(cmds):
            out[i] += timed(cmd, 1, env)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-gb", type=float, default=2.0)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    size = int(args.size_gb * 1024 ** 3)
    tmp = tempfile.mkdtemp(prefix="scriptdiff-bench-hash-")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    # `python -m scriptdiff` looks in the working folder first: run from the temporary one, so
    # the build measured is ROOT's even when the benchmark is started from another checkout
    here = os.getcwd()
    os.chdir(tmp)
    try:
        path = os.path.join(tmp, "data.bin")
        t = time.perf_counter()
        make_file(path, size)
        print(f"generated {size / 1024 ** 3:.2f} GiB in {time.perf_counter() - t:.1f} s ({tmp}); cpus: {os.cpu_count()}")
        gib = size / 1024 ** 3
        rows = []
        # the baseline: blake3 over mmap in a fresh Python (what the CLI would be with
        # nothing but the hash to do), taking turns with the CLI
        fresh_cmd = [sys.executable, "-c", "import blake3, mmap, sys\n"
                     "with open(sys.argv[1], 'rb') as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:\n"
                     "    print(blake3.blake3(m, max_threads=blake3.blake3.AUTO).hexdigest())", path]
        sd, fresh = interleaved([([sys.executable, "-m", "scriptdiff", "data", "fingerprint", path, "-o",
                                   os.path.join(tmp, "m.json")], env), (fresh_cmd, None)], args.runs)
        rows.append(("scriptdiff data fingerprint (blake3, CLI incl. start-up)", sd))
        sys.path.insert(0, ROOT)
        from scriptdiff.checks.hashing import SampleSpec, hash_file

        lib = []
        for _ in range(args.runs):
            t = time.perf_counter()
            hash_file(path)
            lib.append(time.perf_counter() - t)
        rows.append(("scriptdiff hash_file (in process)", lib))
        smp = timed([sys.executable, "-m", "scriptdiff", "data", "fingerprint", "--sample", path, "-o",
                     os.path.join(tmp, "s.json")], args.runs, env)
        rows.append((f"scriptdiff data fingerprint --sample ({SampleSpec().mode()})", smp))
        baselines = []
        rows.append(("python -c blake3 over mmap (fresh process)", fresh))
        baselines.append(("blake3 over mmap in a fresh Python", fresh))
        for tool in ("b3sum", "sha256sum"):
            exe = shutil.which(tool)
            if exe:
                times = timed([exe, path], args.runs)
                rows.append((tool, times))
                baselines.append((tool, times))
        print(f"\n{'tool':<62} {'median s':>9} {'GiB/s':>7}")
        for name, times in rows:
            med = statistics.median(times)
            print(f"{name:<62} {med:>9.3f} {gib / med:>7.2f}")
        sd_med = statistics.median(sd)
        for tool, times in baselines:
            print(f"ratio: scriptdiff fingerprint is {statistics.median(times) / sd_med:.2f}x the speed of {tool}")
        if not any(t == "b3sum" for t, _ in baselines):
            print("(b3sum is not installed here; sha256sum is the baseline)")
    finally:
        os.chdir(here)
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
