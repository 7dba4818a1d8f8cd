"""Opening a checkpoint for check 6 (weights.py): a safetensors file, a sharded safetensors
folder or index, a PyTorch .bin/.pt, a Megatron mp_rank_*/model_optim_rng.pt folder, or a
weights fingerprint (`scriptdiff weights fingerprint`), on disk or, for safetensors and
fingerprints, in object storage (storage.py). A `Checkpoint` lists its tensors (where each
one's bytes are, `TensorRef`); nothing is hashed here. Every file is opened only when it is
a regular file (sources), so a FIFO shard or index is refused, not waited on.

Security: safetensors headers are parsed (safetensors_io.py) and the data is only mapped.
PyTorch files are read only through torch.load(weights_only=True) when torch is installed;
there is no other unpickling anywhere, so a malicious checkpoint cannot run code.

Bounds (scriptdiff/budget.py): a PyTorch zip checkpoint's directory is read before torch is
asked to load it, and one with more than TORCH_RECORDS entries, or whose compressed entries
would inflate past TORCH_INFLATED bytes (a zip bomb: torch.save never compresses), is refused
in one line. The loaded object is walked without recursion, at most TORCH_DEPTH levels and
TORCH_PICKLE_NODES containers deep and wide, and a container that holds itself is refused:
a self-referential or deeply nested pickle is an error naming the file, not a RecursionError.
A checkpoint of more than TENSORS tensors is refused in one line (its header is read, no
tensor is hashed).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .. import budget
from ..inputs import storage
from ..inputs.jsonload import loads as load_json_data
from ..model import InputError
from ..inputs.sources import SourceError, open_regular, read_text
from .hashing import ALGORITHM
from .safetensors_io import TensorRef, WeightsError, list_safetensors, too_many

SCHEMA = 1
MARKER = "scriptdiff_weights"
TORCH_HINT = "reading PyTorch .bin/.pt checkpoints needs the torch extra: pip install 'scriptdiff[torch]'"
TORCH_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt")


@dataclass
class Checkpoint:
    root: str
    kind: str  # safetensors | safetensors-sharded | torch | megatron | fingerprint
    tensors: list[TensorRef] = field(default_factory=list)
    entries: dict[str, dict] = field(default_factory=dict)  # from a fingerprint: name -> entry
    errors: list[InputError] = field(default_factory=list)
    source: str = ""  # where the tensors were read: the checkpoint a fingerprint was made from
    identical: int | None = None  # tensors equal on both sides, when pair_extracts left them out

    @property
    def has_data(self) -> bool:
        return self.kind != "fingerprint"


# ---------------------------------------------------------------- opening checkpoints

def is_fingerprint(path: str) -> bool:
    try:
        store = storage.store_for(path)
        if not (path.lower().endswith(".json") and store.kind(path) == "file"):
            return False
        return f'"{MARKER}"'.encode() in store.head(path, budget.MARKER_SNIFF)
    except SourceError:
        return False


REMOTE_FORMATS = ("in object storage scriptdiff reads safetensors checkpoints (a file, a folder of shards, "
                  "a sharded index) and weights fingerprints")


def open_checkpoint(path: str) -> Checkpoint:
    """The tensors of a checkpoint file or folder (on disk or in object storage); raises
    WeightsError with a one-line reason."""
    try:
        store = storage.store_for(path)
        kind = store.kind(path)  # a FIFO or a device is refused here, never opened
    except SourceError as e:
        raise WeightsError(str(e)) from None
    if kind is None:
        raise WeightsError(f"{path}: {'no such object' if storage.is_url(path) else 'no such file or directory'}")
    if kind == "file":
        name = store.name(path)
        low = name.lower()
        if low.endswith(".safetensors"):
            refs, _ = list_safetensors(path, name)
            return _unique(Checkpoint(path, "safetensors", refs))
        if low.endswith(".safetensors.index.json"):
            return _sharded(store, store.parent(path), path, path)
        if low.endswith(".json") and is_fingerprint(path):
            return load_fingerprint(path)
        if low.endswith(TORCH_SUFFIXES) and store.local:
            return _unique(Checkpoint(path, "torch", torch_tensors(path, name)))
        if low.endswith(TORCH_SUFFIXES):
            raise WeightsError(f"{path}: a PyTorch checkpoint is read from local disk only (torch.load needs a "
                               f"file); {REMOTE_FORMATS}")
        raise WeightsError(f"{path}: not a checkpoint scriptdiff reads (.safetensors, sharded index, "
                           f".bin/.pt, Megatron folder, or a weights fingerprint)")
    # a folder (or a prefix)
    try:
        names = store.files_in(path)
    except SourceError as e:
        raise WeightsError(str(e)) from None
    indexes = [n for n in names if n.endswith(".safetensors.index.json")]
    if indexes:
        preferred = [i for i in indexes if i == "model.safetensors.index.json"]
        return _sharded(store, path, store.join(path, (preferred or indexes)[0]), path)
    shards = [n for n in names if n.endswith(".safetensors")]
    if shards:
        refs = []
        for s in shards:
            refs.extend(list_safetensors(store.join(path, s), s)[0])
        return _unique(Checkpoint(path, "safetensors", refs))
    if not store.local:
        raise WeightsError(f"{path}: no safetensors checkpoint found under this prefix ({REMOTE_FORMATS}; "
                           f"PyTorch and Megatron checkpoints are read from local disk)")
    p = Path(path)
    mega = _megatron_files(p)
    if mega:
        refs = []
        for rank_dir, f in mega:
            for r in torch_tensors(str(f), f"{rank_dir}/{f.name}", subset="model"):
                r.name = f"{rank_dir}/{r.name}" if len(mega) > 1 else r.name
                refs.append(r)
        return _unique(Checkpoint(path, "megatron", refs))
    bins = sorted(x for x in p.iterdir() if x.is_file() and x.name.lower().endswith(TORCH_SUFFIXES))
    if bins:
        refs = []
        for b in bins:
            refs.extend(torch_tensors(str(b), b.name))
        return _unique(Checkpoint(path, "torch", refs))
    raise WeightsError(f"{path}: no checkpoint found (looked for *.safetensors, *.safetensors.index.json, "
                       f"mp_rank_*/model_optim_rng.pt, *.bin, *.pt)")


def _unique(ck: Checkpoint) -> Checkpoint:
    too_many(len(ck.tensors), ck.root)
    seen: dict[str, str] = {}
    for r in ck.tensors:
        if r.name in seen:
            raise WeightsError(f"{ck.root}: tensor {r.name!r} is stored twice ({seen[r.name]} and {r.display})")
        seen[r.name] = r.display
    return ck


def _sharded(store, folder: str, index: str, root: str) -> Checkpoint:
    try:
        text = store.read_text(index)
    except SourceError as e:
        raise WeightsError(f"{index}: not a readable safetensors index: {str(e).split(': ', 1)[-1]}") from None
    try:
        data = load_json_data(text, str(index))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise WeightsError(f"{index}: not a readable safetensors index: {str(e).splitlines()[0]}") from None
    wmap = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(wmap, dict) or not all(isinstance(v, str) for v in wmap.values()):
        raise WeightsError(f"{index}: safetensors index has no weight_map of tensor -> shard file")
    refs: list[TensorRef] = []
    for shard in sorted(set(wmap.values())):
        sp = store.join(folder, shard)
        if not store.inside(folder, sp if store.local else shard):
            raise WeightsError(f"{index}: shard {shard!r} lies outside the checkpoint folder")
        try:
            kind = store.kind(sp)
        except SourceError as e:
            if store.local:
                raise WeightsError(f"{index}: shard {shard}: {str(e).split(': ', 1)[-1]}") from None
            raise WeightsError(str(e)) from None
        if kind is None:
            raise WeightsError(f"{index}: shard {shard} is listed but missing")
        if kind != "file":
            raise WeightsError(f"{index}: shard {shard}: is a directory")
        shard_refs, _ = list_safetensors(sp, shard)
        held = {r.name for r in shard_refs}
        for name, s in wmap.items():
            if s == shard and name not in held:
                raise WeightsError(f"{index}: tensor {name!r} is listed in {shard} but that shard does not hold it")
        refs.extend(r for r in shard_refs if wmap.get(r.name) == shard)
    return _unique(Checkpoint(root, "safetensors-sharded", refs))


def _megatron_files(p: Path) -> list[tuple[str, Path]]:
    """mp_rank_*/model_optim_rng.pt under p, or under the iteration named by latest_checkpointed_iteration.txt."""
    tracker = p / "latest_checkpointed_iteration.txt"
    base = p
    if tracker.is_file():
        try:
            it = read_text(tracker, limit=budget.TRACKER_BYTES).strip()
        except SourceError:
            it = ""
        if it == "release":
            base = p / "release"
        elif it.isdigit():
            base = p / f"iter_{int(it):07d}"
    out = []
    for d in sorted(base.glob("mp_rank_*")):
        f = d / "model_optim_rng.pt"
        if f.is_file():
            out.append((d.name, f))
    return out


# ---------------------------------------------------------------- PyTorch, through the safe loader only

_TORCH_DTYPES = {
    "float32": "F32", "float16": "F16", "bfloat16": "BF16", "float64": "F64", "int64": "I64", "int32": "I32",
    "int16": "I16", "int8": "I8", "uint8": "U8", "bool": "BOOL", "float8_e4m3fn": "F8_E4M3",
    "float8_e5m2": "F8_E5M2", "uint16": "U16", "uint32": "U32", "uint64": "U64",
}


def _torch_load(path: str, display: str):
    try:
        import torch
    except ImportError:
        raise WeightsError(f"{display}: {TORCH_HINT}") from None
    import argparse
    import contextlib

    allow = getattr(torch.serialization, "safe_globals", None)
    ctx = allow([argparse.Namespace]) if allow else contextlib.nullcontext()
    try:
        with ctx:
            try:
                return torch.load(path, map_location="cpu", weights_only=True, mmap=True)
            except RuntimeError as e:
                if "mmap" not in str(e):
                    raise
                # legacy (non-zip) files cannot be memory-mapped; still the safe loader
                return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # UnpicklingError for refused globals, RuntimeError for bad archives, ...
        import pickle

        if isinstance(e, pickle.UnpicklingError):
            raise WeightsError(f"{display}: {refusal(str(e))}") from None
        first = (_ANSI.sub("", str(e)).strip().splitlines() or [type(e).__name__])[0]
        raise WeightsError(f"{display}: cannot load: {first}") from None


_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_GLOBAL = re.compile(r"Unsupported global: GLOBAL ([\w.]+)")


def refusal(torch_message: str) -> str:
    """Why the safe loader refused a checkpoint, in the user's terms. torch's own text advises
    re-running with weights_only=False (switching the protection off) and carries terminal
    escapes: neither is passed on."""
    found = _GLOBAL.search(_ANSI.sub("", torch_message))
    what = f"it needs the Python object `{found.group(1)}`, not a tensor or a plain value" if found else \
        "it holds objects other than tensors and plain values"
    return (f"refused by the safe loader (torch.load weights_only=True): {what}; such a checkpoint is never "
            f"loaded (loading it could run code). Save the weights as safetensors or as a state_dict of "
            f"tensors where it was made, and compare that")


def _zip_bounds(path: str, display: str) -> None:
    """Refuse a PyTorch zip checkpoint that would take more than its own size to load: too
    many entries, or compressed entries that inflate past the budget (budget.py). Read from
    the zip's central directory, before torch sees the file; a legacy (non-zip) file passes."""
    import zipfile

    try:
        with open_regular(path, display) as fh:
            if not zipfile.is_zipfile(fh):
                return
            fh.seek(0)
            with zipfile.ZipFile(fh) as zf:
                infos = zf.infolist()
    except (SourceError, OSError, zipfile.BadZipFile, ValueError, EOFError) as e:
        raise WeightsError(f"{display}: cannot read the checkpoint's zip directory: {str(e).splitlines()[0]}") from None
    if len(infos) > budget.TORCH_RECORDS:
        raise WeightsError(f"{display}: a PyTorch checkpoint of {len(infos):,} entries, more than the "
                           f"{budget.TORCH_RECORDS:,} scriptdiff reads; not loaded")
    inflated = sum(i.file_size for i in infos if i.compress_type != zipfile.ZIP_STORED)
    if inflated > budget.TORCH_INFLATED:
        raise WeightsError(f"{display}: compressed entries that inflate to {inflated:,} bytes, more than the "
                           f"{budget.TORCH_INFLATED:,} scriptdiff inflates (torch.save does not compress: a zip "
                           f"bomb?); not loaded")


def torch_tensors(path: str, display: str, subset: str | None = None) -> list[TensorRef]:
    try:
        import torch  # noqa: F401
    except ImportError:
        raise WeightsError(f"{display}: {TORCH_HINT}") from None
    _zip_bounds(path, display)
    obj = _torch_load(path, display)
    import torch
    if isinstance(obj, dict):
        keys = [k for k in obj if isinstance(k, str) and (k == "model" or re.fullmatch(r"model\d+", k)
                                                          or k in ("state_dict", "module"))]
        if subset == "model" or keys:
            obj = {k: obj[k] for k in keys} if len(keys) > 1 else (obj[keys[0]] if keys else {})
    flat: dict[str, object] = {}
    _flatten(obj, "", flat, torch, display)
    refs = []
    for name, t in flat.items():
        dtype = _TORCH_DTYPES.get(str(t.dtype).replace("torch.", ""), str(t.dtype).replace("torch.", ""))

        def loader(t=t):
            c = t.detach().contiguous().reshape(-1)
            return c.view(torch.uint8).numpy() if c.numel() else b""

        refs.append(TensorRef(name=name, dtype=dtype, shape=tuple(int(d) for d in t.shape), display=display,
                              nbytes=t.numel() * t.element_size(), loader=loader))
    return refs


def _flatten(obj, prefix: str, out: dict, torch, display: str = "checkpoint") -> None:
    """The tensors of a loaded object by dotted name, walked without recursion (budget.py:
    TORCH_DEPTH levels, TORCH_PICKLE_NODES containers and tensors); a container inside itself
    is refused (WeightsError), a container met twice elsewhere is walked each time."""
    stack = [(obj, prefix, 0, ())]
    nodes = 0
    while stack:
        o, name, depth, path = stack.pop()
        nodes += 1
        if nodes > budget.TORCH_PICKLE_NODES:
            raise WeightsError(f"{display}: the checkpoint's object holds more than {budget.TORCH_PICKLE_NODES:,} "
                               f"containers and tensors; not read")
        if torch.is_tensor(o):
            out[name] = o
            continue
        if isinstance(o, dict):
            items = [(f"{name}.{k}" if name else str(k), v) for k, v in o.items()]
        elif isinstance(o, (list, tuple)):
            items = [(f"{name}.{i}" if name else str(i), v) for i, v in enumerate(o)]
        else:
            continue
        if id(o) in path:
            raise WeightsError(f"{display}: the checkpoint's object contains itself (at {name or 'the top'}); "
                               f"not read")
        if depth >= budget.TORCH_DEPTH:
            raise WeightsError(f"{display}: the checkpoint's object is nested more than {budget.TORCH_DEPTH} "
                               f"levels deep; not read")
        inner = path + (id(o),)
        stack.extend((v, k, depth + 1, inner) for k, v in reversed(items))


# ---------------------------------------------------------------- fingerprints

def parse_fingerprint(text: str, name: str) -> dict:
    try:
        data = load_json_data(text, name)
    except ValueError as e:
        raise WeightsError(f"{name}: not valid JSON: {e}") from None
    if not isinstance(data, dict) or MARKER not in data:
        raise WeightsError(f"{name}: not a scriptdiff weights fingerprint (no \"{MARKER}\" field)")
    if data[MARKER] != SCHEMA:
        raise WeightsError(f"{name}: weights fingerprint schema {data[MARKER]!r} is not supported (this reads {SCHEMA})")
    if data.get("algorithm", ALGORITHM) != ALGORITHM:
        raise WeightsError(f"{name}: fingerprint hashed with {data.get('algorithm')!r}; this compares {ALGORITHM}")
    tensors = data.get("tensors")
    if not isinstance(tensors, dict):
        raise WeightsError(f"{name}: weights fingerprint has no \"tensors\" object")
    for t, e in tensors.items():
        if (not isinstance(e, dict) or not isinstance(e.get("dtype"), str) or not isinstance(e.get("hash"), str)
                or not isinstance(e.get("shape"), list) or not all(isinstance(d, int) for d in e["shape"])):
            raise WeightsError(f"{name}: fingerprint entry {t!r} needs dtype, shape (list of ints) and hash")
    return data


def load_fingerprint(path: str) -> Checkpoint:
    try:
        text = storage.store_for(path).read_text(path)
    except SourceError as e:
        raise WeightsError(f"{path}: cannot read: {str(e).split(': ', 1)[-1]}") from None
    data = parse_fingerprint(text, path)
    ck = Checkpoint(path, "fingerprint", entries=data["tensors"])
    ck.source = str(data.get("source") or path)
    return ck


def open_side(path: str) -> tuple[Checkpoint | None, list[InputError]]:
    """A checkpoint or fingerprint opened (headers read, nothing hashed yet)."""
    try:
        return (load_fingerprint(path) if is_fingerprint(path) else open_checkpoint(path)), []
    except WeightsError as e:
        msg = str(e)
        where, _, reason = msg.partition(": ")
        return None, [InputError(where or path, reason or msg, fatal=True)]
    except OSError as e:
        return None, [InputError(path, f"cannot read: {e.strerror or e}", fatal=True)]
