"""Suppressions: inline `# scriptdiff: ignore[CODE]` comments and a baseline file.

Applied in one place, `apply()`, called by the pipeline's last stage (pipeline.Run.finish) after every finding of the
run is known and before --select/--ignore filtering (so a suppression of a code that the
run does not show still counts as used), and by `review`, which builds its findings from
hunks. It works on the Sources themselves, so it sees the same bytes whether a side came
from disk or from a git revision.

Inline: a finding is suppressed when its GPU or NPU line, or the line above it, carries
the marker in a comment (in the sources compared, or in a file a finding points at, such
as a config followed from a launch script). The comment is found by reading the line's comment token (Python:
the tokenizer; shell, YAML, TOML and text: the first `#` outside quotes that starts a
word), never by matching code. `ignore` without codes suppresses every finding there;
codes may be prefixes (`SD2`).

Baseline: a JSON file of finding fingerprints (rule, key and both values; no line
numbers, so edits elsewhere in a file do not invalidate it). `scriptdiff baseline` writes
it; `--baseline FILE` reports only findings that are not in it.

A marker or baseline entry that suppresses nothing is reported as SD152 (info).
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import re
from dataclasses import dataclass, field

from .. import budget
from .finding import finding
from ..inputs.jsonload import loads as load_json_data
from ..model import Finding, InputError, Side, jsonable
from ..ruleset.registry import detect
from ..ruleset.rules import code, unknown_selector
from ..inputs.sources import SourceError, open_regular, read_bytes, read_path

MARKER = "scriptdiff:"
_MARKER_RE = re.compile(r"scriptdiff:\s*ignore(?:\[([^\]]*)\])?", re.IGNORECASE)
BASELINE_KEY = "scriptdiff_baseline"


class SuppressError(Exception):
    """A baseline file that cannot be used; str() is one line."""


@dataclass
class Marker:
    side: str
    path: str
    line: int
    codes: tuple[str, ...] | None  # None: every code
    text: str
    used: bool = False

    def covers(self, rule: str) -> bool:
        return self.codes is None or any(rule.startswith(c) for c in self.codes)


@dataclass
class Baseline:
    path: str
    entries: dict[str, dict] = field(default_factory=dict)  # fingerprint -> {rule, key, ...}
    used: set[str] = field(default_factory=set)


# ---------------------------------------------------------------- comments

def _python_comments(text: str) -> list[tuple[int, str]] | None:
    import tokenize

    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                out.append((tok.start[0], tok.string))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
    return out


def comment_of(line: str) -> str | None:
    """The comment token of a shell/YAML/TOML/text line: `#` outside quotes, at a word start."""
    quote = None
    i = 0
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 2
                continue
            if c == quote:
                quote = None
        elif c == "\\":
            i += 2
            continue
        elif c in ("'", '"'):
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return line[i:]
        i += 1
    return None


def comments(src) -> list[tuple[int, str]]:
    """(line, comment text) of every comment of a source that mentions the marker; how a
    kind of file writes comments is its `comments` in the kind registry."""
    if MARKER.encode() not in src.data.lower():
        return []
    style = detect(src).comments
    if style == "none":
        return []
    text = src.text
    found = _python_comments(text) if style == "python" else None
    if found is None:
        found = []
        for i, line in enumerate(text.splitlines(), 1):
            if MARKER in line.lower():
                c = comment_of(line)
                if c is not None:
                    found.append((i, c))
    return [(ln, c) for ln, c in found if MARKER in c.lower()]


def markers(src, side: str) -> list[Marker]:
    out = []
    for line, c in comments(src):
        m = _MARKER_RE.search(c)
        if not m:
            continue
        codes = None
        if m.group(1) is not None:
            codes = tuple(x.strip().upper() for x in m.group(1).split(",") if x.strip()) or None
        out.append(Marker(side=side, path=src.name, line=line, codes=codes, text=c.strip()))
    return out


# ---------------------------------------------------------------- baseline

def fingerprint(f: Finding) -> str:
    def val(s: Side | None):
        return None if s is None else jsonable(s.value)

    blob = json.dumps([f.rule, f.key, val(f.gpu), val(f.npu)], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def baseline_document(findings: list[Finding]) -> dict:
    entries = {}
    for f in findings:
        if f.rule == code("unused-suppression"):
            continue
        entries[fingerprint(f)] = {"fingerprint": fingerprint(f), "rule": f.rule, "key": f.key,
                                   "gpu": jsonable(f.gpu.value) if f.gpu else None,
                                   "npu": jsonable(f.npu.value) if f.npu else None}
    return {BASELINE_KEY: 1, "findings": [entries[k] for k in sorted(entries, key=lambda k: (entries[k]["rule"],
                                                                                        entries[k]["key"], k))]}


def load_baseline(path: str) -> Baseline:
    if not os.path.lexists(path):
        raise SuppressError(f"{path}: baseline file not found (write one with `scriptdiff baseline`)")
    try:  # a regular file under the cap: a FIFO or /dev/zero given as --baseline is refused, not read
        data = load_json_data(read_bytes(path), path)
    except SourceError as e:
        raise SuppressError(f"{str(e)} (not a usable baseline)") from None
    except ValueError as e:  # jsonload.JSONError: malformed, not UTF-8, nested too deeply
        raise SuppressError(f"{path}: not a JSON baseline: {str(e).splitlines()[0]}") from None
    items = data.get("findings") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise SuppressError(f"{path}: not a scriptdiff baseline (expected a 'findings' list)")
    b = Baseline(path=path)
    for it in items:
        fp = it.get("fingerprint") if isinstance(it, dict) else it
        if not isinstance(fp, str):
            raise SuppressError(f"{path}: baseline entry without a fingerprint: {str(it)[:60]}")
        b.entries[fp] = it if isinstance(it, dict) else {"fingerprint": fp}
    return b


# ---------------------------------------------------------------- applying

def _passes(rule: str, opts) -> bool:
    if opts is None:
        return True
    if getattr(opts, "select", None) and not any(rule.startswith(s) for s in opts.select):
        return False
    if getattr(opts, "ignore", None) and any(rule.startswith(s) for s in opts.ignore):
        return False
    return True


def apply(report, gpu_sources, npu_sources, opts=None) -> None:
    """Drop suppressed findings from `report`; add SD152 for suppressions left unused."""
    marks: dict[tuple[str, int], list[Marker]] = {}
    all_marks: list[Marker] = []
    seen: set[tuple[str, str]] = set()
    for side, srcs in (("gpu", gpu_sources), ("npu", npu_sources)):
        for src in srcs:
            if (side, src.name) in seen:
                continue
            seen.add((side, src.name))
            for m in markers(src, side):
                all_marks.append(m)
                marks.setdefault((m.path, m.line), []).append(m)
    # files a finding points at that were not among the sources: configs followed from a
    # launch script (--config x.yaml). Read from disk when they are there.
    scanned = {name for _side, name in seen}
    for f in report.findings:
        for side_name in ("gpu", "npu"):
            side = getattr(f, side_name)
            if side is None or not side.path or not side.line or side.path in scanned:
                continue
            scanned.add(side.path)
            for m in _markers_on_disk(side.path, side_name):
                all_marks.append(m)
                marks.setdefault((m.path, m.line), []).append(m)
    for m in all_marks:  # a typo in an ignore comment must not silence the next real finding
        for c in m.codes or ():
            msg = unknown_selector(c)
            if msg:
                report.usage_errors.append(f"{m.path}:{m.line}: ignore comment: {msg}")
                report.errors.append(InputError(m.path, f"line {m.line}: ignore comment: {msg}", fatal=True))
    baseline: Baseline | None = getattr(opts, "baseline", None) if opts is not None else None
    if not all_marks and baseline is None:
        return
    report.findings = [f for f in report.findings if not _suppressed(f, marks) and not _in_baseline(f, baseline)]
    unused = code("unused-suppression")
    for m in all_marks:
        if m.used or (m.codes is not None and not any(_passes(c, opts) for c in m.codes)):
            continue
        what = f"[{', '.join(m.codes)}]" if m.codes else "(all codes)"
        side = Side(value=m.text, path=m.path, line=m.line, source=m.text)
        report.findings.append(finding(
            unused, key=f"suppress:{m.path}:{m.line}",
            gpu=side if m.side == "gpu" else None, npu=side if m.side == "npu" else None,
            message=f"suppression {what} matches no finding on this line or the next; remove it"))
    if baseline is not None:
        report.findings += _unused_baseline(baseline, opts)


def apply_baseline(report, opts, partial: bool = False) -> None:
    """The baseline alone, once over a report that several runs made without it (review's
    files, the pre-commit hook's pairs): an entry is unused only when no run used it. A
    `partial` run (the hook, on the staged files only) cannot tell that an entry is stale:
    it says nothing of unused entries."""
    baseline: Baseline | None = getattr(opts, "baseline", None)
    if baseline is None:
        return
    report.findings = [f for f in report.findings if not _in_baseline(f, baseline)]
    if not partial:
        report.findings += _unused_baseline(baseline, opts)


def _unused_baseline(baseline: Baseline, opts) -> list:
    unused = code("unused-suppression")
    out = []
    for fp, entry in sorted(baseline.entries.items()):
        if fp in baseline.used or not _passes(str(entry.get("rule", "")), opts):
            continue
        side = Side(value=fp, path=baseline.path, line=None, source="baseline")
        out.append(finding(
            unused, key=f"baseline:{fp}", npu=side,
            message=f"baseline entry {entry.get('rule', '?')} {entry.get('key', '')} matches no finding "
                    "any more; rewrite the baseline"))
    return out


def _mentions_marker(path: str) -> bool:
    """Whether a file holds the marker anywhere, read a chunk at a time: a finding may point
    at a multi-gigabyte training log, which is never read whole just to find no comment."""
    needle = MARKER.encode()
    tail = b""
    try:
        with open_regular(path) as fh:
            while True:
                chunk = fh.read(budget.SCAN_CHUNK)
                if not chunk:
                    return False
                if needle in (tail + chunk).lower():
                    return True
                tail = chunk[-(len(needle) - 1):]
    except (OSError, SourceError):
        return False


def _markers_on_disk(path: str, side: str) -> list[Marker]:
    if not os.path.isfile(path) or not _mentions_marker(path):
        return []
    try:
        return markers(read_path(path), side)
    except SourceError:
        return []


def _suppressed(f: Finding, marks: dict) -> bool:
    if not marks:
        return False
    hit = False
    for side in (f.gpu, f.npu):
        if side is None or side.path is None or not side.line:
            continue
        for line in (side.line, side.line - 1):
            for m in marks.get((side.path, line), []):
                if m.covers(f.rule):
                    m.used = True
                    hit = True
    return hit


def _in_baseline(f: Finding, baseline: Baseline | None) -> bool:
    if baseline is None:
        return False
    fp = fingerprint(f)
    if fp in baseline.entries:
        baseline.used.add(fp)
        return True
    return False
