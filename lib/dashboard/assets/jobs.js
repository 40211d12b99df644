// @ts-check
/**
 * The jobs list: filters by state (`scheduled` included), queue and name,
 * search by the start of an id, newest first and paged by key (so rows keep
 * their order), ticked rows for bulk retry and cancel, and "every match"
 * bulk actions, each behind a confirmation.
 */
import { api, post, STATES } from './api.js';
import { actionButton, badge, h, jobLink, progressBar, table, td, time } from './dom.js';
import { act } from './router.js';

const PAGE = 50;
/** The ticked rows' ids. */
let selected = new Set();
/** @type {string[]} */
let knownQueues = [];

/** What the list is filtered by; '' is no filter. @typedef {{ state: string, queue: string, name: string, contains: string, id: string, before: string }} Filter */

/** @param {Partial<Filter>} params */
function jobsHash(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) q.set(k, v);
  const text = q.toString();
  return '#/jobs' + (text ? '?' + text : '');
}

/**
 * @param {URLSearchParams} params
 * @returns {import('./router.js').View}
 */
export const jobs = (params) => {
  /** @type {Filter} */
  const filter = {
    state: params.get('state') || '',
    queue: params.get('queue') || '',
    name: params.get('name') || '',
    contains: params.get('contains') || '',
    id: params.get('id') || '',
    before: params.get('before') || '',
  };
  selected = new Set();
  const query = () => {
    const q = new URLSearchParams({ limit: String(PAGE) });
    for (const k of /** @type {const} */ (['state', 'queue', 'name', 'id', 'before']))
      if (filter[k]) q.set(k, filter[k]);
    if (filter.contains) q.set('nameContains', filter.contains);
    return '/jobs?' + q.toString();
  };
  const go = (/** @type {Partial<Filter>} */ changes) => {
    location.hash = jobsHash(Object.assign({}, filter, { before: '' }, changes));
  };
  return {
    title: 'Jobs',
    nav: 'jobs',
    toolbar: () => {
      const state = h(
        'select',
        { id: 'filter-state', 'aria-label': 'state', onchange: () => go({ state: state.value }) },
        h('option', { value: '' }, 'all states'),
        STATES.map((st) => h('option', { value: st, selected: st === filter.state }, st)),
      );
      const queue = h(
        'select',
        { id: 'filter-queue', 'aria-label': 'queue', onchange: () => go({ queue: queue.value }) },
        h('option', { value: '' }, 'all queues'),
      );
      const fillQueues = (/** @type {string[]} */ names) => {
        const all = [...new Set([...names, ...(filter.queue ? [filter.queue] : [])])].sort();
        queue.replaceChildren(
          h('option', { value: '' }, 'all queues'),
          ...all.map((n) => h('option', { value: n, selected: n === filter.queue }, n)),
        );
      };
      fillQueues(knownQueues);
      api('/queues')
        .then((/** @type {Array<{ name: string }>} */ qs) => {
          knownQueues = qs.map((q) => q.name);
          fillQueues(knownQueues);
        })
        .catch(() => undefined);
      const name = h('input', {
        id: 'filter-name',
        type: 'search',
        placeholder: 'job name',
        value: filter.name,
        'aria-label': 'job name',
      });
      const contains = h('input', {
        id: 'filter-contains',
        type: 'search',
        placeholder: 'name contains…',
        value: filter.contains,
        'aria-label': 'name contains',
      });
      const id = h('input', {
        id: 'filter-id',
        type: 'search',
        placeholder: 'id starts with…',
        value: filter.id,
        'aria-label': 'id prefix',
        class: 'mono',
      });
      const submit = (/** @type {Event} */ e) => {
        e.preventDefault();
        go({ name: name.value.trim(), contains: contains.value.trim(), id: id.value.trim() });
      };
      return h(
        'form',
        { class: 'filters', onsubmit: submit },
        state,
        queue,
        name,
        contains,
        id,
        h('button', { type: 'submit' }, 'Search'),
        filter.state || filter.queue || filter.name || filter.contains || filter.id
          ? h('a', { href: '#/jobs', class: 'clear' }, 'clear filters')
          : null,
      );
    },
    load: () => api(query()),
    render: (page) => {
      // Ticks survive refreshes, for rows still listed.
      /** @type {any[]} */
      const listed = page.jobs;
      const ids = new Set(listed.map((j) => j.id));
      for (const id of [...selected]) if (!ids.has(id)) selected.delete(id);
      const bar = bulkBar(filter, listed.length > 0);
      const all = h('input', {
        type: 'checkbox',
        'aria-label': 'select all',
        checked: listed.length > 0 && selected.size === listed.length,
        onchange: () => {
          for (const j of listed) {
            if (all.checked) selected.add(j.id);
            else selected.delete(j.id);
          }
          refreshTicks();
        },
      });
      const refreshTicks = () => {
        for (const box of /** @type {NodeListOf<HTMLInputElement>} */ (document.querySelectorAll('input[data-job]'))) {
          box.checked = selected.has(box.dataset.job);
        }
        bar.update();
      };
      const rows = listed.map((j) => jobRow(j, bar.update));
      const pager = h(
        'p',
        { class: 'pager' },
        filter.before ? h('a', { href: jobsHash(Object.assign({}, filter, { before: '' })) }, '« newest') : null,
        page.next
          ? h('a', { href: jobsHash(Object.assign({}, filter, { before: page.next })), id: 'older' }, 'older »')
          : null,
      );
      const n = (/** @type {string} */ text) => ({ attrs: { class: 'n' }, text });
      return h(
        'div',
        null,
        bar.el,
        table(
          [
            { attrs: { class: 'tick' }, text: all },
            'id',
            'name',
            'queue',
            'state',
            n('attempt'),
            'created',
            'due / ended',
            'progress / error',
          ],
          rows,
          describeEmpty(filter),
        ),
        pager,
      );
    },
  };
};

/**
 * One listed job, its tick box first.
 * @param {any} j
 * @param {() => void} ticked
 */
function jobRow(j, ticked) {
  const box = h('input', {
    type: 'checkbox',
    'data-job': j.id,
    'aria-label': 'select ' + j.id,
    checked: selected.has(j.id),
    onchange: () => {
      if (box.checked) selected.add(j.id);
      else selected.delete(j.id);
      ticked();
    },
  });
  const due = j.state === 'queued' && new Date(j.runAt) > new Date();
  const error = j.lastError && j.state !== 'succeeded';
  return h(
    'tr',
    { 'data-id': j.id, class: selected.has(j.id) ? 'ticked' : '' },
    td(box),
    td(jobLink(j.id)),
    td(j.name),
    td(j.queue),
    td(badge(j.state)),
    td(j.attempt + '/' + j.maxAttempts, 'n'),
    td(time(j.createdAt)),
    td(due ? time(j.runAt, true) : j.completedAt ? time(j.completedAt) : ''),
    td(
      j.progress !== null && j.state === 'active'
        ? progressBar(j.progress)
        : error
          ? h('span', { class: 'err', title: j.lastError.message }, j.lastError.message)
          : '',
      'wide',
    ),
  );
}

/** @param {Filter} f */
function describeEmpty(f) {
  return (
    'No ' +
    (f.state ? f.state + ' ' : '') +
    'jobs' +
    (f.queue ? ' in queue ' + f.queue : '') +
    (f.name ? ' named ' + f.name : '') +
    (f.contains ? ' whose name contains ' + f.contains : '') +
    (f.id ? ' with an id starting ' + f.id : '') +
    '.'
  );
}

/**
 * The bulk bar: ticked rows, or every job the filter matches.
 * @param {Filter} filter
 * @param {boolean} listsAny whether the page lists a job
 */
function bulkBar(filter, listsAny) {
  const count = h('span', { class: 'muted' });
  const some = () => selected.size + ' selected job(s)';
  const retrySel = actionButton('Retry selected', false, () => bulk('retry', { ids: [...selected] }, some()));
  const cancelSel = actionButton(
    'Cancel selected',
    false,
    () => bulk('cancel', { ids: [...selected] }, some()),
    'danger',
  );
  const matching = Object.assign(
    { all: true },
    filter.state ? { state: [filter.state] } : {},
    filter.queue ? { queue: filter.queue } : {},
    filter.name ? { name: filter.name } : {},
    filter.id ? { idPrefix: filter.id } : {},
  );
  const what =
    'every ' +
    (filter.state || '') +
    ' job' +
    (filter.queue ? ' of queue ' + filter.queue : '') +
    (filter.name ? ' named ' + filter.name : '') +
    (filter.id ? ' whose id starts ' + filter.id : '');
  // The bulk actions take exact names only: a part of a name acts on ticked rows.
  const canRetryAll = !filter.contains && ['failed', 'cancelled', 'skipped'].includes(filter.state);
  const canCancelAll = !filter.contains && ['waiting', 'queued', 'scheduled', 'active'].includes(filter.state);
  const el = h(
    'div',
    { class: 'bulk' },
    count,
    retrySel,
    cancelSel,
    canRetryAll && listsAny ? actionButton('Retry all matching', true, () => bulk('retry', matching, what)) : null,
    canCancelAll && listsAny
      ? actionButton('Cancel all matching', true, () => bulk('cancel', matching, what), 'danger')
      : null,
  );
  const update = () => {
    count.textContent = selected.size ? selected.size + ' selected' : 'Tick jobs for bulk actions';
    retrySel.disabled = selected.size === 0;
    cancelSel.disabled = selected.size === 0;
    for (const tr of /** @type {NodeListOf<HTMLElement>} */ (document.querySelectorAll('tr[data-id]'))) {
      tr.classList.toggle('ticked', selected.has(tr.dataset.id));
    }
  };
  update();
  return { el, update };
}

/**
 * @param {'retry' | 'cancel'} action
 * @param {object} body
 * @param {string} what
 */
function bulk(action, body, what) {
  const verb = action === 'retry' ? 'Retry' : 'Cancel';
  const text =
    action === 'retry'
      ? 'Queue ' + what + ' again with fresh attempts? Only failed, cancelled or skipped jobs are retried.'
      : 'Cancel ' + what + '? Queued and waiting jobs end at once; running ones are asked to stop.';
  return act(
    verb + ' jobs',
    text,
    verb,
    () => post('/jobs/' + action, body),
    (r) => {
      selected.clear();
      return action === 'retry'
        ? r.count + ' job(s) queued again.'
        : r.cancelled + ' job(s) cancelled, ' + r.requested + ' running job(s) asked to stop.';
    },
  );
}
