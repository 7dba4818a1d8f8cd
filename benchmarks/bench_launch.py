"""Benchmark: `scriptdiff diff` on a 300-line GPU/NPU launch-script pair.

Writes a generated Megatron-style pair (exports, variables, ${VAR:-d} defaults, $((...)),
multi-line flag strings, arrays, a torchrun launcher; the NPU side renames the
environment variables, uses arrays and --k=v, and changes three values) to a temporary
folder, then times, in this process:

  baseline  the plain line diff of the same pair (lang/text.py, difflib), the cheapest
            comparison anyone would run;
  parse     tree-sitter-bash parse + evaluation of both scripts (lang/shell.extract);
  diff      the whole pipeline, pipeline.diff_files (parse, facts, defaults, derived keys,
            compare, findings).

Prints the median of --runs runs (after one warm-up) for each, and the ratio of diff to the
baseline. Run: PYTHONPATH=. python benchmarks/bench_launch.py [--runs 21] [--lines 300]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def make_pair(lines: int) -> tuple[str, str]:
    gpu = ["#!/bin/bash", "# generated benchmark script", "export CUDA_DEVICE_MAX_CONNECTIONS=1",
           "export CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7", "export NCCL_DETERMINISTIC=1", "export NCCL_IB_DISABLE=0"]
    npu = ["#!/bin/bash", "# generated benchmark script", "source /usr/local/Ascend/ascend-toolkit/set_env.sh",
           "export CUDA_DEVICE_MAX_CONNECTIONS=1", "export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3,4,5,6,7",
           "export HCCL_DETERMINISTIC=true", "export TASK_QUEUE_ENABLE=2"]
    common = ["GPUS=${GPUS:-8}", "NNODES=${NNODES:-1}", "WORLD=$((GPUS * NNODES))", "TP=2", "PP=2",
              "LR=1.0e-4", "MIN_LR=1.0e-5", "MBS=1", "GBS=$((WORLD * 8))"]
    gpu += common
    npu += [c.replace("LR=1.0e-4", "LR=0.0001") for c in common]
    n_flags = max(10, (lines - len(gpu) - 12) // 2)
    gpu.append('GPT_ARGS="')
    npu.append("GPT_ARGS=(")
    for i in range(n_flags):
        gpu.append(f"    --custom-knob-{i} {i} \\")
        val = i + 1 if i in (7, 70, n_flags - 1) else i
        npu.append(f"    --custom-knob-{i}={val}")
    gpu.append('"')
    npu.append(")")
    gpu.append('MODEL_ARGS="')
    npu.append("MODEL_ARGS=(")
    for i in range(n_flags):
        gpu.append(f"    --model-option-{i} \\" if i % 3 == 0 else f"    --model-value-{i} {i}.5 \\")
        npu.append(f"    --model-option-{i}" if i % 3 == 0 else f"    --model-value-{i} \"{i}.50\"")
    gpu.append('"')
    npu.append(")")
    launch = ("torchrun --nproc_per_node $GPUS --nnodes $NNODES pretrain_gpt.py \\\n"
              "    --tensor-model-parallel-size $TP --pipeline-model-parallel-size $PP \\\n"
              "    --lr $LR --min-lr $MIN_LR --micro-batch-size $MBS --global-batch-size $GBS \\\n")
    gpu.append(launch + "    $GPT_ARGS $MODEL_ARGS --use-flash-attn --bf16")
    npu.append(launch.replace("torchrun --nproc_per_node $GPUS --nnodes $NNODES",
                              "torchrun --nproc_per_node=$GPUS --nnodes=$NNODES")
               + '    "${GPT_ARGS[@]}" "${MODEL_ARGS[@]}" --bf16 --use-flash-attn')
    return "\n".join(gpu) + "\n", "\n".join(npu) + "\n"


def median_time(fn, runs: int) -> float:
    import gc

    fn()  # warm-up (imports, caches)
    times = []
    for _ in range(runs):
        gc.collect()
        gc.disable()  # as timeit does: a collection pause is not the code's time
        try:
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        finally:
            gc.enable()
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--lines", type=int, default=300)
    args = ap.parse_args()

    from scriptdiff.run import engine
    from scriptdiff.model import Options, SideContext
    from scriptdiff.run.pipeline import diff_files
    from scriptdiff.lang import shell, text
    from scriptdiff.inputs.sources import read_path

    g_text, n_text = make_pair(args.lines)
    with tempfile.TemporaryDirectory() as d:
        g = Path(d) / "gpu" / "pretrain.sh"
        n = Path(d) / "npu" / "pretrain.sh"
        g.parent.mkdir()
        n.parent.mkdir()
        g.write_text(g_text)
        n.write_text(n_text)
        gsrc, nsrc = read_path(g), read_path(n)

        def baseline():
            text.diff_pair(read_path(g), read_path(n))

        def parse():
            shell.extract(read_path(g), SideContext("gpu"))
            shell.extract(read_path(n), SideContext("npu"))

        def diff():
            engine._MEMO.clear()  # per-process memo of parse results: a fresh run has none
            return diff_files([str(g)], [str(n)], Options(use_cache=False))

        rep = diff()
        b = median_time(baseline, args.runs)
        p = median_time(parse, args.runs)
        t = median_time(diff, args.runs)
    errors = sum(1 for f in rep.findings if f.severity in ("error", "warning"))
    print(f"launch-script pair: GPU {len(g_text.splitlines())} lines, NPU {len(n_text.splitlines())} lines; "
          f"{errors} warning/error findings (expected: the 3 injected knob changes), "
          f"{len(rep.masked)} masked; median of {args.runs} runs")
    print(f"  baseline (text line diff)     {b * 1000:8.2f} ms")
    print(f"  parse + evaluate both sides   {p * 1000:8.2f} ms")
    print(f"  scriptdiff diff (pipeline)    {t * 1000:8.2f} ms   ratio to baseline {t / b:6.1f}x")
    del gsrc, nsrc
    return 0


if __name__ == "__main__":
    sys.exit(main())
