
(function(){
var ERR=[];window.__errors=ERR;
function note(m){ERR.push(String(m));document.body.setAttribute('data-errors',ERR.join(' | '));}
window.addEventListener('error',function(e){note(e.message||e);});
var DE=document.getElementById('data'),D=JSON.parse(DE.textContent),R=D.rows,PS=D.page_size||100;DE.textContent='';
function el(t,c,x){var e=document.createElement(t);if(c)e.className=c;if(x!=null)e.textContent=x;return e;}
function fmt(v){if(v==null)return'–';if(typeof v=='number')return Number.isInteger(v)?String(v):String(+v.toFixed(3));return String(v);}
function pre(s){return el('pre',null,s);}
function long(s,lim){if(s.length<=(lim||1500))return pre(s);var d=el('details');var sm=el('summary','mut',s.slice(0,140).replace(/\s+/g,' ')+' … ('+s.length+' chars)');d.appendChild(sm);d.addEventListener('toggle',function(){if(d.open&&d.childNodes.length==1)d.appendChild(pre(s));});return d;}
function table(c,rows){var t=el('table'),h=el('tr');c.forEach(function(x){h.appendChild(el('th',null,x));});t.appendChild(h);rows.forEach(function(r){var tr=el('tr');r.forEach(function(x){var td=el('td');if(x.length>300)td.appendChild(long(x));else td.textContent=x;tr.appendChild(td);});t.appendChild(tr);});return t;}
function section(s){var w=el('div','sec');w.appendChild(el('h4',null,s[0]));var k=s[1],v=s[2];
 if(k=='text')w.appendChild(long(v));
 else if(k=='json')w.appendChild(long(v));
 else if(k=='kv'){var t=el('table','kv');v.forEach(function(p){var tr=el('tr');tr.appendChild(el('td',null,p[0]));var td=el('td');if(p[1].length>300)td.appendChild(long(p[1]));else td.textContent=p[1];tr.appendChild(td);t.appendChild(tr);});w.appendChild(t);}
 else if(k=='table')w.appendChild(table(v.c,v.r));
 else if(k=='pair'){var g=el('div','pair');v.forEach(function(p){var c=el('div');c.appendChild(el('h5',null,p[0]));c.appendChild(long(p[1],6000));g.appendChild(c);});w.appendChild(g);}
 return w;}
function row(r){var d=el('details','ex');d.setAttribute('data-id',r.i);if(r.f)d.setAttribute('data-failed','1');
 var s=el('summary');s.appendChild(el('span','id',r.i));if(r.g)s.appendChild(el('span','chip',r.g));
 Object.keys(r.s).forEach(function(k){s.appendChild(el('span','chip',k+' '+fmt(r.s[k])));});
 if(r.f)s.appendChild(el('span','fail','✗ '+r.f));else if(r.p)s.appendChild(el('span','prev',r.p));
 d.appendChild(s);d.addEventListener('toggle',function(){if(d.open&&!d._b){d._b=1;var b=el('div','body');r.x.forEach(function(x){b.appendChild(section(x));});d.appendChild(b);}});return d;}
var $=function(id){return document.getElementById(id);};
var OPEN='',q=$('f-q'),st=$('f-status'),me=$('f-metric'),mi=$('f-min'),ma=$('f-max'),gr=$('f-group'),list=$('examples'),page=0,M=[];
D.metrics.forEach(function(m){var o=el('option',null,m);o.value=m;me.appendChild(o);});
D.groups.forEach(function(g){var o=el('option',null,g);o.value=g;gr.appendChild(o);});
if(!D.groups.length)gr.style.display='none';
function hay(r){if(r._t==null)r._t=(r.i+'\n'+r.f+'\n'+r.g+'\n'+JSON.stringify(r.x)).toLowerCase();return r._t;}
function readHash(){var h=decodeURIComponent(location.hash.slice(1)),p={};h.split('&').forEach(function(kv){var i=kv.indexOf('=');if(i>0)p[kv.slice(0,i)]=kv.slice(i+1);});
 q.value=p.q||'';st.value=p.status||'';me.value=p.metric||'';mi.value=p.min||'';ma.value=p.max||'';gr.value=p.group||'';page=+(p.page||0);OPEN=p.open||'';}
function writeHash(){var p=[];[['q',q.value],['status',st.value],['metric',me.value],['min',mi.value],['max',ma.value],['group',gr.value],['page',page||''],['open',OPEN]].forEach(function(x){if(x[1]!==''&&x[1]!=null)p.push(x[0]+'='+encodeURIComponent(x[1]));});
 history.replaceState(null,'',p.length?'#'+p.join('&'):location.pathname+location.search);}
function apply(){var t=q.value.trim().toLowerCase(),s=st.value,m=me.value,lo=mi.value===''?null:+mi.value,hi=ma.value===''?null:+ma.value,g=gr.value;
 M=R.filter(function(r){if(s=='failed'&&!r.f)return false;if(s=='ok'&&r.f)return false;if(g&&r.g!==g)return false;
  if(m){var v=r.s[m];if(v==null)return lo==null&&hi==null?true:false;if(lo!=null&&v<lo)return false;if(hi!=null&&v>hi)return false;}
  if(t&&hay(r).indexOf(t)<0)return false;return true;});
 var np=Math.max(1,Math.ceil(M.length/PS));if(page>=np)page=np-1;if(page<0)page=0;render();}
function render(){list.textContent='';var a=page*PS,sl=M.slice(a,a+PS),f=document.createDocumentFragment();sl.forEach(function(r){f.appendChild(row(r));});list.appendChild(f);
 list.setAttribute('data-matching',M.length);list.setAttribute('data-rendered',sl.length);
 $('n-match').textContent=M.length;$('n-page').textContent=M.length?('showing '+(a+1)+'–'+(a+sl.length)):'nothing matches';
 $('pg').textContent='page '+(page+1)+' / '+Math.max(1,Math.ceil(M.length/PS));
 if(OPEN){list.querySelectorAll('details.ex').forEach(function(d){if(OPEN=='*'||d.getAttribute('data-id')==OPEN)d.open=true;});}writeHash();}
[q,mi,ma].forEach(function(x){x.addEventListener('input',function(){page=0;apply();});});
[st,me,gr].forEach(function(x){x.addEventListener('change',function(){page=0;apply();});});
$('prev').addEventListener('click',function(){page--;apply();});$('next').addEventListener('click',function(){page++;apply();});
$('expand').addEventListener('click',function(){list.querySelectorAll('details.ex').forEach(function(d){d.open=true;});});
window.addEventListener('hashchange',function(){readHash();apply();});
$('n-total').textContent=R.length;readHash();apply();
document.body.setAttribute('data-render-ms',String(Math.round(performance.now())));
document.body.setAttribute('data-ready','1');
})();
