"""Where bytes come from, and how they become text.

A `Source` is a named blob: a file on disk, a blob at a git revision, a snapshot. Nothing
downstream knows which. Decoding never fails: UTF-8 (with or without BOM) first, then
GB18030 (GBK comments are common in Ascend code), then Latin-1; the fallback is noted so the
report can say so. Binary content is detected and refused with a one-line reason.
"""
from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field
from pathlib import Path

MAX_BINARY_SNIFF = 8192


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
        head = self.data[:MAX_BINARY_SNIFF]
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


def read_path(path: str | os.PathLike, name: str | None = None) -> Source:
    """Read one file. Raises SourceError with a one-line reason."""
    p = Path(path)
    display = name or str(path)
    try:
        data = p.read_bytes()  # one open(); the reasons are worked out only when it fails
    except FileNotFoundError:
        if p.is_symlink():
            raise SourceError(f"{display}: broken symbolic link") from None
        raise SourceError(f"{display}: no such file or directory") from None
    except IsADirectoryError:
        raise SourceError(f"{display}: is a directory") from None
    except PermissionError:
        raise SourceError(f"{display}: permission denied") from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise SourceError(f"{display}: symbolic link loop") from None
        raise SourceError(f"{display}: cannot read: {e.strerror or e}") from None
    return Source(name=display, data=data, origin=str(p))

