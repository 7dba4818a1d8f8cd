"""scriptdiff env GPU NPU: compare two environments."""
from __future__ import annotations

import os

from .common import VS, add_output_arguments, deprecated, emit, prepare, split_sides

DESCRIPTION = """Compare the GPU side's environment with the NPU side's.

  scriptdiff env GPU NPU
  scriptdiff env GPU... vs NPU...      several files a side, merged
  scriptdiff env NPU                   one side: the NPU stack against the Ascend tables

Each side is a `scriptdiff collect` snapshot (.json), a requirements.txt or `pip freeze`
output, `pip list` / `pip list --format=json` output, or a conda environment.yml; several
files per side are merged (e.g. a snapshot and the project's requirements.txt). Packages are
matched by PEP 503 name and compared as PEP 440 versions; local build tags (+cu121, +cpu)
are ignored unless --strict-local. Expected GPU/NPU counterparts (flash-attn <-> torch_npu,
megatron-core <-> + mindspeed, deepspeed <-> + deepspeed-npu, Ascend apex) are masked;
CUDA vs CANN and NVIDIA vs Ascend driver are shown side by side as info.

The NPU stack is also checked against the published Ascend version tables (torch_npu <->
PyTorch <-> CANN, commercial vs community CANN builds, the HDK installed with each CANN,
MindSpeed <-> Megatron core, MindSpeed-LLM <-> MindSpeed; rules/ascend_versions.yaml, with
the source and date of each table; no network call). With one file list only
(`scriptdiff env env-npu.json`) that advisory is all that is reported. Text output starts
with the NPU stack: component, version, kind (commercial or community), newest known."""


SYNOPSIS = "[GPU] NPU | GPU... vs NPU..."


def add_arguments(p) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="GPU then NPU snapshot or package list; several a side: GPU... vs NPU...; given alone, the "
                        "NPU side (one-side mode: the NPU stack advisory)")
    p.add_argument("--strict-local", action="store_true",
                   help="also compare local version tags (+cu121 vs +cpu): a difference is a warning (SD406)")
    add_output_arguments(p)


def run(args) -> int:
    api, opts = prepare(args)
    if len(args.paths) <= 2 and VS not in args.paths and any("," in p and not os.path.exists(p) for p in args.paths):
        # the old spelling of several files a side, `a.json,b.txt` (still read, with a note)
        deprecated("files separated by commas", "`env GPU... vs NPU...`")
        sides = [[x for x in p.split(",") if x] for p in args.paths]
        gpu, npu = sides[0], sides[1] if len(sides) == 2 else []
    else:
        gpu, npu = split_sides(args.paths, "env", one=True)
    if not npu:  # one side: it is the NPU side, checked against the Ascend tables
        gpu, npu = [], gpu
    report = api.env(gpu, npu, opts, strict_local=bool(args.strict_local))
    return emit(report, args)
