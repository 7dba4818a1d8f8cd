"""Directory mode: `scriptdiff diff GPU_DIR NPU_DIR`.

Both trees are walked (version-control, cache and virtualenv folders skipped; a symbolic
link, to a file or to a folder, is followed only when it stays inside the tree: one that
leaves it is refused, with one line naming it, and accounted as an input that failed, and
what its name stands for on the other side is unknown, not "on one side only"; each folder
is walked once, so a link loop ends instead of hanging),
files are paired by relative path and then by the rename rules in rules/pairing.yaml
(train.py <-> train_npu.py, *_gpu.* <-> *_npu.*, gpu/ <-> npu/), and every pair of differing
files is handed to the shared engine as a scope of its own: its settings are compared with
its counterpart's, never merged with the other files of its side.

The cheap pass comes first: a pair whose sizes and content hashes match is never
diffed. Identical code is not parsed at all; identical configs, launch scripts and logs
(small ones) are still read for their settings, because a differing script on one side
may override them and the other side's value must then come from them, not from a
framework default. Files with no counterpart are findings: SD150 (warning) for a file
that can decide a training run (script, config, launch script, log, package list),
SD151 (info) for anything else.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..inputs.sources import Source, SourceError, special_reason
from ..inputs.walk import Entry, _is_binary, _same_content, walk
from ..model import Finding, InputAccount, InputError, Options, Report, Side
from ..ruleset.registry import detect, identical_skipped_by_name, kind_by_name
from ..ruleset.rules import code
from .finding import finding
from .pairing import pair_paths, pairing_rules, skip_dirs
from .pipeline import Unit, listed, run
from .scopes import SideScope, units
from .scopes import disk as scope_disk
from .scopes import inputs as scope_inputs


def diff_trees(gpu_dir: str, npu_dir: str, opts=None) -> Report:
    """`scriptdiff diff GPU_DIR NPU_DIR`: two folders on disk."""
    report = Report(gpu=gpu_dir, npu=npu_dir)
    for d, other, side in ((gpu_dir, npu_dir, "GPU"), (npu_dir, gpu_dir, "NPU")):
        if not os.path.isdir(d):  # name both arguments: either may be the one meant otherwise
            reason = ("no such file or directory" if not os.path.exists(d) else special_reason(os.stat(d).st_mode)
                      or f"is a file, but the {'NPU' if side == 'GPU' else 'GPU'} side {other} is a folder: "
                         f"give two folders, or two files")
            report.errors.append(InputError(d, reason, fatal=True))
    if report.errors:
        return report.sorted()
    skip = skip_dirs()
    gfiles = walk(gpu_dir, skip, report.errors, gpu_dir.rstrip("/"))
    nfiles = walk(npu_dir, skip, report.errors, npu_dir.rstrip("/"))
    return diff_listings(gfiles, nfiles, report, opts, roots=(gpu_dir, npu_dir))


def diff_listings(gfiles: dict[str, Entry], nfiles: dict[str, Entry], report: Report, opts=None,
                  roots: tuple[str | None, str | None] = (None, None),
                  sides: tuple[SideScope, SideScope] | None = None) -> Report:
    """Pair two listings of files (a folder, a git tree), skip identical pairs, diff the rest.

    Each pair of differing files is its own scope (engine.Unit): its settings, and those of
    the configs it references, are compared with its counterpart's alone; a pair of launch
    scripts is a run with its program and configs (scopes.units). Two runs kept in one folder
    (pretrain_7b.sh, pretrain_13b.sh) are never merged into one table. `sides` say where each
    side's references are (a git revision's tree); on disk under `roots` by default."""
    opts = opts or Options()
    c = collect(gfiles, nfiles, report, opts)
    sides = sides or (scope_disk(roots[0]), scope_disk(roots[1]))
    report.absorb(run(scope_inputs(c, sides, report=report), opts))
    report.compared = max(report.compared, c.npairs)
    return report


def scopes(c: "Collected") -> list[Unit]:
    """The units of a folder comparison (scopes.units)."""
    return units(c.pairs, c.same)


@dataclass
class Collected:
    """Two listings, read for the engine."""

    gpu: list[Source]  # every source read for a side (paired, identical settings files, unpaired)
    npu: list[Source]
    pairs: list[tuple[Source, Source]]  # differing pairs: each a scope of its own
    npairs: int  # pairs found, identical ones included
    identical: list[InputAccount]  # inputs equal to their counterpart byte for byte
    same: list[tuple[Source, Source]] = field(default_factory=list)  # identical pairs read for their settings
    findings: list[Finding] = field(default_factory=list)  # unpaired files (SD150, SD151)
    failed: dict[str, list[InputError]] = field(default_factory=dict)  # side -> files that could not be read
    refused: list[InputAccount] = field(default_factory=list)  # links out of a tree, accounted as failed

    def __iter__(self):  # (gpu, npu, pairs, npairs), as callers unpacked it before
        return iter((self.gpu, self.npu, self.pairs, self.npairs))


def collect(gfiles: dict[str, Entry], nfiles: dict[str, Entry], report: Report, opts,
            unpaired: bool = True) -> Collected:
    """The sources of two listings for the engine.

    Identical pairs are not diffed (they are accounted as identical); unpaired files become
    SD150/SD151 findings when `unpaired` (a folder scan), and count for their side either
    way. Which kinds of file matter when unpaired, and which identical pairs are not read at
    all, the kind registry says (`relevant`, `skip_identical`)."""
    failed: dict[str, list[InputError]] = {"gpu": [], "npu": []}
    rules = pairing_rules()
    pairs, gonly, nonly = pair_paths(sorted(gfiles), sorted(nfiles), rules)
    # links out of a tree (tree.walk refused them): accounted as failed, their side unknown
    # where they stand: the counterpart of a refused file, the files under a refused folder
    refused: list[InputAccount] = []
    hidden: dict[int, list[str]] = {}  # id(refused folder's error) -> the other side's files under it
    pairs = [(g, n) for g, n in pairs if gfiles[g].refused is None and nfiles[n].refused is None]
    gonly, nonly = ([r for r in rels if files[r].refused is None and not _under_refused(r, others, hidden)]
                    for rels, files, others in ((gonly, gfiles, nfiles), (nonly, nfiles, gfiles)))
    for side, files in (("gpu", gfiles), ("npu", nfiles)):
        for e in (e for e in files.values() if e.refused is not None):
            refused.append(InputAccount(path=e.display, side=side, kind="folder" if e.folder else "file",
                                        status="failed", unread=[e.refused.message]))
            failed[side].append(e.refused)
            names = hidden.get(id(e.refused))
            if names:
                e.refused.message += (f" ({len(names)} file(s) of the {'NPU' if side == 'gpu' else 'GPU'} side "
                                      f"under it could not be paired: {listed(names)})")

    def read(e: Entry, side: str) -> Source | None:
        if _is_binary(e):
            return None
        try:
            return e.source()
        except SourceError as exc:
            err = InputError(e.display, str(exc).split(": ", 1)[-1], fatal=True)  # not compared: no pass
            report.errors.append(err)
            failed[side].append(err)
            return None

    gsrcs: list[Source] = []
    nsrcs: list[Source] = []
    src_pairs: list[tuple[Source, Source]] = []
    identical: list[InputAccount] = []
    same: list[tuple[Source, Source]] = []
    for g, n in pairs:
        ge, ne = gfiles[g], nfiles[n]
        if _same_content(ge, ne):
            kname = (kind_by_name(ge.rel.rsplit("/", 1)[-1]) or _Unknown).name
            identical += [InputAccount(path=ge.display, side="gpu", kind=kname, status="identical"),
                          InputAccount(path=ne.display, side="npu", kind=kname, status="identical")]
            # identical settings files still count as each side's settings; identical code is
            # skipped, by name when the name decides it (no need to read a .py file's twin)
            if identical_skipped_by_name(ge.rel.rsplit("/", 1)[-1]):
                continue
            if ge.size <= opts.max_bytes and not _is_binary(ge):
                gs = read(ge, "gpu")
                k = detect(gs) if gs is not None else None
                if k is not None and k.relevant and not k.skip_identical:
                    twin = Source(name=ne.display, data=gs.data, origin=str(ne.path) if ne.path else None)
                    gsrcs.append(gs)
                    nsrcs.append(twin)
                    same.append((gs, twin))
            continue
        gb, nb = _is_binary(ge), _is_binary(ne)
        if gb or nb:
            report.errors.append(InputError(ne.display, "binary files differ; not compared"))
            continue
        gs, ns = read(ge, "gpu"), read(ne, "npu")
        if gs is None or ns is None:
            continue
        gsrcs.append(gs)
        nsrcs.append(ns)
        src_pairs.append((gs, ns))
    unpaired_findings: list[Finding] = []
    for rels, files, side in ((gonly, gfiles, "gpu"), (nonly, nfiles, "npu")):
        for rel in rels:
            e = files[rel]
            src = read(e, side)
            k = detect(src) if src is not None else None
            if k is not None and k.relevant:
                (gsrcs if side == "gpu" else nsrcs).append(src)
            if unpaired:
                unpaired_findings.append(unpaired_finding(e.display, rel, side, k is not None and k.relevant,
                                                          k.name if k is not None else "binary"))
    return Collected(gsrcs, nsrcs, src_pairs, len(pairs), identical, same, unpaired_findings, failed, refused)


def _under_refused(rel: str, others: dict, hidden: dict) -> bool:
    """Whether `rel` is under a folder the other side's walk refused (a link out of its tree):
    then whether it has a counterpart is unknown (its name is kept in `hidden` for the error)."""
    parts = rel.split("/")
    for i in range(1, len(parts)):
        e = others.get("/".join(parts[:i]))
        if e is not None and e.refused is not None and e.folder:
            hidden.setdefault(id(e.refused), []).append(rel)
            return True
    return False


class _Unknown:  # the kind shown for an identical file whose name says nothing (it is not read)
    name = "file"


def unpaired_finding(path: str, rel: str, side: str, relevant: bool, kind: str) -> Finding:
    rule = code("script-on-one-side-only") if relevant else code("other-file-on-one-side-only")
    here = Side(value=rel, path=path, line=None, source=kind)
    other = "NPU" if side == "gpu" else "GPU"
    what = f"{kind} file" if relevant else "file"
    msg = (f"{what} on {side.upper()} only: no counterpart on {other} by relative path or rename rule"
           + ("" if relevant else " (not a script or config)"))
    return finding(rule, key=f"file:{rel}",
                   gpu=here if side == "gpu" else None, npu=here if side == "npu" else None, message=msg)
