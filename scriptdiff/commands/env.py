"""scriptdiff env GPU NPU: compare two environments."""
from __future__ import annotations

from .common import add_output_arguments, emit, fail, options_from

DESCRIPTION = """Compare the GPU side's environment with the NPU side's.

Each side is a `scriptdiff collect` snapshot (.json), a requirements.txt or `pip freeze`
output, `pip list` / `pip list --format=json` output, or a conda environment.yml; several
files per side are merged (e.g. a snapshot and the project's requirements.txt). Packages are
matched by PEP 503 name and compared as PEP 440 versions; local build tags (+cu121, +cpu)
are ignored unless --strict-local. Expected GPU/NPU counterparts (flash-attn <-> torch_npu,
megatron-core <-> + mindspeed, deepspeed <-> + deepspeed-npu, Ascend apex) are masked;
CUDA vs CANN and NVIDIA vs Ascend driver are shown side by side as info."""


def add_arguments(p) -> None:
    p.add_argument("gpu", metavar="GPU", help="GPU-side snapshot or package list (several: separate with commas)")
    p.add_argument("npu", metavar="NPU", help="NPU-side snapshot or package list (several: separate with commas)")
    p.add_argument("--strict-local", action="store_true",
                   help="also compare local version tags (+cu121 vs +cpu): a difference is a warning (SD406)")
    add_output_arguments(p)


def run(args) -> int:
    import os

    from ..engine import diff_files  # lazy: keeps --help fast

    gpu = [x for x in args.gpu.split(",") if x]
    npu = [x for x in args.npu.split(",") if x]
    for p in gpu + npu:
        if os.path.isdir(p):
            return fail(f"{p}: is a directory; `env` compares snapshot or package-list files")
    opts = options_from(args)
    opts.strict_local = bool(args.strict_local)
    opts.checks = {"environment", "libraries"}
    opts.use_cache = False
    report = diff_files(gpu, npu, opts)
    return emit(report, args)
