"""A dataset manifest's bytes: what `data fingerprint` writes, in one place.

The full command (checks/dataset.py: folders, object stores, samples, shards, formats with
structure) and the plain-file path (commands/quickprint.py: one local file, hashed whole)
build their manifests here, so the two cannot drift apart; neither this module nor its
imports load the readers, the model or the rules.
"""
from __future__ import annotations

import json

from .. import __version__

SCHEMA = 1
MARKER = "scriptdiff_manifest"
ALGORITHM = "blake3"
FULL = "full"  # a hash of every byte; a sampled hash's mode is hashing.SampleSpec.mode()


def data_format(rel: str, names: set[str]) -> str | None:
    """The format whose cheap structure a manifest records for this file (None: hash only);
    `names`: every relative path listed (a .bin is Megatron data when its .idx is beside it)."""
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


def assemble(roots: list[str], base: str, mode: str, files: dict[str, dict], bytes_hashed: int) -> dict:
    """The manifest of hashed entries (`mode`: FULL or the sample's mode): the one construction
    a serial run, merged parts, a Ray run and the plain-file path share, so all are the same bytes."""
    return {
        MARKER: SCHEMA,
        "tool": {"name": "scriptdiff", "version": __version__},
        "algorithm": ALGORITHM,
        "mode": mode,
        "sampled": mode != FULL and any(e["mode"] != FULL for e in files.values()),
        "roots": list(roots),
        "base": base,
        "totals": {"files": len(files), "bytes": sum(e["size"] for e in files.values()), "bytes_hashed": bytes_hashed},
        "files": dict(sorted(files.items())),
    }


def dumps(manifest: dict, entries: str = "files") -> str:
    """JSON with the marker first (engine.detect_kind looks in the first 2000 characters) and
    one line per entry (a dataset's files; a weights fingerprint's "tensors"), so that two
    manifests diff line by line."""
    head = {k: v for k, v in manifest.items() if k != entries}
    text = json.dumps(head, indent=1, ensure_ascii=False)[:-2]
    lines = [f"  {json.dumps(rel, ensure_ascii=False)}: {json.dumps(e, sort_keys=True, ensure_ascii=False)}"
             for rel, e in manifest[entries].items()]
    return text + f',\n "{entries}": {{\n' + ",\n".join(lines) + ("\n }\n}\n" if lines else " }\n}\n")


def written(manifest: dict) -> str:
    """What a manifest or part holds, for the line after it is written."""
    files = manifest["files"]
    total = sum(e.get("size", 0) for e in files.values() if isinstance(e, dict))
    read = manifest.get("totals", {}).get("bytes_hashed") or 0
    what = f"{len(files):,} file(s), {total:,} bytes"
    if "scriptdiff_part" in manifest:
        what = f"part {manifest['part']} of {manifest['parts']}: " + what
    sampled = any(e.get("mode", "full") != "full" for e in files.values() if isinstance(e, dict))
    if sampled:
        what += f" (sampled: {percent(read, total)} of the bytes read)"
    return what


def percent(part: int, whole: int) -> str:
    """A share of bytes as a person reads it: 0.52%, 12%, 100%."""
    if not whole:
        return "100%"
    share = 100.0 * part / whole
    return f"{share:.2g}%" if share < 10 else f"{share:.0f}%"
