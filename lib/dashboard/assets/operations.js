// @ts-check
/**
 * Schedules (next and last run; pause, resume, one run now) and queues
 * (limits and where each came from, paused flag, live counts; pause and
 * resume). Both lists come sorted by name, so rows keep their place.
 */
import { api, post } from './api.js';
import { actionButton, badge, h, jobLink, table, td, time } from './dom.js';
import { duration, enc, num } from './format.js';
import { act } from './router.js';

const n = (/** @type {string} */ text) => ({ attrs: { class: 'n' }, text });
const running = () => h('span', { class: 'badge st-active' }, 'running');
const pausedBadge = () => h('span', { class: 'badge paused' }, 'paused');

/**
 * Pause or Resume, whichever applies, behind a confirmation that says what it does.
 * @param {'Schedule' | 'Queue'} kind
 * @param {string} name
 * @param {boolean} paused
 * @param {{ pause: string, resume: string, danger?: boolean }} effect what each does, after "Pause <name>?"
 */
function pauseToggle(kind, name, paused, effect) {
  const lower = kind.toLowerCase();
  const [verb, action, text] = paused ? ['Resume', 'resume', effect.resume] : ['Pause', 'pause', effect.pause];
  return actionButton(
    verb,
    true,
    () =>
      act(
        verb + ' ' + lower,
        verb + ' ' + name + '? ' + text,
        verb,
        () => post('/' + lower + 's/' + enc(name) + '/' + action),
        kind + ' ' + name + ' ' + action + 'd.',
      ),
    !paused && effect.danger ? 'danger' : undefined,
  );
}

/** @returns {import('./router.js').View} */
export const schedules = () => ({
  title: 'Schedules',
  nav: 'schedules',
  load: () => api('/schedules'),
  render: (/** @type {any[]} */ list) =>
    table(
      ['schedule', 'job', 'cron', 'source', 'service', 'state', 'next run', 'last run', 'last job', n('skipped'), ''],
      [...list].sort((a, b) => a.name.localeCompare(b.name)).map(scheduleRow),
      'No schedules.',
    ),
});

/** @param {any} sc */
function scheduleRow(sc) {
  const path = '/schedules/' + enc(sc.name);
  return h(
    'tr',
    { 'data-schedule': sc.name },
    td(h('strong', null, sc.name)),
    td(sc.jobName),
    td([h('code', null, sc.cron), h('div', { class: 'muted small' }, sc.timeZone)]),
    td(sc.source),
    td(sc.service ?? h('span', { class: 'muted' }, '—')),
    td(sc.paused ? pausedBadge() : running()),
    td(sc.paused ? h('span', { class: 'muted' }, 'paused') : time(sc.nextRunAt, true)),
    td(time(sc.lastRunAt, true)),
    td(
      sc.lastJobId
        ? [
            jobLink(sc.lastJobId),
            ' ',
            sc.lastJobState ? badge(sc.lastJobState) : h('span', { class: 'muted' }, 'deleted'),
          ]
        : '',
    ),
    td(num(sc.skippedCount), 'n'),
    td(
      h(
        'div',
        { class: 'actions' },
        pauseToggle('Schedule', sc.name, sc.paused, {
          pause: 'No tick becomes a job until it is resumed, on every instance.',
          resume: 'It ticks again from its next time; ticks missed while paused are not caught up.',
        }),
        actionButton('Run now', true, () =>
          act(
            'Run schedule now',
            'Start one run of ' + sc.name + ' now? Its ticks go on as before.',
            'Run now',
            () => post(path + '/run'),
            (r) => 'Started job ' + r.jobId + '.',
          ),
        ),
      ),
    ),
  );
}

/**
 * A limit and where it came from; a rate as "max per duration".
 * @param {{ value: any, source: string }} limit
 * @param {boolean} rate
 */
function limitText(limit, rate) {
  if (limit.value === null) return h('span', { class: 'muted' }, 'none');
  const text = rate ? limit.value.max + ' per ' + duration(limit.value.per) : String(limit.value);
  const title = limit.source === 'code' ? 'declared in code' : 'changed at run time';
  return [text, ' ', h('span', { class: 'source source-' + limit.source, title }, limit.source)];
}

const COUNTED = ['waiting', 'queued', 'scheduled', 'active'];

/**
 * A queue's running jobs allowed per group, its starts allowed per group, and the groups with a limit of their own.
 * @param {{ concurrency: number | null, rateLimit: { max: number, per: number } | null, overrides: Array<{ group: string, concurrency: number }> }} groups
 */
function groupLimits(groups) {
  if (groups.concurrency === null && groups.rateLimit === null && groups.overrides.length === 0) {
    return h('span', { class: 'muted' }, 'none');
  }
  return [
    groups.concurrency === null ? null : h('div', null, 'each ' + groups.concurrency),
    groups.rateLimit === null
      ? null
      : h('div', null, 'each ' + groups.rateLimit.max + ' per ' + duration(groups.rateLimit.per)),
    groups.overrides.map((o) =>
      h(
        'div',
        null,
        h('code', null, o.group),
        ': ' + o.concurrency + ' ',
        h('span', { class: 'source source-runtime', title: 'changed at run time' }, 'runtime'),
      ),
    ),
  ];
}

/** @returns {import('./router.js').View} */
export const queues = () => ({
  title: 'Queues',
  nav: 'queues',
  load: () => api('/queues'),
  render: (/** @type {any[]} */ list) =>
    table(
      ['queue', 'service', 'state', 'concurrency', 'rate limit', 'job limits', 'group limits', ...COUNTED.map(n), ''],
      list.map(queueRow),
      'No queues known yet.',
    ),
});

/** @param {any} q */
function queueRow(q) {
  return h(
    'tr',
    { 'data-queue': q.name },
    td(h('a', { href: '#/jobs?queue=' + enc(q.name) }, h('strong', null, q.name))),
    td(q.service ?? h('span', { class: 'muted' }, '—')),
    td(q.paused ? pausedBadge() : running()),
    td(limitText(q.concurrency, false)),
    td(limitText(q.rateLimit, true)),
    td(
      q.jobs.length
        ? q.jobs.map((/** @type {any} */ j) =>
            h(
              'div',
              null,
              h('code', null, j.name),
              ': ',
              j.concurrency.value !== null ? ['concurrency ', limitText(j.concurrency, false), ' '] : null,
              j.rateLimit.value !== null ? ['rate ', limitText(j.rateLimit, true)] : null,
            ),
          )
        : h('span', { class: 'muted' }, 'none'),
    ),
    td(groupLimits(q.groups)),
    COUNTED.map((c) =>
      td(q[c] ? h('a', { href: '#/jobs?queue=' + enc(q.name) + '&state=' + c }, num(q[c])) : '0', 'n'),
    ),
    td(
      pauseToggle('Queue', q.name, q.paused, {
        pause: 'Workers on every instance stop claiming its jobs; running ones finish; enqueueing goes on.',
        resume: 'Workers on every instance claim its jobs again.',
        danger: true,
      }),
    ),
  );
}
