"""The files of the review page (report/html.py): which pairs of files it lists, and their texts.

The pairs are the report's (`Report.pairs`, kept with Options.keep_texts), else the files the
masks pair; the files read as part of a run (configs, snapshots) are paired by name, then by
kind; identical pairs come from the input accounts and a folder's unpaired files from its
findings. A file's texts come from `Report.texts`, else from the disk when it is small
(budget.PAGE_FILE_BYTES); `has_panel` says whether the page lays its lines out.
"""
from __future__ import annotations

import os

from .. import budget
from ..inputs.sources import SourceError, read_path
from ..ruleset.secrets import shown_text


class PageFile:
    """One row of the page's file list: a GPU path and an NPU path (either may be None), their texts."""

    def __init__(self, g: str | None, n: str | None, status: str = ""):
        self.g, self.n, self.status = g, n, status
        self.findings: list[int] = []
        self.masked = 0
        self.ta: str | None = None
        self.tb: str | None = None


def page_files(report) -> list[PageFile]:
    texts = report.texts
    out: dict[tuple, PageFile] = {}
    used: set[tuple[str, str]] = set()
    for g, n in report.pairs:
        if (g, n) not in out:
            out[(g, n)] = PageFile(g, n)
            used |= {("gpu", g), ("npu", n)}
    kinds = {(a.side, a.path): a.kind for a in report.every_input()}
    if not report.pairs:  # a Report made without keep_texts: the files the masks pair
        for m in report.masked:
            if m.gpu and m.npu and m.gpu.path and m.npu.path and ("gpu", m.gpu.path) not in used \
                    and ("npu", m.npu.path) not in used:
                out[(m.gpu.path, m.npu.path)] = PageFile(m.gpu.path, m.npu.path)
                used |= {("gpu", m.gpu.path), ("npu", m.npu.path)}
    # files read but compared as part of a run (configs, snapshots): paired by name, else by kind
    left: dict[str, list[str]] = {"gpu": [], "npu": []}
    for side, p in list(texts) + [(a.side, a.path) for a in report.every_input() if a.status != "identical"]:
        if (side, p) not in used and p not in left[side]:
            left[side].append(p)
    for key in (lambda p: p.replace("\\", "/").rsplit("/", 1)[-1], lambda p: kinds.get(("gpu", p)) or
                kinds.get(("npu", p)) or "?"):
        by: dict = {}
        for p in left["npu"]:
            by.setdefault(key(p), []).append(p)
        for p in list(left["gpu"]):
            cands = by.get(key(p))
            if cands and len(cands) == 1 and sum(1 for q in left["gpu"] if key(q) == key(p)) == 1:
                q = cands.pop()
                out[(p, q)] = PageFile(p, q)
                left["gpu"].remove(p)
                left["npu"].remove(q)
    for side in ("gpu", "npu"):
        for p in left[side]:
            out[(p, None) if side == "gpu" else (None, p)] = PageFile(p, None) if side == "gpu" else PageFile(None, p)
    same_g = [a.path for a in report.every_input() if a.status == "identical" and a.side == "gpu"]
    same_n = [a.path for a in report.every_input() if a.status == "identical" and a.side == "npu"]
    paired = {p for k in out for p in k if p}
    for g, n in zip(same_g, same_n):  # accounted in pairs, GPU then NPU (tree.collect)
        if g not in paired and n not in paired:
            out[(g, n)] = PageFile(g, n, "identical")
    for f in report.findings:  # unpaired files of a folder
        if f.key.startswith("file:"):
            s = f.gpu or f.npu
            k = (s.path, None) if f.gpu else (None, s.path)
            if s.path and s.path not in paired and k not in out:
                out[k] = PageFile(*k)
    return sorted(out.values(), key=lambda f: (f.g or f.n or "", f.n or ""))


def load_texts(f: PageFile, texts: dict) -> None:
    """The file's texts, when they will be shown (not for an identical pair nobody points at),
    and its status."""
    if f.status != "identical" or f.findings:
        f.ta, f.tb = _text("gpu", f.g, texts), _text("npu", f.n, texts)
    if not f.status:
        if f.ta is not None and f.tb is not None:
            f.status = "identical" if f.ta == f.tb else "changed"
        elif f.g and f.n:
            f.status = "text not available"
        else:
            f.status = "GPU only" if f.g else "NPU only"


def _text(side: str, path: str | None, texts: dict) -> str | None:
    if path is None:
        return None
    if (side, path) in texts:
        return texts[(side, path)]
    try:  # a path from a Report built without keep_texts: read it only if it is a small file
        if not os.path.isfile(path) or os.path.getsize(path) > budget.PAGE_FILE_BYTES:
            return None
    except OSError:
        return None
    try:
        src = read_path(path)
    except SourceError:
        return None
    if len(src.data) > budget.PAGE_FILE_BYTES or src.is_binary():
        return None
    return shown_text(src)


def has_panel(f: PageFile) -> bool:
    """A file gets a panel when it has text and is worth reading: changed, or pointed at."""
    return (f.ta is not None or f.tb is not None) and not (f.status == "identical" and not f.findings)
