"""Where bytes come from, and how they become text.

A `Source` is a named blob: a file on disk, a blob at a git revision, a snapshot. Nothing
downstream knows which. Decoding never fails: UTF-8 (with or without BOM) first, then
GB18030 (GBK comments are common in Ascend code), then Latin-1; the fallback is noted so the
report can say so. Binary content is detected and refused with a one-line reason.

Every reader that opens a file goes through `open_regular` (or `read_bytes` / `read_path`):
only a regular file (or standard input, for a command argument `-`) is read. A FIFO would
block forever and /dev/zero would be read until memory runs out, so the file type is
checked with stat() before the file is opened, and again on the open descriptor (opened
non-blocking, so a FIFO swapped in between cannot block). Reads stop at a size cap.

Kernel pseudo-filesystems are refused too: `/proc/kmsg` stats as a regular file of size 0
and blocks when read, and so may any file of procfs, sysfs, debugfs and their kin. A file
is on one when its device (st_dev, from the stat above) is that of a pseudo-filesystem
mount listed in /proc/self/mountinfo (read once per process; this catches links to such
files and such filesystems mounted anywhere), or, where the mount table cannot be read,
when its path is under /proc or /sys. A reader that reads a known machine file there
(`collect`: /proc/driver/nvidia/version) says so with `pseudo_ok`.
"""
from __future__ import annotations

import errno
import os
import stat
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .. import budget
from .filekind import pseudo_reason, special_reason  # noqa: F401 (also read from here)


class SourceError(Exception):
    """An input that cannot be read: the message is one line, naming the reason."""


@dataclass
class Source:
    name: str  # the display path (as given, or relative to a tree root, or REV:path)
    data: bytes
    origin: str | None = None  # the real file path on disk, when there is one
    _text: str | None = field(default=None, repr=False)
    encoding: str | None = None
    kind: str | None = None  # the registry's file kind, once detected (registry.detect)

    @property
    def suffix(self) -> str:
        base = self.name.rsplit("/", 1)[-1]
        return ("." + base.rsplit(".", 1)[-1].lower()) if "." in base else ""

    @property
    def basename(self) -> str:
        base = self.name.replace("\\", "/").rsplit("/", 1)[-1]
        if self.origin is None and ":" in base:  # REV:file.py read from git
            base = base.rsplit(":", 1)[-1]
        return base

    def is_binary(self) -> bool:
        head = self.data[:budget.BINARY_SNIFF]
        if not head:
            return False
        if head.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
            return False
        if b"\x00" in head:
            return True
        return False

    @property
    def text(self) -> str:
        if self._text is None:
            self._text, self.encoding = decode(self.data)
        return self._text

    def decode_note(self) -> str | None:
        """A note for the report when the file was not plain UTF-8."""
        _ = self.text
        if self.encoding in (None, "utf-8", "ascii"):
            return None
        if self.encoding == "utf-8-sig":
            return None
        return f"not UTF-8; decoded as {self.encoding}"


def decode(data: bytes) -> tuple[str, str]:
    if data.startswith(b"\xef\xbb\xbf"):
        try:
            return data[3:].decode("utf-8"), "utf-8-sig"
        except UnicodeDecodeError:
            pass
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16"), "utf-16"
        except UnicodeDecodeError:
            pass
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("gb18030"), "gb18030"
    except UnicodeDecodeError:
        return data.decode("latin-1"), "latin-1"


def exception_reason(e: BaseException) -> str:
    """A Python exception as a user reads it: what in the input caused it, never advice
    meant for a programmer (sys.set_int_max_str_digits)."""
    text = str(e).splitlines()[0] if str(e) else ""
    if isinstance(e, ValueError) and "integer string conversion" in text:
        digits = text.rsplit("value has ", 1)[-1].split(" ", 1)[0] if "value has " in text else None
        limit = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 4300
        size = f"of {int(digits):,} digits" if digits and digits.isdigit() else "too long"
        return (f"holds a number {size}, longer than the {limit:,} digits a number may have; "
                f"shorten it, or quote it if it is not meant as a number")
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def _os_reason(e: OSError, path, display: str) -> str:
    if isinstance(e, FileNotFoundError):
        if os.path.islink(path):
            return f"{display}: broken symbolic link"
        return f"{display}: no such file or directory"
    if isinstance(e, IsADirectoryError):
        return f"{display}: is a directory"
    if isinstance(e, PermissionError):
        return f"{display}: permission denied"
    if e.errno == errno.ELOOP:
        return f"{display}: symbolic link loop"
    if e.errno == errno.ENOTDIR:  # a/b.py/c: a file where the path needs a folder
        parent = os.path.dirname(str(path))
        while parent and not os.path.isfile(parent) and os.path.dirname(parent) != parent:
            parent = os.path.dirname(parent)
        where = f"{parent} is a file, not a folder" if parent and os.path.isfile(parent) else "a part of it is a file"
        return f"{display}: no such file: {where}"
    return f"{display}: cannot read: {e.strerror or e}"


def check_regular(path: str | os.PathLike, display: str | None = None, pseudo_ok: bool = False,
                  follow: bool = True) -> os.stat_result:
    """stat() a path (following links, unless not `follow`: then a link is refused too) and
    refuse anything but a regular file (kernel pseudo-files included, unless `pseudo_ok`),
    without opening it. Raises SourceError with a one-line reason naming `display`."""
    display = display or str(path)
    try:
        st = os.stat(path, follow_symlinks=follow)
    except (OSError, ValueError) as e:  # ValueError: a NUL byte in the path
        if isinstance(e, ValueError):
            raise SourceError(f"{display}: not a valid path") from None
        raise SourceError(_os_reason(e, path, display)) from None
    reason = special_reason(st.st_mode) or (None if pseudo_ok else pseudo_reason(path, st))
    if reason:
        raise SourceError(f"{display}: {reason}")
    return st


def is_regular(path: str | os.PathLike) -> bool:
    """A regular file (through links); never opens it."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def shown_path(path: str) -> str:
    """A path as a report shows it: an absolute one relative to the current folder (as given
    on another drive), a relative one as given."""
    if not os.path.isabs(path):
        return path
    try:
        return os.path.relpath(path).replace(os.sep, "/")
    except ValueError:  # another drive
        return path


def open_regular(path: str | os.PathLike, display: str | None = None, buffering: int = -1, pseudo_ok: bool = False,
                 follow: bool = True):
    """A binary file object for a regular file; raises SourceError otherwise.

    The type is checked before opening (opening a FIFO blocks, opening a device may act),
    then on the descriptor, which is opened non-blocking: a path swapped for a FIFO between
    the two cannot block the open, and is refused by the second check. Kernel pseudo-files
    are refused both times unless `pseudo_ok` (a known machine file that does not block).
    Not `follow`: a path whose last part is a symbolic link is refused, not followed (a path
    already resolved by the caller, `collect --root`)."""
    display = display or str(path)
    check_regular(path, display, pseudo_ok, follow)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        raise SourceError(_os_reason(e, path, display)) from None
    try:
        st = os.fstat(fd)
        reason = special_reason(st.st_mode) or (None if pseudo_ok else pseudo_reason(path, st))
        if reason:
            raise SourceError(f"{display}: {reason}")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb", buffering=buffering)
    except BaseException:
        os.close(fd)
        raise


def seconds(variable: str, default: float) -> float:
    """A deadline in seconds: $variable when it is a positive number, else `default` (a bound
    of budget.py: GIT_TIMEOUT, STORAGE_TIMEOUT)."""
    try:
        t = float(os.environ.get(variable, ""))
    except ValueError:
        return default
    return t if t > 0 else default


def upward(start: str, limit: int = 64):
    """The folders from `start` (made absolute) up to the file system's root, nearest first."""
    d = os.path.abspath(start)
    for _ in range(limit):
        yield d
        parent = os.path.dirname(d)
        if parent == d:
            return
        d = parent


def is_repo_top(d: str) -> bool:
    """`d` holds a .git entry (a work tree's top; no git process). A replayed run depends on
    the answer (commands/runmemo), so the look is audited."""
    sys.audit("scriptdiff.looked", os.path.join(d, ".git"))
    return os.path.exists(os.path.join(d, ".git"))


def git_top(start: str) -> str | None:
    """The nearest folder at or above `start` that is a git work tree's top, or None."""
    return next((d for d in upward(start) if is_repo_top(d)), None)


def too_large(display: str, limit: int, size: int | None = None, limit_name: str | None = None,
              what: str = "not read") -> str:
    """The one-line refusal of a file above a size limit."""
    return f"{display}: {over_limit(limit, size, limit_name, what)}"


def over_limit(limit: int, size: int | None = None, limit_name: str | None = "--max-bytes",
               what: str | None = None) -> str:
    """Why an input above a size limit was not read whole, in the one wording every reader
    uses: "larger than the --max-bytes limit (620,000 > 500,000 bytes); settings not read"."""
    if limit_name:
        sizes = f"{size:,} > {limit:,} bytes" if size is not None else f"more than {limit:,} bytes"
        text = f"larger than the {limit_name} limit ({sizes})"
    else:
        text = f"larger than {limit:,} bytes"
    return f"{text}; {what}" if what else text


# real path -> bytes read instead of the file's (`overlaid`): a run over edited files not yet written
_OVERLAY: dict[str, bytes] = {}


@contextmanager
def overlaid(files: dict[str, bytes]):
    """Within the block, reading one of these files (by real path) gives these bytes instead of
    the ones on disk: `scriptdiff fix` checks its edits by the same run as `diff` before it
    writes anything (or without writing, under --diff)."""
    saved = dict(_OVERLAY)
    _OVERLAY.update({os.path.realpath(p): b for p, b in files.items()})
    try:
        yield
    finally:
        _OVERLAY.clear()
        _OVERLAY.update(saved)


def _overlay(path, limit: int, display: str, limit_name: str | None) -> bytes | None:
    data = _OVERLAY.get(os.path.realpath(path))
    if data is not None and len(data) > limit:
        raise SourceError(too_large(display, limit, len(data), limit_name))
    return data


def read_bytes(path: str | os.PathLike, display: str | None = None, limit: int = budget.MAX_READ,
               limit_name: str | None = None) -> bytes:
    """The bytes of a regular file, never more than `limit` (above it: SourceError, and at
    most limit + 1 bytes were read). `limit_name` names the limit in the message
    ("--max-bytes"). Raises SourceError with a one-line reason."""
    display = display or str(path)
    if _OVERLAY:
        data = _overlay(path, limit, display, limit_name)
        if data is not None:
            return data
    with open_regular(path, display) as fh:
        try:
            size = os.fstat(fh.fileno()).st_size
            if size > limit:
                raise SourceError(too_large(display, limit, size, limit_name))
            data = fh.read(limit + 1)
        except OSError as e:
            raise SourceError(_os_reason(e, path, display)) from None
    if len(data) > limit:  # it grew while being read
        raise SourceError(too_large(display, limit, None, limit_name))
    return data


def read_text(path: str | os.PathLike, display: str | None = None, limit: int = budget.MAX_READ) -> str:
    """A regular file's text (UTF-8, strict), under the size cap. Raises SourceError."""
    display = display or str(path)
    data = read_bytes(path, display, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SourceError(f"{display}: not UTF-8 ({e.reason} at byte {e.start})") from None


def read_head(path: str | os.PathLike, n: int) -> bytes:
    """The first n bytes of a regular file, or b"" when it is not one or cannot be read."""
    if _OVERLAY and os.path.realpath(path) in _OVERLAY:
        return _OVERLAY[os.path.realpath(path)][:n]
    try:
        with open_regular(path) as fh:
            return fh.read(n)
    except (SourceError, OSError):
        return b""


def read_stdin(limit: int = budget.MAX_READ, limit_name: str | None = None, display: str = "<stdin>") -> bytes:
    """Standard input (a command's `-` argument), at most `limit` bytes. Raises SourceError."""
    data = sys.stdin.buffer.read(limit + 1)
    if len(data) > limit:
        raise SourceError(too_large(display, limit, None, limit_name))
    return data


def read_path(path: str | os.PathLike, name: str | None = None, limit: int = budget.MAX_READ) -> Source:
    """Read one regular file, at most `limit` bytes. Raises SourceError with a one-line reason."""
    display = name or str(path)
    return Source(name=display, data=read_bytes(path, display, limit), origin=str(Path(path)))
