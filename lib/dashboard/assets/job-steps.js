// @ts-check
/**
 * A job's finished steps and sleeps, in the order they were recorded, each
 * step's result folded; on a job that can be retried, each row offers to run
 * the job again from that step (POST …/retry with { fromStep }).
 */
import { post } from './api.js';
import { actionButton, details, h, table, td, time } from './dom.js';
import { enc, json, shortId } from './format.js';
import { act } from './router.js';

/** The states retry() takes, as the job's own Retry button reads them. */
const RETRYABLE = ['failed', 'cancelled', 'skipped'];

/**
 * @param {any} job
 * @param {any[]} steps in the order they were recorded, a later attempt answering them from storage
 */
export function stepsTable(job, steps) {
  const retryable = RETRYABLE.includes(job.state);
  const rows = steps.map((x, i) =>
    h(
      'tr',
      { 'data-step': x.name, class: 'step-' + x.kind },
      td(h('span', { class: 'mono' }, x.name)),
      td(x.kind),
      td(String(x.attempt), 'n'),
      td(time(x.completedAt)),
      td(x.kind === 'sleep' ? time(x.wakeAt) : ''),
      td(
        x.kind === 'step' && 'result' in x
          ? details('step:' + job.id + ':' + x.name, 'result', h('pre', { class: 'json' }, json(x.result)))
          : '',
        'wide',
      ),
      retryable ? td(h('div', { class: 'actions' }, retryFromHere(job, x.name, i, steps.length))) : null,
    ),
  );
  const headers = ['step', 'kind', { attrs: { class: 'n' }, text: 'attempt' }, 'finished', 'wakes', 'result'];
  return table(retryable ? [...headers, ''] : headers, rows);
}

/**
 * Runs the job again from the step at `index`: it and the ones recorded after it run again, the
 * ones before it keep their records.
 * @param {any} job
 * @param {string} name
 * @param {number} index
 * @param {number} count
 */
function retryFromHere(job, name, index, count) {
  const after = count - index - 1;
  const rerun = after === 0 ? 'It runs again' : 'It and the ' + after + ' recorded after it run again';
  const kept = index === 0 ? 'no earlier step is kept' : 'the ' + index + ' before it keep their records';
  return actionButton('Retry from here', true, () =>
    act(
      'Retry from step',
      'Queue ' + job.name + ' ' + shortId(job.id) + ' again from step "' + name + '"? ' + rerun + '; ' + kept + '.',
      'Retry',
      () => post('/jobs/' + enc(job.id) + '/retry', { fromStep: name }),
      'Queued again from step "' + name + '".',
    ),
  );
}
