"""Fast content hashes for data files and tensors: blake3, large reads, files in parallel.

Hashing is the whole cost of fingerprinting a dataset, so it is kept close to disk speed:
files are read in 8 MiB chunks into one reused buffer (no per-chunk allocation), blake3
releases the GIL so several files hash at once in a thread pool, and one big file can use
blake3's own threads (`max_threads`). Files of 64 MiB and more are hashed straight from a
read-only memory map, 256 MiB per call, the pages returned after each segment. Memory
stays at a few buffers whatever the file size.

`--sample` hashes only the head, the tail and evenly strided blocks of each file. A sampled
hash is a different quantity from a full hash (it is marked as such in the manifest and the
sample layout is part of the mode string), so a sampled manifest is only ever compared
hash-for-hash with another manifest sampled the same way.

Only regular files are opened (sources.open_regular): the size that plans the reads is the
open descriptor's, so a file swapped for a FIFO or a device after the listing is refused.

An object in a store (`s3://...`, storage.py) is hashed from ranged reads of the same byte
spans, a few in flight, so its hash equals the hash of a local copy of it, full or sampled,
and memory stays at a few chunks.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from .. import budget
from ..inputs import storage
from ..inputs.sources import open_regular
from . import wholehash
from .manifest import ALGORITHM, FULL  # noqa: F401 (read from here too)
from .wholehash import hasher as _hasher



@dataclass(frozen=True)
class SampleSpec:
    edge: int = budget.SAMPLE_EDGE
    block: int = budget.SAMPLE_BLOCK
    blocks: int = budget.SAMPLE_BLOCKS

    def mode(self) -> str:
        """The sample layout as a string; two hashes are comparable only if their modes match."""
        return f"sampled:edge={self.edge},block={self.block},blocks={self.blocks}"

    @classmethod
    def parse(cls, mode: str) -> "SampleSpec | None":
        if not mode.startswith("sampled:"):
            return None
        try:
            parts = dict(p.split("=", 1) for p in mode.split(":", 1)[1].split(","))
            return cls(int(parts["edge"]), int(parts["block"]), int(parts["blocks"]))
        except (KeyError, ValueError):
            return None

    def ranges(self, size: int) -> list[tuple[int, int]]:
        """(offset, length) of the bytes read from a file of `size` bytes."""
        if size <= 2 * self.edge + self.blocks * self.block:
            return [(0, size)]
        out = [(0, self.edge)]
        inner_start, inner_end = self.edge, size - self.edge
        stride = (inner_end - inner_start) // self.blocks
        for i in range(self.blocks):
            off = inner_start + i * stride + (stride - self.block) // 2
            out.append((off, self.block))
        out.append((size - self.edge, self.edge))
        return out


@dataclass(frozen=True)
class Hashing:
    """How a fingerprint is hashed: sampled (`sample`: the heads, tails and strided blocks of
    large files) or whole (None), by `workers` threads (None: default_workers()), telling
    `progress` (start(total), advance(n), close()), on this machine or in parts on a Ray
    cluster (`fanout`: a checks.fanout.Fanout)."""

    sample: SampleSpec | None = None
    workers: int | None = None
    progress: object = None
    fanout: object = None


@dataclass
class FileHash:
    hash: str
    size: int
    mode: str  # "full" or a SampleSpec.mode()
    bytes_read: int
    lines: int | None = None  # newline count, when asked for and the whole file was read


def hash_file(path: str | os.PathLike, sample: SampleSpec | None = None, count_lines: bool = False,
              progress=None, chunk: int = budget.FILE_HASH_CHUNK, size: int | None = None) -> FileHash:
    """Hash one file (or object: `size` is its listed size). `progress(nbytes)` is called as
    bytes are read. Raises OSError, or sources.SourceError when the path is not a regular
    file or its store cannot read it."""
    if storage.is_url(path):
        return _hash_spans(storage.store_for(path), str(path), size, sample, count_lines, progress)
    with open_regular(path, buffering=0) as fh:
        return _hash_open(fh, sample, count_lines, progress, chunk)


def _hash_spans(store, path: str, size: int | None, sample: SampleSpec | None, count_lines: bool,
                progress) -> FileHash:
    """The hash _hash_open computes, from the store's ranged reads of the same spans."""
    size = store.size(path) if size is None else size
    spans = sample.ranges(size) if sample is not None else [(0, size)]
    sampled = spans != [(0, size)]
    h = _hasher(size)
    if sampled:  # as _hash_open: the size is part of the sampled content
        h.update(size.to_bytes(8, "little"))
    lines = 0 if count_lines and not sampled else None
    read = 0
    for part in store.spans(path, [s for s in spans if s[1]]):
        h.update(part)
        if lines is not None:
            lines += part.count(b"\n")
        read += len(part)
        if progress:
            progress(len(part))
    return FileHash(h.hexdigest(), size, sample.mode() if sampled else FULL, read, lines)


def _hash_open(fh, sample: SampleSpec | None, count_lines: bool, progress, chunk: int) -> FileHash:
    size = os.fstat(fh.fileno()).st_size
    if size >= wholehash.BIG_FILE and not count_lines and (sample is None or sample.ranges(size) == [(0, size)]):
        return _hash_mapped(fh, size, progress)
    h = _hasher(size)
    lines = 0 if count_lines else None
    buf = bytearray(chunk)
    view = memoryview(buf)
    read = 0
    if sample is not None and sample.ranges(size) != [(0, size)]:
        # the size is part of the sampled content: equal samples of different sizes differ
        h.update(size.to_bytes(8, "little"))
        for off, length in sample.ranges(size):
            fh.seek(off)
            left = length
            while left:
                n = fh.readinto(view[:min(chunk, left)])
                if not n:
                    raise OSError(f"file shrank while reading (at byte {off + length - left})")
                h.update(view[:n])
                left -= n
                read += n
                if progress:
                    progress(n)
        return FileHash(h.hexdigest(), size, sample.mode(), read, None)
    # not sampled, or small enough that the sample is the whole file: a full hash
    while True:
        n = fh.readinto(view)
        if not n:
            break
        part = view[:n]
        h.update(part)
        if lines is not None:
            lines += buf.count(b"\n", 0, n)
        read += n
        if progress:
            progress(n)
    return FileHash(h.hexdigest(), size, FULL, read, lines)


def _hash_mapped(fh, size: int, progress=None) -> FileHash:
    """A big file hashed through a memory map (wholehash.hash_mapped)."""
    return FileHash(wholehash.hash_mapped(fh, size, progress), size, FULL, size, None)


def hash_buffer(data) -> str:
    """blake3 of a bytes-like object (a tensor's bytes); multithreaded for big ones."""
    import blake3

    n = len(data) if not isinstance(data, memoryview) else data.nbytes
    h = blake3.blake3(max_threads=blake3.blake3.AUTO) if n >= wholehash.BIG_FILE else blake3.blake3()
    h.update(data)
    return h.hexdigest()


def new_hasher(size: int = 0):
    return _hasher(size)


def default_workers() -> int:
    return max(2, min(8, (os.cpu_count() or 2)))
