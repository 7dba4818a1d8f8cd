"""Tensors read without loading a checkpoint: safetensors headers parsed by hand, bytes mapped.

A safetensors file is an 8-byte little-endian header length, a JSON header (name ->
dtype, shape, data_offsets) and the raw tensor bytes. The header is read and validated
here before anything is mapped, so a truncated or malformed file gives a one-line error
("truncated safetensors file: header declares N bytes, file has M") instead of a crash
deep inside a library. Tensor bytes are then read through a read-only memory map, one
chunk at a time; pages already processed are handed back to the kernel (MADV_DONTNEED), so
the resident memory of a comparison stays at a few chunk buffers, not at the checkpoint
and not even at the largest tensor.

Many tiny tensors cost little per tensor: one slotted record each (no dict), the file size
checked once per file rather than per tensor, a small tensor hashed from one slice of the
map without a chunk loop, and the cyclic garbage collector paused while the records (which
hold no cycles) are built. Files are opened only when they are regular files
(sources.open_regular): a FIFO named *.safetensors is refused, never waited on.

A checkpoint in object storage (`s3://...`, storage.py) is read the same way by range: the
8-byte length and the header with two small reads, tensor bytes in blocks of
budget.REMOTE_BLOCK (tensors lie one after another, so one block serves many small tensors
and a large tensor is streamed through), one block per file held at a time: memory follows
the block, not the shard, and no shard is downloaded whole.

Values are converted to float64 chunk by chunk for the statistics. numpy has no bfloat16
or float8, so those are widened by hand: bf16 is the top half of a float32 (shift left by
16 bits), float8 (E4M3FN, E5M2) goes through a 256-entry table.
"""
from __future__ import annotations

import gc
import math
import mmap
import os
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

from .. import budget
from ..inputs import storage
from ..inputs.sources import SourceError, open_regular
from ..inputs.jsonload import loads as load_json_data
from .hashing import new_hasher

# safetensors dtype name -> (numpy dtype or None when converted by hand, bytes per element)
DTYPES: dict[str, tuple[str | None, int]] = {
    "BOOL": ("?", 1), "U8": ("u1", 1), "I8": ("i1", 1), "U16": ("<u2", 2), "I16": ("<i2", 2),
    "U32": ("<u4", 4), "I32": ("<i4", 4), "U64": ("<u8", 8), "I64": ("<i8", 8),
    "F16": ("<f2", 2), "BF16": (None, 2), "F32": ("<f4", 4), "F64": ("<f8", 8),
    "F8_E4M3": (None, 1), "F8_E5M2": (None, 1),
}


class WeightsError(Exception):
    """A checkpoint that cannot be read; str() is one line naming the file and the reason."""


def too_many(count: int, display: str) -> None:
    """Refuse a checkpoint of more tensors than budget.TENSORS (one line, nothing compared)."""
    if count > budget.TENSORS:
        raise WeightsError(f"{display}: {count:,} tensors, more than the {budget.TENSORS:,} scriptdiff compares "
                           f"in one checkpoint; not compared")


@contextmanager
def gc_paused():
    """Build many small acyclic records without the cyclic GC rescanning them all again and
    again (with 10^5..10^6 records the repeated full collections cost more than the work)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@dataclass(slots=True)
class TensorRef:
    """Where one tensor's bytes are: a byte range of a file, or a loader (torch checkpoints)."""

    name: str
    dtype: str  # safetensors spelling: F32, BF16, ...
    shape: tuple[int, ...]
    display: str  # the file it lives in, as shown to the user
    nbytes: int
    path: str | None = None  # file on disk (safetensors)
    start: int = 0  # absolute offset of the first byte in `path`
    loader: Callable[[], object] | None = None  # returns a bytes-like object (torch)

    @property
    def numel(self) -> int:
        return math.prod(self.shape) if self.shape else 1


def read_header(path: str, display: str | None = None) -> tuple[dict, int, int]:
    """(header, offset of the data section, file size); raises WeightsError."""
    display = display or path
    try:
        if storage.is_url(path):
            store = storage.store_for(path)
            size = store.size(path)
            head = store.read(path, 0, min(8, size))
            n = int.from_bytes(head, "little") if len(head) == 8 else 0
            _check_lengths(display, head, n, size)
            raw = store.read(path, 8, n)
        else:
            with open_regular(path, display) as fh:
                size = os.fstat(fh.fileno()).st_size
                head = fh.read(8)
                n = int.from_bytes(head, "little") if len(head) == 8 else 0
                _check_lengths(display, head, n, size)
                raw = fh.read(n)
    except SourceError as e:
        raise WeightsError(str(e)) from None
    except OSError as e:
        raise WeightsError(f"{display}: cannot read: {e.strerror or e}") from None
    too_many(raw.count(b'"data_offsets"'), display)  # counted before 600,000 entries are parsed
    try:
        header = load_json_data(raw, display)
    except ValueError as e:
        raise WeightsError(f"{display}: not a safetensors file: the header is not JSON: {e}") from None
    if not isinstance(header, dict):
        raise WeightsError(f"{display}: not a safetensors file: the header is not a JSON object")
    return header, 8 + n, size


def _check_lengths(display: str, head: bytes, n: int, size: int) -> None:
    if len(head) < 8:
        raise WeightsError(f"{display}: truncated safetensors file: header declares 8 bytes, file has {size}")
    if n > budget.SAFETENSORS_HEADER:
        raise WeightsError(f"{display}: not a safetensors file: header length {n} is implausible")
    if 8 + n > size:
        raise WeightsError(f"{display}: truncated safetensors file: header declares {8 + n} bytes, file has {size}")


def list_safetensors(path: str, display: str | None = None) -> tuple[list[TensorRef], dict]:
    """The tensors of one safetensors file, validated against the file size."""
    display = display or os.path.basename(path)
    with gc_paused():
        header, data_start, size = read_header(path, display)
    meta = header.pop("__metadata__", None)
    too_many(len(header), display)
    refs = []
    end_max = 0
    with gc_paused():
        shapes: dict[tuple, tuple] = {}  # one tuple per distinct shape, shared by the records
        while header:  # entries are consumed as they become records: the header never doubles up
            name, entry = header.popitem()
            if not isinstance(entry, dict):
                raise WeightsError(f"{display}: malformed safetensors header: entry {name!r} is not an object")
            dtype = entry.get("dtype")
            shape = entry.get("shape")
            offs = entry.get("data_offsets")
            if (not isinstance(dtype, str) or not isinstance(shape, list)
                    or not all(type(d) is int and d >= 0 for d in shape)
                    or not isinstance(offs, list) or len(offs) != 2
                    or not all(type(o) is int and o >= 0 for o in offs) or offs[1] < offs[0]):
                raise WeightsError(f"{display}: malformed safetensors header: entry {name!r} needs dtype, shape "
                                   f"and data_offsets")
            nbytes = offs[1] - offs[0]
            info = DTYPES.get(dtype)
            if info is not None and nbytes != math.prod(shape) * info[1]:
                raise WeightsError(f"{display}: malformed safetensors header: {name!r} is {dtype}{shape} "
                                   f"({math.prod(shape) * info[1]} bytes) but has {nbytes} bytes of data")
            if offs[1] > end_max:
                end_max = offs[1]
            t = tuple(shape)
            refs.append(TensorRef(name, dtype, shapes.setdefault(t, t), display, nbytes, path, data_start + offs[0]))
    if data_start + end_max > size:
        raise WeightsError(f"{display}: truncated safetensors file: header declares {data_start + end_max} bytes, "
                           f"file has {size}")
    meta = meta if isinstance(meta, dict) else {}
    refs.reverse()  # header order (popitem took them from the end), so equal offsets keep it
    refs.sort(key=lambda r: r.start)
    return refs, meta


class Reader:
    """Reads tensors' bytes chunk by chunk; keeps a few files mapped; returns pages after use."""

    def __init__(self, max_open: int = 8):
        self._maps: OrderedDict[str, tuple] = OrderedDict()
        self.max_open = max_open
        self._blocks: dict[str, RemoteBlocks] = {}

    def remote(self, path: str) -> "RemoteBlocks":
        """The block reader of a checkpoint file in object storage (one block held per file)."""
        blocks = self._blocks.get(path)
        if blocks is None:
            if len(self._blocks) >= self.max_open:
                self._blocks.pop(next(iter(self._blocks)))
            blocks = self._blocks[path] = RemoteBlocks(path)
        return blocks

    def _map(self, path: str) -> mmap.mmap:
        if path in self._maps:
            self._maps.move_to_end(path)
            return self._maps[path][1]
        try:
            fh = open_regular(path)
        except SourceError as e:
            raise WeightsError(str(e)) from None
        try:
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # an empty file cannot be mapped
            fh.close()
            raise
        self._maps[path] = (fh, mm)
        while len(self._maps) > self.max_open:
            _, (ofh, omm) = self._maps.popitem(last=False)
            _close(ofh, omm)
        return mm

    def chunks(self, ref: TensorRef, chunk: int = budget.TENSOR_HASH_CHUNK) -> Iterator[memoryview]:
        """The tensor's raw bytes in pieces of at most `chunk` bytes (a multiple of the element size)."""
        if ref.nbytes == 0:
            return
        item = DTYPES.get(ref.dtype, (None, 1))[1]
        chunk = max(item, chunk - chunk % item)
        if ref.loader is not None:
            data = memoryview(ref.loader()).cast("B")
            for off in range(0, data.nbytes, chunk):
                yield data[off:off + chunk]
            return
        if storage.is_url(ref.path):
            yield from self.remote(ref.path).chunks(ref, min(chunk, budget.REMOTE_BLOCK))
            return
        mm = self._map(ref.path)
        size = len(mm)  # the file as mapped: one size per file, not a stat() per tensor
        if ref.start + ref.nbytes > size:
            raise WeightsError(f"{ref.display}: truncated safetensors file: header declares "
                               f"{ref.start + ref.nbytes} bytes, file has {size}")
        view = memoryview(mm)
        try:
            for off in range(ref.start, ref.start + ref.nbytes, chunk):
                end = min(off + chunk, ref.start + ref.nbytes)
                part = view[off:end]
                try:
                    yield part
                finally:
                    _release(part)
                _drop_pages(mm, off, end)
        finally:
            _release(view)

    def close(self) -> None:
        self._blocks.clear()
        while self._maps:
            _, (fh, mm) = self._maps.popitem()
            _close(fh, mm)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _release(view: memoryview) -> None:
    try:
        view.release()
    except BufferError:  # still exported (a numpy array over it); freed with that array
        pass


def _close(fh, mm) -> None:
    try:
        mm.close()
    except BufferError:  # a view is still alive somewhere; the GC closes it later
        pass
    fh.close()


_PAGE = mmap.PAGESIZE


def _drop_pages(mm: mmap.mmap, start: int, end: int) -> None:
    """Tell the kernel the mapped pages in [start, end) will not be needed again (not resident)."""
    if not hasattr(mm, "madvise") or not hasattr(mmap, "MADV_DONTNEED"):
        return
    a = start - start % _PAGE
    b = end - end % _PAGE if end < len(mm) else len(mm)
    if b > a:
        try:
            mm.madvise(mmap.MADV_DONTNEED, a, b - a)
        except (OSError, ValueError):
            pass


SMALL_TENSOR = 1024 * 1024  # hashed from one slice of the map, without the chunk loop


class RemoteBlocks:
    """A checkpoint file in object storage, read by range one block at a time."""

    def __init__(self, path: str):
        self.path = path
        self.store = storage.store_for(path)
        self.size = self.store.size(path)
        self.start = 0
        self.data = b""

    def view(self, a: int, b: int, display: str) -> memoryview:
        """Bytes [a, b) of the file, from the block held or a new block read from `a` on."""
        if b > self.size:
            raise WeightsError(f"{display}: truncated safetensors file: header declares {b} bytes, "
                               f"file has {self.size}")
        if not (self.start <= a and b <= self.start + len(self.data)):
            end = min(self.size, max(b, a + budget.REMOTE_BLOCK))
            self.data = b""  # the old block is let go before the new one is read
            try:
                self.data = b"".join(self.store.spans(self.path, [(a, end - a)]))
            except SourceError as e:
                raise WeightsError(str(e)) from None
            self.start = a
        return memoryview(self.data)[a - self.start:b - self.start]

    def chunks(self, ref: TensorRef, chunk: int) -> Iterator[memoryview]:
        end = ref.start + ref.nbytes
        for off in range(ref.start, end, chunk):
            yield self.view(off, min(off + chunk, end), ref.display)


def hash_tensor(reader: Reader, ref: TensorRef) -> str:
    h = new_hasher(ref.nbytes)
    if ref.loader is None and ref.path is not None and storage.is_url(ref.path):
        for part in reader.chunks(ref):
            h.update(part)
        return h.hexdigest()
    if ref.loader is None and 0 < ref.nbytes <= SMALL_TENSOR:
        mm = reader._map(ref.path)
        end = ref.start + ref.nbytes
        if end > len(mm):
            raise WeightsError(f"{ref.display}: truncated safetensors file: header declares {end} bytes, "
                               f"file has {len(mm)}")
        h.update(mm[ref.start:end])  # a copy of at most SMALL_TENSOR bytes
        return h.hexdigest()
    for part in reader.chunks(ref):
        h.update(part)
    return h.hexdigest()


# ---------------------------------------------------------------- values as float64

_F8_TABLES: dict[str, object] = {}


def _f8_table(dtype: str):
    import numpy as np

    if dtype in _F8_TABLES:
        return _F8_TABLES[dtype]
    vals = np.empty(256, dtype=np.float64)
    for b in range(256):
        sign = -1.0 if b & 0x80 else 1.0
        if dtype == "F8_E4M3":  # E4M3FN: bias 7, no infinities, S.1111.111 is NaN
            e, m = (b >> 3) & 0xF, b & 0x7
            if e == 0xF and m == 0x7:
                v = math.nan
            elif e == 0:
                v = sign * (m / 8) * 2.0 ** -6
            else:
                v = sign * (1 + m / 8) * 2.0 ** (e - 7)
        else:  # F8_E5M2: bias 15, IEEE-style infinities and NaNs
            e, m = (b >> 2) & 0x1F, b & 0x3
            if e == 0x1F:
                v = sign * math.inf if m == 0 else math.nan
            elif e == 0:
                v = sign * (m / 4) * 2.0 ** -14
            else:
                v = sign * (1 + m / 4) * 2.0 ** (e - 15)
        vals[b] = v
    _F8_TABLES[dtype] = vals
    return vals


def convertible(dtype: str) -> bool:
    return dtype in DTYPES


def to_float64(raw, dtype: str):
    """A chunk of raw little-endian bytes of `dtype` as a float64 numpy array."""
    import numpy as np

    np_dtype, _ = DTYPES[dtype]
    if dtype == "BF16":
        wide = np.frombuffer(raw, dtype="<u2").astype(np.uint32)
        wide <<= 16
        return wide.view(np.float32).astype(np.float64)
    if dtype in ("F8_E4M3", "F8_E5M2"):
        return _f8_table(dtype)[np.frombuffer(raw, dtype=np.uint8)]
    return np.frombuffer(raw, dtype=np_dtype).astype(np.float64)


def tensor_stats(reader_g: Reader, g: TensorRef, reader_n: Reader, n: TensorRef) -> dict:
    """See _tensor_stats; numpy's warnings about NaN casts and overflow are not the user's business."""
    import numpy as np

    with np.errstate(all="ignore"):
        return _tensor_stats(reader_g, g, reader_n, n)


def _tensor_stats(reader_g: Reader, g: TensorRef, reader_n: Reader, n: TensorRef) -> dict:
    """max |a-b|, ||a-b|| / ||a||, cosine(a, b) with a = GPU, b = NPU; float64 accumulation.

    Both tensors are walked in step, budget.STAT_ELEMS elements at a time, so memory stays
    at a few float64 chunks. Positions where either side is NaN or infinite are counted and left
    out of the statistics. Returns {} when the tensors cannot be compared element-wise.
    """
    import numpy as np

    if g.numel != n.numel or not (convertible(g.dtype) and convertible(n.dtype)):
        return {}
    ig = DTYPES[g.dtype][1]
    inn = DTYPES[n.dtype][1]
    it_g = reader_g.chunks(g, budget.STAT_ELEMS * ig)
    it_n = reader_n.chunks(n, budget.STAT_ELEMS * inn)
    max_abs = 0.0
    d2 = a2 = b2 = ab = 0.0
    nonfinite = 0
    differing = 0
    buf_n = None  # leftover NPU values when the two sides' chunks do not line up
    for part_g in it_g:
        a = to_float64(part_g, g.dtype)
        need = a.size
        pieces = []
        have = 0
        if buf_n is not None:
            pieces.append(buf_n)
            have = buf_n.size
            buf_n = None
        while have < need:
            part_n = next(it_n)
            b_part = to_float64(part_n, n.dtype)
            pieces.append(b_part)
            have += b_part.size
        b = pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
        if b.size > need:
            buf_n = b[need:].copy()
            b = b[:need]
        d = np.subtract(a, b)
        sums = (float(d @ d), float(a @ a), float(b @ b), float(a @ b))
        if not all(math.isfinite(x) for x in sums):
            # NaN/inf somewhere (or an overflow): leave those positions out, count mismatches
            fin = np.isfinite(a) & np.isfinite(b)
            bad = ~fin
            same = (np.isnan(a) & np.isnan(b)) | (a == b)
            mism = int(np.count_nonzero(bad & ~same))
            nonfinite += mism
            differing += mism
            a, b = a[fin], b[fin]
            d = np.subtract(a, b)
            sums = (float(d @ d), float(a @ a), float(b @ b), float(a @ b))
        d2 += sums[0]
        a2 += sums[1]
        b2 += sums[2]
        ab += sums[3]
        if d.size:
            differing += int(np.count_nonzero(d))
            np.abs(d, out=d)
            max_abs = max(max_abs, float(d.max()))
        del a, b, d
    for _ in it_n:  # exhaust so the reader releases its view
        pass
    stats: dict = {"max_abs_diff": max_abs if math.isfinite(max_abs) else None,
                   "differing_elements": differing, "elements": g.numel}
    if not all(math.isfinite(x) for x in (d2, a2, b2, ab)):  # float64 overflow (huge F64 values)
        stats["rel_l2"] = stats["cosine"] = None
        stats["overflow"] = True  # said as "overflowed", never as "GPU tensor is zero"
    elif a2 > 0:
        stats["rel_l2"] = math.sqrt(d2) / math.sqrt(a2)
    elif d2 == 0:
        stats["rel_l2"] = 0.0
    else:
        stats["rel_l2"] = None  # GPU tensor is all zeros and NPU is not: no relative scale
    if "cosine" in stats:
        pass
    elif a2 > 0 and b2 > 0:
        stats["cosine"] = max(-1.0, min(1.0, ab / math.sqrt(a2 * b2)))
    elif a2 == 0 and b2 == 0:
        stats["cosine"] = 1.0
    else:
        stats["cosine"] = None
    if nonfinite:
        stats["nonfinite_mismatches"] = nonfinite
    return stats
