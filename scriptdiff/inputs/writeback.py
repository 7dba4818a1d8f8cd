"""Writing a file of the user's project: `fix` replacing an NPU file with its edits, `init`
adding the configuration to pyproject.toml or writing scriptdiff.toml. These are the only
places scriptdiff changes a file it did not create (docs/fix.md, docs/bounds.md).

A file is replaced whole, never edited in place: the new bytes go to a temporary file beside
it, which is flushed to the disk (fsync) and then renamed over it (os.replace), and the folder
is flushed too, so a crash leaves the old file or the new one, never a mixture. Before that,
the file must still hold the bytes it was read with, and be a file a replacement does not
betray (`refusal`): a link, a file with other names (hard links, which a replacement would
split from it) or a read-only file is refused, with the reason, and nothing is written.
"""
from __future__ import annotations

import os
import stat
import tempfile

from .sources import SourceError, read_bytes


class WriteRefused(Exception):
    """One line: why the file is not written (without its name)."""


def refusal(path: str) -> str | None:
    """Why the file at `path` may not be replaced, or None. Asked of the path itself (a link is
    not followed: its caller says which file it writes)."""
    try:
        st = os.lstat(path)
    except OSError as e:
        return f"cannot be read ({e.strerror or e})"
    if stat.S_ISLNK(st.st_mode):
        return f"is a link (to {os.readlink(path)}); a link is never written through"
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file"
    if st.st_nlink > 1:
        others = st.st_nlink - 1
        return (f"has {others} other name{'s' if others > 1 else ''} (hard link{'s' if others > 1 else ''}), which "
                f"replacing it would split from it")
    if not st.st_mode & 0o222 or not os.access(path, os.W_OK):
        return "is read-only"
    return None


def replace(path: str, expect: bytes | None, data: bytes, display: str | None = None) -> None:
    """Make `path` hold `data`. `expect`: the bytes it must still hold (it was read with them),
    or None: it must not exist (a new file; never one that appeared meanwhile). The file's mode
    is kept. Raises WriteRefused (the file as it was) with the reason."""
    display = display or path
    folder = os.path.dirname(os.path.abspath(path))
    mode = 0o644
    if expect is not None:
        why = refusal(path)
        if why is not None:
            raise WriteRefused(why)
        try:
            now = read_bytes(path, display)
        except SourceError as e:
            raise WriteRefused(str(e).split(": ", 1)[-1]) from None
        if now != expect:
            raise WriteRefused("changed on disk since it was read")
        mode = os.lstat(path).st_mode & 0o7777
    elif os.path.lexists(path):
        raise WriteRefused("appeared on disk meanwhile")
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".scriptdiff-", dir=folder)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        if expect is None:
            _create(tmp, path)
        else:
            os.replace(tmp, path)
        tmp = None
    except OSError as e:
        raise WriteRefused(f"cannot write: {e.strerror or e}") from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    _sync_folder(folder)


def _create(tmp: str, path: str) -> None:
    """Give the finished temporary file `tmp` the new name `path`, never over a file that
    appeared meanwhile: a hard link where the file system makes them, else a rename after a
    last look."""
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise WriteRefused("appeared on disk meanwhile") from None
    except OSError:  # no hard links here (FAT, some network file systems)
        if os.path.lexists(path):
            raise WriteRefused("appeared on disk meanwhile") from None
        os.replace(tmp, path)
        return
    os.unlink(tmp)


def _sync_folder(folder: str) -> None:
    """Flush the folder's entry of the new file to the disk (the rename is durable). A file
    system that cannot flush a folder (some network ones) has written the file all the same."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
