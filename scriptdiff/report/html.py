"""`--format html`: one self-contained review page (no network: inline CSS, JS and data).

For each pair of files the two sides are aligned line by line (difflib), as a diff tool
shows them: masked substitutions dimmed (the masking rule on hover), semantic differences
highlighted with the finding (severity, rule, key, both values) in the gutter and a line
under it; above them the findings (each links to its lines), the verdicts of `check`, the
hyperparameter table of `hparams`, the input errors and the file list with counts per file.
Controls: n/j and p/k move between findings, filters by severity and by check, a "show
masked" toggle.

The page stays fast on large folders: the header, findings and file list are static HTML;
each pair's lines are a JSON block of their own, parsed and laid out only when the pair
comes near the viewport (or a finding in it is visited). Equal runs are folded.

The files' text comes from `Report.texts` (kept by the engine when Options.keep_texts: the
commands set it when html is among the outputs), else from the file on disk. Syntax colours
come from pygments (installed with rich), by the lexer the file's kind names (rules/kinds.yaml
`lexer`); without it lines are plain.
Everything from the inputs passes through report.values (`safe`, `shown`, `clip`), and is
escaped here (static parts) or by the page's `esc` (lines, built in the browser).
"""
from __future__ import annotations

import difflib
import html
import json
import os

from ..registry import check_order, detect
from ..rules import load as load_rules
from ..secrets import shown_text
from ..sources import Source, SourceError, read_path
from .hparams_table import origin
from .values import MAX_CHARS, clip, safe, shown

MAX_TEXT = 2_000_000  # a file read from disk for the page: larger ones are not shown
MAX_LINES = 20_000  # lines of one side shown (a generated file would make the page huge)
SEV = ("error", "warning", "info")


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


def _pair_data(f: _File, marks: dict, used: set) -> dict:
    a, b = _lines(f.ta), _lines(f.tb)
    ops = difflib.SequenceMatcher(None, a, b, autojunk=len(a) > 2000).get_opcodes()
    lexer = _lexer(f.g or f.n, a or b)
    # the NPU side's lines only where they differ (equal runs are the GPU side's), each changed
    # block lexed on its own: half the lexing, at the price of a block that starts inside a
    # multi-line string being coloured from its first line
    bl = [x for tag, _i1, _i2, j1, j2 in ops if tag != "equal" for x in _lex(b[j1:j2], lexer, used)]
    return {"a": _lex(a, lexer, used), "b": bl, "o": [[t[0], i1, i2, j1, j2] for t, i1, i2, j1, j2 in ops],
            **marks}


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
    marks = [{"fa": {}, "fb": {}, "ma": {}, "mb": {}, "ff": []} for _ in files]
    fdata = []
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
            elif k not in marks[i]["ff"]:
                marks[i]["ff"].append(k)
        val = {s: (shown(x.value, full_values) if x is not None else "(absent)") for s, x in
               (("g", fd.gpu), ("n", fd.npu))}
        fdata.append([fd.severity, fd.check, fd.rule, safe(fd.key), val["g"], val["n"],
                      clip(fd.message, 2 * MAX_CHARS, full_values), locs[0], locs[1]])
    mtitles: list[str] = []
    mindex: dict[str, int] = {}
    for m in report.masked:
        r = rules.get(m.rule)
        title = f"masked by {m.rule}" + (f" {r.name}: {r.summary}" if r else "")
        if title not in mindex:
            mindex[title] = len(mtitles)
            mtitles.append(title)
        for side, s, col in (("gpu", m.gpu, "a"), ("npu", m.npu, "b")):
            i = where.get((side, s.path)) if s is not None and s.path else None
            if i is not None and s.line:
                marks[i]["m" + col][str(s.line)] = mindex[title]
        for i in {where.get((side, s.path)) for side, s in (("gpu", m.gpu), ("npu", m.npu)) if s is not None} - {None}:
            files[i].masked += 1
    for f in files:
        _load(f, report.texts)
    used: set[str] = set()
    blocks = []
    for i, f in enumerate(files):
        if not _shown(f):
            continue
        blocks.append(f'<script type="application/json" id="d{i}">{_script_json(_pair_data(f, marks[i], used))}'
                      f'</script>')
    counts = {s: sum(1 for f in report.findings if f.severity == s) for s in SEV}
    checks = sorted({f.check for f in report.findings} | set(report.verdicts), key=check_order)
    data = {"f": fdata, "m": mtitles, "show_masked": True}
    title = f"scriptdiff: {report.gpu} vs {report.npu}"
    parts = [f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{e(title)}</title>"
             f"<meta name=viewport content='width=device-width'><style>{CSS}{_pygments_css(used)}</style></head>"
             f"<body><header><h1>scriptdiff review</h1><p class=sides><b>GPU</b> {e(report.gpu)} "
             f"<b>vs NPU</b> {e(report.npu)}</p><p class=sum>"
             + " ".join(f'<span class="sev-{s}">{counts[s]} {s}</span>' for s in SEV)
             + f" · {len(report.masked)} expected substitution(s) masked · {len(files)} file(s)</p>"
             + _controls(checks) + "</header><main>"]
    parts.append(_verdicts(report))
    parts.append(_findings(report, fdata, files, full_values))
    parts.append(_table(report, full_values))
    parts.append(_errors(report))
    parts.append(_file_list(files))
    for i, f in enumerate(files):
        if not _shown(f):
            continue
        parts.append(f'<section class=pair id=p{i} data-i={i}><h3><span class=pa>{e(f.g or "(none)")}</span> '
                     f'<span class=pb>{e(f.n or "(none)")}</span> <small>{e(f.status)} · '
                     f'{len(f.findings)} finding(s) · {f.masked} masked</small></h3><div class=ff></div>'
                     f'<table class=diff><colgroup><col class=ln><col><col class=gut><col class=ln><col>'
                     f'</colgroup><tbody></tbody></table></section>')
    parts.append("</main>")
    parts.append(f'<script type="application/json" id=sd-data>{_script_json(data)}</script>')
    parts += blocks
    parts.append(f"<script>{JS}</script></body></html>\n")
    return "".join(parts)


def _shown(f: _File) -> bool:
    """A file gets a panel when it has text and is worth reading: changed, or pointed at."""
    return (f.ta is not None or f.tb is not None) and not (f.status == "identical" and not f.findings)


def _controls(checks: list[str]) -> str:
    sev = "".join(f'<label class="sev-{s}"><input type=checkbox data-sev={s} checked> {s}</label> ' for s in SEV)
    opts = "".join(f"<option value={e(c)}>{e(c)}</option>" for c in checks)
    return (f"<nav id=ctl>{sev}<select id=ck><option value=''>every check</option>{opts}</select> "
            f"<label><input type=checkbox id=sm checked> show masked</label> "
            f"<button id=prev title='previous finding (p or k)'>&uarr; prev</button>"
            f"<button id=next title='next finding (n or j)'>&darr; next</button> <span id=pos></span></nav>")


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
        items.append(f'<li class="f sev-{sev} ck-{e(ck)}" data-f={k}><a href="#f{k}" data-f={k}>'
                     f'<b class=sv>{sev}</b> <b>{e(f.rule)}</b> <code>{e(key)}</code></a> {e(msg)}'
                     f'<div class=vals>GPU {_val(gv, f.gpu)} · NPU {_val(nv, f.npu)}</div></li>')
    return f"<h2>Findings</h2><ol id=findings>{''.join(items)}</ol>"


def _table(report, full: bool) -> str:
    if not report.table:
        return ""
    flagged = {f.key: f for f in report.findings}
    rows = []
    for key, g, n in report.table:
        f = flagged.get(key)
        cls = f' class="sev-{f.severity}"' if f else ""
        mark = f"{f.severity} {f.rule}" if f else ""
        rows.append(f"<tr{cls}><td>{e(mark)}<td><code>{e(key)}</code><td>{e(shown(g.value if g else None, full))}"
                    f"<td>{e(origin(g))}<td>{e(shown(n.value if n else None, full))}<td>{e(origin(n))}</tr>")
    differ = sum(1 for key, g, n in report.table if key in flagged or (g is None) != (n is None)
                 or (g is not None and n is not None and shown(g.value) != shown(n.value)))
    return (f"<details><summary><h2>Hyperparameters</h2> {len(report.table)} key(s), {differ} differ</summary>"
            f"<table class=grid id=hparams><tr><th><th>key<th>GPU<th>GPU origin<th>NPU"
            f"<th>NPU origin</tr>{''.join(rows)}</table></details>")


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
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1b1f24;background:#fff}
header{position:sticky;top:0;background:#f6f8fa;border-bottom:1px solid #d0d7de;padding:6px 14px;z-index:2}
h1{font-size:17px;margin:0 0 2px}summary h2{display:inline}summary{margin-top:18px;cursor:pointer}h2{font-size:15px;margin:18px 0 6px}p{margin:2px 0}
main{padding:0 14px 60vh}code{font:12px ui-monospace,monospace;background:#eff1f3;padding:0 3px;border-radius:3px}
.sev-error .sv,.sum .sev-error,#ctl .sev-error{color:#b3261e}.sev-warning .sv,.sum .sev-warning,#ctl .sev-warning{color:#8a5a00}
.sev-info .sv,.sum .sev-info,#ctl .sev-info{color:#0b62a4}
#ctl{margin-top:4px}#ctl label{margin-right:8px}button,select{font:inherit;margin-left:4px}
#findings li{margin:3px 0}#findings a{text-decoration:none;color:inherit}#findings .cur{background:#fff3c4}
.vals{color:#57606a;font-size:12px}
table.grid{border-collapse:collapse}table.grid td,table.grid th{border:1px solid #d0d7de;padding:2px 6px;text-align:left}
table.grid tr.sev-error td{background:#ffebe9}table.grid tr.sev-warning td{background:#fff8c5}
.v-pass td:nth-child(2){color:#1a7f37}.v-differences td:nth-child(2){color:#b3261e}
.v-not-checked td{background:#f2f2f2;color:#57606a;font-style:italic}.num{text-align:right}
.pair{margin:18px 0;border:1px solid #d0d7de;border-radius:6px}
.pair h3{font:600 13px ui-monospace,monospace;margin:0;padding:6px 8px;background:#f6f8fa;border-bottom:1px solid #d0d7de}
.pair h3 .pb::before{content:"\\21C4  ";color:#57606a}.pair small{font-weight:400;color:#57606a}
table.diff{width:100%;border-collapse:collapse;table-layout:fixed;font:12px/1.45 ui-monospace,monospace}
col.ln{width:3.6em}col.gut{width:6.5em}
.diff td{padding:0 6px;vertical-align:top;white-space:pre-wrap;word-break:break-all;tab-size:4}
.diff td.n{color:#8c959f;text-align:right;user-select:none}
tr.d td.a,tr.r td.a{background:#ffebe9}tr.i td.b,tr.r td.b{background:#e6ffec}
tr.m td.a,tr.m td.b{background:#f3f4f6;color:#6e7781}tr.m{opacity:.55}tr.m td.c span{color:inherit!important}
.nomask tr.m{display:none}.nomask tr.m+tr.ann.mo{display:none}
tr.hit td.a,tr.hit td.b{background:#fff1bf}tr.hit.sev-error td.c{background:#ffd8d3}
td.g{font-size:11px;text-align:center;white-space:normal}
.bd{display:inline-block;border-radius:3px;padding:0 3px;color:#fff;margin:1px;cursor:pointer}
.bd.sev-error{background:#cf222e}.bd.sev-warning{background:#bf8700}.bd.sev-info{background:#0969da}
tr.ann td{white-space:normal;background:#fffbe6;font:12px system-ui,sans-serif;padding:3px 8px;border-top:1px solid #eee;border-bottom:1px solid #eee}
tr.ann.cur td,div.ff .cur{outline:2px solid #bf8700}
tr.fold td{background:#f6f8fa;color:#57606a;cursor:pointer;text-align:center;font-style:italic}
div.ff div{background:#fffbe6;padding:3px 8px;font-size:12px}
"""

JS = r"""
(function(){'use strict';
var D=JSON.parse(document.getElementById('sd-data').textContent),F=D.f,done={},pos=-1,body=document.body;
var CTX=3,SEVS=['error','warning','info'];
function esc(s){return String(s).replace(/[&<>"]/g,function(c){return{'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c];});}
function code(l){if(typeof l==='string')return esc(l);var h='';for(var k=0;k<l.length;k+=2)
 h+=l[k]?'<span class="'+l[k]+'">'+esc(l[k+1])+'</span>':esc(l[k+1]);return h;}
function ann(k,tag){var f=F[k];return '<'+tag+' class="ann f sev-'+f[0]+' ck-'+esc(f[1])+'" data-f="'+k+'">'+
 (tag==='tr'?'<td colspan=5>':'')+'<b class=sv>'+f[0]+'</b> <b>'+f[2]+'</b> <code>'+esc(f[3])+'</code> GPU <code>'+
 esc(f[4])+'</code> NPU <code>'+esc(f[5])+'</code> &mdash; '+esc(f[6])+(tag==='tr'?'</td>':'')+'</'+tag+'>';}
function badges(ks){return ks.map(function(k){var f=F[k];return '<span class="bd f sev-'+f[0]+' ck-'+esc(f[1])+
 '" data-f="'+k+'" title="'+esc(f[0]+' '+f[2]+' '+f[3]+': GPU '+f[4]+', NPU '+f[5])+'">'+f[0][0].toUpperCase()+
 ' '+f[2]+'</span>';}).join('');}
function rows(d){var r=[],b=0;d.o.forEach(function(o){var t=o[0][0],n=Math.max(o[2]-o[1],o[4]-o[3]);
 for(var k=0;k<n;k++){var ia=o[1]+k<o[2]?o[1]+k:-1,ib=o[3]+k<o[4]?o[3]+k:-1,lb=null;
  if(ib>=0)lb=t==='e'?d.a[ia]:d.b[b++];r.push([t==='r'?(ia<0?'i':ib<0?'d':'r'):t,ia,ib,lb]);}});return r;}
function row(d,x){var ia=x[1],ib=x[2],fa=ia>=0&&d.fa[ia+1]||[],fb=ib>=0&&d.fb[ib+1]||[],ks=fa.concat(fb.filter(
 function(k){return fa.indexOf(k)<0;})),ma=ia>=0?d.ma[ia+1]:undefined,mb=ib>=0?d.mb[ib+1]:undefined,cls=x[0];
 var mt=ma!==undefined?D.m[ma]:mb!==undefined?D.m[mb]:'';
 if(ks.length)cls+=' hit sev-'+ks.map(function(k){return F[k][0];}).sort(function(p,q){return SEVS.indexOf(p)-SEVS.indexOf(q);})[0];
 else if(mt)cls+=' m';
 var h='<tr class="'+cls+'"'+(mt?' title="'+esc(mt)+'"':'')+'><td class=n>'+(ia>=0?ia+1:'')+'</td><td class="c a">'+
  (ia>=0?code(d.a[ia]):'')+'</td><td class=g>'+badges(ks)+'</td><td class=n>'+(ib>=0?ib+1:'')+'</td><td class="c b">'+
  (x[3]!==null?code(x[3]):'')+'</td></tr>';
 ks.forEach(function(k){if(!d.shown[k]){d.shown[k]=1;h+=ann(k,'tr');}});return h;}
function render(i){if(done[i])return done[i];var el=document.getElementById('d'+i);if(!el)return null;
 var d=JSON.parse(el.textContent),sec=document.getElementById('p'+i),rs=rows(d),keep=[],h='',k,j;d.shown={};d.rs=rs;
 rs.forEach(function(x,n){if(x[0]!=='e'||(x[1]>=0&&(d.fa[x[1]+1]||d.ma[x[1]+1]!==undefined))||(x[2]>=0&&(d.fb[x[2]+1]||
  d.mb[x[2]+1]!==undefined)))for(k=Math.max(0,n-CTX);k<=Math.min(rs.length-1,n+CTX);k++)keep[k]=1;});
 for(k=0;k<rs.length;){if(keep[k]){h+=row(d,rs[k]);k++;continue;}for(j=k;j<rs.length&&!keep[j];j++);
  h+='<tr class=fold data-s="'+k+'" data-e="'+j+'"><td colspan=5>&#8943; '+(j-k)+' unchanged line(s)</td></tr>';k=j;}
 sec.querySelector('tbody').innerHTML=h;sec.querySelector('.ff').innerHTML=d.ff.map(function(k){return ann(k,'div');}).join('');
 d.sec=sec;done[i]=d;return d;}
function unfold(tr){var d=done[tr.closest('.pair').dataset.i],h='';
 for(var k=+tr.dataset.s;k<+tr.dataset.e;k++)h+=row(d,d.rs[k]);tr.insertAdjacentHTML('afterend',h);tr.remove();}
var io='IntersectionObserver' in window?new IntersectionObserver(function(es){es.forEach(function(x){
 if(x.isIntersecting){render(x.target.dataset.i);io.unobserve(x.target);}});},{rootMargin:'800px'}):null;
document.querySelectorAll('section.pair').forEach(function(s){if(io)io.observe(s);else render(s.dataset.i);});
function visible(k){var f=F[k];return !body.classList.contains('hide-'+f[0])&&(!ck.value||ck.value===f[1]);}
function target(k){var f=F[k],p=f[7]>=0?f[7]:f[8];
 if(p>=0&&render(p)){var d=done[p];var el=d.sec.querySelector('[data-f="'+k+'"].ann');if(el)return el;
  var t=d.sec.querySelector('.g [data-f="'+k+'"]');if(t)return t.closest('tr');}
 return document.querySelector('#findings [data-f="'+k+'"]');}
function go(k){if(k<0||k>=F.length)return;pos=k;document.querySelectorAll('.cur').forEach(function(x){x.classList.remove('cur');});
 var li=document.querySelector('#findings li[data-f="'+k+'"]'),el=target(k);if(li)li.classList.add('cur');
 if(el){el.classList.add('cur');el.scrollIntoView({block:'center'});}
 document.getElementById('pos').textContent='finding '+(k+1)+' of '+F.length;body.dataset.cur=k;}
function step(dir){for(var k=pos+dir;k>=0&&k<F.length;k+=dir)if(visible(k)){go(k);return;}}
var ck=document.getElementById('ck'),st=document.createElement('style');document.head.appendChild(st);
ck.onchange=function(){st.textContent=ck.value?'.f:not(.ck-'+ck.value+'){display:none}':'';};
document.querySelectorAll('#ctl [data-sev]').forEach(function(c){c.onchange=function(){
 body.classList.toggle('hide-'+c.dataset.sev,!c.checked);};});
var css=document.createElement('style');
css.textContent=SEVS.map(function(s){return '.hide-'+s+' .f.sev-'+s;}).join(',')+'{display:none}';document.head.appendChild(css);
document.getElementById('sm').onchange=function(){body.classList.toggle('nomask',!this.checked);};
document.getElementById('next').onclick=function(){step(1);};document.getElementById('prev').onclick=function(){step(-1);};
document.addEventListener('keydown',function(ev){if(/INPUT|SELECT|TEXTAREA/.test(ev.target.tagName)||ev.ctrlKey||ev.metaKey||ev.altKey)return;
 if(ev.key==='n'||ev.key==='j'){step(1);ev.preventDefault();}else if(ev.key==='p'||ev.key==='k'){step(-1);ev.preventDefault();}});
document.addEventListener('click',function(ev){var t=ev.target.closest('[data-f]'),fo=ev.target.closest('tr.fold');
 if(fo){unfold(fo);return;}if(t&&(t.tagName==='A'||t.classList.contains('bd'))){ev.preventDefault();go(+t.dataset.f);}});
var m=/^#f(\d+)$/.exec(location.hash);if(m)go(+m[1]);
body.dataset.scriptDoneMs=performance.now().toFixed(1);
requestAnimationFrame(function(){setTimeout(function(){var p=performance.getEntriesByName('first-contentful-paint')[0];
 body.dataset.firstPaintMs=(p?p.startTime:performance.now()).toFixed(1);},0);});
if(/[?&]selftest=1/.test(location.search)){var out={findings:document.querySelectorAll('#findings li').length,nav:[]};
 document.querySelectorAll('section.pair').forEach(function(s){render(s.dataset.i);});
 var mr=document.querySelector('tr.m');out.masked=document.querySelectorAll('tr.m').length;
 if(mr){out.masked_opacity=getComputedStyle(mr).opacity;out.masked_title=mr.title;}
 function key(k){document.dispatchEvent(new KeyboardEvent('keydown',{key:k,bubbles:true}));var c=document.querySelector('.pair .cur')||
  document.querySelector('#findings .cur'),r=c&&c.getBoundingClientRect();out.nav.push({key:k,finding:pos,
  rule:pos>=0?F[pos][2]:null,in:c?(c.closest('.pair')||{id:'findings'}).id:null,
  on_screen:!!r&&r.top>=0&&r.bottom<=innerHeight});}
 ['n','n','p','j','k'].forEach(key);
 document.getElementById('sm').click();out.masked_hidden=mr?getComputedStyle(mr).display==='none':null;
 document.getElementById('sm').click();
 var info=document.querySelector('[data-sev=info]');info.click();out.info_hidden_items=
  [].filter.call(document.querySelectorAll('#findings li.sev-info'),function(x){return getComputedStyle(x).display==='none';}).length;
 info.click();ck.value='environment';ck.onchange();pos=-1;out.check_filter_visible=[].filter.call(
  document.querySelectorAll('#findings li'),function(x){return getComputedStyle(x).display!=='none';}).length;key('n');
 ck.value='';ck.onchange();var p=document.createElement('pre');p.id='selftest';p.textContent=JSON.stringify(out);body.appendChild(p);}
})();
"""
