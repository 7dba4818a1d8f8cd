"""Time and peak memory of `scriptdiff dumps` on two generated msprobe dumps of N calls.

Each side is a dump folder `step0/rank0/` with a dump.json of --calls calls (default
100,000: layers of RMSNorm, attention, MLP and their backward, in msprobe's names and
record layout, task statistics, level mix: about 40 MB written msprobe's way, indented), a
stack.json grouping them by call site and a construct.json. The NPU side plants one
difference: the softmax of the layer at PLANT (60% of the way) returns float16. Each run of
`scriptdiff dumps GPU NPU -f json` is a fresh process under /usr/bin/time -v (peak RSS);
the baseline is a process that only `json.load`s both dump.json files whole (what a reader
that does not stream pays in memory). Every run must report the planted call as the first
divergence, a dtype change: a fast wrong answer fails the benchmark. Files are deleted at
the end.

    PYTHONPATH=$PWD python benchmarks/bench_dumps.py [--calls 100000] [--runs 3] [--keep DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import bench_env, measured  # noqa: E402


def timed(cmd: list[str]) -> tuple[float, float, int, str]:
    return measured(cmd, bench_env({"PYTHONPATH": ROOT}))

PLANT = 0.6
# one layer's forward calls: (API, op); its module calls come after them, then the backward
LAYER = [("Tensor", "pow"), ("Tensor", "mean"), ("Tensor", "__add__"), ("Torch", "rsqrt"), ("Tensor", "__mul__"),
         ("Functional", "linear"), ("Torch", "matmul"), ("Tensor", "__truediv__"), ("Torch", "softmax"),
         ("Functional", "dropout"), ("Torch", "matmul"), ("Functional", "linear"), ("Tensor", "__add__"),
         ("Functional", "linear"), ("Functional", "gelu"), ("Functional", "linear"), ("Tensor", "__add__")]
MODULES = [("norm", "RMSNorm"), ("attn", "SelfAttention"), ("fc1", "Linear"), ("fc2", "Linear")]


def tensor(rnd: random.Random, noise: random.Random | None = None, dtype: str = "torch.float32") -> dict:
    """A tensor's statistics; the NPU's (`noise`) off by about 1e-4, as two devices' roundings are."""
    m = rnd.uniform(0.5, 3.0)
    e = (lambda: 1 + noise.gauss(0, 1e-4)) if noise is not None else (lambda: 1.0)
    return {"type": "torch.Tensor", "dtype": dtype, "shape": [4, 2048, 4096], "Max": m * e(), "Min": -m * 0.9 * e(),
            "Mean": rnd.uniform(-0.05, 0.05) * e(), "Norm": m * 900.0 * e(), "requires_grad": True}


def write_side(folder: str, calls: int, npu: bool) -> str:
    """Write one side; returns the name of the planted call."""
    os.makedirs(folder, exist_ok=True)
    rnd = random.Random(7)  # the same values on both sides, but for the NPU's rounding noise
    noise = random.Random(11) if npu else None
    per_layer = 2 * (len(LAYER) + len(MODULES))
    layers = max(1, calls // per_layer)
    plant_layer = int(layers * PLANT)
    counters: dict[str, int] = {}
    planted = ""
    stack: dict[str, list] = {}
    construct: dict[str, str | None] = {}
    with open(os.path.join(folder, "dump.json"), "w", encoding="utf-8") as fh:
        fh.write('{\n "task": "statistics",\n "level": "mix",\n "framework": "pytorch",\n "dump_data_dir": null,\n'
                 ' "data": {\n')
        first = True
        for layer in range(layers):
            for direction in ("forward", "backward"):
                names = []
                for api, op in (LAYER if direction == "forward" else list(reversed(LAYER))):
                    k = f"{api}.{op}"
                    i = counters.get(f"{k}.{direction}", 0)
                    counters[f"{k}.{direction}"] = i + 1
                    name = f"{k}.{i}.{direction}"
                    out = tensor(rnd, noise)
                    if npu and direction == "forward" and op == "softmax" and layer == plant_layer:
                        out["dtype"] = "torch.float16"
                    if op == "softmax" and layer == plant_layer and direction == "forward":
                        planted = name
                    rec = ({"input_args": [tensor(rnd, noise)], "input_kwargs": {}, "output": [out]} if direction == "forward"
                           else {"input": [tensor(rnd, noise)], "output": [out]})
                    names.append((name, rec))
                for mod, cls in MODULES:
                    name = f"Module.layers.{layer}.{mod}.{cls}.{direction}.0"
                    rec = ({"input_args": [tensor(rnd, noise)], "input_kwargs": {}, "output": [tensor(rnd, noise)]}
                           if direction == "forward" else {"input": [tensor(rnd, noise)], "output": [tensor(rnd, noise)]})
                    names.append((name, rec))
                for name, rec in names:
                    fh.write(("" if first else ",\n") + f"  {json.dumps(name)}: " + json.dumps(rec, indent=1))
                    first = False
                    site = str(hash(name.split(".")[1]) % 50)
                    stack.setdefault(site, [[], [f"File /workspace/model.py, line {100 + int(site)}, in forward, \n "
                                                 f"x = op(x)", "File /workspace/train.py, line 20, in main, \n loss.backward()"]])
                    stack[site][0].append(name)
                    construct[name] = f"Module.layers.{layer}.attn.SelfAttention.{direction}.0"
        fh.write("\n }\n}\n")
    with open(os.path.join(folder, "stack.json"), "w", encoding="utf-8") as fh:
        json.dump(stack, fh, indent=1)
    with open(os.path.join(folder, "construct.json"), "w", encoding="utf-8") as fh:
        json.dump(construct, fh, indent=1)
    return planted


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--keep", metavar="DIR", help="write the dumps here and keep them")
    args = ap.parse_args()
    base = args.keep or tempfile.mkdtemp(prefix="sd-bench-dumps-")
    try:
        g = os.path.join(base, "gpu", "step0", "rank0")
        n = os.path.join(base, "npu", "step0", "rank0")
        t = time.perf_counter()
        planted = write_side(g, args.calls, npu=False)
        write_side(n, args.calls, npu=True)
        with open(os.path.join(g, "dump.json"), encoding="utf-8") as fh:
            count = len(json.load(fh)["data"])
        size = os.path.getsize(os.path.join(g, "dump.json"))
        print(f"generated 2 dumps of {count:,} calls ({size / 1e6:.1f} MB dump.json each) in "
              f"{time.perf_counter() - t:.1f} s; planted: {planted} returns float16 on NPU")
        load = ("import json,sys\nfor p in sys.argv[1:]:\n    json.load(open(p, encoding='utf-8'))\n")
        bt, bcpu, brss, _ = timed([sys.executable, "-c", load, os.path.join(g, "dump.json"),
                                   os.path.join(n, "dump.json")])
        print(f"baseline  json.load of both dump.json files whole: {bt:6.2f} s ({bcpu:.2f} s CPU), "
              f"peak RSS {brss / 1024:7.1f} MiB")
        times, cpus, rss = [], [], []
        for _ in range(args.runs):
            dt, cpu, kb, out = timed([sys.executable, "-m", "scriptdiff", "dumps", os.path.join(base, "gpu"),
                                      os.path.join(base, "npu"), "-f", "json"])
            doc = json.loads(out)
            first = doc["dumps"]["first"]
            if first is None or first["gpu"] != [planted] or first["kind"] != "dtype":
                print(f"FAIL: the first divergence is {first and first['gpu']} ({first and first['kind']}), "
                      f"not {planted} (dtype)")
                return 1
            matched = doc["dumps"]["ranks"][0]["matched"]
            times.append(dt)
            cpus.append(cpu)
            rss.append(kb)
        print(f"scriptdiff dumps (survey + compare, {matched:,} calls matched): median {statistics.median(times):6.2f} s "
              f"({', '.join(f'{x:.2f}' for x in times)}; {statistics.median(cpus):.2f} s CPU), peak RSS "
              f"{max(rss) / 1024:7.1f} MiB; found {planted} (dtype) every run")
        return 0
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
