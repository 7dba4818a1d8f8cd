"""scriptdiff dumps GPU_DUMP NPU_DUMP"""
from __future__ import annotations

from .common import ProgressBar, add_output_arguments, emit, prepare, progress_wanted, split_sides
from .data import allow_intermixed

DESCRIPTION = """Compare two runs' msprobe dumps: which call diverges first, and which setting explains it.

  scriptdiff dumps GPU_DUMP NPU_DUMP [--scripts GPU NPU]

Each side is what msprobe's PrecisionDebugger wrote (task statistics, tensor or md5; level
L0, L1 or mix): a dump folder (stepN/rankR/ or procPID/ inside), a step folder, a rank folder
or a dump.json. dump.json is streamed, so a 7B model's dump is read in bounded memory; saved
tensors (dump_tensor_data/) are read only through safe loaders (.npy headers, safetensors,
torch.load(weights_only=True)).

Calls are matched rank by rank, by name, order and module path, through the port's
substitutions (npu_fusion_attention for flash_attn_func or eager attention, npu_rms_norm for
an RMSNorm module, NpuFused optimizers for torch.optim: rules/dumps.yaml); calls without a
counterpart are listed. Each matched call's tensors are compared (dtype, shape, NaN/inf,
arguments, the relative error of Max/Min/Mean/Norm) forward and backward, and the first
divergence in execution order is reported (forward before backward, the earliest call, the
lowest rank) with the calls that follow it. With --scripts, the two setups' scripts are
compared too, and the static findings at the diverging call's lines, in its function, or on
a setting it depends on are its probable cause (or the cause is not in the compared setup).

The thresholds follow Ascend's accuracy guidance (docs/dumps.md). --floor DUMP2 (a second run's
dump of the GPU side, or of --floor-side) sets each call statistic's tolerance from the two
runs' spread: "within the GPU-to-GPU spread (1.80%)", or how far beyond it. --no-cache, --jobs and
--max-bytes apply to the scripts read with --scripts (a dump is read whole, in bounded
memory, whatever its size). Exit status as for `diff`: 0 every matched call agrees, 1 a
divergence (SD8xx findings), 2 a side could not be read."""


SYNOPSIS = "GPU_DUMP NPU_DUMP"


def add_arguments(p) -> None:
    allow_intermixed(p)
    p.add_argument("paths", nargs="+", metavar="DUMP",
                   help="GPU then NPU: a dump, step or rank folder, or a dump.json a side")
    p.add_argument("--scripts", nargs=2, metavar=("GPU", "NPU"),
                   help="the two setups' script folders (or files): link the first divergence to their findings")
    p.add_argument("--rtol", type=float, default=0.5,
                   help="a statistic's relative error beyond which a tensor differs (default 0.5, Ascend's guidance)")
    p.add_argument("--output-rtol", type=float, default=0.1,
                   help="an output's Max relative error beyond which a call brought a difference in, "
                        "while its inputs agree within --input-rtol (default 0.1)")
    p.add_argument("--input-rtol", type=float, default=0.01, help="see --output-rtol (default 0.01)")
    p.add_argument("--atol", type=float, default=1e-6,
                   help="the smallest magnitude a relative error divides by (default 1e-6)")
    p.add_argument("--chain", type=int, default=10, metavar="N",
                   help="divergent calls listed after the first (default 10)")
    p.add_argument("--window", type=int, default=256, metavar="N",
                   help="calls of each side the matcher looks ahead to pair them (default 256)")
    p.add_argument("--floor", metavar="DUMP2",
                   help="a second run's dump of one side: its spread from the first sets each call statistic's "
                        "tolerance (at least the thresholds)")
    p.add_argument("--floor-side", choices=("gpu", "npu"), default="gpu",
                   help="the side --floor is a second run of (default gpu)")
    p.add_argument("--progress", action="store_true", help="show a progress bar even when stderr is not a terminal")
    p.add_argument("--baseline", metavar="FILE", help="report only findings not in this baseline file")
    add_output_arguments(p)


def run(args) -> int:
    api, opts = prepare(args)
    st = api.dumps_settings(rtol=args.rtol, output_rtol=args.output_rtol, input_rtol=args.input_rtol,
                            atol=args.atol, chain=args.chain, window=args.window)
    bar = ProgressBar(progress_wanted(args.progress), "reading dumps")
    gpu, npu = split_sides(args.paths, "dumps", several=False)
    report = api.dumps(gpu[0], npu[0], opts, st, scripts=tuple(args.scripts) if args.scripts else None,
                       progress=bar, floor=args.floor, floor_side=args.floor_side)
    return emit(report, args)
