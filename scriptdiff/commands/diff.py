"""scriptdiff diff GPU NPU"""
from __future__ import annotations

import os

from .common import add_output_arguments, emit, fail, options_from

DESCRIPTION = """Compare the GPU side with the NPU side.

GPU and NPU may be files (Python, shell launch scripts, YAML/JSON configs, Megatron logs,
package lists, snapshots) or folders (files paired by relative path). Expected GPU->NPU
substitutions (torch.cuda -> torch.npu, nccl -> hccl, adapter imports, ...) are masked;
what remains is reported with both sides' file, line and value."""


def add_arguments(p) -> None:
    p.add_argument("gpu", nargs="+", metavar="GPU", help="GPU-side file or folder")
    p.add_argument("npu", metavar="NPU", help="NPU-side file or folder")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the parse cache")
    p.add_argument("--git-external", action="store_true", help=argparse_suppress())
    add_output_arguments(p)


def argparse_suppress():
    import argparse

    return argparse.SUPPRESS


def run(args) -> int:
    from ..engine import diff_files

    gpu, npu = list(args.gpu), args.npu
    if args.git_external:
        # path old-file old-hex old-mode new-file new-hex new-mode
        if len(gpu) != 6:
            return fail("git external diff expects 7 arguments")
        gpu, npu = [gpu[1]], gpu[4]
    if len(gpu) != 1:
        return fail("diff takes one GPU path and one NPU path (use `hparams` for several files per side)")
    opts = options_from(args)
    if os.path.isdir(gpu[0]) or os.path.isdir(npu):
        try:
            from ..tree import diff_trees
        except ModuleNotFoundError:
            return fail("folder comparison is not available in this build")
        report = diff_trees(gpu[0], npu, opts)
    else:
        report = diff_files(gpu, [npu], opts)
    return emit(report, args)
