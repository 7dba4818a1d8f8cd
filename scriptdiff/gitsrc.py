"""Sources read from a git repository: `REV:path` and `--git REV1 REV2 [paths]`.

Everything is read from the object database through gitpython (commit -> tree -> blob
data stream); the work tree, the index and HEAD are never touched, so a GPU branch and an
NPU branch can be compared without a checkout. Names shown in reports are `REV:path`.
Errors (not a repository, unknown revision, missing path) are one line: GitError.
"""
from __future__ import annotations

import os
import re

from .sources import MAX_BINARY_SNIFF, Source

# REV:path where REV is a ref, a hash, HEAD~2, v1.0^{commit}...; not a Windows drive (C:\x)
_REVPATH = re.compile(r"^(?P<rev>[^:\s][^:\s]*):(?P<path>.*)$")


class GitError(Exception):
    """One line: why the repository or revision cannot be read."""


def split_revpath(arg: str) -> tuple[str, str] | None:
    """('REV', 'path') for 'REV:path' that is not an existing file, else None."""
    if os.path.exists(arg):
        return None
    m = _REVPATH.match(arg)
    if not m or (len(m.group("rev")) == 1 and m.group("path").startswith(("\\", "/"))):
        return None
    return m.group("rev"), m.group("path")


def open_repo(where: str = "."):
    try:
        import git
    except ImportError:  # pragma: no cover
        raise GitError("gitpython is not installed; git sources are not available") from None
    try:
        return git.Repo(where, search_parent_directories=True)
    except git.NoSuchPathError:
        raise GitError(f"{where}: no such folder") from None
    except git.InvalidGitRepositoryError:
        raise GitError(f"{os.path.abspath(where)}: not inside a git repository") from None


def commit(repo, rev: str):
    import git
    from gitdb.exc import BadName, BadObject

    try:
        return repo.commit(rev)
    except (BadName, BadObject, ValueError, git.BadName, IndexError):
        raise GitError(f"{rev}: unknown revision") from None
    except git.GitCommandError as e:  # pragma: no cover - depends on the git binary
        raise GitError(f"{rev}: {str(e.stderr or e).strip().splitlines()[-1]}") from None


def _object(repo, rev: str, path: str):
    c = commit(repo, rev)
    path = path.strip("/")
    if path in ("", "."):
        return c.tree
    try:
        return c.tree / path
    except KeyError:
        raise GitError(f"{rev}:{path}: no such path in revision {rev}") from None


class BlobEntry:
    """A git blob as a tree.Entry: identity is the blob hash, bytes come from its stream."""

    def __init__(self, blob, rel: str, display: str):
        self.blob = blob
        self.rel = rel
        self.size = blob.size
        self.display = display
        self.path = None

    def identity(self) -> str:
        return self.blob.hexsha

    def head(self) -> bytes:
        return self.blob.data_stream.read(MAX_BINARY_SNIFF)

    def source(self) -> Source:
        return Source(name=self.display, data=self.blob.data_stream.read())


def is_tree(repo, rev: str, path: str) -> bool:
    return _object(repo, rev, path).type == "tree"


def read_source(repo, rev: str, path: str) -> Source:
    obj = _object(repo, rev, path)
    if obj.type != "blob":
        raise GitError(f"{rev}:{path}: is a folder")
    return Source(name=f"{rev}:{path.strip('/')}", data=obj.data_stream.read())


def listing(repo, rev: str, paths: list[str] | None, skip_dirs: list[str] | None = None) -> dict[str, BlobEntry]:
    """Every blob under `paths` (all of the tree when none) at `rev`, by path in the repository."""
    import fnmatch

    out: dict[str, BlobEntry] = {}
    skip = skip_dirs or []
    for p in paths or [""]:
        obj = _object(repo, rev, p)
        if obj.type == "blob":
            out[obj.path] = BlobEntry(obj, obj.path, f"{rev}:{obj.path}")
            continue
        for item in obj.traverse(prune=lambda i, d: i.type == "tree" and any(fnmatch.fnmatchcase(i.name, s)
                                                                           for s in skip)):
            if item.type == "blob" and item.mode != 0o120000:  # symbolic links are not followed
                out[item.path] = BlobEntry(item, item.path, f"{rev}:{item.path}")
    return out


def subtree_listing(repo, rev: str, path: str, skip_dirs: list[str]) -> dict[str, BlobEntry]:
    """The blobs of one folder at `rev`, keyed relative to that folder (for REV:dir REV:dir)."""
    base = path.strip("/")
    full = listing(repo, rev, [base], skip_dirs)
    out = {}
    for p, e in full.items():
        rel = p[len(base) + 1:] if base else p
        e.rel = rel
        out[rel] = e
    return out
