/**
 * The console's style sheet and its one small script, served from the admin port itself (no build
 * step, nothing from another origin). The pages read and work without the script: it only reloads a
 * page that asks for live refresh, while its box is ticked.
 */

export const CONSOLE_CSS = `
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;
  color:#1b1f24;background:#f6f7f9}
a{color:#0b57b0}
a:focus-visible,button:focus-visible,input:focus-visible,select:focus-visible{outline:3px solid #f0a000;
  outline-offset:1px}
.skip{position:absolute;left:-999px}.skip:focus{left:8px;top:8px;background:#fff;padding:6px;z-index:2}
header{display:flex;flex-wrap:wrap;justify-content:space-between;align-items:center;gap:8px;padding:8px 16px;
  background:#1d2733;color:#fff}
header nav{display:flex;flex-wrap:wrap;gap:14px;align-items:center}
header a{color:#dbe7ff}header a[aria-current=page]{color:#fff;font-weight:600;text-decoration-thickness:2px}
.brand{font-weight:700;margin-right:8px}
.who{margin:0;font-size:13px}.role{border:1px solid #9fb3c8;border-radius:3px;padding:0 5px;margin-left:4px}
main{padding:16px;max-width:1400px;margin:0 auto}
h1{font-size:22px;margin:4px 0 12px}h2{font-size:18px;margin:22px 0 8px}h3{font-size:16px;margin:16px 0 6px}
form.search{display:flex;flex-wrap:wrap;gap:10px;align-items:flex-end;background:#fff;border:1px solid #d5dae1;
  border-radius:6px;padding:12px}
form.search label{display:flex;flex-direction:column;font-size:13px;gap:2px}
form.search .q{flex:1 1 280px}
input,select{font:inherit;padding:5px 7px;border:1px solid #8a96a3;border-radius:4px;background:#fff;color:#1b1f24;
  min-width:0}
button,.button{font:inherit;padding:5px 12px;border-radius:4px;border:1px solid #0b57b0;background:#0b57b0;color:#fff;
  cursor:pointer;text-decoration:none;display:inline-block}
.button.secondary,button.secondary{background:#fff;color:#0b57b0}
.button.danger,button.danger{background:#a4161a;border-color:#a4161a;color:#fff}
.table-wrap{overflow-x:auto;background:#fff;border:1px solid #d5dae1;border-radius:6px;margin:8px 0}
table{border-collapse:collapse;width:100%;font-size:14px}
th,td{text-align:left;padding:6px 8px;border-bottom:1px solid #e4e7eb;vertical-align:top}
th{background:#eef1f4;font-weight:600;white-space:nowrap}
td.mono,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:13px;word-break:break-all}
time{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:13px;white-space:nowrap}
.badge{display:inline-block;padding:0 7px;border-radius:10px;font-size:13px;border:1px solid #7a8591;
  background:#eef1f4;color:#1b1f24;white-space:nowrap}
.s-delivered{background:#dff3e4;border-color:#2e7d32}.s-dead_letter,.s-failed{background:#fde2e1;border-color:#a4161a}
.s-retrying{background:#fff1d6;border-color:#9a6200}.s-paused,.s-waiting_turn{background:#e6ecff;border-color:#3451b2}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:4px 14px;background:#fff;border:1px solid #d5dae1;
  border-radius:6px;padding:12px;margin:8px 0}
dl.facts dt{font-weight:600}dl.facts dd{margin:0;word-break:break-all}
section.delivery{background:#fff;border:1px solid #d5dae1;border-radius:6px;padding:10px 12px;margin:10px 0}
section.delivery h3{margin-top:0}
.actions{display:flex;flex-wrap:wrap;gap:8px;margin:8px 0}
.series th{background:#f7f3e8}
pre{background:#fff;border:1px solid #d5dae1;border-radius:6px;padding:10px;overflow:auto;font-size:13px}
.notice{background:#e8f4ea;border:1px solid #2e7d32;border-radius:6px;padding:8px 12px}
.error{background:#fde2e1;border:1px solid #a4161a;border-radius:6px;padding:8px 12px}
.muted{color:#4a5561}
.facts-line{display:block;font-family:system-ui,sans-serif;font-size:13px;color:#4a5561;word-break:normal}
.pager{display:flex;gap:12px;align-items:center;margin:8px 0}
.live{font-size:13px}
table.cards th[scope=row] .actions{margin:6px 0 0}
@media (max-width:1500px){table.cards-wide thead{position:absolute;width:1px;height:1px;overflow:hidden;
  clip-path:inset(50%)}
  table.cards-wide,table.cards-wide tbody,table.cards-wide tr,table.cards-wide th,table.cards-wide td{display:block}
  table.cards-wide tr{border-bottom:2px solid #d5dae1;padding:4px 0}
  table.cards-wide th[scope=row]{background:#eef1f4;white-space:normal}
  table.cards-wide td{border:0;padding:2px 8px;display:grid;grid-template-columns:minmax(8em,40%) 1fr;gap:8px}
  table.cards-wide td::before{content:attr(data-label);font-weight:600}}
@media (max-width:900px){table.cards thead{position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%)}
  table.cards,table.cards tbody,table.cards tr,table.cards td{display:block}
  table.cards tr{border-bottom:2px solid #d5dae1;padding:4px 0}
  table.cards td{border:0;padding:2px 8px;display:grid;grid-template-columns:minmax(7em,35%) 1fr;gap:8px}
  table.cards td::before{content:attr(data-label);font-weight:600}}
@media (max-width:600px){main{padding:10px}dl.facts{grid-template-columns:1fr}dl.facts dd{margin-bottom:6px}
  form.search label{flex:1 1 100%}}
`;

export const CONSOLE_JS = `'use strict';
(function () {
  var main = document.querySelector('main[data-refresh]');
  if (!main) return;
  var seconds = Number(main.getAttribute('data-refresh')) || 5;
  var label = document.createElement('label');
  label.className = 'live';
  var box = document.createElement('input');
  box.type = 'checkbox';
  box.checked = sessionStorage.getItem('console-live') === '1';
  label.appendChild(box);
  label.appendChild(document.createTextNode(' live refresh every ' + seconds + ' s'));
  main.insertBefore(label, main.firstChild);
  var timer;
  function arm() {
    clearTimeout(timer);
    if (box.checked) timer = setTimeout(function () { location.reload(); }, seconds * 1000);
  }
  box.addEventListener('change', function () {
    sessionStorage.setItem('console-live', box.checked ? '1' : '0');
    arm();
  });
  arm();
})();
`;
