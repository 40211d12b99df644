/**
 * The dashboard's one page: plain HTML and a small script that reads the
 * JSON endpoints beside it, so it needs no build step and no CDN. Every value
 * from the database goes into the page as text (textContent), never as
 * markup: payloads and error messages are user data.
 */
export function dashboardPage(title: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5rem; color: #1d1d1f; }
  h1 { font-size: 1.3rem; } h2 { font-size: 1.05rem; margin-top: 1.6rem; }
  table { border-collapse: collapse; } th, td { padding: .25rem .6rem; text-align: left; border-bottom: 1px solid #ddd; }
  td.n { text-align: right; font-variant-numeric: tabular-nums; }
  .failed { color: #b00020; } .active { color: #0b62c4; } .succeeded { color: #1b7f3b; } .dead { color: #999; }
  button { margin-right: .4rem; } pre { background: #f5f5f7; padding: .6rem; overflow: auto; max-height: 20rem; }
  #detail { border: 1px solid #ddd; padding: .8rem; margin-top: 1rem; } [hidden] { display: none; }
</style>
</head>
<body>
<h1>${escapeHtml(title)}</h1>
<p id="status">Loading…</p>
<h2>Queues</h2>
<table id="queues"><thead><tr><th>queue</th><th>waiting</th><th>queued</th><th>scheduled</th><th>active</th>
<th>succeeded</th><th>failed</th><th>cancelled</th><th>skipped</th></tr></thead><tbody></tbody></table>
<h2>Workers</h2>
<table id="workers"><thead><tr><th>id</th><th>queues</th><th>concurrency</th><th>running</th><th>last heartbeat</th><th>alive</th></tr></thead><tbody></tbody></table>
<h2>Jobs</h2>
<label>State <select id="state">
  <option value="failed">failed</option><option value="active">active</option><option value="queued">queued</option>
  <option value="waiting">waiting</option><option value="succeeded">succeeded</option><option value="cancelled">cancelled</option>
  <option value="skipped">skipped</option><option value="">any</option>
</select></label>
<table id="jobs"><thead><tr><th>id</th><th>name</th><th>queue</th><th>state</th><th>attempt</th><th>created</th><th>error</th></tr></thead><tbody></tbody></table>
<p><button id="more" hidden>Older jobs</button></p>
<section id="detail" hidden>
  <h2 id="detail-title"></h2>
  <p><button id="retry">Retry</button><button id="cancel">Cancel</button><button id="close">Close</button> <span id="action"></span></p>
  <pre id="detail-body"></pre>
</section>
<script>
const base = location.pathname.replace(/\\/$/, '') + '/api';
const $ = (id) => document.getElementById(id);
const cell = (text, cls) => { const td = document.createElement('td'); td.textContent = text ?? ''; if (cls) td.className = cls; return td; };
const row = (cells) => { const tr = document.createElement('tr'); for (const c of cells) tr.append(c); return tr; };
const when = (iso) => iso ? new Date(iso).toLocaleString() : '';
async function api(path, init) {
  const res = await fetch(base + path, init);
  if (!res.ok) throw new Error((await res.json().catch(() => ({}))).message || res.statusText);
  return res.status === 204 ? null : res.json();
}
let shown = null;
// The list grows by a page per "Older jobs" click, up to the API's 500 a request.
let limit = 50;
async function refresh() {
  try {
    const [stats, workers, page] = await Promise.all([api('/stats'), api('/workers'), api('/jobs?limit=' + limit + '&state=' + encodeURIComponent($('state').value))]);
    const states = ['waiting', 'queued', 'scheduled', 'active', 'succeeded', 'failed', 'cancelled', 'skipped'];
    $('queues').tBodies[0].replaceChildren(...Object.entries(stats.queues).map(([q, c]) =>
      row([cell(q), ...states.map((s) => cell(String(c[s]), 'n' + (c[s] && s === 'failed' ? ' failed' : '')))])));
    $('workers').tBodies[0].replaceChildren(...workers.map((w) => row([cell(w.id, w.alive ? '' : 'dead'),
      cell(w.queues.length ? w.queues.join(', ') : 'all'), cell(String(w.concurrency), 'n'), cell(String(w.active), 'n'),
      cell(when(w.lastHeartbeat)), cell(w.alive ? 'yes' : 'no', w.alive ? 'succeeded' : 'dead')])));
    const none = row([cell('No ' + ($('state').value || 'matching') + ' jobs.')]);
    none.firstChild.colSpan = 7;
    $('jobs').tBodies[0].replaceChildren(...(page.jobs.length ? [] : [none]), ...page.jobs.map((j) => {
      const link = document.createElement('a'); link.href = '#'; link.textContent = j.id;
      link.onclick = (e) => { e.preventDefault(); show(j.id); };
      const first = document.createElement('td'); first.append(link);
      return row([first, cell(j.name), cell(j.queue), cell(j.state, j.state), cell(j.attempt + '/' + j.maxAttempts, 'n'),
        cell(when(j.createdAt)), cell(j.lastError ? j.lastError.message : '')]);
    }));
    $('more').hidden = page.next === null || limit >= 500;
    $('status').textContent = 'Updated ' + new Date().toLocaleTimeString() + ' · finished counts since ' + when(stats.since);
    if (shown) await show(shown, true);
  } catch (error) {
    $('status').textContent = 'Could not load: ' + error.message;
  }
}
async function show(id, quiet) {
  shown = id;
  const job = await api('/jobs/' + encodeURIComponent(id));
  $('detail').hidden = false;
  $('detail-title').textContent = job.name + ' ' + job.id + ' · ' + job.state;
  $('detail-body').textContent = JSON.stringify(job, null, 2);
  $('retry').disabled = !['failed', 'cancelled', 'skipped'].includes(job.state);
  $('cancel').disabled = !['waiting', 'queued', 'active'].includes(job.state);
  if (!quiet) $('action').textContent = '';
}
async function act(what) {
  try {
    await api('/jobs/' + encodeURIComponent(shown) + '/' + what, { method: 'POST' });
    $('action').textContent = what === 'retry' ? 'Queued again.' : 'Cancel requested.';
    await refresh();
  } catch (error) {
    $('action').textContent = error.message;
  }
}
$('retry').onclick = () => act('retry');
$('cancel').onclick = () => act('cancel');
$('close').onclick = () => { shown = null; $('detail').hidden = true; };
$('state').onchange = () => { limit = 50; refresh(); };
$('more').onclick = () => { limit = Math.min(500, limit + 50); refresh(); };
refresh();
setInterval(refresh, 2000);
</script>
</body>
</html>`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
