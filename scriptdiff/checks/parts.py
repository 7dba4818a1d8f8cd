"""Parts of a fingerprint: `--shard I/N` and `merge`, shared by datasets and checkpoints.

A fingerprint's work is a list of items (a dataset's files, a checkpoint's tensors) known
from the listing before any byte is hashed. `split` cuts that list into N contiguous parts of
about equal bytes, the same way on every machine that lists the same data, so a scheduler
(a Slurm array, a ModelArts job, a Ray cluster) can run part I of N anywhere. A part file
records what it belongs to: the kind (`data` / `weights`), I and N, the roots and the digest
of the whole listing (every item's name and size), the hashing mode and the tool version;
`check_set` refuses parts that do not belong together (other roots, another listing, another
split, a part missing or given twice) before `merge` joins them into the fingerprint a serial
run writes, byte for byte.
"""
from __future__ import annotations

import json

from ..inputs.jsonload import loads as load_json_data

MARKER = "scriptdiff_part"
SCHEMA = 1
# fields every part of one set must agree on (besides its kind, the listing and N)
SAME = ("roots", "mode", "tool", "algorithm", "source", "format", "base")


class PartsError(Exception):
    """Parts that cannot be used or joined; str() is one line."""


def parse_shard(text: str) -> tuple[int, int]:
    """`I/N` (1 <= I <= N) as (I, N); ValueError with what is expected."""
    i, sep, n = str(text).partition("/")
    if not sep or not i.strip().isdigit() or not n.strip().isdigit():
        raise ValueError(f"--shard expects I/N (part I of N, 1 <= I <= N), got {text!r}")
    i, n = int(i), int(n)
    if n < 1 or not 1 <= i <= n:
        raise ValueError(f"--shard {text}: I must be between 1 and N (part I of N), N at least 1")
    return i, n


def split(sizes: list[int], n: int) -> list[range]:
    """N contiguous ranges of item indices, about equal in bytes; deterministic.

    Item j goes to the part its middle byte falls in, floor(N * (bytes before j + half of j) /
    total bytes), so a part never depends on anything but the listing and a big file lands
    where most of it is; with no bytes at all, items are split by count. A part may be empty
    (more parts than items, or one file larger than a part): it is still a part, so the set
    stays complete."""
    total = sum(sizes)
    owner = []
    before = 0
    for j, s in enumerate(sizes):
        owner.append(min(n - 1, ((2 * before + s) * n) // (2 * total)) if total else (j * n) // max(1, len(sizes)))
        before += s
    out = []
    start = 0
    for k in range(n):
        end = start
        while end < len(owner) and owner[end] == k:
            end += 1
        out.append(range(start, end))
        start = end
    return out


def digest(rows: list) -> str:
    """The listing's identity: blake3 of its rows (names and sizes) as canonical JSON."""
    import blake3

    return blake3.blake3(json.dumps(rows, separators=(",", ":"), ensure_ascii=False).encode("utf-8")).hexdigest()


def header(of: str, i: int, n: int, listing: str, fields: dict) -> dict:
    return {MARKER: SCHEMA, "of": of, "part": i, "parts": n, "listing": listing, **fields}


def dumps(doc: dict, body: str) -> str:
    """A part as JSON: the header first (so `merge` recognises it in its first lines), then
    its `body` field (the files or tensors) one entry a line."""
    head = {k: v for k, v in doc.items() if k != body}
    text = json.dumps(head, indent=1, ensure_ascii=False)[:-2]
    lines = [f"  {json.dumps(k, ensure_ascii=False)}: {json.dumps(v, sort_keys=True, ensure_ascii=False)}"
             for k, v in doc[body].items()]
    return text + f',\n "{body}": {{\n' + ",\n".join(lines) + ("\n }\n}\n" if lines else " }\n}\n")


def load(text: str, name: str, of: str, whole_marker: str) -> dict:
    """One part file's document; PartsError naming the file when it is not a part of `of`."""
    try:
        doc = load_json_data(text, name)
    except ValueError as e:
        raise PartsError(f"{name}: not valid JSON: {e}") from None
    if isinstance(doc, dict) and whole_marker in doc:
        raise PartsError(f"{name}: a whole fingerprint, not a part (made without --shard); nothing to merge")
    if not isinstance(doc, dict) or MARKER not in doc:
        raise PartsError(f"{name}: not a part file of `scriptdiff {of} fingerprint --shard I/N`")
    if doc[MARKER] != SCHEMA:
        raise PartsError(f"{name}: part schema {doc[MARKER]!r} is not supported (this scriptdiff reads {SCHEMA})")
    if doc.get("of") != of:
        raise PartsError(f"{name}: a part of a {doc.get('of')} fingerprint, not of a {of} fingerprint")
    if not (isinstance(doc.get("part"), int) and isinstance(doc.get("parts"), int)
            and 1 <= doc["part"] <= doc["parts"] and isinstance(doc.get("listing"), str)):
        raise PartsError(f"{name}: part file without a valid part number, count and listing")
    return doc


def check_set(docs: list[tuple[str, dict]], body: str) -> None:
    """Refuse parts that do not make one whole: PartsError with the first reason found."""
    if not docs:
        raise PartsError("merge needs the part files")
    first_name, first = docs[0]
    for name, doc in docs[1:]:
        if doc["parts"] != first["parts"]:
            raise PartsError(f"{name} is part {doc['part']} of {doc['parts']} but {first_name} is part "
                             f"{first['part']} of {first['parts']}: parts of different splits do not belong together")
        for key in SAME:
            if doc.get(key) != first.get(key):
                what = {"roots": "roots", "mode": "hashing modes (full / sampled)", "tool": "scriptdiff versions",
                        "source": "checkpoints", "format": "checkpoint formats", "base": "roots"}.get(key, key)
                raise PartsError(f"{name} and {first_name} do not belong together: different {what} "
                                 f"({_short(doc.get(key))} vs {_short(first.get(key))})")
        if doc["listing"] != first["listing"]:
            raise PartsError(f"{name} and {first_name} do not belong together: they listed different "
                             f"{'files' if body == 'files' else 'tensors'} (the data changed between the runs?)")
    seen: dict[int, str] = {}
    for name, doc in docs:
        if doc["part"] in seen:
            raise PartsError(f"part {doc['part']} of {doc['parts']} is given twice: {seen[doc['part']]} and {name}")
        seen[doc["part"]] = name
    missing = [i for i in range(1, first["parts"] + 1) if i not in seen]
    if missing:
        raise PartsError(f"missing part(s) {', '.join(map(str, missing))} of {first['parts']} "
                         f"(have {', '.join(map(str, sorted(seen)))}); nothing merged")
    owner: dict[str, str] = {}
    for name, doc in docs:
        for key in doc.get(body) or {}:
            if key in owner:
                raise PartsError(f"{key!r} is in two parts ({owner[key]} and {name}); nothing merged")
            owner[key] = name


def _short(v) -> str:
    text = json.dumps(v, ensure_ascii=False) if not isinstance(v, str) else v
    return text if len(text) <= 80 else text[:77] + "..."
