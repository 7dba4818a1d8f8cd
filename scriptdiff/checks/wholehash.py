"""blake3 over a whole local file: the hashing a fingerprint does when nothing is sampled.

checks/hashing.py (samples, object stores, line counts, progress) and the plain-file path of
`data fingerprint` (commands/quickprint.py) both hash a big file here, through a memory map;
this module imports nothing but blake3, and that only when it hashes.
"""
from __future__ import annotations

import os

from .. import budget

# above this size one file is hashed with blake3's own worker threads as well
BIG_FILE = 64 * 1024 * 1024


def hasher(size: int):
    """A blake3 hasher for `size` bytes: multithreaded for a big file (the hash is the same)."""
    import blake3

    if size >= BIG_FILE:
        return blake3.blake3(max_threads=blake3.blake3.AUTO)
    return blake3.blake3()


def hash_mapped(fh, size: int, progress=None) -> str:
    """The hex blake3 of a big file, read through a read-only memory map, a segment at a time.

    No copy into a Python buffer, and blake3 spreads each segment over its threads; pages
    are handed back after each segment so resident memory does not grow with the file.
    OSError when the file's size is not `size` (it changed since it was listed)."""
    import mmap

    h = hasher(size)
    mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    view = memoryview(mm)
    try:
        n = len(mm)
        for a in range(0, n, budget.MAP_SEGMENT):
            b = min(n, a + budget.MAP_SEGMENT)
            part = view[a:b]
            h.update(part)
            part.release()
            if hasattr(mm, "madvise") and hasattr(mmap, "MADV_DONTNEED"):
                try:
                    mm.madvise(mmap.MADV_DONTNEED, a, b - a)
                except (OSError, ValueError):
                    pass
            if progress:
                progress(b - a)
    finally:
        view.release()
        mm.close()
    if n != size:
        raise OSError(f"file changed size while hashing ({size} -> {n} bytes)")
    return h.hexdigest()


def hash_read(fd: int, size: int, chunk: int = budget.FILE_HASH_CHUNK) -> str:
    """The hex blake3 of an open file of `size` bytes read to its end (a file under BIG_FILE);
    OSError when it did not hold `size` bytes."""
    h = hasher(size)
    n = 0
    while True:
        part = os.read(fd, chunk)
        if not part:
            break
        h.update(part)
        n += len(part)
    if n != size:
        raise OSError(f"file changed size while hashing ({size} -> {n} bytes)")
    return h.hexdigest()
