/**
 * Schedules (next and last run; pause, resume, one run now) and queues
 * (limits and where each came from, paused flag, live counts; pause and
 * resume). Both lists come sorted by name, so rows keep their place.
 */
export const SCRIPT_OPERATIONS = String.raw`
views.schedules = () => ({
  title: 'Schedules',
  nav: 'schedules',
  load: () => api('/schedules'),
  render: (list) => table(['schedule', 'job', 'cron', 'source', 'state', 'next run', 'last run', 'last job', { attrs: { class: 'n' }, text: 'skipped' }, ''],
    [...list].sort((a, b) => a.name.localeCompare(b.name)).map((sc) => h('tr', { 'data-schedule': sc.name },
      td(h('strong', null, sc.name)), td(sc.jobName),
      td([h('code', null, sc.cron), h('div', { class: 'muted small' }, sc.timeZone)]),
      td(sc.source), td(sc.paused ? h('span', { class: 'badge paused' }, 'paused') : h('span', { class: 'badge st-active' }, 'running')),
      td(sc.paused ? h('span', { class: 'muted' }, 'paused') : time(sc.nextRunAt, true)), td(time(sc.lastRunAt, true)),
      td(sc.lastJobId ? [jobLink(sc.lastJobId), ' ', sc.lastJobState ? badge(sc.lastJobState) : h('span', { class: 'muted' }, 'deleted')] : ''),
      td(num(sc.skippedCount), 'n'),
      td(h('div', { class: 'actions' },
        sc.paused
          ? actionButton('Resume', true, () => act('Resume schedule', 'Resume ' + sc.name + '? It ticks again from its next time; ticks missed while paused are not caught up.', 'Resume',
            () => post('/schedules/' + enc(sc.name) + '/resume'), 'Schedule ' + sc.name + ' resumed.'))
          : actionButton('Pause', true, () => act('Pause schedule', 'Pause ' + sc.name + '? No tick becomes a job until it is resumed, on every instance.', 'Pause',
            () => post('/schedules/' + enc(sc.name) + '/pause'), 'Schedule ' + sc.name + ' paused.')),
        actionButton('Run now', true, () => act('Run schedule now', 'Start one run of ' + sc.name + ' now? Its ticks go on as before.', 'Run now',
          () => post('/schedules/' + enc(sc.name) + '/run'), (r) => 'Started job ' + r.jobId + '.')))))),
    'No schedules.'),
});

function limitText(limit, rate) {
  if (limit.value === null) return h('span', { class: 'muted' }, 'none');
  const text = rate ? limit.value.max + ' per ' + duration(limit.value.per) : String(limit.value);
  return [text, ' ', h('span', { class: 'source source-' + limit.source, title: limit.source === 'code' ? 'declared in code' : 'changed at run time' }, limit.source)];
}

views.queues = () => ({
  title: 'Queues',
  nav: 'queues',
  load: () => api('/queues'),
  render: (queues) => table(['queue', 'state', 'concurrency', 'rate limit', 'job limits',
    ...['waiting', 'queued', 'scheduled', 'active'].map((c) => ({ attrs: { class: 'n' }, text: c })), ''],
    queues.map((q) => h('tr', { 'data-queue': q.name },
      td(h('a', { href: '#/jobs?queue=' + enc(q.name) }, h('strong', null, q.name))),
      td(q.paused ? h('span', { class: 'badge paused' }, 'paused') : h('span', { class: 'badge st-active' }, 'running')),
      td(limitText(q.concurrency, false)), td(limitText(q.rateLimit, true)),
      td(q.jobs.length ? q.jobs.map((j) => h('div', null, h('code', null, j.name), ': ',
        j.concurrency.value !== null ? ['concurrency ', limitText(j.concurrency, false), ' '] : null,
        j.rateLimit.value !== null ? ['rate ', limitText(j.rateLimit, true)] : null)) : h('span', { class: 'muted' }, 'none')),
      ['waiting', 'queued', 'scheduled', 'active'].map((c) => td(q[c] ? h('a', { href: '#/jobs?queue=' + enc(q.name) + '&state=' + c }, num(q[c])) : '0', 'n')),
      td(q.paused
        ? actionButton('Resume', true, () => act('Resume queue', 'Resume ' + q.name + '? Workers on every instance claim its jobs again.', 'Resume',
          () => post('/queues/' + enc(q.name) + '/resume'), 'Queue ' + q.name + ' resumed.'))
        : actionButton('Pause', true, () => act('Pause queue', 'Pause ' + q.name + '? Workers on every instance stop claiming its jobs; running ones finish; enqueueing goes on.', 'Pause',
          () => post('/queues/' + enc(q.name) + '/pause'), 'Queue ' + q.name + ' paused.'), 'danger')))),
    'No queues known yet.'),
});

// Start: follow the hash, refresh every few seconds while the tab is visible.
const onNavigation = () => { if ((location.hash || '#/') !== routedHash) route(); };
window.addEventListener('hashchange', onNavigation);
window.addEventListener('popstate', onNavigation);
document.addEventListener('visibilitychange', () => { if (!document.hidden) refresh(); });
setInterval(() => { if (!document.hidden && !$('confirm').open) refresh(); }, REFRESH_MS);
route();
`;
