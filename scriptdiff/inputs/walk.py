"""Walking a folder: every regular file under a root, by relative path, as an `Entry` (its
size, the name shown, its bytes and content identity on demand). Version-control, cache and
virtualenv folders are skipped by the names the caller passes (run.pairing.skip_dirs); a symbolic
link, to a file or to a folder, is followed only when it stays inside the tree: one that leaves it
is an `Entry` with `refused` set, never opened, and accounted by the caller as an input that
failed; each folder is walked once, so a link loop ends instead of hanging. Folders nested past
budget.TREE_DEPTH are one error line."""
from __future__ import annotations

import fnmatch
import hashlib
import os
from pathlib import Path

from .. import budget
from ..model import InputError
from .sources import Source, SourceError, open_regular, read_head, read_path


class Entry:
    """One file of a tree: where it is, how big, and how to get its bytes and identity."""

    def __init__(self, rel: str, size: int, display: str, path: str | None = None,
                 refused: InputError | None = None, folder: bool = False):
        self.rel = rel  # relative path with forward slashes
        self.size = size
        self.display = display  # the name shown in the report
        self.path = path  # real path on disk, when there is one
        # a symbolic link out of the tree: never opened; its error (said once, by the walk), and
        # whether it stands for a folder (then the other side's files under its name are unknown)
        self.refused = refused
        self.folder = folder

    def identity(self) -> str:
        """A content hash; equal identities mean equal bytes."""
        d = hashlib.blake2b(digest_size=16)
        try:
            with open_regular(self.path, self.display) as fh:  # swapped for a FIFO since the walk: refused
                for chunk in iter(lambda: fh.read(budget.COMPARE_CHUNK), b""):
                    d.update(chunk)
        except SourceError as e:
            raise OSError(str(e)) from None
        return d.hexdigest()

    def head(self) -> bytes:
        return read_head(self.path, budget.BINARY_SNIFF)

    def source(self) -> Source:
        return read_path(self.path, self.display)


def skipped(name: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def walk(root: str | os.PathLike, skip_dirs: list[str], errors: list[InputError], display: str) -> dict[str, Entry]:
    """Every regular file under root, by relative path. Never follows a link loop, nor a link
    out of the tree: such a link is an Entry with `refused` set (its error is in `errors`),
    never opened, so that its name still pairs with the other side's."""
    out: dict[str, Entry] = {}
    seen_dirs: set[tuple[int, int]] = set()
    root = Path(root)
    real_root = root.resolve()

    def visit(d: Path, rel: str, depth: int = 0) -> None:
        if depth > budget.TREE_DEPTH:  # a bound on the walk (and on this recursion), said in one line
            errors.append(InputError(f"{display}/{rel}".rstrip("/"), f"folder nested more than {budget.TREE_DEPTH} "
                                                                    f"levels deep; its files were not compared",
                                     fatal=True))
            return
        try:
            st = d.stat()
        except OSError as e:
            errors.append(InputError(f"{display}/{rel}".rstrip("/"), f"cannot read folder: {e.strerror or e}"))
            return
        ident = (st.st_dev, st.st_ino)
        if ident in seen_dirs:
            return  # a symbolic link back into a folder already walked
        seen_dirs.add(ident)
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError as e:
            errors.append(InputError(f"{display}/{rel}".rstrip("/"), f"cannot read folder: {e.strerror or e}"))
            return
        def refuse(r: str, link: str, what: str, folder: bool) -> None:
            err = InputError(_display(display, r), f"symbolic link to a {what} outside the tree (to "
                                                   f"{_target(link)}); not followed", fatal=True)
            errors.append(err)
            out[r] = Entry(r, 0, _display(display, r), None, refused=err, folder=folder)

        for e in entries:
            r = f"{rel}{e.name}"
            try:
                if e.is_dir(follow_symlinks=True):
                    if skipped(e.name, skip_dirs):
                        continue
                    if e.is_symlink() and not _inside(Path(e.path), real_root):
                        refuse(r, e.path, "folder", True)
                        continue
                    visit(Path(e.path), r + "/", depth + 1)
                    continue
                if e.is_file(follow_symlinks=True):
                    if e.is_symlink() and not _inside(Path(e.path), real_root):
                        refuse(r, e.path, "file", False)
                        continue
                    out[r] = Entry(r, e.stat(follow_symlinks=True).st_size, _display(display, r), e.path)
                elif e.is_symlink():
                    errors.append(InputError(f"{display}/{r}", "broken symbolic link; not compared"))
            except OSError as exc:
                errors.append(InputError(f"{display}/{r}", f"cannot read: {exc.strerror or exc}"))

    visit(root, "")
    return out


def _target(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"


def _inside(p: Path, root: Path) -> bool:
    try:
        p.resolve().relative_to(root)
        return True
    except (ValueError, OSError, RuntimeError):
        return False


def _same_content(a: Entry, b: Entry) -> bool:
    if a.size != b.size:
        return False
    try:
        if type(a) is Entry and type(b) is Entry:  # two files on disk: compared as read, no hashing
            return _same_bytes(a, b)
        return a.identity() == b.identity()
    except OSError:
        return False  # reading it again will give the error its one line


def _same_bytes(a: Entry, b: Entry) -> bool:
    try:
        with open_regular(a.path, a.display) as fa, open_regular(b.path, b.display) as fb:
            while True:
                x, y = fa.read(budget.COMPARE_CHUNK), fb.read(budget.COMPARE_CHUNK)
                if x != y:
                    return False
                if not x:
                    return True
    except SourceError as e:
        raise OSError(str(e)) from None


def _is_binary(e) -> bool:
    """Whether an entry's first bytes look binary (sniffed once per entry)."""
    cached = getattr(e, "_binary", None)
    if cached is None:
        try:
            cached = Source("x", e.head()).is_binary()
        except OSError:
            cached = False
        e._binary = cached
    return cached


def _display(root: str, rel: str) -> str:
    root = str(root).replace("\\", "/").rstrip("/")
    return f"{root}/{rel}" if root not in ("", ".") else rel
