"""Review a unified diff that ports a GPU file to NPU (`scriptdiff review PATCH`).

The patch is a request like any other (scriptdiff/run/scopes.py): the files it patches, found
under the review root, are its two sides. Its paths are found there as `git apply -p` finds
them: the leading components are stripped (-p0, -p1, ...) and, when the files sit below the
root (a `diff -ru gpu npu` made in a subfolder), under the folder that holds them; the
layout that finds the most patched files wins. Each patched file is read whole: the new file
on disk with the hunks undone for the old side (or the old file on disk with the hunks
applied, when the patch is not applied yet; or both files, when the patch compares two
folders), and each side resolves its references under the root with the patched files as
that side has them. The whole patch is then one comparison, scoped as a folder diff is (a
launch script is a run with its program and configs), and what it finds is reported where
it lies in a changed hunk: the same findings, rules, keys, values and lines as `scriptdiff
diff` gives on the two sides, so `--select`/`--ignore` mean what they mean there. A summary
above the findings lists the hunks that change semantics (the JSON `hunks` section), each
under the rule of its most severe difference (HUNK_RULES: SD156 error, SD153 warning, SD157
info); `by_hunk` (`--by-hunk`) reports those hunks as the findings instead.

A file not under the root (or that does not match the patch) is compared on its hunks' own
lines, laid out at their line numbers; a Python fragment is dedented by its common indent so
that a hunk inside a function still parses.

Hostile patches are bounded: the patch itself obeys --max-bytes, a hunk whose position
lies beyond any file under that limit is refused (fragments are laid out at their line
numbers, so `@@ -99999999999999,1 ...` would otherwise pad 10^14 lines), and a file is read
only when it lies inside the review root (no absolute paths, no `..`, no link out of it).
"""
from __future__ import annotations

import ast
import dataclasses
import io
import os
import tokenize
from dataclasses import dataclass, field

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from .. import budget
from . import scopes
from .engine import filter_findings
from .finding import finding, rule_of
from .pipeline import Inputs, run
from ..model import InputError, Options, Report, Severity, Side, UsageError
from ..ruleset.registry import detect
from ..ruleset.rules import code
from ..inputs.sources import Source, SourceError, decode, read_bytes, read_stdin, too_large
from .suppress import apply_baseline
from .pairing import skip_dirs


# a hunk is reported under the rule of its most severe difference: the one of these (one rule per
# severity) whose severity that is
HUNK_RULES = ("numeric-hunk-in-port-patch", "semantic-hunk-in-port-patch", "cosmetic-hunk-in-port-patch")


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


@dataclass(eq=False)
class _File:
    """One patched file: its hunks, its names on both sides and, when read whole, both texts."""

    pf: object
    hunks: list
    old_name: str
    new_name: str
    old: Source | None = None  # whole texts, when the files are under the root
    new: Source | None = None
    why: str = ""  # why it is compared on its hunks' lines instead
    texts: dict = field(default_factory=dict)  # side -> {real path: bytes} the patch makes there


def review(data: bytes, name: str, opts=None, root: str | None = None, by_hunk: bool = False):
    """A Report of what the unified diff `data` changes beyond the expected substitutions:
    the findings that lie in its changed hunks, with a summary of those hunks; with
    `by_hunk`, one finding per hunk under HUNK_RULES instead."""
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
    inner, wrapper_select, wrapper_ignore = _selectors(opts, by_hunk)
    files = _files(patch, report, opts, root, name)
    found: list = []  # (finding, file, hunk)
    whole = [f for f in files if f.old is not None]
    if whole:
        found += _review_whole(whole, report, inner, root)
    for f in files:
        if f.old is None:
            found += _review_fragments(f, report, inner)
    unused_rule = code("unused-suppression")
    unused = [x for x, _f, _h in found if x.rule == unused_rule]
    found = [(x, f, h) for x, f, h in found if x.rule != unused_rule]
    hunks = _hunk_summary(found, files)
    report.json_extra["hunks"] = [{"file": f.new_name, "hunk": _header(h), "rule": w.rule,
                                   "findings": sorted({x.rule for x in inside})} for f, h, w, inside in hunks]
    report.overview += _overview(hunks, sum(len(f.hunks) for f in files))
    if by_hunk:
        wrappers = [w for _f, _h, w, _inside in hunks]
        report.findings += [w for w in wrappers if (not wrapper_select or w.rule in wrapper_select)
                            and w.rule not in wrapper_ignore]
    else:
        report.findings += list({id(x): x for x, _f, _h in found}.values())
    report.findings += filter_findings(unused, inner)
    if opts.baseline is not None:  # once for the whole patch, so an entry is unused only if no file used it
        apply_baseline(report, opts)
        report.findings = filter_findings(report.findings, dataclasses.replace(inner, select=None) if by_hunk
                                          else inner)
    return report.sorted()


def _selectors(opts, by_hunk: bool):
    """The options the patch's files are compared with (inline suppressions only: the
    baseline applies once, to the report), and in hunk mode the selectors that name a hunk
    rule, which apply to the hunks rather than to the findings inside them."""
    inner = dataclasses.replace(opts, baseline=None)
    if not by_hunk:
        return inner, set(), set()
    hunk_codes = {code(r) for r in HUNK_RULES}
    sel = {s.upper() for s in opts.select or []}
    ign = {s.upper() for s in opts.ignore or []}
    inner = dataclasses.replace(inner, select=[s for s in opts.select or [] if s.upper() not in hunk_codes] or None,
                                ignore=[s for s in opts.ignore or [] if s.upper() not in hunk_codes] or None)
    return inner, sel & hunk_codes, ign & hunk_codes


def _header(hunk) -> str:
    return f"@@ -{hunk.source_start},{hunk.source_length} +{hunk.target_start},{hunk.target_length} @@"


def _files(patch, report, opts, root, patch_name) -> list[_File]:
    """The patched files, located under the root (`_layout`) and read whole where they can be."""
    layout = _layout([pf for pf in patch if not pf.is_binary_file], root)
    out = []
    last_line = opts.max_bytes + 1  # a hunk can only sit inside a file under --max-bytes: at most that many lines
    for pf in patch:
        old_name, new_name = _names(pf, layout)
        if pf.is_binary_file:
            report.errors.append(InputError(new_name, "binary file in the patch; not reviewed"))
            continue
        hunks = []
        for hunk in pf:
            start = max(hunk.source_start, hunk.target_start)
            if start > last_line:
                report.errors.append(InputError(patch_name, f"hunk {_header(hunk)} of {new_name} starts at line "
                                                            f"{start:,}, beyond any file under the --max-bytes "
                                                            f"limit ({opts.max_bytes:,} bytes); hunk not reviewed",
                                                fatal=True))
            else:
                hunks.append(hunk)
        if not hunks:
            continue
        f = _File(pf, hunks, old_name, new_name)
        _whole(f, root)
        if f.old is None:
            report.errors.append(InputError(new_name, f"{f.why}; hunks compared as fragments"))
        out.append(f)
    return out


def _raw(path: str | None) -> str | None:
    return None if path is None or path == "/dev/null" else path


def _stripped(path: str, p: int) -> str | None:
    parts = [x for x in path.replace("\\", "/").split("/") if x not in ("", ".")]
    return "/".join(parts[p:]) if len(parts) > p else None


def _layout(pfs, root: str | None) -> tuple[int, str] | None:
    """How the patch's paths lie under the root: (components stripped, folder below the root
    that holds them), the one that finds the most patched files (fewer components stripped
    and a shallower folder first); None when no layout finds any."""
    if root is None or not os.path.isdir(root):
        return None
    names = [n for pf in pfs for n in (_raw(pf.source_file), _raw(pf.target_file)) if n]
    if not names:
        return None
    depth = max(len(n.split("/")) for n in names)

    def score(p: int, folder: str) -> int:
        hits = 0
        for n in names:
            rel = _stripped(n, p)
            if rel is not None and _inside_root(root, _join(folder, rel)) is not None \
                    and os.path.isfile(os.path.join(root, _join(folder, rel))):
                hits += 1
        return hits

    best = max(((score(p, ""), -p) for p in range(depth)), default=(0, 0))
    if best[0]:
        return -best[1], ""
    # below the root: the folders where the first patched file is found, by each stripping
    first = names[0]
    found: list[tuple[int, int, int, str]] = []
    skip = set(skip_dirs())
    looked = 0
    for here, dirs, _files_ in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in skip and not d.endswith(".egg-info"))
        looked += 1
        if looked > budget.SEARCH_DIRS:
            break
        folder = os.path.relpath(here, root).replace(os.sep, "/")
        if folder == ".":
            continue
        if folder.count("/") + 1 >= budget.SEARCH_DEPTH:
            dirs[:] = []
        for p in range(depth):
            rel = _stripped(first, p)
            if rel is not None and os.path.isfile(os.path.join(here, rel)):
                found.append((-score(p, folder), p, folder.count("/"), folder))
    if not found:
        return None
    _s, p, _d, folder = min(found)
    return p, folder


def _join(folder: str, rel: str) -> str:
    return f"{folder}/{rel}" if folder else rel


def _names(pf, layout) -> tuple[str, str]:
    """The patched file's old and new names, relative to the review root."""
    if layout is None:
        old = _strip(pf.source_file) or _strip(pf.target_file)
        return old, _strip(pf.target_file) or old
    p, folder = layout

    def one(path):
        raw = _raw(path)
        rel = _stripped(raw, p) if raw else None
        return _join(folder, rel) if rel else None

    old = one(pf.source_file) or one(pf.target_file)
    return old, one(pf.target_file) or old


def _whole(f: _File, root: str | None) -> None:
    """Both whole texts of a patched file, when it is under the root and matches the patch."""
    f.why = "file not found under the review root"
    if root is None or f.pf.is_removed_file:
        return
    texts = {}
    for side, name in (("old", f.old_name), ("new", f.new_name)):
        if side == "old" and f.pf.is_added_file:
            continue
        path = _inside_root(root, name)
        if path is None:
            f.why = "lies outside the review root (--root); not read"
            return
        try:
            texts[side] = (path, decode(read_bytes(path, name))[0].splitlines(keepends=True))
        except SourceError as e:
            reason = str(e).split(": ", 1)[-1]
            if reason not in ("no such file or directory", "broken symbolic link"):
                f.why = f"{reason}; not read"
    new, old = texts.get("new"), texts.get("old")
    if new is not None:
        rebuilt = _undo(f.hunks, new[1])
        if rebuilt is not None:  # the patch is applied there: the old side is the new file with the hunks undone
            if old is not None and old[0] != new[0] and old[1] == rebuilt:
                f.old = Source(name=f.old_name, data=_bytes(rebuilt), origin=old[0])  # two folders: both on disk
            else:
                at = old[0] if old is not None else new[0]
                f.old = Source(name=f.old_name, data=_bytes(rebuilt), origin=at)
                f.texts["gpu"] = {os.path.realpath(at): f.old.data}
            f.new = Source(name=f.new_name, data=_bytes(new[1]), origin=new[0])
            return
    if old is not None and not f.pf.is_added_file:
        applied = _apply(f.hunks, old[1])
        if applied is not None:  # not applied yet: the new side is the old file with the hunks applied
            at = new[0] if new is not None else old[0]
            f.old = Source(name=f.old_name, data=_bytes(old[1]), origin=old[0])
            f.new = Source(name=f.new_name, data=_bytes(applied), origin=at)
            f.texts["npu"] = {os.path.realpath(at): f.new.data}
            return
    if new is not None or old is not None:
        f.why = "the file under the review root does not match the patch"


def _bytes(lines: list[str]) -> bytes:
    return "".join(lines).encode("utf-8")


def _review_whole(files: list[_File], report: Report, opts, root: str) -> list:
    """The files read whole, compared as one request: scoped as a folder diff (a launch
    script's run reads its program and configs, each side with the patched texts it has),
    and each finding placed in the hunk it lies in."""
    pairs = [(f.old, f.new) for f in files]
    gtexts = {k: v for f in files for k, v in f.texts.get("gpu", {}).items()}
    ntexts = {k: v for f in files for k, v in f.texts.get("npu", {}).items()}
    sides = (scopes.SideScope(root, scopes.Overlay(root, gtexts)), scopes.SideScope(root, scopes.Overlay(root, ntexts)))
    inputs = Inputs([g for g, _n in pairs], [n for _g, n in pairs], pairs, units=scopes.units(pairs),
                    roots=(root, root), resolvers=(sides[0].resolver, sides[1].resolver))
    sub = run(inputs, opts)  # inline suppressions and --select/--ignore applied there
    _absorb(report, sub)
    report.compared += len(files)
    return _placed(sub.findings, files)


def _review_fragments(f: _File, report: Report, opts) -> list:
    """A file not under the root: its hunks' lines at their line numbers, compared on their
    own; a Python file whose hunks do not parse together, hunk by hunk (one that does not
    parse is then compared as text alone)."""
    old_lines, new_lines = _fragments(f, f.hunks)
    groups = [f.hunks]
    if len(f.hunks) > 1 and detect(Source(name=f.new_name, data=b"")).name == "python" \
            and not (_parses(old_lines) and _parses(new_lines)):
        groups = [[h] for h in f.hunks]
    out = []
    for hunks in groups:
        if hunks is not f.hunks:
            old_lines, new_lines = _fragments(f, hunks)
        gsrc = Source(name=f.old_name, data=_bytes(old_lines))
        nsrc = Source(name=f.new_name, data=_bytes(new_lines))
        sub = run(Inputs([gsrc], [nsrc], [(gsrc, nsrc)]), opts)
        sub.errors = [e for e in sub.errors if "nested too deeply" in e.message]  # one note above says how
        _absorb(report, sub)
        out += _placed(sub.findings, [dataclasses.replace(f, hunks=hunks)] if hunks is not f.hunks else [f])
    report.compared += 1
    return out


def _absorb(report: Report, sub) -> None:
    report.errors.extend(sub.errors)
    report.masked.extend(sub.masked)
    report.texts.update(sub.texts)  # Options.keep_texts: the html page shows both texts
    report.pairs += sub.pairs
    report.inputs += sub.inputs
    report.usage_errors += sub.usage_errors


def _placed(findings, files: list[_File]) -> list:
    """(finding, file, hunk) for each finding that lies in a changed hunk of a patched file:
    a side's line within a hunk of that side's file; a finding about a whole patched file
    (no line on either side) in the file's first hunk. Unused suppressions are kept as they are."""
    unused_rule = code("unused-suppression")
    by_name = {}
    for f in files:
        by_name.setdefault(("gpu", f.old_name), f)
        by_name.setdefault(("npu", f.new_name), f)
    out = []
    for x in findings:
        if x.rule == unused_rule:
            out.append((x, None, None))
            continue
        where = []  # every hunk the finding lies in (a launch flag dropped here, its effect there)
        for side in ("npu", "gpu"):
            s = getattr(x, side)
            f = by_name.get((side, s.path)) if s is not None else None
            if f is None:
                continue
            if s.line:
                where += [(f, h) for h in f.hunks if _in_hunk_side(s.line, h, side)
                          and not any(h is h2 for _f, h2 in where)]
            elif (x.gpu is None or not x.gpu.line) and (x.npu is None or not x.npu.line) and not where:
                where.append((f, f.hunks[0]))
        if where:
            x.extra = {**(x.extra or {}), "hunk": _header(where[0][1]), "file": where[0][0].new_name}
            out += [(x, f, h) for f, h in where]
    return out


def _in_hunk_side(line: int, hunk, side: str) -> bool:
    if side == "npu":
        return hunk.target_length > 0 and hunk.target_start <= line < hunk.target_start + hunk.target_length
    return hunk.source_length > 0 and hunk.source_start <= line < hunk.source_start + hunk.source_length


def _hunk_summary(found, files: list[_File]) -> list:
    """(file, hunk, its hunk finding, the findings inside it) for each hunk that holds one, in
    the patch's order."""
    groups: dict = {}
    for x, f, h in found:
        groups.setdefault((id(f), id(h)), []).append(x)
    return [(f, h, _hunk_finding(h, groups[(id(f), id(h))], f.old_name, f.new_name), groups[(id(f), id(h))])
            for f in files for h in f.hunks if (id(f), id(h)) in groups]


def _overview(hunks: list, total: int) -> list[str]:
    if not hunks:
        return []
    lines = [f"{len(hunks)} of {total} hunk(s) change semantics:"]
    for f, h, w, inside in hunks:
        codes = ", ".join(sorted({x.rule for x in inside}))
        lines.append(f"  {w.rule} {f.new_name} {_header(h)}: {codes}")
    return lines


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


def _fragments(f: _File, hunks: list) -> tuple[list[str], list[str]]:
    """Each side as the hunks' lines placed at their line numbers, with filler comment lines in
    between (the caller bounded those numbers). A Python hunk is framed so that it parses as
    the statements it holds (`_frame`): the lines a hunk inside a block or a bracket needs go
    into the filler before it and after it, never shifting a line; with no room for them it is
    dedented by its common indent instead."""
    old: list[str] = []
    new: list[str] = []
    python = detect(Source(name=f.new_name, data=b"")).name == "python"
    ends = [(h.source_start, h.target_start) for h in hunks[1:]] + [(None, None)]
    for gap, (hunk, (next_old, next_new)) in enumerate(zip(hunks, ends)):
        for side, start, nxt, want in ((old, hunk.source_start, next_old, (" ", "-")),
                                       (new, hunk.target_start, next_new, (" ", "+"))):
            lines = [ln.value if ln.value.endswith("\n") else ln.value + "\n" for ln in hunk if ln.line_type in want]
            room = max(0, start - 1 - len(side))
            before, after, cut = _frame(lines) if python else ([], [], 0)
            after_room = None if nxt is None else nxt - 1 - (start - 1 + len(lines))
            if len(before) > room or (after_room is not None and len(after) > after_room):
                before, after, cut = [], [], _indent(lines) if python else 0
            # the lines between hunks are the same on both sides: a distinct comment line for
            # each (blank lines all alike would make a text diff quadratic in their number)
            side.extend(f"#{gap}.{i}\n" for i in range(room - len(before)))
            side.extend(before)
            side.extend(x[cut:] if x.strip() else x.lstrip(" \t") for x in lines)
            side.extend(after)
    return old, new


_CLOSE = {"(": ")", "[": "]", "{": "}"}
_OPEN = {v: k for k, v in _CLOSE.items()}


def _frame(lines: list[str]) -> tuple[list[str], list[str], int]:
    """The lines a Python hunk needs around it to parse: before it, an `if True:` at each block
    level it returns to and the brackets its first lines close (`_ = [`); after it, the
    brackets it leaves open and a body for a block header it ends on. ([], [], 0) when it
    parses as it is; the caller dedents it when the frame has no room."""
    if not lines or _parses(lines):
        return [], [], 0
    closers, opened, inside = _brackets(lines)
    if closers is None:  # a string or an escape left open: no frame helps
        return [], [], _indent(lines)
    outside = [x for i, x in enumerate(lines) if i not in inside and x.strip() and not x.lstrip().startswith("#")]
    widths = [len(x) - len(x.lstrip(" ")) for x in outside]
    if any(x.startswith("\t") for x in lines):
        return [], [], _indent(lines)
    first = widths[0] if widths else 0
    levels = sorted({w for w in widths if w < first} | ({0} if first else set()))
    before = [" " * w + "if True:\n" for w in levels]
    if closers:
        before.append(" " * first + "_ = " + "".join(_OPEN[c] for c in reversed(closers)) + "\n")
    after = []
    if opened:
        after.append("".join(_CLOSE[o] for o in reversed(opened)) + "\n")
    elif outside and outside[-1].rstrip().endswith(":"):
        after.append(" " * (widths[-1] + 4) + "pass\n")
    framed = before + lines + after
    return (before, after, 0) if _parses(framed) else ([], [], _indent(lines))


def _brackets(lines: list[str]) -> tuple[list[str] | None, list[str], set[int]]:
    """Python's own tokenizer over the hunk (indentation set aside): the closing brackets it
    meets with nothing open (in order), the brackets still open at its end, and the lines
    that lie inside brackets. (None, [], set()) when it cannot be tokenized."""
    text = "".join(x.lstrip(" \t") for x in lines)
    stack: list[str] = []
    closers: list[str] = []
    inside: set[int] = set()
    line = 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.start[0] != line:  # the first token of a line: inside a bracket when one is open
                line = tok.start[0]
                if stack:
                    inside.add(line - 1)
            if tok.type == tokenize.OP and tok.string in _CLOSE:
                stack.append(tok.string)
            elif tok.type == tokenize.OP and tok.string in _OPEN:
                if stack:
                    stack.pop()
                else:  # closes a bracket opened above the hunk: every line so far lies inside it
                    closers.append(tok.string)
                    inside.update(range(0, tok.start[0]))
    except tokenize.TokenError:  # "EOF in multi-line statement": brackets left open, or closed from above
        if not stack and not closers:
            return None, [], set()
    except (SyntaxError, ValueError):
        return None, [], set()
    return closers, stack, inside


def _indent(lines: list[str]) -> int:
    """The indent all non-blank lines of a hunk share (spaces or tabs, as written)."""
    widths = [len(x) - len(x.lstrip(" \t")) for x in lines if x.strip()]
    if not widths:
        return 0
    cut = min(widths)
    first = next(x for x in lines if x.strip())[:cut]
    return cut if all(x[:cut] == first for x in lines if x.strip()) else 0


def _parses(lines: list[str]) -> bool:
    try:
        ast.parse("".join(lines))
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def _undo(hunks, current: list[str]) -> list[str] | None:
    """The file `current` (the new side) with the hunks undone, or None when they do not match it."""
    return _replay(hunks, current, "+", "-", lambda h: (h.target_start, h.target_length))


def _apply(hunks, current: list[str]) -> list[str] | None:
    """The file `current` (the old side) with the hunks applied, or None when they do not match it."""
    return _replay(hunks, current, "-", "+", lambda h: (h.source_start, h.source_length))


def _replay(hunks, current: list[str], here: str, there: str, where) -> list[str] | None:
    """`current` is one side of the patch: its context and `here` lines must be where the hunks
    say; the other side is its text with each hunk's `there` lines in their place."""
    out: list[str] = []
    pos = 0  # index in current
    for hunk in hunks:
        start, length = where(hunk)
        start = max(start - 1, 0) if length else start
        if start < pos or start > len(current):
            return None
        out.extend(current[pos:start])
        pos = start
        for ln in hunk:
            if ln.line_type in (" ", here):
                if pos >= len(current) or current[pos].rstrip("\r\n") != ln.value.rstrip("\r\n"):
                    return None
                if ln.line_type == " ":
                    out.append(current[pos])
                pos += 1
            elif ln.line_type == there:
                out.append(ln.value if ln.value.endswith("\n") else ln.value + "\n")
    out.extend(current[pos:])
    return out


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
        here = old_name if side == "gpu" else new_name
        hits = sorted(s.line for f in inside for s in [getattr(f, side)]
                      if s is not None and s.path == here and s.line in lines_in)
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
    worst = Severity.worst(f.severity for f in inside)
    what = "; ".join(f"{f.rule} {f.message}" for f in inside)
    return finding(rule_of(worst, HUNK_RULES), key=f"hunk:{new_name}", gpu=g, npu=n,
                   message=f"hunk {header} changes semantics: {what}",
                   extra={"hunk": header, "findings": [f.to_json() for f in inside]})
