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

import json
import os
import struct
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from .. import __version__, budget
from ..compare import show
from ..finding import finding
from ..jsonload import loads as load_json_data
from ..model import Extract, Fact, InputError, RANK_SCRIPT
from ..rules import RuleSet
from ..sources import SourceError, check_regular, open_regular, pseudo_reason, read_head, read_text, special_reason
from .hashing import ALGORITHM, FULL, SampleSpec, default_workers, hash_file

SCHEMA = 1
MARKER = "scriptdiff_manifest"
SUMMARY_KEY = "data:*"
TOKENIZER_PREFIX = "data:tokenizer:"
COUNT_FIELDS = ("lines", "rows", "sequences", "documents", "dtype")
# launch-script settings whose value is a tokenizer file or folder
TOKENIZER_KEYS = ("tokenizer_model", "tokenizer_name_or_path", "vocab_file", "merge_file", "tokenizer_path")

# Megatron indexed dataset (.idx): magic, version, dtype code, sequence count, document count
IDX_MAGIC = b"MMIDIDX\x00\x00"
IDX_DTYPES = {1: "uint8", 2: "int8", 3: "int16", 4: "int32", 5: "int64", 6: "float64", 7: "float32", 8: "uint16"}


@dataclass
class Walked:
    files: list[tuple[str, str]] = field(default_factory=list)  # (relative path, path on disk)
    errors: list[InputError] = field(default_factory=list)


def walk(paths: list[str], exclude: set[str] | None = None) -> Walked:
    """Every regular file under `paths`, keyed by a relative path.

    One folder: paths relative to it. One file: its name. Several paths: each prefixed with
    its own base name, so `a/x.bin` and `b/x.bin` stay apart.
    """
    out = Walked()
    single = len(paths) == 1
    seen: set[str] = set()
    skip = {os.path.realpath(x) for x in (exclude or ())}
    for p in paths:
        root = Path(p)
        prefix = "" if single else (root.name or str(root)) + "/"
        if not root.is_dir():
            try:
                check_regular(root, p)
            except SourceError as e:
                out.errors.append(InputError(p, str(e).split(": ", 1)[-1], fatal=True))
                continue
            rel = root.name if single else prefix.rstrip("/")
            out.files.append((rel, str(root)))
            continue
        visited: set[str] = set()
        top = os.path.realpath(root)
        # symbolic links to folders are followed (datasets are often assembled from links),
        # as long as they stay inside the root; a folder reached twice (a link loop) is
        # listed once and reported
        for dirpath, dirnames, filenames in os.walk(root, followlinks=True, onerror=lambda e: out.errors.append(
                InputError(getattr(e, "filename", p) or p, f"cannot list: {e.strerror or e}"))):
            if os.path.relpath(dirpath, root).count(os.sep) >= budget.TREE_DEPTH:  # os.walk recurses
                out.errors.append(InputError(dirpath, f"folder nested more than {budget.TREE_DEPTH} levels deep; "
                                                      f"its files were not read", fatal=True))
                dirnames[:] = []
                continue
            real = os.path.realpath(dirpath)
            if not _inside(real, top):
                out.errors.append(InputError(dirpath, f"symbolic link leads outside the dataset root (to {real}); "
                                                      f"not read"))
                dirnames[:] = []
                continue
            if real in visited:
                out.errors.append(InputError(dirpath, "folder reached twice through symbolic links; listed once"))
                dirnames[:] = []
                continue
            visited.add(real)
            dirnames.sort()
            for fn in sorted(filenames):
                full = os.path.join(dirpath, fn)
                real_file = os.path.realpath(full)
                if real_file in skip:
                    continue
                if not _inside(real_file, top):
                    out.errors.append(InputError(full, f"symbolic link leads outside the dataset root (to "
                                                       f"{real_file}); not read"))
                    continue
                why = _not_regular(full)
                if why:
                    out.errors.append(InputError(full, f"{why}; skipped"))
                    continue
                rel = prefix + os.path.relpath(full, root).replace(os.sep, "/")
                if rel in seen:
                    continue
                seen.add(rel)
                out.files.append((rel, full))
    out.files.sort()
    return out


def _inside(real: str, top: str) -> bool:
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def _not_regular(path: str) -> str | None:
    """Why a listed name is not read as a data file (None: a regular file); never opens it."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "broken symbolic link" if os.path.islink(path) else "vanished while listing"
    except OSError as e:
        return f"cannot read: {e.strerror or e}"
    return special_reason(st.st_mode) or pseudo_reason(path, st)


# ---------------------------------------------------------------- cheap structure per format

def idx_structure(path: str) -> tuple[dict, str | None]:
    """Counts and dtype from a Megatron .idx header (34 bytes); (info, error or None)."""
    try:
        with open_regular(path) as fh:
            head = fh.read(34)
            size = os.fstat(fh.fileno()).st_size
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
    """Row count from Parquet/Arrow metadata when pyarrow is installed."""
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return None, None
    try:
        if suffix == ".parquet":
            import pyarrow.parquet as pq

            return pq.ParquetFile(path).metadata.num_rows, None
        import pyarrow.ipc as ipc

        try:
            reader = ipc.open_file(path)
            return sum(reader.get_batch(i).num_rows for i in range(reader.num_record_batches)), None
        except Exception:
            with open(path, "rb") as fh:
                return sum(b.num_rows for b in ipc.open_stream(fh)), None
    except Exception as e:  # pyarrow raises many types for a bad file
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        return None, f"cannot read row count: {msg}"


def _format(rel: str, names: set[str]) -> str | None:
    low = rel.lower()
    if low.endswith(".idx"):
        return "megatron-idx"
    if low.endswith(".bin") and rel[:-4] + ".idx" in names:
        return "megatron-bin"
    if low.endswith((".jsonl", ".ndjson")):
        return "jsonl"
    if low.endswith(".parquet"):
        return "parquet"
    if low.endswith((".arrow", ".feather")):
        return "arrow"
    return None


def _last_byte(path: str) -> bytes:
    with open_regular(path) as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1)


def fingerprint_file(rel: str, path: str, fmt: str | None, sample: SampleSpec | None,
                     progress=None) -> tuple[dict, list[InputError]]:
    errors = []
    fh = hash_file(path, sample=sample, count_lines=(fmt == "jsonl"), progress=progress)
    entry: dict = {"size": fh.size, "hash": fh.hash, "mode": fh.mode}
    if fmt:
        entry["format"] = fmt
    if fmt == "jsonl" and fh.lines is not None:
        lines = fh.lines
        if fh.size and _last_byte(path) != b"\n":
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


def fingerprint(paths: list[str], sample: SampleSpec | None = None, workers: int | None = None,
                progress=None, exclude: set[str] | None = None) -> tuple[dict, list[InputError]]:
    """The manifest of `paths` and the errors met. Files are hashed in parallel threads.

    `progress`: None, or an object with start(total_bytes), advance(nbytes) (called from the
    hashing threads) and close(); it is started with the bytes to hash and closed at the end.
    `exclude`: files left out (the manifest being written, when it lies inside the data).
    """
    walked = walk(paths, exclude)
    errors = list(walked.errors)
    names = {rel for rel, _ in walked.files}
    sizes = {}
    for rel, full in walked.files:
        try:
            sizes[rel] = os.path.getsize(full)
        except OSError as e:
            errors.append(InputError(rel, f"cannot read: {e.strerror or e}"))
    todo = [(rel, full) for rel, full in walked.files if rel in sizes]
    total = sum(planned_bytes(sizes[rel], sample) for rel, _ in todo)
    files: dict[str, dict] = {}
    if progress:
        progress.start(total)
    try:
        def one(item):
            rel, full = item
            try:
                return rel, *fingerprint_file(rel, full, _format(rel, names), sample,
                                              progress.advance if progress else None)
            except SourceError as e:  # replaced by a FIFO or a device since the listing
                return rel, None, [InputError(rel, str(e).split(": ", 1)[-1])]
            except OSError as e:
                return rel, None, [InputError(rel, f"cannot read: {e.strerror or e}")]

        with ThreadPoolExecutor(max_workers=workers or default_workers()) as pool:
            for rel, entry, errs in pool.map(one, todo):
                errors.extend(errs)
                if entry is not None:
                    files[rel] = entry
    finally:
        if progress:
            progress.close()
    modes = {e["mode"] for e in files.values()}
    manifest = {
        MARKER: SCHEMA,
        "tool": {"name": "scriptdiff", "version": __version__},
        "algorithm": ALGORITHM,
        "mode": sample.mode() if sample is not None else FULL,
        "sampled": sample is not None and any(m != FULL for m in modes),
        "roots": [str(p) for p in paths],
        # the folder that the relative paths below are relative to, when there is one
        "base": (str(paths[0]) if os.path.isdir(paths[0]) else os.path.dirname(str(paths[0]))) if len(paths) == 1 else "",
        "totals": {"files": len(files), "bytes": sum(e["size"] for e in files.values()),
                   "bytes_hashed": sum(planned_bytes(e["size"], SampleSpec.parse(e["mode"])) for e in files.values())},
        "files": dict(sorted(files.items())),
    }
    return manifest, errors


def dumps(manifest: dict) -> str:
    """JSON with the marker first (engine.detect_kind looks in the first 2000 characters)."""
    head = {k: v for k, v in manifest.items() if k != "files"}
    text = json.dumps(head, indent=1, ensure_ascii=False)[:-2]
    lines = [f"  {json.dumps(rel, ensure_ascii=False)}: {json.dumps(e, sort_keys=True, ensure_ascii=False)}"
             for rel, e in manifest["files"].items()]
    return text + ',\n "files": {\n' + ",\n".join(lines) + ("\n }\n}\n" if lines else " }\n}\n")


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


def classify_dataset(key: str, g: Fact | None, n: Fact | None, rs: RuleSet):
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
    return finding("tokenizer-file-differs" if tok else "data-file-differs", key=key, gpu=g, npu=n, message=msg)


def _classify_summary(g: Fact | None, n: Fact | None, rs: RuleSet):
    if g is None or n is None:
        return None
    gm, nm = g.value.get("file_modes", [FULL]), n.value.get("file_modes", [FULL])
    gsampled = any(m != FULL for m in gm)
    nsampled = any(m != FULL for m in nm)
    if not gsampled and not nsampled:
        return None

    def cover(v):
        b, h = v.get("bytes"), v.get("bytes_hashed")
        if isinstance(b, int) and isinstance(h, int) and b:
            return f"{_size(h)} of {_size(b)} read ({100.0 * h / b:.2g}%)"
        return "coverage unknown"

    if g.value.get("mode", FULL) == n.value.get("mode", FULL):
        msg = (f"both sides were fingerprinted by sampling ({_sample_words(g.value.get('mode', ''))}): "
               f"matching files are equal in the bytes read only, not proven identical; "
               f"GPU {cover(g.value)}, NPU {cover(n.value)}")
        return finding("data-compared-by-sample", key=SUMMARY_KEY, gpu=g, npu=n, message=msg)
    side = "GPU" if gsampled and not nsampled else ("NPU" if nsampled and not gsampled else "each side")
    msg = (f"{side} was fingerprinted by sampling and the sides were hashed differently "
           f"(GPU {_sample_words(g.value.get('mode', ''))}, NPU {_sample_words(n.value.get('mode', ''))}): "
           f"the content of sampled files was not compared, only sizes and counts; "
           f"fingerprint both sides the same way")
    return finding("data-content-not-compared", key=SUMMARY_KEY, gpu=g, npu=n, message=msg)


# ---------------------------------------------------------------- tokenizer files from launch scripts

def tokenizer_refs(facts: list[Fact], base: str | None) -> list[tuple[str, Fact]]:
    """(path on disk, fact) for each tokenizer setting whose value names an existing path."""
    out = []
    for f in facts:
        if f.key not in TOKENIZER_KEYS or not isinstance(f.value, str) or not f.value.strip():
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


def load_side(path: str, sample: SampleSpec | None = None, workers: int | None = None, progress=None
              ) -> tuple[dict | None, str, list[InputError], str | None]:
    """One side of `scriptdiff data`: a manifest file, or a path fingerprinted now.

    Returns (manifest or None, display root, errors, via). `progress` as for fingerprint().
    """
    p = Path(path)
    if p.is_file() and p.suffix.lower() == ".json":
        head = read_head(p, 2000)
        if f'"{MARKER}"'.encode() in head:
            try:
                text = read_text(p, path)
                manifest = load_manifest_text(text, path)
            except SourceError as e:
                return None, path, [InputError(path, str(e).split(": ", 1)[-1], fatal=True)], None
            except ManifestError as e:
                return None, path, [InputError(path, str(e), fatal=True)], None
            return manifest, base_of(manifest), [], f"manifest {path}"
    if not p.exists():
        return None, path, [InputError(path, "no such file or directory", fatal=True)], None
    if not p.is_dir():  # a FIFO, a device (/dev/zero), a kernel pseudo-file: the side is not there
        try:
            check_regular(p, path)
        except SourceError as e:
            return None, path, [InputError(path, str(e).split(": ", 1)[-1], fatal=True)], None
    manifest, errors = fingerprint([path], sample=sample, workers=workers, progress=progress)
    return manifest, base_of(manifest), errors, None


def side_extract(path: str, sample: SampleSpec | None = None, workers: int | None = None, progress=None,
                 tokenizers: list[str] = (), scripts: list[tuple[str, Extract]] = ()
                 ) -> tuple[dict | None, Extract]:
    """One side of a dataset comparison: (its manifest or None, its Extract).

    The manifest is None when the side could not be read at all (the Extract's errors say
    why). `tokenizers` (files or folders) and `scripts` ((path, Extract) of launch scripts
    naming tokenizer files) replace the manifest's tokenizer section when given."""
    manifest, display, errors, via = load_side(path, sample, workers, progress)
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
    return side_extract(path, sample, workers, progress, tokenizers, scripts)[1]


def pair_single_files(gpu: str, npu: str, gm: dict, nm: dict, nex) -> None:
    """Two single data files (not folders, not manifests) are compared with each other
    whatever their names: the NPU file's key takes the GPU file's name."""
    if not (os.path.isfile(gpu) and os.path.isfile(npu)):
        return
    if gm.get("roots") != [gpu] or nm.get("roots") != [npu]:
        return  # a manifest: it names its own files
    if len(gm["files"]) != 1 or len(nm["files"]) != 1:
        return
    gkey = "data:" + next(iter(gm["files"]))
    nkey = "data:" + next(iter(nm["files"]))
    if gkey != nkey:
        for f in nex.facts:
            if f.key == nkey:
                f.key = gkey
