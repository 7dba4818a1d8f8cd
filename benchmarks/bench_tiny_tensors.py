"""Time and peak memory of `scriptdiff weights` on two checkpoints of many tiny tensors.

Per-byte cost is measured by bench_weights.py; this measures the per-tensor cost: two
safetensors files of N one-element F32 tensors (600,000 by default, a 45 MB header each),
the NPU file with one tensor's value changed. The planted difference must be the one
finding (SD rule "tensor-values-differ" on that tensor), so a faster run that misses it
fails. Each run is a fresh process under /usr/bin/time -v (peak RSS, wall clock); with
--code DIR another checkout (the baseline) is measured side by side in the same session.

    python benchmarks/bench_tiny_tensors.py [--tensors 600000] [--runs 3] [--code /tmp/base]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MiB = 1024 * 1024


def write(path: str, n: int, changed: int | None) -> None:
    """N one-element F32 tensors `layers.<i>.w` with value i (tensor `changed` gets -1)."""
    header = {}
    for i in range(n):
        header[f"layers.{i}.w"] = {"dtype": "F32", "shape": [1], "data_offsets": [4 * i, 4 * i + 4]}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    data = bytearray(struct.pack(f"<{n}f", *range(n)))
    if changed is not None:
        data[4 * changed:4 * changed + 4] = struct.pack("<f", -1.0)
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(h)) + h)
        fh.write(data)


def timed(cmd: list[str], env: dict) -> tuple[float, int, int, bytes]:
    """(wall seconds, peak RSS bytes, exit status, stdout) under /usr/bin/time -v."""
    p = subprocess.run(["/usr/bin/time", "-v"] + cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    err = p.stderr.decode("utf-8", "replace")
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", err).group(1)) * 1024
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", err)
    secs = int(wall.group(1) or 0) * 3600 + int(wall.group(2)) * 60 + float(wall.group(3))
    return secs, rss, p.returncode, p.stdout


def measure(label: str, code: str, g: str, n: str, changed: int, runs: int) -> bool:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = code
    cmd = [sys.executable, "-m", "scriptdiff", "weights", g, n, "--format", "json"]
    rows = [timed(cmd, env) for _ in range(runs)]
    secs = statistics.median(r[0] for r in rows)
    rss = max(r[1] for r in rows)
    doc = json.loads(rows[-1][3] or b"{}")
    found = sorted((f["key"], f["extra"].get("max_abs_diff")) for f in doc.get("findings", []))
    want = [(f"weights:layers.{changed}.w", float(changed + 1))]
    ok = rows[-1][2] == 1 and found == want
    print(f"{label:<10} median {secs:7.2f} s over {runs} run(s), peak RSS {rss / MiB:7.0f} MiB, "
          f"exit {rows[-1][2]}, findings {found[:3]}{' ...' if len(found) > 3 else ''} -> "
          f"{'planted difference found' if ok else 'WRONG RESULT'}")
    return ok


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tensors", type=int, default=600_000)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--code", metavar="DIR", help="also measure this checkout (e.g. the baseline)")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="scriptdiff-bench-tiny-")
    try:
        g, n = os.path.join(tmp, "gpu.safetensors"), os.path.join(tmp, "npu.safetensors")
        changed = args.tensors // 2
        write(g, args.tensors, None)
        write(n, args.tensors, changed)
        print(f"2 x {args.tensors:,} tensors, {os.path.getsize(g) / MiB:.1f} MiB each; cpus: {os.cpu_count()}")
        ok = True
        if args.code:
            ok &= measure("baseline", os.path.abspath(args.code), g, n, changed, args.runs)
        ok &= measure("this", ROOT, g, n, changed, args.runs)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
