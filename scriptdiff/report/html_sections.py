"""The static sections of the review page (report/html.py): the controls and the legend, the
verdicts, the findings, the hyperparameter table, the input errors and the file list.

Everything from the inputs is made safe and escaped here (`e`: report.values.html_text).
"""
from __future__ import annotations

from ..model import Severity
from ..ruleset.registry import check_order
from .hparams_table import origin
from .html_files import PageFile, has_panel
from .values import html_text as e
from .values import shown


LOOKS = (("lf", "finding", "a line a finding is about (its badge in the middle)"),
         ("lm", "masked port edit", "an expected GPU->NPU substitution (hover: the rule that masked it)"),
         ("lq", "equal after normalising", "written differently, the same value once normalised (hover: the value)"),
         ("lc", "changed, no finding", "a change the tool judged unable to alter numerics: look, and disagree"))


def controls(checks: list[str], looks: dict | None) -> str:
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


def verdicts(report) -> str:
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


def findings(report, fdata, files, full: bool) -> str:
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
    if i is None or not has_panel(files[i]):
        return text
    return f'<a href="#p{i}" data-go="{i} {"a" if side == "gpu" else "b"} {f.line}">{text}</a>'


TABLE_LOOKS = {"f": "a finding", "m": "masked port edit", "c": "differs, no finding",
               "q": "equal, written differently", "": "equal"}


def table(report, full: bool, where: dict | None = None, files: list | None = None,
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


def errors(report) -> str:
    out = ""
    if report.errors:
        out += "<h2>Input errors</h2><ul id=errors>" + "".join(
            f"<li><code>{e(x.path)}</code>: {e(x.message)}</li>" for x in report.errors) + "</ul>"
    line = report.account_line()
    return out + (f"<p class=account>{e(line)}</p>" if line else "")


def file_list(files: list[PageFile]) -> str:
    rows = []
    for i, f in enumerate(files):
        name = e(f.g or "-") + (" ⇄ " + e(f.n) if f.n and f.n != f.g else "") if f.g else e(f.n or "-")
        cell = f"<a href='#p{i}'>{name}</a>" if has_panel(f) else name
        rows.append(f"<tr class='st-{e(f.status).replace(' ', '-')}'><td>{cell}<td>{e(f.status)}"
                    f"<td class=num>{len(f.findings)}<td class=num>{f.masked}</tr>")
    return (f"<h2>Files</h2><table class=grid id=files><tr><th>file (GPU ⇄ NPU)<th>status<th>findings<th>masked</tr>"
            f"{''.join(rows)}</table>")
