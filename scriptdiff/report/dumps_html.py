"""The review page's section for msprobe dumps (check `dumps`): the calls side by side.

For each first divergence among the findings (its `extra["dumps"]`: dumps/findings.py) a
table shows the GPU and NPU calls around it side by side, the diverging row marked, then the
divergent calls that follow it; the row and each probable cause link to their findings
(`#f<k>`), whose lines the page shows in the scripts' panels when the scripts were compared
(`--scripts`, or `check`'s configuration). html.py includes it with one call; everything
from the inputs is escaped here.
"""
from __future__ import annotations

from .values import html_text as _e

CSS = ("<style>#dumps td{font:12px ui-monospace,monospace;white-space:nowrap}#dumps tr.first td{background:#ffebe9;"
       "font-weight:600}#dumps td.st{color:#8a5a00}#dumps caption{text-align:left;padding:4px 0}"
       "#dumps .cause{margin:2px 0}</style>")


def section(report) -> str:
    """The dumps section of the page ("" when the report holds no first divergence)."""
    firsts = [(k, f) for k, f in enumerate(report.findings) if (f.extra.get("dumps") or {}).get("first")]
    if not firsts:
        return ""
    parts = [CSS, "<h2>API dumps: the first divergence</h2>"]
    for k, f in firsts:
        ev = f.extra["dumps"]
        causes = [(j, c) for j, c in enumerate(report.findings) if c.key.startswith(f"cause:{f.key}")]
        where = " ".join(f"<b>{side.upper()}</b> <a href='#f{k}'>{_e(s.path)}:{s.line}</a>"
                         for side, s in (("gpu", f.gpu), ("npu", f.npu)) if s is not None and s.line)
        parts.append(f"<p><a href='#f{k}'><b>{_e(f.rule)}</b> <code>{_e(f.key)}</code></a>: "
                     f"{_e(ev.get('kind'))} in the {_e(ev.get('phase'))} of rank {_e(ev.get('rank') or '.')}"
                     + (f" · at {where}" if where else "") + "</p>")
        for j, c in causes:
            parts.append(f"<p class=cause>{_e(c.severity)} <a href='#f{j}'><b>{_e(c.rule)}</b></a> {_e(c.message)}</p>")
        rows = []
        for g, n, status, first in ev.get("rows", []):
            cls = " class=first" if first else ""
            mark = f"<a href='#f{k}'>&#9654;</a>" if first else ""
            rows.append(f"<tr{cls}><td>{mark}<td>{_e(g)}<td>{_e(n)}<td class=st>{_e(status)}</tr>")
        parts.append(f"<table class=grid id=dumps><caption>calls side by side, execution order (&#9654; the first "
                     f"divergence)</caption><tr><th><th>GPU<th>NPU<th>how they differ</tr>{''.join(rows)}</table>")
        chain = ev.get("chain") or []
        if chain:
            items = "".join(f"<li><code>{_e(', '.join(d['gpu']) or '-')}</code> / <code>{_e(', '.join(d['npu']) or '-')}"
                            f"</code>: {_e(d['kind'])}" + (f" ({_e(d['diffs'][0]['detail'])})" if d.get("diffs") else "")
                            + "</li>" for d in chain)
            parts.append(f"<details><summary>{len(chain)} divergent call(s) after it</summary><ol>{items}</ol></details>")
    return "".join(parts)
