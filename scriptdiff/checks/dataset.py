"""Check 5, the dataset: both sides must train on the same bytes.

Training data is too large to move, and the two clusters often cannot see each other, so
each side computes a *manifest* where its data lives (`scriptdiff data fingerprint`): per
file the relative path, size, a blake3 hash and, for formats that have it, cheap structure
(Megatron .idx sequence/document counts and dtype, JSONL line counts, Parquet/Arrow row
counts when pyarrow is installed). Two manifests, or two folders, become facts
`data:<relative path>` (check `dataset`) that the shared compare pairs by key.

A manifest made with `--sample` hashes only the head, the tail and strided blocks of large
files. Its hashes are compared only with hashes made the same way; every comparison that
rests on samples says so (SD505), and a sampled side against a fully hashed side compares
sizes and counts only and says that content was not compared (SD506). A comparison never
claims more than it checked.

Only regular files inside the dataset root are read: a FIFO, a device or a socket in the
data is listed as an error and skipped (never opened), and a symbolic link, to a file or a
folder, that leads outside the root is refused with the path it names.
"""
from __future__ import annotations

import dataclasses
import os
import struct
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .. import budget
from ..inputs import storage
from ..inputs.jsonload import loads as load_json_data
from ..model import Extract, Fact, InputError, RANK_SCRIPT
from ..inputs.sources import SourceError, open_regular
from . import parts
from .fanout import Cluster, Fanout, FanoutError
from .hashing import Hashing, SampleSpec, default_workers, hash_file
from .manifest import ALGORITHM, FULL, MARKER, SCHEMA, dumps  # noqa: F401 (dumps: read from here too)
from . import manifest as manifest_bytes

if TYPE_CHECKING:  # a fingerprint neither compares nor loads the rules: imported where used
    from ..ruleset.rules import RuleSet

SUMMARY_KEY = "data:*"
TOKENIZER_PREFIX = "data:tokenizer:"
# the words of a failed part's error (a Ray task that failed after its retries)
NOT_HASHED = "file(s) were not hashed"
COUNT_FIELDS = ("lines", "rows", "sequences", "documents", "dtype")

# Megatron indexed dataset (.idx): magic, version, dtype code, sequence count, document count
IDX_MAGIC = b"MMIDIDX\x00\x00"
IDX_DTYPES = {1: "uint8", 2: "int8", 3: "int16", 4: "int32", 5: "int64", 6: "float64", 7: "float32", 8: "uint16"}


def walk(paths: list[str], exclude: set[str] | None = None) -> storage.Walked:
    """Every regular file under `paths` (folders, files, object-store prefixes), keyed by a
    relative path (storage.walk: one root: relative to it; several: each under its own name)."""
    return storage.walk(paths, lambda path, message, fatal=False: InputError(path, message, fatal=fatal), exclude)


# ---------------------------------------------------------------- cheap structure per format

def idx_structure(path: str) -> tuple[dict, str | None]:
    """Counts and dtype from a Megatron .idx header (34 bytes); (info, error or None)."""
    try:
        store = storage.store_for(path)
        size = store.size(path)
        head = store.read(path, 0, min(34, size))
    except SourceError as e:
        return {}, str(e).split(": ", 1)[-1]
    except OSError as e:
        return {}, f"cannot read: {e.strerror or e}"
    if len(head) < 34 or head[:9] != IDX_MAGIC:
        return {"format": "unknown"}, "not a Megatron index (.idx) file: bad magic; hashed only"
    version, code, seqs, docs = struct.unpack("<QBQQ", head[9:34])
    info = {"format": "megatron-idx", "sequences": seqs, "documents": max(0, docs - 1),
            "dtype": IDX_DTYPES.get(code, f"code {code}")}
    expected = 34 + seqs * 4 + seqs * 8 + docs * 8
    if version != 1:
        return info, f"Megatron index version {version} (expected 1); counts may be wrong"
    if size < expected:
        return info, f"truncated Megatron index: header declares {expected} bytes, file has {size}"
    return info, None


def table_rows(path: str, suffix: str) -> tuple[int | None, str | None]:
    """Row count from Parquet/Arrow metadata when pyarrow is installed (an object in a store
    is read by range: the footer, not the table)."""
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return None, None
    source = None
    try:
        source = storage.store_for(path).open(path) if storage.is_url(path) else path
        return _rows(source, path, suffix)
    except Exception as e:  # pyarrow raises many types for a bad file
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        return None, f"cannot read row count: {msg}"
    finally:
        if source is not None and not isinstance(source, str):
            source.close()


def _rows(source, path: str, suffix: str) -> tuple[int | None, str | None]:
    """The row count of a Parquet or Arrow source (a path, or a seekable file from a store)."""
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.ParquetFile(source).metadata.num_rows, None
    import pyarrow.ipc as ipc

    try:
        reader = ipc.open_file(source)
        return sum(reader.get_batch(i).num_rows for i in range(reader.num_record_batches)), None
    except Exception:  # not the file format: the stream format
        if not isinstance(source, str):
            source.seek(0)
            return sum(b.num_rows for b in ipc.open_stream(source)), None
        with open(path, "rb") as fh:
            return sum(b.num_rows for b in ipc.open_stream(fh)), None


def _last_byte(path: str, size: int) -> bytes:
    return storage.store_for(path).read(path, size - 1, 1)


def fingerprint_file(rel: str, path: str, fmt: str | None, sample: SampleSpec | None,
                     progress=None, size: int | None = None) -> tuple[dict, list[InputError]]:
    errors = []
    fh = hash_file(path, sample=sample, count_lines=(fmt == "jsonl"), progress=progress, size=size)
    entry: dict = {"size": fh.size, "hash": fh.hash, "mode": fh.mode}
    if fmt:
        entry["format"] = fmt
    if fmt == "jsonl" and fh.lines is not None:
        lines = fh.lines
        if fh.size and _last_byte(path, fh.size) != b"\n":
            lines += 1
        entry["lines"] = lines
    elif fmt == "megatron-idx":
        info, err = idx_structure(path)
        entry.update(info)
        if err:
            errors.append(InputError(rel, err))
    elif fmt in ("parquet", "arrow"):
        rows, err = table_rows(path, ".parquet" if fmt == "parquet" else ".arrow")
        if rows is not None:
            entry["rows"] = rows
        if err:
            errors.append(InputError(rel, err))
    return entry, errors


def planned_bytes(size: int, sample: SampleSpec | None) -> int:
    if sample is None:
        return size
    return sum(length for _, length in sample.ranges(size))


@dataclass
class Plan:
    """What a fingerprint reads, known from the listing before any byte is hashed."""

    roots: list[str]
    base: str  # the folder the relative paths hang from (one root), else ""
    items: list[tuple[str, str, int, str | None]]  # (relative path, path or URL, size, format)
    errors: list[InputError]

    def listing(self) -> str:
        """The identity of the listing: every relative path and size (parts.digest)."""
        return parts.digest([self.roots, [[rel, size] for rel, _, size, _ in self.items]])


def plan(paths: list[str], exclude: set[str] | None = None) -> Plan:
    walked = walk(paths, exclude)
    errors = list(walked.errors)
    names = {rel for rel, _ in walked.files}
    items = []
    for rel, full in walked.files:
        size = walked.sizes.get(rel)
        if size is None:
            try:
                size = os.path.getsize(full)
            except OSError as e:
                errors.append(InputError(rel, f"cannot read: {e.strerror or e}"))
                continue
        items.append((rel, full, size, manifest_bytes.data_format(rel, names)))
    base = ""
    if len(paths) == 1:
        p = str(paths[0])
        base = p if walked.kinds.get(paths[0]) == "dir" else (
            storage.store_for(p).parent(p) if storage.is_url(p) else os.path.dirname(p))
    return Plan([str(p) for p in paths], base, items, errors)


def hash_items(items: list, sample: SampleSpec | None, workers: int | None = None, progress=None
               ) -> tuple[dict[str, dict], list[InputError]]:
    """Fingerprint entries of (rel, path, size, format) items, hashed in parallel threads."""
    files: dict[str, dict] = {}
    errors: list[InputError] = []

    def one(item):
        rel, full, size, fmt = item
        try:
            return rel, *fingerprint_file(rel, full, fmt, sample, progress, size)
        except SourceError as e:  # replaced by a FIFO or a device since the listing; a store's refusal
            # the store refused: the side is unread, not smaller; a file that changed while it was
            # read has no one version's fingerprint: the manifest is not that of a whole side
            fatal = isinstance(e, (storage.AccessError, storage.ChangedError))
            return rel, None, [InputError(rel, str(e).split(": ", 1)[-1], fatal=fatal)]
        except OSError as e:
            return rel, None, [InputError(rel, f"cannot read: {e.strerror or e}")]

    with ThreadPoolExecutor(max_workers=workers or default_workers()) as pool:
        for rel, entry, errs in pool.map(one, items):
            errors.extend(errs)
            if entry is not None:
                files[rel] = entry
    return files, errors


def hash_part(payload: tuple) -> tuple[dict[str, dict], list[tuple[str, str, bool]]]:
    """One part's work where it runs (a Ray task): (items, sample mode, workers) -> its
    entries and its errors as plain tuples (path, message, fatal)."""
    items, mode, workers = payload
    files, errors = hash_items(items, SampleSpec.parse(mode), workers)
    return files, [(e.path, e.message, e.fatal) for e in errors]


def assemble(roots: list[str], base: str, sample: SampleSpec | None, files: dict[str, dict]) -> dict:
    """The manifest of hashed entries (manifest.assemble, with the bytes each entry's mode read)."""
    hashed = sum(planned_bytes(e["size"], SampleSpec.parse(e["mode"])) for e in files.values())
    return manifest_bytes.assemble(roots, base, sample.mode() if sample is not None else FULL, files, hashed)


def fingerprint(paths: list[str], sample: SampleSpec | None = None, workers: int | None = None,
                progress=None, exclude: set[str] | None = None, fanout: Fanout | None = None
                ) -> tuple[dict, list[InputError]]:
    """The manifest of `paths` and the errors met. Files are hashed in parallel threads, or
    in parts on a Ray cluster (`fanout`).

    `progress`: None, or an object with start(total), advance(n) (called from the hashing
    threads) and close(); it is started with the bytes to hash (with a Ray fan-out: the
    parts to run) and closed at the end.
    `exclude`: files left out (the manifest being written, when it lies inside the data).
    """
    p = plan(paths, exclude)
    errors = list(p.errors)
    if fanout is not None and fanout.distributed and p.items:
        files, errs = _fan_out(p, sample, workers, progress, fanout)
        errors.extend(errs)
        return assemble(p.roots, p.base, sample, files), errors
    if progress:
        progress.start(sum(planned_bytes(size, sample) for _, _, size, _ in p.items))
    try:
        files, errs = hash_items(p.items, sample, workers, progress.advance if progress else None)
    finally:
        if progress:
            progress.close()
    errors.extend(errs)
    return assemble(p.roots, p.base, sample, files), errors


def _fan_out(p: Plan, sample: SampleSpec | None, workers: int | None, progress, fanout: Fanout
             ) -> tuple[dict[str, dict], list[InputError]]:
    """The plan's items hashed in parts on a Ray cluster; a failed part is an error naming its files."""
    with Cluster(fanout) as cluster:
        n = cluster.parts(len(p.items))
        ranges = parts.split([size for _, _, size, _ in p.items], n)
        mode = sample.mode() if sample is not None else FULL
        payloads = [([p.items[j] for j in r], mode, workers) for r in ranges]
        results = cluster.run(hash_part, payloads, progress)
    files: dict[str, dict] = {}
    errors: list[InputError] = []
    for k, ((result, failed), payload) in enumerate(zip(results, payloads), 1):
        if failed is not None:
            names = [rel for rel, *_ in payload[0]]
            shown = ", ".join(names[:5]) + (f" (and {len(names) - 5} more)" if len(names) > 5 else "")
            errors.append(InputError(p.roots[0] if len(p.roots) == 1 else ", ".join(p.roots),
                                     f"part {k} of {n} {failed}; its {len(names)} {NOT_HASHED}: {shown}",
                                     fatal=True))
            continue
        part_files, part_errors = result
        files.update(part_files)
        errors.extend(InputError(path, message, fatal=fatal) for path, message, fatal in part_errors)
    return files, errors


def fingerprint_shard(paths: list[str], shard: tuple[int, int], sample: SampleSpec | None = None,
                      workers: int | None = None, progress=None, exclude: set[str] | None = None
                      ) -> tuple[dict, list[InputError]]:
    """Part I of N of the manifest of `paths` (`--shard I/N`): a part file for `merge`."""
    i, n = shard
    p = plan(paths, exclude)
    chosen = [p.items[j] for j in parts.split([size for _, _, size, _ in p.items], n)[i - 1]]
    if progress:
        progress.start(sum(planned_bytes(size, sample) for _, _, size, _ in chosen))
    try:
        files, errs = hash_items(chosen, sample, workers, progress.advance if progress else None)
    finally:
        if progress:
            progress.close()
    errors = list(p.errors) + errs
    whole = assemble(p.roots, p.base, sample, {})
    doc = parts.header("data", i, n, p.listing(), {k: whole[k] for k in ("tool", "algorithm", "mode", "roots", "base")})
    doc["totals"] = assemble(p.roots, p.base, sample, files)["totals"]  # of this part
    doc["errors"] = [{"path": e.path, "message": e.message, "fatal": e.fatal} for e in errors]
    doc["files"] = dict(sorted(files.items()))
    return doc, errors


def part_text(doc: dict) -> str:
    return parts.dumps(doc, "files")


def merge(texts: list[tuple[str, str]]) -> tuple[dict, list[InputError]]:
    """The manifest of a complete set of part files ((name, text) each), byte for byte the one
    a serial run writes, and the errors the parts met; parts.PartsError when they do not
    belong together."""
    docs = [(name, parts.load(text, name, "data", MARKER)) for name, text in texts]
    parts.check_set(docs, "files")
    files: dict[str, dict] = {}
    errors: list[InputError] = []
    seen = set()
    for name, doc in docs:
        body = doc.get("files")
        roots = doc.get("roots")
        if not isinstance(body, dict) or not (isinstance(roots, list) and all(isinstance(r, str) for r in roots)):
            raise parts.PartsError(f"{name}: part needs a \"files\" object and a list of \"roots\"")
        for rel, e in body.items():
            if not (isinstance(e, dict) and isinstance(e.get("size"), int) and isinstance(e.get("hash"), str)
                    and isinstance(e.get("mode"), str)):
                raise parts.PartsError(f"{name}: part entry {rel!r} needs an integer size, a string hash and a mode")
        files.update(body)
        for e in doc.get("errors") or []:
            if not isinstance(e, dict):
                continue
            key = (str(e.get("path")), str(e.get("message")))
            if key not in seen:
                seen.add(key)
                errors.append(InputError(key[0], key[1], fatal=bool(e.get("fatal"))))
    first = docs[0][1]
    sample = SampleSpec.parse(first.get("mode") or FULL)
    manifest = assemble(first["roots"], str(first.get("base") or ""), sample, files)
    if manifest["tool"] != first.get("tool"):
        manifest["tool"] = first["tool"]
    return manifest, errors


# ---------------------------------------------------------------- manifests -> facts

class ManifestError(Exception):
    pass


def load_manifest_text(text: str, name: str) -> dict:
    try:
        data = load_json_data(text, name)
    except ValueError as e:
        raise ManifestError(f"not valid JSON: {e}") from None
    if not isinstance(data, dict) or MARKER not in data:
        raise ManifestError(f"not a scriptdiff data manifest (no \"{MARKER}\" field)")
    if data[MARKER] != SCHEMA:
        raise ManifestError(f"manifest schema {data[MARKER]!r} is not supported (this scriptdiff reads {SCHEMA})")
    files = data.get("files")
    if not isinstance(files, dict):
        raise ManifestError("manifest has no \"files\" object")
    for rel, e in files.items():
        if not isinstance(e, dict) or not isinstance(e.get("size"), int) or not isinstance(e.get("hash"), str):
            raise ManifestError(f"manifest entry {rel!r} needs an integer size and a string hash")
        e.setdefault("mode", FULL)
    tok = data.get("tokenizer", {})
    if not isinstance(tok, dict) or not all(isinstance(e, dict) and isinstance(e.get("size"), int)
                                            and isinstance(e.get("hash"), str) for e in tok.values()):
        raise ManifestError("manifest \"tokenizer\" section needs entries with an integer size and a string hash")
    for e in tok.values():
        e.setdefault("mode", FULL)
    if data.get("algorithm", ALGORITHM) != ALGORITHM:
        raise ManifestError(f"manifest hashed with {data.get('algorithm')!r}; this scriptdiff compares {ALGORITHM}")
    return data


def manifest_facts(manifest: dict, display: str, via: str | None = None, tokenizer: bool = False) -> list[Fact]:
    facts = []
    prefix = TOKENIZER_PREFIX if tokenizer else "data:"
    for rel, e in manifest["files"].items():
        value = {k: e[k] for k in ("size", "hash", "mode", *COUNT_FIELDS) if k in e}
        facts.append(Fact(key=prefix + rel, value=value, check="dataset",
                          path=f"{display.rstrip('/')}/{rel}" if display else rel, line=None,
                          source=f"{e.get('hash', '')[:16]}", via=via, rank=RANK_SCRIPT,
                          meta={"tokenizer": True} if tokenizer else {}))
    if not tokenizer and isinstance(manifest.get("tokenizer"), dict):
        facts.extend(manifest_facts({"files": manifest["tokenizer"]}, manifest.get("tokenizer_root", ""),
                                    via=via, tokenizer=True))
    if not tokenizer:
        modes = sorted({e["mode"] for e in manifest["files"].values()})
        totals = manifest.get("totals") or {}
        summary = {"mode": manifest.get("mode", FULL), "file_modes": modes,
                   "files": len(manifest["files"]),
                   "bytes": totals.get("bytes", sum(e["size"] for e in manifest["files"].values())),
                   "bytes_hashed": totals.get("bytes_hashed")}
        facts.append(Fact(key=SUMMARY_KEY, value=summary, check="dataset", path=display or None, source="",
                          via=via, rank=RANK_SCRIPT, meta={"force": True}))
    return facts


def extract(src, ctx):
    """A manifest JSON read through the shared engine (`scriptdiff diff a.json b.json`)."""
    try:
        manifest = load_manifest_text(src.text, src.name)
    except ManifestError as e:
        return Extract(errors=[InputError(src.name, str(e), fatal=True)])
    return Extract(facts=manifest_facts(manifest, base_of(manifest), via=f"manifest {src.name}"))


def base_of(manifest: dict) -> str:
    """The folder a manifest's relative paths hang from, for display."""
    if isinstance(manifest.get("base"), str):
        return manifest["base"]
    roots = manifest.get("roots") or []
    return roots[0] if len(roots) == 1 else ""


# ---------------------------------------------------------------- classification

def _size(n) -> str:
    if not isinstance(n, int):
        return "?"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _describe(v: dict) -> str:
    parts = [f"{v.get('size')} bytes"]
    for k in COUNT_FIELDS:
        if k in v:
            parts.append(f"{k} {v[k]}")
    return ", ".join(parts)


def _sample_words(mode: str) -> str:
    spec = SampleSpec.parse(mode)
    if spec is None:
        return "fully hashed"
    return (f"sampled: head and tail {_size(spec.edge)} and {spec.blocks} blocks of {_size(spec.block)} "
            f"per large file")


def classify_dataset(key: str, g: Fact | None, n: Fact | None, rs: "RuleSet"):
    from ..run.compare import show  # lazy: keeps a fingerprint light
    from ..run.finding import finding  # lazy: keeps a fingerprint light
    if key == SUMMARY_KEY:
        return _classify_summary(g, n, rs)
    tok = bool((g and g.meta.get("tokenizer")) or (n and n.meta.get("tokenizer")))
    name = key[len(TOKENIZER_PREFIX):] if tok else key[len("data:"):]
    what = "tokenizer file" if tok else "data file"
    if n is None:
        return finding("tokenizer-file-differs" if tok else "data-file-missing-on-npu", key=key, gpu=g, npu=n,
                       message=f"{what} {name} is on GPU only ({_describe(g.value)}); missing on NPU")
    if g is None:
        return finding("tokenizer-file-differs" if tok else "data-file-extra-on-npu", key=key, gpu=g, npu=n,
                       message=f"{what} {name} is on NPU only ({_describe(n.value)}); missing on GPU")
    gv, nv = g.value, n.value
    diffs = []
    if gv.get("size") != nv.get("size"):
        diffs.append(f"size {gv.get('size')} vs {nv.get('size')} bytes")
    for k in COUNT_FIELDS:
        if k in gv and k in nv and gv[k] != nv[k]:
            diffs.append(f"{k} {show(gv[k])} vs {show(nv[k])}")
    same_mode = gv.get("mode", FULL) == nv.get("mode", FULL)
    if same_mode and gv.get("hash") != nv.get("hash"):
        if gv.get("mode", FULL) == FULL:
            diffs.append("content hash differs")
        else:
            diffs.append("content hash of the sampled bytes differs")
    if not diffs:
        return None  # e.g. sampled on one side only, same size: the summary finding says so
    msg = f"{what} {name} differs between GPU and NPU: " + "; ".join(diffs)
    if not same_mode:
        msg += " (content not compared: one side sampled, the other not)"
    first = _first_record(g, n) if "lines" in gv and "lines" in nv and same_mode else None
    if first is not None:  # measured here, records one a line: the first that differs, on both sides
        line, grec, nrec = first
        msg += f"; the first differing record is line {line}: GPU {grec} / NPU {nrec}"
        g, n = dataclasses.replace(g, line=line), dataclasses.replace(n, line=line)
    return finding("tokenizer-file-differs" if tok else "data-file-differs", key=key, gpu=g, npu=n, message=msg)


def _first_record(g: Fact, n: Fact) -> tuple[int, str, str] | None:
    """(line, GPU record, NPU record) of the first line at which two data files measured here
    differ (each record clipped; the finding factory withholds secrets in them), or None: a
    side read from a fingerprint (the files are on the machines), in object storage, one file
    the other's beginning (the line counts say it), or no difference within
    budget.RECORD_DIFF_BYTES."""
    if any((f.via or "").startswith("manifest ") or not f.path or storage.is_url(f.path) for f in (g, n)):
        return None
    try:
        with open_regular(g.path) as a, open_regular(n.path) as b:
            line, read = 1, 0
            while read <= budget.RECORD_DIFF_BYTES:
                x, y = a.readline(budget.LOG_LINE), b.readline(budget.LOG_LINE)  # a long line comes in pieces
                if x != y:  # one side ended: the other's extra lines, which its line count says
                    return (line, _record(x), _record(y)) if x and y else None
                if not x:
                    return None
                line += x.endswith(b"\n")
                read += len(x)
    except (SourceError, OSError):
        return None
    return None


def _record(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace").rstrip("\r\n")
    cut = budget.MESSAGE_VALUE_CHARS
    return text if len(text) <= cut else text[:cut] + "…"


def _classify_summary(g: Fact | None, n: Fact | None, rs: "RuleSet"):
    from ..run.finding import finding  # lazy: keeps a fingerprint light
    if g is None or n is None:
        return None
    gm, nm = g.value.get("file_modes", [FULL]), n.value.get("file_modes", [FULL])
    gsampled = any(m != FULL for m in gm)
    nsampled = any(m != FULL for m in nm)
    if not gsampled and not nsampled:
        return None

    def share(v) -> str | None:
        b, h = v.get("bytes"), v.get("bytes_hashed")
        return f"{100.0 * h / b:.2g}%" if isinstance(b, int) and isinstance(h, int) and b else None

    def cover(v):
        b, h = v.get("bytes"), v.get("bytes_hashed")
        if isinstance(b, int) and isinstance(h, int) and b:
            return f"{_size(h)} of {_size(b)} read ({share(v)})"
        return "coverage unknown"

    if g.value.get("mode", FULL) == n.value.get("mode", FULL):
        gs, ns = share(g.value), share(n.value)
        read = (f"{gs} of bytes read" if gs == ns else f"GPU {gs or '?'}, NPU {ns or '?'} of bytes read")
        msg = (f"both sides were fingerprinted by sampling ({_sample_words(g.value.get('mode', ''))}): "
               f"files that match are probably identical ({read}), not proven identical; a difference in "
               f"the sampled bytes is certain; GPU {cover(g.value)}, NPU {cover(n.value)}")
        return finding("data-compared-by-sample", key=SUMMARY_KEY, gpu=g, npu=n, message=msg)
    side = "GPU" if gsampled and not nsampled else ("NPU" if nsampled and not gsampled else "each side")
    msg = (f"{side} was fingerprinted by sampling and the sides were hashed differently "
           f"(GPU {_sample_words(g.value.get('mode', ''))}, NPU {_sample_words(n.value.get('mode', ''))}): "
           f"the content of sampled files was not compared, only sizes and counts; "
           f"fingerprint both sides the same way")
    return finding("data-content-not-compared", key=SUMMARY_KEY, gpu=g, npu=n, message=msg)


# ---------------------------------------------------------------- tokenizer files from launch scripts

def tokenizer_refs(facts: list[Fact], base: str | None) -> list[tuple[str, Fact]]:
    """(path on disk, fact) for each tokenizer setting (rules/dataset.yaml `tokenizer_settings`)
    whose value names an existing path."""
    from ..ruleset.rules import load  # lazy: keeps a fingerprint light
    out = []
    settings = frozenset(load().section("tokenizer_settings") or ())
    for f in facts:
        if f.key not in settings or not isinstance(f.value, str) or not f.value.strip():
            continue
        raw = f.value.strip().strip("'\"")
        cands = [raw] if os.path.isabs(raw) else ([os.path.join(base, raw)] if base else []) + [raw]
        for c in cands:
            if os.path.exists(c):
                out.append((c, f))
                break
        else:
            out.append(("", f))
    return out


def tokenizer_files(paths: list[str], scripts: list[tuple[str, Extract]] = ()
                    ) -> tuple[dict[str, dict], list[InputError], str]:
    """Fingerprints of the tokenizer files given directly or named in launch scripts/configs.

    `scripts`: (path, Extract) of each launch script or config, read by the caller (the
    engine reads them; this module does not import it). Returns (relative name -> entry,
    errors, display root). Tokenizer files are small and always hashed whole. A tokenizer
    named by a hub id rather than a local path is reported in the errors (not compared)
    rather than dropped silently.
    """
    errors: list[InputError] = []
    found: list[str] = list(paths)
    for script, ex in scripts:
        errors.extend(ex.errors)
        for path, fact in tokenizer_refs(ex.facts, os.path.dirname(script) or None):
            where = f"{script}:{fact.line}" if fact.line else script
            if not path:
                errors.append(InputError(where, f"tokenizer {fact.value!r} ({fact.key}) is not a local path; "
                                                f"its files were not compared"))
            else:
                found.append(path)
    entries: dict[str, dict] = {}
    roots = []
    for path in dict.fromkeys(found):
        if not os.path.exists(path):
            errors.append(InputError(path, "tokenizer path not found; not compared"))
            continue
        m, errs = fingerprint([path])
        errors.extend(errs)
        entries.update(m["files"])
        roots.append(path if os.path.isdir(path) else os.path.dirname(path))
    return entries, errors, (roots[0] if len(roots) == 1 else "")


def load_side(path: str, sample: SampleSpec | None = None, workers: int | None = None, progress=None,
              fanout: Fanout | None = None) -> tuple[dict | None, str, list[InputError], str | None]:
    """One side of `scriptdiff data`: a manifest file, or a path (folder, file, object-store
    prefix) fingerprinted now.

    Returns (manifest or None, display root, errors, via). `progress` as for fingerprint().
    """
    try:
        store = storage.store_for(path)
        kind = store.kind(path)
    except SourceError as e:
        return None, path, [InputError(path, str(e).split(": ", 1)[-1], fatal=True)], None
    if kind == "file" and path.lower().endswith(".json") and f'"{MARKER}"'.encode() in store.head(path, budget.MARKER_SNIFF):
        try:
            text = store.read_text(path)
            manifest = load_manifest_text(text, path)
        except SourceError as e:
            return None, path, [InputError(path, str(e).split(": ", 1)[-1], fatal=True)], None
        except ManifestError as e:
            return None, path, [InputError(path, str(e), fatal=True)], None
        return manifest, base_of(manifest), [], f"manifest {path}"
    if kind is None:
        return None, path, [InputError(path, "no such object" if storage.is_url(path) else "no such file or directory",
                                       fatal=True)], None
    try:
        manifest, errors = fingerprint([path], sample=sample, workers=workers, progress=progress, fanout=fanout)
    except FanoutError as e:
        return None, path, [InputError(path, str(e), fatal=True)], None
    if any(e.fatal for e in errors) and any(NOT_HASHED in e.message for e in errors):
        return None, path, errors, None  # a part failed: this side is unknown, not smaller
    return manifest, base_of(manifest), errors, None


def side_extract(path: str, hashing: Hashing, tokenizers: list[str] = (), scripts: list[tuple[str, Extract]] = ()
                 ) -> tuple[dict | None, Extract]:
    """One side of a dataset comparison: (its manifest or None, its Extract).

    The manifest is None when the side could not be read at all (the Extract's errors say
    why). `tokenizers` (files or folders) and `scripts` ((path, Extract) of launch scripts
    naming tokenizer files) replace the manifest's tokenizer section when given."""
    manifest, display, errors, via = load_side(path, hashing.sample, hashing.workers, hashing.progress, hashing.fanout)
    ex = Extract(errors=list(errors))
    if manifest is None:
        return None, ex
    if tokenizers or scripts:
        entries, terrs, root = tokenizer_files(list(tokenizers), list(scripts))
        ex.errors.extend(terrs)
        manifest["tokenizer"] = entries
        manifest["tokenizer_root"] = root
    ex.facts = manifest_facts(manifest, display, via=via)
    return manifest, ex


def check_extract(path: str, sample: SampleSpec | None = None, workers: int | None = None, progress=None,
                  tokenizers: list[str] = (), scripts: list[tuple[str, Extract]] = ()) -> Extract:
    """The stable hook (`scriptdiff check`, `scriptdiff data`): a dataset folder or file
    (fingerprinted now) or its manifest, as an Extract of `data:<path>` facts.

    `progress`: None, or an object with start(total_bytes), advance(nbytes), close()."""
    return side_extract(path, Hashing(sample, workers, progress), tokenizers, scripts)[1]


def pair_single_files(gpu: str, npu: str, gm: dict, nm: dict, nex) -> None:
    """Two single data files (not folders, not manifests) are compared with each other
    whatever their names: the NPU file's key takes the GPU file's name."""
    if gm.get("roots") != [gpu] or nm.get("roots") != [npu]:
        return  # a manifest: it names its own files
    if gm.get("base") == gpu or nm.get("base") == npu:
        return  # a folder (its base is itself; a single file's is its parent)
    if len(gm["files"]) != 1 or len(nm["files"]) != 1:
        return
    gkey = "data:" + next(iter(gm["files"]))
    nkey = "data:" + next(iter(nm["files"]))
    if gkey != nkey:
        for f in nex.facts:
            if f.key == nkey:
                f.key = gkey
