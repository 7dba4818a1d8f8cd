"""scriptdiff diff GPU NPU"""
from __future__ import annotations

import argparse
import os

from .common import add_engine_arguments, add_output_arguments, emit, prepare, split_sides

DESCRIPTION = """Compare the GPU side with the NPU side.

  scriptdiff diff GPU NPU                  two files, two folders, or REV:path
  scriptdiff diff GPU... vs NPU...         several files a side, read together as one run
  scriptdiff diff PATH                     one file's (or folder's) GPU run against its NPU run

With one path (a file, a folder, or REV:path), or `--git REV -- PATH...` with one
revision, the file's GPU run is compared with its NPU run: code that tests the device
(`if is_torch_npu_available():`, `if command -v npu-smi`) is read once per device
(docs/devices.md).

GPU and NPU may be files (Python, shell launch scripts, YAML/JSON configs, Megatron logs,
package lists, snapshots) or folders (files paired by relative path and rename rules:
train.py <-> train_npu.py, *_gpu.* <-> *_npu.*, gpu/ <-> npu/). Either side may be
REV:path, read from the git repository without touching the work tree:
  scriptdiff diff gpu-branch:train.py npu-branch:train.py
  scriptdiff diff --git gpu-branch npu-branch [PATH...]     (whole trees, or these paths)
Expected GPU->NPU substitutions (torch.cuda -> torch.npu, nccl -> hccl, adapter imports,
...) are masked; what remains is reported with both sides' file, line and value.

As git's external diff (GIT_EXTERNAL_DIFF=scriptdiff git diff) it is called with git's
seven arguments and always exits 0, so that git goes on to the next file. As a difftool
(git difftool -x scriptdiff) it is called with two paths and no command: that is
`scriptdiff diff LOCAL REMOTE` (an added or deleted file's /dev/null side is empty). Either
way each side reads the program and configs its file references from the revision git
compares on that side (the index, HEAD, or the revisions the `git diff` names), never from
the work tree of the other; where that revision cannot be told, a note says so and neither
side's references are read."""


SYNOPSIS = "GPU [NPU] | GPU... vs NPU..."


def add_arguments(p) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="GPU then NPU (file, folder or REV:path); several files a side: GPU... vs NPU...; "
                        "one path: its GPU run against its NPU run")
    p.add_argument("--git", action="store_true",
                   help="GPU and NPU are revisions: compare their trees (optionally only the PATHs that follow)")
    p.add_argument("--repo", default=".", help="the git repository for REV:path and --git (default: .)")
    p.add_argument("--baseline", metavar="FILE", help="report only findings not in this baseline file")
    add_engine_arguments(p)
    p.add_argument("--git-external", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--git-path", help=argparse.SUPPRESS)  # under git difftool: the path GPU and NPU are sides of
    add_output_arguments(p)



def run(args) -> int:
    api, opts = prepare(args)
    if args.git or args.git_external:  # revisions and paths, or git's own arguments: taken as they come
        args.gpu, args.npu = args.paths[:-1] or args.paths, args.paths[-1] if len(args.paths) > 1 else None
    else:
        gpu, npu = split_sides(args.paths, "diff", one=True)
        args.gpu, args.npu = gpu, (npu[0] if len(npu) == 1 else npu or None)
    if args.git_external:
        report = api.external_diff([*args.gpu, args.npu], opts)
        emit(report, args)
        return 0  # git stops at the first external diff that fails
    if not args.git and len(args.gpu) == 1 and args.npu is not None and (args.git_path or os.devnull in (args.gpu[0], args.npu)):
        # `git difftool -x scriptdiff`: LOCAL and REMOTE are one path's sides (an added or
        # deleted file's /dev/null side is read as an empty file, not refused as a device)
        name = args.git_path or (args.npu if args.gpu[0] == os.devnull else args.gpu[0])
        report = api.external_diff([name, args.gpu[0], "", "100644", args.npu, "", "100644"], opts)
        return emit(report, args)
    report = api.diff(list(args.gpu), args.npu, opts, git=args.git, repo=args.repo)
    return emit(report, args)
