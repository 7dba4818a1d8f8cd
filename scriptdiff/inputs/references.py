"""Where a referenced config is (`--deepspeed ds.json`, `deepspeed: examples/ds_z3.json`,
`--config_file x.yaml`): one resolution order for every reader and the engine.

A relative reference is looked up
  1. relative to the referring file's folder (and, as written by many scripts that are run
     from elsewhere, its base name beside the referring file),
  2. relative to the repository root: the folder given on the command line for this side
     (a tree, a `check` root), then the git top level above the referring file,
  3. relative to the working directory, only when the working directory is inside that
     repository (the side's root or the git top level): a script run from a sub-folder of
     its project. Elsewhere the working directory is another place than the side's, and
     where the command runs must not change what a side holds.
The first that exists wins, and the result says which one was used; when none does, the
paths tried are returned so the report can list them.

That is where a side on disk finds its references. A side read from elsewhere (a git
revision, a patch laid over its root) resolves them within itself: every side of a run has
a `Resolver` (SideContext.resolver; `DiskResolver` when none is given), which the engine
asks where a reference is, how to read it and what makes two found files the same file.
The sides' resolvers are chosen where an entry point's scopes are made (scriptdiff/run/scopes.py).
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field

from .sources import Source, git_top, read_path


@dataclass
class Resolution:
    path: str | None  # the file found, or None
    how: str = ""  # "beside the referring file" | "relative to the working directory" | ...
    tried: list[str] = field(default_factory=list)
    why: str = ""  # set when the side cannot resolve references at all (said once, as a note)


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
    tops = [os.path.abspath(root)] if root else []
    if referrer:
        top = git_top(os.path.dirname(os.path.abspath(referrer)))
        if top and os.path.abspath(top) not in tops:
            tops.append(os.path.abspath(top))
    for top in tops:
        candidates.append((os.path.join(top, ref), "relative to the repository root"))
    cwd = _cwd()
    if cwd is not None and any(_inside(cwd, top) for top in tops):
        candidates.append((os.path.join(cwd, ref), "relative to the working directory"))
    tried: list[str] = []
    for p, how in candidates:
        p = os.path.normpath(p)
        if p in tried:
            continue
        tried.append(p)
        if _is_file(p):
            return Resolution(p, how, tried)
    return Resolution(None, "", tried)


def _cwd() -> str | None:
    try:
        return os.getcwd()
    except OSError:  # the working directory was removed
        return None


def _inside(path: str, top: str) -> bool:
    """`path` is `top` or a folder under it (real paths: a link into the repository counts)."""
    try:
        a, b = os.path.realpath(path), os.path.realpath(top)
        return os.path.commonpath([a, b]) == b
    except ValueError:  # another drive
        return False


def source_identity(src: Source) -> str:
    """What makes two sources of one side the same file: its real path on disk, else its
    name (a git blob's `REV:path`, a patch's path), as its side's resolver names it."""
    return os.path.realpath(src.origin) if src.origin else src.name


class DiskResolver:
    """References of a side on disk: `resolve` above, from the referring file's real path."""

    def __init__(self, root: str | None = None):
        self.root = root

    def resolve(self, ref: str, referrer: Source, root: str | None = None) -> Resolution:
        if not referrer.origin:  # not a file on disk (a fragment, a blob): nothing to look beside
            return Resolution(None)
        return resolve(ref, referrer.origin, self.root or root)

    def read(self, res: Resolution, name: str) -> Source:
        """The file `res` found, as a Source named `name` (SourceError when it cannot be read)."""
        return read_path(res.path, name=name)

    def identity(self, res: Resolution) -> str:
        return os.path.realpath(res.path)
