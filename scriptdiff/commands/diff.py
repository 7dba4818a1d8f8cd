"""scriptdiff diff GPU NPU"""
from __future__ import annotations

import argparse

import os

from .common import add_engine_arguments, add_output_arguments, emit, fail, options_from

DESCRIPTION = """Compare the GPU side with the NPU side.

GPU and NPU may be files (Python, shell launch scripts, YAML/JSON configs, Megatron logs,
package lists, snapshots) or folders (files paired by relative path and rename rules:
train.py <-> train_npu.py, *_gpu.* <-> *_npu.*, gpu/ <-> npu/). Either side may be
REV:path, read from the git repository without touching the work tree:
  scriptdiff diff gpu-branch:train.py npu-branch:train.py
  scriptdiff diff --git gpu-branch npu-branch [PATH...]     (whole trees, or these paths)
Expected GPU->NPU substitutions (torch.cuda -> torch.npu, nccl -> hccl, adapter imports,
...) are masked; what remains is reported with both sides' file, line and value.

As git's external diff (GIT_EXTERNAL_DIFF=scriptdiff git diff) it is called with git's
seven arguments and always exits 0, so that git goes on to the next file."""


def add_arguments(p) -> None:
    p.add_argument("gpu", nargs="+", metavar="GPU", help="GPU-side file, folder or REV:path")
    p.add_argument("npu", metavar="NPU", help="NPU-side file, folder or REV:path")
    p.add_argument("--git", action="store_true",
                   help="GPU and NPU are revisions: compare their trees (optionally only the PATHs that follow)")
    p.add_argument("--repo", default=".", help="the git repository for REV:path and --git (default: .)")
    p.add_argument("--baseline", metavar="FILE", help="report only findings not in this baseline file")
    add_engine_arguments(p)
    p.add_argument("--git-external", action="store_true", help=argparse.SUPPRESS)
    add_output_arguments(p)



def run(args) -> int:
    from .baseline import load_baseline_into

    opts = options_from(args)
    err = load_baseline_into(opts, args)
    if err:
        return err
    if args.git_external:
        report = external_report([*args.gpu, args.npu], opts)
        if report is None:
            return fail("git external diff expects 7 (or 9) arguments")
        emit(report, args)
        return 0  # git stops at the first external diff that fails
    report, code = build_report(list(args.gpu), args.npu, opts, git_rev=args.git, repo=args.repo)
    if report is None:
        return code
    return emit(report, args)


def external_report(argv: list[str], opts):
    """git's call: path old-file old-hex old-mode new-file new-hex new-mode [new-path metadata]."""
    from ..engine import compare_sides
    from ..model import InputError, Report
    from ..sources import Source, SourceError, read_path

    if len(argv) not in (7, 9):
        return None
    path, old_file, new_file = argv[0], argv[1], argv[4]
    new_path = argv[7] if len(argv) == 9 else path
    report = Report(gpu=f"a/{path}", npu=f"b/{new_path}")
    srcs = []
    for f, name in ((old_file, f"a/{path}"), (new_file, f"b/{new_path}")):
        if f == "/dev/null":
            srcs.append(Source(name=name, data=b""))
            continue
        try:
            srcs.append(read_path(f, name))
        except SourceError as e:
            report.errors.append(InputError(name, str(e).split(": ", 1)[-1], fatal=True))
            return report
    g, n = srcs
    if g.is_binary() or n.is_binary():
        report.errors.append(InputError(n.name, "binary file; not compared"))
        return report
    return compare_sides([g], [n], [(g, n)], report, opts)


def build_report(gpu: list[str], npu: str, opts, git_rev: bool = False, repo: str = "."):
    """(Report, 0) for the sides as given, or (None, exit status) after a one-line message."""
    from ..engine import diff_files

    if git_rev:
        revs = [*gpu, npu]
        return _git_trees(revs[0], revs[1], revs[2:], opts, repo)
    if len(gpu) != 1:
        return None, fail("diff takes one GPU path and one NPU path (use --git REV1 REV2 PATH... for paths "
                          "in two revisions)")
    g, n = gpu[0], npu
    from ..gitsrc import split_revpath

    if split_revpath(g) or split_revpath(n):
        return _git_sides(g, n, opts, repo)
    if os.path.isdir(g) or os.path.isdir(n):
        from ..tree import diff_trees

        return diff_trees(g, n, opts), 0
    return diff_files([g], [n], opts), 0


def _git_trees(rev1: str, rev2: str, paths: list[str], opts, repo_dir: str):
    from .. import gitsrc
    from ..model import Report
    from ..tree import diff_listings, skip_dirs

    try:
        repo = gitsrc.open_repo(repo_dir)
        skip = skip_dirs()
        gl = gitsrc.listing(repo, rev1, paths, skip)
        nl = gitsrc.listing(repo, rev2, paths, skip)
    except gitsrc.GitError as e:
        return None, fail(str(e))
    label = f" -- {' '.join(paths)}" if paths else ""
    report = Report(gpu=f"{rev1}{label}", npu=f"{rev2}{label}")
    return diff_listings(gl, nl, report, opts), 0


def _git_sides(g: str, n: str, opts, repo_dir: str):
    """REV:path against REV:path (or a file/folder on disk): files or folders on both sides."""
    from .. import gitsrc
    from ..engine import compare_sides, read_inputs
    from ..model import Report
    from ..tree import diff_listings, skip_dirs, walk

    skip = skip_dirs()
    report = Report(gpu=g, npu=n)
    repo = None
    sides = []
    try:
        for arg in (g, n):
            rp = gitsrc.split_revpath(arg)
            if rp is None:
                if os.path.isdir(arg):
                    sides.append(("tree", walk(arg, skip, report.errors, arg.rstrip("/"))))
                else:
                    srcs = read_inputs([arg], report)
                    sides.append(("file", srcs[0] if srcs else None))
                continue
            repo = repo or gitsrc.open_repo(repo_dir)
            rev, path = rp
            if gitsrc.is_tree(repo, rev, path):
                sides.append(("tree", gitsrc.subtree_listing(repo, rev, path, skip)))
            else:
                src = gitsrc.read_source(repo, rev, path)
                if src.is_binary():
                    return None, fail(f"{src.name}: binary file; not compared")
                sides.append(("file", src))
    except gitsrc.GitError as e:
        return None, fail(str(e))
    (gk, gv), (nk, nv) = sides
    if gk != nk:
        return None, fail(f"cannot compare a {'folder' if gk == 'tree' else 'file'} ({g}) with a "
                          f"{'folder' if nk == 'tree' else 'file'} ({n})")
    if gk == "tree":
        return diff_listings(gv, nv, report, opts), 0
    if gv is None or nv is None:
        return report.sorted(), 0
    return compare_sides([gv], [nv], [(gv, nv)], report, opts), 0
