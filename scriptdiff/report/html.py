"""`--format html`: one self-contained review page (no network: inline CSS, JS and data).

For each pair of files the two sides are aligned line by line (difflib), as a diff tool
shows them, and each side of a changed row (a cell) has one of four looks: a finding (its
badge in the gutter, a line under the row with severity, rule, key, both values), a masked
port edit (dimmed, the masking rule on hover), equal after normalising (the settings of the
line have equal values on both sides: Report.equal; the value and how each side wrote it on
hover), or changed with no finding. Inside a line the page marks the changed words (a token
diff) and tells apart the words a finding's value is written in (located here, `_locate`),
a mask's parts and normalised values. Above the panels: the findings (each links to its
rows), the verdicts of `check`, the curves view (report/curves.py's chart data, drawn by the
page as SVG), the hyperparameter table (its summary says what "differ" counts; origins link
to their lines), the input errors and the file list with counts per file.

Navigation is in page order over stops the writer computes once (`_stops`): a row with a
finding, or with `c` each run of rows with a look; n/p wrap. A change map beside the
scrollbar draws the change stops; file headers are sticky.

The page stays fast on large folders: the header, findings and file list are static HTML;
each pair's lines are a JSON block of their own, parsed and laid out only when the pair
comes near the viewport (or is on the first screen, or a stop in it is visited). Equal runs
are folded; the writer's row pass visits only changed or marked rows.

The files' text comes from `Report.texts` (kept by the engine when Options.keep_texts: the
commands set it when html is among the outputs), else from the file on disk. Syntax colours
come from pygments (installed with rich), by the lexer the file's kind names (rules/kinds.yaml
`lexer`); without it lines are plain.
Everything from the inputs passes through report.values (`safe`, `shown`, `clip`), and is
escaped here (static parts) or by the page's `esc` (lines, titles: built in the browser;
SVG text is set as textContent).
"""
from __future__ import annotations

import bisect
import difflib
import html
import json
import os

from ..model import Severity
from ..ruleset.registry import check_order, detect
from ..ruleset.rules import load as load_rules
from .curves import chart_data
from ..ruleset.secrets import is_secret, shown_text
from ..inputs.sources import Source, SourceError, read_path
from .dumps_html import section as dumps_section
from .hparams_table import origin
from .values import MAX_CHARS, clip, safe, shown

MAX_TEXT = 2_000_000  # a file read from disk for the page: larger ones are not shown
MAX_LINES = 20_000  # lines of one side shown (a generated file would make the page huge)


def e(s) -> str:
    """Input-derived text for static HTML: control characters escaped, then HTML-escaped."""
    return html.escape(safe(s), quote=True)


def _script_json(doc) -> str:
    """JSON inside <script type=application/json>: nothing in it can close or escape the element."""
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/").replace(
        "<!--", "<\\u0021--")


# --------------------------------------------------------------------------- the files

class _File:
    """One row of the file list: a GPU path and an NPU path (either may be None), their texts."""

    def __init__(self, g: str | None, n: str | None, status: str = ""):
        self.g, self.n, self.status = g, n, status
        self.findings: list[int] = []
        self.masked = 0
        self.ta: str | None = None
        self.tb: str | None = None


def _files(report) -> list[_File]:
    texts = report.texts
    out: dict[tuple, _File] = {}
    used: set[tuple[str, str]] = set()
    for g, n in report.pairs:
        if (g, n) not in out:
            out[(g, n)] = _File(g, n)
            used |= {("gpu", g), ("npu", n)}
    kinds = {(a.side, a.path): a.kind for a in report.inputs}
    if not report.pairs:  # a Report made without keep_texts: the files the masks pair
        for m in report.masked:
            if m.gpu and m.npu and m.gpu.path and m.npu.path and ("gpu", m.gpu.path) not in used \
                    and ("npu", m.npu.path) not in used:
                out[(m.gpu.path, m.npu.path)] = _File(m.gpu.path, m.npu.path)
                used |= {("gpu", m.gpu.path), ("npu", m.npu.path)}
    # files read but compared as part of a run (configs, snapshots): paired by name, else by kind
    left: dict[str, list[str]] = {"gpu": [], "npu": []}
    for side, p in list(texts) + [(a.side, a.path) for a in report.inputs if a.status != "identical"]:
        if (side, p) not in used and p not in left[side]:
            left[side].append(p)
    for key in (lambda p: p.replace("\\", "/").rsplit("/", 1)[-1], lambda p: kinds.get(("gpu", p)) or
                kinds.get(("npu", p)) or "?"):
        by: dict = {}
        for p in left["npu"]:
            by.setdefault(key(p), []).append(p)
        for p in list(left["gpu"]):
            cands = by.get(key(p))
            if cands and len(cands) == 1 and sum(1 for q in left["gpu"] if key(q) == key(p)) == 1:
                q = cands.pop()
                out[(p, q)] = _File(p, q)
                left["gpu"].remove(p)
                left["npu"].remove(q)
    for side in ("gpu", "npu"):
        for p in left[side]:
            out[(p, None) if side == "gpu" else (None, p)] = _File(p, None) if side == "gpu" else _File(None, p)
    same_g = [a.path for a in report.inputs if a.status == "identical" and a.side == "gpu"]
    same_n = [a.path for a in report.inputs if a.status == "identical" and a.side == "npu"]
    paired = {p for k in out for p in k if p}
    for g, n in zip(same_g, same_n):  # accounted in pairs, GPU then NPU (tree.collect)
        if g not in paired and n not in paired:
            out[(g, n)] = _File(g, n, "identical")
    for f in report.findings:  # unpaired files of a folder
        if f.key.startswith("file:"):
            s = f.gpu or f.npu
            k = (s.path, None) if f.gpu else (None, s.path)
            if s.path and s.path not in paired and k not in out:
                out[k] = _File(*k)
    return sorted(out.values(), key=lambda f: (f.g or f.n or "", f.n or ""))


def _load(f: _File, texts: dict) -> None:
    """The file's texts, when they will be shown (not for an identical pair nobody points at),
    and its status."""
    if f.status != "identical" or f.findings:
        f.ta, f.tb = _text("gpu", f.g, texts), _text("npu", f.n, texts)
    if not f.status:
        if f.ta is not None and f.tb is not None:
            f.status = "identical" if f.ta == f.tb else "changed"
        elif f.g and f.n:
            f.status = "text not available"
        else:
            f.status = "GPU only" if f.g else "NPU only"


def _text(side: str, path: str | None, texts: dict) -> str | None:
    if path is None:
        return None
    if (side, path) in texts:
        return texts[(side, path)]
    try:  # a path from a Report built without keep_texts: read it only if it is a small file
        if not os.path.isfile(path) or os.path.getsize(path) > MAX_TEXT:
            return None
    except OSError:
        return None
    try:
        src = read_path(path)
    except SourceError:
        return None
    if len(src.data) > MAX_TEXT or src.is_binary():
        return None
    return shown_text(src)


# --------------------------------------------------------------------------- lines

def _lines(text: str | None) -> list[str]:
    if text is None:
        return []
    lines = [safe(line) for line in text.replace("\r\n", "\n").split("\n")]
    if lines and lines[-1] == "":
        lines.pop()
    return lines[:MAX_LINES]


def _lexer(path: str | None, lines: list[str]):
    """A pygments lexer for the file's kind, or None (an unknown kind, no pygments)."""
    if path is None:
        return None
    spec = detect(Source(name=path, data="\n".join(lines[:100]).encode("utf-8", "replace"))).lexer
    if spec is None:  # rules/kinds.yaml: this kind has no `lexer`
        return None
    mod, _, cls = spec.partition(":")
    try:
        import importlib

        return getattr(importlib.import_module(f"pygments.lexers.{mod}"), cls)(stripnl=False, ensurenl=False)
    except (ImportError, AttributeError):  # no pygments: plain lines
        return None


def _lex(lines: list[str], lexer, used: set) -> list:
    """Each line: a string, or [class, text, class, text, ...] with pygments' short token classes."""
    if lexer is None or not lines:
        return lines
    from pygments.token import STANDARD_TYPES

    out: list = [[]]
    for ttype, value in lexer.get_tokens("\n".join(lines)):
        while ttype not in STANDARD_TYPES:
            ttype = ttype.parent
        cls = STANDARD_TYPES[ttype]
        cls = "" if cls == "w" else cls
        for k, part in enumerate(value.split("\n")):
            if k:
                out.append([])
            if not part:
                continue
            line = out[-1]
            if line and line[-2] == cls:
                line[-1] += part
            else:
                line += [cls, part]
                if cls:
                    used.add(cls)
    out = out[:len(lines)] + [[] for _ in range(len(lines) - len(out))]
    return [ln[1] if len(ln) == 2 and not ln[0] else (ln or "") for ln in out]


# --------------------------------------------------------------------------- values on a line

BOOLS = {"true": True, "on": True, "yes": True, "false": False, "off": False, "no": False}


def _words(text: str) -> list[tuple[int, int]]:
    """Where the value-like words of a displayed line are: runs of letters, digits and
    `_.-+` (`--lr`, `1.0e-4`, `torch.bfloat16`) and quoted strings. For highlighting a value
    the report already read from this line, never for reading one."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j = text.find(c, i + 1)
            j = n - 1 if j < 0 else j
            out.append((i, j + 1))
            i = j + 1
        elif c.isalnum() or c in "_.-+":
            j = i
            while j < n and (text[j].isalnum() or text[j] in "_.-+"):
                j += 1
            out.append((i, j))
            i = j
        else:
            i += 1
    return out


def _matches(value, word: str) -> bool:
    w = word.strip("\"'")
    if isinstance(value, bool):
        return BOOLS.get(w.lower()) is value
    if isinstance(value, (int, float)):
        try:
            x = float(w)
        except ValueError:
            return False
        return x == value or (x != 0 and abs(x - value) <= 1e-9 * abs(x))
    return isinstance(value, str) and bool(value) and w == value


def _locate(value, text: str, limit: int = 4) -> list[list[int]]:
    """[start, end] of each word of `text` that writes `value` (a number by its value, a
    boolean by true/false/on/off, a string as itself; each element of a list or tuple)."""
    if value is None or text is None or len(text) > 2000:
        return []
    values = list(value)[:8] if isinstance(value, (list, tuple)) else [value]
    out = []
    for a, b in _words(text):
        if any(_matches(v, text[a:b]) for v in values if not isinstance(v, (list, tuple, dict))):
            out.append([a, b])
            if len(out) >= limit:
                break
    return out


# --------------------------------------------------------------------------- looks

# the look of one side of a row (a cell): a finding (its severity), a masked port edit,
# equal after normalising, changed with no finding; the order says which wins on a line
FINDING_LOOKS = tuple(s.look for s in Severity)  # a finding's line: the letter of its severity
LOOK_RANK = {look: i for i, look in enumerate(FINDING_LOOKS + ("C", "Q", "M"))}
CTX = 3  # unchanged lines kept around a marked line (the page's script folds the same way)


def _look(marks: dict, col: str, line: int | None, changed: bool, findings: list) -> str:
    if line is None:
        return ""
    ks = marks["f" + col].get(str(line))
    if ks:
        return min((Severity(findings[k][0]).look for k in ks), key=LOOK_RANK.get)
    if str(line) in marks["m" + col]:
        return "M"
    if not changed:
        return ""
    return "Q" if str(line) in marks["q" + col] else "C"


def _rows(ops, marks: dict, findings: list) -> list[list]:
    """[row, GPU cell's look, NPU cell's look] of every row with a look, rows numbered as the
    page lays them out (difflib's opcodes: an equal or replaced block side by side)."""
    out = []
    row = 0
    lines = {col: sorted({int(ln) for key in ("f", "m") for ln in marks[key + col]}) for col in ("a", "b")}
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal":  # only lines with marks (a finding, a mask: the one-file view)
            hit = set()
            for col, lo, hi in (("a", i1, i2), ("b", j1, j2)):
                at = lines[col]
                for ln in at[bisect.bisect_right(at, lo):bisect.bisect_right(at, hi)]:
                    hit.add(ln - 1 - lo)
            for k in sorted(hit):
                la = _look(marks, "a", i1 + k + 1, False, findings)
                lb = _look(marks, "b", j1 + k + 1, False, findings)
                if la or lb:
                    out.append([row + k, la, lb])
            row += i2 - i1
            continue
        n = max(i2 - i1, j2 - j1)
        for k in range(n):
            la = _look(marks, "a", i1 + k + 1 if i1 + k < i2 else None, True, findings)
            lb = _look(marks, "b", j1 + k + 1 if j1 + k < j2 else None, True, findings)
            out.append([row + k, la, lb])
        row += n
    return out


def _shown_rows(marked: list[list], total: int) -> tuple[list[tuple[int, int]], int]:
    """The rows the page lays out around marked rows (CTX on each side; each run of the others
    folded into one line): the kept intervals [start, end) and how many lines the panel shows."""
    spans: list[tuple[int, int]] = []
    for r, _la, _lb in marked:
        a, b = max(0, r - CTX), min(total, r + CTX + 1)
        if spans and a <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(spans[-1][1], b))
        else:
            spans.append((a, b))
    if not spans:
        return spans, 1 if total else 0
    gaps = (spans[0][0] > 0) + (len(spans) - 1) + (spans[-1][1] < total)
    return spans, sum(b - a for a, b in spans) + gaps


def _displayed(row: int, spans: list[tuple[int, int]]) -> int:
    """The line of the laid-out panel that shows `row` (kept rows, one line per fold)."""
    at, prev = 0, 0
    for a, b in spans:
        if a > prev:
            at += 1  # the fold before this interval
        if row < b:
            return at + max(0, row - a)
        at += b - a
        prev = b
    return at


def _stops(i: int, marked: list[list], ff: list, spans, shown: int) -> tuple[list, list]:
    """The navigation stops of panel i, in page order: finding stops (the panel's header for a
    finding about the whole file, then each row with a finding) and change stops (each run of
    consecutive rows with a look: [panel, first row, strongest look, where it starts and ends
    as fractions of the panel's height], which the change map draws)."""
    fstops: list = [[i, -1, [k]] for k in ff]
    cstops: list = []
    run = None
    for r, la, lb in marked:
        look = min((x for x in (la, lb) if x), key=LOOK_RANK.get)
        if look in FINDING_LOOKS:
            fstops.append([i, r, []])
        if run is not None and r == run[1] + 1:
            run[1] = r
            run[2] = min(run[2], look, key=LOOK_RANK.get)
            continue
        if run is not None:
            cstops.append(_cstop(i, run, spans, shown))
        run = [r, r, look]
    if run is not None:
        cstops.append(_cstop(i, run, spans, shown))
    return fstops, cstops


def _cstop(i: int, run: list, spans, shown: int) -> list:
    a, b = _displayed(run[0], spans), _displayed(run[1], spans) + 1
    return [i, run[0], run[2], round(a / max(shown, 1), 4), round(b / max(shown, 1), 4)]


def _pair_data(f: _File, marks: dict, used: set):
    a, b = _lines(f.ta), _lines(f.tb)
    ops = difflib.SequenceMatcher(None, a, b, autojunk=len(a) > 2000).get_opcodes()
    lexer = _lexer(f.g or f.n, a or b)
    # the NPU side's lines only where they differ (equal runs are the GPU side's), each changed
    # block lexed on its own: half the lexing, at the price of a block that starts inside a
    # multi-line string being coloured from its first line
    bl = [x for tag, _i1, _i2, j1, j2 in ops if tag != "equal" for x in _lex(b[j1:j2], lexer, used)]
    return {"a": _lex(a, lexer, used), "b": bl, "o": [[t[0], i1, i2, j1, j2] for t, i1, i2, j1, j2 in ops],
            **marks}, a, b, ops


# --------------------------------------------------------------------------- the page

def render(report, full_values: bool = False, **_options) -> str:
    report.sorted()
    rules = load_rules().rules
    files = _files(report)
    where = {}
    for i, f in enumerate(files):
        if f.g:
            where.setdefault(("gpu", f.g), i)
        if f.n:
            where.setdefault(("npu", f.n), i)
    marks = [{"fa": {}, "fb": {}, "ma": {}, "mb": {}, "ff": [], "qa": {}, "qb": {}, "sa": {}, "sb": {}}
             for _ in files]
    fdata = []
    spots: list[tuple[int, str, int, object, int]] = []  # (panel, column, line, value, finding): spans to find
    for k, fd in enumerate(report.findings):
        locs = []
        for side, s, col in (("gpu", fd.gpu, "a"), ("npu", fd.npu, "b")):
            i = where.get((side, s.path)) if s is not None and s.path else None
            if i is None:
                locs.append(-1)
                continue
            locs.append(i)
            if k not in files[i].findings:
                files[i].findings.append(k)
            if s.line:
                marks[i]["f" + col].setdefault(str(s.line), []).append(k)
                spots.append((i, col, s.line, s.value, k))
            elif k not in marks[i]["ff"]:
                marks[i]["ff"].append(k)
        val = {s: (shown(x.value, full_values) if x is not None else "(absent)") for s, x in
               (("g", fd.gpu), ("n", fd.npu))}
        fdata.append([Severity(fd.severity).value, fd.check, fd.rule, safe(fd.key), val["g"], val["n"],
                      clip(fd.message, 2 * MAX_CHARS, full_values), locs[0], locs[1]])
    mtitles: list[str] = []
    mindex: dict[str, int] = {}
    masked_at: set[tuple[str, str, int]] = set()  # (side, path, line) of every masked line
    for m in report.masked:
        r = rules.get(m.rule)
        title = f"masked by {m.rule}" + (f" {r.name}: {r.summary}" if r else "")
        if title not in mindex:
            mindex[title] = len(mtitles)
            mtitles.append(title)
        for side, s, col in (("gpu", m.gpu, "a"), ("npu", m.npu, "b")):
            i = where.get((side, s.path)) if s is not None and s.path else None
            if s is not None and s.path and s.line:
                masked_at.add((side, s.path, s.line))
            if i is not None and s.line:
                marks[i]["m" + col][str(s.line)] = mindex[title]
        for i in {where.get((side, s.path)) for side, s in (("gpu", m.gpu), ("npu", m.npu)) if s is not None} - {None}:
            files[i].masked += 1
    qtexts: list[str] = []
    qpairs = _equal_pairs(report, where)
    for f in files:
        _load(f, report.texts)
    used: set[str] = set()
    blocks = []
    sf: list = [[-1, -1, [k]] for k, d in enumerate(fdata) if d[7] < 0 and d[8] < 0]  # not on any panel: the list
    sc: list = []
    looks = dict.fromkeys(LOOK_RANK, 0)
    shown_rows: dict[int, int] = {}
    for i, f in enumerate(files):
        if not _shown(f):
            continue
        data, la, lb, ops = _pair_data(f, marks[i], used)
        for pi, col, line, value, k in spots:
            text = (la if col == "a" else lb)[line - 1] if pi == i and line <= len(la if col == "a" else lb) else None
            found = _locate(value, text) if text is not None else []
            if found:  # the words of the line that write the finding's value
                data["s" + col].setdefault(str(line), []).extend([a, b, k] for a, b in found)
        _equal_marks(data, qpairs.get(i, []), la, lb, ops, qtexts, full_values)
        marked = _rows(ops, data, fdata)
        total = sum(max(i2 - i1, j2 - j1) for _t, i1, i2, j1, j2 in ops)
        spans, nshown = _shown_rows(marked, total)
        fst, cst = _stops(i, marked, marks[i]["ff"], spans, nshown)
        for st in fst:  # the findings on each finding stop's row
            if st[1] >= 0:
                st[2] = _row_findings(st[1], ops, data)
        sf += fst
        sc += cst
        data["r"] = marked
        for _r, xa, xb in marked:
            for x in (xa, xb):
                if x:
                    looks[x] += 1
        f.looks = {x: sum(1 for _r, xa, xb in marked for y in (xa, xb) if y == x) for x in ("M", "Q", "C")}
        shown_rows[i] = nshown + len(files[i].findings)
        blocks.append(f'<script type="application/json" id="d{i}">{_script_json(data)}</script>')
    checks = sorted({f.check for f in report.findings} | set(report.verdicts), key=check_order)
    data = {"f": fdata, "m": mtitles, "q": qtexts, "sf": sf, "sc": sc, "show_masked": True}
    curves = report.details.get("curves")
    title = f"scriptdiff: {report.gpu} vs {report.npu}"
    panels = any(_shown(f) for f in files)
    parts = [f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{e(title)}</title>"
             f"<meta name=viewport content='width=device-width'><style>{CSS}{CURVES_CSS if curves else ''}"
             f"{_pygments_css(used)}</style></head>"
             f"<body><header><h1>scriptdiff {'review' if files or curves is None else 'curves'}</h1>"
             f"<p class=sides><b>GPU</b> {e(report.gpu)} <b>vs NPU</b> {e(report.npu)}</p><p class=sum>"
             + " ".join(f'<span class="{s.html_class}">{n} {s}</span>' for s, n in Severity.counts(report.findings).items())
             + (f" · {len(report.masked)} expected substitution(s) masked · {len(files)} file(s)" if files else "")
             + "</p>"
             + _controls(checks, looks if panels else None) + "</header>"
             + ("<div id=map title='where the changes are: click to go there'><div class=vp></div></div>" if panels
                else "") + "<main>"]
    parts.append(_verdicts(report))
    parts.append(_findings(report, fdata, files, full_values))
    if curves is not None:
        parts.append(_curves(curves))
    parts.append(dumps_section(report))
    parts.append(_table(report, full_values, where, files, masked_at))
    parts.append(_errors(report))
    parts.append(_file_list(files))
    for i, f in enumerate(files):
        if not _shown(f):
            continue
        lk = f.looks
        parts.append(f'<section class=pair id=p{i} data-i={i} style="min-height:{18 * shown_rows[i] + 32}px">'
                     f'<h3><span class=pa>{e(f.g or "(none)")}</span> '
                     f'<span class=pb>{e(f.n or "(none)")}</span> <small>{e(f.status)} · '
                     f'{len(f.findings)} finding(s) · {f.masked} masked · {lk["Q"]} equal after normalising · '
                     f'{lk["C"]} changed, no finding</small></h3><div class=ff></div>'
                     f'<table class=diff><colgroup><col class=ln><col><col class=gut><col class=ln><col>'
                     f'</colgroup><tbody></tbody></table></section>')
    parts.append("</main>")
    parts.append(f'<script type="application/json" id=sd-data>{_script_json(data)}</script>')
    parts += blocks
    if curves is not None:
        parts.append(f'<script type="application/json" id=cv-data>{_script_json(chart_data(curves))}</script>')
    parts.append(f"<script>{JS}</script>")
    if curves is not None:
        parts.append(f"<script>{CURVES_JS}</script>")
    parts.append("</body></html>\n")
    return "".join(parts)


def _row_findings(row: int, ops, data: dict) -> list[int]:
    """The findings marked on either side of a row."""
    at = 0
    for tag, i1, i2, j1, j2 in ops:
        n = (i2 - i1) if tag == "equal" else max(i2 - i1, j2 - j1)
        if row < at + n:
            k = row - at
            la = i1 + k + 1 if i1 + k < i2 else None
            lb = j1 + k + 1 if j1 + k < j2 else None
            out = list(data["fa"].get(str(la), [])) if la else []
            return out + [x for x in (data["fb"].get(str(lb), []) if lb else []) if x not in out]
        at += n
    return []


def _equal_pairs(report, where: dict) -> dict[int, list]:
    """The settings written differently but equal once normalized, by panel: (key, GPU side,
    NPU side) of the pairs whose two lines are in one file pair the page shows side by side
    (two files that are not a pair are not one edit)."""
    out: dict[int, list] = {}
    seen: set = set()
    for key, g, n in report.equal:
        i = where.get(("gpu", g.path))
        if i is None or i != where.get(("npu", n.path)) or (i, g.line, n.line, key) in seen:
            continue
        seen.add((i, g.line, n.line, key))
        out.setdefault(i, []).append((key, g, n))
    return out


def _equal_marks(data: dict, pairs: list, la: list, lb: list, ops, qtexts: list, full: bool) -> None:
    """Each changed line's "equal after normalising" entries [text index, start, end of the
    value as written]; the text says the key, the value once normalised, and how each side
    wrote it. Lines that did not change need none (an unchanged line has no look)."""
    moved_a = {x for t, i1, i2, _j1, _j2 in ops if t != "equal" for x in range(i1 + 1, i2 + 1)}
    moved_b = {x for t, _i1, _i2, j1, j2 in ops if t != "equal" for x in range(j1 + 1, j2 + 1)}
    for key, g, n in pairs:
        if g.line > len(la) or n.line > len(lb) or (g.line not in moved_a and n.line not in moved_b):
            continue
        secret = is_secret(key, g.value) or is_secret(key, n.value)
        found = {col: ([] if secret else _locate(s.value, text, 1)) for col, s, text in
                 (("a", g, la[g.line - 1]), ("b", n, lb[n.line - 1]))}
        if secret:
            text = f"equal after normalising: {safe(key)} (value withheld)"
        else:
            wrote = {col: ((la if col == "a" else lb)[ln - 1][w[0][0]:w[0][1]] if w else None)
                     for col, ln, w in (("a", g.line, found["a"]), ("b", n.line, found["b"]))}
            how = "" if not (wrote["a"] and wrote["b"]) else f"; GPU writes {wrote['a']}, NPU {wrote['b']}"
            text = (f"equal after normalising: {safe(key)} = {shown(g.value, full)} (GPU line {g.line}, NPU line "
                    f"{n.line}{how})")
        qtexts.append(text)
        for col, s in (("a", g), ("b", n)):
            data["q" + col].setdefault(str(s.line), []).append([len(qtexts) - 1] + (found[col][0] if found[col]
                                                                                   else [-1, -1]))


def _shown(f: _File) -> bool:
    """A file gets a panel when it has text and is worth reading: changed, or pointed at."""
    return (f.ta is not None or f.tb is not None) and not (f.status == "identical" and not f.findings)


LOOKS = (("lf", "finding", "a line a finding is about (its badge in the middle)"),
         ("lm", "masked port edit", "an expected GPU->NPU substitution (hover: the rule that masked it)"),
         ("lq", "equal after normalising", "written differently, the same value once normalised (hover: the value)"),
         ("lc", "changed, no finding", "a change the tool judged unable to alter numerics: look, and disagree"))


def _controls(checks: list[str], looks: dict | None) -> str:
    sev = "".join(f'<label class="{s.html_class}"><input type=checkbox data-sev={s} checked> {s}</label> '
                  for s in Severity)
    opts = "".join(f"<option value={e(c)}>{e(c)}</option>" for c in checks)
    legend = ""
    if looks is not None:
        n = {"lf": sum(looks[s.look] for s in Severity), "lm": looks["M"], "lq": looks["Q"], "lc": looks["C"]}
        legend = ("<p id=legend>" + " ".join(f'<span class="key {k}" title="{e(why)}"><i></i>{e(name)} '
                                              f'<small>{n[k]}</small></span>' for k, name, why in LOOKS) + "</p>")
    hide = "" if looks is not None else " hidden"  # a page without files (curves) has no lines to mask or walk
    return (f"<nav id=ctl>{sev}<select id=ck><option value=''>every check</option>{opts}</select> "
            f"<label{hide}><input type=checkbox id=sm checked> show masked</label> "
            f"<label title='n/p go through every change (c toggles), not only the findings'{hide}>"
            f"<input type=checkbox id=every> every change</label> "
            f"<button id=prev title='previous (p or k)'>&uarr; prev</button>"
            f"<button id=next title='next (n or j)'>&darr; next</button> <span id=pos></span></nav>{legend}")


def _verdicts(report) -> str:
    if not report.verdicts:
        return ""
    rows = "".join(f'<tr class="v-{e(v[0]).replace(" ", "-")}"><td>{e(c)}</td><td><b>{e(v[0])}</b></td>'
                   f"<td>{e(v[1])}</td></tr>"
                   for c, v in sorted(report.verdicts.items(), key=lambda kv: check_order(kv[0])))
    return f"<h2>Verdicts</h2><table class=grid id=verdicts><tr><th>check<th>verdict<th>why</tr>{rows}</table>"


def _loc(s) -> str:
    if s is None:
        return "(absent)"
    if s.path is None:
        return s.source or "-"
    return s.path + (f":{s.line}" if s.line else (f" ({s.source})" if s.source in ("default", "derived") else ""))


def _val(v: str, s) -> str:
    return "(absent)" if s is None else f"<code>{e(v)}</code> at {e(_loc(s))}"


def _findings(report, fdata, files, full: bool) -> str:
    if not report.findings:
        return "<h2>Findings</h2><p id=findings>No differences that can change numerics.</p>"
    items = []
    for k, f in enumerate(report.findings):
        sev, ck, _rule, key, gv, nv, msg, lg, ln = fdata[k]
        items.append(f'<li class="f {Severity(sev).html_class} ck-{e(ck)}" data-f={k}><a href="#f{k}" data-f={k}>'
                     f'<b class=sv>{sev}</b> <b>{e(f.rule)}</b> <code>{e(key)}</code></a> {e(msg)}'
                     f'<div class=vals>GPU {_val(gv, f.gpu)} · NPU {_val(nv, f.npu)}</div></li>')
    return f"<h2>Findings</h2><ol id=findings>{''.join(items)}</ol>"


def _origin(f, side: str, where: dict, files: list) -> str:
    """A table origin, linked to its line when the page shows that file."""
    text = e(origin(f))
    i = where.get((side, f.path)) if f is not None and f.path and f.line and f.origin == "explicit" else None
    if i is None or not _shown(files[i]):
        return text
    return f'<a href="#p{i}" data-go="{i} {"a" if side == "gpu" else "b"} {f.line}">{text}</a>'


TABLE_LOOKS = {"f": "a finding", "m": "masked port edit", "c": "differs, no finding",
               "q": "equal, written differently", "": "equal"}


def _table(report, full: bool, where: dict | None = None, files: list | None = None,
           masked_at: set | None = None) -> str:
    if not report.table:
        return ""
    where, files, masked_at = where or {}, files or [], masked_at or set()
    flagged = {f.key: f for f in report.findings}
    rows = []
    count = dict.fromkeys(TABLE_LOOKS, 0)
    for key, g, n in report.table:
        f = flagged.get(key)
        gs, ns = shown(g.value if g else None, full), shown(n.value if n else None, full)
        if f is not None:
            look = "f"
        elif any(x is not None and x.path and x.line and (side, x.path, x.line) in masked_at
                 for side, x in (("gpu", g), ("npu", n))):
            look = "m" if (g is None) != (n is None) or gs != ns else ""
        elif (g is None) != (n is None) or gs != ns:
            look = "c"
        elif g is not None and n is not None and g.line and n.line and g.source.strip() != n.source.strip() \
                and g.origin == n.origin == "explicit":
            look = "q"
        else:
            look = ""
        count[look] += 1
        cls = f"{Severity(f.severity).html_class} t-f" if f else f"t-{look or 'e'}"
        mark = f"{f.severity} {f.rule}" if f else TABLE_LOOKS[look] if look else ""
        rows.append(f"<tr class='{cls}'><td>{e(mark)}<td><code>{e(key)}</code><td>{e(gs)}"
                    f"<td>{_origin(g, 'gpu', where, files)}<td>{e(ns)}<td>{_origin(n, 'npu', where, files)}</tr>")
    differ = count["f"] + count["m"] + count["c"]
    same = count["q"] + count[""]
    summary = (f"{len(report.table)} key(s): <b>{differ} differ</b> ({count['f']} with a finding, {count['m']} "
               f"masked port edit(s), {count['c']} without a finding), {same} equal ({count['q']} written "
               f"differently on the two sides)")
    return (f"<details id=hp><summary><h2>Hyperparameters</h2> <span id=hpsum>{summary}</span></summary>"
            f"<p class=hpctl><label><input type=checkbox id=hpdiff> only the keys that differ</label> "
            f"<small>the effective value of each key on each side (a launch flag over a config over a default) "
            f"and where it was set; click an origin to see its line</small></p>"
            f"<table class=grid id=hparams><tr><th><th>key<th>GPU<th>GPU origin<th>NPU"
            f"<th>NPU origin</tr>{''.join(rows)}</table></details>")


def _curves(res) -> str:
    """The curves view's frame: the verdict and its evidence (static), the charts (drawn by
    the page's script from the cv-data block)."""
    ev = "".join(f"<li>{e(x)}</li>" for x in res.evidence)
    return (f"<h2>Training curves</h2><section id=curves><p class=verdict>verdict: <b>{e(res.verdict)}</b> "
            f"<small>{e(res.axis.reason if res.axis else '')}</small></p><ul class=evidence>{ev}</ul>"
            f"<nav id=cvctl><label>smoothing <input type=range id=cvsmooth min=0 max=0.99 step=0.01 value=0> "
            f"<output id=cvsv>0</output></label> <label><input type=checkbox id=cvlog> log axis</label> "
            f"<button id=cvfirst title='the first steps the first-step verdict judges, and the warm-up'>"
            f"first steps</button> <button id=cvall>whole run</button> "
            f"<small>drag across a chart to zoom, double-click to undo; hover for both values</small><br>"
            f"<span class=cvkey><i class=kg></i>GPU <i class=kn></i>NPU <i class=kt></i>tolerance "
            f"<i class=kf></i>first points judged <i class=kd></i>first persistent divergence &nbsp; events above "
            f"the curves: &#x2715; NaN/inf &#x25BC; skipped &#x25B2; overflow &#x25CF; spike (NPU filled, GPU "
            f"hollow)</span></nav>"
            f"<div id=charts></div></section>")


def _errors(report) -> str:
    out = ""
    if report.errors:
        out += "<h2>Input errors</h2><ul id=errors>" + "".join(
            f"<li><code>{e(x.path)}</code>: {e(x.message)}</li>" for x in report.errors) + "</ul>"
    line = report.account_line()
    return out + (f"<p class=account>{e(line)}</p>" if line else "")


def _file_list(files: list[_File]) -> str:
    rows = []
    for i, f in enumerate(files):
        name = e(f.g or "-") + (" ⇄ " + e(f.n) if f.n and f.n != f.g else "") if f.g else e(f.n or "-")
        cell = f"<a href='#p{i}'>{name}</a>" if _shown(f) else name
        rows.append(f"<tr class='st-{e(f.status).replace(' ', '-')}'><td>{cell}<td>{e(f.status)}"
                    f"<td class=num>{len(f.findings)}<td class=num>{f.masked}</tr>")
    return (f"<h2>Files</h2><table class=grid id=files><tr><th>file (GPU ⇄ NPU)<th>status<th>findings<th>masked</tr>"
            f"{''.join(rows)}</table>")


def _pygments_css(used: set[str]) -> str:
    if not used:
        return ""
    try:
        from pygments.formatters.html import HtmlFormatter
    except ImportError:
        return ""
    keep = []
    for line in HtmlFormatter(style="default").get_style_defs(".diff").splitlines():
        # not `err`: a changed block lexed on its own may end mid-construct (a trailing `\`)
        if line.startswith(".diff .") and line.split()[1][1:] in used - {"err"}:
            keep.append(line.split(" /*")[0].replace(" { ", "{").replace("; ", ";"))
    return "".join(keep)


CSS = """
:root{--hh:110px}
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1b1f24;background:#fff}
header{position:sticky;top:0;background:#f6f8fa;border-bottom:1px solid #d0d7de;padding:6px 14px;z-index:3}
h1{font-size:17px;margin:0 0 2px}summary h2{display:inline}summary{margin-top:18px;cursor:pointer}h2{font-size:15px;margin:18px 0 6px}p{margin:2px 0}
main{padding:0 30px 60vh 14px}code{font:12px ui-monospace,monospace;background:#eff1f3;padding:0 3px;border-radius:3px}
.sev-error .sv,.sum .sev-error,#ctl .sev-error{color:#b3261e}.sev-warning .sv,.sum .sev-warning,#ctl .sev-warning{color:#8a5a00}
.sev-info .sv,.sum .sev-info,#ctl .sev-info{color:#0b62a4}
#ctl{margin-top:4px}#ctl label{margin-right:8px}button,select{font:inherit;margin-left:4px}#pos{color:#57606a;font-size:13px}
#legend{font-size:12px;color:#57606a;margin-top:3px}#legend .key{margin-right:14px;white-space:nowrap;cursor:help}
#legend i{display:inline-block;width:22px;height:11px;vertical-align:-1px;margin-right:4px;border:1px solid #d0d7de}
#legend .lf i{background:#fff1bf;box-shadow:inset 3px 0 0 #cf222e}#legend .lm i{background:#f3f4f6}
#legend .lq i{background:#eaf1fb}#legend .lc i{background:linear-gradient(90deg,#ffebe9 50%,#e6ffec 50%)}
#findings li{margin:3px 0}#findings a{text-decoration:none;color:inherit}#findings .cur{background:#fff3c4}
.vals{color:#57606a;font-size:12px}
table.grid{border-collapse:collapse}table.grid td,table.grid th{border:1px solid #d0d7de;padding:2px 6px;text-align:left}
table.grid tr.sev-error td{background:#ffebe9}table.grid tr.sev-warning td{background:#fff8c5}
table.grid tr.t-m td{background:#f3f4f6;color:#57606a}table.grid tr.t-c td{background:#fff4e5}
table.grid tr.t-q td:first-child{color:#0b62a4}#hparams.only tr.t-e,#hparams.only tr.t-q{display:none}
.hpctl{margin:4px 0}.hpctl small{color:#57606a}
.v-pass td:nth-child(2){color:#1a7f37}.v-differences td:nth-child(2){color:#b3261e}
.v-not-checked td{background:#f2f2f2;color:#57606a;font-style:italic}.num{text-align:right}
.pair{margin:18px 0;border:1px solid #d0d7de;border-radius:6px}
.pair h3{font:600 13px ui-monospace,monospace;margin:0;padding:6px 8px;background:#f6f8fa;border-bottom:1px solid #d0d7de;
 position:sticky;top:var(--hh);z-index:2;border-radius:6px 6px 0 0}
.pair h3 .pb::before{content:"\\21C4  ";color:#57606a}.pair small{font-weight:400;color:#57606a}
table.diff{width:100%;border-collapse:collapse;table-layout:fixed;font:12px/1.45 ui-monospace,monospace}
col.ln{width:3.6em}col.gut{width:6.5em}
.diff td{padding:0 6px;vertical-align:top;white-space:pre-wrap;word-break:break-all;tab-size:4}
.diff td.n{color:#8c959f;text-align:right;user-select:none}
td.c.lc.a{background:#ffebe9}td.c.lc.b{background:#e6ffec}
td.c.lf{background:#fff6d6;box-shadow:inset 3px 0 0 #bf8700}td.c.lf.sev-error{box-shadow:inset 3px 0 0 #cf222e}
td.c.lf.sev-info{box-shadow:inset 3px 0 0 #0969da}
td.c.lm{background:#f3f4f6;color:#6e7781}td.c.lm span{color:inherit!important}td.c.lm>*{opacity:.8}
td.c.lq{background:#eaf1fb;color:#3d4752}
mark{color:inherit;border-radius:2px;padding:0}mark.hc{background:#ffc1bd}td.b mark.hc{background:#abf2bc}
mark.hf{background:#ffd33d;box-shadow:0 1px 0 #bf8700}td.lf.sev-error mark.hf{background:#ffb3ab;box-shadow:0 1px 0 #cf222e}
mark.hm{background:#dcdfe3;text-decoration:underline dotted #8c959f}mark.hq{background:#cfe0f7;text-decoration:underline dashed #0969da}
tr.m{opacity:.75}.nomask tr.m{display:none}.nomask tr.m+tr.ann.mo{display:none}
td.g{font-size:11px;text-align:center;white-space:normal}
.bd{display:inline-block;border-radius:3px;padding:0 3px;color:#fff;margin:1px;cursor:pointer}
.bd.sev-error{background:#cf222e}.bd.sev-warning{background:#bf8700}.bd.sev-info{background:#0969da}
.nq{color:#0969da;cursor:help;font-size:13px}.nm{color:#8c959f;cursor:help}
tr.ann td{white-space:normal;background:#fffbe6;font:12px system-ui,sans-serif;padding:3px 8px;border-top:1px solid #eee;border-bottom:1px solid #eee}
tr.cur td,tr.ann.cur td,div.ff .cur,h3.cur{outline:2px solid #bf8700;outline-offset:-2px}
tr.flash td{animation:flash 1.6s}@keyframes flash{from{background:#ffe08a}}
tr.fold td{background:#f6f8fa;color:#57606a;cursor:pointer;text-align:center;font-style:italic}
div.ff div{background:#fffbe6;padding:3px 8px;font-size:12px}
#map{position:fixed;right:2px;top:var(--hh);bottom:2px;width:14px;background:#f6f8fa;border:1px solid #d0d7de;
 border-radius:3px;z-index:3;cursor:pointer}
#map i{position:absolute;left:1px;right:1px;min-height:2px;display:block}#map .kE{background:#cf222e}
#map .kW{background:#bf8700}#map .kI{background:#0969da}#map .kC{background:#e16f24;left:4px;right:4px}
#map .kQ{background:#79a6e0;left:4px;right:4px}#map .kM{background:#afb8c1;left:5px;right:5px}
#map .vp{position:absolute;left:-1px;right:-1px;border:1px solid #57606a;background:rgba(87,96,106,.12);pointer-events:none}
.nomask #map .kM{display:none}
"""


CURVES_CSS = """
#curves .verdict{font-size:15px}#curves .evidence{margin:4px 0 8px;color:#3d4752;font-size:13px}
#cvctl{position:sticky;top:var(--hh);background:#fff;padding:4px 0;z-index:1;border-bottom:1px solid #eee}
#cvctl input[type=range]{vertical-align:middle;width:160px}#cvctl small{color:#57606a}
.cvkey{font-size:12px;color:#3d4752}.cvkey i{display:inline-block;width:18px;height:0;vertical-align:middle;margin:0 4px 0 8px}
.cvkey .kg{border-top:2px solid #1f77b4}.cvkey .kn{border-top:2px solid #d62728}.cvkey .kt{border-top:2px dashed #ff7f0e}
.cvkey .kf{height:10px;background:#f2c14e;opacity:.45}.cvkey .kd{border-top:2px dashed #d62728}
.chartwrap{margin:10px 0}svg.chart{display:block;font:11px system-ui,sans-serif;user-select:none}
svg .pane{fill:#fff;stroke:#d0d7de}svg .grid{stroke:#eef0f2}svg .tk{fill:#57606a;font-size:10px}svg .ek{font-size:9px}
svg .ct{font-size:12px;fill:#1b1f24}svg .ct.prim{font-weight:600}svg .cn{fill:#57606a;font-size:10px}
svg .firstn{fill:#f2c14e;opacity:.22}svg .line{fill:none;stroke-width:1.3}svg .raw{fill:none;stroke-width:1;opacity:.22}
svg .err{fill:none;stroke:#57606a;stroke-width:1}svg .tol{stroke:#ff7f0e;stroke-dasharray:5 3}
svg .div{stroke:#d62728;stroke-dasharray:5 3}svg .dl{fill:#d62728;font-size:11px}
svg .over{fill:transparent;cursor:crosshair}svg .cursor line{stroke:#8c959f}svg .tip{font-size:11px;fill:#1b1f24}
svg .tipbox{fill:#fff;stroke:#d0d7de;opacity:.95}svg .sel{fill:#0969da;opacity:.12}
"""

_JS = r"""
(function(){'use strict';
var D=JSON.parse(document.getElementById('sd-data').textContent),F=D.f,done={},body=document.body;
var CTX=3,SEVS=%SEVS%,CELL={%CELLS%,M:'lm',Q:'lq',C:'lc'};
var LOOKNAME={%LOOKNAMES%,M:'masked port edit',Q:'equal after normalising',C:'changed, no finding'};
var head=document.querySelector('header'),map=document.getElementById('map'),every=document.getElementById('every');
function esc(s){return String(s).replace(/[&<>"]/g,function(c){return{'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c];});}
function text(l){if(typeof l==='string')return l;var t='';for(var k=1;k<l.length;k+=2)t+=l[k];return t;}
function code(l){if(typeof l==='string')return esc(l);var h='';for(var k=0;k<l.length;k+=2)
 h+=l[k]?'<span class="'+l[k]+'">'+esc(l[k+1])+'</span>':esc(l[k+1]);return h;}
// a line with its highlighted spans: cls[i] is the class of character i ('' none, c changed, f a finding's value,
// m a masked substitution's part, q a value equal after normalising); the syntax colours stay inside
function paint(l,cls,tips){if(!cls)return code(l);var segs=typeof l==='string'?['',l]:l,h='',open='',pos=0;
 for(var k=0;k<segs.length;k+=2){var sc=segs[k],tx=segs[k+1],a=0;while(a<tx.length){var cc=cls[pos+a]||'',b=a+1;
  while(b<tx.length&&(cls[pos+b]||'')===cc)b++;
  if(cc!==open){if(open)h+='</mark>';if(cc)h+='<mark class="h'+cc+'"'+(tips[cc]?' title="'+esc(tips[cc])+'"':'')+'>';open=cc;}
  var p=esc(tx.slice(a,b));h+=sc?'<span class="'+sc+'">'+p+'</span>':p;a=b;}pos+=tx.length;}
 if(open)h+='</mark>';return h;}
// which characters of two aligned lines differ: common prefix and suffix of their tokens, the middle by LCS
function toks(s){return s.match(/[0-9][0-9.]*(?:[eE][-+]?[0-9]+)?\w*|\w+|\s+|[^\w\s]/g)||[];}
function ichg(a,b){if(a===b||a.length>2000||b.length>2000)return null;var A=toks(a),B=toks(b),p=0,q=0,i,j;
 while(p<A.length&&p<B.length&&A[p]===B[p])p++;while(q<A.length-p&&q<B.length-p&&A[A.length-1-q]===B[B.length-1-q])q++;
 var ma=A.slice(p,A.length-q),mb=B.slice(p,B.length-q),ca=ma.map(function(){return 0;}),cb=mb.map(function(){return 0;});
 if(ma.length&&mb.length&&ma.length*mb.length<=40000){var w=mb.length+1,T=new Uint16Array((ma.length+1)*w);
  for(i=ma.length-1;i>=0;i--)for(j=mb.length-1;j>=0;j--)T[i*w+j]=ma[i]===mb[j]?T[(i+1)*w+j+1]+1:Math.max(T[(i+1)*w+j],T[i*w+j+1]);
  for(i=0,j=0;i<ma.length&&j<mb.length;){if(ma[i]===mb[j]){ca[i]=cb[j]=1;i++;j++;}else if(T[(i+1)*w+j]>=T[i*w+j+1])i++;else j++;}}
 function spans(all,mid,c){var out=[],pos=0,k;for(k=0;k<p;k++)pos+=all[k].length;
  for(k=0;k<mid.length;k++){var e=pos+mid[k].length;if(!c[k]){if(out.length&&out[out.length-1][1]===pos)out[out.length-1][1]=e;
   else out.push([pos,e]);}pos=e;}return out;}
 var sa=spans(A,ma,ca),sb=spans(B,mb,cb),same=0;ca.forEach(function(x,k){if(x)same+=ma[k].length;});
 A.slice(0,p).concat(A.slice(A.length-q)).forEach(function(t){same+=t.length;});
 if(same<0.35*Math.max(a.length,b.length))return null;  // two different lines: no span says more than the cell
 return [sa,sb];}
function classes(t,ch,masked,fs,qs){if(t===null||t.length>2000)return null;var c=[],any=false,k;
 if(ch)ch.forEach(function(s){for(k=s[0];k<s[1];k++)c[k]=masked?'m':'c';any=true;});
 if(qs)qs.forEach(function(s){if(s[1]>=0)for(k=s[1];k<s[2];k++)if(c[k]==='c')c[k]='q';});
 if(fs)fs.forEach(function(s){for(k=s[0];k<s[1];k++)c[k]='f';any=true;});
 return any?c:null;}
function ann(k,tag){var f=F[k];return '<'+tag+' class="ann f sev-'+f[0]+' ck-'+esc(f[1])+'" data-f="'+k+'">'+
 (tag==='tr'?'<td colspan=5>':'')+'<b class=sv>'+f[0]+'</b> <b>'+f[2]+'</b> <code>'+esc(f[3])+'</code> GPU <code>'+
 esc(f[4])+'</code> NPU <code>'+esc(f[5])+'</code> &mdash; '+esc(f[6])+(tag==='tr'?'</td>':'')+'</'+tag+'>';}
function ftip(k){var f=F[k];return f[0]+' '+f[2]+' '+f[3]+': GPU '+f[4]+', NPU '+f[5];}
function badges(ks){return ks.map(function(k){var f=F[k];return '<span class="bd f sev-'+f[0]+' ck-'+esc(f[1])+
 '" data-f="'+k+'" title="'+esc(ftip(k))+'">'+f[0][0].toUpperCase()+' '+f[2]+'</span>';}).join('');}
function rows(d){var r=[],b=0;d.o.forEach(function(o){var t=o[0][0],n=Math.max(o[2]-o[1],o[4]-o[3]);
 for(var k=0;k<n;k++){var ia=o[1]+k<o[2]?o[1]+k:-1,ib=o[3]+k<o[4]?o[3]+k:-1,lb=null;
  if(ib>=0)lb=t==='e'?d.a[ia]:d.b[b++];r.push([t==='r'?(ia<0?'i':ib<0?'d':'r'):t,ia,ib,lb]);}});return r;}
function qtip(qs){return qs?qs.map(function(q){return D.q[q[0]];}).join('\n'):'';}
function row(d,n){var x=d.rs[n],ia=x[1],ib=x[2],lk=d.look[n]||[n,'',''],la=lk[1],lb=lk[2],
 fa=ia>=0&&d.fa[ia+1]||[],fb=ib>=0&&d.fb[ib+1]||[],ks=fa.concat(fb.filter(function(k){return fa.indexOf(k)<0;})),
 ma=ia>=0?d.ma[ia+1]:undefined,mb=ib>=0?d.mb[ib+1]:undefined,qa=ia>=0?d.qa[ia+1]:null,qb=ib>=0?d.qb[ib+1]:null,
 ta=ia>=0?text(d.a[ia]):null,tb=ib>=0?text(x[3]):null,ch=(ta!==null&&tb!==null&&x[0]!=='e')?ichg(ta,tb):null;
 var tips={a:{f:fa.length?ftip(fa[0]):'',m:ma!==undefined?D.m[ma]:'',q:qtip(qa)},b:{f:fb.length?ftip(fb[0]):'',
  m:mb!==undefined?D.m[mb]:'',q:qtip(qb)}};
 var cls=x[0]+(ks.length?' hit':''),onlym=(la==='M'||la==='')&&(lb==='M'||lb==='')&&(la||lb);if(onlym)cls+=' m';
 function cell(side,i,t,l,look,chs,masked,fs,qs,tp){var title=look==='M'?tp.m:look==='Q'?tp.q:(look&&'%FINDING_LOOKS%'.indexOf(look)>=0)?tp.f:'';
  return '<td class=n>'+(i>=0?i+1:'')+'</td><td class="c '+side+(look?' '+CELL[look]:'')+'"'+(title?' title="'+esc(title)+'"':'')+
   '>'+(i>=0?paint(l,classes(t,chs,masked,fs,qs),tp):'')+'</td>';}
 var g=badges(ks);if(la==='Q'||lb==='Q')g+='<span class=nq title="'+esc(qtip(qa)||qtip(qb))+'">&asymp;</span>';
 if(!ks.length&&(ma!==undefined||mb!==undefined))g+='<span class=nm title="'+esc(D.m[ma!==undefined?ma:mb])+'">'+
  esc(D.m[ma!==undefined?ma:mb].split(' ')[2])+'</span>';
 var h='<tr class="'+cls+'" data-r="'+n+'">'+cell('a',ia,ta,d.a[ia],la,ch&&ch[0],ma!==undefined,ia>=0&&d.sa[ia+1],qa,tips.a)+
  '<td class=g>'+g+'</td>'+cell('b',ib,tb,x[3],lb,ch&&ch[1],mb!==undefined,ib>=0&&d.sb[ib+1],qb,tips.b)+'</tr>';
 ks.forEach(function(k){if(!d.shown[k]){d.shown[k]=1;h+=ann(k,'tr');}});return h;}
function render(i){if(done[i])return done[i];var el=document.getElementById('d'+i);if(!el)return null;
 var d=JSON.parse(el.textContent),sec=document.getElementById('p'+i),rs=rows(d),keep=[],h='',k,j;d.shown={};d.rs=rs;d.look={};
 d.r.forEach(function(x){d.look[x[0]]=x;for(k=Math.max(0,x[0]-CTX);k<=Math.min(rs.length-1,x[0]+CTX);k++)keep[k]=1;});
 for(k=0;k<rs.length;){if(keep[k]){h+=row(d,k);k++;continue;}for(j=k;j<rs.length&&!keep[j];j++);
  h+='<tr class=fold data-s="'+k+'" data-e="'+j+'"><td colspan=5>&#8943; '+(j-k)+' unchanged line(s)</td></tr>';k=j;}
 sec.querySelector('tbody').innerHTML=h;sec.querySelector('.ff').innerHTML=d.ff.map(function(k){return ann(k,'div');}).join('');
 sec.style.minHeight='';d.sec=sec;done[i]=d;sec.dataset.done=1;redraw();return d;}
function unfold(tr){var d=done[tr.closest('.pair').dataset.i],h='';
 for(var k=+tr.dataset.s;k<+tr.dataset.e;k++)h+=row(d,k);tr.insertAdjacentHTML('afterend',h);tr.remove();redraw();}
function rowEl(d,r){var tr=d.sec.querySelector('tr[data-r="'+r+'"]');if(tr)return tr;
 var fo=[].filter.call(d.sec.querySelectorAll('tr.fold'),function(x){return +x.dataset.s<=r&&r<+x.dataset.e;})[0];
 if(fo){unfold(fo);return d.sec.querySelector('tr[data-r="'+r+'"]');}return null;}
var io='IntersectionObserver' in window?new IntersectionObserver(function(es){es.forEach(function(x){
 if(x.isIntersecting){render(x.target.dataset.i);io.unobserve(x.target);}});},{rootMargin:'800px'}):null;
// the panels on the first screen are laid out now (no empty frame at first paint), the others as they come near
document.querySelectorAll('section.pair').forEach(function(s){if(io&&s.getBoundingClientRect().top>innerHeight)io.observe(s);
 else render(s.dataset.i);});
// ---- navigation, in page order: over findings (a row with one, a file's header, the list for the others) or
// over every change (each run of rows with a look); n/p wrap around
var ck=document.getElementById('ck'),pos=-1,posEl=document.getElementById('pos');
function visible(k){var f=F[k];return !body.classList.contains('hide-'+f[0])&&(!ck.value||ck.value===f[1]);}
function stops(){return every.checked?D.sc.filter(function(s){return !(s[2]==='M'&&body.classList.contains('nomask'));}):
 D.sf.filter(function(s){return s[2].some(visible);});}
function clearCur(){document.querySelectorAll('.cur').forEach(function(x){x.classList.remove('cur');});}
function goStop(list,at,note){var s=list[at],el=null,ks=every.checked?[]:s[2].filter(visible);clearCur();pos=at;
 if(s[0]<0)el=document.querySelector('#findings li[data-f="'+ks[0]+'"]');
 else{var d=render(s[0]);el=s[1]<0?d.sec.querySelector('h3'):rowEl(d,s[1]);
  if(s[1]<0){var a=d.sec.querySelector('.ff [data-f="'+ks[0]+'"]');if(a)a.classList.add('cur');}}
 ks.forEach(function(k){var li=document.querySelector('#findings li[data-f="'+k+'"]');if(li)li.classList.add('cur');});
 if(el){el.classList.add('cur');el.scrollIntoView({block:'center'});}
 var what=every.checked?'change '+(at+1)+' of '+list.length+' ('+LOOKNAME[s[2]]+')':
  'finding '+(at+1)+' of '+list.length+': '+ks.map(function(k){return F[k][0][0].toUpperCase()+' '+F[k][2]+' '+F[k][3];}).join(', ');
 posEl.textContent=what+(note?' \u00b7 '+note:'');body.dataset.cur=at;body.dataset.curStop=JSON.stringify(s.slice(0,3));}
function step(dir){var list=stops();if(!list.length){posEl.textContent=every.checked?'no changes':'no findings';return;}
 var at=pos+dir,note='';if(at>=list.length){at=0;note='wrapped to the first';}else if(at<0){at=list.length-1;
  note=pos<0?'':'wrapped to the last';}goStop(list,at,note);}
function go(k){every.checked=false;var list=stops(),at=-1;list.some(function(s,i){if(s[2].indexOf(k)>=0){at=i;return true;}});
 if(at>=0)return goStop(list,at,'');clearCur();var li=document.querySelector('#findings li[data-f="'+k+'"]');
 if(li){li.classList.add('cur');li.scrollIntoView({block:'center'});}}
function goLine(i,col,line){var d=render(i);if(!d)return;var n=-1;d.rs.some(function(x,k){if((col==='a'?x[1]:x[2])===line-1){n=k;return true;}});
 var tr=n>=0?rowEl(d,n):null;if(!tr)return;tr.scrollIntoView({block:'center'});tr.classList.remove('flash');
 void tr.offsetWidth;tr.classList.add('flash');body.dataset.went=i+' '+col+' '+line;}
var st=document.createElement('style');document.head.appendChild(st);
function refilter(){pos=-1;posEl.textContent='';redraw();}
ck.onchange=function(){st.textContent=ck.value?'.f:not(.ck-'+ck.value+'){display:none}':'';refilter();};
document.querySelectorAll('#ctl [data-sev]').forEach(function(c){c.onchange=function(){
 body.classList.toggle('hide-'+c.dataset.sev,!c.checked);refilter();};});
var css=document.createElement('style');
css.textContent=SEVS.map(function(s){return '.hide-'+s+' .f.sev-'+s;}).join(',')+'{display:none}';document.head.appendChild(css);
document.getElementById('sm').onchange=function(){body.classList.toggle('nomask',!this.checked);refilter();};
every.onchange=refilter;
document.getElementById('next').onclick=function(){step(1);};document.getElementById('prev').onclick=function(){step(-1);};
document.addEventListener('keydown',function(ev){if(/INPUT|SELECT|TEXTAREA/.test(ev.target.tagName)&&ev.target.type!=='checkbox'||
 ev.ctrlKey||ev.metaKey||ev.altKey)return;
 if(ev.key==='n'||ev.key==='j'){step(1);ev.preventDefault();}else if(ev.key==='p'||ev.key==='k'){step(-1);ev.preventDefault();}
 else if(ev.key==='c'){every.checked=!every.checked;refilter();ev.preventDefault();}});
document.addEventListener('click',function(ev){var t=ev.target.closest('[data-f]'),fo=ev.target.closest('tr.fold'),
 g=ev.target.closest('[data-go]');if(fo){unfold(fo);return;}
 if(g){ev.preventDefault();var p=g.dataset.go.split(' ');goLine(+p[0],p[1],+p[2]);return;}
 if(t&&(t.tagName==='A'||t.classList.contains('bd'))){ev.preventDefault();go(+t.dataset.f);}});
var hd=document.getElementById('hpdiff');if(hd)hd.onchange=function(){document.getElementById('hparams').classList.toggle('only',hd.checked);};
// ---- the change map beside the scrollbar: every change run where it is on the page, the viewport as a box
var pending=false;
function redraw(){if(!map||pending)return;pending=true;requestAnimationFrame(function(){pending=false;drawMap();});}
function docTop(el){return el.getBoundingClientRect().top+window.scrollY;}
function drawMap(){var H=Math.max(document.documentElement.scrollHeight,1),mh=map.clientHeight,h='';
 D.sc.forEach(function(s){var sec=document.getElementById('p'+s[0]);if(!sec)return;var top,bot,d=done[s[0]],tr;
  var t0=docTop(sec)+30,span=Math.max(sec.offsetHeight-30,1);top=t0+s[3]*span;bot=t0+s[4]*span;
  if(d&&(tr=d.sec.querySelector('tr[data-r="'+s[1]+'"]'))){var y=docTop(tr);bot=y+(bot-top);top=y;}
  h+='<i class="k'+s[2]+'" data-y="'+Math.round(top)+'" title="'+esc(LOOKNAME[s[2]])+'" style="top:'+(top/H*mh).toFixed(1)+
   'px;height:'+Math.max(2,(bot-top)/H*mh).toFixed(1)+'px"></i>';});
 map.innerHTML='<div class=vp></div>'+h;map.dataset.ticks=D.sc.length;vp();}
function vp(){if(!map)return;var H=Math.max(document.documentElement.scrollHeight,1),mh=map.clientHeight,b=map.firstChild;
 b.style.top=(window.scrollY/H*mh).toFixed(1)+'px';b.style.height=Math.max(4,innerHeight/H*mh).toFixed(1)+'px';}
if(map){map.addEventListener('click',function(ev){var t=ev.target.closest('i[data-y]'),y;
 if(t)y=+t.dataset.y-innerHeight/3;else y=(ev.clientY-map.getBoundingClientRect().top)/map.clientHeight*
  document.documentElement.scrollHeight-innerHeight/2;window.scrollTo(0,Math.max(0,y));});
 window.addEventListener('scroll',vp,{passive:true});}
function sizes(){document.documentElement.style.setProperty('--hh',head.offsetHeight+'px');redraw();}
window.addEventListener('resize',sizes);sizes();
var m=/^#f(\d+)$/.exec(location.hash);if(m)go(+m[1]);
// ---- ?selftest=1: what the page shows, read back by the browser tests (tests/test_html_browser.py)
function onScreen(el){if(!el)return false;var r=el.getBoundingClientRect();return r.top>=head.offsetHeight-1&&r.bottom<=innerHeight+1;}
function selftest(){var out={findings:document.querySelectorAll('#findings li').length,nav:[],every:[],looks:{},marks:{}};
 document.querySelectorAll('section.pair').forEach(function(s){render(s.dataset.i);});
 ['lf','lm','lq','lc'].forEach(function(c){out.looks[c]=document.querySelectorAll('td.c.'+c).length;});
 ['hf','hm','hq','hc'].forEach(function(c){out.marks[c]=[].slice.call(document.querySelectorAll('mark.'+c),0,40).map(
  function(x){return x.textContent;});});
 var q=document.querySelector('td.c.lq');out.q_title=q?q.title:null;
 var mr=document.querySelector('tr.m');out.masked=document.querySelectorAll('tr.m').length;
 if(mr){out.masked_opacity=getComputedStyle(mr).opacity;out.masked_title=mr.querySelector('td.lm').title;}
 var h3=document.querySelector('.pair h3');out.sticky=h3?getComputedStyle(h3).position:null;
 function key(k,into){document.dispatchEvent(new KeyboardEvent('keydown',{key:k,bubbles:true}));
  var c=document.querySelector('.pair .cur')||document.querySelector('#findings .cur');
  into.push({key:k,stop:JSON.parse(body.dataset.curStop||'null'),pos:posEl.textContent,on_screen:onScreen(c)});}
 var i,n=stops().length;for(i=0;i<=n;i++)key('n',out.nav);key('p',out.nav);key('p',out.nav);
 key('c',[]);pos=-1;n=stops().length;for(i=0;i<=n;i++)key('n',out.every);key('c',[]);pos=-1;
 if(map){drawMap();out.map={ticks:map.querySelectorAll('i').length,kinds:{}};[].forEach.call(map.querySelectorAll('i'),
  function(t){out.map.kinds[t.className]=(out.map.kinds[t.className]||0)+1;});
  var last=map.querySelectorAll('i');last=last[last.length-1];window.scrollTo(0,0);
  if(last){last.dispatchEvent(new MouseEvent('click',{bubbles:true}));var s=D.sc[D.sc.length-1];
   out.map.click={scrolled:window.scrollY>0,on_screen:onScreen(done[s[0]]&&done[s[0]].sec.querySelector('tr[data-r="'+s[1]+'"]'))};}}
 var o=document.querySelector('#hparams a[data-go]');if(o){document.getElementById('hp').open=true;o.click();
  var p=o.dataset.go.split(' ');out.origin={go:o.dataset.go,went:body.dataset.went,
   on_screen:onScreen(document.querySelector('tr.flash'))};}
 document.getElementById('sm').click();out.masked_hidden=mr?getComputedStyle(mr).display==='none':null;
 document.getElementById('sm').click();
 var info=document.querySelector('[data-sev=info]');info.click();out.info_hidden_items=
  [].filter.call(document.querySelectorAll('#findings li.sev-info'),function(x){return getComputedStyle(x).display==='none';}).length;
 info.click();ck.value='environment';ck.onchange();out.check_filter_visible=[].filter.call(
  document.querySelectorAll('#findings li'),function(x){return getComputedStyle(x).display!=='none';}).length;key('n',out.nav);
 ck.value='';ck.onchange();if(window.SD.curvesTest)out.curves=window.SD.curvesTest();
 out.title=document.title;out.pwned=window.__pwned||null;
 var p=document.createElement('pre');p.id='selftest';p.textContent=JSON.stringify(out);body.appendChild(p);}
window.SD={render:render,step:step,go:go,goLine:goLine,stops:stops,drawMap:drawMap,F:F,D:D,done:done,selftest:selftest};
var TEST=/[?&]selftest=1/.test(location.search);
if(TEST&&!document.getElementById('cv-data'))selftest();
body.dataset.scriptDoneMs=performance.now().toFixed(1);
requestAnimationFrame(function(){setTimeout(function(){var p=performance.getEntriesByName('first-contentful-paint')[0];
 body.dataset.firstPaintMs=(p?p.startTime:performance.now()).toFixed(1);},0);});
})();
"""

# the script's severities, as model.Severity spells them
JS = (_JS.replace("%SEVS%", "[" + ",".join(f"'{s}'" for s in Severity) + "]")
      .replace("%CELLS%", ",".join(f"{s.look}:'lf {s.html_class}'" for s in Severity))
      .replace("%LOOKNAMES%", ",".join(f"{s.look}:'finding'" for s in Severity))
      .replace("%FINDING_LOOKS%", "".join(s.look for s in Severity)))

CURVES_JS = r"""
(function(){'use strict';
// the curves view: one chart per compared series, drawn here as inline SVG (no plotting library): GPU and NPU
// overlaid, the relative error beneath with the tolerance, the first points the first-step verdict judges shaded,
// the divergence and the verdict marked, NaN/inf, skipped, overflow and spike steps above the curves. Hover: the
// step and both values; drag: zoom on a range (every chart); smoothing: an exponential moving average (TensorBoard's,
// debiased); a log axis.
var C=JSON.parse(document.getElementById('cv-data').textContent),box=document.getElementById('charts');
var NS='http://www.w3.org/2000/svg',GPU='#1f77b4',NPU='#d62728',L=64,R=14,TOP=30,PH=190,GAP=22,EH=64,BOT=24;
var EV={'nan/inf':['NaN/inf','x'],'skipped':['skipped','v'],'overflow':['overflow','^'],'spikes':['spike','o']};
var smoothEl=document.getElementById('cvsmooth'),logEl=document.getElementById('cvlog'),view={lo:null,hi:null},charts=[];
var prim=C.series.filter(function(s){return s.primary;})[0]||C.series[0];
logEl.checked=!!(prim&&prim.log);
function el(tag,at,parent){var e=document.createElementNS(NS,tag);for(var k in at)e.setAttribute(k,at[k]);if(parent)parent.appendChild(e);return e;}
function txt(parent,x,y,s,at){var t=el('text',Object.assign({x:x,y:y},at||{}),parent);t.textContent=s;return t;}
function fmt(v){if(v===null||v===undefined)return 'NaN/inf';var a=Math.abs(v);
 return (a!==0&&(a<1e-3||a>=1e6))?v.toExponential(4):String(Number(v.toPrecision(6)));}
function tfmt(v){var a=Math.abs(v);return (a!==0&&(a<1e-3||a>=1e6))?Number(v.toPrecision(4)).toExponential():String(Number(v.toPrecision(6)));}
function ema(v,w){if(!w)return v;var out=[],last=0,n=0;for(var i=0;i<v.length;i++){if(v[i]===null){out.push(null);continue;}
 last=last*w+(1-w)*v[i];n++;out.push(last/(1-Math.pow(w,n)));}return out;}
function lower(xs,x){var a=0,b=xs.length;while(a<b){var m=(a+b)>>1;if(xs[m]<x)a=m+1;else b=m;}return a;}
function ticks(lo,hi,n,log){var out=[],k;if(log){var a=Math.floor(Math.log10(lo)),b=Math.ceil(Math.log10(hi));
  for(k=a;k<=b;k++)[1,2,5].forEach(function(m){var v=m*Math.pow(10,k);if(v>=lo&&v<=hi)out.push(v);});
  if(out.length>8)out=out.filter(function(v){return Math.abs(Math.log10(v)%1)<1e-9;});if(out.length>=2)return out;}
 var span=hi-lo||Math.abs(hi)||1,step=Math.pow(10,Math.floor(Math.log10(span/n))),e=span/n/step;
 step*=e>5?10:e>2?5:e>1?2:1;for(k=Math.ceil(lo/step)*step;k<=hi+1e-12*span;k+=step)out.push(Number(k.toPrecision(12)));return out;}
function range(vals,log){var lo=Infinity,hi=-Infinity;vals.forEach(function(a){a.forEach(function(v){
 if(v===null||(log&&v<=0))return;if(v<lo)lo=v;if(v>hi)hi=v;});});if(lo===Infinity)return [0,1];
 if(lo===hi){var d=Math.abs(lo)*0.05||1;return log?[lo/1.2,hi*1.2]:[lo-d,hi+d];}
 if(log)return [lo/Math.pow(hi/lo,0.04),hi*Math.pow(hi/lo,0.04)];var m=(hi-lo)*0.05;return [lo-m,hi+m];}
function path(xs,ys,sx,sy){var d='',pen=false;for(var i=0;i<xs.length;i++){var y=ys[i];if(y===null||!isFinite(sy(y))){pen=false;continue;}
 d+=(pen?'L':'M')+sx(xs[i]).toFixed(1)+' '+sy(y).toFixed(1);pen=true;}return d;}
function marker(g,kind,x,y,side){var c=side==='npu'?NPU:GPU,f=side==='npu'?c:'none',s=4,m=EV[kind][1];
 if(m==='x')return el('path',{d:'M'+(x-s)+' '+(y-s)+'L'+(x+s)+' '+(y+s)+'M'+(x-s)+' '+(y+s)+'L'+(x+s)+' '+(y-s),stroke:c,'stroke-width':1.6,'class':'ev ev-'+kind+' '+side},g);
 if(m==='o')return el('circle',{cx:x,cy:y,r:s-0.5,fill:f,stroke:c,'class':'ev ev-'+kind+' '+side},g);
 var d=m==='v'?'M'+(x-s)+' '+(y-s)+'L'+(x+s)+' '+(y-s)+'L'+x+' '+(y+s)+'Z':'M'+(x-s)+' '+(y+s)+'L'+(x+s)+' '+(y+s)+'L'+x+' '+(y-s)+'Z';
 return el('path',{d:d,fill:f,stroke:c,'class':'ev ev-'+kind+' '+side},g);}
function draw(ch){var s=ch.s,wrap=ch.wrap,W=Math.max(560,box.clientWidth||900),PW=W-L-R;ch.dirty=false;
 var kinds=Object.keys(EV).filter(function(k){return (s.events.gpu[k]||[]).length||(s.events.npu[k]||[]).length;});
 var top=TOP+12*kinds.length,H=top+PH+GAP+EH+BOT,x0=s.x[0],x1=s.x[s.x.length-1];
 var lo=view.lo===null?x0:Math.max(x0,view.lo),hi=view.hi===null?x1:Math.min(x1,view.hi);if(hi<=lo)hi=lo+1;
 var a=Math.max(0,lower(s.x,lo)-1),b=Math.min(s.x.length,lower(s.x,hi)+1),xs=s.x.slice(a,b),w=+smoothEl.value;
 var g=ema(s.g,w).slice(a,b),n=ema(s.n,w).slice(a,b),rg=s.g.slice(a,b),rn=s.n.slice(a,b),r=s.r.slice(a,b);
 var log=logEl.checked&&s.log,yr=range(w?[g,n,rg,rn]:[g,n],log),ly=log?Math.log10:function(v){return v;};
 var sx=function(x){return L+(x-lo)/(hi-lo)*PW;},sy=function(v){return top+PH-(ly(v)-ly(yr[0]))/(ly(yr[1])-ly(yr[0]))*PH;};
 var rmax=0;r.forEach(function(v){if(v!==null&&v>rmax)rmax=v;});rmax=Math.max(rmax*1.08,C.rtol*2);
 var ey=function(v){return top+PH+GAP+EH-v/rmax*EH;};
 wrap.textContent='';var svg=el('svg',{width:W,height:H,viewBox:'0 0 '+W+' '+H,'class':'chart','data-series':s.name},wrap);
 var defs=el('defs',{},svg),cp=el('clipPath',{id:'cp'+ch.i},defs);el('rect',{x:L,y:top-2,width:PW,height:PH+GAP+EH+4},cp);
 var title=s.name+': mean relative error '+(100*s.mre).toFixed(2)+'% (first '+C.first+': '+(100*s.mre_first).toFixed(2)+'%)';
 if(s.primary)title='verdict: '+C.verdict+' | '+title;txt(svg,L,14,title,{'class':'ct'+(s.primary?' prim':'')});
 if(s.shown<s.points)txt(svg,W-R,14,s.shown+' of '+s.points+' points drawn (every extreme kept)',{'class':'cn','text-anchor':'end'});
 el('rect',{x:L,y:top,width:PW,height:PH,'class':'pane'},svg);el('rect',{x:L,y:top+PH+GAP,width:PW,height:EH,'class':'pane'},svg);
 var fx=Math.min(sx(s.first),L+PW);if(s.first>=lo)el('rect',{x:Math.max(L,sx(x0)),y:top,width:Math.max(1,fx-Math.max(L,sx(x0))),
  height:PH+GAP+EH,'class':'firstn'},svg);
 ticks(yr[0],yr[1],5,log).forEach(function(v){var y=sy(v);el('line',{x1:L,x2:L+PW,y1:y,y2:y,'class':'grid'},svg);
  txt(svg,L-5,y+4,tfmt(v),{'class':'tk','text-anchor':'end'});});
 ticks(0,rmax,3,false).forEach(function(v){var y=ey(v);el('line',{x1:L,x2:L+PW,y1:y,y2:y,'class':'grid'},svg);
  txt(svg,L-5,y+4,(100*v).toFixed(v*100<1?2:1)+'%',{'class':'tk','text-anchor':'end'});});
 txt(svg,12,top+PH+GAP+EH/2,'rel. err',{'class':'tk','text-anchor':'middle','transform':'rotate(-90 12 '+(top+PH+GAP+EH/2)+')'});
 ticks(lo,hi,8,false).forEach(function(v){var x=sx(v);el('line',{x1:x,x2:x,y1:top,y2:top+PH+GAP+EH,'class':'grid'},svg);
  txt(svg,x,H-8,tfmt(v),{'class':'tk xt','text-anchor':'middle'});});
 txt(svg,L+PW,H-8,'',{});
 var clip=el('g',{'clip-path':'url(#cp'+ch.i+')'},svg);
 if(w){el('path',{d:path(xs,rg,sx,sy),'class':'raw',stroke:GPU},clip);el('path',{d:path(xs,rn,sx,sy),'class':'raw',stroke:NPU},clip);}
 el('path',{d:path(xs,g,sx,sy),'class':'line gpu',stroke:GPU},clip);el('path',{d:path(xs,n,sx,sy),'class':'line npu',stroke:NPU},clip);
 el('line',{x1:L,x2:L+PW,y1:ey(C.rtol),y2:ey(C.rtol),'class':'tol'},svg);
 el('path',{d:path(xs,r,sx,ey),'class':'err'},clip);
 if(s.div!==null&&s.div>=lo&&s.div<=hi){var dx=sx(s.div);el('line',{x1:dx,x2:dx,y1:top,y2:top+PH+GAP+EH,'class':'div'},svg);
  var di=Math.min(lower(xs,s.div),xs.length-1),dv=g[di]!==null?g[di]:n[di],low=dv===null||sy(dv)>top+PH/2;
  txt(svg,dx+4,low?top+14:top+PH-6,'diverges at '+C.unit+' '+fmt(s.div),{'class':'dl'});}  // where the curves are not
 kinds.forEach(function(k,row){var y=TOP+4+12*row;txt(svg,L+PW+2,y+3,'',{});txt(svg,L-5,y+4,EV[k][0],{'class':'tk ek','text-anchor':'end'});
  ['gpu','npu'].forEach(function(side){(s.events[side][k]||[]).forEach(function(x){if(x>=lo&&x<=hi)marker(svg,k,sx(x),y,side);});});});
 var cur=el('g',{'class':'cursor',visibility:'hidden'},svg),cl=el('line',{y1:top,y2:top+PH+GAP+EH},cur),
  tb=el('rect',{'class':'tipbox',rx:3},cur),tt=txt(cur,0,0,'',{'class':'tip'}),dg=el('circle',{r:3,fill:GPU},cur),dn=el('circle',{r:3,fill:NPU},cur),
  sel=el('rect',{'class':'sel',y:top,height:PH+GAP+EH,visibility:'hidden'},svg),
  ov=el('rect',{x:L,y:top,width:PW,height:PH+GAP+EH,'class':'over'},svg);
 function at(ev){var bx=svg.getBoundingClientRect();return lo+(ev.clientX-bx.left-L)/PW*(hi-lo);}
 function hover(ev){var x=at(ev),i=lower(s.x,x);if(i>0&&(i>=s.x.length||x-s.x[i-1]<s.x[i]-x))i--;
  var X=sx(s.x[i]),gv=ema(s.g,w)[i],nv=ema(s.n,w)[i];cur.setAttribute('visibility','visible');cl.setAttribute('x1',X);cl.setAttribute('x2',X);
  var label=C.unit+' '+fmt(s.x[i])+' \u00b7 GPU '+fmt(s.g[i])+' \u00b7 NPU '+fmt(s.n[i])+(s.r[i]!==null?' \u00b7 rel. err '+(100*s.r[i]).toFixed(2)+'%':'')+
   (w?' (smoothed: GPU '+fmt(gv)+', NPU '+fmt(nv)+')':'');tt.textContent=label;
  var tx=Math.min(X+8,W-R-7*label.length);tt.setAttribute('x',tx);tt.setAttribute('y',top+14);
  tb.setAttribute('x',tx-4);tb.setAttribute('y',top+2);tb.setAttribute('width',6.6*label.length+8);tb.setAttribute('height',17);
  [[dg,gv],[dn,nv]].forEach(function(p){if(p[1]===null){p[0].setAttribute('visibility','hidden');return;}
   p[0].setAttribute('visibility','inherit');p[0].setAttribute('cx',X);p[0].setAttribute('cy',sy(p[1]));});
  svg.dataset.hover=label;if(drag!==null){var a2=Math.min(drag,X),b2=Math.max(drag,X);sel.setAttribute('x',a2);sel.setAttribute('width',b2-a2);}}
 var drag=null,from=null;
 ov.addEventListener('mousemove',hover);ov.addEventListener('mouseleave',function(){cur.setAttribute('visibility','hidden');});
 ov.addEventListener('mousedown',function(ev){from=at(ev);drag=sx(from);sel.setAttribute('visibility','visible');sel.setAttribute('x',drag);
  sel.setAttribute('width',0);ev.preventDefault();});
 ov.addEventListener('mouseup',function(ev){if(drag===null)return;var to=at(ev);drag=null;sel.setAttribute('visibility','hidden');
  if(Math.abs(sx(to)-sx(from))>4)zoom(Math.min(from,to),Math.max(from,to));});
 ov.addEventListener('dblclick',function(){zoom(null,null);});
 ch.svg=svg;ch.hover=hover;return svg;}
function zoom(lo,hi){view.lo=lo;view.hi=hi;charts.forEach(function(c){c.dirty=true;if(c.seen)draw(c);});}
var io='IntersectionObserver' in window?new IntersectionObserver(function(es){es.forEach(function(x){if(!x.isIntersecting)return;
 var c=charts[+x.target.dataset.i];c.seen=true;if(c.dirty)draw(c);});},{rootMargin:'400px'}):null;
C.series.forEach(function(s,i){var wrap=document.createElement('div');wrap.className='chartwrap';wrap.dataset.i=i;
 wrap.style.minHeight=(TOP+PH+GAP+EH+BOT+40)+'px';box.appendChild(wrap);var c={s:s,wrap:wrap,i:i,dirty:true,seen:!io};charts.push(c);
 if(io&&wrap.getBoundingClientRect().top>innerHeight)io.observe(wrap);else{c.seen=true;draw(c);}});
smoothEl.addEventListener('input',function(){document.getElementById('cvsv').textContent=smoothEl.value;zoom(view.lo,view.hi);});
logEl.addEventListener('change',function(){zoom(view.lo,view.hi);});
document.getElementById('cvfirst').onclick=function(){if(prim)zoom(prim.x[0],prim.warm);};
document.getElementById('cvall').onclick=function(){zoom(null,null);};
window.SD=window.SD||{};
window.SD.curvesTest=function(){charts.forEach(function(c){c.seen=true;draw(c);});var out={charts:charts.length,svgs:box.querySelectorAll('svg').length,
  series:charts.map(function(c){var s=c.svg;return {name:c.s.name,gpu:(s.querySelector('path.gpu').getAttribute('d')||'').length>0,
   npu:(s.querySelector('path.npu').getAttribute('d')||'').length>0,err:(s.querySelector('path.err').getAttribute('d')||'').length>0,
   div:!!s.querySelector('line.div'),events:[].map.call(s.querySelectorAll('.ev'),function(e){return e.getAttribute('class');}).length,
   title:s.querySelector('text.ct').textContent};})};
 var c=charts[0],s=c.svg,ov=s.querySelector('rect.over'),b=ov.getBoundingClientRect();window.scrollTo(0,0);c.wrap.scrollIntoView();
 b=ov.getBoundingClientRect();ov.dispatchEvent(new MouseEvent('mousemove',{clientX:b.left+b.width/2,clientY:b.top+20,bubbles:true}));
 out.hover=s.dataset.hover||null;ov.dispatchEvent(new MouseEvent('mousemove',{clientX:b.left+1,clientY:b.top+20,bubbles:true}));
 out.hover_first=s.dataset.hover||null;
 var first=c.svg.querySelector('path.gpu').getAttribute('d');document.getElementById('cvfirst').click();s=charts[0].svg;
 out.zoomed={x_ticks:[].map.call(s.querySelectorAll('text.xt'),function(t){return t.textContent;}),
  changed:s.querySelector('path.gpu').getAttribute('d')!==first};
 ov=s.querySelector('rect.over');b=ov.getBoundingClientRect();var m=function(t,x){ov.dispatchEvent(new MouseEvent(t,{clientX:x,clientY:b.top+30,bubbles:true}));};
 document.getElementById('cvall').click();s=charts[0].svg;ov=s.querySelector('rect.over');b=ov.getBoundingClientRect();
 m('mousedown',b.left+b.width*0.5);m('mousemove',b.left+b.width*0.75);m('mouseup',b.left+b.width*0.75);
 out.dragged=[view.lo,view.hi];zoom(null,null);
 var d0=charts[0].svg.querySelector('path.npu').getAttribute('d');smoothEl.value=0.9;smoothEl.dispatchEvent(new Event('input'));
 out.smoothed={changed:charts[0].svg.querySelector('path.npu').getAttribute('d')!==d0,raw:charts[0].svg.querySelectorAll('path.raw').length};
 smoothEl.value=0;smoothEl.dispatchEvent(new Event('input'));
 var logd=charts[0].svg.querySelector('path.gpu').getAttribute('d');logEl.checked=!logEl.checked;logEl.dispatchEvent(new Event('change'));
 out.log_toggled=charts[0].svg.querySelector('path.gpu').getAttribute('d')!==logd;logEl.checked=!logEl.checked;logEl.dispatchEvent(new Event('change'));
 return out;};
if(/[?&]selftest=1/.test(location.search)&&window.SD.selftest)window.SD.selftest();
})();
"""
