"""What kind of file a path is, told by stat() alone, never by opening it.

A FIFO would block a reader forever, a device may act when opened, and a kernel
pseudo-file (`/proc/kmsg`) stats as a regular file of size 0 and blocks when read. Every
reader refuses them with one of the reasons here before it opens anything (the rest of that
story is in inputs/sources.py, which re-exports these names). Kept apart from the readers
so that a command that reads one plain file (`data fingerprint FILE`) checks it without
importing them.
"""
from __future__ import annotations

import functools
import os
import stat

from .. import budget


def special_reason(mode: int) -> str | None:
    """Why a file of this st_mode is not read, or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "is a directory"
    if stat.S_ISFIFO(mode):
        return f"is a FIFO (named pipe), not a regular file{_SAVE}"
    if stat.S_ISCHR(mode):
        return f"is a character device, not a regular file{_GIVE}"
    if stat.S_ISBLK(mode):
        return f"is a block device, not a regular file{_GIVE}"
    if stat.S_ISSOCK(mode):
        return f"is a socket, not a regular file{_SAVE}"
    return f"is not a regular file{_GIVE}"


# what to do about a special file, in the user's terms (it is never opened: it could block or act)
_SAVE = " (only regular files are read: save its content to a file and give that file)"
_GIVE = " (only regular files are read: give the path of a regular file)"


# kernel interfaces, not files: reading one may block (/proc/kmsg) or never end
PSEUDO_FILESYSTEMS = frozenset({
    "proc", "sysfs", "debugfs", "tracefs", "securityfs", "configfs", "cgroup", "cgroup2", "pstore", "bpf",
    "efivarfs", "fusectl", "binfmt_misc", "devpts", "mqueue", "devtmpfs", "rpc_pipefs", "nsfs", "selinuxfs",
    "autofs", "hugetlbfs"})
PSEUDO_PATHS = ("/proc/", "/sys/")  # where the mount table cannot be read


def _pseudo_devices() -> dict[int, str] | None:
    """st_dev -> filesystem type of every pseudo-filesystem mount, or None (no mount table)."""
    try:
        with open("/proc/self/mountinfo", "rb") as fh:  # procfs itself: never blocks
            table = fh.read(budget.MOUNT_TABLE).decode("utf-8", "replace")
    except OSError:
        return None
    out: dict[int, str] = {}
    for line in table.splitlines():
        left, sep, right = line.partition(" - ")
        fields = left.split()
        if not sep or len(fields) < 3 or not right:
            continue
        fstype = right.split()[0]
        major, _, minor = fields[2].partition(":")
        if fstype in PSEUDO_FILESYSTEMS and major.isdigit() and minor.isdigit():
            out[os.makedev(int(major), int(minor))] = fstype
    return out


_NO_TABLE = "?"  # the mount table cannot be read: the path says


@functools.lru_cache(maxsize=budget.MOUNT_DEVICES)
def _device_type(dev: int) -> str | None:
    """The pseudo-filesystem type of device `dev` (None: a real filesystem; _NO_TABLE: no mount
    table). Kept per device: a file on a device not seen before reads the table again, so a
    filesystem mounted while the process runs (a fork server, a library's caller) is known."""
    devices = _pseudo_devices()
    return _NO_TABLE if devices is None else devices.get(dev)


def pseudo_reason(path: str | os.PathLike, st: os.stat_result) -> str | None:
    """Why a file that stats as regular is still not read: it is on a kernel pseudo-filesystem."""
    fstype = _device_type(st.st_dev)
    if fstype == _NO_TABLE:
        real = os.path.realpath(path)
        fstype = "proc" if real.startswith("/proc/") else "sysfs" if real.startswith("/sys/") else None
    if fstype is None and str(path).startswith(PSEUDO_PATHS):
        fstype = "proc" if str(path).startswith("/proc/") else "sysfs"
    if fstype is None:
        return None
    return f"is a kernel interface on the {fstype} pseudo-filesystem, not a regular file (reading it may block){_SAVE}"
