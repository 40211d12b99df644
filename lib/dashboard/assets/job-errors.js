// @ts-check
/** A job's errors: the last attempt's, and where its onFailure hook stands. */
import { badge, details, fact, h, time } from './dom.js';

/**
 * @param {string} key
 * @param {{ name: string, message: string, stack?: string }} error
 */
export function errorBlock(key, error) {
  return h(
    'div',
    { class: 'error-box' },
    h('div', { class: 'err-msg' }, h('strong', null, error.name + ': '), error.message),
    error.stack ? details(key, 'stack', h('pre', { class: 'stack' }, error.stack)) : null,
  );
}

/**
 * Where the failed job's onFailure hook stands: its state, its runs, when a
 * rerun is due, and the error of its last run that threw.
 * @param {any} job
 */
export function failureHook(job) {
  const hook = job.failureHook;
  if (!hook) return null;
  return h(
    'section',
    { id: 'failure-hook', 'data-hook-state': hook.state },
    h('h3', null, 'onFailure hook'),
    h(
      'dl',
      { class: 'facts' },
      fact('state', badge(hook.state)),
      fact('runs', String(hook.attempts)),
      hook.nextRunAt ? fact('next run', time(hook.nextRunAt, true)) : null,
    ),
    hook.lastError ? errorBlock('hook-error:' + job.id, hook.lastError) : null,
  );
}
