"""One file, two devices: a script that runs on both devices, checked against itself.

Upstream projects support Ascend in the same file as CUDA (`if is_torch_npu_available():`).
Such a file is two programs: the one the GPU runs and the one the NPU runs. Here its two
runs are the two sides of the usual pipeline: the same bytes read once per device
(lang/python/specialise.py, lang/shell/specialise.py), then compared under the same rules
and keys as a GPU/NPU pair; findings name the file and the line on each side.

`diff_file` is `scriptdiff diff FILE` (a path or REV:path), `diff_folder` is
`scriptdiff diff DIR` (each file of the folder that names the NPU, each launch script with
what it starts and references; the others read the same on both devices and are accounted
as such), `diff_revision` is `scriptdiff diff --git REV -- PATH...`, and `check` and the
pre-commit hook use `runs` for a `scripts` entry given once and a staged dual-device file.
"""
from __future__ import annotations

import os

from .. import budget
from ..inputs import gitsrc
from ..ruleset.devices import may_branch
from .engine import read_inputs
from ..model import InputAccount, InputError, Options, Report
from .pipeline import Inputs, Unit, run
from ..ruleset.registry import detect
from ..inputs.sources import Source, SourceError, read_head
from ..inputs.walk import _is_binary, walk
from .pairing import skip_dirs

SAME = "names no device: its GPU run and its NPU run are the same program"


def runs(src: Source) -> tuple[Source, Source]:
    """The GPU run and the NPU run of one source: two sources with its name and bytes."""
    return (Source(name=src.name, data=src.data, origin=src.origin),
            Source(name=src.name, data=src.data, origin=src.origin))


def _label(name: str) -> tuple[str, str]:
    return f"{name} (GPU run)", f"{name} (NPU run)"


def diff_file(path: str, opts: Options | None = None, repo: str = ".") -> Report:
    """`scriptdiff diff FILE`: the file's GPU run against its NPU run (FILE may be REV:path)."""
    opts = opts or Options()
    rp = gitsrc.split_revpath(path)
    report = Report(*_label(path))
    if rp is not None:
        try:
            r = gitsrc.open_repo(repo)
            if gitsrc.is_tree(r, rp[0], rp[1]):
                return diff_listing(gitsrc.subtree_listing(r, rp[0], rp[1], skip_dirs()), report, opts)
            src = gitsrc.read_source(r, *rp)
        except gitsrc.GitError as e:
            report.errors.append(InputError(path, str(e), fatal=True))
            return report.sorted()
        if src.is_binary():
            report.errors.append(InputError(path, "binary file; not compared", fatal=True))
            return report.sorted()
        srcs = [src]
    else:
        srcs = read_inputs([path], report)
    if not srcs:
        return report.sorted()
    return _compare([srcs[0]], report, opts)


def diff_folder(path: str, opts: Options | None = None) -> Report:
    """`scriptdiff diff DIR`: every file of one folder, each against itself (module doc)."""
    opts = opts or Options()
    report = Report(*_label(path))
    listing = walk(path, skip_dirs(), report.errors, path.rstrip("/"))
    return diff_listing(listing, report, opts, root=path)


def diff_revision(rev: str, paths: list[str], opts: Options | None = None, repo: str = ".") -> Report:
    """`scriptdiff diff --git REV [-- PATH...]`: the files at REV, each against itself."""
    opts = opts or Options()
    label = f"{rev}" + (f" -- {' '.join(paths)}" if paths else "")
    report = Report(*_label(label))
    try:
        r = gitsrc.open_repo(repo)
        listing = gitsrc.listing(r, rev, paths, skip_dirs())
    except gitsrc.GitError as e:
        report.errors.append(InputError(label, str(e), fatal=True))
        return report.sorted()
    return diff_listing(listing, report, opts)


def diff_listing(listing: dict, report: Report, opts: Options, root: str | None = None) -> Report:
    """The files of a listing (tree.Entry or gitsrc.BlobEntry), each against itself."""
    gsrcs, nsrcs, pairs, units, accounts = inputs(listing, report)
    if not units and not accounts:
        report.errors.append(InputError(report.gpu.rsplit(" (", 1)[0], "no script or config to compare", fatal=True))
        return report.sorted()
    roots = (root, root) if root else (None, None)
    return report.absorb(run(Inputs(gsrcs, nsrcs, pairs, units=units, roots=roots, accounts=accounts), opts))


def inputs(listing: dict, report: Report) -> tuple[list, list, list, list, list]:
    """(GPU sources, NPU sources, pairs, units, accounts) of a listing read once per device:
    the files that name the NPU and the launch scripts, each its own scope (a launch script a
    run, with what it starts and references); the other scripts and configs read the same on
    both devices and are accounted as such."""
    srcs, accounts = [], []
    for rel in sorted(listing):
        e = listing[rel]
        if getattr(e, "refused", None) is not None:  # a link out of the folder: said by the walk, never opened
            accounts.append(InputAccount(path=e.display, side="gpu", kind="folder" if e.folder else "file",
                                         status="failed", unread=[e.refused.message]))
            continue
        if _is_binary(e):
            continue
        try:
            src = e.source()
        except (OSError, ValueError) as exc:
            report.errors.append(InputError(e.display, str(exc).split(": ", 1)[-1]))
            continue
        kind = detect(src)
        if not kind.relevant:
            continue
        if kind.entry or (kind.structural or kind.checks) and may_branch(src.data):
            srcs.append(src)
        else:
            accounts += [InputAccount(path=src.name, side=side, kind=kind.name, status="identical", notes=[SAME])
                         for side in ("gpu", "npu")]
    gsrcs, nsrcs, pairs, units = _sides(srcs)
    return gsrcs, nsrcs, pairs, units, accounts


def _sides(srcs: list[Source]) -> tuple[list, list, list, list]:
    gsrcs, nsrcs, pairs, units = [], [], [], []
    for src in srcs:
        g, n = runs(src)
        gsrcs.append(g)
        nsrcs.append(n)
        kind = detect(src)
        if kind.structural:
            pairs.append((g, n))
        units.append(Unit([g], [n], run=bool(kind.entry) or len(srcs) == 1))
    return gsrcs, nsrcs, pairs, units


def _compare(srcs: list[Source], report: Report, opts: Options) -> Report:
    """One file's two runs, compared."""
    if not may_branch(srcs[0].data) and not detect(srcs[0]).entry:
        report.errors.append(InputError(srcs[0].name, SAME, level="note"))
    gsrcs, nsrcs, pairs, units = _sides(srcs)
    return report.absorb(run(Inputs(gsrcs, nsrcs, pairs, units=units), opts))


def is_dual(path: str) -> bool:
    """A file that may run differently on the two devices (it names the NPU): the pre-commit
    hook checks it against itself when it has no counterpart."""
    try:
        return os.path.isfile(path) and may_branch(read_head(path, budget.NPU_SNIFF))
    except (OSError, SourceError):
        return False
