"""Sources read from a git repository: `REV:path` and `--git REV1 REV2 [paths]`.

Everything is read from the object database through gitpython (commit -> tree -> blob
data stream); the work tree, the index and HEAD are never touched, so a GPU branch and an
NPU branch can be compared without a checkout. Names shown in reports are `REV:path`.
Errors (not a repository, unknown revision, missing path) are one line: GitError.
"""
from __future__ import annotations

import os
import posixpath
import re

from .references import Resolution
from .sources import MAX_BINARY_SNIFF, Source, SourceError

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


class RevisionResolver:
    """The references of a side read from a git revision, found in that revision: beside the
    referring file, by base name beside it, then under the side's root and the repository's
    top, as references.py orders them on disk; never in the work tree. Sources it reads are
    named `{prefix}{path}` (`REV:path`, or `a/path` for git's external diff), which is how it
    knows where a referring file sits. Picklable (the repository is opened where used)."""

    def __init__(self, where: str, rev: str, prefix: str | None = None, root: str = "",
                 paths: dict[str, str] | None = None):
        self.where, self.rev = where, rev
        self.prefix = f"{rev}:" if prefix is None else prefix
        self.root = root.strip("/")  # the side's folder in the repository (REV:dir), "" for its top
        self.paths = dict(paths or {})  # source name -> repository path, for names not `{prefix}{path}`
        self._repo = None
        self._tree = None

    def __getstate__(self):
        return {**self.__dict__, "_repo": None, "_tree": None}

    def tree(self):
        if self._tree is None:
            self._repo = self._repo or open_repo(self.where)
            self._tree = commit(self._repo, self.rev).tree
        return self._tree

    def top(self) -> str:
        self.tree()
        return self._repo.working_tree_dir or self.where

    def path_of(self, src: Source) -> str | None:
        if src.name in self.paths:
            return self.paths[src.name]
        return src.name[len(self.prefix):] if src.name.startswith(self.prefix) else None

    def _blob(self, path: str):
        try:
            obj = self.tree() / path
        except (KeyError, ValueError, TypeError):
            return None
        return obj if obj.type == "blob" else None

    def resolve(self, ref: str, referrer: Source, root: str | None = None):
        here = self.path_of(referrer)
        if not ref or here is None:
            return Resolution(None)
        if os.path.isabs(ref):  # inside the work tree's top: that path of the revision
            try:
                top = self.top()
            except GitError:
                return Resolution(None, "", [ref])
            rel = os.path.relpath(ref, top)
            if rel.startswith(".."):
                return Resolution(None, "", [ref])
            ref = rel.replace(os.sep, "/")
        base = posixpath.dirname(here)
        candidates = [(posixpath.join(base, ref), "beside the referring file")]
        if posixpath.basename(ref) != ref:
            candidates.append((posixpath.join(base, posixpath.basename(ref)), "beside the referring file (by name)"))
        if self.root:
            candidates.append((posixpath.join(self.root, ref), "relative to the side's folder"))
        candidates.append((ref, "relative to the repository root"))
        tried: list[str] = []
        for p, how in candidates:
            p = posixpath.normpath(p)
            shown = f"{self.prefix}{p}"
            if p.startswith("../") or p == ".." or shown in tried:
                continue
            tried.append(shown)
            try:
                if self._blob(p) is not None:
                    return Resolution(p, f"{how} in revision {self.rev}", tried)
            except GitError as e:
                return Resolution(None, "", tried, why=str(e))
        return Resolution(None, "", tried)

    def read(self, res, name: str) -> Source:
        blob = self._blob(res.path)
        if blob is None:  # pragma: no cover - resolve() found it
            raise SourceError(f"{self.prefix}{res.path}: no such path in revision {self.rev}")
        return Source(name=f"{self.prefix}{res.path}", data=blob.data_stream.read())

    def identity(self, res) -> str:
        return f"{self.prefix}{res.path}"


class IndexResolver(RevisionResolver):
    """As RevisionResolver, in the index (the staged files), which `git diff` compares the
    work tree with."""

    def __init__(self, where: str, prefix: str, root: str = "", paths: dict[str, str] | None = None):
        super().__init__(where, "the index", prefix, root, paths)
        self._entries = None

    def __getstate__(self):
        return {**super().__getstate__(), "_entries": None}

    def _index(self) -> dict:
        if self._entries is None:
            self._repo = self._repo or open_repo(self.where)
            try:
                self._entries = {p: e for (p, stage), e in self._repo.index.entries.items() if stage == 0}
            except Exception as e:  # a missing or unreadable index
                raise GitError(f"cannot read the index: {e}") from None
        return self._entries

    def top(self) -> str:
        self._index()
        return self._repo.working_tree_dir or self.where

    def _blob(self, path: str):
        return self._index().get(path)

    def read(self, res, name: str) -> Source:
        entry = self._index()[res.path]
        return Source(name=f"{self.prefix}{res.path}", data=self._repo.odb.stream(entry.binsha).read())
