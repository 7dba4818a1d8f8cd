"""Where a referenced config is (`--deepspeed ds.json`, `deepspeed: examples/ds_z3.json`,
`--config_file x.yaml`): one resolution order for every reader and the engine.

A relative reference is looked up
  1. relative to the referring file's folder (and, as written by many scripts that are run
     from elsewhere, its base name beside the referring file),
  2. relative to the working directory,
  3. relative to the repository root: the folder given on the command line for this side
     (a tree, a `check` root), else the git top level above the referring file.
The first that exists wins, and the result says which one was used; when none does, the
paths tried are returned so the report can list them.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field

from .sources import git_top


@dataclass
class Resolution:
    path: str | None  # the file found, or None
    how: str = ""  # "beside the referring file" | "relative to the working directory" | ...
    tried: list[str] = field(default_factory=list)


def _is_file(p: str) -> bool:
    sys.audit("scriptdiff.looked", p)  # a replayed run depends on whether it exists (commands/runmemo)
    try:
        return os.path.isfile(p)
    except (OSError, ValueError):
        return False


def resolve(ref: str, referrer: str | None, root: str | None = None) -> Resolution:
    """Find `ref` as written in the file at `referrer` (a path on disk, or None for a blob)."""
    if not ref:
        return Resolution(None)
    if os.path.isabs(ref):
        return Resolution(ref, "absolute path", [ref]) if _is_file(ref) else Resolution(None, "", [ref])
    candidates: list[tuple[str, str]] = []
    if referrer:
        base = os.path.dirname(os.path.abspath(referrer))
        candidates.append((os.path.join(base, ref), "beside the referring file"))
        if os.path.basename(ref) != ref:
            candidates.append((os.path.join(base, os.path.basename(ref)), "beside the referring file (by name)"))
    candidates.append((os.path.join(os.getcwd(), ref), "relative to the working directory"))
    tops = [root] if root else []
    if referrer:
        top = git_top(os.path.dirname(os.path.abspath(referrer)))
        if top and top not in tops:
            tops.append(top)
    for top in tops:
        candidates.append((os.path.join(top, ref), "relative to the repository root"))
    tried: list[str] = []
    for p, how in candidates:
        p = os.path.normpath(p)
        if p in tried:
            continue
        tried.append(p)
        if _is_file(p):
            return Resolution(p, how, tried)
    return Resolution(None, "", tried)
