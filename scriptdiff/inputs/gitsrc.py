"""Sources read from a git repository: `REV:path` and `--git REV1 REV2 [paths]`; the work tree
questions of `fix`; the revisions of git's external diff and of the hook. The one module that
reads git, through GitPython (imported when a command first opens a repository, never at start:
`scriptdiff --help` does not pay for it).

Everything is read from the object database: `rev-parse` resolves a revision to a commit,
`ls-tree` lists a tree with each blob's size, the object database's `info` gives a blob's
type and size before any of its bytes, `cat-file` gives a blob's bytes; every command runs as
`git.Git.execute` with a deadline (`kill_after_timeout`). The work tree, the index and HEAD
are never touched, so a GPU branch and an NPU branch can be compared without a checkout.
Names shown in reports are `REV:path`. Errors (not a repository, unknown revision, missing
path, a corrupt object) are one line: GitError.

Bounds: every git command runs under a deadline (budget.GIT_TIMEOUT seconds,
SCRIPTDIFF_GIT_TIMEOUT to change it) and is killed past it, so a repository whose ref is a
FIFO, or whose object store hangs, is one line, never a wait; the ref files a revision name
could be read from (`.git/refs/heads/x`, `packed-refs`, `HEAD`, ...) are checked first and a
FIFO or device among them is refused without asking git, and so are the files GitPython
itself reads when it opens the repository (HEAD, config, commondir, gitdir). A blob's size
comes from the tree listing (`ls-tree -l`) or the object database's `info`, and a blob above
the 256 MiB cap of files on disk is refused with the same line (sources.too_large) before any
of it is read.
"""
from __future__ import annotations

import os
import posixpath
import re
import sys
import threading

from .. import budget
from .references import Resolution
from .sources import Source, SourceError, seconds, special_reason, too_large, upward

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


def timeout() -> float:
    """Seconds one git command may take: budget.GIT_TIMEOUT, or $SCRIPTDIFF_GIT_TIMEOUT."""
    return seconds("SCRIPTDIFF_GIT_TIMEOUT", budget.GIT_TIMEOUT)


# what every git command gets besides the locale GitPython sets (LC_ALL=C, LANGUAGE=C): no prompt
# for credentials, no optional locks taken in a repository only read
_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"}


def _gitpython():
    """The GitPython package, imported on first use (it costs a tenth of a second and runs
    `git version`); GitError when it or git cannot be had."""
    try:
        import git  # lazy: keeps --help fast
    except ImportError as e:
        if getattr(e, "name", None) == "git":
            raise GitError("GitPython is not installed (a dependency of scriptdiff: reinstall it); git sources are "
                           "not available") from None
        raise GitError("git is not installed; git sources are not available") from None  # its `git version` failed
    return git


class _Head:
    """The output stream of a command read only up to `limit` bytes: _Enough stops it there."""

    class Enough(Exception):
        pass

    def __init__(self, limit: int):
        self.limit, self.data = limit, bytearray()

    def write(self, chunk: bytes) -> int:
        self.data += chunk[:self.limit - len(self.data)]
        if len(self.data) >= self.limit:
            raise _Head.Enough
        return len(chunk)


def _last_line(err: bytes) -> str:
    """git's reason: its first error line (the cause; the last one is often "could not get
    object info"), without the "fatal:"/"error:" prefix."""
    lines = [ln.strip() for ln in err.decode("utf-8", "replace").splitlines() if ln.strip()]
    msg = lines[0] if lines else "git failed"
    for prefix in ("fatal: ", "error: "):
        msg = msg.removeprefix(prefix)
    return msg


def _git_reason(e: GitError) -> str:
    return str(e).split(": ", 1)[-1]


class Repo:
    """A git repository, read through GitPython: `working_tree_dir` (None when bare) and
    `git_dir`; `run(args)` is one git command under the deadline, `info(sha)` an object's
    type and size from the object database."""

    def __init__(self, where: str):
        memo = sys.modules.get("scriptdiff.commands.runmemo")
        if memo is not None:  # git reads its objects in a process of its own: never replayed
            memo.spoil("a git repository")
        self.cwd = where
        if not os.path.isdir(where):
            raise GitError(f"{where}: cannot run git: No such file or directory")
        if not os.access(where, os.X_OK):  # GitPython would run git in the current folder instead
            raise GitError(f"{where}: cannot run git: Permission denied")
        self._git = None
        self._db = None
        out = self.run(["rev-parse", "--absolute-git-dir", "--is-bare-repository"], what=where).decode().split("\n")
        self.git_dir = out[0]
        self.working_tree_dir = None
        if len(out) > 1 and out[1].strip() == "false":
            top = self.run(["rev-parse", "--show-toplevel"], what=where).decode().strip()
            self.working_tree_dir = top or None

    def run(self, args: list[str], what: str = "git", limit: int | None = None) -> bytes:
        """git ARGS's standard output; GitError naming `what` when it fails or takes too long.
        With `limit`, at most that many bytes are read and git is stopped there."""
        git = _gitpython()
        if self._git is None:
            self._git = git.Git(self.cwd)
        head = _Head(limit) if limit is not None else None
        try:
            status, out, err = self._git.execute(
                ["git", "-c", "core.quotePath=false", *args], kill_after_timeout=timeout(), env=_ENV,
                with_extended_output=True, with_exceptions=False, stdout_as_string=False,
                strip_newline_in_stdout=False, output_stream=head)
        except _Head.Enough:
            return bytes(head.data)
        except git.exc.GitCommandNotFound:
            raise GitError("git is not installed; git sources are not available") from None
        except OSError as e:
            raise GitError(f"{what}: cannot run git: {e.strerror or e}") from None
        if head is not None:
            out = bytes(head.data)
        if isinstance(err, str):
            err = err.encode()
        if status != 0 and err.startswith(b"Timeout: the command"):
            raise GitError(f"{what}: git did not answer within {timeout():g} s (a FIFO or a hung file system "
                           f"in the repository?); not read")
        if status != 0:
            raise GitError(f"{what}: {_last_line(err)}")
        return out

    def _database(self):
        """GitPython's repository, opened once the files it reads itself are known to be files."""
        if self._db is None:
            for rel in ("HEAD", "config", "commondir", "gitdir"):
                try:
                    st = os.stat(os.path.join(self.git_dir, rel))
                except (OSError, ValueError):
                    continue
                reason = special_reason(st.st_mode)
                if reason:
                    raise GitError(f"{self.cwd}: the repository's {rel} {reason.split(' (', 1)[0]}; not read")
            git = _gitpython()
            try:
                self._db = git.Repo(self.git_dir, expand_vars=False)
            except (git.exc.GitError, OSError, ValueError) as e:
                raise GitError(f"{self.cwd}: cannot be read by git ({e})") from None
            self._db.git.update_environment(**_ENV)
        return self._db

    def info(self, sha: str, what: str) -> tuple[str, int]:
        """(type, size) of object `sha` from the object database, under the deadline; no byte
        of its content is read."""
        db = self._database()
        expired = threading.Event()

        def kill():  # the object database asks one long-lived `git cat-file --batch-check`
            expired.set()
            running = getattr(db.git, "cat_file_header", None)
            if running is not None and getattr(running, "proc", None) is not None:
                running.proc.kill()

        watchdog = threading.Timer(timeout(), kill)
        watchdog.daemon = True
        watchdog.start()
        try:
            found = db.odb.info(bytes.fromhex(sha))
        except Exception as e:  # GitPython's ValueError for a missing object, a dead process's errors
            if expired.is_set():
                db.git.clear_cache()
                raise GitError(f"{what}: git did not answer within {timeout():g} s (a FIFO or a hung file system "
                               f"in the repository?); not read") from None
            raise GitError(f"{what}: cannot read object {sha} ({str(e).splitlines()[0] if str(e) else 'git failed'})") \
                from None
        finally:
            watchdog.cancel()
        kind = found.type.decode() if isinstance(found.type, bytes) else str(found.type)
        return kind, int(found.size)


def open_repo(where: str = ".") -> Repo:
    if not os.path.isdir(where):
        raise GitError(f"{where}: no such folder")
    try:
        return Repo(where)
    except GitError as e:
        if "not a git repository" in str(e):
            raise GitError(f"{os.path.abspath(where)}: not inside a git repository") from None
        raise


# what git says of a file of a work tree (`work_tree_state`)
WORK_TREE_STATES = ("committed", "none", "changed", "untracked", "ignored", "skip-worktree", "assume-unchanged",
                    "unknown")


def work_tree_state(path: str) -> tuple[str, str]:
    """What git says of the file at `path` (its real path: a link's target is the caller's to
    resolve), as (state, detail), one of WORK_TREE_STATES: "committed" (tracked and as
    committed), "none" (no git repository holds it), "changed" (modified or staged),
    "untracked", "ignored", "skip-worktree" and "assume-unchanged" (git status is told not to
    look at it), or "unknown": git could not answer (a repository it refuses to read, a damaged
    index, git not installed where a .git is), the detail its reason. git runs in the file's
    own folder, with the file as a literal pathspec and core.fsmonitor off (the repository's
    configuration runs no program while git looks)."""
    folder, name = os.path.split(os.path.abspath(path))
    look = ["-c", "core.fsmonitor=false", "--literal-pathspecs"]
    try:
        repo = Repo(folder)
        status = repo.run(look + ["status", "--porcelain=v1", "-z", "--ignored=matching", "--untracked-files=all",
                                  "--", name], what=path)
        listed = repo.run(look + ["ls-files", "-v", "-z", "--", name], what=path)
    except GitError as e:
        reason = _git_reason(e)
        nothing = "not a git repository" in reason or "git is not installed" in reason
        if nothing and not any(os.path.lexists(os.path.join(d, ".git")) for d in upward(folder)):
            return "none", ""
        return "unknown", reason
    if status:
        code = status[:2]
        return ("ignored" if code == b"!!" else "untracked" if code == b"??" else "changed"), code.decode("ascii", "replace")
    tag = listed[:1].decode("ascii", "replace")
    if tag == "H":
        return "committed", ""
    if tag == "S":
        return "skip-worktree", ""
    if tag.islower():
        return "assume-unchanged", ""
    return "unknown", "git lists it neither as committed nor as changed"


_REF_DIRS = ("", "refs", "refs/tags", "refs/heads", "refs/remotes")


def _check_refs(repo: Repo, rev: str) -> None:
    """Refuse a revision whose name git would read from a special file (a FIFO blocks git,
    a device could act): HEAD, packed-refs and the ref files its name could be."""
    name = re.split(r"[~^@:{]", rev, 1)[0]
    candidates = ["HEAD", "packed-refs"]
    if name and ".." not in name and not name.startswith("/"):
        candidates += [os.path.join(d, name) for d in _REF_DIRS] + [os.path.join("refs/remotes", name, "HEAD")]
    for rel in candidates:
        p = os.path.join(repo.git_dir, rel)
        try:
            st = os.stat(p)
        except (OSError, ValueError):
            continue
        reason = special_reason(st.st_mode)
        if reason and not reason.startswith("is a directory"):
            raise GitError(f"{rev}: the repository's {rel} {reason.split(' (', 1)[0]}; not read")


def commit(repo: Repo, rev: str) -> str:
    """The hash of the commit `rev` names; GitError "REV: unknown revision" (or why not)."""
    if rev.startswith("-"):
        raise GitError(f"{rev}: unknown revision")
    _check_refs(repo, rev)
    try:
        out = repo.run(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"], what=rev)
    except GitError as e:
        if "did not answer" in str(e):
            raise
        detail = str(e).split(": ", 1)[-1]
        raise GitError(f"{rev}: unknown revision" + ("" if detail in ("git failed", "") else f" ({detail})")) from None
    sha = out.decode().strip()
    if not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", sha):
        raise GitError(f"{rev}: unknown revision")
    return sha


class Blob:
    """A blob of the object store: its hash, size and path in the revision."""

    def __init__(self, repo: Repo, sha: str, size: int, path: str):
        self.repo, self.hexsha, self.size, self.path = repo, sha, size, path

    def read(self, display: str, limit: int | None = None) -> bytes:
        if limit is None and self.size > budget.MAX_READ:
            raise SourceError(too_large(display, budget.MAX_READ, self.size))
        try:
            return self.repo.run(["cat-file", "blob", self.hexsha], what=display, limit=limit)
        except GitError as e:
            raise SourceError(f"{display}: cannot read from git: {str(e).split(': ', 1)[-1]}") from None


def _object(repo: Repo, rev: str, path: str) -> tuple[str, str]:
    """(type, object name) of `path` in revision `rev` ("tree" for the root)."""
    sha = commit(repo, rev)
    path = path.strip("/")
    spec = f"{sha}^{{tree}}" if path in ("", ".") else f"{sha}:{path}"
    try:
        kind = repo.run(["cat-file", "-t", spec], what=f"{rev}:{path}").decode().strip()
    except GitError as e:
        if any(w in str(e).lower() for w in ("does not exist", "exists on disk, but not in", "not a valid object name")):
            raise GitError(f"{rev}:{path}: no such path in revision {rev}") from None
        raise GitError(f"{rev}:{path}: cannot be read from git ({_git_reason(e)})") from None
    return kind, spec


class BlobEntry:
    """A git blob as a tree.Entry: identity is the blob hash, bytes come from git."""

    KEEP = 64 * 1024  # a blob this small is read once: its head is kept for the source that follows
    refused = None  # as tree.Entry: a blob is never a link out of a tree (git stores a link as its text)
    folder = False

    def __init__(self, blob: Blob, rel: str, display: str):
        self.blob = blob
        self.rel = rel
        self.size = blob.size
        self.display = display
        self.path = None
        self._data: bytes | None = None

    def identity(self) -> str:
        return self.blob.hexsha

    def head(self) -> bytes:
        try:
            if self.size <= self.KEEP:
                self._data = self.blob.read(self.display)
                return self._data[:budget.BINARY_SNIFF]
            return self.blob.read(self.display, budget.BINARY_SNIFF)
        except SourceError:
            return b""

    def source(self) -> Source:
        data, self._data = self._data, None
        return Source(name=self.display, data=data if data is not None else self.blob.read(self.display))


def is_tree(repo: Repo, rev: str, path: str) -> bool:
    return _object(repo, rev, path)[0] == "tree"


def read_source(repo: Repo, rev: str, path: str) -> Source:
    kind, spec = _object(repo, rev, path)
    display = f"{rev}:{path.strip('/')}"
    if kind != "blob":
        raise GitError(f"{rev}:{path}: is a folder" if kind == "tree" else f"{rev}:{path}: is a {kind}, not a file")
    try:
        sha = repo.run(["rev-parse", "--verify", "--quiet", spec], what=display).decode().strip()
        size = repo.info(sha, display)[1]
        return Source(name=display, data=Blob(repo, sha, size, path.strip("/")).read(display))
    except (SourceError, ValueError) as e:
        raise GitError(str(e).splitlines()[0] if str(e) else f"{display}: cannot read from git") from None


def _ls_tree(repo: Repo, spec: str, what: str) -> list[tuple[str, str, str, int, str]]:
    """(mode, type, object, size, path) of every entry under a tree, recursively."""
    out = repo.run(["ls-tree", "-r", "-l", "-z", "--full-tree", spec], what=what)
    rows = []
    for rec in out.split(b"\0"):
        if not rec:
            continue
        meta, _, name = rec.partition(b"\t")
        parts = meta.split()
        if len(parts) != 4:
            continue
        mode, kind, sha, size = (p.decode() for p in parts)
        rows.append((mode, kind, sha, int(size) if size.isdigit() else 0, name.decode("utf-8", "surrogateescape")))
    return rows


def listing(repo: Repo, rev: str, paths: list[str] | None, skip_dirs: list[str] | None = None) -> dict[str, BlobEntry]:
    """Every blob under `paths` (all of the tree when none) at `rev`, by path in the repository."""
    import fnmatch

    out: dict[str, BlobEntry] = {}
    skip = skip_dirs or []
    for p in paths or [""]:
        base = p.strip("/")
        kind, spec = _object(repo, rev, base)
        if kind == "blob":
            sha = repo.run(["rev-parse", "--verify", "--quiet", spec], what=f"{rev}:{base}").decode().strip()
            size = repo.info(sha, f"{rev}:{base}")[1]
            out[base] = BlobEntry(Blob(repo, sha, size, base), base, f"{rev}:{base}")
            continue
        if kind != "tree":
            continue
        for mode, typ, sha, size, rel in _ls_tree(repo, spec, f"{rev}:{base}"):
            if typ != "blob" or mode == "120000":  # symbolic links are not followed; submodules are commits
                continue
            dirs = rel.split("/")[:-1]
            if any(fnmatch.fnmatchcase(d, s) for d in dirs for s in skip):
                continue
            full = f"{base}/{rel}" if base else rel
            out[full] = BlobEntry(Blob(repo, sha, size, full), full, f"{rev}:{full}")
    return out


def subtree_listing(repo: Repo, rev: str, path: str, skip_dirs: list[str]) -> dict[str, BlobEntry]:
    """The blobs of one folder at `rev`, keyed relative to that folder (for REV:dir REV:dir)."""
    base = path.strip("/")
    full = listing(repo, rev, [base], skip_dirs)
    out = {}
    for p, e in full.items():
        rel = p[len(base) + 1:] if base else p
        e.rel = rel
        out[rel] = e
    return out


def merge_base(repo: Repo, a: str, b: str) -> str | None:
    """The best common ancestor of two revisions (`A...B`), or None when they have none."""
    out = repo.run(["merge-base", "--end-of-options", a, b], what=f"{a}...{b}").decode().strip()
    return out or None


def blob_at(repo: Repo, rev: str, path: str) -> "Blob | None":
    """The blob at `path` in revision `rev` ("the index": the staged files), or None."""
    r = IndexResolver(repo.cwd, "") if rev == "the index" else RevisionResolver(repo.cwd, rev, prefix="")
    r._repo = repo
    return r.blob(path)


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
        self._sha = None

    def __getstate__(self):
        return {**self.__dict__, "_repo": None, "_sha": None}

    def _commit(self) -> str:
        if self._sha is None:
            self._repo = self._repo or open_repo(self.where)
            self._sha = commit(self._repo, self.rev)
        return self._sha

    def top(self) -> str:
        self._commit()
        return self._repo.working_tree_dir or self.where

    def path_of(self, src: Source) -> str | None:
        if src.name in self.paths:
            return self.paths[src.name]
        return src.name[len(self.prefix):] if src.name.startswith(self.prefix) else None

    def blob(self, path: str) -> Blob | None:
        """The blob at `path` in the revision, or None (a folder, a link, nothing there)."""
        sha = self._commit()
        out = self._repo.run(["ls-tree", "-l", "-z", sha, "--", path], what=f"{self.rev}:{path}")
        for rec in out.split(b"\0"):
            meta, _, name = rec.partition(b"\t")
            parts = meta.split()
            if len(parts) == 4 and name.decode("utf-8", "surrogateescape") == path and parts[1] == b"blob" \
                    and parts[0] != b"120000":
                size = parts[3].decode()
                return Blob(self._repo, parts[2].decode(), int(size) if size.isdigit() else 0, path)
        return None

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
                if self.blob(p) is not None:
                    return Resolution(p, f"{how} in revision {self.rev}", tried)
            except GitError as e:
                return Resolution(None, "", tried, why=str(e))
        return Resolution(None, "", tried)

    def read(self, res, name: str) -> Source:
        try:
            blob = self.blob(res.path)
        except GitError as e:
            raise SourceError(str(e)) from None
        if blob is None:  # pragma: no cover - resolve() found it
            raise SourceError(f"{self.prefix}{res.path}: no such path in revision {self.rev}")
        shown = f"{self.prefix}{res.path}"
        return Source(name=shown, data=blob.read(shown))

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
        """path -> object name of every stage-0 entry of the index (`git ls-files -s`)."""
        if self._entries is None:
            self._repo = self._repo or open_repo(self.where)
            out = self._repo.run(["ls-files", "-s", "-z"], what="the index")
            entries = {}
            for rec in out.split(b"\0"):
                meta, _, name = rec.partition(b"\t")
                parts = meta.split()
                if len(parts) == 3 and parts[2] == b"0" and parts[0] != b"120000":
                    entries[name.decode("utf-8", "surrogateescape")] = parts[1].decode()
            self._entries = entries
        return self._entries

    def top(self) -> str:
        self._index()
        return self._repo.working_tree_dir or self.where

    def blob(self, path: str) -> Blob | None:
        sha = self._index().get(path)
        if sha is None:
            return None
        return Blob(self._repo, sha, self._repo.info(sha, f"{self.prefix}{path}")[1], path)
