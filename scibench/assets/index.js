
(function(){var E=[];window.__errors=E;window.addEventListener('error',function(e){E.push(String(e.message));document.body.setAttribute('data-errors',E.join(' | '));});
var q=document.getElementById('f-runs'),rows=[].slice.call(document.querySelectorAll('#runs tbody tr'));
function f(){var t=q.value.toLowerCase();var n=0;rows.forEach(function(r){var ok=!t||r.textContent.toLowerCase().indexOf(t)>=0;r.style.display=ok?'':'none';n+=ok;});document.getElementById('runs').setAttribute('data-shown',n);}
q.addEventListener('input',f);var h=decodeURIComponent(location.hash.slice(1));if(h.indexOf('q=')==0)q.value=h.slice(2);f();
document.body.setAttribute('data-ready','1');})();
