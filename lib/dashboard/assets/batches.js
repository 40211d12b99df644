// @ts-check
/**
 * Batches: the list with progress and counts; one batch with its counts,
 * its graph (members, the batch, its then/catch/finally callbacks), its
 * members paged and filtered by state, and cancel.
 */
import { api, post, STATES } from './api.js';
import { actionButton, badge, batchLink, fact, h, jobLink, progressBar, table, td, time } from './dom.js';
import { enc, num, shortId } from './format.js';
import { drawGraph } from './graph.js';
import { act } from './router.js';

const BATCH_STATES = ['executing', 'succeeded', 'failed', 'cancelled'];
const COUNTS = ['pending', 'succeeded', 'failed', 'cancelled', 'skipped'];

/**
 * A hash with the query values that are set.
 * @param {string} path
 * @param {Record<string, string>} values
 */
function hashWith(path, values) {
  const q = new URLSearchParams(Object.entries(values).filter(([, v]) => v));
  return path + (q.toString() ? '?' + q.toString() : '');
}

const n = (/** @type {string} */ text) => ({ attrs: { class: 'n' }, text });

/**
 * @param {URLSearchParams} params
 * @returns {import('./router.js').View}
 */
export const batches = (params) => {
  const state = params.get('state') || '';
  const before = params.get('before') || '';
  const hashFor = (/** @type {Record<string, string>} */ changes) =>
    hashWith('#/batches', Object.assign({ state, before }, changes));
  return {
    title: 'Batches',
    nav: 'batches',
    toolbar: () => {
      const select = h(
        'select',
        {
          id: 'batch-state',
          'aria-label': 'state',
          onchange: () => {
            location.hash = hashFor({ state: select.value, before: '' });
          },
        },
        h('option', { value: '' }, 'all states'),
        BATCH_STATES.map((st) => h('option', { value: st, selected: st === state }, st)),
      );
      return h('div', { class: 'filters' }, select);
    },
    load: () =>
      api('/batches?limit=50' + (state ? '&state=' + enc(state) : '') + (before ? '&before=' + enc(before) : '')),
    render: (page) =>
      h(
        'div',
        null,
        table(
          ['batch', 'state', 'progress', ...COUNTS.map(n), n('total'), 'created', 'settled'],
          page.batches.map((/** @type {any} */ b) =>
            h(
              'tr',
              { 'data-id': b.id },
              td(batchLink(b.id, b.name || shortId(b.id))),
              td(badge(b.state)),
              td(progressBar(b.progress)),
              COUNTS.map((c) => td(num(b[c]), 'n' + (c === 'failed' && b[c] ? ' st-failed' : ''))),
              td(num(b.total), 'n'),
              td(time(b.createdAt)),
              td(time(b.completedAt)),
            ),
          ),
          'No ' + (state ? state + ' ' : '') + 'batches.',
        ),
        h(
          'p',
          { class: 'pager' },
          before ? h('a', { href: hashFor({ before: '' }) }, '« newest') : null,
          page.next ? h('a', { href: hashFor({ before: page.next }) }, 'older »') : null,
        ),
      ),
  };
};

/**
 * @param {string} id
 * @param {URLSearchParams} params
 * @returns {import('./router.js').View}
 */
export const batch = (id, params) => {
  const memberState = params.get('state') || '';
  const skip = Math.max(0, Number(params.get('skip')) || 0);
  const TAKE = 100;
  const hashFor = (/** @type {Record<string, string>} */ changes) =>
    hashWith('#/batches/' + enc(id), Object.assign({ state: memberState, skip: skip ? String(skip) : '' }, changes));
  const path = '/batches/' + enc(id);
  return {
    title: 'Batch ' + id,
    nav: 'batches',
    load: () =>
      Promise.all([
        api(path),
        api(path + '/graph'),
        api(path + '/members?take=' + TAKE + '&skip=' + skip + (memberState ? '&state=' + enc(memberState) : '')),
      ]),
    render: ([b, graph, members]) =>
      h(
        'div',
        { class: 'detail', 'data-state': b.state },
        h('h2', { class: 'detail-title' }, b.name || 'Batch', ' ', badge(b.state)),
        h('p', { class: 'mono muted' }, b.id),
        h(
          'div',
          { class: 'actions' },
          actionButton(
            'Cancel batch',
            b.state === 'executing',
            () =>
              act(
                'Cancel batch',
                'Cancel every member of ' +
                  (b.name || shortId(b.id)) +
                  ' that has not ended? Running members are asked to stop; finally callbacks still run.',
                'Cancel batch',
                () => post(path + '/cancel'),
                'Batch cancelled.',
              ),
            'danger',
          ),
        ),
        progressBar(
          b.progress,
          num(b.succeeded + b.failed + b.cancelled + b.skipped) + ' of ' + num(b.total) + ' ended',
        ),
        h(
          'dl',
          { class: 'facts' },
          COUNTS.map((c) => fact(c, num(b[c]))),
          fact('created', time(b.createdAt, true)),
          fact('started', time(b.startedAt)),
          fact('settled', time(b.completedAt)),
        ),
        h('section', null, h('h3', null, 'Graph'), drawGraph(graph, null)),
        h(
          'section',
          null,
          h('h3', null, 'Members'),
          h(
            'div',
            { class: 'filters' },
            h(
              'select',
              {
                'aria-label': 'member state',
                onchange: (/** @type {Event} */ e) => {
                  const select = /** @type {HTMLSelectElement} */ (e.target);
                  location.hash = hashFor({ state: select.value, skip: '' });
                },
              },
              h('option', { value: '' }, 'all states'),
              STATES.filter((st) => st !== 'scheduled').map((st) =>
                h('option', { value: st, selected: st === memberState }, st),
              ),
            ),
          ),
          table(
            ['job', 'name', 'state', n('attempt'), 'ended', 'error'],
            members.map((/** @type {any} */ j) =>
              h(
                'tr',
                { 'data-id': j.id },
                td(jobLink(j.id)),
                td(j.name),
                td(badge(j.state)),
                td(j.attempt + '/' + j.maxAttempts, 'n'),
                td(time(j.completedAt)),
                td(j.lastError ? h('span', { class: 'err' }, j.lastError.message) : '', 'wide'),
              ),
            ),
            'No ' + (memberState ? memberState + ' ' : '') + 'members.',
          ),
          h(
            'p',
            { class: 'pager' },
            skip ? h('a', { href: hashFor({ skip: String(Math.max(0, skip - TAKE)) }) }, '« previous') : null,
            members.length === TAKE ? h('a', { href: hashFor({ skip: String(skip + TAKE) }) }, 'next »') : null,
          ),
        ),
      ),
  };
};
