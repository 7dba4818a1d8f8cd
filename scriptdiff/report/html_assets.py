"""The review page's own style sheet and script (report/html.py puts them inline: no network).

The script lays out each pair's lines from its JSON block when the pair comes near the
viewport, folds equal runs, marks the changed words, and walks the navigation stops the
writer computed (n/p, the change map); with `?selftest=1` it checks itself (tests/
test_html_browser.py). What it knows of severities (their order, each one's class and the
letter of the look of a line with a finding) is spelled by model.Severity and put in here.
"""
from __future__ import annotations

from ..model import Severity

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
 // what each panel says and shows: its header's counts, its rows (GPU line, NPU line, the badges between them), the
 // findings said of the whole file; the legend's and the file list's counts
 out.panels=[].map.call(document.querySelectorAll('section.pair'),function(s){return {head:s.querySelector('h3 small').textContent,
  ff:[].map.call(s.querySelectorAll('.ff .ann'),function(a){return F[+a.dataset.f][2];}),
  rows:[].slice.call(s.querySelectorAll('tr[data-r]'),0,200).map(function(r){var c=r.querySelectorAll('td');
   return [c[0].textContent,c[1].textContent,c[3].textContent,c[4].textContent,c[2].textContent];})};});
 out.legend={};[].forEach.call(document.querySelectorAll('#legend .key'),function(k){out.legend[k.classList[1]]=+k.querySelector('small').textContent;});
 out.file_masked=[].map.call(document.querySelectorAll('#files tr'),function(r){var c=r.querySelectorAll('td');return c.length?+c[3].textContent:null;})
  .filter(function(x){return x!==null;});
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
