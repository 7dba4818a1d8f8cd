"""`data fingerprint FILE [-o OUT]` of one plain local file, at the cost of its hashing.

The full command (commands/data.py, checks/dataset.py) walks folders and object stores,
samples, shards, reads the structure of known formats and draws progress; importing all
of that costs more than hashing a gigabyte takes (issue 42). The one shape asked most often
needs none of it: one regular local file (not a link, not a kernel pseudo-file, not a format
whose structure the manifest records), hashed whole, the manifest written to `-o OUT` or
standard output, no other option, and no progress to draw. That shape is done here, with
nothing imported but blake3; every other shape, and this one whenever anything about it is
not plain (a file that changes while read, an output that cannot be written), is left to
the full command, which then decides and reports everything as it always does. The
manifest is built by checks/manifest.py for both, so the bytes are the same (tests/
test_quickprint.py compares the two over files of every size class).
"""
from __future__ import annotations

import os
import stat
import sys

from ..checks import manifest, wholehash
from ..inputs.filekind import pseudo_reason


def progress_wanted(flag: bool) -> bool:
    """(Every command's rule, read through commands/common.py; defined here because this path
    must not import that module.) --progress, or standard error is a terminal outside CI and pre-commit (both set an
    environment variable: CI, PRE_COMMIT): long work is then quiet unless asked."""
    if flag:
        return True
    if os.environ.get("CI") or os.environ.get("PRE_COMMIT"):
        return False
    return sys.stderr.isatty()


def plain_shape(args: list[str]) -> tuple[str, str | None] | None:
    """(FILE, OUT or None) when the arguments after `data fingerprint` are one local path and
    at most one `-o OUT` naming a JSON file; None for anything else."""
    path = out = None
    rest = list(args)
    while rest:
        word = rest.pop(0)
        if word in ("-o", "--output") and out is None and rest:
            out = rest.pop(0)
            name = os.path.basename(out).lower()
            if not out or out.startswith("-") or "=" in out or not (name.endswith(".json") or "." not in name):
                return None
        elif path is None and word and not word.startswith("-") and "://" not in word:
            path = word
        else:
            return None
    return (path, out) if path is not None else None


def plain_manifest(path: str, out: str | None) -> dict | None:
    """The manifest of one plain regular file, or None when the file is not plain."""
    st = os.lstat(path)
    if not stat.S_ISREG(st.st_mode) or pseudo_reason(path, st) is not None:
        return None
    name = os.path.basename(path)
    if not name or manifest.data_format(name, {name}) is not None:
        return None
    if out is not None and os.path.realpath(out) == os.path.realpath(path):
        return None  # the manifest would overwrite what it describes: the full command says so
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    with os.fdopen(fd, "rb", buffering=0) as fh:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            return None  # replaced since it was looked at
        os.set_blocking(fd, True)
        size = now.st_size
        if size >= wholehash.BIG_FILE:
            digest = wholehash.hash_mapped(fh, size)
        else:
            digest = wholehash.hash_read(fd, size)
    entry = {"size": size, "hash": digest, "mode": manifest.FULL}
    return manifest.assemble([path], os.path.dirname(path), manifest.FULL, {name: entry}, size)


def run(args: list[str]) -> int | None:
    """The exit status of `data fingerprint ARGS` done here, or None: the full command runs."""
    shape = plain_shape(args)
    if shape is None or progress_wanted(False):
        return None
    path, out = shape
    try:
        doc = plain_manifest(path, out)
        if doc is None:
            return None
        text = manifest.dumps(doc)
        if out is not None:
            with open(out, "w", encoding="utf-8") as fh:
                fh.write(text)
    except (OSError, ValueError):  # ValueError: a NUL in a path; the full command names the reason
        return None
    if out is None:
        sys.stdout.write(text)
        return 0
    print(f"scriptdiff: {manifest.written(doc)} -> {out}", file=sys.stderr)
    return 0
