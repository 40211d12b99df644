// @ts-check
/**
 * One job: state and timings, progress, the attempts table (worker, start,
 * end, duration, outcome, error with its stack folded), its finished steps
 * and sleeps (results folded), its onFailure hook's state, payload and result folded, its parents and
 * children with their triggers drawn as a graph, its batch; retry, cancel,
 * run now and delete behind a confirmation (retry from a step: job-steps.js).
 */
import { api, post } from './api.js';
import { actionButton, badge, batchLink, details, fact, h, jobLink, progressBar, table, td, time } from './dom.js';
import { errorBlock, failureHook } from './job-errors.js';
import { stepsTable } from './job-steps.js';
import { between, enc, json, shortId, when } from './format.js';
import { drawGraph } from './graph.js';
import { act, navigate } from './router.js';

/**
 * @param {string} id
 * @returns {import('./router.js').View}
 */
export const job = (id) => ({
  title: 'Job ' + id,
  nav: 'jobs',
  load: async () => {
    const job = await api('/jobs/' + enc(id));
    const [graph, steps] = await Promise.all([
      job.parents.length || job.children.length || job.invokedBy || job.invoked.length ? flowGraph(job) : null,
      job.steps.length ? api('/jobs/' + enc(id) + '/steps').catch(() => job.steps) : [],
    ]);
    return { job, graph, steps };
  },
  render: ({ job, graph, steps }) =>
    h(
      'div',
      { class: 'detail', 'data-state': job.state },
      h(
        'h2',
        { class: 'detail-title' },
        job.name,
        ' ',
        badge(job.state),
        job.cancelRequested && job.state === 'active' ? h('span', { class: 'badge paused' }, 'cancel requested') : null,
      ),
      h('p', { class: 'mono muted' }, job.id),
      jobActions(job),
      h(
        'dl',
        { class: 'facts' },
        fact('queue', h('a', { href: '#/jobs?queue=' + enc(job.queue) }, job.queue)),
        fact('attempts', job.attempt + ' of ' + job.maxAttempts),
        fact('priority', String(job.priority)),
        fact('created', time(job.createdAt, true)),
        fact(job.state === 'queued' || job.state === 'waiting' ? 'due' : 'was due', time(job.runAt, true)),
        fact('started', time(job.startedAt)),
        fact('ended', time(job.completedAt)),
        fact('run time', job.startedAt && job.completedAt ? between(job.startedAt, job.completedAt) : '—'),
        fact('worker', job.workerId ? h('span', { class: 'mono' }, job.workerId) : '—'),
        fact(
          'batch',
          job.batch
            ? h(
                'span',
                null,
                batchLink(job.batch.id, job.batch.name || shortId(job.batch.id)),
                ' ',
                badge(job.batch.state),
                ' ' + job.batch.succeeded + '/' + job.batch.total + ' succeeded',
              )
            : '—',
        ),
      ),
      job.progress !== null
        ? h(
            'section',
            null,
            h('h3', null, 'Progress'),
            progressBar(
              job.progress,
              Math.round(job.progress * 100) + '%' + (job.progressMessage ? ' · ' + job.progressMessage : ''),
            ),
          )
        : null,
      job.lastError && job.state !== 'succeeded'
        ? h('section', null, h('h3', null, 'Last error'), errorBlock('last-error:' + job.id, job.lastError))
        : null,
      failureHook(job),
      h('section', null, h('h3', null, 'Attempts'), attemptsTable(job)),
      steps.length ? h('section', null, h('h3', null, 'Steps'), stepsTable(job, steps)) : null,
      h(
        'section',
        null,
        h('h3', null, 'Payload'),
        details('payload:' + job.id, 'payload', h('pre', { class: 'json', id: 'payload' }, json(job.payload)), true),
      ),
      // A job without a context has {}: nothing to show.
      job.context !== null && typeof job.context === 'object' && Object.keys(job.context).length === 0
        ? null
        : h('section', null, h('h3', null, 'Context'), h('pre', { class: 'json', id: 'context' }, json(job.context))),
      job.state === 'succeeded' || job.result !== null
        ? h(
            'section',
            null,
            h('h3', null, 'Result'),
            details('result:' + job.id, 'result', h('pre', { class: 'json', id: 'result' }, json(job.result)), true),
          )
        : null,
      dependencies(job, graph),
    ),
});

// A flow's graph walks up to 40 jobs: read again every 15 s, or when this job's edges changed state.
/** @type {Map<string, { key: string, at: number, graph: any }>} */
const graphCache = new Map();

/** @param {any} job */
async function flowGraph(job) {
  /** @type {any[]} */
  const edges = [...job.parents, ...job.children];
  const key = job.id + ':' + job.state + ':' + edges.map((e) => e.other.state).join(',');
  const hit = graphCache.get(job.id);
  if (hit && hit.key === key && Date.now() - hit.at < 15000) return hit.graph;
  const graph = await api('/jobs/' + enc(job.id) + '/graph').catch(() => null);
  graphCache.set(job.id, { key, at: Date.now(), graph });
  return graph;
}

/** @param {any} job */
function jobActions(job) {
  const retryable = ['failed', 'cancelled', 'skipped'].includes(job.state);
  const cancellable = ['waiting', 'queued', 'active'].includes(job.state);
  const later = job.state === 'queued' && new Date(job.runAt).getTime() > Date.now();
  const ended = ['succeeded', 'failed', 'cancelled', 'skipped'].includes(job.state);
  const label = job.name + ' ' + shortId(job.id);
  const path = '/jobs/' + enc(job.id);
  const running = job.state === 'active';
  return h(
    'div',
    { class: 'actions' },
    actionButton('Retry', retryable, () =>
      act(
        'Retry job',
        'Queue ' + label + ' again with fresh attempts?',
        'Retry',
        () => post(path + '/retry'),
        'Queued again.',
      ),
    ),
    actionButton('Run now', later, () =>
      act(
        'Run now',
        'Make ' + label + ' due now instead of ' + when(job.runAt) + '?',
        'Run now',
        () => post(path + '/run-now'),
        'Due now.',
      ),
    ),
    actionButton(
      'Cancel',
      cancellable,
      () =>
        act(
          'Cancel job',
          'Cancel ' + label + '?' + (running ? ' It is running: its signal aborts and it ends cancelled.' : ''),
          'Cancel job',
          () => post(path + '/cancel'),
          running ? 'Cancel requested.' : 'Cancelled.',
        ),
      'danger',
    ),
    actionButton(
      'Delete',
      ended,
      () =>
        act(
          'Delete job',
          'Delete ' + label + ' and its history for good?',
          'Delete',
          async () => {
            await post(path + '/delete');
            navigate('#/jobs');
          },
          'Deleted.',
        ),
      'danger',
    ),
  );
}

/**
 * An attempt's trace: a link where the dashboard has a traceUrl (the server
 * builds it, its ids URL-encoded), else the id as text.
 * @param {any} x
 */
function traceCell(x) {
  if (!x.traceId) return '—';
  const label = x.traceId.slice(0, 8) + '…';
  const title = 'trace ' + x.traceId + (x.spanId ? ', span ' + x.spanId : '');
  return x.traceUrl
    ? h('a', { class: 'mono trace', href: x.traceUrl, target: '_blank', rel: 'noopener noreferrer', title }, label)
    : h('span', { class: 'mono', title }, label);
}

/**
 * Older attempts the view added, kept across its refreshes (which draw the
 * body again): for one job, from the cursor its detail gave.
 * @type {{ id: string, from: string, rows: any[], after: string | null } | null}
 */
let older = null;

/**
 * The latest attempts (the detail holds those) and, when older ones exist,
 * a button that adds them a page at a time above the ones shown.
 * @param {any} job
 */
function attemptsTable(job) {
  // Newer attempts move the detail's window: rows added before it moved no longer join it.
  if (older && (older.id !== job.id || older.from !== job.moreExecutions)) older = null;
  /** @type {any[]} */
  const executions = [...(older ? older.rows : []), ...job.executions];
  const n = (/** @type {string} */ text) => ({ attrs: { class: 'n' }, text });
  const grid = table(
    [n('#'), 'worker', 'claimed', 'started', 'ended', n('duration'), 'outcome', 'error', 'trace'],
    executions.map((x) => attemptRow(job, x)),
    job.state === 'waiting' ? 'Not started: it waits for its parents.' : 'Not started yet.',
  );
  const after = older ? older.after : job.moreExecutions;
  if (!after) return grid;
  const state = older ?? { id: job.id, from: job.moreExecutions, rows: [], after };
  const button = h('button', { type: 'button', id: 'older-attempts', onclick: () => more() }, 'Show older attempts');
  const more = () => {
    if (!state.after) return;
    button.setAttribute('disabled', '');
    api('/jobs/' + enc(job.id) + '/executions?limit=50&after=' + enc(state.after))
      .then((/** @type {{ executions: any[], next: string | null }} */ page) => {
        const body = grid.querySelector('tbody');
        // The page is newest first; each older row goes above the ones shown.
        for (const x of page.executions) body?.insertBefore(attemptRow(job, x), body.firstChild);
        state.rows = [...[...page.executions].reverse(), ...state.rows];
        state.after = page.next;
        older = state;
        if (state.after) button.removeAttribute('disabled');
        else button.remove();
      })
      .catch(() => button.removeAttribute('disabled'));
  };
  return h('div', null, grid, button);
}

/**
 * @param {any} job
 * @param {any} x one attempt
 */
function attemptRow(job, x) {
  return h(
    'tr',
    { 'data-attempt': x.attempt, class: 'attempt-' + x.state },
    td(String(x.attempt), 'n'),
    td(x.workerId ? h('span', { class: 'mono', title: x.workerId }, x.workerId) : '—'),
    td(time(x.claimedAt)),
    td(time(x.startedAt)),
    td(time(x.endedAt)),
    td(x.startedAt && x.endedAt ? between(x.startedAt, x.endedAt) : x.state === 'active' ? 'running' : '', 'n'),
    td(badge(x.state)),
    td(
      x.error
        ? [
            h('span', { class: 'err' }, x.error.name + ': ' + x.error.message),
            x.error.stack
              ? details('stack:' + job.id + ':' + x.attempt, 'stack', h('pre', { class: 'stack' }, x.error.stack))
              : null,
          ]
        : '',
      'wide',
    ),
    td(traceCell(x)),
  );
}

/**
 * @param {any} job
 * @param {any} graph
 */
function dependencies(job, graph) {
  if (!job.parents.length && !job.children.length && !job.invokedBy && !job.invoked.length) return null;
  const edgeRow = (/** @type {any} */ e) =>
    h(
      'tr',
      null,
      td(
        e.kind === 'batch'
          ? batchLink(e.other.id, e.other.name || 'batch')
          : jobLink(e.other.id, e.other.name || shortId(e.other.id)),
      ),
      td(badge(e.other.state)),
      td(e.on),
      td(e.parentOutcome || h('span', { class: 'muted' }, 'not yet')),
    );
  return h(
    'section',
    null,
    h('h3', null, 'Dependencies'),
    graph ? drawGraph(graph, job.id) : null,
    job.parents.length
      ? h(
          'div',
          null,
          h('h4', null, 'Waits for'),
          table(['parent', 'state', 'trigger', 'parent outcome'], job.parents.map(edgeRow)),
        )
      : null,
    job.children.length
      ? h(
          'div',
          null,
          h('h4', null, 'Waited on by'),
          table(['child', 'state', 'trigger', 'parent outcome'], job.children.map(edgeRow)),
          job.moreChildren ? h('p', { class: 'muted' }, 'More children than listed here.') : null,
        )
      : null,
    job.invokedBy
      ? h(
          'p',
          { id: 'invoked-by' },
          'Invoked by ',
          jobLink(job.invokedBy, shortId(job.invokedBy)),
          ' (ctx.invoke), which waits for it.',
        )
      : null,
    job.invoked.length
      ? h(
          'div',
          { id: 'invoked' },
          h('h4', null, 'Child jobs (ctx.invoke)'),
          table(
            ['child', 'state'],
            job.invoked.map((/** @type {any} */ c) => h('tr', null, td(jobLink(c.id, c.name)), td(badge(c.state)))),
          ),
        )
      : null,
  );
}
