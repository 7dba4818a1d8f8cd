"""scriptdiff curves GPU NPU"""
from __future__ import annotations

import shutil
import sys

from .common import add_output_arguments, emit, prepare, split_sides
from .data import ProgressBar, allow_intermixed, progress_wanted

DESCRIPTION = """Compare the GPU and NPU training curves (process data): where do the runs diverge?

  scriptdiff curves GPU NPU [--rtol 0.01] [--plot curves.png]

Each side is a log or metrics export, a folder of them (read together: a resumed run's logs
continue each other), or REV:path in git. The reader of each file is chosen by its content
and says what it recognised: Megatron-LM/MindSpeed iteration and validation lines, HF
Trainer trainer_state.json and its printed metric dicts, LLaMA-Factory trainer_log.jsonl,
verl/OpenRLHF `step:N - key:value` lines, DeepSpeed step and overflow lines, TensorBoard
event files (pip install 'scriptdiff[tensorboard]'), CSV and JSONL exports (W&B).

The runs are aligned by step, or by consumed samples/tokens when their batch sizes differ
(--align), and resampled when they log at different intervals. Every series both log is
measured (GPU is the reference): relative error per point, mean over the first N points,
the whole run and sliding windows, the largest error, the first point beyond --rtol and the
first persistent divergence; per side NaN/inf, skipped, overflow and spike counts. The
verdict is one of Ascend's four kinds: first-step difference, long-term difference,
overflow/NaN/spikes, equal losses with different downstream metrics (or equal).

Text output shows a terminal chart of the loss (--chart SERIES for others, --no-chart);
--errors FILE.csv writes every aligned point (both values, absolute and relative error);
--floor RUN2 (a second run of the GPU side, or of --floor-side) sets each metric's tolerance
from the two runs' spread: "within the GPU-to-GPU spread (1.80%)", or how far beyond it.
--plot FILE.png|FILE.svg draws every main series with its relative error (pip install
'scriptdiff[plot]'); --format markdown embeds that plot. Exit status as for `diff`: 0 equal,
1 a difference (SD7xx findings), 2 a side could not be read or holds no curves."""


SYNOPSIS = "GPU NPU | GPU... vs NPU..."


def add_arguments(p) -> None:
    allow_intermixed(p)
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="GPU then NPU: a log, export, folder or REV:path a side; several files a side (a resumed "
                        "run's logs): GPU... vs NPU...")
    p.add_argument("--rtol", type=float, default=0.01, help="relative tolerance (default 0.01 = 1%%)")
    p.add_argument("--first", type=int, default=10, metavar="N", help="the first N points judged (default 10)")
    p.add_argument("--window", type=int, default=50, metavar="N", help="sliding window in points (default 50)")
    p.add_argument("--spike-z", type=float, default=6.0, metavar="Z",
                   help="robust z-score above which a step-to-step rise is a spike (default 6)")
    p.add_argument("--align", choices=("auto", "step", "samples", "tokens"), default="auto",
                   help="axis: step, or consumed samples/tokens (default auto: samples/tokens when batch sizes differ)")
    p.add_argument("--floor", action="append", default=[], metavar="RUN2",
                   help="a second run of one side (a log, export or folder; repeatable for several files): its "
                        "spread from the first sets each metric's tolerance (at least --rtol)")
    p.add_argument("--floor-side", choices=("gpu", "npu"), default="gpu",
                   help="the side --floor is a second run of (default gpu)")
    p.add_argument("--plot", metavar="FILE", help="draw the curves into FILE.png or FILE.svg (needs matplotlib)")
    p.add_argument("--errors", metavar="FILE.csv",
                   help="write every aligned point of every series: step, GPU, NPU, absolute and relative error")
    p.add_argument("--chart", action="append", default=[], metavar="SERIES",
                   help="text output: chart this series (repeatable; default: the loss)")
    p.add_argument("--no-chart", action="store_true", help="text output: no terminal chart")
    p.add_argument("--progress", action="store_true", help="show a progress bar even when stderr is not a terminal")
    p.add_argument("--baseline", metavar="FILE", help="report only findings not in this baseline file")
    add_output_arguments(p)


def run(args) -> int:
    api, opts = prepare(args, outputs=False)
    gpu, npu = split_sides(args.paths, "curves")
    bar = ProgressBar(progress_wanted(args.progress), "reading logs")
    report = api.curves(gpu[0] if len(gpu) == 1 else gpu, npu[0] if len(npu) == 1 else npu, opts, rtol=args.rtol, first=args.first, window=args.window,
                        spike_z=args.spike_z, align=args.align, progress=bar, floor=args.floor or None,
                        floor_side=args.floor_side)
    if args.plot and "curves" in report.details:
        w, h = api.curves_view(report, "plot", path=args.plot)
        print(f"scriptdiff: plot {w}x{h} -> {args.plot}", file=sys.stderr)
    if args.errors and "curves" in report.details:
        n = api.curves_view(report, "errors", path=args.errors)
        print(f"scriptdiff: {n} point(s) -> {args.errors}", file=sys.stderr)
    if args.plot and "curves" in report.details:  # markdown embeds it, relative to the document
        report.details["curves_plot"] = args.plot
    if args.format == "text" and not args.no_chart:
        width = max(24, min(100, shutil.get_terminal_size((100, 24)).columns - 14))
        report.overview = report.overview + [""] + api.curves_view(report, "chart", width=width,
                                                                 series=args.chart or None)
    return emit(report, args)
