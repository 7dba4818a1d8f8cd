"""Review a unified diff that ports a GPU file to NPU (`scriptdiff review PATCH`).

Each patched file is compared with the whole pipeline (masks, structural diff, facts), on
the files under the root when they are there, else on the hunks' own lines; what changes
semantics is reported per hunk, the expected substitutions masked: under the rule of its most
severe difference (HUNK_RULES: SD156 error, SD153 warning, SD157 info).

Hostile patches are bounded: the patch itself obeys --max-bytes, a hunk whose position
lies beyond any file under that limit is refused (fragments are laid out at their line
numbers, so `@@ -99999999999999,1 ...` would otherwise pad 10^14 lines), and a file is read
only when it lies inside the review root (no absolute paths, no `..`, no link out of it).
"""
from __future__ import annotations

import os

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from .engine import filter_findings
from .finding import finding
from .pipeline import Inputs, run
from .model import SEVERITY_RANK, InputError, Options, Report, Side, UsageError
from .rules import code
from .sources import Source, SourceError, decode, read_bytes, read_stdin, too_large
from .suppress import apply_baseline


# a hunk is reported under the rule of its most severe difference (each rule has one severity)
HUNK_RULES = {"error": "numeric-hunk-in-port-patch", "warning": "semantic-hunk-in-port-patch",
              "info": "cosmetic-hunk-in-port-patch"}


def _strip(path: str | None) -> str | None:
    if path is None or path == "/dev/null":
        return None
    if path.startswith(("a/", "b/")):
        return path[2:]
    return path


def read_patch(path: str, opts=None) -> tuple[bytes, str]:
    """(bytes, display name) of the PATCH argument: a regular file, or standard input for
    `-`, at most --max-bytes. Raises UsageError with a one-line reason."""
    limit = (opts or Options()).max_bytes
    try:
        if path == "-":
            return read_stdin(limit, "--max-bytes"), "<stdin>"
        return read_bytes(path, path, limit, "--max-bytes"), path
    except SourceError as e:
        raise UsageError(str(e)) from None


def review(data: bytes, name: str, opts=None, root: str | None = None):
    """A Report with one finding per semantic hunk of the unified diff `data` (HUNK_RULES)."""
    opts = opts or Options()
    report = Report(gpu=f"{name} (old)", npu=f"{name} (new)")
    if len(data) > opts.max_bytes:
        msg = too_large(name, opts.max_bytes, len(data), "--max-bytes", "patch not read")
        report.errors.append(InputError(name, msg.split(": ", 1)[1], fatal=True))
        return report
    text, _enc = decode(data)
    try:
        patch = PatchSet(text.splitlines(keepends=True))
    except UnidiffParseError as e:
        report.errors.append(InputError(name, f"not a unified diff: {str(e).splitlines()[0]}", fatal=True))
        return report
    if not len(patch):
        if text.strip():
            report.errors.append(InputError(name, "not a unified diff: no file headers (---/+++) found", fatal=True))
        else:
            report.compared = 1  # an empty patch changes nothing
        return report
    import dataclasses

    inline_only = dataclasses.replace(opts, baseline=None)
    for pf in patch:
        _review_file(pf, report, inline_only, root, name)
    apply_baseline(report, opts)  # once for the whole patch, so an entry is unused only if no file used it
    report.findings = filter_findings(report.findings, opts)
    return report.sorted()


def _header(hunk) -> str:
    return f"@@ -{hunk.source_start},{hunk.source_length} +{hunk.target_start},{hunk.target_length} @@"


def _review_file(pf, report, opts, root, patch_name: str = "<patch>") -> None:
    old_name = _strip(pf.source_file) or _strip(pf.target_file)
    new_name = _strip(pf.target_file) or old_name
    if pf.is_binary_file:
        report.errors.append(InputError(new_name, "binary file in the patch; not reviewed"))
        return
    # a hunk can only sit inside a file under --max-bytes: it has at most that many lines
    last_line = opts.max_bytes + 1
    hunks = []
    for hunk in pf:
        start = max(hunk.source_start, hunk.target_start)
        if start > last_line:
            report.errors.append(InputError(patch_name, f"hunk {_header(hunk)} of {new_name} starts at line "
                                                        f"{start:,}, beyond any file under the --max-bytes limit "
                                                        f"({opts.max_bytes:,} bytes); hunk not reviewed", fatal=True))
        else:
            hunks.append(hunk)
    if not hunks:
        return
    old_lines, new_lines, full, why = _texts(pf, hunks, new_name, root)
    if not full:
        report.errors.append(InputError(new_name, f"{why}; hunks compared as fragments"))
    gsrc = Source(name=old_name, data="".join(old_lines).encode("utf-8"))
    nsrc = Source(name=new_name, data="".join(new_lines).encode("utf-8"))
    # the whole pipeline, not only the structural diff: a changed argument that is a
    # hyperparameter (momentum=0.8) is reported as that key, and must count for its hunk
    sub = run(Inputs([gsrc], [nsrc], [(gsrc, nsrc)]), opts)  # inline suppressions applied there
    if not full:  # fragments rarely parse: one note above says how they were compared
        sub.errors = [e for e in sub.errors if "nested too deeply" in e.message]
    report.errors.extend(sub.errors)
    report.masked.extend(sub.masked)
    report.texts.update(sub.texts)  # Options.keep_texts: the html page shows both texts
    report.pairs += sub.pairs
    unused_rule = code("unused-suppression")
    unused = [f for f in sub.findings if f.rule == unused_rule]
    found = [f for f in sub.findings if f.rule != unused_rule]
    for hunk in hunks:
        inside = [f for f in found if _in_hunk(f, hunk)]
        if inside:
            report.findings.append(_hunk_finding(hunk, inside, old_name, new_name))
    report.findings.extend(filter_findings(unused, opts))
    report.findings = filter_findings(report.findings, opts)
    report.compared += 1


def _inside_root(root: str, name: str) -> str | None:
    """The path of `name` under `root`, or None when it would lie outside it (an absolute
    path, `..` above the root, or a symbolic link that leads out)."""
    if os.path.isabs(name) or name.startswith(("/", "\\")):
        return None
    parts = name.replace("\\", "/").split("/")
    if ".." in parts:
        return None
    path = os.path.join(root, name)
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    if real != real_root and not real.startswith(real_root.rstrip(os.sep) + os.sep):
        return None
    return path


def _texts(pf, hunks, new_name: str, root: str | None) -> tuple[list[str], list[str], bool, str]:
    """Old and new text of a patched file, with real line numbers, whether they are the
    whole files, and if not, why.

    With the new file on disk (and matching the hunks), the old file is rebuilt by undoing
    the hunks: whole files, full context. Otherwise each side is the hunks' lines placed at
    their line numbers, with filler comment lines in between (the caller bounded those
    numbers)."""

    why = "file not found under the review root"
    if root is not None and not pf.is_removed_file:
        path = _inside_root(root, new_name)
        current = None
        if path is None:
            why = "lies outside the review root (--root); not read"
        else:
            try:
                current = decode(read_bytes(path, new_name))[0].splitlines(keepends=True)
            except SourceError as e:
                reason = str(e).split(": ", 1)[-1]
                if reason not in ("no such file or directory", "broken symbolic link"):
                    why = f"{reason}; not read"
        if current is not None:
            rebuilt = _undo(hunks, current)
            if rebuilt is not None:
                return rebuilt, current, True, ""
            why = "the file under the review root does not match the patch"
    old: list[str] = []
    new: list[str] = []
    for gap, hunk in enumerate(hunks):
        for side, start, want in ((old, hunk.source_start, (" ", "-")), (new, hunk.target_start, (" ", "+"))):
            # the lines between hunks are the same on both sides: a distinct comment line for
            # each (blank lines all alike would make a text diff quadratic in their number)
            side.extend(f"#{gap}.{i}\n" for i in range(max(0, start - 1 - len(side))))
            for ln in hunk:
                if ln.line_type in want:
                    side.append(ln.value if ln.value.endswith("\n") else ln.value + "\n")
    return old, new, False, why


def _undo(hunks, current: list[str]) -> list[str] | None:
    old: list[str] = []
    pos = 0  # index in current (the new file)
    for hunk in hunks:
        start = max(hunk.target_start - 1, 0) if hunk.target_length else hunk.target_start
        if start < pos or start > len(current):
            return None
        old.extend(current[pos:start])
        pos = start
        for ln in hunk:
            if ln.line_type in (" ", "+"):
                if pos >= len(current) or current[pos].rstrip("\r\n") != ln.value.rstrip("\r\n"):
                    return None
                if ln.line_type == " ":
                    old.append(current[pos])
                pos += 1
            elif ln.line_type == "-":
                old.append(ln.value if ln.value.endswith("\n") else ln.value + "\n")
    old.extend(current[pos:])
    return old


def _in_hunk(f, hunk) -> bool:
    if f.npu is not None and f.npu.line and hunk.target_length:
        if hunk.target_start <= f.npu.line < hunk.target_start + hunk.target_length:
            return True
    if f.gpu is not None and f.gpu.line and hunk.source_length:
        if hunk.source_start <= f.gpu.line < hunk.source_start + hunk.source_length:
            return True
    return False


def _hunk_finding(hunk, inside, old_name, new_name):
    lines = list(hunk)
    removed = [ln for ln in lines if ln.line_type == "-"]
    added = [ln for ln in lines if ln.line_type == "+"]
    header = _header(hunk)

    def anchor(attr: str, start: int) -> int:
        """Where a side without changed lines was changed: its last line before the first change."""
        first = next(i for i, ln in enumerate(lines) if ln.line_type in ("-", "+"))
        before = [getattr(ln, attr) for ln in lines[:first] if getattr(ln, attr)]
        return before[-1] if before else max(start, 1)

    def first(changed, attr: str, side: str, start: int):
        """The first line of the hunk that carries a semantic difference (a hunk may also hold
        masked substitutions above it), else its first changed line, else where it changed."""
        lines_in = {getattr(ln, attr) for ln in changed}
        hits = sorted(s.line for f in inside for s in [getattr(f, side)] if s is not None and s.line in lines_in)
        if hits:
            ln = next(x for x in changed if getattr(x, attr) == hits[0])
            return hits[0], ln.value.rstrip("\r\n")
        if changed:
            return getattr(changed[0], attr), changed[0].value.rstrip("\r\n")
        return anchor(attr, start), ""

    gline, gsrc = first(removed, "source_line_no", "gpu", hunk.source_start)
    nline, nsrc = first(added, "target_line_no", "npu", hunk.target_start)
    g = Side(value="".join(ln.value for ln in removed).rstrip("\n") or None, path=old_name, line=gline, source=gsrc)
    n = Side(value="".join(ln.value for ln in added).rstrip("\n") or None, path=new_name, line=nline, source=nsrc)
    worst = min((f.severity for f in inside), key=SEVERITY_RANK.__getitem__)
    what = "; ".join(f"{f.rule} {f.message}" for f in inside)
    return finding(HUNK_RULES[worst], key=f"hunk:{new_name}", gpu=g, npu=n,
                   message=f"hunk {header} changes semantics: {what}",
                   extra={"hunk": header, "findings": [f.to_json() for f in inside]})
