"""The curves as the pages show them: the html page's chart data (drawn by the page's own
script as inline SVG, no plotting library: CURVES_JS, with its style CURVES_CSS, around the
frame `html_section` writes) and the markdown section.

`chart_data(res)` is plain JSON: per compared series its aligned points (at most
budget.CHART_POINTS, thinned so that every extreme survives: each bucket keeps its first
point and the points where GPU, NPU or the relative error are lowest and highest), the
events to mark (NaN/inf, skipped, overflow, spikes: each side's, from the counts the
verdict used), the divergence, the first N points the first-step verdict judges, and
whether a log axis suits it.
"""
from __future__ import annotations

import os

from .. import budget
from .values import md_cell as _cell
from .values import html_text as e
from .values import safe
from ..ruleset.secrets import redact_text
from .values import md_code as _code
from ..curves.metrics import _r, error_scale
from ..curves.plot import chosen, events, first_span, log_axis
from ..curves.series import is_downstream
from ..curves.verdict import Result


def _num(v):
    """A value for JSON: 6 significant digits; NaN and infinities as None (marked as events)."""
    v = float(v)
    if v != v or v in (float("inf"), float("-inf")):
        return None
    return int(v) if v.is_integer() and abs(v) < 2 ** 53 else float(f"{v:.6g}")


def thinned(x, g, n, rel, limit: int = budget.CHART_POINTS):
    """Indices of the points kept: all of them up to `limit`, else per bucket the first and the
    lowest and highest of GPU, NPU and the relative error (so no spike is thinned away)."""
    import numpy as np

    m = len(x)
    if m <= limit:
        return np.arange(m)
    per = int(np.ceil(m / (limit / 7)))  # at most 7 points per bucket
    nb = int(np.ceil(m / per))
    pad = nb * per - m
    keep = [np.arange(0, m, per)]
    for v in (g, n, rel):
        w = np.concatenate([np.where(np.isfinite(v), v, np.nan), np.full(pad, np.nan)]).reshape(nb, per)
        ok = np.isfinite(w).any(axis=1)
        lo = np.nanargmin(np.where(np.isfinite(w), w, np.inf), axis=1)
        hi = np.nanargmax(np.where(np.isfinite(w), w, -np.inf), axis=1)
        base = np.arange(nb) * per
        keep += [(base + lo)[ok], (base + hi)[ok]]
        bad = ~np.isfinite(v)  # a non-finite point is kept (it is marked)
        keep.append(np.nonzero(bad)[0][:budget.CHART_NONFINITE])
    idx = np.unique(np.concatenate(keep))
    return idx[idx < m]


def chart_data(res: Result) -> dict:
    import numpy as np

    s = res.settings
    unit = "step" if res.axis is None or res.axis.name == "step" else res.axis.name
    first = chosen(res)
    names = first + sorted(k for k, st in res.series.items() if k not in first and st.compared)
    series = []
    for name in names:
        st = res.series[name]
        if st.x is None or not len(st.x):
            continue
        ok = np.isfinite(st.g) & np.isfinite(st.n)
        rel = np.full(len(st.x), np.nan)
        if st.rel is not None:
            rel[ok] = st.rel
        idx = thinned(st.x, st.g, st.n, rel)
        ev = events(res, name, st)
        rtop, clipped = error_scale(rel, s.rtol)
        series.append({
            "name": safe(redact_text(name)), "x": [_num(v) for v in st.x[idx]], "g": [_num(v) for v in st.g[idx]],
            "n": [_num(v) for v in st.n[idx]], "r": [_num(v) for v in rel[idx]], "rtop": rtop, "clipped": clipped,
            "points": int(len(st.x)), "shown": int(len(idx)), "log": log_axis(st.g, st.n),
            "div": _r(st.divergence), "first": _r(st.x[min(s.first, len(st.x)) - 1]),
            "warm": _r(st.x[first_span(res, st) - 1]), "mre": st.mre_all, "mre_first": st.mre_first,
            "beyond": st.beyond(s.rtol), "primary": name == res.primary, "downstream": is_downstream(name),
            "note": safe(redact_text(st.note)),
            "events": {side: {k: [_r(v) for v in xs] for k, xs in kinds.items()} for side, kinds in ev.items()},
        })
        if name in s.floor:  # the run-to-run spread of one side (--floor): drawn as a band
            series[-1]["floor"] = s.floor[name]
    return {"verdict": res.said, "evidence": [safe(redact_text(e)) for e in res.evidence], "unit": unit,
            "axis": safe(res.axis.reason) if res.axis else "", "rtol": s.rtol, "first": s.first, "series": series,
            "counts": {side: c.anomalies() for side, c in res.counts.items()},
            "one_sided": {k: [safe(redact_text(x)) for x in v] for k, v in res.one_sided.items()},
            "not_compared": [safe(redact_text(x)) for x in res.not_compared]}


def markdown_section(res: Result | None, plot: str | None = None) -> str:
    """The curves section of a markdown report: verdict, evidence, series table, the plot
    (its path as the markdown file sees it: the caller makes it relative)."""
    if res is None:
        return ""
    return redact_text(_markdown_section(res, plot))  # series names are the logs' own (tags, headers)


def _markdown_section(res: Result, plot: str | None) -> str:
    out = ["#### process data: training curves", "", f"**Verdict: {res.said}** ({_cell(res.axis.reason) if res.axis else ''})",
           ""]
    out += [f"- {_cell(e)}" for e in res.evidence]
    out += ["", "| Series | Points | First N | Whole run | Worst window | Max (at) | First beyond | Diverges |",
            "|---|---|---|---|---|---|---|---|"]
    for name, st in sorted(res.series.items(), key=lambda kv: (kv[0] != res.primary, kv[0])):
        if not st.compared:
            continue
        out.append(f"| {_code(name)} | {st.compared} | {100 * st.mre_first:.2f}% | {100 * st.mre_all:.2f}% | "
                   f"{100 * st.worst_window[2]:.2f}% | {100 * st.max_rel[1]:.2f}% ({_r(st.max_rel[0])}) | "
                   f"{_dash(_r(st.first_beyond))} | {_dash(_r(st.divergence))} |")
    out.append("")
    if plot:
        out += [f"![training curves: GPU vs NPU]({plot})", ""]
    return "\n".join(out) + "\n"


def relative_to(plot: str, document: str | None) -> str:
    """The plot's path as a markdown document at `document` (None: standard output, read from
    the working directory) links it: relative, with forward slashes, so that the document and
    the picture can move together (a PR comment, a CI artifact)."""
    base = os.path.dirname(os.path.abspath(document)) if document else os.getcwd()
    try:
        rel = os.path.relpath(os.path.abspath(plot), base)
    except ValueError:  # another drive: no relative path exists
        return plot.replace(os.sep, "/")
    return rel.replace(os.sep, "/")


def _dash(v) -> str:
    return "-" if v is None else str(v)


# --------------------------------------------------------------------------- the html page's section

def html_section(res) -> str:
    """The curves view's frame: the verdict and its evidence (static), the charts (drawn by
    the page's script from the cv-data block)."""
    ev = "".join(f"<li>{e(x)}</li>" for x in res.evidence)
    return (f"<h2>Training curves</h2><section id=curves><p class=verdict>verdict: <b>{e(res.said)}</b> "
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
svg .err{fill:none;stroke:#57606a;stroke-width:1}svg .tol{stroke:#ff7f0e;stroke-dasharray:5 3}svg .floor{fill:#ff7f0e;opacity:.12}
svg .div{stroke:#d62728;stroke-dasharray:5 3}svg .dl{fill:#d62728;font-size:11px}
svg .over{fill:transparent;cursor:crosshair}svg .errclip{fill:#d62728}svg .errnote{fill:#d62728;font-size:10px}svg .cursor line{stroke:#8c959f}svg .tip{font-size:11px;fill:#1b1f24}
svg .tipbox{fill:#fff;stroke:#d0d7de;opacity:.95}svg .sel{fill:#0969da;opacity:.12}
"""

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
 // the error panel's scale: the robust top (s.rtop, curves.metrics.error_scale) unless the points in view stay below it;
 // a spike above it is drawn at the top and marked, so that it does not flatten a drift
 var rmax=0;r.forEach(function(v){if(v!==null&&v>rmax)rmax=v;});rmax=Math.max(Math.min(rmax*1.08,s.rtop),C.rtol*2);
 var over=[],rc=r.map(function(v,i){if(v!==null&&v>rmax){over.push(xs[i]);return rmax;}return v;});
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
 if(s.floor){var fy=ey(Math.min(s.floor,rmax));el('rect',{x:L,y:fy,width:PW,height:ey(0)-fy,'class':'floor'},svg);
  el('title',{},svg.lastChild).textContent='the run-to-run spread of one side: '+(100*s.floor).toFixed(2)+'%';}
 el('line',{x1:L,x2:L+PW,y1:ey(C.rtol),y2:ey(C.rtol),'class':'tol'},svg);
 el('path',{d:path(xs,rc,sx,ey),'class':'err'},clip);
 over.forEach(function(x){var X=sx(x),Y=top+PH+GAP;el('path',{d:'M'+(X-3.5)+' '+(Y+5)+'L'+(X+3.5)+' '+(Y+5)+'L'+X+' '+(Y-1)+'Z','class':'errclip'},svg);});
 if(over.length)txt(svg,L+PW-4,top+PH+GAP+11,over.length+' point'+(over.length>1?'s':'')+' above '+(100*rmax).toFixed(1)+'% (clipped, ▲)',
  {'class':'errnote','text-anchor':'end'});
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
   div:!!s.querySelector('line.div'),clipped:s.querySelectorAll('.errclip').length,
   errnote:(s.querySelector('text.errnote')||{}).textContent||null,events:[].map.call(s.querySelectorAll('.ev'),function(e){return e.getAttribute('class');}).length,
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
