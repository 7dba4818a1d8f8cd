"""SARIF 2.1.0, as GitHub code scanning accepts it.

One run; tool.driver.rules is the rule catalogue (id = code, short description = summary,
full description and help = the rule's doc, default level = its severity); each finding is
a result located on the NPU side (the port is what gets changed) with the GPU side as a
related location (id 1) that the message links (`[GPU side](1)`, SARIF's embedded link, so
code scanning shows it; literal brackets escaped). URIs are relative to the repository root
(uriBaseId %SRCROOT%) with forward slashes, percent-encoded (`uri_of`): the repository of the
working folder, else the one holding the inputs; a path outside it is an absolute file URI. A
finding with a line has a region; one about a whole file (a checkpoint's tensor, a log's
series, a file on one side only) is file-level, a physical location without a region, which
the spec reads as the whole artifact. Input errors become tool execution notifications.
"""
from __future__ import annotations

import os
from urllib.parse import quote

from .. import __version__, budget
from ..model import Severity
from ..ruleset.rules import load
from ..inputs.sources import git_top
from ..run.suppress import fingerprint
from .values import clip, json_text, record_line, shown

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
INFO_URI = "https://github.com/scriptdiff/scriptdiff"


def repo_root(start: str | None = None, paths: tuple = ()) -> str:
    """The enclosing git work tree of `start` (default: the current folder), else that of the
    first of `paths` (a report's inputs) inside one, else the folder."""
    here = start or os.getcwd()
    top = git_top(here)
    for p in paths if top is None else ():
        if p and os.path.isabs(p) and os.path.exists(p):
            top = git_top(os.path.dirname(p))
            if top is not None:
                break
    return top or os.path.abspath(here)


def text(s: str) -> str:
    """Message text with its literal square brackets escaped: in SARIF `[x](1)` is a link."""
    return s.replace("[", "\\[").replace("]", "\\]")


def repo_relative(path: str | None, root: str | None = None) -> str | None:
    """A path as the repository sees it: relative to its root, forward slashes.

    `REV:path` names (read from git) are already repository paths; a path outside the
    repository stays absolute (file URI)."""
    if not path:
        return None
    if not os.path.exists(path) and ":" in path and not os.path.isabs(path):
        rev, rest = path.split(":", 1)
        if rev and "/" not in rev:
            return rest.replace("\\", "/").lstrip("/")
    root = root or repo_root()
    full = os.path.abspath(path)
    try:
        rel = os.path.relpath(full, root)
    except ValueError:  # another drive
        rel = None
    if rel is None or rel.startswith(".."):
        return "file://" + full.replace("\\", "/") if os.path.isabs(path) else path.replace("\\", "/")
    return rel.replace(os.sep, "/")


def uri_of(path: str) -> str:
    """A path as a URI reference: percent-encoded, byte by byte (a space is %20; a newline
    %0A; a file name's byte that is not UTF-8, held as a surrogate escape, its own %XX), so
    every artifactLocation is a valid URI and names the file's real bytes."""
    if path.startswith("file://"):
        return "file://" + uri_of(path[len("file://"):])
    return quote(os.fsencode(path), safe="/:@!$&'()*+,;=-._~")


def _location(side, root: str, message: str | None = None, full: bool = False) -> dict | None:
    uri = repo_relative(side.path, root) if side is not None else None
    if uri is None:
        return None
    uri = uri_of(uri)
    phys: dict = {"artifactLocation": {"uri": uri}}
    if not uri.startswith("file://"):
        phys["artifactLocation"]["uriBaseId"] = "%SRCROOT%"
    if side.line:
        region: dict = {"startLine": int(side.line)}
        if side.source and side.source not in ("default", "derived"):
            region["snippet"] = {"text": clip(side.source, budget.SHOWN_SOURCE, full)}
        phys["region"] = region
    loc: dict = {"physicalLocation": phys}
    if message:
        loc["message"] = {"text": text(message)}
    return loc


def _value(side, full: bool = False, check: str | None = None) -> str:
    if side is None:
        return "(absent)"
    return (record_line(check, side.value) if check else None) or shown(side.value, full)


def render(report, root: str | None = None, full_values: bool = False, **_options) -> str:
    report.sorted()
    root = root or repo_root(paths=tuple(os.path.abspath(s.path) for f in report.findings for s in (f.npu, f.gpu)
                                         if s is not None and s.path and os.path.exists(s.path)))
    rs = load()
    rule_list = [r for r in rs.rules.values() if r.kind == "finding"]
    index = {r.code: i for i, r in enumerate(rule_list)}
    rules = []
    for r in rule_list:
        rules.append({
            "id": r.code,
            "name": "".join(w.capitalize() for w in r.name.split("-")),
            "shortDescription": {"text": r.summary.strip()},
            "fullDescription": {"text": r.doc.strip()},
            "help": {"text": r.doc.strip(), "markdown": f"**{r.code} {r.name}**: {r.summary.strip()}\n\n{r.doc.strip()}"},
            "defaultConfiguration": {"level": Severity(r.severity).sarif},
            "properties": {"tags": ["scriptdiff", r.check], "check": r.check},
        })
    results = []
    for f in report.findings:
        primary, related = (f.npu, f.gpu) if (f.npu is not None and f.npu.path) else (f.gpu, f.npu)
        loc = _location(primary, root, full=full_values)
        other = _location(related, root, f"{'GPU' if related is f.gpu else 'NPU'} side: "
                                         f"{_value(related, full_values, f.check)}", full_values)
        glabel, nlabel = "GPU", "NPU"
        if other is not None:  # the related side's label is the embedded link to relatedLocations[id 1]
            glabel, nlabel = ("[GPU side](1)", nlabel) if related is f.gpu else (glabel, "[NPU side](1)")
        msg = (f"{text(clip(f.message, 2 * budget.SHOWN_CHARS, full_values))} ({glabel}: "
               f"{text(_value(f.gpu, full_values, f.check))}; {nlabel}: {text(_value(f.npu, full_values, f.check))})")
        res: dict = {
            "ruleId": f.rule,
            "level": Severity(f.severity).sarif,
            "message": {"text": msg},
            "partialFingerprints": {"scriptdiff/v1": fingerprint(f)},
            "properties": {"check": f.check, "key": f.key, "severity": Severity(f.severity).value,
                           "derived": f.derived},
        }
        if f.rule in index:
            res["ruleIndex"] = index[f.rule]
        if loc is None:  # code scanning needs a location: the side as given on the command line
            loc = _location(_PathOnly(report.npu), root) or _location(_PathOnly(report.gpu), root)
        if loc is not None:
            res["locations"] = [loc]
        if other is not None:
            other["id"] = 1
            res["relatedLocations"] = [other]
        results.append(res)
    notes = []
    for e in report.errors:
        n: dict = {"level": e.severity.sarif, "message": {"text": text(f"{e.path}: {e.message}")}}
        loc = _location(_PathOnly(e.path), root)
        if loc is not None:
            n["locations"] = [loc]
        notes.append(n)
    run: dict = {
        "tool": {"driver": {"name": "scriptdiff", "version": __version__, "semanticVersion": __version__,
                            "informationUri": INFO_URI, "rules": rules}},
        "invocations": [{"executionSuccessful": report.exit_code() != 2,
                         "toolExecutionNotifications": notes}],
        "originalUriBaseIds": {"%SRCROOT%": {"uri": uri_of("file://" + root.replace("\\", "/").rstrip("/") + "/")}},
        "results": results,
        "columnKind": "unicodeCodePoints",
    }
    if report.verdicts:
        run["properties"] = {"verdicts": {k: {"verdict": v[0], "reason": v[1]} for k, v in sorted(report.verdicts.items())}}
    doc = {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}
    return json_text(doc)


class _PathOnly:
    def __init__(self, path):
        self.path = path
        self.line = None
        self.source = ""
