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

This module computes each pair's lines, looks and stops and puts the page together; its parts
are beside it: html_files.py (which files the page lists, their texts), html_sections.py (the
static sections), html_assets.py (the page's CSS and script), curves.py and dumps_html.py (the
sections of process data).
"""
from __future__ import annotations

import bisect
import dataclasses
import difflib
import json

from .. import budget
from ..inputs.sources import Source
from ..model import Severity
from ..ruleset.registry import check_order, detect
from ..ruleset.rules import load as load_rules
from ..ruleset.secrets import is_secret
from . import html_sections as sections
from .curves import CURVES_CSS, CURVES_JS, chart_data, html_section as curves_section
from .dumps_html import section as dumps_section
from .html_assets import CSS, JS
from .html_files import PageFile, has_panel, load_texts, page_files
from .values import clip, safe, shown
from .values import html_text as e
from ..ruleset.fidelity import said as masked_said


def _script_json(doc) -> str:
    """JSON inside <script type=application/json>: nothing in it can close or escape the element."""
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/").replace(
        "<!--", "<\\u0021--")


# --------------------------------------------------------------------------- lines

def _lines(text: str | None) -> list[str]:
    if text is None:
        return []
    lines = [safe(line) for line in text.replace("\r\n", "\n").split("\n")]
    if lines and lines[-1] == "":
        lines.pop()
    return lines[:budget.PAGE_LINES]


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
    if value is None or text is None or len(text) > budget.PAGE_LOCATE_CHARS:
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


def _paired(ops, a: list[str], b: list[str], anchors: set[tuple[int, int]]) -> list[tuple]:
    """difflib's opcodes with each replaced block's rows paired by meaning: a GPU line and the
    NPU line a mask, a finding or an equal-after-normalising entry pairs it with (`anchors`,
    1-based line pairs) on one row, else lines alike enough (SequenceMatcher ratio >= 0.5), in
    order; a line with no partner gets a row of its own (a delete or an insert). Without it
    difflib lays a block out index by index, so `source set_env.sh` added above a masked
    `export` pushes every row of the block one line off."""
    out = []
    for op in ops:
        tag, i1, i2, j1, j2 = op
        if tag != "replace" or (i2 - i1) * (j2 - j1) > budget.PAIRED_BLOCK_CELLS or (i2 - i1 == 1 == j2 - j1):
            out.append(op)
            continue
        n, m = i2 - i1, j2 - j1

        def score(x: int, y: int) -> float:
            if (i1 + x + 1, j1 + y + 1) in anchors:
                return 3.0
            r = difflib.SequenceMatcher(None, a[i1 + x].strip(), b[j1 + y].strip()).ratio()
            return r if r >= 0.5 else 0.0
        best = [[0.0] * (m + 1) for _ in range(n + 1)]  # best[x][y]: of a[x:], b[y:]
        for x in range(n - 1, -1, -1):
            for y in range(m - 1, -1, -1):
                s = score(x, y)
                best[x][y] = max(best[x + 1][y], best[x][y + 1], best[x + 1][y + 1] + s if s else 0.0)
        x = y = 0
        match = []
        while x < n and y < m:
            s = score(x, y)
            if s and best[x][y] == best[x + 1][y + 1] + s:
                match.append((x, y))
                x, y = x + 1, y + 1
            elif best[x + 1][y] >= best[x][y + 1]:
                x += 1
            else:
                y += 1
        if all(x == y for x, y in match):  # index by index already: difflib's block as it is
            out.append(op)
            continue
        px = py = 0
        for x, y in match + [(n, m)]:
            gap = min(x - px, y - py)  # lines left unpaired on both sides between two pairs: side by side
            if gap:
                out.append(("replace", i1 + px, i1 + px + gap, j1 + py, j1 + py + gap))
            if x - px > gap:
                out.append(("delete", i1 + px + gap, i1 + x, j1 + py + gap, j1 + py + gap))
            if y - py > gap:
                out.append(("insert", i1 + x, i1 + x, j1 + py + gap, j1 + y))
            if x < n:
                out.append(("replace", i1 + x, i1 + x + 1, j1 + y, j1 + y + 1))
            px, py = x + 1, y + 1
    return out


def _identical_marks(data: dict, ops) -> None:
    """A finding is badged on a row only where the two sides differ: on a line identical on
    both sides (`bf16=True` in both programs, the NPU value from a config) with nothing marked
    on the other side, its mark moves to the panel's header (a finding about the file)."""
    for tag, i1, i2, j1, j2 in ops:
        if tag != "equal":
            continue
        for k in range(i2 - i1):
            for col, other, here, there in (("a", "b", i1 + k + 1, j1 + k + 1), ("b", "a", j1 + k + 1, i1 + k + 1)):
                ks = data["f" + col].get(str(here))
                if not ks or str(there) in data["f" + other] or str(there) in data["m" + other] \
                        or str(here) in data["m" + col]:
                    continue
                del data["f" + col][str(here)]
                data["ff"] += [x for x in ks if x not in data["ff"]]


def _pair_data(f: PageFile, marks: dict, used: set, anchors: set | None = None):
    a, b = _lines(f.ta), _lines(f.tb)
    ops = difflib.SequenceMatcher(None, a, b, autojunk=len(a) > budget.PRECISE_DIFF_LINES).get_opcodes()
    ops = _paired(ops, a, b, anchors or set())
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
    # the findings most severe first (errors above info, whatever their check), each severity in
    # report order; a copy: the other writers of the same run keep the report's order
    report = dataclasses.replace(report, findings=sorted(report.findings, key=lambda f: Severity(f.severity).rank))
    rules = load_rules().rules
    files = page_files(report)
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
                      clip(fd.message, 2 * budget.SHOWN_CHARS, full_values), locs[0], locs[1]])
    mtitles: list[str] = []
    mindex: dict[str, int] = {}
    masked_at: set[tuple[str, str, int]] = set()  # (side, path, line) of every masked line
    for m in report.masked:
        r = rules.get(m.rule)
        title = (f"masked by {m.rule}" + (f" {r.name}: {r.summary}" if r else "")
                 + f" [fidelity: {m.fidelity or 'exact'}]")
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
    anchors: dict[int, set[tuple[int, int]]] = {}  # panel -> (GPU line, NPU line) a mask, finding or entry pairs
    for x in list(report.masked) + list(report.findings):
        g, n = x.gpu, x.npu
        i = where.get(("gpu", g.path)) if g is not None and g.path and g.line else None
        if i is not None and n is not None and n.line and where.get(("npu", n.path)) == i:
            anchors.setdefault(i, set()).add((g.line, n.line))
    for i, pairs in qpairs.items():
        anchors.setdefault(i, set()).update((g.line, n.line) for _k, g, n in pairs)
    for f in files:
        load_texts(f, report.texts)
    used: set[str] = set()
    blocks = []
    sf: list = [[-1, -1, [k]] for k, d in enumerate(fdata) if d[7] < 0 and d[8] < 0]  # not on any panel: the list
    sc: list = []
    looks = dict.fromkeys(LOOK_RANK, 0)
    shown_rows: dict[int, int] = {}
    for i, f in enumerate(files):
        if not has_panel(f):
            continue
        data, la, lb, ops = _pair_data(f, marks[i], used, anchors.get(i))
        _identical_marks(data, ops)
        for pi, col, line, value, k in spots:
            if pi != i or k not in data["f" + col].get(str(line), ()):
                continue  # another panel's, or a finding's line identical on both sides (_identical_marks)
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
        # one count everywhere (the legend, each panel's header, the file list): the masked
        # substitutions of the file (the page's header counts them all), and of the other looks
        # the rows, each under its strongest look (two cells of one look are one row)
        strongest = [min((x for x in (xa, xb) if x), key=LOOK_RANK.get) for _r, xa, xb in marked if xa or xb]
        for x in strongest:
            looks[x] += x != "M"
        looks["M"] += f.masked
        f.looks = {x: strongest.count(x) for x in ("Q", "C")}
        shown_rows[i] = nshown + len(files[i].findings)
        blocks.append(f'<script type="application/json" id="d{i}">{_script_json(data)}</script>')
    checks = sorted({f.check for f in report.findings} | set(report.verdicts), key=check_order)
    data = {"f": fdata, "m": mtitles, "q": qtexts, "sf": sf, "sc": sc, "show_masked": True}
    curves = report.details.get("curves")
    title = f"scriptdiff: {report.gpu} vs {report.npu}"
    panels = any(has_panel(f) for f in files)
    parts = [f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{e(title)}</title>"
             f"<meta name=viewport content='width=device-width'><style>{CSS}{CURVES_CSS if curves else ''}"
             f"{_pygments_css(used)}</style></head>"
             f"<body><header><h1>scriptdiff {'review' if files or curves is None else 'curves'}</h1>"
             f"<p class=sides><b>GPU</b> {e(report.gpu)} <b>vs NPU</b> {e(report.npu)}</p><p class=sum>"
             + " ".join(f'<span class="{s.html_class}">{n} {s}</span>'
                        for s, n in Severity.counts(report.findings).items())
             + (f" · {e(masked_said(report.masked))} · {len(files)} file(s)" if files else "")
             + "</p>"
             + sections.controls(checks, looks if panels else None) + "</header>"
             + ("<div id=map title='where the changes are: click to go there'><div class=vp></div></div>" if panels
                else "") + "<main>"]
    parts.append(sections.verdicts(report))
    parts.append(sections.findings(report, fdata, files, full_values))
    if curves is not None:
        parts.append(curves_section(curves))
    parts.append(dumps_section(report))
    parts.append(sections.table(report, full_values, where, files, masked_at))
    parts.append(sections.errors(report))
    parts.append(sections.file_list(files))
    for i, f in enumerate(files):
        if not has_panel(f):
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
